//! Waiting for answers on a transport whose reader thread matches responses to requests by id
//! (stdio, legacy SSE): the map of waiting requests ([`Pending`]) and the wait of one request
//! ([`Pending::wait`]), with what differs between transports behind [`Peer`]. A request may
//! also be detached ([`Pending::register_done`]): nobody blocks, and its callback runs with
//! the answer on the reader's thread, one thread hand-off less per call.
//!
//! Invariants:
//! - Once [`Pending::close`] ran, nothing waits in vain: every waiting request ends at once
//!   (its channel is dropped; it ends with [`Peer::closed`]; a detached one's callback runs
//!   with `None`) and [`Pending::register`] refuses new ones. Both happen under the map's lock,
//!   so no request slips in between; callbacks run after the lock is released.
//! - A detached request's callback runs at most once: with its answer, with `None` at close,
//!   or never if [`Pending::forget`] took it first.
//! - A waiting request looks at its caller's cancel flag at least every [`SLICE`] (50 ms) and
//!   never waits past its deadline.
//! - A request given up (cancelled, or its timeout passed) leaves the map before the server is
//!   told with `notifications/cancelled` ([`Peer::tell_cancelled`], best effort; never for
//!   `initialize`, which MCP says is never cancelled), so a late answer is dropped; the call ends
//!   with [`UpstreamError::Cancelled`] or [`UpstreamError::Timeout`].

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::value::RawValue;
use serde_json::Value;

use super::rpc::{Refused, UpstreamError};

/// The longest wait for an answer between two looks at the caller's cancel flag.
pub const SLICE: Duration = Duration::from_millis(50);

/// The answer to a request: its result, or why there is none (its JSON-RPC error, or an
/// answer too large to read).
pub type Outcome = Result<Value, Refused>;

/// Locks `mutex`, recovering the data if another thread panicked while holding it.
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// What a transport does when a request ends without its answer.
pub trait Peer {
    /// Tells the server request `id` is abandoned, for `reason`; best effort,
    /// a failure is ignored.
    fn tell_cancelled(&self, id: u64, reason: &str);
    /// The error `method` ends with when the transport closed before its answer came.
    fn closed(&self, method: &str) -> UpstreamError;
    /// The `stderr` of a timeout error: empty, or `"; recent stderr: …"`.
    fn stderr(&self) -> String {
        String::new()
    }
}

/// Why a request stopped waiting.
pub(crate) enum GaveUp {
    Cancelled,
    Timeout,
}

/// One request sent (or being sent) and waited for.
pub struct Call<'a> {
    pub method: &'a str,
    pub id: u64,
    /// What the caller allowed, for the timeout error.
    pub timeout: Duration,
    pub deadline: Instant,
    /// Set by the caller to give up.
    pub cancel: &'a AtomicBool,
}

/// An answer as the server wrote it: its `result` as JSON text, not parsed (a detached call
/// passes it on as it is where it can), or why there is none.
pub(crate) type RawOutcome = Result<Box<RawValue>, Refused>;

/// What runs with the answer to a detached request ([`Pending::register_done`]): the outcome,
/// or `None` when the transport closed first.
pub type Done = Box<dyn FnOnce(Option<RawOutcome>) + Send>;

/// Who gets a request's answer.
enum Waiter {
    /// A thread blocked in [`Pending::wait`], and how the answer's result becomes its value
    /// (`None`: all of it).
    Channel(mpsc::Sender<Outcome>, Option<super::shape::Shape>),
    /// A detached request: its callback runs on the thread that read the answer.
    Done(Done),
}

/// The requests waiting for their answers, each on its own channel or callback.
#[derive(Default)]
pub struct Pending {
    waiting: Mutex<HashMap<u64, Waiter>>,
    closed: AtomicBool,
}

impl Pending {
    /// Registers request `id` before it is sent; where its answer will come, or `None` once
    /// the transport closed.
    pub fn register(&self, id: u64) -> Option<mpsc::Receiver<Outcome>> {
        self.register_shaped(id, None)
    }

    /// [`Pending::register`], the answer's result read through `shape` (when it arrives as
    /// text: the usual way).
    pub(crate) fn register_shaped(
        &self,
        id: u64,
        shape: Option<super::shape::Shape>,
    ) -> Option<mpsc::Receiver<Outcome>> {
        let mut waiting = lock(&self.waiting);
        if self.closed.load(Ordering::Relaxed) {
            return None;
        }
        let (tx, rx) = mpsc::channel();
        waiting.insert(id, Waiter::Channel(tx, shape));
        Some(rx)
    }

    /// Registers detached request `id` before it is sent: `done` runs with its answer (on the
    /// reader's thread), or with `None` if the transport closes first. `Err(done)` back once
    /// the transport closed.
    pub(crate) fn register_done(&self, id: u64, done: Done) -> Result<(), Done> {
        let mut waiting = lock(&self.waiting);
        if self.closed.load(Ordering::Relaxed) {
            return Err(done);
        }
        waiting.insert(id, Waiter::Done(done));
        Ok(())
    }

    /// Stops waiting for request `id` (it could not be sent, or its caller gave up); false if
    /// it no longer waited (answered, or the transport closed).
    pub fn forget(&self, id: u64) -> bool {
        lock(&self.waiting).remove(&id).is_some()
    }

    /// Hands the answer to request `id` to its caller, if it still waits.
    pub fn answer(&self, id: u64, outcome: Outcome) {
        let waiter = lock(&self.waiting).remove(&id);
        match waiter {
            Some(Waiter::Channel(tx, _)) => {
                let _ = tx.send(outcome);
            }
            Some(Waiter::Done(done)) => done(Some(outcome.map(|result| {
                // A `Value` always serialises to valid JSON text.
                RawValue::from_string(result.to_string())
                    .unwrap_or_else(|_| RawValue::NULL.to_owned())
            }))),
            None => {}
        }
    }

    /// Hands the answer to request `id`, read as text, to its caller, if it still waits: a
    /// waiting thread gets it parsed, a detached request's callback as it is.
    pub(crate) fn answer_raw(&self, id: u64, outcome: RawOutcome) {
        let waiter = lock(&self.waiting).remove(&id);
        match waiter {
            Some(Waiter::Channel(tx, shape)) => {
                let parsed = outcome.and_then(|result| match shape {
                    Some(shape) => shape(&result).map_err(Refused::Unreadable),
                    // Text that parsed as a JSON value parses as one again.
                    None => Ok(serde_json::from_str(result.get()).unwrap_or(Value::Null)),
                });
                let _ = tx.send(parsed);
            }
            Some(Waiter::Done(done)) => done(Some(outcome)),
            None => {}
        }
    }

    /// The transport closed: every waiting request ends now, and later ones at once.
    pub fn close(&self) {
        let ended: Vec<Waiter> = {
            let mut waiting = lock(&self.waiting);
            self.closed.store(true, Ordering::Relaxed);
            waiting.drain().map(|(_, waiter)| waiter).collect()
        };
        for waiter in ended {
            match waiter {
                // Dropping the sender wakes the waiting request.
                Waiter::Channel(..) => {}
                Waiter::Done(done) => done(None),
            }
        }
    }

    /// Whether [`Pending::close`] ran.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Relaxed)
    }

    /// Whether no request waits.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        lock(&self.waiting).is_empty()
    }

    /// Waits for the answer to `call` on `answer` (from [`Pending::register`]) until its
    /// deadline or its cancel flag; given up, see [`Pending::give_up`].
    pub fn wait(
        &self,
        call: &Call<'_>,
        answer: mpsc::Receiver<Outcome>,
        peer: &impl Peer,
    ) -> Result<Value, UpstreamError> {
        loop {
            let left = call.deadline.saturating_duration_since(Instant::now());
            match answer.recv_timeout(left.min(SLICE)) {
                Ok(Ok(result)) => return Ok(result),
                Ok(Err(refused)) => return Err(refused.into_error(call.method)),
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if call.cancel.load(Ordering::Relaxed) {
                        return Err(self.give_up(call, GaveUp::Cancelled, peer));
                    }
                    if Instant::now() >= call.deadline {
                        return Err(self.give_up(call, GaveUp::Timeout, peer));
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => return Err(peer.closed(call.method)),
            }
        }
    }

    /// Stops waiting for `call`, tells the server, and returns the error the call ends with.
    pub(crate) fn give_up(&self, call: &Call<'_>, why: GaveUp, peer: &impl Peer) -> UpstreamError {
        self.forget(call.id);
        let method = call.method.to_owned();
        let (reason, error) = match why {
            GaveUp::Cancelled => (
                "the caller cancelled the request".to_owned(),
                UpstreamError::Cancelled { method },
            ),
            GaveUp::Timeout => (
                format!("no answer within {} ms", call.timeout.as_millis()),
                UpstreamError::Timeout {
                    method,
                    timeout: call.timeout,
                    stderr: peer.stderr(),
                },
            ),
        };
        // MCP: `initialize` is never cancelled.
        if call.method != "initialize" {
            peer.tell_cancelled(call.id, &reason);
        }
        error
    }
}
