//! One MCP session, independent of the transport: it takes JSON-RPC messages and sends its
//! answers and notifications to an [`Outbox`].
//!
//! Invariants: every request gets exactly one answer, except a call the client cancelled
//! (which gets none, as the spec asks); a method we do not serve is answered -32601 at once;
//! nothing but `initialize` and `ping` is served before `initialize`, and a second
//! `initialize` is refused (the 2025 lifecycle); a request whose id is already in flight is
//! refused, naming the id;
//! tool calls run on the pool, so the transport's reader never waits for a plugin or an
//! upstream server. A session lists the plugin tools and the upstream tools its caller is
//! granted, and hears of upstream changes as a [`Listener`].
//!
//! Modules: [`ask`] (requests to the client: elicitation), [`groups`] (the group switches of
//! `--groups dynamic`), [`search`] (`tools_search` and `tools_call`, of `--groups dynamic` and
//! `--groups search`), [`upstream`] (the path of a `mcp__` call).

mod ask;
mod call;
mod carry;
pub mod era;
mod groups;
mod modern_call;
mod outbox;
mod outcome;
mod search;
mod surface;
mod tasks;
#[cfg(test)]
mod tests;
mod upstream;
mod upstream_tasks;

pub use outbox::Outbox;

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock, Weak};
use std::time::Duration;

use coremcp_plugin_api::{Annotations, FeatureGate, LogLevel, Runs, ToolSpec};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::calls::{Call, Calls};
use crate::config::Config;
use crate::route;
use coremcp_engine::sidecar::Entry;
use coremcp_engine::{host_api, Listing, PluginSet, ReloadReport};
use coremcp_upstream::hub::{Listener, Upstreams};
use coremcp_wire::mcp;
use coremcp_wire::mcp::Menu;
use coremcp_wire::policy::Caller;
use coremcp_wire::render;
use coremcp_wire::rpc::{self, Incoming};

/// MCP log levels, in rising severity (`logging/setLevel`).
const LOG_LEVELS: &[&str] = &[
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

struct Inner {
    config: Config,
    plugins: Arc<PluginSet>,
    out: Arc<dyn Outbox>,
    /// The same outbox, for what depends on the era.
    era: Arc<era::EraOutbox>,
    /// Whether this session may switch its groups (`groups_enable`/`groups_disable`): not the
    /// sessionless 2026 HTTP session of a principal, whose clients share it; they reach every
    /// group through `tools_call`.
    meta_tools: bool,
    /// Which meta tools the session lists.
    menu: Menu,
    calls: Calls,
    /// The rendered `tools/list` entries, built by the first listing (and again after a reload
    /// changed a group), with the plugin set's generation they were built at.
    tools: RwLock<Option<(u64, Entries)>>,
    /// 0: the client has not asked for log messages; n: forward those of rank >= n - 1.
    client_log: AtomicU8,
    upstreams: Arc<Upstreams>,
    /// Who the client is, for the upstream grants.
    caller: Caller,
    /// The client declared the elicitation capability.
    can_elicit: AtomicBool,
    asks: ask::Asks,
    /// Upstream connections (server id, generation) whose use the human declined.
    declined: Mutex<HashSet<(String, u64)>>,
    /// The upstream entries of the client's last listing (`None` until it lists).
    upstream_listed: Mutex<Option<Vec<String>>>,
    /// The upstream prompts, resources and templates it last listed (`None` until it lists).
    surface_listed: Mutex<Option<coremcp_upstream::hub::Listing>>,
    /// Upstream calls sent without a waiting thread, by request id (JSON text).
    detached: Detachments,
    /// The protocol version `initialize` negotiated; empty until then.
    negotiated: Mutex<Option<&'static str>>,
    /// The client as it introduced itself at `initialize` ("name version"); a sessionless 2026
    /// session has none, its requests say.
    client: Mutex<Option<Arc<str>>>,
    /// With `--groups dynamic`: the groups this session has enabled.
    enabled: Option<groups::Enabled>,
}

/// Rendered `tools/list` entries, shared with the groups' listings they come from.
type Entries = Arc<Vec<Entry>>;

/// The detached upstream calls of a session, shared with its deadline watchdog.
type Detachments = Arc<Mutex<std::collections::HashMap<Arc<str>, outcome::Detached>>>;

/// An MCP session.
#[derive(Clone)]
pub struct Session {
    inner: Arc<Inner>,
}

impl Session {
    /// A session of `caller`, serving `plugins` and the `upstreams` its grants allow.
    pub fn new(
        config: Config,
        plugins: Arc<PluginSet>,
        upstreams: Arc<Upstreams>,
        caller: Caller,
        out: Arc<dyn Outbox>,
    ) -> Self {
        Self::with_era(config, plugins, upstreams, caller, out, era::Era::Undecided)
    }

    /// A session whose era is `era` from the start. A modern one is the sessionless 2026
    /// session of one HTTP principal: its groups are the configured ones (no meta tools,
    /// whatever `--groups dynamic` says), since its clients share it.
    pub fn with_era(
        config: Config,
        plugins: Arc<PluginSet>,
        upstreams: Arc<Upstreams>,
        caller: Caller,
        out: Arc<dyn Outbox>,
        era: era::Era,
    ) -> Self {
        let shared = era == era::Era::Modern;
        let era = Arc::new(era::EraOutbox::new(out, era));
        let out: Arc<dyn Outbox> = Arc::clone(&era) as Arc<dyn Outbox>;
        let timeout_out = Arc::clone(&out);
        let detached: Detachments = Arc::default();
        let timed_out = Arc::clone(&detached);
        let calls = Calls::new(
            config.call_timeout,
            Box::new(move |call: &Call| {
                let gone = timed_out
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(&*call.id);
                if let Some(gone) = gone {
                    gone.abandon("no answer within the call's deadline");
                }
                let text = format!(
                    "{} did not finish within {} s (the call's deadline) and was asked to stop; \
                     pass a larger timeout_s if the tool takes one, or narrow the request",
                    call.tool,
                    call.timeout.as_secs_f64()
                );
                timeout_out.send(if call.not_a_tool.load(Ordering::Relaxed) {
                    rpc::error(Some(&call.id), rpc::INTERNAL_ERROR, &text)
                } else {
                    rpc::response(&call.id, &render::call_error_text(&text))
                });
            }),
        );
        let (enabled, menu) = match &config.groups {
            coremcp_engine::GroupSelection::Dynamic(ids) => {
                (Some(groups::Enabled::new(ids)), Menu::Dynamic)
            }
            coremcp_engine::GroupSelection::Search(ids) => {
                (Some(groups::Enabled::new(ids)), Menu::Search)
            }
            _ => (None, Menu::Plain),
        };
        let inner = Arc::new(Inner {
            enabled,
            menu,
            config,
            plugins,
            out,
            era,
            meta_tools: !shared,
            calls,
            tools: RwLock::new(None),
            client_log: AtomicU8::new(0),
            upstreams,
            caller,
            can_elicit: AtomicBool::new(false),
            asks: ask::Asks::default(),
            declined: Mutex::new(HashSet::new()),
            upstream_listed: Mutex::new(None),
            surface_listed: Mutex::new(None),
            detached,
            negotiated: Mutex::new(None),
            client: Mutex::new(None),
        });
        let listener: Arc<dyn Listener> = Arc::clone(&inner) as Arc<dyn Listener>;
        let weak: Weak<dyn Listener> = Arc::downgrade(&listener);
        inner.upstreams.subscribe(weak);
        Self { inner }
    }

    /// Whether handling a request with `method` and `params.name` `name` cannot block: a
    /// `tools/call` of a tool whose group is loaded, of an upstream tool, or of a forwarded
    /// tool this process passes on, only registers the call and hands it to the pool. An async
    /// transport may then handle it on its own thread instead of a blocking one (one thread
    /// hand-off less per call). The transport gives what it already read of the request.
    pub fn is_quick_call(&self, method: &str, name: Option<&str>) -> bool {
        match name {
            Some(name) if method == "tools/call" => {
                self.inner.plugins.loaded_route(name).is_some()
                    || (name.starts_with("mcp__") && self.inner.plugins.route(name).is_none())
                    || self.goes_to_peers(name)
            }
            _ => false,
        }
    }

    /// Whether a call of `tool` is passed on to other Core MCPs (a forwarded catalog group
    /// with relays, or with a `--route` in service mode): its route is decided from the catalog
    /// and the configuration alone, loading nothing.
    fn goes_to_peers(&self, tool: &str) -> bool {
        let Some(group) = coremcp_catalog::group_of(tool) else {
            return false;
        };
        if group.runs != coremcp_plugin_api::Runs::Forwarded {
            return false;
        }
        let config = &self.inner.config;
        match config.service_mode {
            true => coremcp_relay::route_of(&config.relay, group.id).is_some(),
            false => coremcp_relay::relays(&config.relay).is_some(),
        }
    }

    /// Handles one incoming message.
    pub fn handle(&self, line: &[u8]) {
        self.dispatch(rpc::parse(line), line)
    }

    /// Handles `line` if the host answers it alone, in bounded time ([`answers_alone`]);
    /// `false`: it was left alone for the caller to hand to [`Session::handle`] where a call
    /// may run. The stdio transport reads a session's opening this way on the thread that
    /// serves (`stdio/readers.rs`).
    pub fn handle_if_alone(&self, line: &[u8]) -> bool {
        let incoming = rpc::parse(line);
        if !answers_alone(&incoming) {
            return false;
        }
        self.dispatch(incoming, line);
        true
    }

    fn dispatch(&self, incoming: Incoming<'_>, line: &[u8]) {
        match incoming {
            Incoming::Request { id, method, params } => self.request(id.get(), &method, params),
            Incoming::Notification { method, params } => self.notification(&method, params),
            Incoming::Response { id } => {
                if !self.inner.asks.answer(line) {
                    tracing::debug!(id = id.get(), "ignoring a response to no request of ours");
                }
            }
            Incoming::Invalid { id, code, message } => {
                tracing::warn!("invalid message: {message}");
                self.inner
                    .out
                    .send(rpc::error(id.map(RawValue::get), code, &message));
            }
        }
    }

    /// Handles one 2026 request whose envelope the transport already read and checked
    /// (sessionless HTTP); anything else is handled as [`Session::handle`] does.
    pub fn handle_checked(&self, line: &[u8], envelope: coremcp_wire::modern::Envelope) {
        match rpc::parse(line) {
            Incoming::Request { id, method, params } => {
                self.modern_request_checked(id.get(), &method, params, Some(envelope))
            }
            _ => self.handle(line),
        }
    }

    /// [`Session::handle_checked`] for a request the transport already read: answered as `id`,
    /// with `params` as it arrived. Nothing is read twice.
    pub fn handle_checked_request(
        &self,
        id: &str,
        method: &str,
        params: Option<&RawValue>,
        envelope: coremcp_wire::modern::Envelope,
    ) {
        self.modern_request_checked(id, method, params, Some(envelope))
    }

    /// Reports a line the transport discarded for being too long.
    pub fn report_oversize(&self, bytes: u64, id: Option<&str>) {
        let limit = mcp::MAX_LINE_BYTES / (1024 * 1024);
        let message = format!(
            "a message of {bytes} bytes without a newline exceeded the {limit} MB line limit and \
             was discarded; send less in one request (a long text in parts, or fewer items)"
        );
        tracing::warn!("{message}");
        // A request whose id could be read as it streamed past is answered under that id, so
        // its caller stops waiting; one without (a notification, or no JSON) is a parse error.
        let answer = match id {
            Some(id) => rpc::error(Some(id), rpc::INVALID_REQUEST, &message),
            None => rpc::error(None, rpc::PARSE_ERROR, &message),
        };
        self.inner.out.send(answer);
    }

    /// Waits (at most `limit`) for calls in flight to answer; true if none is left.
    pub fn drain(&self, limit: Duration) -> bool {
        self.inner.calls.wait_idle(limit)
    }

    fn request(&self, id: &str, method: &str, params: Option<&RawValue>) {
        let inner = &self.inner;
        let era = match inner.era.era() {
            era::Era::Undecided => inner.era.decide(
                if method != "initialize" && coremcp_wire::modern::is_tagged(params) {
                    era::Era::Modern
                } else {
                    era::Era::Legacy
                },
            ),
            era => era,
        };
        if era == era::Era::Modern {
            return self.modern_request(id, method, params);
        }
        if method != "initialize" && coremcp_wire::modern::is_tagged(params) {
            return inner.out.send(rpc::error(
                Some(id),
                rpc::INVALID_REQUEST,
                &format!(
                    "{method} carries the MCP 2026-07-28 protocol-version key, but this \
                     connection speaks the 2025 protocol (it began with initialize or an \
                     untagged request); start a new connection to speak 2026"
                ),
            ));
        }
        let served = matches!(method, "tools/list" | "tools/call" | "logging/setLevel")
            || coremcp_upstream::surface::serves(method);
        let negotiated = *inner
            .negotiated
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let answer = match (method, negotiated) {
            ("initialize", None) => Ok(self.initialize(params)),
            ("initialize", Some(version)) => Err((
                rpc::INVALID_REQUEST,
                format!(
                    "this session is already initialized (protocol {version}); a second \
                     initialize is refused: start a new session to negotiate again"
                ),
            )),
            ("ping", _) => Ok("{}".to_owned()),
            (_, None) if served => Err((
                rpc::INVALID_REQUEST,
                format!("{method} before initialize: send initialize first (MCP lifecycle)"),
            )),
            ("tools/list", Some(_)) => {
                let client = self.inner.session_client();
                self.tools_list(params, client.as_deref())
            }
            ("tools/call", Some(_)) => return self.tools_call(id, params),
            (method, Some(_))
                if coremcp_upstream::surface::serves(method) && inner.upstreams.has_servers() =>
            {
                return self.surface_request(id, method, params, None)
            }
            ("logging/setLevel", Some(_)) => self.set_level(params),
            _ => Err((rpc::METHOD_NOT_FOUND, format!("method not found: {method}"))),
        };
        inner.out.send(match answer {
            Ok(result) => rpc::response_in(id, result),
            Err((code, message)) => rpc::error(Some(id), code, &message),
        });
    }

    fn notification(&self, method: &str, params: Option<&RawValue>) {
        match method {
            "notifications/initialized" => tracing::debug!("client initialized"),
            "notifications/cancelled" => {
                #[derive(Deserialize)]
                struct Cancelled<'a> {
                    #[serde(borrow, rename = "requestId")]
                    request_id: &'a RawValue,
                }
                match params.map(|p| serde_json::from_str::<Cancelled<'_>>(p.get())) {
                    Some(Ok(c)) => self.cancel(c.request_id.get()),
                    _ => tracing::warn!("notifications/cancelled without a requestId"),
                }
            }
            other => tracing::debug!("ignoring notification {other}"),
        }
    }

    /// The client gave up request `id` (JSON text): a call stops and is never answered, a
    /// subscription ends.
    pub fn cancel(&self, id: &str) {
        let found = self.inner.calls.cancel(id) | self.inner.era.unlisten(id);
        let gone = self.inner.detached_lock().remove(id);
        if let Some(gone) = gone {
            gone.abandon("the client cancelled the call");
        }
        tracing::debug!(id, found, "request cancelled");
    }

    /// Ends this session's subscriptions with their `complete` answer (the server is stopping).
    pub fn end_subscriptions(&self) {
        self.inner.era.end_listens();
    }

    fn initialize(&self, params: Option<&RawValue>) -> String {
        #[derive(Deserialize)]
        struct Client {
            name: String,
            version: Option<String>,
        }
        #[derive(Deserialize)]
        struct Capabilities {
            elicitation: Option<serde::de::IgnoredAny>,
        }
        #[derive(Deserialize)]
        struct Params {
            #[serde(rename = "protocolVersion")]
            protocol_version: Option<String>,
            #[serde(rename = "clientInfo")]
            client_info: Option<Client>,
            capabilities: Option<Capabilities>,
        }
        let params = params.and_then(|p| serde_json::from_str::<Params>(p.get()).ok());
        let can_elicit = params
            .as_ref()
            .and_then(|p| p.capabilities.as_ref())
            .is_some_and(|c| c.elicitation.is_some());
        self.inner.can_elicit.store(can_elicit, Ordering::Relaxed);
        if let Some(client) = params.as_ref().and_then(|p| p.client_info.as_ref()) {
            if let Some(name) =
                coremcp_wire::client_name::label(&client.name, client.version.as_deref())
            {
                *self
                    .inner
                    .client
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner) = Some(Arc::from(name.as_str()));
                host_api::set_value("client", name);
            }
        }
        let offered = params.and_then(|p| p.protocol_version);
        let version = mcp::negotiate(offered.as_deref());
        *self
            .inner
            .negotiated
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(version);
        tracing::info!(
            offered = offered.as_deref().unwrap_or("none"),
            version,
            "initialize"
        );
        let client = self.inner.session_client();
        mcp::initialize_result(
            version,
            &self.inner.plugins.installed_ids(),
            self.inner.menu,
            self.inner.upstreams.has_servers(),
            self.inner.budget_of(client.as_deref(), None),
        )
    }

    fn tool_entries(&self) -> Entries {
        self.inner.tool_entries()
    }

    /// Looks at the plugin files again (SIGHUP in stdio mode): changed groups load anew, and
    /// the client hears `notifications/tools/list_changed` if the tool list it saw changed.
    /// Looks at the plugin files again (SIGHUP) and refreshes this session. Where several
    /// sessions share the plugins, reload once with [`reload_plugins`] and [`Session::refresh`]
    /// each session.
    pub fn reload(&self) {
        let report = reload_plugins(&self.inner.plugins);
        self.refresh(&report);
        refresh_upstreams(&self.inner.upstreams);
    }

    /// After a reload: rebuilds this session's tool list and sends
    /// `notifications/tools/list_changed` if it changed (and the client had listed tools).
    pub fn refresh(&self, report: &ReloadReport) {
        if !report.changed.is_empty() {
            self.inner.relist();
        }
    }

    /// `tools/list` for `client`; Claude Code is told each tool's result size.
    fn tools_list(
        &self,
        params: Option<&RawValue>,
        client: Option<&str>,
    ) -> Result<String, (i64, String)> {
        #[derive(Deserialize)]
        struct Params {
            cursor: Option<String>,
        }
        let cursor = match params.map(|p| serde_json::from_str::<Params>(p.get())) {
            None => None,
            Some(Ok(p)) => p.cursor,
            Some(Err(e)) => return Err((rpc::INVALID_PARAMS, format!("tools/list: {e}"))),
        };
        let plugin_entries = self.tool_entries();
        let upstream_entries = self.upstream_entries();
        let entries: Vec<&str> = plugin_entries
            .iter()
            .map(|entry| &**entry)
            .chain(upstream_entries.iter().map(String::as_str))
            .collect();
        let start = match cursor.as_deref() {
            None => 0,
            Some(c) => c
                .parse::<usize>()
                .ok()
                .filter(|n| *n <= entries.len())
                .ok_or_else(|| (rpc::INVALID_PARAMS, format!("invalid cursor {c:?}")))?,
        };
        let size = match self.inner.config.page_size {
            0 => entries.len(),
            n => n,
        };
        let end = (start + size).min(entries.len());
        let next = (end < entries.len()).then(|| end.to_string());
        if coremcp_wire::budget::declares_result_size(client) {
            let budget = self.inner.budget_of(client, None);
            let declared: Vec<String> = entries[start..end]
                .iter()
                .map(|e| render::declare_result_size(e, budget).unwrap_or_else(|| (*e).to_owned()))
                .collect();
            let declared: Vec<&str> = declared.iter().map(String::as_str).collect();
            return Ok(render::tools_list(&declared, next.as_deref()));
        }
        Ok(render::tools_list(&entries[start..end], next.as_deref()))
    }

    /// The upstream tools the caller may call, of the servers connected now (never waiting for
    /// one), remembered to tell later changes. A `--groups search` session lists none: its
    /// list is the two meta tools and the groups named, whenever servers connect, and
    /// `tools_search` finds the upstream tools.
    fn upstream_entries(&self) -> Vec<String> {
        let hub = &self.inner.upstreams;
        if !hub.enabled() || self.inner.menu == Menu::Search {
            return Vec::new();
        }
        let entries = hub.entries_for(&self.inner.caller);
        *self.inner.upstream_listed_lock() = Some(entries.clone());
        entries
    }

    fn set_level(&self, params: Option<&RawValue>) -> Result<String, (i64, String)> {
        #[derive(Deserialize)]
        struct Params {
            level: String,
        }
        let level = params
            .and_then(|p| serde_json::from_str::<Params>(p.get()).ok())
            .map(|p| p.level)
            .ok_or((
                rpc::INVALID_PARAMS,
                "logging/setLevel needs a level".to_owned(),
            ))?;
        let rank = log_rank(&level).ok_or_else(|| {
            (
                rpc::INVALID_PARAMS,
                format!(
                    "unknown log level {level:?} (expected one of: {})",
                    LOG_LEVELS.join(", ")
                ),
            )
        })?;
        self.inner.client_log.store(rank + 1, Ordering::Relaxed);
        Ok("{}".to_owned())
    }
}

impl Listener for Inner {
    /// Tells the client its tool list changed, if it listed tools and its upstream part
    /// changed.
    fn upstream_changed(&self) {
        self.surface_changed();
        let mut listed = self.upstream_listed_lock();
        let Some(before) = listed.as_ref() else {
            return;
        };
        let after = self.upstreams.entries_for(&self.caller);
        if *before != after {
            *listed = Some(after);
            drop(listed);
            self.out.send(rpc::notification_without_params(
                "notifications/tools/list_changed",
            ));
        }
    }
}

impl Inner {
    /// The client as it introduced itself at `initialize`.
    fn session_client(&self) -> Option<Arc<str>> {
        self.client
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The agent's client a call is made from: the one a configured peer passed it on for
    /// (`hop`, already judged), else the one a 2026 request names, else the session's.
    fn client_of(
        &self,
        hop: &coremcp_relay::hop::Incoming,
        modern: Option<&coremcp_wire::modern::Envelope>,
    ) -> Option<Arc<str>> {
        hop.client
            .as_deref()
            .map(Arc::from)
            .or_else(|| {
                modern
                    .and_then(|m| m.client())
                    .map(|c| Arc::from(c.as_str()))
            })
            .or_else(|| self.session_client())
    }

    /// The result budget of a call from `client`: the operator's, else its client's
    /// (`coremcp_wire::budget`), lowered to the one a peer that passed it on carried.
    fn budget_of(&self, client: Option<&str>, carried: Option<usize>) -> usize {
        let own = coremcp_wire::budget::for_session(self.config.result_budget, client);
        carried.map_or(own, |c| c.min(own))
    }

    fn tool_entries(&self) -> Entries {
        let generation = self.plugins.generation();
        if let Some((built, entries)) = self
            .tools
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
        {
            if *built == generation {
                return Arc::clone(entries);
            }
        }
        let entries = Arc::new(self.render_tools());
        *self.tools.write().unwrap_or_else(PoisonError::into_inner) =
            Some((generation, Arc::clone(&entries)));
        entries
    }

    /// Every tool of the session's groups, rendered, after its meta tools. Groups are listed
    /// from their sidecar manifests where those describe their libraries, and loaded otherwise.
    fn render_tools(&self) -> Vec<Entry> {
        let mut specs = Vec::new();
        if self.menu == Menu::Dynamic {
            specs.extend(groups::specs());
        }
        if self.menu != Menu::Plain {
            specs.extend(search::specs());
        }
        let mut entries: Vec<Entry> = specs
            .iter()
            .filter_map(|spec| render::tool_entry(spec).ok().map(Entry::new))
            .collect();
        let enabled = self.enabled.as_ref();
        entries.extend(self.render_entries(
            &|id: &str| enabled.is_none_or(|e| e.contains(id)),
            &|_: &str, _: &str| true,
        ));
        entries
    }

    /// The tools of the groups `shown` keeps, rendered, as the caller is listed them, and of
    /// those only the ones `keep` (group, tool) keeps.
    fn render_entries(
        &self,
        shown: &dyn Fn(&str) -> bool,
        keep: &dyn Fn(&str, &str) -> bool,
    ) -> Vec<Entry> {
        let plugins = &self.plugins;
        let (grants, caller) = (&self.config.grants, &self.caller);
        plugins.know_where(shown);
        let mut entries = Vec::new();
        for (index, slot) in plugins.slots().iter().enumerate() {
            if !shown(&slot.id) {
                continue;
            }
            let served = |name: &str| {
                plugins.route(name) == Some(index)
                    && !grants.takes_away(caller, &slot.id, name)
                    && keep(&slot.id, name)
            };
            let render = |spec: &ToolSpec| match render::tool_entry(spec) {
                Ok(entry) => Some(Entry::new(entry)),
                Err(why) => {
                    tracing::warn!(tool = %spec.name, "not listed: {why}");
                    None
                }
            };
            match slot.listing() {
                Some(Listing::Listed(tools)) => entries.extend(
                    tools
                        .iter()
                        .filter(|tool| served(&tool.name))
                        .filter_map(|tool| tool.entry.clone()),
                ),
                Some(Listing::Loaded(loaded)) => entries.extend(
                    loaded
                        .tools()
                        .iter()
                        .filter(|spec| served(&spec.name))
                        .filter_map(render),
                ),
                // A feature-gated catalog tool stays listed where its plugin is missing.
                None if !slot.installed() => entries.extend(
                    missing_gated_tools(slot.catalog)
                        .iter()
                        .filter(|spec| served(&spec.name))
                        .filter_map(render),
                ),
                None => {}
            }
        }
        entries
    }

    /// The plugin generation of the client's last listing, if it listed.
    fn listed_generation(&self) -> Option<u64> {
        self.tools
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .map(|(generation, _)| *generation)
    }

    /// Rebuilds the tool list and sends `notifications/tools/list_changed` if it changed (and
    /// the client had listed tools).
    fn relist(&self) {
        let listed = self
            .tools
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some((_, before)) = listed {
            let after = self.tool_entries();
            if *before != *after {
                self.out.send(rpc::notification_without_params(
                    "notifications/tools/list_changed",
                ));
            }
        }
    }

    fn upstream_listed_lock(&self) -> MutexGuard<'_, Option<Vec<String>>> {
        self.upstream_listed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn detached_lock(
        &self,
    ) -> MutexGuard<'_, std::collections::HashMap<Arc<str>, outcome::Detached>> {
        self.detached.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn declined_lock(&self) -> MutexGuard<'_, HashSet<(String, u64)>> {
        self.declined.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What the route of a call made for `caller` depends on.
    fn route_cx_for<'a>(&'a self, caller: &'a Caller) -> route::Context<'a> {
        route::Context {
            config: &self.config,
            plugins: &self.plugins,
            upstreams: &self.upstreams,
            caller,
        }
    }

    fn forward_log(&self, request: &str, level: LogLevel, group: &str, message: &str, floor: u8) {
        let threshold = match (self.client_log.load(Ordering::Relaxed), floor) {
            (0, floor) => floor,
            (session, 0) => session,
            (session, floor) => session.min(floor),
        };
        if threshold == 0 {
            return;
        }
        let (name, rank) = match level {
            LogLevel::Error => ("error", 4),
            LogLevel::Warn => ("warning", 3),
            LogLevel::Info => ("info", 1),
            LogLevel::Debug | LogLevel::Trace => ("debug", 0),
        };
        if rank + 1 < threshold {
            return;
        }
        let params = serde_json::json!({"level": name, "logger": group, "data": message});
        self.out.send_for(
            request,
            rpc::notification("notifications/message", &params.to_string()),
        );
    }
}

/// Reloads the plugins whose files changed, and logs what happened.
pub fn reload_plugins(plugins: &PluginSet) -> ReloadReport {
    let report = plugins.reload();
    for (group, error) in &report.refused {
        tracing::error!(group = %group, "reload refused the new plugin file, the previous copy keeps serving: {error}");
    }
    if report.changed.is_empty() {
        tracing::info!("reload: no plugin changed");
    } else {
        tracing::info!(groups = %report.changed.join(","), "reload: plugins changed");
    }
    report
}

/// Re-reads the upstream configuration (SIGHUP) and logs a refusal; sessions hear of the
/// change through the hub.
pub fn refresh_upstreams(upstreams: &Upstreams) {
    if !upstreams.enabled() {
        return;
    }
    if let Err(e) = upstreams.refresh(crate::config::upstream_settings) {
        tracing::error!("{e}; the upstream servers are unchanged");
    }
}

/// Listing entries for the feature-gated tools of a catalog group whose plugin is missing:
/// marked unavailable, with the feature named.
fn missing_gated_tools(catalog: Option<&coremcp_catalog::Group>) -> Vec<ToolSpec> {
    catalog
        .map_or(&[][..], |g| g.tools)
        .iter()
        .filter_map(|tool| {
            tool.feature
                .map(|(feature, description)| (tool.name, feature, description))
        })
        .map(|(name, feature, description)| ToolSpec {
            name: name.to_owned(),
            description: description.to_owned(),
            input_schema: serde_json::json!({"type": "object"}),
            annotations: Annotations::default(),
            runs: Runs::Local,
            remote_host: false,
            feature: Some(FeatureGate {
                name: feature.to_owned(),
                enabled: false,
            }),
            guard: None,
            escalation: None,
            task: None,
        })
        .collect()
}

/// The rank of an MCP log level (0: debug), if it is one.
fn log_rank(level: &str) -> Option<u8> {
    LOG_LEVELS
        .iter()
        .position(|l| *l == level)
        .map(|rank| rank as u8)
}

/// Whether the host answers `incoming` alone, in bounded time: a request that runs no tool and
/// waits on no upstream server, relay or client (`initialize`, `ping`, `tools/list`,
/// `logging/setLevel`, `server/discover`: a listing that must load a group waits at most
/// [`coremcp_engine::LOAD_WAIT`] for it), a notification, a response, or a message that is not
/// valid. A call, an upstream surface request, a subscription or any other method is not.
fn answers_alone(incoming: &Incoming<'_>) -> bool {
    match incoming {
        Incoming::Request { method, .. } => matches!(
            &**method,
            "initialize" | "ping" | "tools/list" | "logging/setLevel" | "server/discover"
        ),
        Incoming::Notification { .. } | Incoming::Response { .. } | Incoming::Invalid { .. } => {
            true
        }
    }
}

/// The refusal of a request whose id is already in flight.
fn duplicate(id: &str) -> String {
    format!(
        "request id {id} is already in flight in this session; a second request with it is \
         refused (ids must be unique among the requests in flight)"
    )
}
