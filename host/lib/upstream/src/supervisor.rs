//! One configured upstream server kept alive: a supervising thread connects it, publishes its
//! tools, watches the connection, re-lists the tools when the server says they changed, and
//! starts it again when it goes away.
//!
//! Invariants:
//! - The published tools are those of the live connection: empty whenever the server is not
//!   connected, so a tool is never listed that cannot be called.
//! - Restarts back off exponentially from [`BACKOFF_START`] to [`BACKOFF_MAX`]; after
//!   [`CRASH_LOOP_FAILURES`] failures within [`CRASH_LOOP_WINDOW`] a stdio server is stopped
//!   with the reason (crash-loop guard) until a refresh starts it again. An HTTP server keeps
//!   being retried at the capped backoff (a retry is one connect, not a process).
//! - An HTTP server has no process to watch: it is pinged every [`PING_EVERY`], and a call
//!   that cannot reach it reports it lost ([`Server::report_lost`]); either way the supervisor
//!   withdraws its tools and reconnects.
//! - Every connection gets a new generation number: approval is per generation, so a server
//!   that reconnects is asked for again.
//! - Stopping (refresh removed or changed the server) ends the thread and drops the
//!   connection, which kills a stdio server's process group once no call holds it.
//! - Every state change, and every change to the published tools, is reported through
//!   [`OnChange`], outside the server's locks.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::client::Client;
use super::config::{ServerConfig, Transport};
use super::publish::{publish, Withheld};
use super::rpc::UpstreamError;
use coremcp_wire::policy::Caller;

/// The first wait before a restart.
pub(crate) const BACKOFF_START: Duration = Duration::from_millis(250);
/// The longest wait before a restart.
pub(crate) const BACKOFF_MAX: Duration = Duration::from_secs(30);
/// This many failures within [`CRASH_LOOP_WINDOW`] stop the server until a refresh.
pub(crate) const CRASH_LOOP_FAILURES: usize = 5;
pub(crate) const CRASH_LOOP_WINDOW: Duration = Duration::from_secs(60);
/// How often a live connection is looked at (exit, `list_changed`, stop).
const WATCH: Duration = Duration::from_millis(50);
/// A connection that lived this long resets the backoff.
const STABLE: Duration = Duration::from_secs(60);
/// How often a Streamable HTTP server is pinged, and how long it has to answer.
pub(crate) const PING_EVERY: Duration = Duration::from_secs(10);
const PING_TIMEOUT: Duration = Duration::from_secs(5);
/// Prompts, resources or templates kept of one server's list; the rest are counted.
const MAX_SURFACE_ITEMS: usize = 1000;

/// How many listed tools to keep for a limit of `max_tools`: room for the published ones
/// and for the withheld ones kept with their reasons; the rest are only counted.
pub fn keep(max_tools: usize) -> usize {
    max_tools + super::publish::WITHHELD_KEPT
}

/// Called with the server's id whenever its state or tools changed.
pub(crate) type OnChange = Arc<dyn Fn(&str) + Send + Sync>;

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// A live connection to the server.
pub struct Connection {
    pub client: Client,
    pub generation: u64,
    /// The principals a human approved this connection for.
    approved: Mutex<Vec<Caller>>,
    asking: Mutex<()>,
}

impl Connection {
    /// Whether a human approved this connection for `caller`.
    pub fn approved_for(&self, caller: &Caller) -> bool {
        lock(&self.approved).contains(caller)
    }

    /// Records a human's approval for `caller`.
    pub fn approve(&self, caller: &Caller) {
        let mut approved = lock(&self.approved);
        if !approved.contains(caller) {
            approved.push(caller.clone());
        }
    }

    /// Who it was approved for, as principals are named in grants.
    pub(crate) fn approvers(&self) -> Vec<String> {
        lock(&self.approved).iter().map(Caller::principal).collect()
    }

    /// Held while a human is asked, so concurrent first calls ask once.
    pub fn asking(&self) -> MutexGuard<'_, ()> {
        lock(&self.asking)
    }
}

/// Where the server is.
#[derive(Clone)]
pub enum State {
    /// Connecting; `first` for the attempt made at start or refresh.
    Connecting {
        first: bool,
    },
    Connected(Arc<Connection>),
    /// Waiting to start again after a failure.
    Restarting {
        reason: String,
        retry_at: Instant,
    },
    /// Not restarted until a refresh: the crash-loop guard stopped it, or it was removed.
    Stopped {
        reason: String,
    },
    /// `enabled: false` in its configuration.
    Disabled,
}

impl State {
    pub fn name(&self) -> &'static str {
        match self {
            Self::Connecting { .. } => "connecting",
            Self::Connected(_) => "connected",
            Self::Restarting { .. } => "restarting",
            Self::Stopped { .. } => "failed",
            Self::Disabled => "disabled",
        }
    }
}

/// The tools the live connection publishes.
#[derive(Debug, Default)]
pub struct Tools {
    /// The definitions as agents see them (`name` is `mcp__<id>__<tool>`).
    pub published: Vec<Value>,
    /// Full name → the server's own tool name.
    pub names: HashMap<String, String>,
    /// The first tools withheld for a reason, with it.
    pub withheld: Vec<Withheld>,
    /// Tools withheld past those, and tools past `maxTools`: counted only.
    pub more_withheld: usize,
    pub over_limit: usize,
    /// All of that in one line, for the log.
    pub summary: String,
    pub warnings: Vec<String>,
    /// Its prompts, resources and resource templates, as published.
    pub surface: super::surface::Surface,
}

/// One supervised server.
pub struct Server {
    pub config: ServerConfig,
    state: Mutex<State>,
    changed: Condvar,
    tools: RwLock<Arc<Tools>>,
    stop: AtomicBool,
    /// Why a call found the server unreachable (HTTP servers, which have no process to
    /// watch); the supervisor then reconnects.
    lost: Mutex<Option<String>>,
    server_info: Mutex<Option<String>>,
    restarts: AtomicU64,
    /// The supervising thread has ended (its connection is dropped).
    done: AtomicBool,
    on_change: OnChange,
}

impl Server {
    /// Starts supervising `config` (nothing runs for a disabled server).
    pub fn start(
        config: ServerConfig,
        generations: Arc<AtomicU64>,
        on_change: OnChange,
    ) -> Arc<Self> {
        let enabled = config.enabled;
        let server = Arc::new(Self {
            config,
            state: Mutex::new(if enabled {
                State::Connecting { first: true }
            } else {
                State::Disabled
            }),
            changed: Condvar::new(),
            tools: RwLock::new(Arc::default()),
            stop: AtomicBool::new(false),
            lost: Mutex::new(None),
            server_info: Mutex::new(None),
            restarts: AtomicU64::new(0),
            done: AtomicBool::new(!enabled),
            on_change,
        });
        if enabled {
            let supervised = Arc::clone(&server);
            let name = format!("upstream-{}", server.config.id);
            let started = thread::Builder::new()
                .name(name)
                .spawn(move || supervised.supervise(&generations));
            if let Err(e) = started {
                server.set_state(State::Stopped {
                    reason: format!("could not start its supervising thread: {e}"),
                });
            }
        }
        server
    }

    pub fn id(&self) -> &str {
        &self.config.id
    }

    /// Ends supervision; the connection is dropped once no call holds it.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Release);
        let _guard = lock(&self.state);
        self.changed.notify_all();
    }

    /// A call could not reach the server at all: reconnect (with the usual backoff).
    pub fn report_lost(&self, why: String) {
        *lock(&self.lost) = Some(why);
    }

    /// Waits (until `until`) for the supervising thread to end after [`Server::stop`]; true if
    /// it did.
    pub(crate) fn wait_stopped(&self, until: Instant) -> bool {
        let mut state = lock(&self.state);
        while !self.done.load(Ordering::Acquire) {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            state = self
                .changed
                .wait_timeout(state, left.min(WATCH))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        true
    }

    pub fn state(&self) -> State {
        lock(&self.state).clone()
    }

    pub fn tools(&self) -> Arc<Tools> {
        Arc::clone(&self.tools.read().unwrap_or_else(|e| e.into_inner()))
    }

    /// Whether the server is still on the attempt made at start (or refresh).
    pub(crate) fn first_attempt(&self) -> bool {
        matches!(*lock(&self.state), State::Connecting { first: true })
    }

    /// The live connection, waiting (until `until`) while the server is connecting. Anything
    /// else fails at once with the state and its reason.
    pub fn connection(&self, until: Instant) -> Result<Arc<Connection>, String> {
        let conn = self.live(until)?;
        if conn.client.is_closed() {
            // Gone, and the supervisor has not seen it yet: it will restart it. (Outside the
            // state lock: the exit status may take a moment.)
            return Err(format!(
                "is down and restarting: {}",
                conn.client.exit_reason()
            ));
        }
        Ok(conn)
    }

    /// The connection, if the server is connected and running right now (never waits).
    pub fn connected_now(&self) -> Option<Arc<Connection>> {
        match &*lock(&self.state) {
            State::Connected(conn) if !conn.client.is_closed() => Some(Arc::clone(conn)),
            _ => None,
        }
    }

    /// The connection of the state, waiting while connecting.
    fn live(&self, until: Instant) -> Result<Arc<Connection>, String> {
        let mut state = lock(&self.state);
        loop {
            match &*state {
                State::Connected(conn) => return Ok(Arc::clone(conn)),
                State::Connecting { .. } => {
                    let left = until.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Err("is still connecting".to_owned());
                    }
                    state = self
                        .changed
                        .wait_timeout(state, left)
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                }
                State::Restarting { reason, retry_at } => {
                    let wait = retry_at.saturating_duration_since(Instant::now());
                    return Err(format!(
                        "is down and restarting (next attempt in {} ms): {reason}",
                        wait.as_millis()
                    ));
                }
                State::Stopped { reason } => return Err(format!("has failed: {reason}")),
                State::Disabled => {
                    return Err("is disabled (enabled: false in its configuration)".to_owned())
                }
            }
        }
    }

    /// Waits (until `until`) while the server is on its first attempt.
    pub fn settle(&self, until: Instant) {
        let mut state = lock(&self.state);
        while matches!(*state, State::Connecting { first: true }) {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            state = self
                .changed
                .wait_timeout(state, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// The server for `/api/status` and reports.
    pub fn status(&self) -> Value {
        let state = self.state();
        let tools = self.tools();
        let mut value = json!({
            "id": self.config.id,
            "transport": self.config.transport.name(),
            "state": state.name(),
            "tools": tools.published.len(),
            "withheld": tools.withheld.iter()
                .map(|w| json!({"tool": w.tool, "reason": w.reason}))
                .collect::<Vec<_>>(),
            "restarts": self.restarts.load(Ordering::Relaxed),
        });
        if tools.more_withheld > 0 {
            value["withheld_more"] = json!(tools.more_withheld);
        }
        if tools.over_limit > 0 {
            value["over_limit"] = json!(tools.over_limit);
            value["max_tools"] = json!(self.config.max_tools);
        }
        match &state {
            State::Restarting { reason, retry_at } => {
                value["reason"] = json!(reason);
                value["retry_in_ms"] = json!(retry_at
                    .saturating_duration_since(Instant::now())
                    .as_millis() as u64);
            }
            State::Stopped { reason } => value["reason"] = json!(reason),
            State::Disabled => value["reason"] = json!("enabled: false in its configuration"),
            State::Connected(conn) => value["approved_for"] = json!(conn.approvers()),
            State::Connecting { .. } => {}
        }
        if let Some(info) = lock(&self.server_info).as_ref() {
            value["server"] = json!(info);
        }
        if !tools.warnings.is_empty() {
            value["warnings"] = json!(tools.warnings);
        }
        value
    }

    fn set_state(&self, state: State) {
        *lock(&self.state) = state;
        self.changed.notify_all();
        (self.on_change)(&self.config.id);
    }

    fn set_tools(&self, tools: Tools) {
        *self.tools.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(tools);
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }

    /// Sleeps `wait`, or less if stopped; true if stopped.
    fn pause(&self, wait: Duration) -> bool {
        let until = Instant::now() + wait;
        let mut state = lock(&self.state);
        while !self.stopped() {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            state = self
                .changed
                .wait_timeout(state, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        true
    }

    fn supervise(self: Arc<Self>, generations: &AtomicU64) {
        self.supervise_until_stopped(generations);
        self.done.store(true, Ordering::Release);
        let _guard = lock(&self.state);
        self.changed.notify_all();
    }

    fn supervise_until_stopped(&self, generations: &AtomicU64) {
        let id = self.config.id.clone();
        let mut failures: VecDeque<Instant> = VecDeque::new();
        let mut backoff = BACKOFF_START;
        let mut first = true;
        while !self.stopped() {
            if !first {
                self.set_state(State::Connecting { first: false });
            }
            first = false;
            let reason = match self.connect(generations) {
                Err(reason) => {
                    tracing::warn!(server = %id, "upstream server failed to connect: {reason}");
                    reason
                }
                Ok(conn) => {
                    let since = Instant::now();
                    let reason = self.watch(&conn);
                    self.set_tools(Tools::default());
                    if self.stopped() {
                        break;
                    }
                    tracing::warn!(server = %id, "upstream server went away: {reason}");
                    if since.elapsed() >= STABLE {
                        backoff = BACKOFF_START;
                        failures.clear();
                    }
                    reason
                }
            };
            if self.stopped() {
                break;
            }
            let now = Instant::now();
            failures.push_back(now);
            while failures
                .front()
                .is_some_and(|t| now.duration_since(*t) > CRASH_LOOP_WINDOW)
            {
                failures.pop_front();
            }
            // Only a process is guarded: reaching an HTTP server again costs one connect.
            let spawns = matches!(self.config.transport, Transport::Stdio { .. });
            if spawns && failures.len() >= CRASH_LOOP_FAILURES {
                let reason = format!(
                    "it failed {} times within {} s, so it is not started again until a refresh \
                     (SIGHUP, or POST /api/mcp/refresh); the last failure: {reason}",
                    failures.len(),
                    CRASH_LOOP_WINDOW.as_secs()
                );
                tracing::error!(server = %id, "upstream server stopped by the crash-loop guard: {reason}");
                self.set_state(State::Stopped { reason });
                return;
            }
            self.set_state(State::Restarting {
                reason,
                retry_at: now + backoff,
            });
            if self.pause(backoff) {
                break;
            }
            backoff = (backoff * 2).min(BACKOFF_MAX);
            self.restarts.fetch_add(1, Ordering::Relaxed);
        }
        self.set_tools(Tools::default());
    }

    /// Connects, lists and publishes; the connection is then the server's state.
    fn connect(&self, generations: &AtomicU64) -> Result<Arc<Connection>, String> {
        let client = Client::connect(&self.config).map_err(|failure| failure.reason())?;
        let tools = self.list(&client)?;
        lock(&self.lost).take();
        *lock(&self.server_info) = client.server_info.clone();
        tracing::info!(
            server = %self.config.id,
            info = client.server_info.as_deref().unwrap_or("(no serverInfo)"),
            published = tools.published.len(),
            withheld = tools.withheld.len() + tools.more_withheld,
            over_limit = tools.over_limit,
            "upstream server connected"
        );
        // One line however many tools the server lists.
        if !tools.withheld.is_empty() || tools.over_limit > 0 {
            tracing::warn!(server = %self.config.id, "{}", tools.summary);
        }
        let conn = Arc::new(Connection {
            client,
            generation: generations.fetch_add(1, Ordering::Relaxed) + 1,
            approved: Mutex::new(Vec::new()),
            asking: Mutex::new(()),
        });
        self.set_tools(tools);
        self.set_state(State::Connected(Arc::clone(&conn)));
        Ok(conn)
    }

    fn list(&self, client: &Client) -> Result<Tools, String> {
        let list = client
            .list_tools(keep(self.config.max_tools))
            .map_err(|e| format!("tools/list failed: {e}"))?;
        client.note_tools(&list.tools);
        let publication = publish(
            &self.config.id,
            &list.tools,
            self.config.max_tools,
            list.unread,
        );
        let mut warnings = client.warnings();
        if let Some(text) = list.paging_warning() {
            tracing::warn!(server = %self.config.id, "{text}");
            warnings.push(text);
        }
        let names = publication.name_map();
        for (published, original) in &publication.renamed {
            tracing::info!(
                server = %self.config.id,
                "upstream tool {original:?} is published as {published} (model APIs refuse its \
                 own name)"
            );
        }
        let surface = self.list_surface(client);
        for text in &surface.warnings {
            tracing::warn!(server = %self.config.id, "{text}");
        }
        warnings.extend(surface.warnings.iter().cloned());
        Ok(Tools {
            summary: publication.summary(&self.config.id),
            published: publication.published,
            names,
            withheld: publication.withheld,
            more_withheld: publication.more_withheld,
            over_limit: publication.over_limit,
            warnings,
            surface,
        })
    }

    /// The prompts, resources and templates the server declared; a list that fails is left
    /// out with a warning (its tools still serve).
    fn list_surface(&self, client: &Client) -> super::surface::Surface {
        let mut warnings = Vec::new();
        let mut list = |declared: bool, method: &str, key: &str| -> Vec<Value> {
            if !declared {
                return Vec::new();
            }
            match client.list_paged(method, key, MAX_SURFACE_ITEMS) {
                Ok(list) => {
                    if list.unread > 0 {
                        warnings.push(format!(
                            "{method}: the server lists {} items; the first {MAX_SURFACE_ITEMS} \
                             are kept",
                            list.listed()
                        ));
                    }
                    list.tools
                }
                Err(e) => {
                    warnings.push(format!("{method} failed: {e}"));
                    Vec::new()
                }
            }
        };
        let prompts = list(client.declares("prompts"), "prompts/list", "prompts");
        let resources = list(client.declares("resources"), "resources/list", "resources");
        let templates = list(
            client.declares("resources"),
            "resources/templates/list",
            "resourceTemplates",
        );
        let mut surface =
            super::surface::publish(&self.config.id, &prompts, &resources, &templates);
        surface.warnings.extend(warnings);
        surface
    }

    /// Watches a live connection until it ends (or supervision stops); why it ended.
    fn watch(&self, conn: &Connection) -> String {
        // A Streamable HTTP server has no process or stream to watch: ask it now and then.
        let pings = matches!(self.config.transport, Transport::Http { .. });
        let mut next_ping = Instant::now() + PING_EVERY;
        let mut relist_now = false;
        loop {
            if self.pause(WATCH) {
                return "stopped".to_owned();
            }
            if pings && Instant::now() >= next_ping {
                match conn.client.ping(PING_TIMEOUT) {
                    // An error answer is an answer: the server is there.
                    Ok(_) | Err(UpstreamError::Rpc { .. }) => {}
                    Err(e) => return format!("it stopped answering ping: {e}"),
                }
                next_ping = Instant::now() + PING_EVERY;
                // A 2026 server over HTTP tells changes only on a subscription we do not hold
                // open: its tools are listed again at every ping instead (sessions hear of it
                // only if the listing changed).
                relist_now = conn.client.is_modern();
            }
            if conn.client.is_closed() {
                return conn.client.exit_reason();
            }
            if let Some(why) = lock(&self.lost).take() {
                return format!("a call could not reach it: {why}");
            }
            if conn.client.take_list_changed() || std::mem::take(&mut relist_now) {
                match self.list(&conn.client) {
                    Ok(tools)
                        if tools.published == self.tools().published
                            && tools.surface == self.tools().surface => {}
                    Ok(tools) => {
                        tracing::info!(server = %self.config.id, published = tools.published.len(), "upstream tools changed");
                        self.set_tools(tools);
                        (self.on_change)(&self.config.id);
                    }
                    Err(reason) => {
                        tracing::warn!(server = %self.config.id, "re-listing tools after list_changed failed: {reason}");
                    }
                }
            }
        }
    }
}
