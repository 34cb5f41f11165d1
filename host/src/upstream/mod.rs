//! Upstream MCP servers (DESIGN §6): the servers a user configures in `mcp.json` or
//! `COREMCP_MCP_SERVERS`, whose tools the host will publish as `mcp__<id>__<tool>`.
//!
//! In this build the configuration is read, validated and reported (boot line, `/api/status`),
//! and `coremcp upstream` connects to each server once ([`probe`]) to show what would be
//! published. The host does not connect at start yet, and grants and approval come next:
//! until then no upstream tool is published or callable, so nothing runs unattended.
//!
//! Modules: [`client`] (one server as a blocking MCP client) over [`stdio`], [`http`] or
//! legacy [`sse`] transports, sharing [`rpc`] and [`events`]; [`lines`] and [`ring`] bound what a child's pipes can cost;
//! [`publish`] holds the pure publishing rules and the result cap.
//!
//! Invariant: a bad configuration stops the host at start with a message naming the entry;
//! `COREMCP_MCP=false` turns the client off without reading anything.

pub mod client;
pub mod config;
pub mod grants;
pub mod http;
pub mod lines;
pub mod probe;
pub mod publish;
pub mod ring;
pub mod rpc;
pub mod sse;
pub mod stdio;

use std::path::Path;

use serde_json::{json, Value};

use config::{FileChoice, ServerConfig, Transport};

/// The environment variables of the upstream client.
pub mod env {
    /// `false` turns the upstream client off.
    pub const MCP: &str = "COREMCP_MCP";
    /// The config file (default `mcp.json` in the install root; empty: none).
    pub const CONFIG: &str = "COREMCP_MCP_CONFIG";
    /// Inline servers: `id=command args;id2=command args`.
    pub const SERVERS: &str = "COREMCP_MCP_SERVERS";
    /// Who may call which upstream tool (`none` by default).
    pub const GRANTS: &str = "COREMCP_MCP_GRANTS";
}

/// The upstream client's settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settings {
    /// False with `COREMCP_MCP=false`.
    pub enabled: bool,
    pub servers: Vec<ServerConfig>,
    /// Who may call which upstream tool; nothing unless granted.
    pub grants: grants::Grants,
}

impl Settings {
    /// Reads the variables and the config file. `install_root` is where the default
    /// `mcp.json` lives.
    pub fn from_env(install_root: &Path) -> Result<Self, String> {
        let switch = std::env::var(env::MCP).ok();
        let enabled = match switch.as_deref().map(str::trim) {
            None | Some("") | Some("true") | Some("1") => true,
            Some("false") | Some("0") => false,
            Some(other) => return Err(format!("{}={other}: expected true or false", env::MCP)),
        };
        if !enabled {
            return Ok(Self::default());
        }
        let file = FileChoice::from_env(std::env::var(env::CONFIG).ok().as_deref(), install_root);
        let servers = config::load(&file, std::env::var(env::SERVERS).ok().as_deref())?;
        let grants = grants::Grants::parse(std::env::var(env::GRANTS).ok().as_deref())?;
        Ok(Self {
            enabled,
            servers,
            grants,
        })
    }

    /// The line logged at start.
    pub fn boot_line(&self) -> Option<String> {
        if !self.enabled {
            return Some("upstream MCP client is off (COREMCP_MCP=false)".to_owned());
        }
        let active = self.servers.iter().filter(|s| s.enabled).count();
        (active > 0).then(|| {
            format!(
                "{active} upstream MCP server(s) configured; connecting to them is not in this \
                 build yet, so none of their tools is published"
            )
        })
    }

    /// Each configured server for `/api/status`.
    pub fn status(&self) -> Vec<Value> {
        self.servers
            .iter()
            .map(|s| {
                let transport = match &s.transport {
                    Transport::Stdio { .. } => "stdio",
                    Transport::Http { .. } => "http",
                    Transport::Sse { .. } => "sse",
                };
                let (state, reason) = if s.enabled {
                    (
                        "not_connected",
                        "the upstream MCP client is not in this build yet",
                    )
                } else {
                    ("disabled", "enabled: false in its configuration")
                };
                json!({"id": s.id, "transport": transport, "state": state, "reason": reason})
            })
            .collect()
    }
}
