//! Connecting to every configured server once and reporting what would be published: the
//! engine of `coremcp upstream`. Each server is probed on its own thread, bounded by its
//! handshake and `tools/list` timeouts; a failed server is reported and the rest carry on.
//!
//! Invariant: a report never hides a failure: the state is `failed` with the reason (and a
//! stdio server's recent stderr) whenever the handshake or the listing did not succeed.

use std::thread;
use std::time::Instant;

use serde_json::{json, Value};

use super::client::Client;
use super::config::ServerConfig;
use super::publish::{publish, Withheld};

/// A server's state after a probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Connected,
    Failed,
    Disabled,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Connected => "connected",
            Self::Failed => "failed",
            Self::Disabled => "disabled",
        }
    }
}

/// What a probe found out about one server.
#[derive(Debug, Clone)]
pub struct ServerReport {
    pub id: String,
    pub transport: &'static str,
    pub state: State,
    pub reason: Option<String>,
    /// `serverInfo` name and version.
    pub server: Option<String>,
    pub protocol_version: Option<String>,
    /// How many tools the server listed.
    pub tools: usize,
    pub published: Vec<String>,
    /// Published names that are not the server's own: (published, the server's).
    pub renamed: Vec<(String, String)>,
    /// The published tools as agents would see them (only in `--json`).
    pub definitions: Vec<Value>,
    pub withheld: Vec<Withheld>,
    /// Tools withheld past those kept, and tools past `maxTools`: counted only.
    pub more_withheld: usize,
    pub over_limit: usize,
    pub warnings: Vec<String>,
    /// Whether the server sent `notifications/tools/list_changed` during the probe.
    pub list_changed: bool,
    pub elapsed_ms: u128,
}

impl ServerReport {
    pub fn to_json(&self) -> Value {
        let mut value = json!({
            "id": self.id,
            "transport": self.transport,
            "state": self.state.as_str(),
            "tools": self.tools,
            "published": self.published,
            "renamed": self.renamed.iter()
                .map(|(published, original)| json!({"published": published, "tool": original}))
                .collect::<Vec<_>>(),
            "definitions": self.definitions,
            "withheld": self.withheld.iter()
                .map(|w| json!({"tool": w.tool, "reason": w.reason}))
                .collect::<Vec<_>>(),
            "warnings": self.warnings,
            "listChanged": self.list_changed,
            "elapsed_ms": self.elapsed_ms as u64,
        });
        if self.more_withheld > 0 {
            value["withheld_more"] = json!(self.more_withheld);
        }
        if self.over_limit > 0 {
            value["over_limit"] = json!(self.over_limit);
        }
        for (key, field) in [
            ("reason", &self.reason),
            ("server", &self.server),
            ("protocolVersion", &self.protocol_version),
        ] {
            if let Some(text) = field {
                value[key] = Value::String(text.clone());
            }
        }
        value
    }
}

/// Probes every server in parallel; reports come back in configuration order.
pub fn probe_all(servers: &[ServerConfig]) -> Vec<ServerReport> {
    thread::scope(|scope| {
        let handles: Vec<_> = servers
            .iter()
            .map(|server| scope.spawn(move || probe(server)))
            .collect();
        handles
            .into_iter()
            .zip(servers)
            .map(|(handle, server)| {
                handle.join().unwrap_or_else(|_| ServerReport {
                    reason: Some("the probe failed unexpectedly".into()),
                    ..empty(server, State::Failed)
                })
            })
            .collect()
    })
}

fn empty(server: &ServerConfig, state: State) -> ServerReport {
    ServerReport {
        id: server.id.clone(),
        transport: server.transport.name(),
        state,
        reason: None,
        server: None,
        protocol_version: None,
        tools: 0,
        published: Vec::new(),
        renamed: Vec::new(),
        definitions: Vec::new(),
        withheld: Vec::new(),
        more_withheld: 0,
        over_limit: 0,
        warnings: Vec::new(),
        list_changed: false,
        elapsed_ms: 0,
    }
}

/// Connects to one server, lists its tools and works out what would be published.
pub fn probe(server: &ServerConfig) -> ServerReport {
    if !server.enabled {
        return ServerReport {
            reason: Some("enabled: false in its configuration".into()),
            ..empty(server, State::Disabled)
        };
    }
    let started = Instant::now();
    let mut report = empty(server, State::Failed);
    match Client::connect(server) {
        Err(failure) => {
            report.reason = Some(failure.reason());
            report.warnings = failure.warnings;
        }
        Ok(client) => {
            report.server = client.server_info.clone();
            report.protocol_version = Some(client.version.clone());
            match client.list_tools(super::supervisor::keep(server.max_tools)) {
                Err(e) => report.reason = Some(format!("tools/list failed: {e}")),
                Ok(list) => {
                    report.state = State::Connected;
                    report.tools = list.listed();
                    let publication =
                        publish(&server.id, &list.tools, server.max_tools, list.unread);
                    report.published = publication.names();
                    report.renamed = publication.renamed.clone();
                    report.definitions = publication.published;
                    report.withheld = publication.withheld;
                    report.more_withheld = publication.more_withheld;
                    report.over_limit = publication.over_limit;
                    report.warnings.extend(list.paging_warning());
                }
            }
            report.warnings.extend(client.warnings());
            report.list_changed = client.take_list_changed();
        }
    }
    report.elapsed_ms = started.elapsed().as_millis();
    report
}
