//! Which upstream MCP servers to connect to: `mcp.json` merged with the inline
//! `COREMCP_MCP_SERVERS`, the file winning on an id collision.
//!
//! Invariants:
//! - Every refusal names where (`servers[3].url`, `COREMCP_MCP_SERVERS entry 2`) and what is
//!   wrong; a duplicate id in the file reads exactly `servers[n]: duplicate server id "x".`
//! - An id is `^[A-Za-z0-9][A-Za-z0-9-]*$`: `_` is refused, with the reason (it separates the
//!   id from the tool in `mcp__<id>__<tool>`).
//! - A named config file that is missing is an error; the missing default file is no servers;
//!   an empty `COREMCP_MCP_CONFIG` disables the file.
//! - Unknown keys are refused (a misspelt `requestTimeoutMs` must not silently mean 30 s).

use coremcp_wire::names::check_id;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};

/// The default per-request timeout of an upstream server (ARCHITECTURE.md, "Limits").
pub(crate) const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest `requestTimeoutMs` accepted.
const MAX_REQUEST_TIMEOUT_MS: u64 = 600_000;
/// Tools one server may publish unless its `maxTools` says otherwise (the rest are withheld).
pub(crate) const DEFAULT_MAX_TOOLS: usize = 200;
/// The largest `maxTools` accepted.
const MAX_MAX_TOOLS: u64 = 2000;

/// One configured upstream server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    pub id: String,
    pub description: Option<String>,
    pub enabled: bool,
    pub request_timeout: Duration,
    /// Tools published at most; the rest are withheld with the reason.
    pub max_tools: usize,
    pub transport: Transport,
    /// Where it was configured (for messages).
    pub origin: Origin,
}

/// How to reach a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// A child process speaking newline-delimited JSON-RPC on stdin/stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        /// Passed to the child on top of what it inherits: the explicit way to hand a server
        /// a credential.
        env: BTreeMap<String, String>,
        /// What it inherits of Core MCP's environment: by default only the base list
        /// (`HOME`, `PATH`, `USER`, locale, temp dirs…), as the official SDKs do; `inheritEnv`
        /// names more, or `true` gives it the whole scrubbed environment.
        inherit: coremcp_spawn::Inherit,
        cwd: Option<PathBuf>,
    },
    /// MCP Streamable HTTP.
    Http {
        url: String,
        headers: BTreeMap<String, String>,
    },
    /// The legacy HTTP+SSE transport.
    Sse {
        url: String,
        headers: BTreeMap<String, String>,
    },
}

impl Transport {
    /// The transport's name, as status and probes show it.
    pub fn name(&self) -> &'static str {
        match self {
            Transport::Stdio { .. } => "stdio",
            Transport::Http { .. } => "http",
            Transport::Sse { .. } => "sse",
        }
    }
}

/// Where a server was configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    File(PathBuf),
    Inline,
}

/// Where the config file comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileChoice {
    /// `COREMCP_MCP_CONFIG` unset: `mcp.json` in the install root; missing means no servers.
    Default(PathBuf),
    /// `COREMCP_MCP_CONFIG=PATH`: must exist.
    Named(PathBuf),
    /// `COREMCP_MCP_CONFIG=` (empty): no file.
    Disabled,
}

impl FileChoice {
    /// From the variable's value and the install root.
    pub fn from_env(value: Option<&str>, install_root: &Path) -> Self {
        match value {
            None => Self::Default(install_root.join("mcp.json")),
            Some(v) if v.trim().is_empty() => Self::Disabled,
            Some(v) => Self::Named(PathBuf::from(v.trim())),
        }
    }
}

/// Reads the file (if any) and the inline servers, validates both and merges them.
pub fn load(file: &FileChoice, inline: Option<&str>) -> Result<Vec<ServerConfig>, String> {
    let from_file = match file {
        FileChoice::Disabled => Vec::new(),
        FileChoice::Default(path) => match std::fs::read_to_string(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(format!("{}: {e}", path.display())),
            Ok(text) => parse_file(&text, path)?,
        },
        FileChoice::Named(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| {
                format!(
                    "COREMCP_MCP_CONFIG names {}, which cannot be read: {e}",
                    path.display()
                )
            })?;
            parse_file(&text, path)?
        }
    };
    let from_inline = match inline {
        Some(text) if !text.trim().is_empty() => parse_inline(text)?,
        _ => Vec::new(),
    };
    Ok(merge(from_file, from_inline))
}

/// The file's servers win; an inline server with the same id is dropped (and logged).
fn merge(file: Vec<ServerConfig>, inline: Vec<ServerConfig>) -> Vec<ServerConfig> {
    let mut servers = file;
    for server in inline {
        if servers.iter().any(|s| s.id == server.id) {
            tracing::info!(
                id = %server.id,
                "COREMCP_MCP_SERVERS: server \"{}\" is also in the config file, which wins",
                server.id
            );
            continue;
        }
        servers.push(server);
    }
    servers
}

/// Parses `mcp.json`: `{"servers": [ … ]}`.
pub(crate) fn parse_file(text: &str, path: &Path) -> Result<Vec<ServerConfig>, String> {
    let shown = path.display();
    let doc: Value =
        serde_json::from_str(text).map_err(|e| format!("{shown}: not valid JSON: {e}"))?;
    let top = doc
        .as_object()
        .ok_or_else(|| format!("{shown}: expected an object like {{\"servers\": []}}"))?;
    if let Some(key) = top.keys().find(|k| *k != "servers") {
        return Err(format!(
            "{shown}: unknown key \"{key}\" (the file holds {{\"servers\": [ … ]}})"
        ));
    }
    let list = match top.get("servers") {
        None => return Ok(Vec::new()),
        Some(Value::Array(list)) => list,
        Some(_) => return Err(format!("{shown}: \"servers\" must be an array")),
    };
    let mut servers: Vec<ServerConfig> = Vec::new();
    for (n, entry) in list.iter().enumerate() {
        let at = format!("servers[{n}]");
        let server = parse_server(entry, &at, Origin::File(path.to_path_buf()))
            .map_err(|e| format!("{shown}: {e}"))?;
        if servers.iter().any(|s| s.id == server.id) {
            return Err(format!("{at}: duplicate server id \"{}\".", server.id));
        }
        servers.push(server);
    }
    Ok(servers)
}

const SERVER_KEYS: &[&str] = &[
    "id",
    "description",
    "enabled",
    "requestTimeoutMs",
    "type",
    "transport",
    "command",
    "args",
    "env",
    "inheritEnv",
    "cwd",
    "url",
    "headers",
    "maxTools",
];

fn parse_server(entry: &Value, at: &str, origin: Origin) -> Result<ServerConfig, String> {
    let object = entry
        .as_object()
        .ok_or_else(|| format!("{at}: expected an object with at least \"id\""))?;
    if let Some(key) = object.keys().find(|k| !SERVER_KEYS.contains(&k.as_str())) {
        return Err(format!(
            "{at}: unknown key \"{key}\" (expected some of: {})",
            SERVER_KEYS.join(", ")
        ));
    }
    let id = string(object, "id", at)?.ok_or_else(|| format!("{at}: \"id\" is required"))?;
    check_id(&id).map_err(|e| format!("{at}.id: {e}"))?;
    let kind = match (string(object, "type", at)?, string(object, "transport", at)?) {
        (Some(a), Some(b)) if a != b => {
            return Err(format!(
                "{at}: \"type\" ({a}) and \"transport\" ({b}) disagree; they are the same setting, give one"
            ))
        }
        (Some(kind), _) | (None, Some(kind)) => kind,
        (None, None) => "stdio".to_owned(),
    };
    let request_timeout = match bounded(object, "requestTimeoutMs", MAX_REQUEST_TIMEOUT_MS)
        .map_err(|got| format!("{at}.requestTimeoutMs: expected milliseconds from 1 to {MAX_REQUEST_TIMEOUT_MS}, got {got}"))?
    {
        Some(ms) => Duration::from_millis(ms),
        None => DEFAULT_REQUEST_TIMEOUT,
    };
    let max_tools = match bounded(object, "maxTools", MAX_MAX_TOOLS).map_err(|got| {
        format!("{at}.maxTools: expected a number of tools from 1 to {MAX_MAX_TOOLS}, got {got}")
    })? {
        Some(n) => n as usize,
        None => DEFAULT_MAX_TOOLS,
    };
    let enabled = match object.get("enabled") {
        None => true,
        Some(Value::Bool(b)) => *b,
        Some(other) => return Err(format!("{at}.enabled: expected true or false, got {other}")),
    };
    Ok(ServerConfig {
        id,
        description: string(object, "description", at)?,
        enabled,
        request_timeout,
        max_tools,
        transport: transport(object, &kind, at)?,
        origin,
    })
}

/// The number at `key`, from 1 to `max` (`None` when absent); the error is the value given.
fn bounded(object: &Map<String, Value>, key: &str, max: u64) -> Result<Option<u64>, String> {
    match object.get(key) {
        None => Ok(None),
        Some(value) => match value.as_u64() {
            Some(n) if (1..=max).contains(&n) => Ok(Some(n)),
            _ => Err(value.to_string()),
        },
    }
}

/// `${VAR}` in the fields that may carry a secret or a machine's path (expand.rs), for the
/// server at `at`. A message names the field and the variable, never a value.
struct Expander<'a> {
    at: &'a str,
}

impl Expander<'_> {
    fn one(&self, text: String, field: &str) -> Result<String, String> {
        super::expand::from_env(&text).map_err(|e| format!("{}.{field}: {e}", self.at))
    }

    fn all(&self, items: Vec<String>, field: &str) -> Result<Vec<String>, String> {
        items
            .into_iter()
            .enumerate()
            .map(|(i, item)| self.one(item, &format!("{field}[{i}]")))
            .collect()
    }

    fn map(
        &self,
        map: BTreeMap<String, String>,
        field: &str,
    ) -> Result<BTreeMap<String, String>, String> {
        map.into_iter()
            .map(|(key, value)| Ok((key.clone(), self.one(value, &format!("{field}.{key}"))?)))
            .collect()
    }
}

/// The transport of a server of type `kind`, with the keys only that kind uses.
fn transport(object: &Map<String, Value>, kind: &str, at: &str) -> Result<Transport, String> {
    let expand = Expander { at };
    let forbid = |keys: &[&str]| -> Result<(), String> {
        match keys.iter().find(|k| object.contains_key(**k)) {
            Some(key) => Err(format!("{at}.{key}: not used by a {kind} server")),
            None => Ok(()),
        }
    };
    match kind {
        "stdio" => {
            forbid(&["url", "headers"])?;
            let command = string(object, "command", at)?
                .filter(|c| !c.trim().is_empty())
                .ok_or_else(|| format!("{at}: a stdio server needs \"command\""))?;
            let cwd = match string(object, "cwd", at)? {
                Some(cwd) => Some(PathBuf::from(expand.one(cwd, "cwd")?)),
                None => None,
            };
            Ok(Transport::Stdio {
                command: expand.one(command, "command")?,
                args: expand.all(strings(object, "args", at)?, "args")?,
                env: expand.map(string_map(object, "env", at)?, "env")?,
                inherit: inherit(object, at)?,
                cwd,
            })
        }
        "http" | "sse" => {
            forbid(&["command", "args", "env", "inheritEnv", "cwd"])?;
            let template = string(object, "url", at)?
                .ok_or_else(|| format!("{at}: an {kind} server needs \"url\""))?;
            let url = expand.one(template.clone(), "url")?;
            // The message shows the URL as written: its expansion may hold a secret.
            check_url(&url).map_err(|e| match url == template {
                true => format!("{at}.url: {e}"),
                false => format!(
                    "{at}.url: \"{template}\" does not expand to an absolute http:// or \
                     https:// URL with a host"
                ),
            })?;
            let headers = expand.map(string_map(object, "headers", at)?, "headers")?;
            Ok(match kind {
                "http" => Transport::Http { url, headers },
                _ => Transport::Sse { url, headers },
            })
        }
        other => Err(format!(
            "{at}.type: \"{other}\" is not a transport (stdio, http or sse)"
        )),
    }
}

/// `inheritEnv`: absent (the base list), `true` (the whole scrubbed environment), `false`
/// (the base list), or more names to inherit — never one that looks like a credential.
fn inherit(object: &Map<String, Value>, at: &str) -> Result<coremcp_spawn::Inherit, String> {
    use coremcp_spawn::Inherit;
    match object.get("inheritEnv") {
        None | Some(Value::Bool(false)) => return Ok(Inherit::Base(Vec::new())),
        Some(Value::Bool(true)) => return Ok(Inherit::Scrubbed),
        Some(Value::Array(_)) => {}
        Some(other) => {
            return Err(format!(
                "{at}.inheritEnv: expected true, false or an array of variable names, got {other}"
            ))
        }
    }
    let names = strings(object, "inheritEnv", at)?;
    for name in &names {
        let valid = !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(format!(
                "{at}.inheritEnv: \"{name}\" is not an environment variable name"
            ));
        }
        if coremcp_spawn::is_credential_name(name) {
            return Err(format!(
                "{at}.inheritEnv: \"{name}\" looks like a credential, and credentials are never \
                 inherited; hand it to the server in \"env\""
            ));
        }
    }
    Ok(Inherit::Base(names))
}

/// Parses `COREMCP_MCP_SERVERS`: `id=command args;id2=command args` (split on whitespace, no
/// shell and no quoting).
pub(crate) fn parse_inline(text: &str) -> Result<Vec<ServerConfig>, String> {
    let mut servers: Vec<ServerConfig> = Vec::new();
    for (n, entry) in text.split(';').map(str::trim).enumerate() {
        if entry.is_empty() {
            continue;
        }
        let at = format!("COREMCP_MCP_SERVERS entry {}", n + 1);
        let (id, command_line) = entry
            .split_once('=')
            .ok_or_else(|| format!("{at} (\"{entry}\"): expected id=command args"))?;
        let id = id.trim();
        check_id(id).map_err(|e| format!("{at}: {e}"))?;
        let mut words = command_line.split_whitespace().map(str::to_owned);
        let command = words
            .next()
            .ok_or_else(|| format!("{at}: server \"{id}\" has no command"))?;
        if servers.iter().any(|s| s.id == id) {
            return Err(format!(
                "COREMCP_MCP_SERVERS: duplicate server id \"{id}\"."
            ));
        }
        servers.push(ServerConfig {
            id: id.to_owned(),
            description: None,
            enabled: true,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            max_tools: DEFAULT_MAX_TOOLS,
            transport: Transport::Stdio {
                command,
                args: words.collect(),
                env: BTreeMap::new(),
                inherit: coremcp_spawn::Inherit::Base(Vec::new()),
                cwd: None,
            },
            origin: Origin::Inline,
        });
    }
    Ok(servers)
}

fn check_url(url: &str) -> Result<(), String> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .ok_or_else(|| format!("\"{url}\" is not an absolute http:// or https:// URL"))?;
    if rest.is_empty() || rest.starts_with('/') {
        return Err(format!("\"{url}\" has no host"));
    }
    Ok(())
}

fn string(object: &Map<String, Value>, key: &str, at: &str) -> Result<Option<String>, String> {
    match object.get(key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(format!("{at}.{key}: expected a string, got {other}")),
    }
}

fn strings(object: &Map<String, Value>, key: &str, at: &str) -> Result<Vec<String>, String> {
    match object.get(key) {
        None => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, v)| {
                v.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| format!("{at}.{key}[{i}]: expected a string, got {v}"))
            })
            .collect(),
        Some(other) => Err(format!(
            "{at}.{key}: expected an array of strings, got {other}"
        )),
    }
}

fn string_map(
    object: &Map<String, Value>,
    key: &str,
    at: &str,
) -> Result<BTreeMap<String, String>, String> {
    match object.get(key) {
        None => Ok(BTreeMap::new()),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                other => Err(format!("{at}.{key}.{k}: expected a string, got {other}")),
            })
            .collect(),
        Some(other) => Err(format!(
            "{at}.{key}: expected an object of strings, got {other}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> Result<Vec<ServerConfig>, String> {
        parse_file(text, Path::new("mcp.json"))
    }

    #[test]
    fn the_shipped_file_and_both_transports_parse() {
        assert_eq!(file(r#"{ "servers": [] }"#), Ok(vec![]));
        let servers = file(
            r#"{"servers": [
                {"id": "everything", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"],
                 "env": {"API_KEY": "given"}, "requestTimeoutMs": 5000, "description": "demo"},
                {"id": "remote-1", "transport": "http", "url": "https://mcp.example/mcp", "headers": {"X-A": "b"}},
                {"id": "old", "type": "sse", "url": "http://127.0.0.1:9/sse", "enabled": false}
            ]}"#,
        )
        .expect("valid");
        assert_eq!(servers.len(), 3);
        assert_eq!(servers[0].request_timeout, Duration::from_millis(5000));
        assert!(
            matches!(&servers[0].transport, Transport::Stdio { command, args, env, .. }
            if command == "npx" && args.len() == 2 && env["API_KEY"] == "given")
        );
        assert!(
            matches!(&servers[1].transport, Transport::Http { url, .. } if url == "https://mcp.example/mcp")
        );
        assert!(matches!(&servers[2].transport, Transport::Sse { .. }));
        assert!(!servers[2].enabled);
        assert_eq!(servers[1].request_timeout, DEFAULT_REQUEST_TIMEOUT);
    }

    #[test]
    fn refusals_say_where_and_why() {
        let cases = [
            (
                r#"{"servers": [{"id": "a", "command": "x"}, {"id": "a", "command": "y"}]}"#,
                "servers[1]: duplicate server id \"a\".",
            ),
            (
                r#"{"servers": [{"id": "my_server", "command": "x"}]}"#,
                "\"__\" separates the server id from the tool name",
            ),
            (
                r#"{"servers": [{"id": "-a", "command": "x"}]}"#,
                "servers[0].id: server id \"-a\" is not valid",
            ),
            (
                r#"{"servers": [{"id": "a"}]}"#,
                "servers[0]: a stdio server needs \"command\"",
            ),
            (
                r#"{"servers": [{"id": "a", "type": "http"}]}"#,
                "servers[0]: an http server needs \"url\"",
            ),
            (
                r#"{"servers": [{"id": "a", "type": "http", "url": "mcp.example/mcp"}]}"#,
                "servers[0].url: \"mcp.example/mcp\" is not an absolute http:// or https:// URL",
            ),
            (
                r#"{"servers": [{"id": "a", "type": "http", "url": "http://h/", "command": "x"}]}"#,
                "servers[0].command: not used by a http server",
            ),
            (
                r#"{"servers": [{"id": "a", "type": "ws", "url": "http://h/"}]}"#,
                "\"ws\" is not a transport",
            ),
            (
                r#"{"servers": [{"id": "a", "type": "http", "transport": "sse", "url": "http://h/"}]}"#,
                "disagree",
            ),
            (
                r#"{"servers": [{"id": "a", "command": "x", "requestTimoutMs": 5}]}"#,
                "unknown key \"requestTimoutMs\"",
            ),
            (
                r#"{"servers": [{"id": "a", "command": "x", "requestTimeoutMs": 0}]}"#,
                "servers[0].requestTimeoutMs",
            ),
            (
                r#"{"servers": [{"id": "a", "command": "x", "args": ["ok", 3]}]}"#,
                "servers[0].args[1]: expected a string",
            ),
            (
                r#"{"servers": [{"id": "a", "command": "x", "env": {"K": 1}}]}"#,
                "servers[0].env.K",
            ),
            (r#"{"mcpServers": {}}"#, "unknown key \"mcpServers\""),
            (r#"{"servers": {}}"#, "\"servers\" must be an array"),
            ("{", "not valid JSON"),
        ];
        for (text, needle) in cases {
            let err = file(text).expect_err(text);
            assert!(
                err.contains(needle),
                "{text}\n  gave: {err}\n  want: {needle}"
            );
        }
    }

    #[test]
    fn inline_servers_split_on_whitespace_and_lose_to_the_file() {
        let inline = parse_inline("time=uvx mcp-server-time --local-timezone UTC; echo=./echo.sh")
            .expect("inline");
        assert_eq!(inline.len(), 2);
        assert!(
            matches!(&inline[0].transport, Transport::Stdio { command, args, .. }
            if command == "uvx" && args == &["mcp-server-time", "--local-timezone", "UTC"])
        );
        assert_eq!(inline[1].origin, Origin::Inline);
        assert!(parse_inline("a_b=x")
            .expect_err("underscore")
            .contains("\"__\" separates"));
        assert!(parse_inline("a=x;a=y")
            .expect_err("dup")
            .contains("duplicate server id \"a\"."));
        assert!(parse_inline("justacommand")
            .expect_err("no id")
            .contains("expected id=command"));
        assert!(parse_inline("a=")
            .expect_err("no command")
            .contains("has no command"));
        let from_file =
            file(r#"{"servers": [{"id": "time", "command": "from-file"}]}"#).expect("file");
        let merged = merge(from_file, inline);
        assert_eq!(merged.len(), 2);
        assert!(
            matches!(&merged[0].transport, Transport::Stdio { command, .. } if command == "from-file")
        );
        assert_eq!(merged[1].id, "echo");
    }

    #[test]
    fn the_file_choice_follows_the_variable() {
        let root = Path::new("/opt/core");
        assert_eq!(
            FileChoice::from_env(None, root),
            FileChoice::Default(root.join("mcp.json"))
        );
        assert_eq!(FileChoice::from_env(Some(""), root), FileChoice::Disabled);
        assert_eq!(
            FileChoice::from_env(Some("/etc/x.json"), root),
            FileChoice::Named("/etc/x.json".into())
        );
        // A missing default file is no servers; a missing named one is an error.
        let missing =
            std::env::temp_dir().join(format!("coremcp-no-such-{}.json", std::process::id()));
        assert_eq!(
            load(&FileChoice::Default(missing.clone()), None),
            Ok(vec![])
        );
        let err = load(&FileChoice::Named(missing), None).expect_err("named");
        assert!(err.starts_with("COREMCP_MCP_CONFIG names "), "{err}");
        assert_eq!(
            load(&FileChoice::Disabled, Some("a=x"))
                .expect("inline")
                .len(),
            1
        );
    }
}
