//! Calls in flight: their deadlines, cancellation, and who answers.
//!
//! Exactly one of three parties answers a call — the worker that ran it, the deadline
//! watchdog, or nobody (the client cancelled it) — decided by [`Call::claim`]. The claimant
//! reports [`Calls::answered`] only after its answer is written, and [`Calls::wait_idle`] waits
//! for that, so a host that exits after stdin closes never drops an answer it owed. The watchdog is
//! one thread (started with the first call) that sleeps until the earliest deadline; registering
//! a call wakes it only when that call's deadline is earlier than the one it sleeps towards, so
//! the common path costs two short lock holds and no wake-up.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, Once, PoisonError};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::metrics::Outcome;

/// One call in flight.
#[derive(Debug)]
pub struct Call {
    /// The request id as JSON text (shared with the table of calls by id).
    pub id: Arc<str>,
    pub tool: String,
    /// Who the call is made for, as the policy judged it.
    pub caller: Arc<coremcp_wire::policy::Caller>,
    /// [`Call::caller`] as grants name it.
    pub principal: Arc<str>,
    /// The agent's client's name: the one a configured peer passed the call on for, else the
    /// session's.
    pub client: Option<Arc<str>>,
    /// The session's result budget in characters (`coremcp_wire::budget`), lowered to what a
    /// peer that passed the call on asked for.
    pub budget: usize,
    /// Who the call is counted under in the metrics.
    pub subject: crate::metrics::Subject,
    /// When it was registered.
    pub started: Instant,
    pub timeout: Duration,
    pub deadline: Instant,
    /// The deadline as wall-clock milliseconds, for the plugin's `CallCtx`.
    pub deadline_unix_ms: u64,
    /// Set when the call must stop (deadline or client cancel); the plugin polls it. Shared
    /// with a task's table for a call that runs as a task.
    pub cancelled: Arc<AtomicBool>,
    /// For a 2026 request that asked for log messages: 1 + the rank of the least severe level
    /// it wants (0: none), since such a client has no session-wide level.
    pub log_floor: std::sync::atomic::AtomicU8,
    /// Not a `tools/call` (a `prompts/get`, …): its timeout is a JSON-RPC error, not a tool
    /// error result.
    pub not_a_tool: AtomicBool,
    /// The request's `_meta.progressToken` (JSON text), for an upstream call whose server runs
    /// it as a task that Core MCP waits for (its progress is reported with it).
    pub progress: std::sync::OnceLock<String>,
    /// Why the plugin failed inside (it panicked, or broke its own rules), not the tool: a
    /// task's work that ends so fails with a JSON-RPC error, not a tool error result.
    pub crashed: std::sync::OnceLock<String>,
    answered: AtomicBool,
    seq: u64,
}

impl Call {
    /// A call that runs as a task (`coremcp-tasks`): in no session's table, so no watchdog
    /// answers it and no cancel of a request reaches it; `stop` is the task's own flag and
    /// `deadline` its work's deadline.
    pub fn for_task(
        id: &str,
        tool: &str,
        group: Option<&str>,
        deadline: (Instant, u64),
        origin: Origin<'_>,
        stop: Arc<AtomicBool>,
    ) -> Call {
        let started = Instant::now();
        let timeout = deadline.0.saturating_duration_since(started);
        let times = Times {
            started,
            timeout,
            deadline: deadline.0,
            deadline_unix_ms: deadline.1,
        };
        Call::new(Arc::from(id), tool, group, times, origin, stop, 0)
    }

    /// A call of `tool` (served by `group`, when known) made for `origin`.
    fn new(
        id: Arc<str>,
        tool: &str,
        group: Option<&str>,
        times: Times,
        origin: Origin<'_>,
        cancelled: Arc<AtomicBool>,
        seq: u64,
    ) -> Call {
        Call {
            id,
            tool: tool.to_owned(),
            principal: Arc::from(origin.caller.principal()),
            caller: Arc::new(origin.caller.clone()),
            client: origin.client.map(Arc::from),
            budget: origin.budget,
            subject: crate::metrics::Subject::of(tool, group),
            started: times.started,
            timeout: times.timeout,
            deadline: times.deadline,
            deadline_unix_ms: times.deadline_unix_ms,
            cancelled,
            log_floor: std::sync::atomic::AtomicU8::new(0),
            not_a_tool: AtomicBool::new(false),
            progress: std::sync::OnceLock::new(),
            crashed: std::sync::OnceLock::new(),
            answered: AtomicBool::new(false),
            seq,
        }
    }
}

/// When a call started and must end.
struct Times {
    started: Instant,
    timeout: Duration,
    deadline: Instant,
    deadline_unix_ms: u64,
}

/// Who a call is made for and what its answer may hold.
#[derive(Clone, Copy)]
pub struct Origin<'a> {
    /// As the policy judged it.
    pub caller: &'a coremcp_wire::policy::Caller,
    /// The agent's client's name.
    pub client: Option<&'a str>,
    /// The result budget in characters.
    pub budget: usize,
}

impl Call {
    /// Whether it runs as a task's work ([`Call::for_task`]): its answer goes to the task,
    /// never to a session's client.
    pub fn is_task(&self) -> bool {
        // A session's table numbers its calls from 1.
        self.seq == 0
    }

    /// Takes the right to answer; true for exactly one caller.
    pub fn claim(&self) -> bool {
        !self.answered.swap(true, Ordering::AcqRel)
    }

    /// Claims the call and, if this caller won, counts it as ended with `outcome`.
    fn claim_as(&self, outcome: Outcome) -> bool {
        let claimed = self.claim();
        if claimed {
            crate::metrics::finished(&self.subject, outcome, self.started.elapsed());
        }
        claimed
    }
}

type Key = (Instant, u64);
type OnTimeout = Box<dyn Fn(&Call) + Send + Sync>;

struct Table {
    by_deadline: BTreeMap<Key, Arc<Call>>,
    by_id: HashMap<Arc<str>, Key>,
    seq: u64,
    /// When the watchdog will next wake by itself.
    watchdog_at: Option<Instant>,
    /// Calls registered and not yet answered (or given up by a cancel).
    unanswered: usize,
    /// Threads in [`Calls::wait_idle`]: only they need the idle signal, whose every
    /// `notify_all` is a syscall.
    idle_waiters: usize,
    closed: bool,
}

struct Inner {
    table: Mutex<Table>,
    wake: Condvar,
    /// Signalled when the table empties (for a clean exit).
    idle: Condvar,
    on_timeout: OnTimeout,
    idle_wait: Duration,
}

/// The calls of one session.
pub struct Calls {
    inner: Arc<Inner>,
    watchdog: Once,
}

impl Calls {
    /// `on_timeout` answers a call whose deadline passed; `idle_wait` is how long the watchdog
    /// sleeps when nothing is in flight (the default call timeout, so that registering a call
    /// with the default timeout never needs to wake it).
    pub fn new(idle_wait: Duration, on_timeout: OnTimeout) -> Self {
        let inner = Arc::new(Inner {
            table: Mutex::new(Table {
                by_deadline: BTreeMap::new(),
                by_id: HashMap::new(),
                seq: 0,
                watchdog_at: None,
                unanswered: 0,
                idle_waiters: 0,
                closed: false,
            }),
            wake: Condvar::new(),
            idle: Condvar::new(),
            on_timeout,
            idle_wait,
        });
        Self {
            inner,
            watchdog: Once::new(),
        }
    }

    /// Starts the watchdog with the first call: a session that only lists tools (a client
    /// looking around, a cold start) never pays for its thread.
    fn start_watchdog(&self) {
        self.watchdog.call_once(|| {
            let watchdog = Arc::clone(&self.inner);
            let started = thread::Builder::new()
                .name("coremcp-deadlines".into())
                .spawn(move || run_watchdog(&watchdog));
            if let Err(e) = started {
                tracing::error!("cannot start the deadline watchdog: {e}; calls will not time out");
            }
        });
    }

    /// Registers a call of `tool` (served by `group`, when known) made for `origin`; `None`
    /// when a call with this id is already in flight.
    pub fn start(
        &self,
        id: &str,
        tool: &str,
        group: Option<&str>,
        timeout: Duration,
        origin: Origin<'_>,
    ) -> Option<Arc<Call>> {
        let started = Instant::now();
        let deadline = started + timeout;
        let deadline_unix_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| (d + timeout).as_millis() as u64);
        let mut table = self.lock();
        if table.by_id.contains_key(id) {
            return None;
        }
        table.seq += 1;
        let id: Arc<str> = Arc::from(id);
        let times = Times {
            started,
            timeout,
            deadline,
            deadline_unix_ms,
        };
        let call = Arc::new(Call::new(
            Arc::clone(&id),
            tool,
            group,
            times,
            origin,
            Arc::new(AtomicBool::new(false)),
            table.seq,
        ));
        let key = (deadline, call.seq);
        table.unanswered += 1;
        table.by_deadline.insert(key, Arc::clone(&call));
        table.by_id.insert(id, key);
        crate::metrics::started();
        let wake = table.watchdog_at.is_none_or(|at| deadline < at);
        drop(table);
        self.start_watchdog();
        if wake {
            self.inner.wake.notify_one();
        }
        Some(call)
    }

    /// Removes a finished call whose answer is `answer` (a JSON-RPC response); true if it
    /// should be sent (then report [`Calls::answered`] once it is written).
    pub fn finish(&self, call: &Call, answer: &str) -> bool {
        self.remove(call);
        let outcome = Outcome::of_answer(answer);
        let claimed = call.claim_as(outcome);
        if claimed && outcome == Outcome::ToolError {
            crate::metrics::failed(&call.subject, &call.tool, answer, &call.principal);
        }
        claimed
    }

    /// The claimant of a call has written its answer (or, for a cancel, decided on none).
    pub fn answered(&self) {
        let mut table = self.lock();
        table.unanswered = table.unanswered.saturating_sub(1);
        if table.unanswered == 0 && table.idle_waiters > 0 {
            self.inner.idle.notify_all();
        }
    }

    /// The client cancelled request `id`: stop it and never answer it. False if unknown.
    pub fn cancel(&self, id: &str) -> bool {
        let call = {
            let table = self.lock();
            table
                .by_id
                .get(id)
                .and_then(|key| table.by_deadline.get(key))
                .cloned()
        };
        match call {
            Some(call) => {
                call.cancelled.store(true, Ordering::Relaxed);
                let claimed = call.claim_as(Outcome::Cancelled);
                self.remove(&call);
                if claimed {
                    self.answered();
                }
                true
            }
            None => false,
        }
    }

    /// Calls in flight.
    pub fn in_flight(&self) -> usize {
        self.lock().by_deadline.len()
    }

    /// Waits until every call has been answered, at most `limit`. True if none is owed.
    pub fn wait_idle(&self, limit: Duration) -> bool {
        let mut table = self.lock();
        table.idle_waiters += 1;
        let (mut table, _) = self
            .inner
            .idle
            .wait_timeout_while(table, limit, |t| t.unanswered > 0)
            .unwrap_or_else(PoisonError::into_inner);
        table.idle_waiters -= 1;
        table.unanswered == 0
    }

    fn remove(&self, call: &Call) {
        let key = (call.deadline, call.seq);
        let mut table = self.lock();
        if table.by_deadline.remove(&key).is_some() && table.by_id.get(&*call.id) == Some(&key) {
            table.by_id.remove(&*call.id);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.inner
            .table
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for Calls {
    fn drop(&mut self) {
        self.lock().closed = true;
        self.inner.wake.notify_one();
    }
}

fn run_watchdog(inner: &Inner) {
    let mut table = inner.table.lock().unwrap_or_else(PoisonError::into_inner);
    loop {
        if table.closed {
            return;
        }
        let now = Instant::now();
        let first = table.by_deadline.first_key_value().map(|(k, _)| *k);
        match first {
            Some(key) if key.0 <= now => {
                let Some(call) = table.by_deadline.remove(&key) else {
                    continue;
                };
                if table.by_id.get(&*call.id) == Some(&key) {
                    table.by_id.remove(&*call.id);
                }
                drop(table);
                call.cancelled.store(true, Ordering::Relaxed);
                let claimed = call.claim_as(Outcome::Timeout);
                if claimed {
                    (inner.on_timeout)(&call);
                }
                table = inner.table.lock().unwrap_or_else(PoisonError::into_inner);
                if claimed {
                    table.unanswered = table.unanswered.saturating_sub(1);
                    if table.unanswered == 0 && table.idle_waiters > 0 {
                        inner.idle.notify_all();
                    }
                }
            }
            other => {
                let until = other.map_or(now + inner.idle_wait, |k| k.0);
                table.watchdog_at = Some(until);
                let (next, _) = inner
                    .wake
                    .wait_timeout(table, until.saturating_duration_since(now))
                    .unwrap_or_else(PoisonError::into_inner);
                table = next;
                table.watchdog_at = None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    impl Calls {
        /// A call of the stdio client with no group or client name.
        fn start_stdio(&self, id: &str, tool: &str, timeout: Duration) -> Option<Arc<Call>> {
            let origin = Origin {
                caller: &coremcp_wire::policy::Caller::Stdio,
                client: None,
                budget: coremcp_wire::budget::DEFAULT,
            };
            self.start(id, tool, None, timeout, origin)
        }
    }

    fn calls() -> (Calls, mpsc::Receiver<String>) {
        let (tx, rx) = mpsc::channel();
        let tx = Mutex::new(tx);
        let calls = Calls::new(
            Duration::from_secs(30),
            Box::new(move |call: &Call| {
                let _ = tx.lock().expect("lock").send(call.id.to_string());
            }),
        );
        (calls, rx)
    }

    #[test]
    fn a_call_that_overruns_is_answered_by_the_watchdog_once() {
        let (calls, timeouts) = calls();
        let call = calls
            .start_stdio("1", "slow", Duration::from_millis(50))
            .expect("registered");
        let fast = calls
            .start_stdio("2", "fast", Duration::from_secs(30))
            .expect("registered");
        assert!(
            !calls.wait_idle(Duration::from_millis(1)),
            "answers are owed"
        );
        assert!(
            calls.finish(&fast, ""),
            "the worker answers a call that finished in time"
        );
        calls.answered();
        let timed_out = timeouts
            .recv_timeout(Duration::from_secs(5))
            .expect("timeout fires");
        assert_eq!(timed_out, "1");
        assert!(
            call.cancelled.load(Ordering::Relaxed),
            "the plugin is told to stop"
        );
        assert!(
            !calls.finish(&call, ""),
            "the late worker must not answer again"
        );
        assert_eq!(calls.in_flight(), 0);
        assert!(timeouts.recv_timeout(Duration::from_millis(100)).is_err());
        assert!(
            calls.wait_idle(Duration::from_secs(1)),
            "both answers were written"
        );
    }

    #[test]
    fn cancelled_calls_are_never_answered() {
        let (calls, timeouts) = calls();
        let call = calls
            .start_stdio("\"a\"", "t", Duration::from_millis(100))
            .expect("registered");
        assert!(calls.cancel("\"a\""));
        assert!(!calls.cancel("\"a\""), "already gone");
        assert!(call.cancelled.load(Ordering::Relaxed));
        assert!(!calls.finish(&call, ""));
        assert!(timeouts.recv_timeout(Duration::from_millis(300)).is_err());
        assert!(calls.wait_idle(Duration::from_millis(10)));
    }

    #[test]
    fn an_id_in_flight_is_not_registered_twice() {
        let (calls, _timeouts) = calls();
        let first = calls
            .start_stdio("7", "t", Duration::from_secs(30))
            .expect("first");
        assert!(calls
            .start_stdio("7", "t", Duration::from_secs(30))
            .is_none());
        assert!(calls.finish(&first, ""));
        calls.answered();
        assert!(
            calls
                .start_stdio("7", "t", Duration::from_secs(30))
                .is_some(),
            "free again once answered"
        );
    }

    #[test]
    fn an_earlier_deadline_wakes_the_watchdog() {
        let (calls, timeouts) = calls();
        let _long = calls
            .start_stdio("1", "t", Duration::from_secs(60))
            .expect("registered");
        thread::sleep(Duration::from_millis(20));
        let started = Instant::now();
        let _short = calls
            .start_stdio("2", "t", Duration::from_millis(30))
            .expect("registered");
        assert_eq!(
            timeouts
                .recv_timeout(Duration::from_secs(5))
                .expect("fires"),
            "2"
        );
        assert!(started.elapsed() < Duration::from_secs(2));
    }
}
