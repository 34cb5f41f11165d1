//! The stdio transport to an upstream server: a child (started by `coremcp_spawn`, scrubbed
//! environment) speaking newline-delimited JSON-RPC on its stdin and stdout.
//!
//! A reader thread owns stdout: it matches responses to waiting requests by id, answers the
//! server's own requests with -32601, and notes notifications. A second thread keeps the last
//! [`STDERR_KEPT`] bytes of stderr for error reports.
//!
//! Invariants:
//! - Memory is bounded: a stdout line over [`MAX_LINE_BYTES`] is discarded as it streams and
//!   reported as a warning; stderr is a ring.
//! - A request waits at most its timeout; when the server goes away every waiting request ends
//!   at once with [`UpstreamError::Closed`], carrying the exit status and recent stderr.
//! - Dropping the transport kills the server's process group.

use std::collections::HashMap;
use std::io::{BufReader, Read, Write};
use std::process::ChildStdin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

use coremcp_spawn::{Running, Spec};
use serde_json::{json, Value};

use super::lines::{Line, Lines};
use super::ring::Ring;
use super::rpc::{classify, method_not_found, Incoming, Notices, UpstreamError};
use crate::mcp::MAX_LINE_BYTES;

/// How much of the server's stderr is kept for reports.
pub const STDERR_KEPT: usize = 4096;
/// How long a report waits for the last stderr and the exit status of a server that went away.
const SETTLE: Duration = Duration::from_millis(1000);

type Outcome = Result<Value, (i64, String)>;

struct Shared {
    pending: Mutex<HashMap<u64, mpsc::Sender<Outcome>>>,
    stdin: Mutex<Option<ChildStdin>>,
    stderr: Mutex<Ring>,
    stderr_done: AtomicBool,
    closed: AtomicBool,
    notices: Arc<Notices>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    fn write(&self, message: &Value) -> std::io::Result<()> {
        let mut line = message.to_string();
        line.push('\n');
        let mut stdin = lock(&self.stdin);
        let pipe = stdin
            .as_mut()
            .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::BrokenPipe))?;
        pipe.write_all(line.as_bytes()).and_then(|()| pipe.flush())
    }
}

/// A running stdio server.
pub struct StdioTransport {
    shared: Arc<Shared>,
    running: Running,
    next_id: u64,
}

impl StdioTransport {
    /// Starts `command args` with the scrubbed environment plus `env`, in `cwd`.
    pub fn start(spec: &Spec, notices: Arc<Notices>) -> Result<Self, UpstreamError> {
        let mut running = coremcp_spawn::start(spec)?;
        let shared = Arc::new(Shared {
            pending: Mutex::new(HashMap::new()),
            stdin: Mutex::new(running.stdin.take()),
            stderr: Mutex::new(Ring::new(STDERR_KEPT)),
            stderr_done: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            notices,
        });
        if let Some(stdout) = running.stdout.take() {
            let shared = Arc::clone(&shared);
            thread::spawn(move || read_stdout(stdout, &shared));
        }
        match running.stderr.take() {
            Some(stderr) => {
                let shared = Arc::clone(&shared);
                thread::spawn(move || read_stderr(stderr, &shared));
            }
            None => shared.stderr_done.store(true, Ordering::Relaxed),
        }
        Ok(Self {
            shared,
            running,
            next_id: 1,
        })
    }

    /// Sends a request and waits up to `timeout` for its answer.
    pub fn request(
        &mut self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, UpstreamError> {
        let id = self.next_id;
        self.next_id += 1;
        let (tx, rx) = mpsc::channel();
        lock(&self.shared.pending).insert(id, tx);
        if self.shared.closed.load(Ordering::Relaxed) {
            lock(&self.shared.pending).remove(&id);
            return Err(self.closed(method));
        }
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        if self.shared.write(&message).is_err() {
            lock(&self.shared.pending).remove(&id);
            return Err(self.closed(method));
        }
        match rx.recv_timeout(timeout) {
            Ok(Ok(result)) => Ok(result),
            Ok(Err((code, message))) => Err(UpstreamError::Rpc {
                method: method.to_owned(),
                code,
                message,
            }),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                lock(&self.shared.pending).remove(&id);
                Err(UpstreamError::Timeout {
                    method: method.to_owned(),
                    timeout,
                    stderr: stderr_suffix(self.stderr_excerpt()),
                })
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => Err(self.closed(method)),
        }
    }

    /// Sends a notification.
    pub fn notify(&mut self, method: &str, params: Option<Value>) -> Result<(), UpstreamError> {
        let mut message = json!({"jsonrpc": "2.0", "method": method});
        if let Some(params) = params {
            message["params"] = params;
        }
        self.shared.write(&message).map_err(|_| self.closed(method))
    }

    /// The last lines the server wrote to stderr.
    pub fn stderr_excerpt(&self) -> Option<String> {
        lock(&self.shared.stderr).excerpt()
    }

    /// The error for a server that went away: waits briefly for its exit status and the last
    /// of its stderr, so the report says why.
    fn closed(&mut self, method: &str) -> UpstreamError {
        let until = Instant::now() + SETTLE;
        let mut status = None;
        while Instant::now() < until {
            if status.is_none() {
                status = self.running.try_wait().ok().flatten();
            }
            if status.is_some() && self.shared.stderr_done.load(Ordering::Relaxed) {
                break;
            }
            thread::sleep(Duration::from_millis(10));
        }
        UpstreamError::Closed {
            method: method.to_owned(),
            status: status.map_or_else(String::new, |s| format!(" ({s})")),
            stderr: stderr_suffix(self.stderr_excerpt()),
        }
    }
}

fn stderr_suffix(excerpt: Option<String>) -> String {
    excerpt.map_or_else(String::new, |text| format!("; recent stderr: {text}"))
}

fn read_stdout(stdout: impl Read, shared: &Shared) {
    let mut lines = Lines::new(BufReader::with_capacity(64 * 1024, stdout), MAX_LINE_BYTES);
    while let Ok(Some(line)) = lines.next_line() {
        let text = match line {
            Line::Text(text) => text,
            Line::TooLong { bytes } => {
                shared.notices.warn(format!(
                    "discarded a stdout line of {bytes} bytes (over the {MAX_LINE_BYTES}-byte \
                     limit)"
                ));
                continue;
            }
        };
        if text.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let message: Value = match serde_json::from_slice(&text) {
            Ok(message) => message,
            Err(e) => {
                let start: String = String::from_utf8_lossy(&text).chars().take(80).collect();
                shared.notices.warn(format!(
                    "ignored a stdout line that is not JSON ({e}): {start}"
                ));
                continue;
            }
        };
        match classify(&message) {
            Incoming::Response { id, outcome } => {
                if let Some(waiter) = lock(&shared.pending).remove(&id) {
                    let _ = waiter.send(outcome);
                }
            }
            Incoming::Request { id, method } => {
                let _ = shared.write(&method_not_found(&id, &method));
            }
            Incoming::Notification { method } => shared.notices.notification(&method),
            Incoming::Invalid(why) => shared.notices.warn(format!("ignored a message: {why}")),
        }
    }
    shared.closed.store(true, Ordering::Relaxed);
    // Dropping the senders wakes every waiting request.
    lock(&shared.pending).clear();
}

fn read_stderr(mut stderr: impl Read, shared: &Shared) {
    let mut buf = [0u8; 4096];
    loop {
        match stderr.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => lock(&shared.stderr).push(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    shared.stderr_done.store(true, Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(script: &str) -> (StdioTransport, Arc<Notices>) {
        let notices = Arc::new(Notices::default());
        let spec = Spec::new("sh").args(["-c", script]);
        let transport = StdioTransport::start(&spec, Arc::clone(&notices)).expect("starts");
        (transport, notices)
    }

    #[test]
    fn answers_are_matched_by_id_and_side_traffic_handled() {
        // Reads our request, then sends a request of its own, a notification, a line that is
        // not JSON and the answer; then echoes what it got back for our request to see.
        let (mut t, notices) = server(
            r#"read req
               echo '{"jsonrpc":"2.0","id":"s1","method":"roots/list"}'
               read ours
               echo '{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}'
               echo 'not json'
               echo '{"jsonrpc":"2.0","id":1,"result":{"ok":true}}'
               read req
               echo "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":$ours}"
               sleep 30"#,
        );
        let first = t.request("a", json!({}), Duration::from_secs(10));
        assert_eq!(first.expect("answer"), json!({"ok": true}));
        let echoed = t
            .request("b", json!({}), Duration::from_secs(10))
            .expect("answer");
        assert_eq!(echoed["id"], "s1");
        assert_eq!(echoed["error"]["code"], -32601);
        assert!(notices.take_list_changed());
        assert!(
            notices.warnings()[0].contains("not JSON"),
            "{:?}",
            notices.warnings()
        );
    }

    #[test]
    fn a_silent_server_times_out_and_a_dead_one_is_reported_with_its_stderr() {
        let (mut t, _) = server("echo starting >&2; sleep 30");
        let err = t
            .request("x", json!({}), Duration::from_millis(200))
            .expect_err("times out");
        assert!(matches!(err, UpstreamError::Timeout { .. }), "{err}");
        assert!(err.to_string().contains("recent stderr: starting"), "{err}");

        let (mut t, _) = server("read line; echo 'fatal: bad config' >&2; exit 4");
        let started = Instant::now();
        let err = t
            .request("initialize", json!({}), Duration::from_secs(20))
            .expect_err("closed");
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(
            err.to_string(),
            "the server closed the connection (exit status: 4) before answering initialize; \
             recent stderr: fatal: bad config"
        );
        // Later requests fail at once.
        let err = t
            .request("again", json!({}), Duration::from_secs(20))
            .expect_err("closed");
        assert!(matches!(err, UpstreamError::Closed { .. }), "{err}");
    }
}
