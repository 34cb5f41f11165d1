//! Core MCP's own tasks (MCP's tasks extension, `coremcp_wire::tasks`): a long `tools/call`
//! answered at once with a task, run on a thread of its own, and read, cancelled and answered
//! later by the principal that started it.
//!
//! [`Tasks`] is the one table of a process: it writes each task to the store before its id is
//! handed out ([`store`]), keeps what runs here ([`Live`]: the stop flag, the output so far),
//! bounds how many run, and keeps a lease on the running ones so that a process that dies
//! leaves no task `working` forever. It knows nothing of sessions, transports or plugins: the
//! binary starts the work and tells it how the work ended.
//!
//! Invariants:
//! - A task id is drawn from the system's random source (128 bits): unguessable.
//! - Every read, cancel and answer names the principal, and finds only that principal's task;
//!   an unknown, expired, malformed or another's id gets the one same [`TaskError::NotFound`].
//! - A task ends once: the first ending written wins ([`store::TaskStore::end`]).
//! - Running tasks are at most [`Bounds::per_principal`] per principal and [`Bounds::total`] in
//!   this process; past either, a new one is refused, never queued.

pub mod output;
pub mod store;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use coremcp_plugin_sdk::time::now_ms;
use coremcp_store::StoreUrl;
use coremcp_wire::tasks::{self as wire, Payload, Status};
use serde_json::{json, Value};

pub use output::Output;
use store::{Ending, Record, TaskStore};

/// How long a running task's lease lasts: a task whose process is gone is failed at most this
/// long after it stopped renewing.
pub const LEASE: Duration = Duration::from_secs(15);
/// How often the keeper renews the leases, looks for a cancel asked elsewhere and for a task
/// past its deadline.
const KEEP_EVERY: Duration = Duration::from_secs(5);
/// How long a finished task is kept after its deadline, for its result to be read.
pub const KEPT_AFTER: Duration = Duration::from_secs(3600);
/// How long work that ignored its stop flag gets before its task is failed anyway.
const STOP_GRACE: Duration = Duration::from_secs(10);
/// What a task of a process that ended says.
pub const ORPHANED: &str = "Core MCP stopped while this task ran (its process ended, or was \
                            restarted): the work did not finish, and nothing of it runs now";

/// The owner an upstream server's task is recorded under ([`Tasks::adopt`]).
const UPSTREAM_OWNER: &str = "upstream";

/// How many tasks may run at once.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    pub per_principal: usize,
    pub total: usize,
}

impl Default for Bounds {
    fn default() -> Self {
        Bounds {
            per_principal: 8,
            total: 32,
        }
    }
}

/// What a process's task table is built from.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The store the tasks are recorded in; `None`: no store, so no tasks (calls run as
    /// before).
    pub store: Option<StoreUrl>,
    pub bounds: Bounds,
    /// The interval a client is asked to poll at.
    pub poll: Duration,
}

/// Why a task was not created.
#[derive(Debug, thiserror::Error)]
pub enum CreateError {
    /// Too many run: the refusal to answer the call with.
    #[error("{0}")]
    Bounded(String),
    /// The store cannot record it: the call runs as if tasks were not asked for.
    #[error("the task store is unavailable: {0}")]
    Unavailable(String),
}

/// Why a task request was not served.
#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    /// No task of the caller's has this id (unknown, expired, malformed or another's).
    #[error("no task {0} of yours: it is unknown, expired, or not yours")]
    NotFound(String),
    #[error("the task store is unavailable: {0}")]
    Store(String),
    /// The policy no longer lets the principal reach the task's tool: the text says why.
    #[error("{0}")]
    Refused(String),
}

/// Told a task's whole state (as `tasks/get` answers it) when it ends; false once whoever
/// listened is gone.
pub type Watcher = Box<dyn Fn(&Value) -> bool + Send + Sync>;

/// What a task waiting for input does with the answers (`tasks/update`'s `inputResponses` for
/// the keys it asked), once: start its work.
pub type OnInput = Box<dyn FnOnce(serde_json::Map<String, Value>, Arc<Live>) + Send>;

/// A task that waits for input before its work starts: the requests it shows
/// (`inputRequests`, by key), what its status message says meanwhile, and what it does with
/// the answers.
pub struct Waiting {
    pub requests: Value,
    pub message: String,
    pub on_input: OnInput,
}

/// Whether the policy lets the caller reach a task of the tool named: `Err` says why not.
pub type Allowed<'a> = &'a dyn Fn(&str) -> Result<(), String>;

/// How a task's work ended.
#[derive(Debug)]
pub enum End {
    /// Its result (for a `tools/call`, the `CallToolResult` as JSON text), errors included.
    Result(String),
    /// A JSON-RPC error.
    Error { code: i64, message: String },
    /// Stopped by a cancel.
    Cancelled,
}

/// A task that runs in this process.
pub struct Live {
    pub id: String,
    pub principal: String,
    pub tool: String,
    /// Set to stop the work (a cancel, its deadline, the process exiting); the work polls it.
    pub stop: Arc<AtomicBool>,
    /// When its work must have ended.
    pub deadline: Instant,
    /// The deadline as wall-clock milliseconds, for the plugin's `CallCtx`.
    pub deadline_unix_ms: u64,
    started: Instant,
    output: Mutex<Output>,
    /// Why it was stopped, once it was.
    stopped: Mutex<Option<Stop>>,
    ended: AtomicBool,
    /// While it waits for input: what starts its work.
    input: Mutex<Option<OnInput>>,
    /// While its work waits for answers ([`Tasks::ask`]): what is still asked, and where the
    /// answers go once all are in.
    asking: Mutex<Option<Asking>>,
}

/// The questions a task's work waits on.
struct Asking {
    /// The requests not answered yet, by key.
    remaining: serde_json::Map<String, Value>,
    /// The answers so far, by key.
    answers: serde_json::Map<String, Value>,
    done: std::sync::mpsc::Sender<serde_json::Map<String, Value>>,
}

/// Why a task's question got no answer.
#[derive(Debug, thiserror::Error)]
pub enum AskError {
    #[error("the task was stopped while it waited for an answer")]
    Stopped,
    #[error("no running task {0} here")]
    NoTask(String),
    #[error("the requests must be an object of requests by key, and not empty")]
    Malformed,
    #[error("the task store is unavailable: {0}")]
    Store(String),
}

impl std::fmt::Debug for Live {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Live")
            .field("id", &self.id)
            .field("tool", &self.tool)
            .finish_non_exhaustive()
    }
}

/// Why a task's work was stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    Cancelled,
    Deadline,
    Exiting,
}

impl Live {
    /// Appends what its work wrote.
    pub fn push_output(&self, chunk: &[u8]) {
        lock(&self.output).push(chunk);
    }

    fn stop(&self, why: Stop) {
        lock(&self.stopped).get_or_insert(why);
        self.stop.store(true, Ordering::Relaxed);
    }

    /// The status message of a running task: how long it has run, and its last lines.
    fn running_message(&self) -> String {
        let secs = self.started.elapsed().as_secs();
        let output = lock(&self.output);
        let tail = output.tail(5, 400);
        match (tail.is_empty(), *lock(&self.stopped)) {
            (_, Some(Stop::Cancelled)) => format!("stopping (cancelled) after {secs} s"),
            (true, _) => format!("running for {secs} s; no output yet"),
            (false, _) => format!(
                "running for {secs} s; {} bytes of output, the last lines:\n{tail}",
                output.total()
            ),
        }
    }
}

/// The tasks of this process, and the store that records everyone's.
pub struct Tasks {
    settings: Settings,
    /// This process among those on the store: the owner its leases name.
    instance: String,
    store: OnceLock<Result<TaskStore, String>>,
    live: Mutex<HashMap<String, Arc<Live>>>,
    /// Who listens for the end of a task of this process, by task id.
    watchers: Mutex<HashMap<String, Vec<Watcher>>>,
    keeper: std::sync::Once,
}

impl std::fmt::Debug for Tasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tasks")
            .field("instance", &self.instance)
            .finish_non_exhaustive()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn random16() -> [u8; 16] {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 16];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .expect("the system's random source");
    bytes
}

impl Tasks {
    pub fn new(settings: Settings) -> Arc<Self> {
        let instance = wire::own_id(random16());
        Arc::new(Tasks {
            settings,
            instance: format!("p{}", &instance[wire::OWN_PREFIX.len()..]),
            store: OnceLock::new(),
            live: Mutex::new(HashMap::new()),
            watchers: Mutex::new(HashMap::new()),
            keeper: std::sync::Once::new(),
        })
    }

    /// Whether tasks can be served at all (a store is configured).
    pub fn enabled(&self) -> bool {
        self.settings.store.is_some()
    }

    fn store(&self) -> Result<&TaskStore, String> {
        self.store
            .get_or_init(|| {
                let Some(url) = &self.settings.store else {
                    return Err("no store is configured".to_owned());
                };
                TaskStore::open(url).map_err(|e| {
                    tracing::error!("the task store cannot be opened: {e}; calls run as before");
                    e.to_string()
                })
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Records a new task of `principal` running `tool`, whose work must end within `run`;
    /// its answer (`CreateTaskResult`) and its live handle. Start the work only after this
    /// returns, and end it with [`Tasks::finish`].
    pub fn create(
        self: &Arc<Self>,
        principal: &str,
        tool: &str,
        run: Duration,
    ) -> Result<(Value, Arc<Live>), CreateError> {
        self.create_with(principal, tool, run, None)
    }

    /// [`Tasks::create`] for a task that first waits for input (`input_required`, its
    /// requests shown by `tasks/get`), and starts its work when `tasks/update` answers them;
    /// unanswered at its deadline, it ends with a tool error and nothing done.
    pub fn create_waiting(
        self: &Arc<Self>,
        principal: &str,
        tool: &str,
        run: Duration,
        waiting: Waiting,
    ) -> Result<(Value, Arc<Live>), CreateError> {
        self.create_with(principal, tool, run, Some(waiting))
    }

    fn create_with(
        self: &Arc<Self>,
        principal: &str,
        tool: &str,
        run: Duration,
        waiting: Option<Waiting>,
    ) -> Result<(Value, Arc<Live>), CreateError> {
        let store = self.store().map_err(CreateError::Unavailable)?;
        let bounds = self.settings.bounds;
        let id = wire::own_id(random16());
        let now = now_ms();
        let ttl = run + KEPT_AFTER;
        let live = Arc::new(Live {
            id: id.clone(),
            principal: principal.to_owned(),
            tool: tool.to_owned(),
            stop: Arc::new(AtomicBool::new(false)),
            deadline: Instant::now() + run,
            deadline_unix_ms: (now as u64).saturating_add(run.as_millis() as u64),
            started: Instant::now(),
            output: Mutex::new(Output::default()),
            stopped: Mutex::new(None),
            ended: AtomicBool::new(false),
            input: Mutex::new(None),
            asking: Mutex::new(None),
        });
        {
            // Counted and reserved under one lock, so two calls at once cannot both pass.
            let mut table = lock(&self.live);
            let mine = table.values().filter(|l| l.principal == principal).count();
            if mine >= bounds.per_principal {
                return Err(CreateError::Bounded(format!(
                    "{tool} was not started: {mine} tasks of yours already run here (at most {} \
                     at once); wait for one to finish, or cancel one with tasks/cancel",
                    bounds.per_principal
                )));
            }
            if table.len() >= bounds.total {
                return Err(CreateError::Bounded(format!(
                    "{tool} was not started: {} tasks already run here (at most {} at once, for \
                     everyone); try again when one has finished",
                    table.len(),
                    bounds.total
                )));
            }
            table.insert(id.clone(), Arc::clone(&live));
        }
        let lease = Some(now + LEASE.as_millis() as i64);
        let mut record = self.new_record(&id, principal, tool, (now, ttl), &self.instance, lease);
        if let Some(waiting) = waiting {
            record.status = Status::InputRequired;
            record.status_message = Some(waiting.message);
            record.payload = Some(waiting.requests.to_string());
            *lock(&live.input) = Some(waiting.on_input);
        }
        if let Err(e) = store.create(&record) {
            lock(&self.live).remove(&id);
            return Err(CreateError::Unavailable(e.to_string()));
        }
        self.start_keeper();
        let mut task = record.task();
        task.status_message
            .get_or_insert_with(|| format!("{tool} started"));
        Ok((task.create_result(), live))
    }

    /// A new running task's row, created at `now` and kept for `ttl`; `lease`: until when
    /// its owner vouches for it (`None`: for all its time to live).
    fn new_record(
        &self,
        id: &str,
        principal: &str,
        tool: &str,
        (now, ttl): (i64, Duration),
        owner: &str,
        lease: Option<i64>,
    ) -> Record {
        let expires = now + ttl.as_millis() as i64;
        Record {
            id: id.to_owned(),
            principal: principal.to_owned(),
            tool: tool.to_owned(),
            status: Status::Working,
            status_message: None,
            payload: None,
            created_ms: now,
            updated_ms: now,
            ttl_ms: ttl.as_millis() as i64,
            expires_ms: expires,
            poll_ms: self.settings.poll.as_millis() as i64,
            owner: owner.to_owned(),
            lease_ms: lease.unwrap_or(expires),
        }
    }

    /// Records that `principal` owns the upstream server's task the client knows as `id` (a
    /// namespaced id, `coremcp_wire::tasks::upstream_id`), a call of `tool` kept for `ttl`:
    /// its state stays the server's, asked on every request; the record is what binds it to
    /// its principal. It is never a task of this process: no lease runs out on it.
    pub fn adopt(
        &self,
        id: &str,
        principal: &str,
        tool: &str,
        ttl: Duration,
    ) -> Result<(), CreateError> {
        let store = self.store().map_err(CreateError::Unavailable)?;
        let record = self.new_record(id, principal, tool, (now_ms(), ttl), UPSTREAM_OWNER, None);
        store
            .create(&record)
            .map_err(|e| CreateError::Unavailable(e.to_string()))
    }

    /// The tool of the upstream task `id` that `principal` owns ([`Tasks::adopt`]), if the
    /// policy still lets it reach it.
    pub fn adopted(
        &self,
        id: &str,
        principal: &str,
        allowed: Allowed<'_>,
    ) -> Result<String, TaskError> {
        let record = self.find(id, principal)?;
        if record.owner != UPSTREAM_OWNER {
            return Err(TaskError::NotFound(id.to_owned()));
        }
        allowed(&record.tool).map_err(TaskError::Refused)?;
        Ok(record.tool)
    }

    /// The task `id` of `principal` as `tasks/get` answers it.
    pub fn get(&self, id: &str, principal: &str, allowed: Allowed<'_>) -> Result<Value, TaskError> {
        let record = self.own(id, principal)?;
        allowed(&record.tool).map_err(TaskError::Refused)?;
        let mut task = record.task();
        if record.status == Status::Working {
            if let Some(live) = lock(&self.live).get(id).cloned() {
                task.status_message = Some(live.running_message());
            }
        }
        task.get_result(record.payload())
            .map_err(|e| TaskError::Store(format!("task {id}: {e}")))
    }

    /// Tells `watcher` the state of `principal`'s task `id` now and, for a task of this
    /// process that still runs, again when it ends — in that order, never the other. A task
    /// that ended, or runs in another process, is told once: its state now is all there is
    /// to tell here.
    pub fn watch(
        &self,
        id: &str,
        principal: &str,
        allowed: Allowed<'_>,
        watcher: Watcher,
    ) -> Result<(), TaskError> {
        let now = self.get(id, principal, allowed)?;
        let terminal = |state: &Value| {
            state["status"]
                .as_str()
                .and_then(Status::parse)
                .is_some_and(Status::is_terminal)
        };
        if !terminal(&now) {
            // Under the table's lock: `finish` writes the ending first and takes the task out
            // of the table (under this lock) before it tells the watchers, so the state now
            // goes out before the ending does.
            let live = lock(&self.live);
            if live.contains_key(id) {
                watcher(&now);
                lock(&self.watchers)
                    .entry(id.to_owned())
                    .or_default()
                    .push(watcher);
                return Ok(());
            }
        }
        // Ended (meanwhile, its ending written), or running in another process.
        let now = match terminal(&now) {
            true => now,
            false => self.get(id, principal, allowed)?,
        };
        watcher(&now);
        Ok(())
    }

    /// `tasks/cancel`: stops the work of `principal`'s task `id` if it still runs (here at
    /// once; in another process when it next renews its lease). A finished task stays as it
    /// ended.
    pub fn cancel(&self, id: &str, principal: &str, allowed: Allowed<'_>) -> Result<(), TaskError> {
        let record = self.own(id, principal)?;
        allowed(&record.tool).map_err(TaskError::Refused)?;
        if record.status.is_terminal() {
            return Ok(());
        }
        match lock(&self.live).get(id).cloned() {
            Some(live) => live.stop(Stop::Cancelled),
            None => {
                let store = self.store().map_err(TaskError::Store)?;
                store
                    .ask_cancel(id, principal)
                    .map_err(|e| TaskError::Store(e.to_string()))?;
            }
        }
        Ok(())
    }

    /// `tasks/update`: answers to the input a task waits for. Only the keys it asked count
    /// (others are ignored, as the extension says); the first answer starts its work, here
    /// when the task waits in this process. Acknowledged either way: what follows shows in
    /// `tasks/get`.
    pub fn update(
        &self,
        id: &str,
        principal: &str,
        allowed: Allowed<'_>,
        responses: &serde_json::Map<String, Value>,
    ) -> Result<(), TaskError> {
        let record = self.own(id, principal)?;
        allowed(&record.tool).map_err(TaskError::Refused)?;
        if record.status != Status::InputRequired {
            return Ok(());
        }
        let asked: serde_json::Map<String, Value> = match record.payload() {
            Payload::InputRequests(Value::Object(requests)) => responses
                .iter()
                .filter(|(key, _)| requests.contains_key(*key))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            _ => serde_json::Map::new(),
        };
        if asked.is_empty() {
            return Ok(());
        }
        let Some(live) = self.live(id) else {
            return Ok(());
        };
        let store = self.store().map_err(TaskError::Store)?;
        if let Some(asking) = lock(&live.asking).as_mut() {
            for (key, answer) in asked {
                if asking.remaining.remove(&key).is_some() {
                    asking.answers.insert(key, answer);
                }
            }
            if asking.remaining.is_empty() {
                let answers = std::mem::take(&mut asking.answers);
                let message = format!("{} answered; running", record.tool);
                store
                    .set_running(id, Status::Working, Some(&message), None, now_ms())
                    .map_err(|e| TaskError::Store(e.to_string()))?;
                let _ = asking.done.send(answers);
            } else {
                // Some answered: the rest is still asked, under the keys it had.
                let remaining = Value::Object(asking.remaining.clone()).to_string();
                store
                    .set_running(
                        id,
                        Status::InputRequired,
                        record.status_message.as_deref(),
                        Some(&remaining),
                        now_ms(),
                    )
                    .map_err(|e| TaskError::Store(e.to_string()))?;
            }
            return Ok(());
        }
        let Some(on_input) = lock(&live.input).take() else {
            return Ok(());
        };
        let message = format!("{} answered; running", record.tool);
        store
            .set_running(id, Status::Working, Some(&message), None, now_ms())
            .map_err(|e| TaskError::Store(e.to_string()))?;
        on_input(asked, live);
        Ok(())
    }

    /// The work of running task `id` asks `requests` (server-to-client requests by key, as
    /// `inputRequests` carries them) and waits for every answer, given with `tasks/update`,
    /// in one or several: the answers by key. Meanwhile the task is `input_required` and shows
    /// what is still asked. A stop (a cancel, the deadline, the process exiting) ends the wait.
    pub fn ask(
        &self,
        id: &str,
        requests: Value,
        message: &str,
    ) -> Result<serde_json::Map<String, Value>, AskError> {
        let Value::Object(remaining) = requests else {
            return Err(AskError::Malformed);
        };
        if remaining.is_empty() {
            return Err(AskError::Malformed);
        }
        let live = self
            .live(id)
            .ok_or_else(|| AskError::NoTask(id.to_owned()))?;
        let store = self.store().map_err(AskError::Store)?;
        let (done, answered) = std::sync::mpsc::channel();
        let payload = Value::Object(remaining.clone()).to_string();
        *lock(&live.asking) = Some(Asking {
            remaining,
            answers: serde_json::Map::new(),
            done,
        });
        let asked = store.set_running(
            id,
            Status::InputRequired,
            Some(message),
            Some(&payload),
            now_ms(),
        );
        if let Err(e) = asked {
            lock(&live.asking).take();
            return Err(AskError::Store(e.to_string()));
        }
        let outcome = loop {
            match answered.recv_timeout(Duration::from_millis(50)) {
                Ok(answers) => break Ok(answers),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    if live.stop.load(Ordering::Relaxed) {
                        break Err(AskError::Stopped);
                    }
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    break Err(AskError::Stopped)
                }
            }
        };
        lock(&live.asking).take();
        outcome
    }

    /// At most `max` bytes of the output of `principal`'s running (or finished here) task
    /// `id`, from `offset`.
    pub fn output(
        &self,
        id: &str,
        principal: &str,
        offset: u64,
        max: usize,
    ) -> Result<Value, TaskError> {
        let live = lock(&self.live).get(id).cloned();
        let Some(live) = live.filter(|l| l.principal == principal) else {
            // Known, but not running here: say so rather than pretend it has no output.
            let record = self.own(id, principal)?;
            return Ok(json!({
                "task": id,
                "status": record.status.as_str(),
                "running_here": false,
                "note": "its output is kept only by the Core MCP process that runs it, while it \
                         runs; read its result with tasks/get",
            }));
        };
        let read = lock(&live.output).read(offset, max);
        let mut out = json!({
            "task": id,
            "status": "working",
            "running_here": true,
            "output": read.text,
            "offset": read.offset,
            "next_offset": read.next_offset,
            "total_bytes": read.total,
        });
        if read.skipped > 0 {
            out["skipped_bytes"] = read.skipped.into();
        }
        Ok(out)
    }

    /// The running task `id` of this process, to append its output to.
    pub fn live(&self, id: &str) -> Option<Arc<Live>> {
        lock(&self.live).get(id).cloned()
    }

    /// Records how the work of `live` ended; the first ending wins (a cancel or the deadline
    /// that stopped it names why).
    pub fn finish(&self, live: &Live, end: End) {
        if live.ended.swap(true, Ordering::AcqRel) {
            return;
        }
        let stopped = *lock(&live.stopped);
        let ending = match (end, stopped) {
            (_, Some(Stop::Exiting)) => Ending {
                status: Status::Failed,
                message: Some(ORPHANED.to_owned()),
                payload: Some(json!({"code": -32603, "message": ORPHANED}).to_string()),
            },
            (_, Some(Stop::Cancelled)) | (End::Cancelled, _) => Ending {
                status: Status::Cancelled,
                message: Some(format!(
                    "{} was cancelled; its processes were stopped",
                    live.tool
                )),
                payload: None,
            },
            (End::Result(result), _) => Ending {
                status: Status::Completed,
                message: None,
                payload: Some(result),
            },
            (End::Error { code, message }, _) => Ending {
                status: Status::Failed,
                message: Some(message.clone()),
                payload: Some(json!({"code": code, "message": message}).to_string()),
            },
        };
        let written = self.store().map_err(|e| e.to_string()).and_then(|store| {
            store
                .end(&live.id, &ending, now_ms())
                .map_err(|e| e.to_string())
        });
        match written {
            Ok(_) => {
                tracing::debug!(task = %live.id, status = ending.status.as_str(), "task ended")
            }
            // Its lease runs out, and a reader then fails it: never `working` forever.
            Err(e) => tracing::error!(task = %live.id, "the end of a task was not recorded: {e}"),
        }
        // Out of the table only once its ending is written (see `watch`).
        lock(&self.live).remove(&live.id);
        let watchers = lock(&self.watchers).remove(&live.id).unwrap_or_default();
        if !watchers.is_empty() {
            match self.get(&live.id, &live.principal, &|_| Ok(())) {
                Ok(state) => {
                    for watcher in watchers {
                        watcher(&state);
                    }
                }
                Err(e) => tracing::warn!(task = %live.id, "listeners were not told its end: {e}"),
            }
        }
    }

    /// Stops every task of this process (it is exiting) and waits at most `wait` for their
    /// work to end; those still running are failed in the store, as the process's end
    /// would leave them.
    pub fn stop_all(&self, wait: Duration) {
        let running: Vec<Arc<Live>> = lock(&self.live).values().cloned().collect();
        if running.is_empty() {
            return;
        }
        for live in &running {
            live.stop(Stop::Exiting);
        }
        let until = Instant::now() + wait;
        while Instant::now() < until && !lock(&self.live).is_empty() {
            std::thread::sleep(Duration::from_millis(20));
        }
        for live in running {
            self.finish(&live, End::Cancelled);
        }
    }

    /// `principal`'s task `id` of this Core MCP's own (not an upstream server's).
    fn own(&self, id: &str, principal: &str) -> Result<Record, TaskError> {
        match wire::is_own_id(id) {
            true => self.find(id, principal),
            false => Err(TaskError::NotFound(id.to_owned())),
        }
    }

    /// `principal`'s task `id` from the store.
    fn find(&self, id: &str, principal: &str) -> Result<Record, TaskError> {
        if !wire::is_own_id(id) && wire::parse_upstream_id(id).is_none() {
            return Err(TaskError::NotFound(id.to_owned()));
        }
        let store = self.store().map_err(TaskError::Store)?;
        store
            .get(id, principal, now_ms(), ORPHANED)
            .map_err(|e| TaskError::Store(e.to_string()))?
            .ok_or_else(|| TaskError::NotFound(id.to_owned()))
    }

    /// Starts the keeper with the first task: a thread that renews this process's leases,
    /// stops work past its deadline, honours a cancel asked in another process and removes
    /// expired tasks. It sleeps while nothing runs here.
    fn start_keeper(self: &Arc<Self>) {
        self.keeper.call_once(|| {
            let weak = Arc::downgrade(self);
            let started = std::thread::Builder::new()
                .name("coremcp-tasks".into())
                .spawn(move || keep(&weak));
            if let Err(e) = started {
                tracing::error!("cannot start the task keeper: {e}; leases will run out");
            }
        });
    }

    /// One round of the keeper.
    fn keep_once(&self, purge: bool) {
        let running: Vec<Arc<Live>> = lock(&self.live).values().cloned().collect();
        let Ok(store) = self.store() else { return };
        let now = Instant::now();
        for live in &running {
            if now >= live.deadline {
                live.stop(Stop::Deadline);
                // Still waiting for its input: nothing was done, and nothing will be.
                if lock(&live.input).take().is_some() {
                    let text = format!(
                        "{} did not run: the input it waited for was not given in time",
                        live.tool
                    );
                    let result =
                        json!({"content": [{"type": "text", "text": text}], "isError": true});
                    self.finish(live, End::Result(result.to_string()));
                    continue;
                }
            }
            if now >= live.deadline + STOP_GRACE {
                tracing::error!(task = %live.id, tool = %live.tool, "a task's work did not stop at its deadline");
                self.finish(
                    live,
                    End::Error {
                        code: -32603,
                        message: format!(
                            "{} did not stop at its deadline; its task was ended",
                            live.tool
                        ),
                    },
                );
            }
        }
        if !running.is_empty() {
            let until = now_ms() + LEASE.as_millis() as i64;
            if let Err(e) = store.renew(&self.instance, until) {
                tracing::warn!("the leases of this process's tasks were not renewed: {e}");
            }
            match store.cancels_asked(&self.instance) {
                Ok(ids) => {
                    for id in ids {
                        if let Some(live) = self.live(&id) {
                            live.stop(Stop::Cancelled);
                        }
                    }
                }
                Err(e) => tracing::warn!("cancels asked elsewhere were not read: {e}"),
            }
        }
        if purge {
            if let Err(e) = store.purge(now_ms()) {
                tracing::warn!("expired tasks were not removed: {e}");
            }
        }
    }
}

/// The keeper's loop; it ends with the table.
fn keep(tasks: &std::sync::Weak<Tasks>) {
    let mut round = 0u64;
    loop {
        std::thread::sleep(KEEP_EVERY);
        let Some(tasks) = tasks.upgrade() else { return };
        round += 1;
        // Expired tasks are removed about once a minute.
        tasks.keep_once(round % 12 == 1);
    }
}

#[cfg(test)]
mod tests;
