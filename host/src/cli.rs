//! The command line: flags (each also read from its `COREMCP_*` variable), resolved once into
//! a [`Config`], then one subcommand. Exit codes are decided here and nowhere else:
//! 0 success, 1 a tool reported an error (`call`), 2 bad usage or configuration,
//! 3 a runtime failure.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};

use crate::commands::Failure;
use crate::config::{self, env, Config, GroupSelection};

mod stdio_line;

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
          default_value = config::DEFAULT_CONSUL)]
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
    #[arg(long, global = true, env = crate::policy::env::GRANTS, value_name = "RULES")]
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

impl Cli {
    /// Validated flags to a configuration.
    pub fn resolve(&self) -> Result<Config, Failure> {
        let exe = std::env::current_exe()
            .map_err(|e| Failure::runtime(format!("cannot find this program's path: {e}")))?;
        let plugins_dir = match &self.plugins {
            Some(dir) => dir.clone(),
            None => config::default_plugins_dir(&exe),
        };
        let roots = if self.roots.is_empty() {
            std::env::var_os(env::ROOTS)
                .map(|v| {
                    std::env::split_paths(&v)
                        .filter(|p| !p.as_os_str().is_empty())
                        .collect()
                })
                .unwrap_or_default()
        } else {
            self.roots.clone()
        };
        let docs = if self.docs.is_empty() {
            std::env::var(env::DOCS)
                .map(|v| v.split(';').map(str::to_owned).collect())
                .unwrap_or_default()
        } else {
            self.docs.clone()
        };
        let sql = if self.sql.is_empty() {
            std::env::var(env::SQL).map(|v| vec![v]).unwrap_or_default()
        } else {
            self.sql.clone()
        };
        let sql_allowed = if self.sql_allow_privileged.is_empty() {
            std::env::var(env::SQL_ALLOW_PRIVILEGED)
                .map(|v| vec![v])
                .unwrap_or_default()
        } else {
            self.sql_allow_privileged.clone()
        };
        let sql = config::parse_sql(&sql).map_err(Failure::usage)?;
        let relays = if self.relays.is_empty() {
            std::env::var(env::RELAYS)
                .map(|v| vec![v])
                .unwrap_or_default()
        } else {
            self.relays.clone()
        };
        let routes = if self.routes.is_empty() {
            std::env::var(env::ROUTES)
                .map(|v| vec![v])
                .unwrap_or_default()
        } else {
            self.routes.clone()
        };
        let routes = config::parse_routes(&routes).map_err(Failure::usage)?;
        let from_env = |given: &[String], var: &str| -> Vec<String> {
            if given.is_empty() {
                std::env::var(var).map(|v| vec![v]).unwrap_or_default()
            } else {
                given.to_vec()
            }
        };
        let peers =
            config::parse_peers(&from_env(&self.peers, env::PEERS)).map_err(Failure::usage)?;
        let peer_tokens = config::parse_peer_tokens(&from_env(&self.peer_tokens, env::PEER_TOKENS))
            .map_err(Failure::usage)?;
        let operators = config::parse_operators(&from_env(&self.operators, env::OPERATORS))
            .map_err(Failure::usage)?;
        let service_mode = matches!(self.command, Command::Serve { service: true, .. });
        if !routes.is_empty() && !service_mode && !matches!(self.command, Command::Tools { .. }) {
            return Err(Failure::usage(
                "--route applies to coremcp serve --service (a Core MCP on an agent's machine \
                 sends the forwarded groups to --relay)",
            ));
        }
        let consul = config::ConsulAgent {
            addr: config::parse_consul_addr(&self.consul).map_err(Failure::usage)?,
            token: std::env::var(env::CONSUL_HTTP_TOKEN)
                .ok()
                .filter(|t| !t.trim().is_empty()),
        };
        let mcp_grants = std::env::var(crate::policy::env::MCP_GRANTS).ok();
        let grants = crate::policy::Grants::parse(self.grants.as_deref(), mcp_grants.as_deref())
            .map(std::sync::Arc::new)
            .map_err(Failure::usage)?;
        let mut upstream = crate::upstream::Settings::from_env(&config::install_root(&exe))
            .map_err(Failure::usage)?;
        // One policy: the upstream listings read the same rules the routes decide by.
        upstream.grants = std::sync::Arc::clone(&grants);
        let servers: Vec<&str> = upstream.servers.iter().map(|s| s.id.as_str()).collect();
        let mut unknown = grants.unknown_names(&servers);
        if !unknown.is_empty() {
            // A group outside the catalog installed here, or one of its tools, is a name too
            // (read from the sidecars only when a rule names something else).
            let installed = crate::plugins::installed_names(&plugins_dir);
            unknown.retain(|(_, name)| !installed.contains(name));
        }
        for (rule, name) in unknown {
            tracing::warn!(
                "{rule} names \"{name}\": no catalog group or tool, no installed plugin and \
                 no configured upstream server has that name, so it grants nothing (check the \
                 spelling)"
            );
        }
        let publish_cmd = std::env::var(env::PUBLISH_CMD)
            .ok()
            .filter(|v| !v.trim().is_empty());
        let shell = std::env::var(env::SHELL)
            .ok()
            .filter(|v| !v.trim().is_empty());
        let compose = std::env::var(env::COMPOSE)
            .ok()
            .filter(|v| !v.trim().is_empty());
        let advertise = self
            .advertise
            .as_deref()
            .filter(|v| !v.trim().is_empty())
            .map(config::parse_advertise)
            .transpose()
            .map_err(Failure::usage)?;
        Ok(Config {
            plugins_dir,
            shell,
            compose,
            advertise,
            groups: GroupSelection::parse(&self.groups).map_err(Failure::usage)?,
            publish_cmd,
            call_timeout: Duration::from_secs(self.call_timeout),
            page_size: self.page_size,
            group_concurrency: self.group_concurrency as usize,
            roots: config::resolve_roots(&roots).map_err(Failure::usage)?,
            sql_allow_privileged: config::parse_sql_allowed(&sql_allowed, &sql)
                .map_err(Failure::usage)?,
            sql,
            docs: config::parse_docs(&docs).map_err(Failure::usage)?,
            data_dir: config::resolve_data_dir(
                self.data.as_deref(),
                std::env::var(env::XDG_DATA_HOME).ok().as_deref(),
                std::env::var(env::HOME).ok().as_deref(),
                &std::env::current_dir().unwrap_or_default(),
            ),
            store: config::check_store(&self.store).map_err(Failure::usage)?,
            host_name: config::host_name(),
            relays: config::parse_relays(&relays).map_err(Failure::usage)?,
            relay_retry: Duration::from_secs(self.relay_retry),
            relay_connect_timeout: self.relay_connect_timeout,
            peers,
            peer_tokens,
            operators,
            oauth_issuer: None,
            routes,
            consul,
            service_mode,
            upstream,
            grants,
            probe_program: Some(exe),
        })
    }
}

/// Reads how this process signs in to its peers: `COREMCP_RELAY_TOKEN` (a static bearer
/// token) or `COREMCP_RELAY_OAUTH_*` (the client credentials grant), never both; refuses a
/// token that could not be one and OAuth settings that are incomplete.
fn relay_token() -> Result<(), Failure> {
    use crate::forward::client::Credential;
    use crate::oauth::client::{ClientCredentials, Settings};
    let token = std::env::var(env::RELAY_TOKEN)
        .ok()
        .filter(|t| !t.is_empty());
    if let Some(token) = &token {
        crate::http::auth::check_token(token)
            .map_err(|why| Failure::usage(format!("{}: the token {why}", env::RELAY_TOKEN)))?;
    }
    let oauth = Settings::from(|name| std::env::var(name).ok()).map_err(Failure::usage)?;
    let credential = match (token, oauth) {
        (Some(_), Some(_)) => {
            return Err(Failure::usage(format!(
                "{} and {} are both set: the relays are signed in to one way, a static token \
                 or OAuth; unset one",
                env::RELAY_TOKEN,
                crate::oauth::client::env::ISSUER
            )))
        }
        (Some(token), None) => Some(Credential::Static(token)),
        (None, Some(settings)) => Some(Credential::OAuth(ClientCredentials::new(settings))),
        (None, None) => None,
    };
    crate::forward::client::set_credential(credential);
    Ok(())
}

/// Reads `--ca-file`, the extra CA bundle the TLS client trusts; an unusable one stops here.
fn extra_ca(file: Option<&std::path::Path>) -> Result<(), Failure> {
    match file {
        Some(file) => crate::net::client::set_extra_ca(file)
            .map_err(|e| Failure::usage(format!("--ca-file {e}"))),
        None => Ok(()),
    }
}

/// Parses the command line, runs the command and maps the outcome to an exit code.
pub fn main() -> ExitCode {
    crate::hardening::at_start();
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let cli = stdio_line::parse(&args, &|name| std::env::var_os(name))
        .or_else(|| parse_fast(&args))
        .unwrap_or_else(|| Cli::parse_from(&args));
    crate::logging::init(std::env::var(env::LOG).ok().as_deref());
    crate::hardening::warn_about_credentials_in(&args);
    if let Command::ProbePlugin { file } = &cli.command {
        // Takes nothing from the configuration: it runs with a scrubbed environment.
        return crate::commands::probe::run(file);
    }
    let outcome = relay_token()
        .and_then(|()| extra_ca(cli.ca_file.as_deref()))
        .and_then(|()| cli.resolve())
        .and_then(|config| match cli.command {
            Command::Stdio { ref status_listen } => {
                crate::commands::stdio::run(config, status_listen.as_deref())
            }
            Command::Status { ref url, json } => {
                crate::commands::status::run(&config, url.as_deref(), json)
            }
            Command::Tools { json } => crate::commands::tools::run(config, json),
            Command::Call { ref tool, ref json } => {
                crate::commands::call::run(config, tool, json.as_deref())
            }
            Command::Serve {
                ref listen,
                ref tokens,
                ref tls_cert,
                ref tls_key,
                max_connections_per_client,
                ref oauth_issuer,
                ref oauth_audience,
                ref oauth_principal_claim,
                ref oauth_scopes,
                oauth_untyped_tokens,
                ..
            } => crate::commands::serve::run(
                config,
                &crate::http::Options {
                    listen,
                    tokens: tokens.as_deref(),
                    tokens_text: std::env::var(env::TOKENS_TEXT).ok().as_deref(),
                    per_client: max_connections_per_client as usize,
                    tls_cert: tls_cert.as_deref(),
                    tls_key: tls_key.as_deref(),
                    oauth: oauth_issuer
                        .as_deref()
                        .map(|issuer| crate::http::OAuthOptions {
                            issuer,
                            audience: oauth_audience.as_deref(),
                            principal_claim: oauth_principal_claim,
                            scopes: oauth_scopes.as_deref(),
                            untyped_tokens: oauth_untyped_tokens,
                        }),
                },
            ),
            Command::Hosts { json } => crate::commands::hosts::run(config, json),
            Command::Upstream { json } => crate::commands::upstream::run(config, json),
            Command::Plugins { action: None } => crate::commands::plugins::run(config),
            Command::Plugins {
                action: Some(PluginsAction::Install { ref file }),
            } => crate::commands::plugins::install(&config, file),
            Command::Plugins {
                action: Some(PluginsAction::Index),
            } => crate::commands::plugins::index(&config),
            Command::ProbePlugin { .. } => Err(Failure::usage("probe-plugin runs on its own")),
        });
    match outcome {
        Ok(code) => code,
        Err(failure) => {
            eprintln!("coremcp: {}", failure.message());
            ExitCode::from(failure.code())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    /// Each of `texts`, as a command line, parses with `parse` to what clap makes of it.
    pub(super) fn assert_agrees_with_clap(
        texts: &[&str],
        parse: &dyn Fn(&[std::ffi::OsString]) -> Option<Cli>,
    ) {
        for text in texts {
            let args = line(text);
            let ours = parse(&args).unwrap_or_else(|| panic!("not parsed: {text}"));
            let clap = Cli::try_parse_from(&args).expect(text);
            assert_eq!(format!("{ours:?}"), format!("{clap:?}"), "{text}");
        }
    }

    /// `coremcp` and the words of `text`, as a command line.
    pub(super) fn line(text: &str) -> Vec<std::ffi::OsString> {
        std::iter::once("coremcp")
            .chain(text.split_whitespace())
            .map(Into::into)
            .collect()
    }

    /// The fast parse gives what clap gives, wherever the global flags are, and leaves to clap
    /// what it does not handle.
    #[test]
    fn the_fast_parse_agrees_with_clap() {
        let texts = [
            "stdio --plugins /p --data /d",
            "--plugins /p --data /d stdio",
            "--plugins=/p stdio --data=/d --groups git,files",
            "stdio --status-listen 127.0.0.1:0 --call-timeout 5",
            "serve --listen 127.0.0.1:9 --service --groups git --tokens /t",
            "--groups git serve --max-connections-per-client 3",
            "call git_status {\"path\":\".\"} --root /a --root /b",
            "--root /a call git_status --root /b",
            "--root /a --data /d call git_status --root /b --root /c",
            "plugins index --plugins /p",
            "plugins install /x/lib.so --plugins /p --relay http://r/mcp",
            "tools --json --page-size 3 --grants stdio=!git",
            "status --url http://127.0.0.1:9 --json",
            "hosts",
            "upstream --json --store sqlite:",
        ];
        assert_agrees_with_clap(&texts, &|args| parse_fast(args));
        for text in [
            "",
            "--help",
            "stdio --help",
            "stdio -h",
            "-V",
            "--version",
            "stdio --bogus",
            "stdio -x",
            "stdio -- x",
            "--plugins",
            "--plugins /p",
            "nothing-of-ours",
            "stdio --call-timeout 0",
            "plugins help",
        ] {
            assert!(parse_fast(&line(text)).is_none(), "parsed fast: {text:?}");
        }
    }
}
