//! The MCP configuration files of the agent clients `bootstrap` sets up, in each client's own
//! format, and merging Core MCP's entry into one without touching anything else in it.
//!
//! | client | file | where the entry goes |
//! |---|---|---|
//! | `claude_code` | `~/.claude.json` | `mcpServers.core` (`type: stdio`) |
//! | `codex` | `$CODEX_HOME/config.toml` (default `~/.codex/config.toml`) | `[mcp_servers.core]` |
//! | `vscode` | `$XDG_CONFIG_HOME/Code/User/mcp.json` (default `~/.config/…`) | `servers.core` (`type: stdio`) |
//! | `cursor` | `~/.cursor/mcp.json` | `mcpServers.core` |
//!
//! Invariants: a merge changes only the entry named [`ENTRY`]; every other key keeps its value
//! and its place; a file that cannot be read as its format is refused with the reason, never
//! overwritten; merging an entry that is already there as wanted reports no change.

use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

/// The name Core MCP's entry has in every client's configuration.
pub const ENTRY: &str = "core";

/// An agent client `bootstrap` can configure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Client {
    ClaudeCode,
    Codex,
    Vscode,
    Cursor,
}

/// How Core MCP is started by a client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    pub command: String,
    pub args: Vec<String>,
    /// Variables the client must hand the server itself (Codex passes its own environment on
    /// to no stdio server): written into its entry's `env`.
    pub env: Vec<(String, String)>,
}

/// Settings that concern a `coremcp serve`, not a client's stdio server.
const SERVE_ONLY: [&str; 7] = [
    "COREMCP_LISTEN",
    "COREMCP_TOKENS",
    "COREMCP_TOKENS_TEXT",
    "COREMCP_TLS_CERT",
    "COREMCP_TLS_KEY",
    "COREMCP_MAX_CONNECTIONS_PER_CLIENT",
    "COREMCP_STATUS_TOKEN",
];

/// The Core MCP settings of a client's entry: those it carries, and those left out with why.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientEnv {
    /// Name and value, sorted by name.
    pub kept: Vec<(String, String)>,
    /// Name and why it was left out, sorted by name.
    pub left_out: Vec<(String, &'static str)>,
}

/// The Core MCP settings of `vars` (this process's environment) a client's entry should carry:
/// every `COREMCP_*` variable but the serve-only ones, never a credential — by its name (the
/// rest of it after `COREMCP_`: `RELAY_TOKEN` is one), by its value (a URL with a password, a
/// connection string with a key), or by an argument in it (`--token X`, `--api-key=X` in an
/// upstream server's command line). What is left out is named with why, never with its value.
pub fn client_env(vars: impl Iterator<Item = (String, String)>) -> ClientEnv {
    let mut out = ClientEnv::default();
    for (name, value) in vars {
        let Some(rest) = name.strip_prefix("COREMCP_").filter(|r| !r.is_empty()) else {
            continue;
        };
        let why = if SERVE_ONLY.contains(&name.as_str()) {
            Some("it concerns coremcp serve, not a client's stdio server")
        } else if coremcp_spawn::is_credential_name(rest) {
            Some("its name says it holds a credential: set it in the client's own environment")
        } else if coremcp_spawn::is_credential_value(std::ffi::OsStr::new(&value)) {
            Some(
                "its value holds a credential (a URL with a password, a key): set it in the \
                 client's own environment",
            )
        } else if names_a_credential(&value) {
            Some(
                "an argument in it names a credential (like --token): set it in the client's \
                 own environment",
            )
        } else {
            None
        };
        match why {
            Some(why) => out.left_out.push((name, why)),
            None => out.kept.push((name, value)),
        }
    }
    out.kept.sort();
    out.left_out.sort();
    out
}

/// Whether `value` holds an option whose name says its value is a credential (`--token X`,
/// `--api-key=X`, `-password X`), as a command line in `COREMCP_MCP_SERVERS` would.
fn names_a_credential(value: &str) -> bool {
    value
        .split(|c: char| c.is_whitespace() || c == ';')
        .filter_map(|word| word.strip_prefix('-'))
        .map(|flag| flag.trim_start_matches('-'))
        .map(|flag| flag.split('=').next().unwrap_or_default())
        .any(|name| !name.is_empty() && coremcp_spawn::is_credential_name(name))
}

/// Where a variable lookup comes from (the process environment, or a test's).
pub type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

impl Client {
    /// The `--groups` the README recommends for the client: `dynamic` for one that lists its
    /// tools again when told they changed, `search` for one that never does; `None` keeps all.
    pub fn recommended_groups(self) -> Option<&'static str> {
        match self {
            Client::ClaudeCode => Some("dynamic"),
            Client::Codex => Some("search"),
            Client::Vscode | Client::Cursor => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Client::ClaudeCode => "claude_code",
            Client::Codex => "codex",
            Client::Vscode => "vscode",
            Client::Cursor => "cursor",
        }
    }

    /// The client's configuration file for a user whose home is `home`.
    pub fn config_path(self, home: &Path, env: Env<'_>) -> PathBuf {
        let set = |name: &str| env(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        match self {
            Client::ClaudeCode => home.join(".claude.json"),
            Client::Codex => set("CODEX_HOME")
                .unwrap_or_else(|| home.join(".codex"))
                .join("config.toml"),
            Client::Vscode => set("XDG_CONFIG_HOME")
                .unwrap_or_else(|| home.join(".config"))
                .join("Code/User/mcp.json"),
            Client::Cursor => home.join(".cursor/mcp.json"),
        }
    }

    /// `existing` (the file's text, `None` when there is none) with Core MCP's entry for
    /// `launch`, or `None` when it is already there as wanted.
    pub fn merge(self, existing: Option<&str>, launch: &Launch) -> Result<Option<String>, String> {
        match self {
            Client::Codex => merge_toml(existing.unwrap_or_default(), launch),
            Client::ClaudeCode => merge_json(existing, "mcpServers", json_entry(launch, true)),
            Client::Cursor => merge_json(existing, "mcpServers", json_entry(launch, false)),
            Client::Vscode => merge_json(existing, "servers", json_entry(launch, true)),
        }
    }
}

fn json_entry(launch: &Launch, typed: bool) -> Value {
    let mut entry = Map::new();
    if typed {
        entry.insert("type".into(), "stdio".into());
    }
    entry.insert("command".into(), launch.command.clone().into());
    entry.insert("args".into(), json!(launch.args));
    Value::Object(entry)
}

fn merge_json(existing: Option<&str>, key: &str, entry: Value) -> Result<Option<String>, String> {
    let text = existing.unwrap_or_default();
    let mut doc: Value = if text.trim().is_empty() {
        json!({})
    } else {
        serde_json::from_str(text).map_err(|e| {
            format!("it is not plain JSON ({e}); comments or trailing commas must go before it can be merged")
        })?
    };
    let Some(top) = doc.as_object_mut() else {
        return Err("its top level is not a JSON object".into());
    };
    let servers = top.entry(key).or_insert_with(|| json!({}));
    let Some(servers) = servers.as_object_mut() else {
        return Err(format!("its \"{key}\" is not an object"));
    };
    if servers.get(ENTRY) == Some(&entry) {
        return Ok(None);
    }
    servers.insert(ENTRY.into(), entry);
    let mut out = serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())?;
    out.push('\n');
    Ok(Some(out))
}

/// A TOML basic string.
fn toml_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\u{:04X}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn toml_section(launch: &Launch) -> String {
    let args: Vec<String> = launch.args.iter().map(|a| toml_string(a)).collect();
    let mut section = format!(
        "[mcp_servers.{ENTRY}]\ncommand = {}\nargs = [{}]\n",
        toml_string(&launch.command),
        args.join(", ")
    );
    if !launch.env.is_empty() {
        section.push_str(&format!("\n[mcp_servers.{ENTRY}.env]\n"));
        for (name, value) in &launch.env {
            section.push_str(&format!("{name} = {}\n", toml_string(value)));
        }
    }
    section
}

/// The table a header line opens (`[a.b]` → `a.b`), unquoted; `None` for any other line.
fn header(line: &str) -> Option<String> {
    let t = line.trim();
    let inner = t
        .strip_prefix("[[")
        .and_then(|r| r.split("]]").next())
        .or_else(|| t.strip_prefix('[').and_then(|r| r.split(']').next()))?;
    Some(
        inner
            .split('.')
            .map(|p| p.trim().trim_matches('"'))
            .collect::<Vec<_>>()
            .join("."),
    )
}

/// Replaces (or appends) the `[mcp_servers.core]` table and its sub-tables, keeping every
/// other line as it is.
fn merge_toml(text: &str, launch: &Launch) -> Result<Option<String>, String> {
    let ours = format!("mcp_servers.{ENTRY}");
    let lines: Vec<&str> = text.lines().collect();
    let mut in_table: Option<String> = None;
    let mut start = None;
    let mut end = lines.len();
    for (i, line) in lines.iter().enumerate() {
        if let Some(name) = header(line) {
            let mine = name == ours || name.starts_with(&format!("{ours}."));
            match (start, mine) {
                (None, true) => start = Some(i),
                (Some(_), false) if end == lines.len() => end = i,
                (Some(_), true) if end != lines.len() => {
                    return Err(format!(
                        "[{ours}] is split over several places; join it by hand first"
                    ))
                }
                _ => {}
            }
            in_table = Some(name);
            continue;
        }
        let key = line.trim_start();
        let dotted = key.starts_with("mcp_servers") && key.contains('=');
        if dotted && in_table.is_none() {
            return Err("it sets mcp_servers with dotted or inline keys; move them under [mcp_servers.*] tables first".into());
        }
    }
    let section = toml_section(launch);
    let Some(start) = start else {
        let mut out = text.to_owned();
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        if !out.trim().is_empty() {
            out.push('\n');
        }
        out.push_str(&section);
        return Ok(Some(out));
    };
    // The table as it stands, without the blank lines before the next one.
    let mut last = end;
    while last > start + 1 && lines[last - 1].trim().is_empty() {
        last -= 1;
    }
    let current: Vec<&str> = lines[start..last].iter().map(|l| l.trim()).collect();
    let wanted: Vec<&str> = section.lines().collect();
    if current == wanted {
        return Ok(None);
    }
    let mut out: Vec<String> = lines[..start].iter().map(|l| (*l).to_owned()).collect();
    out.extend(section.lines().map(str::to_owned));
    out.extend(lines[last..].iter().map(|l| (*l).to_owned()));
    let mut out = out.join("\n");
    out.push('\n');
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch() -> Launch {
        Launch {
            command: "/opt/core mcp/bin/coremcp".into(),
            args: vec!["stdio".into()],
            env: Vec::new(),
        }
    }

    #[test]
    fn an_argument_that_names_a_credential_keeps_its_variable_out() {
        let vars = [
            (
                "COREMCP_MCP_SERVERS",
                "gh=npx -y gh-server --token abc123;fs=fs-server /src",
            ),
            ("COREMCP_PUBLISH_CMD", "publisher --api-key=xyz"),
            ("COREMCP_SHELL", "bash --login"),
            ("COREMCP_COMPOSE", "docker compose --project-directory /p"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()));
        let found = client_env(vars);
        let kept: Vec<&str> = found.kept.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(kept, ["COREMCP_COMPOSE", "COREMCP_SHELL"]);
        let left: Vec<&str> = found.left_out.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(left, ["COREMCP_MCP_SERVERS", "COREMCP_PUBLISH_CMD"]);
        assert!(
            found.left_out[0].1.contains("--token"),
            "{:?}",
            found.left_out
        );
    }

    #[test]
    fn a_client_entry_carries_core_mcp_settings_never_a_credential() {
        let vars = [
            ("COREMCP_ROOTS", "/home/dev/src"),
            ("COREMCP_STORE", "postgres://coremcp@db.example/core"),
            ("COREMCP_GROUPS", "search"),
            ("COREMCP_RELAY_TOKEN", "s3cret-token-value"),
            ("COREMCP_STATUS_TOKEN", "s3cret"),
            ("COREMCP_SQL", "default=postgres://app:pw@db/app"),
            ("COREMCP_LISTEN", "0.0.0.0:7070"),
            ("PATH", "/usr/bin"),
            ("GITHUB_TOKEN", "ghp_x"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()));
        let found = client_env(vars);
        let names: Vec<&str> = found.kept.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, ["COREMCP_GROUPS", "COREMCP_ROOTS", "COREMCP_STORE"]);
        let left: Vec<&str> = found.left_out.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            left,
            [
                "COREMCP_LISTEN",
                "COREMCP_RELAY_TOKEN",
                "COREMCP_SQL",
                "COREMCP_STATUS_TOKEN"
            ]
        );
        let kept = found.kept;
        let with_env = Launch {
            env: kept,
            ..launch()
        };
        let text = Client::Codex
            .merge(None, &with_env)
            .expect("new")
            .expect("text");
        assert!(
            text.contains("[mcp_servers.core.env]\nCOREMCP_GROUPS = \"search\"\n"),
            "{text}"
        );
        assert!(!text.contains("s3cret") && !text.contains(":pw@"), "{text}");
        // Written once, then left alone.
        assert_eq!(Client::Codex.merge(Some(&text), &with_env), Ok(None));
    }

    #[test]
    fn json_merges_keep_everything_else_and_repeat_as_no_change() {
        let existing = r#"{"theme": "dark", "mcpServers": {"other": {"command": "x"}}, "z": [1]}"#;
        let merged = Client::ClaudeCode
            .merge(Some(existing), &launch())
            .expect("merge")
            .expect("changed");
        let doc: Value = serde_json::from_str(&merged).expect("json");
        let keys: Vec<&String> = doc.as_object().expect("object").keys().collect();
        assert_eq!(keys, ["theme", "mcpServers", "z"]);
        assert_eq!(doc["mcpServers"]["other"]["command"], "x");
        assert_eq!(doc["mcpServers"]["core"]["type"], "stdio");
        assert_eq!(Client::ClaudeCode.merge(Some(&merged), &launch()), Ok(None));
        let vscode = Client::Vscode
            .merge(None, &launch())
            .expect("new")
            .expect("text");
        assert!(vscode.contains("\"servers\""), "{vscode}");
        for bad in ["// comment\n{}", "[1]", r#"{"mcpServers": 3}"#] {
            assert!(Client::Cursor.merge(Some(bad), &launch()).is_err(), "{bad}");
        }
    }

    #[test]
    fn toml_merges_replace_only_our_table() {
        let existing = "model = \"o3\"\n\n[mcp_servers.other]\ncommand = \"x\"\n\n[mcp_servers.core]\ncommand = \"old\"\n\n[mcp_servers.core.env]\nA = \"1\"\n\n[profile]\nname = \"p\"\n";
        let merged = Client::Codex
            .merge(Some(existing), &launch())
            .expect("merge")
            .expect("changed");
        assert!(merged.starts_with("model = \"o3\"\n\n[mcp_servers.other]\ncommand = \"x\"\n\n[mcp_servers.core]\ncommand = \"/opt/core mcp/bin/coremcp\"\nargs = [\"stdio\"]\n\n[profile]\nname = \"p\"\n"), "{merged}");
        assert_eq!(Client::Codex.merge(Some(&merged), &launch()), Ok(None));
        let fresh = Client::Codex
            .merge(None, &launch())
            .expect("new")
            .expect("text");
        assert_eq!(fresh, toml_section(&launch()));
        assert!(Client::Codex
            .merge(Some("mcp_servers.core.command = \"x\"\n"), &launch())
            .is_err());
        assert_eq!(toml_string("a\"b\\c\n"), r#""a\"b\\c\n""#);
    }
}
