//! The command line's grammar: the flags (each also read from its `COREMCP_*` variable) and
//! subcommands as clap declares them, and [`parse_fast`], which parses a line without clap's
//! copy of every global flag into every subcommand.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand};

use crate::config::{self, env};

#[derive(Debug, Parser)]
#[command(
    name = "coremcp",
    version,
    about = "Core MCP: every tool of a development environment over MCP"
)]
pub struct Cli {
    /// Folder holding the plugin libraries [default: plugins/ in the install root]
    #[arg(long, global = true, env = env::PLUGINS, value_name = "DIR")]
    pub plugins: Option<PathBuf>,
    /// Groups this session sees: all, a comma-separated list (only their libraries load),
    /// dynamic[,GROUP...] (meta tools enable and disable groups at run time, and search and
    /// call any tool), or search[,GROUP...] (only tools_search and tools_call, which reach
    /// every tool: for clients that never list again)
    #[arg(long, global = true, env = env::GROUPS, value_name = "LIST", default_value = "all")]
    pub groups: String,
    /// Deadline of one tool call, in seconds (a tool's own timeout_s may extend it)
    #[arg(long, global = true, env = env::CALL_TIMEOUT, value_name = "SECS", default_value_t = 30,
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub call_timeout: u64,
    /// Tools per tools/list page; 0 puts every tool on the first page
    #[arg(long, global = true, env = env::PAGE_SIZE, value_name = "N", default_value_t = 0)]
    pub page_size: usize,
    /// Characters one tool result may hold, for every client (4000-20000) [default: 10000
    /// for Codex, 20000 for any other client]
    #[arg(long, global = true, env = env::RESULT_BUDGET, value_name = "CHARS")]
    pub result_budget: Option<String>,
    /// A folder local file and git tools may reach (repeatable) [default: the working directory]
    #[arg(long = "root", global = true, value_name = "DIR")]
    pub roots: Vec<PathBuf>,
    /// A documentation repository for the docs tools, DIR or NAME=DIR (repeatable)
    #[arg(long = "docs", global = true, value_name = "DIR")]
    pub docs: Vec<String>,
    /// A PostgreSQL connection for sql_query, NAME=URL (repeatable; a bare URL is "default")
    #[arg(long = "sql", global = true, value_name = "NAME=URL")]
    pub sql: Vec<String>,
    /// Let sql_query use connection NAME although its role is a superuser or may run programs
    /// or touch files on the database server (repeatable)
    #[arg(long = "sql-allow-privileged", global = true, value_name = "NAME")]
    pub sql_allow_privileged: Vec<String>,
    /// Folder of the embedded stores [default: $XDG_DATA_HOME/coremcp or ~/.local/share/coremcp]
    #[arg(long, global = true, env = env::DATA, value_name = "DIR")]
    pub data: Option<PathBuf>,
    /// Where Registry, Notepad, Session, Scrolls and Seele keep their data: sqlite: (embedded,
    /// under --data) or postgres://… (a shared database, one schema per service)
    #[arg(long, global = true, env = env::STORE, value_name = "URL", default_value = "sqlite:",
          hide_env_values = true)]
    pub store: String,
    /// A relay for the forwarded groups, http(s)://HOST:PORT/mcp (repeatable, in priority order)
    #[arg(long = "relay", global = true, value_name = "URL")]
    pub relays: Vec<String>,
    /// Service mode: send a forwarded group's calls on to the Core MCP that owns it,
    /// GROUP=URL or GROUP=consul://SERVICE (repeatable; a group given twice fails over in order)
    #[arg(long = "route", global = true, value_name = "GROUP=TARGET")]
    pub routes: Vec<String>,
    /// Another Core MCP trusted with COREMCP_RELAY_TOKEN and a call's principal, beside the
    /// relays and routes: an http(s) URL prefix (repeatable); remote_host targets outside
    /// these are called without a token
    #[arg(long = "peer", global = true, value_name = "URL")]
    pub peers: Vec<String>,
    /// The NAME of a token (--tokens) another Core MCP calls this one with: only such a caller
    /// may pass on the principal its calls are made for (repeatable)
    #[arg(long = "peer-token", global = true, value_name = "NAME")]
    pub peer_tokens: Vec<String>,
    /// The NAME of a token (--tokens) whose holder sees every principal's recent errors on
    /// /api/status and in core_status (repeatable); the others see only their own
    #[arg(long = "operator", global = true, value_name = "NAME")]
    pub operators: Vec<String>,
    /// The Consul agent consul:// targets are looked up in, on every call
    #[arg(long, global = true, env = env::CONSUL_HTTP_ADDR, value_name = "HOST:PORT",
          default_value = coremcp_relay::consul::DEFAULT_AGENT)]
    pub consul: String,
    /// Seconds a relay that could not be connected to is skipped before it is tried again
    #[arg(long, global = true, env = env::RELAY_RETRY, value_name = "SECS", default_value_t = 30,
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub relay_retry: u64,
    /// Seconds a relay (or route target, or remote_host Core MCP) has to accept the connection
    /// and answer the handshake, together; one that does not is skipped like a dead one
    #[arg(long, global = true, env = env::RELAY_CONNECT_TIMEOUT, value_name = "SECS",
          default_value = "2", value_parser = config::parse_connect_timeout)]
    pub relay_connect_timeout: Duration,
    /// Calls one group runs at once; more wait their turn
    #[arg(long, global = true, env = env::GROUP_CONCURRENCY, value_name = "N", default_value_t = 16,
          value_parser = clap::value_parser!(u64).range(1..=256))]
    pub group_concurrency: u64,
    /// Who may call which tool: `PRINCIPAL=TARGET,…;…` (targets: a group, a tool, an upstream
    /// server or mcp__<id>__<tool>; `!TARGET` takes away). Over HTTP, tools that change this
    /// machine (git_push, docs_write, …) need one
    #[arg(long, global = true, env = env::GRANTS, value_name = "RULES")]
    pub grants: Option<String>,
    /// Trust the CA certificates of this PEM bundle too, beside the system's roots, for https
    /// relays, remote hosts and upstream servers
    #[arg(long, global = true, env = env::CA_FILE, value_name = "FILE")]
    pub ca_file: Option<PathBuf>,
    /// The URL other machines reach this Core MCP at, e.g. http://devbox.example:7070/mcp:
    /// what `bootstrap` registers as this machine's Registry host, shown on the status page
    #[arg(long, global = true, env = env::ADVERTISE_URL, value_name = "URL")]
    pub advertise: Option<String>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve MCP over stdin/stdout (what `claude mcp add core -- coremcp stdio` runs)
    Stdio {
        /// Also serve this process's status page, /api/status and /metrics on this loopback
        /// address (127.0.0.1:0 picks a port); `coremcp status` finds it
        #[arg(long, env = env::STATUS_LISTEN, value_name = "ADDR")]
        status_listen: Option<String>,
    },
    /// Show every running Core MCP on this machine that serves its status (`coremcp stdio
    /// --status-listen`), or the `coremcp serve` at --url
    Status {
        /// A `coremcp serve` to ask, e.g. http://127.0.0.1:7070 (its bearer token, if it has
        /// tokens, from COREMCP_STATUS_TOKEN)
        #[arg(long, value_name = "URL")]
        url: Option<String>,
        /// Print the status documents as JSON instead of text
        #[arg(long)]
        json: bool,
    },
    /// Serve MCP over Streamable HTTP at /mcp (plus the status page at /, /healthz,
    /// /api/status and /metrics)
    Serve {
        /// Address to listen on (loopback by default; any other needs --tokens)
        #[arg(long, env = env::LISTEN, value_name = "ADDR", default_value = "127.0.0.1:7070")]
        listen: String,
        /// Service mode: serve only the forwarded groups from the store, never a local group
        #[arg(long)]
        service: bool,
        /// Bearer tokens to accept: a file of `NAME TOKEN` lines (required off loopback,
        /// unless COREMCP_TOKENS_TEXT holds them)
        #[arg(long, env = env::TOKENS, value_name = "FILE")]
        tokens: Option<PathBuf>,
        /// Serve TLS with this PEM certificate chain (with --tls-key; read again on SIGHUP)
        #[arg(long, env = env::TLS_CERT, value_name = "FILE")]
        tls_cert: Option<PathBuf>,
        /// The PEM private key of --tls-cert
        #[arg(long, env = env::TLS_KEY, value_name = "FILE")]
        tls_key: Option<PathBuf>,
        /// Connections one client address may hold at once; more are closed as they arrive
        /// (relays and balancers bring many users from one address)
        #[arg(long, env = env::MAX_CONNECTIONS_PER_CLIENT, value_name = "N",
              default_value_t = crate::http::connections::DEFAULT_PER_CLIENT as u64,
              value_parser = clap::value_parser!(u64).range(1..=65536))]
        max_connections_per_client: u64,
        /// Accept OAuth 2.1 access tokens (JWT) from this issuer beside any --tokens: its keys
        /// are found by OpenID discovery, and /.well-known/oauth-protected-resource points
        /// clients to it
        #[arg(long, env = env::OAUTH_ISSUER, value_name = "URL")]
        oauth_issuer: Option<String>,
        /// The audience a token must be for (default: this server's /mcp URL, from
        /// --advertise or the listen address)
        #[arg(long, env = env::OAUTH_AUDIENCE, value_name = "URL", requires = "oauth_issuer")]
        oauth_audience: Option<String>,
        /// The token claim that names the caller, as grants name principals
        #[arg(long, env = env::OAUTH_PRINCIPAL_CLAIM, value_name = "CLAIM", default_value = "sub")]
        oauth_principal_claim: String,
        /// The scopes clients should ask the issuer for (space or comma separated), published
        /// in the resource metadata and the 401 challenge
        #[arg(long, env = env::OAUTH_SCOPES, value_name = "SCOPES", requires = "oauth_issuer")]
        oauth_scopes: Option<String>,
        /// Also accept access tokens typed JWT or not typed at all, for an issuer that cannot
        /// type them at+jwt (RFC 9068); the audience check is then all that tells one from an
        /// ID token
        #[arg(long, env = env::OAUTH_UNTYPED_TOKENS, requires = "oauth_issuer")]
        oauth_untyped_tokens: bool,
    },
    /// The tools a session would see, with group, route and availability
    Tools {
        /// Print JSON instead of a table
        #[arg(long)]
        json: bool,
    },
    /// Call one tool; the result goes to stdout, errors to stderr with a non-zero exit
    Call {
        /// The tool name
        tool: String,
        /// The arguments, a JSON object (default {})
        json: Option<String>,
    },
    /// The Registry hosts that accept forwarded calls (the remote_host targets)
    Hosts {
        /// Print JSON instead of a table
        #[arg(long)]
        json: bool,
    },
    /// Connect once to each upstream MCP server and report its state and tools (a diagnostic)
    ///
    /// Connects to every enabled server configured in mcp.json and COREMCP_MCP_SERVERS, in
    /// parallel, and reports its state, reason (with recent stderr for a stdio server) and the
    /// tools that would be published as mcp__<id>__<tool> or withheld, with reasons. A
    /// diagnostic: it does not make upstream tools callable by agents (grants and approval come
    /// later). A failed server is reported with exit 0; a bad configuration exits 2.
    Upstream {
        /// Print JSON instead of text
        #[arg(long)]
        json: bool,
    },
    /// Every plugin file: group, version, API version, features, tools, load status
    Plugins {
        #[command(subcommand)]
        action: Option<PluginsAction>,
    },
    /// Internal: opens one plugin library in this short-lived process and reports what it
    /// found, so that a damaged library can only crash the probe (run by Core MCP itself)
    #[command(name = "probe-plugin", hide = true)]
    ProbePlugin {
        /// The library file
        file: PathBuf,
    },
}

/// The command line parsed without clap copying every global flag into every subcommand, the
/// largest part of a start-up (a third of its instructions): the global flags given after the
/// subcommand are moved before it and the top command parses them as its own. `None` leaves
/// the line to [`Cli::parse_from`] — help, version, `--`, short flags, anything unknown or
/// refused — so that what clap prints stays exactly clap's.
pub fn parse_fast(args: &[std::ffi::OsString]) -> Option<Cli> {
    use clap::{CommandFactory, FromArgMatches};
    let command = Cli::command();
    let global = |name: &str| {
        command
            .get_arguments()
            .find(|a| a.is_global_set() && a.get_long() == Some(name))
            .map(|a| a.get_action().takes_values())
    };
    // Each global flag given, as (name, its words), before the subcommand and after it.
    type Given<'a> = Vec<(&'a str, Vec<&'a str>)>;
    let (mut before, mut after): (Given<'_>, Given<'_>) = (Vec::new(), Vec::new());
    let mut rest = args.iter().skip(1);
    let name = loop {
        let arg = rest.next()?.to_str()?;
        let Some(long) = arg.strip_prefix("--").filter(|l| !l.is_empty()) else {
            break arg;
        };
        let flag = long.split_once('=').map_or(long, |(f, _)| f);
        let mut words = vec![arg];
        if global(flag)? && !long.contains('=') {
            words.push(rest.next()?.to_str()?);
        }
        before.push((flag, words));
    };
    if name.starts_with('-') {
        return None;
    }
    let sub = command.find_subcommand(name)?;
    let own = |flag: &str| {
        sub.get_arguments()
            .find(|a| a.get_long() == Some(flag))
            .map(|a| a.get_action().takes_values())
    };
    let mut words: Vec<&str> = Vec::new();
    while let Some(arg) = rest.next() {
        let arg = arg.to_str()?;
        let Some(long) = arg.strip_prefix("--") else {
            if arg.starts_with('-') || arg == "help" {
                return None;
            }
            words.push(arg);
            continue;
        };
        let flag = long.split_once('=').map_or(long, |(f, _)| f);
        if matches!(flag, "" | "help" | "version") {
            return None;
        }
        if let Some(takes_value) = own(flag) {
            words.push(arg);
            if takes_value && !long.contains('=') {
                words.push(rest.next()?.to_str()?);
            }
            continue;
        }
        let mut given = vec![arg];
        if global(flag)? && !long.contains('=') {
            given.push(rest.next()?.to_str()?);
        }
        after.push((flag, given));
    }
    // Given after the subcommand, a global flag replaces what was given before it (clap's way).
    before.retain(|(flag, _)| !after.iter().any(|(again, _)| again == flag));
    let line = std::iter::once(args.first()?.to_str()?)
        .chain(before.into_iter().chain(after).flat_map(|(_, words)| words))
        .chain(std::iter::once(name))
        .chain(words);
    let matches = command
        .mut_args(|a| a.global(false))
        .try_get_matches_from(line)
        .ok()?;
    Cli::from_arg_matches(&matches).ok()
}

#[derive(Debug, Subcommand)]
pub enum PluginsAction {
    /// Install a plugin library into the plugins folder safely (written beside, then renamed
    /// over the old file), after checking its API version and manifest. Running hosts pick it
    /// up on reload (SIGHUP in stdio mode)
    Install {
        /// The library file (libcoremcp_<group>.so or any name: the group comes from its manifest)
        file: PathBuf,
    },
    /// Check every plugin file in the plugins folder and write its manifest beside it
    /// (libcoremcp_<group>.so.manifest.json), so that listing tools loads no plugin. Exits 1
    /// if a file could not be indexed
    Index,
}
