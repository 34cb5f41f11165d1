//! Upstream MCP servers: the servers a user configures in `mcp.json` or `COREMCP_MCP_SERVERS`,
//! whose tools the host publishes as `mcp__<id>__<tool>`.
//!
//! At run time the [`hub`] holds every server, each kept alive by its [`supervisor`]; a call
//! goes grant ([`coremcp_wire::policy`]) → approval ([`approval`]) → the server. `coremcp upstream`
//! connects to each server once ([`probe`]) to show what would be published.
//!
//! Modules: [`client`] (one server as a blocking MCP client) over [`stdio`], [`http`] or
//! legacy [`sse`] transports, sharing [`rpc`] and the wait for an answer ([`wait`]); [`lines`]
//! and [`ring`] bound what a child's pipes can cost; [`publish`] holds the pure publishing rules
//! and the result cap.
//!
//! Invariants: a bad configuration stops the host at start with a message naming the entry;
//! `COREMCP_MCP=false` turns the client off without reading anything; upstream tools are not
//! confined (their arguments go to the server verbatim), and nobody may call one unless a grant
//! names it.
//!
//! This crate never reads a variable of its own (the binary reads `COREMCP_MCP*` and hands it
//! [`Settings`], and a refresh reads again through the reader it is handed; only the variables
//! an entry names in `${VAR}` are read here), never serves a
//! client, and never imports the relay or the plugin engine: it builds on `coremcp-wire` and
//! `coremcp-net`.

pub mod approval;
pub mod client;
pub mod config;
pub(crate) mod expand;
#[cfg(test)]
mod fuzz;
pub mod http;
pub mod hub;
pub mod lines;
pub mod pipe;
pub mod probe;
pub mod publish;
pub mod ring;
pub mod rpc;
pub(crate) mod shape;
pub mod sse;
pub mod stdio;
pub mod supervisor;
pub mod surface;
#[cfg(test)]
mod testing;
pub mod wait;

use std::path::PathBuf;

use config::ServerConfig;

/// The upstream client's settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settings {
    /// False with `COREMCP_MCP=false`.
    pub enabled: bool,
    pub servers: Vec<ServerConfig>,
    /// Who may call which upstream tool; nothing unless granted.
    pub grants: std::sync::Arc<coremcp_wire::policy::Grants>,
    /// Who needs a human's approval first.
    pub approval: approval::Policy,
    /// Where the default `mcp.json` is (read again on refresh).
    pub install_root: PathBuf,
}

impl Settings {
    /// The line logged at start.
    pub(crate) fn boot_line(&self) -> Option<String> {
        if !self.enabled {
            return Some("upstream MCP client is off (COREMCP_MCP=false)".to_owned());
        }
        let active = self.servers.iter().filter(|s| s.enabled).count();
        (active > 0).then(|| {
            format!(
                "{active} upstream MCP server(s) configured; connecting in the background \
                 (their tools are not confined: arguments go to the server verbatim)"
            )
        })
    }
}
