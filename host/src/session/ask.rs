//! Requests a session sends to its client (MCP elicitation) and the matching of their answers.
//!
//! Invariants: ids are strings (`"coremcp-N"`), so they never collide with a client's numeric
//! ids; a waiter is removed whatever ends its wait (answer, deadline, cancel), so the table
//! holds only requests still waited for; an answer nobody waits for is dropped.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::outbox::Outbox;
use coremcp_upstream::rpc::response_outcome;

/// How often a waiting request looks at its cancel flag.
const POLL: Duration = Duration::from_millis(50);

type Outcome = Result<Value, (i64, String)>;

/// Why a request to the client got no usable answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AskError {
    #[error("no answer within {} s", .0.as_secs())]
    Timeout(Duration),
    #[error("the call was cancelled while waiting")]
    Cancelled,
    #[error("the client answered with error {0}: {1}")]
    Client(i64, String),
}

/// The requests of one session waiting for the client.
#[derive(Default)]
pub struct Asks {
    pending: Mutex<HashMap<String, mpsc::Sender<Outcome>>>,
    next: AtomicU64,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl Asks {
    /// Sends `method` to the client and waits for its answer until `until` or `cancel`.
    pub fn ask(
        &self,
        out: &dyn Outbox,
        method: &str,
        params: Value,
        until: Instant,
        cancel: &AtomicBool,
    ) -> Result<Value, AskError> {
        let id = Value::String(format!(
            "coremcp-{}",
            self.next.fetch_add(1, Ordering::Relaxed) + 1
        ));
        let key = id.to_string();
        let (tx, rx) = mpsc::channel();
        lock(&self.pending).insert(key.clone(), tx);
        out.send(
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string(),
        );
        let started = Instant::now();
        let outcome = loop {
            let left = until.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left.min(POLL)) {
                Ok(Ok(result)) => break Ok(result),
                Ok(Err((code, message))) => break Err(AskError::Client(code, message)),
                Err(_) if cancel.load(Ordering::Relaxed) => break Err(AskError::Cancelled),
                Err(_) if left.is_zero() => break Err(AskError::Timeout(started.elapsed())),
                Err(_) => {}
            }
        };
        lock(&self.pending).remove(&key);
        outcome
    }

    /// Hands a response from the client to the request waiting for it; false if none waits.
    pub fn answer(&self, message: &[u8]) -> bool {
        let Ok(message) = serde_json::from_slice::<Value>(message) else {
            return false;
        };
        let Some(id) = message.get("id") else {
            return false;
        };
        let Some(waiter) = lock(&self.pending).remove(&id.to_string()) else {
            return false;
        };
        let outcome = response_outcome(&message)
            .unwrap_or_else(|| Err((0, "a response with neither result nor error".to_owned())));
        waiter.send(outcome).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::thread;

    use super::*;

    struct Capture(Mutex<Vec<String>>);

    impl Outbox for Capture {
        fn send(&self, message: String) {
            lock(&self.0).push(message);
        }
    }

    fn sent_id(out: &Capture) -> Value {
        let until = Instant::now() + Duration::from_secs(5);
        loop {
            if let Some(line) = lock(&out.0).first() {
                let message: Value = serde_json::from_str(line).expect("json");
                assert_eq!(message["method"], "elicitation/create");
                return message["id"].clone();
            }
            assert!(Instant::now() < until, "nothing sent");
            thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn answers_reach_their_request_and_strays_are_dropped() {
        let asks = Arc::new(Asks::default());
        let out = Arc::new(Capture(Mutex::new(Vec::new())));
        let never = AtomicBool::new(false);
        let waiter = {
            let (asks, out) = (Arc::clone(&asks), Arc::clone(&out));
            thread::spawn(move || {
                let never = AtomicBool::new(false);
                let until = Instant::now() + Duration::from_secs(10);
                asks.ask(&*out, "elicitation/create", json!({}), until, &never)
            })
        };
        let id = sent_id(&out);
        assert!(!asks.answer(br#"{"jsonrpc":"2.0","id":"other","result":{}}"#));
        let reply = json!({"jsonrpc": "2.0", "id": id, "result": {"action": "accept"}});
        assert!(asks.answer(reply.to_string().as_bytes()));
        let result = waiter.join().expect("thread").expect("answered");
        assert_eq!(result["action"], "accept");
        // Late duplicates find nobody waiting.
        assert!(!asks.answer(reply.to_string().as_bytes()));

        let quick = Instant::now() + Duration::from_millis(100);
        let err = asks
            .ask(&*out, "elicitation/create", json!({}), quick, &never)
            .expect_err("times out");
        assert!(matches!(err, AskError::Timeout(_)), "{err}");
        let cancelled = AtomicBool::new(true);
        let later = Instant::now() + Duration::from_secs(10);
        let err = asks
            .ask(&*out, "elicitation/create", json!({}), later, &cancelled)
            .expect_err("cancelled");
        assert_eq!(err, AskError::Cancelled);
        assert!(lock(&asks.pending).is_empty());
    }
}
