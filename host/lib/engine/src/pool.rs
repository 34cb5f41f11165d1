//! The threads plugin calls run on. Calls into a plugin are synchronous (tokio does not cross
//! the ABI), so each runs on a pooled blocking thread; a per-group [`Gate`] bounds how many of
//! one group's calls run at once, so a stuck group cannot take every thread.
//!
//! Invariants: submitting never blocks the caller (the stdio reader); a thread is started only
//! when none is idle, and an idle thread exits after [`IDLE_EXIT`]; a gated job that finishes
//! runs its group's next waiting job on the same thread, without another hand-off.
//!
//! Wake-ups are the cost that matters under load (a futex wake per call halves throughput on a
//! small machine), so at most one wake-up is in flight: the submitter wakes one idle thread, and
//! a woken thread that still sees queued work wakes the next one itself. A thread with no work
//! sleeps at once: spinning for the next job was measured on a 2-core machine to cost more
//! than the wake-ups it saved (pipelined stdio calls ~20% and HTTP calls ~3% slower with a
//! 20 µs spin), since the spinner takes the core the submitter and the client need.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, OnceLock, PoisonError};
use std::thread;
use std::time::Duration;

pub use crate::inline::Job;

/// How long an idle thread waits for work before it exits.
pub(crate) const IDLE_EXIT: Duration = Duration::from_secs(10);
/// The most threads the pool starts; further jobs queue.
pub(crate) const MAX_THREADS: usize = 256;

struct State {
    jobs: VecDeque<Job>,
    idle: usize,
    threads: usize,
    /// A wake-up was signalled and no thread has taken it yet.
    waking: bool,
}

struct Shared {
    state: Mutex<State>,
    work: Condvar,
}

/// The process-wide pool.
#[inline]
pub fn global() -> &'static Pool {
    static POOL: OnceLock<Pool> = OnceLock::new();
    POOL.get_or_init(Pool::new)
}

/// A pool of blocking threads.
pub struct Pool {
    shared: Arc<Shared>,
}

impl Pool {
    fn new() -> Self {
        Self {
            shared: Arc::new(Shared {
                state: Mutex::new(State {
                    jobs: VecDeque::new(),
                    idle: 0,
                    threads: 0,
                    waking: false,
                }),
                work: Condvar::new(),
            }),
        }
    }

    /// Runs `job` on a pool thread.
    pub fn spawn(&self, job: Job) {
        let mut state = self
            .shared
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        state.jobs.push_back(job);
        if state.idle > 0 {
            if !state.waking {
                state.waking = true;
                drop(state);
                self.shared.work.notify_one();
            }
        } else if state.threads < MAX_THREADS {
            state.threads += 1;
            drop(state);
            let shared = Arc::clone(&self.shared);
            let started = thread::Builder::new()
                .name("coremcp-call".into())
                .spawn(move || worker(&shared));
            if let Err(e) = started {
                tracing::error!("cannot start a call thread: {e}");
                let mut state = self
                    .shared
                    .state
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                state.threads -= 1;
            }
        }
    }
}

fn worker(shared: &Shared) {
    let mut state = shared.state.lock().unwrap_or_else(PoisonError::into_inner);
    loop {
        if let Some(job) = state.jobs.pop_front() {
            let wake_next = !state.jobs.is_empty() && state.idle > 0 && !state.waking;
            if wake_next {
                state.waking = true;
            }
            drop(state);
            if wake_next {
                shared.work.notify_one();
            }
            job();
            state = shared.state.lock().unwrap_or_else(PoisonError::into_inner);
            continue;
        }
        state.idle += 1;
        let (next, timeout) = shared
            .work
            .wait_timeout(state, IDLE_EXIT)
            .unwrap_or_else(PoisonError::into_inner);
        state = next;
        state.idle -= 1;
        state.waking = false;
        if timeout.timed_out() && state.jobs.is_empty() {
            state.threads -= 1;
            return;
        }
    }
}

/// Bounds the calls of one group that run at once; the rest wait in order.
pub struct Gate {
    limit: usize,
    state: Mutex<GateState>,
}

struct GateState {
    running: usize,
    waiting: VecDeque<Job>,
}

impl Gate {
    pub fn new(limit: usize) -> Self {
        Self {
            limit: limit.max(1),
            state: Mutex::new(GateState {
                running: 0,
                waiting: VecDeque::new(),
            }),
        }
    }

    /// Runs `job` when the group has room: on this thread if it runs calls inline and takes
    /// this one (see [`crate::inline`]; `pace` is how quick its tool has been), else on `pool`.
    pub fn submit(self: &Arc<Self>, pool: &Pool, job: Job, pace: Option<&crate::pace::Pace>) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.running >= self.limit {
            state.waiting.push_back(job);
            return;
        }
        state.running += 1;
        drop(state);
        let job = match crate::inline::run(job, pace) {
            Ok(()) => return self.after_inline(pool),
            Err(job) => job,
        };
        let gate = Arc::clone(self);
        pool.spawn(Box::new(move || gate.run(job)));
    }

    /// Frees the slot an inline job held, or passes it to the next waiting job — on the pool,
    /// since the inline thread has its transport to get back to.
    fn after_inline(self: &Arc<Self>, pool: &Pool) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        match state.waiting.pop_front() {
            Some(next) => {
                drop(state);
                let gate = Arc::clone(self);
                pool.spawn(Box::new(move || gate.run(next)));
            }
            None => state.running -= 1,
        }
    }

    fn run(&self, mut job: Job) {
        loop {
            job();
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            match state.waiting.pop_front() {
                Some(next) => job = next,
                None => {
                    state.running -= 1;
                    return;
                }
            }
        }
    }

    /// Calls running now (for status and tests).
    pub fn running(&self) -> usize {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .running
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::mpsc;

    #[test]
    fn gate_bounds_concurrency_and_runs_everything() {
        let gate = Arc::new(Gate::new(2));
        let now = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        let (done, finished) = mpsc::channel();
        for _ in 0..10 {
            let (now, peak, done) = (now.clone(), peak.clone(), done.clone());
            gate.submit(
                global(),
                Box::new(move || {
                    let n = now.fetch_add(1, Ordering::SeqCst) + 1;
                    peak.fetch_max(n, Ordering::SeqCst);
                    thread::sleep(Duration::from_millis(10));
                    now.fetch_sub(1, Ordering::SeqCst);
                    let _ = done.send(());
                }),
                None,
            );
        }
        for _ in 0..10 {
            finished
                .recv_timeout(Duration::from_secs(10))
                .expect("every job runs");
        }
        assert_eq!(peak.load(Ordering::SeqCst), 2);
        // The last job reports before its gate slot is released: wait for the release.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while gate.running() > 0 && std::time::Instant::now() < deadline {
            thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(gate.running(), 0);
    }
}
