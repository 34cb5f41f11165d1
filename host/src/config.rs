//! Configuration, resolved once from flags and `COREMCP_*` variables. Every environment
//! variable name the host reads lives in [`env`].

use coremcp_engine::GroupSelection;
use coremcp_net::client::redact_url;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The environment variables the host reads.
pub mod env {
    /// Where plugin libraries are (`--plugins`).
    pub const PLUGINS: &str = "COREMCP_PLUGINS";
    /// The groups a session sees (`--groups`).
    pub const GROUPS: &str = "COREMCP_GROUPS";
    /// Where a stdio process serves its status page, `/api/status` and `/metrics`
    /// (`--status-listen`, loopback only).
    pub const STATUS_LISTEN: &str = "COREMCP_STATUS_LISTEN";
    /// The bearer token `coremcp status --url` sends (`--token` would show in `ps`).
    pub const STATUS_TOKEN: &str = "COREMCP_STATUS_TOKEN";
    /// The publishing CLI command, passed to the Publishing group as `publish.cmd`.
    pub const PUBLISH_CMD: &str = "COREMCP_PUBLISH_CMD";
    /// The shell `shell_run` uses where `pwsh` is not installed (default `bash`), passed to the
    /// Ops group as `shell.cmd`.
    pub const SHELL: &str = "COREMCP_SHELL";
    /// The Compose command of `docker_compose` (default `docker compose` where the `docker` CLI
    /// has it, else `docker-compose`), passed to the Docker group as `compose.cmd`.
    pub const COMPOSE: &str = "COREMCP_COMPOSE";
    /// The address other machines reach this Core MCP at (`--advertise`), passed to the Ops
    /// group as `advertise.url` for `bootstrap`'s Registry host.
    pub const ADVERTISE_URL: &str = "COREMCP_ADVERTISE_URL";
    /// `1` keeps the process dumpable (a debugger, a core dump, `/proc` readers of the same
    /// user), which lets every child read its environment and memory too; by default it makes
    /// itself undumpable at start (`crate::hardening`).
    pub const DUMPABLE: &str = "COREMCP_DUMPABLE";
    /// `off` runs children in this process's PID namespace instead of namespaces of their own
    /// (`coremcp_spawn::isolation`, which reads it: every copy of the spawn crate, the plugins'
    /// included, must agree).
    pub const CHILD_ISOLATION: &str = coremcp_spawn::isolation::ISOLATION_VAR;
    /// The log filter (`info`, `debug`, `coremcp=debug,plugin=trace`, …).
    pub const LOG: &str = "COREMCP_LOG";
    /// The default deadline of one tool call, in seconds (`--call-timeout`).
    pub const CALL_TIMEOUT: &str = "COREMCP_CALL_TIMEOUT";
    /// Tools per `tools/list` page; 0 lists every tool on the first page (`--page-size`).
    pub const PAGE_SIZE: &str = "COREMCP_PAGE_SIZE";
    pub const RESULT_BUDGET: &str = "COREMCP_RESULT_BUDGET";
    /// Calls one group runs at once; more wait their turn (`--group-concurrency`).
    pub const GROUP_CONCURRENCY: &str = "COREMCP_GROUP_CONCURRENCY";
    /// Where local file and git tools may reach, separated like `PATH` (`--root`, repeatable).
    pub const ROOTS: &str = "COREMCP_ROOTS";
    /// Named PostgreSQL connections for `sql_query`: `name=url;name2=url2` (`--sql`, repeatable).
    pub const SQL: &str = "COREMCP_SQL";
    /// `sql_query` connections allowed to log in as a privileged role, comma separated
    /// (`--sql-allow-privileged`, repeatable).
    pub const SQL_ALLOW_PRIVILEGED: &str = "COREMCP_SQL_ALLOW_PRIVILEGED";
    /// Documentation repositories for the docs tools: `dir;name=dir` (`--docs`, repeatable).
    pub const DOCS: &str = "COREMCP_DOCS";
    /// Where the embedded stores live (`--data`; default the XDG data dir).
    pub const DATA: &str = "COREMCP_DATA";
    /// Where the store-backed groups keep their data: `sqlite:` or `postgres://…` (`--store`).
    pub const STORE: &str = "COREMCP_STORE";
    /// A PEM bundle of CA certificates the TLS client trusts beside the system's (`--ca-file`).
    pub const CA_FILE: &str = "COREMCP_CA_FILE";
    /// The bearer token this Core MCP sends to its relays, routes and `remote_host` targets
    /// when they require tokens (an environment variable only: a flag would show in `ps`).
    pub const RELAY_TOKEN: &str = "COREMCP_RELAY_TOKEN";
    /// The relays forwarded groups go to, in priority order, comma separated (`--relay`).
    pub const RELAYS: &str = "COREMCP_RELAYS";
    /// Other Core MCPs trusted with `COREMCP_RELAY_TOKEN` and a call's principal beside the
    /// relays and routes: URL prefixes, comma separated (`--peer`, repeatable). A `remote_host`
    /// target outside them is called without a token.
    pub const PEERS: &str = "COREMCP_PEERS";
    /// The names of the tokens (`--tokens`) other Core MCPs call this one with: only such a
    /// caller may pass on the principal a call is made for (`--peer-token`, repeatable).
    pub const PEER_TOKENS: &str = "COREMCP_PEER_TOKENS";
    /// The names of the tokens whose holders see every principal's recent errors on
    /// `/api/status` and in `core_status` (`--operator`, repeatable); the others see their own.
    pub const OPERATORS: &str = "COREMCP_OPERATORS";
    /// Seconds a relay that could not be connected to is skipped (`--relay-retry`, default 30).
    pub const RELAY_RETRY: &str = "COREMCP_RELAY_RETRY";
    /// Seconds a relay, route target or `remote_host` Core MCP has to accept a connection and
    /// answer the handshake, together, before it counts as one that cannot be connected to
    /// (`--relay-connect-timeout`, default 2; decimals allowed).
    pub const RELAY_CONNECT_TIMEOUT: &str = "COREMCP_RELAY_CONNECT_TIMEOUT";
    /// Where a service-mode Core MCP sends a forwarded group's calls: `GROUP=TARGET` entries,
    /// comma separated (`--route`, repeatable).
    pub const ROUTES: &str = "COREMCP_ROUTES";
    /// The Consul agent `consul://` targets are looked up in (`--consul`; Consul's own name).
    pub const CONSUL_HTTP_ADDR: &str = "CONSUL_HTTP_ADDR";
    /// The ACL token sent to Consul as `X-Consul-Token` (Consul's own name).
    pub const CONSUL_HTTP_TOKEN: &str = "CONSUL_HTTP_TOKEN";
    /// Where `coremcp serve` listens (`--listen`).
    pub const LISTEN: &str = "COREMCP_LISTEN";
    /// The bearer tokens `coremcp serve` accepts: a file of `NAME TOKEN` lines (`--tokens`).
    pub const TOKENS: &str = "COREMCP_TOKENS";
    /// The bearer tokens `coremcp serve` accepts, as text: the tokens file's `NAME TOKEN`
    /// lines, separated by newlines or `;` (so that a Docker env file can hold them). Beside
    /// or instead of `--tokens`; environment only, never a flag (`ps` shows flags).
    pub const TOKENS_TEXT: &str = "COREMCP_TOKENS_TEXT";
    /// The OAuth issuer whose JWT access tokens `coremcp serve` accepts (`--oauth-issuer`).
    pub const OAUTH_ISSUER: &str = "COREMCP_OAUTH_ISSUER";
    /// The audience those tokens must be for (`--oauth-audience`; default: the `/mcp` URL).
    pub const OAUTH_AUDIENCE: &str = "COREMCP_OAUTH_AUDIENCE";
    /// The claim that names the caller (`--oauth-principal-claim`, default `sub`).
    pub const OAUTH_PRINCIPAL_CLAIM: &str = "COREMCP_OAUTH_PRINCIPAL_CLAIM";
    /// The scopes clients should ask for (`--oauth-scopes`), published in the metadata.
    pub const OAUTH_SCOPES: &str = "COREMCP_OAUTH_SCOPES";
    /// `--oauth-untyped-tokens`: also accept access tokens not typed `at+jwt`.
    pub const OAUTH_UNTYPED_TOKENS: &str = "COREMCP_OAUTH_UNTYPED_TOKENS";
    /// The PEM certificate chain `coremcp serve` serves TLS with (`--tls-cert`).
    pub const TLS_CERT: &str = "COREMCP_TLS_CERT";
    /// The PEM private key of that certificate (`--tls-key`).
    pub const TLS_KEY: &str = "COREMCP_TLS_KEY";
    /// Connections one client address may hold (`--max-connections-per-client`, default 512).
    pub const MAX_CONNECTIONS_PER_CLIENT: &str = "COREMCP_MAX_CONNECTIONS_PER_CLIENT";
    /// The XDG base directory for user data (`$XDG_DATA_HOME/coremcp`).
    pub const XDG_DATA_HOME: &str = "XDG_DATA_HOME";
    /// The home directory (`$HOME/.local/share/coremcp` without `XDG_DATA_HOME`).
    pub const HOME: &str = "HOME";
    /// Grants for every kind of tool (`--grants`).
    pub const GRANTS: &str = "COREMCP_GRANTS";
    /// Grants for upstream tools (a bare target is a server id).
    pub const MCP_GRANTS: &str = "COREMCP_MCP_GRANTS";
    /// `false` turns the upstream MCP client off.
    pub const MCP: &str = "COREMCP_MCP";
    /// The upstream servers' config file (default `mcp.json` in the install root; empty: none).
    pub const MCP_CONFIG: &str = "COREMCP_MCP_CONFIG";
    /// Inline upstream servers: `id=command args;id2=command args`.
    pub const MCP_SERVERS: &str = "COREMCP_MCP_SERVERS";
    /// `false` turns the human's approval of an upstream server's first call off.
    pub const MCP_REQUIRE_APPROVAL: &str = "COREMCP_MCP_REQUIRE_APPROVAL";
    /// Comma-separated upstream server ids that need no approval.
    pub const MCP_PREAPPROVED: &str = "COREMCP_MCP_PREAPPROVED";
    /// The OAuth issuer this Core MCP signs in to its relays with (client credentials).
    pub const RELAY_OAUTH_ISSUER: &str = "COREMCP_RELAY_OAUTH_ISSUER";
    pub const RELAY_OAUTH_CLIENT_ID: &str = "COREMCP_RELAY_OAUTH_CLIENT_ID";
    pub const RELAY_OAUTH_CLIENT_SECRET: &str = "COREMCP_RELAY_OAUTH_CLIENT_SECRET";
    pub const RELAY_OAUTH_SCOPE: &str = "COREMCP_RELAY_OAUTH_SCOPE";
    pub const RELAY_OAUTH_RESOURCE: &str = "COREMCP_RELAY_OAUTH_RESOURCE";

    /// The grant variables, as the policy names them.
    pub const GRANT_VARS: coremcp_wire::policy::Vars = coremcp_wire::policy::Vars {
        grants: GRANTS,
        mcp_grants: MCP_GRANTS,
    };
    /// The relay OAuth variables, as the OAuth client reads and names them.
    pub const RELAY_OAUTH: coremcp_net::oauth::client::Vars = coremcp_net::oauth::client::Vars {
        issuer: RELAY_OAUTH_ISSUER,
        client_id: RELAY_OAUTH_CLIENT_ID,
        client_secret: RELAY_OAUTH_CLIENT_SECRET,
        scope: RELAY_OAUTH_SCOPE,
        resource: RELAY_OAUTH_RESOURCE,
    };
}

/// Everything a command needs, resolved.
#[derive(Debug, Clone)]
pub struct Config {
    pub plugins_dir: PathBuf,
    pub groups: GroupSelection,
    pub publish_cmd: Option<String>,
    /// The shell of `shell_run` where `pwsh` is not installed (`COREMCP_SHELL`).
    pub shell: Option<String>,
    /// The Compose command of `docker_compose` (`COREMCP_COMPOSE`).
    pub compose: Option<String>,
    /// The URL other machines reach this Core MCP's MCP endpoint at (`--advertise`).
    pub advertise: Option<String>,
    pub call_timeout: Duration,
    pub page_size: usize,
    /// The result budget every session gets (`--result-budget`); `None`: each session's follows
    /// its client (`coremcp_wire::budget`).
    pub result_budget: Option<usize>,
    pub group_concurrency: usize,
    /// Canonical folders local file and git tools may reach (never empty once resolved).
    pub roots: Vec<PathBuf>,
    /// Named PostgreSQL connections (`name`, `url`) for `sql_query`.
    pub sql: Vec<(String, String)>,
    /// The connections allowed to log in as a role with superuser or server-file/program
    /// powers (otherwise `sql_query` refuses them).
    pub sql_allow_privileged: Vec<String>,
    /// Documentation repositories (`name`, canonical folder), in the order given.
    pub docs: Vec<(String, PathBuf)>,
    /// The folder of the embedded stores (absolute), when one could be determined.
    pub data_dir: Option<PathBuf>,
    /// The store address for the store-backed groups (`""` = SQLite under `data_dir`).
    pub store: String,
    /// This machine's host name (the default `host` of the Session group).
    pub host_name: Option<String>,
    /// Token names of the Core MCPs that may pass on a call's principal (`--peer-token`).
    pub peer_tokens: Vec<String>,
    /// Token names that see every principal's recent errors (`--operator`).
    pub operators: Vec<String>,
    /// The OAuth issuer whose access tokens `serve` accepts (`--oauth-issuer`): an OAuth
    /// principal a peer forwards must be of this issuer.
    pub oauth_issuer: Option<String>,
    /// Relays, routes, trusted peers and Consul, for the relay crate.
    pub relay: coremcp_relay::Settings,
    /// Service mode (`serve --service`): only the forwarded groups, from the store.
    pub service_mode: bool,
    /// The upstream MCP servers.
    pub upstream: coremcp_upstream::Settings,
    /// Who may call which tool (`--grants`, `COREMCP_GRANTS`, `COREMCP_MCP_GRANTS`); the upstream
    /// settings share the same rules for their listings.
    pub grants: std::sync::Arc<coremcp_wire::policy::Grants>,
    /// The program that opens a new plugin file in a probe process before this one maps it
    /// (`coremcp` itself); `None`: only the structural check.
    pub probe_program: Option<PathBuf>,
}

impl Config {
    /// Whose recent errors `principal` (as grants name it) may see: `None` for all (this
    /// machine's own user — `stdio`, or `*` on a tokenless listener — or an operator), else
    /// its own. (No token may be named `stdio`, and `*` is no token name.)
    pub fn errors_visible_to<'a>(&self, principal: &'a str) -> Option<&'a str> {
        // Operators are written as principals are (`NAME`, `oauth:SUBJECT`): kinds never match.
        let all =
            matches!(principal, "stdio" | "*") || self.operators.iter().any(|o| o == principal);
        (!all).then_some(principal)
    }

    /// Defaults for a host whose plugins are in `plugins_dir`; tests and commands adjust fields.
    pub fn with_plugins(plugins_dir: PathBuf) -> Self {
        Self {
            plugins_dir,
            groups: GroupSelection::All,
            publish_cmd: None,
            advertise: None,
            shell: None,
            compose: None,
            call_timeout: Duration::from_secs(30),
            page_size: 0,
            result_budget: None,
            group_concurrency: 16,
            roots: Vec::new(),
            sql: Vec::new(),
            sql_allow_privileged: Vec::new(),
            docs: Vec::new(),
            data_dir: None,
            store: String::new(),
            host_name: None,
            peer_tokens: Vec::new(),
            operators: Vec::new(),
            oauth_issuer: None,
            relay: coremcp_relay::Settings::default(),
            service_mode: false,
            upstream: coremcp_upstream::Settings::default(),
            grants: std::sync::Arc::default(),
            probe_program: None,
        }
    }

    /// The engine's settings: where the libraries are, which groups, how they are vetted,
    /// what plugins read through `config`.
    pub fn engine(&self) -> coremcp_engine::Settings {
        coremcp_engine::Settings {
            plugins_dir: self.plugins_dir.clone(),
            groups: self.groups.clone(),
            service_mode: self.service_mode,
            group_concurrency: self.group_concurrency,
            vetting: self.vetting(),
            values: self.plugin_values(),
            on_loaded: crate::metrics::plugin_loaded,
        }
    }

    /// How plugin files are vetted before they are mapped: probed by `probe_program`, passes
    /// remembered under the data folder.
    pub fn vetting(&self) -> coremcp_engine::vetting::Vetting {
        coremcp_engine::vetting::Vetting::new(self.probe_program.clone(), self.data_dir.as_deref())
    }

    /// The values handed to plugins through the host's `config` callback.
    pub fn plugin_values(&self) -> Vec<(String, String)> {
        let mut values = Vec::new();
        if let Some(cmd) = &self.publish_cmd {
            values.push(("publish.cmd".to_owned(), cmd.clone()));
        }
        if let Some(shell) = &self.shell {
            values.push(("shell.cmd".to_owned(), shell.clone()));
        }
        if let Some(compose) = &self.compose {
            values.push(("compose.cmd".to_owned(), compose.clone()));
        }
        if let Some(url) = &self.advertise {
            values.push(("advertise.url".to_owned(), url.clone()));
        }
        values.push((
            "plugins.dir".to_owned(),
            self.plugins_dir.display().to_string(),
        ));
        let mode = if self.service_mode {
            "service"
        } else {
            "proxy"
        };
        values.push((
            coremcp_engine::host_api::MODE_KEY.to_owned(),
            mode.to_owned(),
        ));
        if !self.roots.is_empty() {
            let lines: Vec<String> = self.roots.iter().map(|r| r.display().to_string()).collect();
            values.push(("roots".to_owned(), lines.join("\n")));
        }
        if !self.docs.is_empty() {
            // An object in the order given (the first is the default), written by hand because
            // serde_json's map would sort it.
            let entries: Vec<String> = self
                .docs
                .iter()
                .map(|(name, dir)| {
                    format!(
                        "{}:{}",
                        coremcp_wire::rpc::json_string(name),
                        coremcp_wire::rpc::json_string(&dir.display().to_string())
                    )
                })
                .collect();
            values.push((
                "docs.repos".to_owned(),
                format!("{{{}}}", entries.join(",")),
            ));
            values.push(("docs.default".to_owned(), self.docs[0].0.clone()));
        }
        if let Some(dir) = &self.data_dir {
            values.push(("data.dir".to_owned(), dir.display().to_string()));
        }
        values.push(("store.url".to_owned(), self.store.clone()));
        if let Some(name) = &self.host_name {
            values.push(("host.name".to_owned(), name.clone()));
        }
        if !self.sql.is_empty() {
            let map: serde_json::Map<String, serde_json::Value> = self
                .sql
                .iter()
                .map(|(name, url)| (name.clone(), serde_json::Value::from(url.as_str())))
                .collect();
            values.push((
                "sql.connections".to_owned(),
                serde_json::Value::Object(map).to_string(),
            ));
        }
        if !self.sql_allow_privileged.is_empty() {
            values.push((
                "sql.allow_privileged".to_owned(),
                serde_json::Value::from(self.sql_allow_privileged.clone()).to_string(),
            ));
        }
        values
    }
}

/// The data folder: `--data` made absolute, else `$XDG_DATA_HOME/coremcp` (when absolute, as
/// the XDG spec requires), else `$HOME/.local/share/coremcp`; `None` when none of them is known.
/// Nothing is created here: the stores create it on first use.
pub fn resolve_data_dir(
    given: Option<&Path>,
    xdg_data_home: Option<&str>,
    home: Option<&str>,
    cwd: &Path,
) -> Option<PathBuf> {
    if let Some(dir) = given.filter(|d| !d.as_os_str().is_empty()) {
        return Some(if dir.is_absolute() {
            dir.to_path_buf()
        } else {
            cwd.join(dir)
        });
    }
    if let Some(xdg) = xdg_data_home.map(Path::new).filter(|p| p.is_absolute()) {
        return Some(xdg.join("coremcp"));
    }
    home.map(Path::new)
        .filter(|p| p.is_absolute())
        .map(|home| home.join(".local/share/coremcp"))
}

/// `--relay-connect-timeout`: seconds, decimals allowed, from 0.05 to 60.
pub fn parse_connect_timeout(text: &str) -> Result<Duration, String> {
    let secs: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a number of seconds"))?;
    if !(0.05..=60.0).contains(&secs) {
        return Err(format!(
            "{text} s is out of range: the connect timeout is from 0.05 to 60 seconds"
        ));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// `--advertise`: an http(s) URL with a host, as other machines will call it.
pub fn parse_advertise(url: &str) -> Result<String, String> {
    let url = url.trim();
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"));
    let host = rest.map(|r| r.split(['/', '?', '#']).next().unwrap_or_default());
    match host {
        Some(host) if !host.is_empty() && !host.contains(['@', ' ']) => Ok(url.to_owned()),
        _ => Err(format!(
            "--advertise {url:?}: give the http(s) URL other machines reach this Core MCP at, \
             e.g. http://devbox.example:7070/mcp"
        )),
    }
}

/// The agent address of `--consul` / `CONSUL_HTTP_ADDR`: `host:port` or `http://host:port`
/// (Consul's variable allows both); `https` is refused: the agent is reached on this machine.
pub fn parse_consul_addr(text: &str) -> Result<String, String> {
    let text = text.trim();
    let bare = text
        .strip_prefix("http://")
        .unwrap_or(text)
        .trim_end_matches('/');
    if text.starts_with("https://") {
        return Err(format!(
            "--consul {text}: https to the Consul agent is not supported; reach the local \
             agent over http (http://127.0.0.1:8500)"
        ));
    }
    let ok = !bare.is_empty()
        && !bare.contains(['/', '@', ' '])
        && bare
            .rsplit_once(':')
            .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok());
    if !ok {
        return Err(format!(
            "--consul \"{text}\" is not a Consul agent address: write HOST:PORT (like {})",
            coremcp_relay::consul::DEFAULT_AGENT
        ));
    }
    Ok(bare.to_owned())
}

/// One target of `flag`: an absolute http(s) URL, or `consul://SERVICE` (a Consul service
/// name: letters, digits, `-`, `_` and `.`).
fn parse_target(flag: &str, entry: &str) -> Result<(), String> {
    if let Some(service) = entry.strip_prefix("consul://") {
        let ok = !service.is_empty()
            && service.len() <= 128
            && service
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        return match ok {
            true => Ok(()),
            false => Err(format!(
                "{flag} \"{entry}\" does not name a Consul service: write consul://SERVICE with \
                 letters, digits, '-', '_' or '.' (like consul://seele)"
            )),
        };
    }
    let rest = entry
        .strip_prefix("http://")
        .or_else(|| entry.strip_prefix("https://"));
    if !rest.is_some_and(|r| !r.is_empty() && !r.starts_with('/')) {
        return Err(format!(
            "{flag} \"{}\" is not an http:// or https:// URL (like http://relay-1:7070/mcp) \
             or consul://SERVICE",
            redact_url(entry)
        ));
    }
    Ok(())
}

/// Parses relay targets (`--relay`, repeatable, or the comma-separated variable): absolute
/// http(s) URLs or `consul://SERVICE`, each at most once, order kept.
pub fn parse_relays(entries: &[String]) -> Result<Vec<String>, String> {
    let mut out: Vec<String> = Vec::new();
    for entry in entries.iter().flat_map(|e| e.split(',')).map(str::trim) {
        if entry.is_empty() {
            continue;
        }
        parse_target("--relay", entry)?;
        if out.iter().any(|r| r == entry) {
            return Err(format!("--relay {} is given twice", redact_url(entry)));
        }
        out.push(entry.to_owned());
    }
    Ok(out)
}

/// Parses `--peer` entries (repeatable, or comma separated in the variable): http(s) URLs
/// (a prefix of the `remote_host` URLs allowed the credential), order kept, duplicates dropped.
pub fn parse_peers(entries: &[String]) -> Result<Vec<String>, String> {
    let mut out: Vec<String> = Vec::new();
    for entry in entries.iter().flat_map(|e| e.split(',')).map(str::trim) {
        if entry.is_empty() {
            continue;
        }
        coremcp_net::client::Url::parse(entry).map_err(|e| {
            format!(
                "--peer {}: {e} (a peer is an http(s) URL, e.g. http://devbox-2:7070)",
                redact_url(entry)
            )
        })?;
        if !out.iter().any(|p| p == entry) {
            out.push(entry.to_owned());
        }
    }
    Ok(out)
}

/// Parses `--peer-token` entries (repeatable, or comma separated in the variable): a static
/// token's NAME, or `oauth:SUBJECT` for a peer that signs in with OAuth client credentials.
pub fn parse_peer_tokens(entries: &[String]) -> Result<Vec<String>, String> {
    parse_principal_keys("--peer-token", entries)
}

/// Parses `--operator` entries like [`parse_peer_tokens`].
pub fn parse_operators(entries: &[String]) -> Result<Vec<String>, String> {
    parse_principal_keys("--operator", entries)
}

/// Principals given to `flag` (repeatable, or comma separated in its variable), as
/// [`coremcp_wire::policy::Caller::principal`] writes them: a bare NAME is a static token's,
/// `oauth:SUBJECT` an OAuth subject's.
fn parse_principal_keys(flag: &str, entries: &[String]) -> Result<Vec<String>, String> {
    let mut out: Vec<String> = Vec::new();
    for key in entries.iter().flat_map(|e| e.split(',')).map(str::trim) {
        if key.is_empty() {
            continue;
        }
        let name = key
            .strip_prefix(coremcp_wire::policy::OAUTH_PREFIX)
            .unwrap_or(key);
        if !coremcp_wire::policy::is_principal_name(name) || name == "stdio" || name == "*" {
            return Err(format!(
                "{flag} \"{key}\": expected the NAME of a token of --tokens (letters, digits, \
                 _ - .), or oauth:SUBJECT for an OAuth subject"
            ));
        }
        if !out.iter().any(|p| p == key) {
            out.push(key.to_owned());
        }
    }
    Ok(out)
}

/// Parses `--route GROUP=TARGET` entries (repeatable, or comma separated in the variable):
/// `GROUP` a forwarded catalog group, `TARGET` as for `--relay`. A group given several times
/// has several targets, tried in that order with the relay list's failover.
pub fn parse_routes(entries: &[String]) -> Result<Vec<(String, Vec<String>)>, String> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for entry in entries.iter().flat_map(|e| e.split(',')).map(str::trim) {
        if entry.is_empty() {
            continue;
        }
        let Some((group, target)) = entry.split_once('=') else {
            return Err(format!(
                "--route \"{}\" needs GROUP=TARGET (like seele=consul://seele or \
                 scrolls=http://owner:7070/mcp)",
                redact_url(entry)
            ));
        };
        let (group, target) = (group.trim(), target.trim());
        let forwarded: Vec<&str> = coremcp_catalog::GROUPS
            .iter()
            .filter(|g| g.runs == coremcp_plugin_api::Runs::Forwarded)
            .map(|g| g.id)
            .collect();
        if !forwarded.contains(&group) {
            return Err(format!(
                "--route {group}=…: \"{group}\" is not a forwarded group; routes are for {}",
                forwarded.join(", ")
            ));
        }
        parse_target("--route", target)?;
        match out.iter_mut().find(|(g, _)| g == group) {
            Some((_, targets)) if targets.iter().any(|t| t == target) => {
                return Err(format!(
                    "--route {group}={} is given twice",
                    redact_url(target)
                ))
            }
            Some((_, targets)) => targets.push(target.to_owned()),
            None => out.push((group.to_owned(), vec![target.to_owned()])),
        }
    }
    Ok(out)
}

/// Checks the form of a store address (the store layer checks the rest when it opens):
/// empty, `sqlite:`, `sqlite:/absolute/dir`, or a `postgres://` / `postgresql://` URL.
pub fn check_store(text: &str) -> Result<String, String> {
    let text = text.trim();
    let ok = text.is_empty()
        || text == "sqlite"
        || text == "sqlite:"
        || text
            .strip_prefix("sqlite:")
            .is_some_and(|rest| rest.trim_start_matches("//").starts_with('/'))
        || text.starts_with("postgres://")
        || text.starts_with("postgresql://");
    if ok {
        Ok(text.to_owned())
    } else {
        Err(format!(
            "--store \"{}\" is not a store address: use sqlite: (the default, under --data), \
             sqlite:/absolute/dir, or postgres://user@host:port/database",
            redact_url(text)
        ))
    }
}

/// The upstream client's settings from its variables and the config file; `install_root` is
/// where the default `mcp.json` lives.
pub fn upstream_settings(install_root: &Path) -> Result<coremcp_upstream::Settings, String> {
    use coremcp_upstream::{approval, config::FileChoice, Settings};
    let var = |name: &str| std::env::var(name).ok();
    let enabled = match var(env::MCP).as_deref().map(str::trim) {
        None | Some("") | Some("true") | Some("1") => true,
        Some("false") | Some("0") => false,
        Some(other) => return Err(format!("{}={other}: expected true or false", env::MCP)),
    };
    if !enabled {
        return Ok(Settings {
            install_root: install_root.to_owned(),
            ..Settings::default()
        });
    }
    let file = FileChoice::from_env(var(env::MCP_CONFIG).as_deref(), install_root);
    let servers = coremcp_upstream::config::load(&file, var(env::MCP_SERVERS).as_deref())?;
    let approval = approval::Policy::parse(
        var(env::MCP_REQUIRE_APPROVAL).as_deref(),
        var(env::MCP_PREAPPROVED).as_deref(),
    )?;
    Ok(Settings {
        enabled,
        servers,
        grants: std::sync::Arc::default(),
        approval,
        install_root: install_root.to_owned(),
    })
}

/// This machine's host name, from the kernel.
pub fn host_name() -> Option<String> {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its whole length; gethostname writes at most that much.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return None;
    }
    let len = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    let name = String::from_utf8_lossy(&buf[..len]).trim().to_owned();
    (!name.is_empty()).then_some(name)
}

/// Canonicalises the roots; none given means the working directory. A root that does not
/// exist is an error that names it.
pub fn resolve_roots(given: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let given = if given.is_empty() {
        vec![std::env::current_dir().map_err(|e| format!("the working directory: {e}"))?]
    } else {
        given.to_vec()
    };
    let mut roots: Vec<PathBuf> = Vec::new();
    for root in given {
        let canonical = root
            .canonicalize()
            .map_err(|e| format!("--root {}: {e}", root.display()))?;
        if !canonical.is_dir() {
            return Err(format!("--root {}: not a directory", root.display()));
        }
        if !roots.contains(&canonical) {
            roots.push(canonical);
        }
    }
    Ok(roots)
}

/// Parses `sql_query` connections: `name=url` entries (a bare URL is named `default`),
/// separated by `;` in the variable. Names are `[A-Za-z0-9_-]+`, each at most once.
pub fn parse_sql(entries: &[String]) -> Result<Vec<(String, String)>, String> {
    let mut out: Vec<(String, String)> = Vec::new();
    for entry in entries.iter().flat_map(|e| e.split(';')).map(str::trim) {
        if entry.is_empty() {
            continue;
        }
        let (name, url) = match entry.split_once('=') {
            Some((name, url)) if !name.contains("://") => (name.trim(), url.trim()),
            _ => ("default", entry),
        };
        let valid = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !valid {
            return Err(format!(
                "--sql: \"{name}\" is not a connection name (letters, digits, _ and -)"
            ));
        }
        if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
            return Err(format!(
                "--sql {name}: the connection must be a postgres:// or postgresql:// URL"
            ));
        }
        if out.iter().any(|(n, _)| n == name) {
            return Err(format!("--sql: connection \"{name}\" is given twice"));
        }
        out.push((name.to_owned(), url.to_owned()));
    }
    Ok(out)
}

/// Parses `--sql-allow-privileged` names (repeatable, or comma separated in the variable):
/// each must name a configured `sql_query` connection.
pub fn parse_sql_allowed(
    entries: &[String],
    sql: &[(String, String)],
) -> Result<Vec<String>, String> {
    let mut out: Vec<String> = Vec::new();
    for name in entries.iter().flat_map(|e| e.split(',')).map(str::trim) {
        if name.is_empty() {
            continue;
        }
        if !sql.iter().any(|(n, _)| n == name) {
            let known: Vec<&str> = sql.iter().map(|(n, _)| n.as_str()).collect();
            return Err(format!(
                "--sql-allow-privileged {name}: no such --sql connection (configured: {})",
                if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                }
            ));
        }
        if !out.iter().any(|n| n == name) {
            out.push(name.to_owned());
        }
    }
    Ok(out)
}

/// Parses documentation repositories: `DIR` (named by its folder) or `NAME=DIR`. Each folder
/// must exist; names are unique.
pub fn parse_docs(entries: &[String]) -> Result<Vec<(String, PathBuf)>, String> {
    let mut out: Vec<(String, PathBuf)> = Vec::new();
    for entry in entries.iter().map(|e| e.trim()).filter(|e| !e.is_empty()) {
        let (name, dir) = match entry.split_once('=') {
            Some((name, dir)) => (name.trim().to_owned(), PathBuf::from(dir.trim())),
            None => {
                let dir = PathBuf::from(entry);
                let canonical = dir.canonicalize().unwrap_or_else(|_| dir.clone());
                let name = canonical
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                (name, dir)
            }
        };
        let valid = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
        if !valid {
            return Err(format!(
                "--docs {entry}: \"{name}\" is not a repository name (letters, digits, _ - .); use NAME=DIR"
            ));
        }
        let canonical = dir
            .canonicalize()
            .map_err(|e| format!("--docs {entry}: {e}"))?;
        if !canonical.is_dir() {
            return Err(format!("--docs {entry}: not a directory"));
        }
        if out.iter().any(|(n, _)| *n == name) {
            return Err(format!("--docs: repository name \"{name}\" is given twice"));
        }
        out.push((name, canonical));
    }
    Ok(out)
}

/// The install root: the folder that holds `bin/coremcp`; for a binary not in a `bin/` folder
/// (a cargo build), its own folder.
pub fn install_root(exe: &Path) -> PathBuf {
    let dir = exe.parent().unwrap_or(Path::new("."));
    match (dir.file_name(), dir.parent()) {
        (Some(name), Some(root)) if name == "bin" => root.to_path_buf(),
        _ => dir.to_path_buf(),
    }
}

/// The default plugins folder: `plugins/` in the install root, the folder that holds
/// `bin/coremcp`; for a binary not in a `bin/` folder (a cargo build), `plugins/` beside it.
pub fn default_plugins_dir(exe: &Path) -> PathBuf {
    install_root(exe).join("plugins")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_timeouts_are_seconds_within_bounds() {
        assert_eq!(parse_connect_timeout("2"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_connect_timeout("0.5"), Ok(Duration::from_millis(500)));
        for bad in ["0", "0.01", "61", "-1", "two", "NaN", ""] {
            let error = parse_connect_timeout(bad).expect_err(bad);
            assert!(error.contains(bad), "{bad}: {error}");
        }
    }

    #[test]
    fn data_dir_follows_the_flag_then_xdg_then_home() {
        let cwd = Path::new("/home/dev/project");
        let flag = Path::new("rel/data");
        assert_eq!(
            resolve_data_dir(Some(flag), Some("/x"), Some("/h"), cwd),
            Some(PathBuf::from("/home/dev/project/rel/data"))
        );
        assert_eq!(
            resolve_data_dir(None, Some("/x/share"), Some("/h"), cwd),
            Some(PathBuf::from("/x/share/coremcp"))
        );
        // A relative XDG_DATA_HOME is invalid per the spec and ignored.
        assert_eq!(
            resolve_data_dir(None, Some("rel"), Some("/h"), cwd),
            Some(PathBuf::from("/h/.local/share/coremcp"))
        );
        assert_eq!(resolve_data_dir(None, None, None, cwd), None);
    }

    #[test]
    fn recent_errors_are_all_for_the_local_user_and_operators_else_ones_own() {
        let mut config = Config::with_plugins(PathBuf::from("/p"));
        config.operators = vec!["ops".to_owned()];
        assert_eq!(config.errors_visible_to("stdio"), None);
        assert_eq!(config.errors_visible_to("*"), None);
        assert_eq!(config.errors_visible_to("ops"), None);
        assert_eq!(config.errors_visible_to("bob"), Some("bob"));
        assert!(parse_operators(&["ops,stdio".to_owned()]).is_err());
    }

    #[test]
    fn relays_keep_their_order_and_refuse_what_is_not_a_url() {
        assert_eq!(
            parse_relays(&[
                "http://a:1/mcp, https://b/mcp".into(),
                "http://c/mcp".into()
            ]),
            Ok(vec![
                "http://a:1/mcp".to_owned(),
                "https://b/mcp".to_owned(),
                "http://c/mcp".to_owned()
            ])
        );
        assert!(parse_relays(&["relay-1:7070".into()])
            .expect_err("no scheme")
            .contains("not an http"));
        assert!(parse_relays(&["http://a/mcp,http://a/mcp".into()])
            .expect_err("twice")
            .contains("twice"));
    }

    #[test]
    fn store_addresses() {
        for ok in [
            "",
            "sqlite:",
            "sqlite:/var/lib/x",
            "postgres://u@h/db",
            "postgresql://h/db",
        ] {
            assert!(check_store(ok).is_ok(), "{ok}");
        }
        let err = check_store("mysql://u:secret@h/db").expect_err("mysql");
        assert!(err.contains("mysql://u:***@h/db"), "{err}");
        assert!(!err.contains("secret"), "{err}");
        assert!(check_store("sqlite:relative").is_err());
    }

    #[test]
    fn sql_connections() {
        let parse = |entries: &[&str]| {
            parse_sql(&entries.iter().map(|s| s.to_string()).collect::<Vec<_>>())
        };
        assert_eq!(
            parse(&[
                "postgres://u@h/db",
                "stats=postgresql://h/s; x-2 = postgres://h/x"
            ]),
            Ok(vec![
                ("default".into(), "postgres://u@h/db".into()),
                ("stats".into(), "postgresql://h/s".into()),
                ("x-2".into(), "postgres://h/x".into())
            ])
        );
        assert!(parse(&["a=mysql://h"])
            .expect_err("scheme")
            .contains("postgres://"));
        assert!(parse(&["a b=postgres://h"])
            .expect_err("name")
            .contains("not a connection name"));
        assert!(parse(&["a=postgres://h;a=postgres://g"])
            .expect_err("dup")
            .contains("twice"));
        assert_eq!(parse(&[";"]), Ok(vec![]));
    }

    #[test]
    fn docs_repositories() {
        let here = std::env::current_dir()
            .expect("cwd")
            .canonicalize()
            .expect("canonical");
        let name = here
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        let parse = |entries: &[&str]| {
            parse_docs(&entries.iter().map(|s| s.to_string()).collect::<Vec<_>>())
        };
        assert_eq!(
            parse(&[".", &format!("handbook={}", here.display())]),
            Ok(vec![
                (name.clone(), here.clone()),
                ("handbook".into(), here.clone())
            ])
        );
        assert!(parse(&[".", "."]).expect_err("dup").contains("given twice"));
        assert!(parse(&["x=/no/such/dir"])
            .expect_err("missing")
            .contains("/no/such/dir"));
        assert!(parse(&["a b=."])
            .expect_err("name")
            .contains("not a repository name"));
        let mut config = Config::with_plugins(PathBuf::from("p"));
        config.docs = vec![("z".into(), here.clone()), ("a".into(), here.clone())];
        let values = config.plugin_values();
        let repos = &values
            .iter()
            .find(|(k, _)| k == "docs.repos")
            .expect("repos")
            .1;
        assert!(repos.starts_with("{\"z\":"), "in the order given: {repos}");
    }

    #[test]
    fn roots_resolve() {
        let here = std::env::current_dir()
            .expect("cwd")
            .canonicalize()
            .expect("canonical");
        assert_eq!(resolve_roots(&[]), Ok(vec![here.clone()]));
        assert_eq!(
            resolve_roots(&[here.clone(), here.join(".")]),
            Ok(vec![here])
        );
        assert!(resolve_roots(&[PathBuf::from("/no/such/root")])
            .expect_err("missing")
            .contains("/no/such/root"));
    }

    #[test]
    fn plugins_dir_beside_the_install_root() {
        assert_eq!(
            default_plugins_dir(Path::new("/opt/core/bin/coremcp")),
            PathBuf::from("/opt/core/plugins")
        );
        assert_eq!(
            default_plugins_dir(Path::new("/src/target/release/coremcp")),
            PathBuf::from("/src/target/release/plugins")
        );
    }
}
