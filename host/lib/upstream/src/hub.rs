//! Every configured upstream server at run time, shared by all sessions of the process: which
//! tools each principal sees, which server a `mcp__<id>__<tool>` call goes to, refresh, and the
//! status.
//!
//! Invariants:
//! - A listing never waits for a server: it shows the servers connected at that moment, and a
//!   server that connects later arrives as a change (a slow server must not hide the built-in
//!   tools from a client whose first listing has a short timeout).
//! - Sessions hear of every change to the published tools through [`Listener`] (they send
//!   `notifications/tools/list_changed`); listeners are held weakly, so an ended session is
//!   simply skipped.
//! - A principal sees only the upstream tools the grants allow it (default: none).
//! - A refresh keeps a connected server whose configuration did not change (and its approval),
//!   starts again every other server, stops removed ones and withdraws their tools. A refresh
//!   whose configuration does not parse changes nothing and says why.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock, Weak};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::approval::{self, Policy};
use super::supervisor::{OnChange, Server, State};
use super::Settings;
use coremcp_wire::policy::{Caller, Grants};

/// A session that wants to hear when the upstream tools change.
pub trait Listener: Send + Sync {
    fn upstream_changed(&self);
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

#[derive(Default)]
struct Listeners {
    sessions: Mutex<Vec<Weak<dyn Listener>>>,
}

impl Listeners {
    fn notify(&self) {
        let live: Vec<Arc<dyn Listener>> = {
            let mut sessions = lock(&self.sessions);
            sessions.retain(|s| s.strong_count() > 0);
            sessions.iter().filter_map(Weak::upgrade).collect()
        };
        for session in live {
            session.upstream_changed();
        }
    }
}

/// What no tool can be named: a grant covers it only when it covers the whole server.
const WHOLE_SERVER: &str = "#whole-server";

/// A caller's prompts, resources and resource templates (list entries, JSON text).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Listing {
    pub prompts: Vec<String>,
    pub resources: Vec<String>,
    pub templates: Vec<String>,
}

/// A tool call's target.
pub struct Target {
    pub server: Arc<Server>,
    /// The server's own name for the tool.
    pub tool: String,
}

/// What a refresh did.
#[derive(Debug, Default)]
pub struct RefreshReport {
    pub kept: Vec<String>,
    pub started: Vec<String>,
    pub removed: Vec<String>,
}

impl RefreshReport {
    pub fn to_json(&self) -> Value {
        serde_json::json!({"kept": self.kept, "started": self.started, "removed": self.removed})
    }
}

/// The upstream servers of this process.
pub struct Upstreams {
    enabled: bool,
    grants: Arc<Grants>,
    policy: Policy,
    install_root: PathBuf,
    servers: RwLock<Vec<Arc<Server>>>,
    listeners: Arc<Listeners>,
    generations: Arc<AtomicU64>,
    /// Serialises refreshes.
    refreshing: Mutex<()>,
    summary_logged: Arc<AtomicBool>,
}

impl Upstreams {
    /// Starts connecting every enabled server in the background and logs the boot lines.
    pub fn start(settings: &Settings) -> Arc<Self> {
        let hub = Self::build(settings);
        if let Some(line) = settings.boot_line() {
            tracing::info!("{line}");
        }
        if settings.enabled && !settings.approval.required {
            tracing::warn!("{}", approval::OFF_LINE);
        }
        let servers = settings
            .servers
            .iter()
            .map(|config| {
                Server::start(
                    config.clone(),
                    Arc::clone(&hub.generations),
                    hub.on_change(),
                )
            })
            .collect();
        *hub.servers.write().unwrap_or_else(|e| e.into_inner()) = servers;
        hub.log_summary_once();
        hub
    }

    /// A hub with no servers (the upstream client is off, or a command needs none).
    pub fn none() -> Arc<Self> {
        Self::build(&Settings::default())
    }

    fn build(settings: &Settings) -> Arc<Self> {
        Arc::new(Self {
            enabled: settings.enabled,
            grants: Arc::clone(&settings.grants),
            policy: settings.approval.clone(),
            install_root: settings.install_root.clone(),
            servers: RwLock::new(Vec::new()),
            listeners: Arc::default(),
            generations: Arc::default(),
            refreshing: Mutex::new(()),
            summary_logged: Arc::new(AtomicBool::new(false)),
        })
    }

    /// The change hook handed to each server: tell the sessions, and log the boot summary
    /// once every server has had its first attempt.
    fn on_change(self: &Arc<Self>) -> OnChange {
        let listeners = Arc::clone(&self.listeners);
        let weak = Arc::downgrade(self);
        Arc::new(move |_id: &str| {
            listeners.notify();
            if let Some(hub) = weak.upgrade() {
                hub.log_summary_once();
            }
        })
    }

    /// The boot line that counts the tools nobody may call yet, once every server settled.
    fn log_summary_once(&self) {
        let servers = self.servers();
        if self.summary_logged.load(Ordering::Relaxed)
            || servers.iter().any(|s| s.first_attempt())
            || servers.iter().all(|s| matches!(s.state(), State::Disabled))
        {
            return;
        }
        if self.summary_logged.swap(true, Ordering::Relaxed) {
            return;
        }
        let mut published = 0;
        let mut ungranted = 0;
        let mut connected = 0;
        for server in &servers {
            if matches!(server.state(), State::Connected(_)) {
                connected += 1;
            }
            let tools = server.tools();
            for tool in tools.names.values() {
                published += 1;
                if self.grants.granted_to(server.id(), tool).is_empty() {
                    ungranted += 1;
                }
            }
        }
        let enabled = servers.iter().filter(|s| s.config.enabled).count();
        tracing::info!(
            "upstream: {connected} of {enabled} server(s) connected, {published} tool(s) \
             published; {ungranted} of them nobody may call yet (default deny: grant them with \
             COREMCP_MCP_GRANTS)"
        );
    }

    #[inline]
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    pub fn grants(&self) -> &Grants {
        &self.grants
    }

    /// Adds a session to tell about changes.
    pub fn subscribe(&self, listener: Weak<dyn Listener>) {
        let mut sessions = lock(&self.listeners.sessions);
        // Ended sessions leave here too, not only when something is announced: a dead weak
        // reference still holds its session's allocation, and sessions come and go all day.
        sessions.retain(|s| s.strong_count() > 0);
        sessions.push(listener);
    }

    pub fn servers(&self) -> Vec<Arc<Server>> {
        self.servers
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Waits up to `limit` for every server to finish its first attempt.
    pub fn settle(&self, limit: Duration) {
        let until = Instant::now() + limit;
        for server in self.servers() {
            server.settle(until);
        }
    }

    /// The published tools `caller` may call, as `tools/list` entries, in configuration order.
    pub fn entries_for(&self, caller: &Caller) -> Vec<String> {
        let mut entries = Vec::new();
        for server in self.servers() {
            let tools = server.tools();
            for definition in &tools.published {
                let allowed = definition["name"]
                    .as_str()
                    .and_then(|full| tools.names.get(full))
                    .is_some_and(|tool| self.grants.allows(caller, server.id(), tool));
                if allowed {
                    entries.push(definition.to_string());
                }
            }
        }
        entries
    }

    /// Whether any upstream server is configured (then the `resources` and `prompts`
    /// capabilities are declared, whether or not the servers have connected yet).
    #[inline]
    pub fn has_servers(&self) -> bool {
        self.enabled() && !self.servers().is_empty()
    }

    /// The prompts, resources and resource templates `caller` may use, as list entries (JSON
    /// text), in configuration order. A prompt is granted like a tool of the same name;
    /// resources and templates need a grant of the whole server.
    pub fn surface_for(&self, caller: &Caller) -> Listing {
        let mut listing = Listing::default();
        for server in self.servers() {
            let tools = server.tools();
            let surface = &tools.surface;
            for prompt in &surface.prompts {
                let allowed = prompt["name"]
                    .as_str()
                    .and_then(|full| surface.prompt_names.get(full))
                    .is_some_and(|name| self.grants.allows(caller, server.id(), name));
                if allowed {
                    listing.prompts.push(prompt.to_string());
                }
            }
            if self.grants.allows(caller, server.id(), WHOLE_SERVER) {
                listing
                    .resources
                    .extend(surface.resources.iter().map(Value::to_string));
                listing
                    .templates
                    .extend(surface.templates.iter().map(Value::to_string));
            }
        }
        listing
    }

    /// The server of a published prompt and the prompt's own name, if `caller` may use it. A
    /// bare name (not `mcp__…`) is the server's own: it goes to the one granted server that
    /// publishes it, and is refused, naming the choices, when several do.
    pub fn resolve_prompt(&self, caller: &Caller, full: &str) -> Result<(Target, String), String> {
        if !full.starts_with("mcp__") {
            let owners: Vec<String> = self
                .servers()
                .iter()
                .filter(|s| self.grants.allows(caller, s.id(), full))
                .filter(|s| s.tools().surface.prompt_names.values().any(|n| n == full))
                .map(|s| super::publish::full_name(s.id(), full))
                .collect();
            return match owners.as_slice() {
                [one] => self.resolve_prompt(caller, one),
                [] => Err(format!("unknown prompt: {full}")),
                many => Err(format!(
                    "the prompt {full} is published by several servers; name one: {}",
                    many.join(", ")
                )),
            };
        }
        let target = self.resolve_named(full, "prompt")?;
        let tools = target.server.tools();
        let name = tools
            .surface
            .prompt_names
            .get(full)
            .cloned()
            .ok_or_else(|| format!("unknown prompt: {full} (its server does not publish it)"))?;
        if !self.grants.allows(caller, target.server.id(), &name) {
            return Err(format!(
                "{full} is not granted to {}: prompts are granted like tools of the same name",
                caller.principal()
            ));
        }
        Ok((target, name))
    }

    /// The server of a published resource URI and its own URI, if `caller` may read it.
    pub fn resolve_resource<'u>(
        &self,
        caller: &Caller,
        uri: &'u str,
    ) -> Result<(Arc<Server>, &'u str), String> {
        let Some((id, original)) = super::surface::unwrap_uri(uri) else {
            return self.resolve_bare_resource(caller, uri);
        };
        let server = self
            .servers()
            .into_iter()
            .find(|s| s.id() == id)
            .ok_or_else(|| format!("unknown resource {uri:?}: no upstream MCP server \"{id}\""))?;
        if !self.grants.allows(caller, id, WHOLE_SERVER) {
            return Err(format!(
                "the resources of the MCP server \"{id}\" are not granted to {}: they need a \
                 grant of the whole server",
                caller.principal()
            ));
        }
        Ok((server, original))
    }

    /// A URI of a server's own (not `coremcp+<id>:`): the one granted server that lists it,
    /// or one of whose templates it matches — or, failing that, the only granted server that
    /// has resources at all. Several candidates are refused, naming them.
    fn resolve_bare_resource<'u>(
        &self,
        caller: &Caller,
        uri: &'u str,
    ) -> Result<(Arc<Server>, &'u str), String> {
        let granted: Vec<Arc<Server>> = self
            .servers()
            .into_iter()
            .filter(|s| self.grants.allows(caller, s.id(), WHOLE_SERVER))
            .filter(|s| {
                let surface = &s.tools().surface;
                !surface.resources.is_empty() || !surface.templates.is_empty()
            })
            .collect();
        let lists = |server: &Arc<Server>| {
            let tools = server.tools();
            let id = server.id();
            let own = |item: &Value, key: &str| {
                item[key]
                    .as_str()
                    .and_then(super::surface::unwrap_uri)
                    .filter(|(owner, _)| *owner == id)
                    .map(|(_, original)| original.to_owned())
            };
            let surface = &tools.surface;
            surface
                .resources
                .iter()
                .any(|r| own(r, "uri").as_deref() == Some(uri))
                || surface.templates.iter().any(|t| {
                    own(t, "uriTemplate")
                        .is_some_and(|template| super::surface::matches(&template, uri))
                })
        };
        let listing: Vec<&Arc<Server>> = granted.iter().filter(|s| lists(s)).collect();
        let candidates: Vec<&Arc<Server>> = match (listing.as_slice(), granted.as_slice()) {
            ([one], _) => return Ok((Arc::clone(one), uri)),
            ([], [one]) => return Ok((Arc::clone(one), uri)),
            ([], []) => {
                return Err(format!(
                    "unknown resource {uri:?}: no granted upstream server has resources"
                ))
            }
            ([], all) => all.iter().collect(),
            (some, _) => some.to_vec(),
        };
        let names: Vec<String> = candidates
            .iter()
            .map(|s| super::surface::wrap_uri(s.id(), uri))
            .collect();
        Err(format!(
            "the resource {uri:?} could be one of several servers'; name one: {}",
            names.join(", ")
        ))
    }

    /// The server and tool a `mcp__<id>__<tool>` name calls, if a server publishes it now: the
    /// server's own name of the tool, which a published name may have renamed.
    pub fn resolve(&self, full: &str) -> Result<Target, String> {
        let mut target = self.resolve_named(full, "tool")?;
        if let Some(original) = target.server.tools().names.get(full) {
            target.tool.clone_from(original);
        }
        Ok(target)
    }

    /// [`Upstreams::resolve`] for a published `what` (a tool or a prompt), named in the errors.
    fn resolve_named(&self, full: &str, what: &str) -> Result<Target, String> {
        if !full.starts_with("mcp__") {
            return Err(format!("{full} is not an upstream {what} name"));
        }
        let (id, tool) = super::publish::split_name(full).ok_or_else(|| {
            format!("{full} is not an upstream {what} name (mcp__<id>__<{what}>)")
        })?;
        let servers = self.servers.read().unwrap_or_else(|e| e.into_inner());
        let server = servers.iter().find(|s| s.id() == id).ok_or_else(|| {
            let known: Vec<&str> = servers.iter().map(|s| s.id()).collect();
            if known.is_empty() {
                format!("unknown {what}: {full} (no upstream MCP server is configured)")
            } else {
                format!(
                    "unknown {what}: {full} (no upstream MCP server \"{id}\"; configured: {})",
                    known.join(", ")
                )
            }
        })?;
        Ok(Target {
            server: Arc::clone(server),
            tool: tool.to_owned(),
        })
    }

    /// Whether a call of `full` by `caller` may have to ask a human first (its server needs
    /// approval and its current connection, if any, is not approved for `caller` yet).
    pub fn may_ask(&self, target: &Target, caller: &Caller) -> bool {
        self.policy.needs_approval(target.server.id())
            && !matches!(target.server.state(), State::Connected(conn) if conn.approved_for(caller))
    }

    /// Re-reads the configuration with `read` (given the install root, where the default
    /// `mcp.json` is) and applies it; sessions then get `list_changed`.
    pub fn refresh(
        &self,
        read: impl FnOnce(&Path) -> Result<Settings, String>,
    ) -> Result<RefreshReport, String> {
        let _one_at_a_time = lock(&self.refreshing);
        let settings = read(&self.install_root)
            .map_err(|e| format!("refresh: the upstream configuration is refused: {e}"))?;
        let mut report = RefreshReport::default();
        let old = self.servers();
        let on_change: OnChange = {
            let listeners = Arc::clone(&self.listeners);
            Arc::new(move |_id: &str| listeners.notify())
        };
        let mut next = Vec::new();
        for config in settings.servers.iter().filter(|_| settings.enabled) {
            let existing = old.iter().find(|s| s.id() == config.id);
            let keep = existing.filter(|s| {
                s.config == *config && matches!(s.state(), State::Connected(_) | State::Disabled)
            });
            match keep {
                Some(server) => {
                    report.kept.push(config.id.clone());
                    next.push(Arc::clone(server));
                }
                None => {
                    if let Some(server) = existing {
                        server.stop();
                    }
                    report.started.push(config.id.clone());
                    next.push(Server::start(
                        config.clone(),
                        Arc::clone(&self.generations),
                        Arc::clone(&on_change),
                    ));
                }
            }
        }
        for server in &old {
            if !next.iter().any(|s| s.id() == server.id()) {
                server.stop();
                report.removed.push(server.id().to_owned());
            }
        }
        *self.servers.write().unwrap_or_else(|e| e.into_inner()) = next;
        tracing::info!(
            kept = %report.kept.join(","),
            started = %report.started.join(","),
            removed = %report.removed.join(","),
            "upstream servers refreshed"
        );
        self.listeners.notify();
        Ok(report)
    }

    /// Every server for `/api/status`, with who may call its tools.
    pub fn status(&self) -> Vec<Value> {
        self.servers()
            .iter()
            .map(|server| {
                let mut value = server.status();
                let tools = server.tools();
                let ungranted = tools
                    .names
                    .values()
                    .filter(|tool| self.grants.granted_to(server.id(), tool).is_empty())
                    .count();
                value["ungranted"] = ungranted.into();
                let needs = self.policy.needs_approval(server.id());
                value["needs_approval"] = needs.into();
                let approvers: Vec<String> = value["approved_for"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(|v| v.as_str().map(str::to_owned))
                            .collect()
                    })
                    .unwrap_or_default();
                let (approved, why) = if !self.policy.required {
                    (
                        true,
                        "approval is off (COREMCP_MCP_REQUIRE_APPROVAL=false)".to_owned(),
                    )
                } else if !needs {
                    (true, "pre-approved (COREMCP_MCP_PREAPPROVED)".to_owned())
                } else if approvers.is_empty() {
                    (
                        false,
                        "not approved yet: the first call of each principal on this connection \
                         asks a human"
                            .to_owned(),
                    )
                } else {
                    (
                        true,
                        format!(
                            "approved by a human for {} on this connection",
                            approvers.join(", ")
                        ),
                    )
                };
                value["approved"] = approved.into();
                value["approval"] = why.into();
                value
            })
            .collect()
    }
}

impl Upstreams {
    /// Stops every server and waits (up to `limit`) until their connections are dropped, so
    /// no child outlives the host (a call still holding a connection may keep it a moment).
    pub fn shutdown(&self, limit: Duration) {
        let servers = self.servers();
        for server in &servers {
            server.stop();
        }
        let until = Instant::now() + limit;
        for server in &servers {
            if !server.wait_stopped(until) {
                tracing::warn!(server = %server.id(), "upstream server still stopping at exit");
            }
        }
    }
}

impl Drop for Upstreams {
    fn drop(&mut self) {
        for server in self
            .servers
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
        {
            server.stop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Quiet;

    impl Listener for Quiet {
        fn upstream_changed(&self) {}
    }

    #[test]
    fn ended_sessions_do_not_pile_up_among_the_listeners() {
        let hub = Upstreams::none();
        let live: Arc<dyn Listener> = Arc::new(Quiet);
        hub.subscribe(Arc::downgrade(&live));
        for _ in 0..1000 {
            let ended: Arc<dyn Listener> = Arc::new(Quiet);
            hub.subscribe(Arc::downgrade(&ended));
        }
        assert_eq!(
            lock(&hub.listeners.sessions).len(),
            2,
            "the live one and the last"
        );
    }
}
