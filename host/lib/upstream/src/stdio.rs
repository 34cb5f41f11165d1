//! The stdio transport to an upstream server: a child (started by `coremcp_spawn`, scrubbed
//! environment) speaking newline-delimited JSON-RPC on its stdin and stdout.
//!
//! A reader thread owns stdout: it matches responses to waiting requests by id, answers the
//! server's own requests with -32601, and notes notifications. A second thread keeps the last
//! [`STDERR_KEPT`] bytes of stderr for error reports.
//!
//! Invariants:
//! - Memory is bounded: a stdout line over [`MAX_LINE_BYTES`] is discarded as it streams and
//!   reported as a warning; the request it answered (its top-level `id`, found as it streams)
//!   ends at once with [`UpstreamError::TooLarge`], and the connection carries on. stderr is a
//!   ring.
//! - A request waits at most its timeout; when the server goes away every waiting request ends
//!   at once with [`UpstreamError::Closed`], carrying the exit status and recent stderr.
//! - A request is cancelled when its caller's `cancel` flag is set (polled at least every
//!   [`SLICE`](super::wait::SLICE), 50 ms) or its timeout passes: it leaves the pending map,
//!   the server is told with `notifications/cancelled` (best effort, never for `initialize`),
//!   and the call ends with [`UpstreamError::Cancelled`] or [`UpstreamError::Timeout`] (the
//!   wait is [`Pending::wait`], shared with the legacy SSE transport).
//! - Dropping the transport kills the server's process group.

use std::io::{BufReader, Read};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use coremcp_spawn::{Running, Spec};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};

use super::lines::{Line, Lines};
use super::pipe::Pipe;
use super::ring::Ring;
use super::rpc::{classify, method_not_found, Incoming, Notices, Refused, UpstreamError};
use super::wait::{lock, Call, Done, Peer, Pending};
use coremcp_wire::mcp::MAX_LINE_BYTES;

/// How much of the server's stderr is kept for reports.
pub(crate) const STDERR_KEPT: usize = 4096;
/// How long a report waits for the last stderr and the exit status of a server that went away.
const SETTLE: Duration = Duration::from_millis(1000);

struct Shared {
    /// Closed when the server's stdout ends.
    pending: Pending,
    /// Never blocks the thread that writes ([`super::pipe`]).
    stdin: Pipe,
    stderr: Mutex<Ring>,
    stderr_done: AtomicBool,
    notices: Arc<Notices>,
}

impl Shared {
    fn write(&self, message: &Value) -> std::io::Result<()> {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin.write_line(line.as_bytes())
    }
}

/// `{"jsonrpc":"2.0","id":ID,"method":METHOD,"params":PARAMS}` and a newline, where `params`
/// is JSON text.
fn request_line(id: u64, method: &str, params: &str) -> String {
    let mut line = String::with_capacity(48 + method.len() + params.len());
    line.push_str(coremcp_wire::rpc::ID_PREFIX);
    // Writing to a String cannot fail.
    let _ = std::fmt::Write::write_fmt(&mut line, format_args!("{id}"));
    line.push_str(",\"method\":");
    coremcp_wire::rpc::push_json_string(&mut line, method);
    line.push_str(",\"params\":");
    line.push_str(params);
    line.push_str("}\n");
    line
}

/// A running stdio server. Requests may come from many threads at once: each waits on its
/// own channel, and the reader thread matches answers by id.
pub struct StdioTransport {
    shared: Arc<Shared>,
    running: Mutex<Running>,
    next_id: AtomicU64,
}

impl StdioTransport {
    /// Starts `command args` with the scrubbed environment plus `env`, in `cwd`.
    pub fn start(spec: &Spec, notices: Arc<Notices>) -> Result<Self, UpstreamError> {
        let mut running = coremcp_spawn::start(spec)?;
        let shared = Arc::new(Shared {
            pending: Pending::default(),
            stdin: Pipe::new(running.stdin.take()),
            stderr: Mutex::new(Ring::new(STDERR_KEPT)),
            stderr_done: AtomicBool::new(false),
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
            running: Mutex::new(running),
            next_id: AtomicU64::new(1),
        })
    }

    /// Whether the server has gone away (its stdout closed).
    pub fn is_closed(&self) -> bool {
        self.shared.pending.is_closed()
    }

    /// Sends a request and waits up to `timeout` for its answer, or until `cancel` is set.
    /// A request given up (timeout or cancel) is cancelled at the server too.
    pub fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
        cancel: &AtomicBool,
    ) -> Result<Value, UpstreamError> {
        self.request_shaped(method, params, timeout, cancel, None)
    }

    /// [`StdioTransport::request`], the answer's result read through `shape`.
    pub(crate) fn request_shaped(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
        cancel: &AtomicBool,
        shape: Option<crate::shape::Shape>,
    ) -> Result<Value, UpstreamError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let pending = &self.shared.pending;
        let Some(answer) = pending.register_shaped(id, shape) else {
            return Err(self.closed(method));
        };
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        if self.shared.write(&message).is_err() {
            pending.forget(id);
            return Err(self.closed(method));
        }
        let call = Call {
            method,
            id,
            timeout,
            deadline: Instant::now() + timeout,
            cancel,
        };
        pending.wait(&call, answer, self)
    }

    /// A fresh request id, for [`StdioTransport::send_detached`].
    pub fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Sends request `id` without waiting: `done` runs on the reader thread with the answer,
    /// or with `None` if the server goes away first (then [`StdioTransport::closed_error`]
    /// says why). An error means it was not sent and `done` will not run. Nothing times it
    /// out: the caller gives up with [`StdioTransport::abandon`].
    /// `params` is JSON text (an object), written as it is.
    pub fn send_detached(
        &self,
        id: u64,
        method: &str,
        params: &str,
        done: Done,
    ) -> Result<(), UpstreamError> {
        let pending = &self.shared.pending;
        if pending.register_done(id, done).is_err() {
            return Err(self.closed(method));
        }
        let line = request_line(id, method, params);
        // A write that fails because the server went away: if the reader already ended the
        // request, `done` has run (with `None`) and answers for it.
        if self.shared.stdin.write_line(line.as_bytes()).is_err() && pending.forget(id) {
            return Err(self.closed(method));
        }
        Ok(())
    }

    /// Gives up detached request `id`: its callback will not run, and the server is told
    /// (unless it had already answered).
    pub fn abandon(&self, id: u64, reason: &str) {
        if self.shared.pending.forget(id) {
            self.tell_cancelled(id, reason);
        }
    }

    /// The error a request ends with because the server went away (waits up to a second for
    /// its exit status).
    pub fn closed_error(&self, method: &str) -> UpstreamError {
        self.closed(method)
    }

    /// Sends a notification.
    pub fn notify(&self, method: &str, params: Option<Value>) -> Result<(), UpstreamError> {
        let mut message = json!({"jsonrpc": "2.0", "method": method});
        if let Some(params) = params {
            message["params"] = params;
        }
        self.shared.write(&message).map_err(|_| self.closed(method))
    }

    /// The last lines the server wrote to stderr.
    pub(crate) fn stderr_excerpt(&self) -> Option<String> {
        // A server that echoes a value taken from Core MCP's environment is shown without it.
        let excerpt = lock(&self.shared.stderr).excerpt()?;
        Some(super::expand::redact(&excerpt).into_owned())
    }

    /// Why the server went away, for its state: the exit status and its recent stderr.
    pub(crate) fn exit_reason(&self) -> String {
        let (status, stderr) = self.exit_details();
        format!("the server exited{status}{stderr}")
    }

    /// Waits briefly for the exit status and the last of stderr of a server that went away,
    /// so a report says why: `(" (exit status: N)", "; recent stderr: …")`, either empty.
    fn exit_details(&self) -> (String, String) {
        let until = Instant::now() + SETTLE;
        let mut status = None;
        while Instant::now() < until {
            if status.is_none() {
                status = lock(&self.running).try_wait().ok().flatten();
            }
            if status.is_some() && self.shared.stderr_done.load(Ordering::Relaxed) {
                break;
            }
            thread::sleep(Duration::from_millis(10));
        }
        (
            status.map_or_else(String::new, |s| format!(" ({s})")),
            stderr_suffix(self.stderr_excerpt()),
        )
    }
}

impl Peer for StdioTransport {
    fn tell_cancelled(&self, id: u64, reason: &str) {
        let params = json!({"requestId": id, "reason": reason});
        let _ = self.notify("notifications/cancelled", Some(params));
    }

    /// The error for a server that went away, with its exit status and recent stderr.
    fn closed(&self, method: &str) -> UpstreamError {
        let (status, stderr) = self.exit_details();
        UpstreamError::Closed {
            method: method.to_owned(),
            status,
            stderr,
        }
    }

    fn stderr(&self) -> String {
        stderr_suffix(self.stderr_excerpt())
    }
}

fn stderr_suffix(excerpt: Option<String>) -> String {
    excerpt.map_or_else(String::new, |text| format!("; recent stderr: {text}"))
}

fn read_stdout(stdout: impl Read, shared: &Shared) {
    let mut lines = Lines::new(BufReader::with_capacity(64 * 1024, stdout), MAX_LINE_BYTES);
    // Held while answers already read wait behind the one being handled, so that a burst
    // reaches a stdio client in one write (the client wakes once for it).
    let mut cork = None;
    while let Ok(Some(line)) = lines.next_line() {
        // Handling a line reads nothing: what is buffered now is what follows it.
        let more = lines.line_buffered();
        if more {
            cork.get_or_insert_with(coremcp_wire::cork::Cork::hold);
        }
        take_line(line, shared);
        if !more {
            cork = None;
        }
    }
    drop(cork);
    shared.pending.close();
}

/// Handles one line of the server's stdout.
fn take_line(line: Line, shared: &Shared) {
    let text = match line {
        Line::Text(text) => text,
        Line::TooLong { bytes, id } => {
            shared.notices.warn(format!(
                "discarded a stdout line of {bytes} bytes (over the {MAX_LINE_BYTES}-byte \
                     limit){}",
                id.map_or_else(String::new, |id| format!(", the answer to request {id}"))
            ));
            // The request it answered ends now, saying why, instead of at its deadline.
            if let Some(id) = id {
                shared.pending.answer(id, Err(Refused::TooLarge { bytes }));
            }
            return;
        }
    };
    if text.iter().all(u8::is_ascii_whitespace) {
        return;
    }
    // The common message, an answer with a result, goes on as text.
    if let Some((id, result)) = result_of(&text) {
        shared.pending.answer_raw(id, Ok(result));
        return;
    }
    let message: Value = match serde_json::from_slice(&text) {
        Ok(message) => message,
        Err(e) => {
            let start: String = String::from_utf8_lossy(&text).chars().take(80).collect();
            shared.notices.warn(format!(
                "ignored a stdout line that is not JSON ({e}): {start}"
            ));
            return;
        }
    };
    match classify(&message) {
        Incoming::Response { id, outcome } => {
            shared.pending.answer(id, outcome.map_err(Refused::from))
        }
        Incoming::Request { id, method } => {
            let _ = shared.write(&method_not_found(&id, &method));
        }
        Incoming::Notification { method } => shared.notices.notification(&method),
        Incoming::Invalid(why) => shared.notices.warn(format!("ignored a message: {why}")),
    }
}

/// The id and the `result` (as text) of a response to one of our requests, read without
/// building a `Value`; `None` for any other message, which is then classified the general way
/// ([`classify`], which reads this kind the same: a numeric id, no method, the result).
pub(super) fn result_of(text: &[u8]) -> Option<(u64, Box<RawValue>)> {
    #[derive(Deserialize)]
    struct Response<'a> {
        #[serde(borrow, default)]
        id: Option<&'a RawValue>,
        #[serde(borrow, default)]
        method: Option<&'a RawValue>,
        #[serde(borrow, default)]
        result: Option<&'a RawValue>,
    }
    // serde reads a struct from an array too: a message is an object.
    if text.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return None;
    }
    let response: Response<'_> = serde_json::from_slice(text).ok()?;
    if response.method.is_some() {
        return None;
    }
    let id = response.id?.get().parse::<u64>().ok()?;
    Some((id, response.result?.to_owned()))
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

    /// The answers read as text are exactly those `classify` reads as a response with a
    /// result, with the same id and the same result.
    #[test]
    fn results_read_as_text_agree_with_classify() {
        let lines = [
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":[]}}"#,
            r#" {"id":8,"result":null}"#,
            r#"{"result":{"a":[1,{"b":2}]},"id":9,"jsonrpc":"2.0"}"#,
            r#"{"id":"7","result":{}}"#,
            r#"{"id":7.5,"result":{}}"#,
            r#"{"id":-1,"result":{}}"#,
            r#"{"id":null,"result":{}}"#,
            r#"{"id":3,"method":"roots/list"}"#,
            r#"{"id":3,"method":"x","result":{}}"#,
            r#"{"id":3,"error":{"code":-1,"message":"no"}}"#,
            r#"{"id":3,"id":4,"result":{}}"#,
            r#"{"method":"notifications/tools/list_changed"}"#,
            r#"[3,null,{}]"#,
            r#"{"id":3}"#,
        ];
        for line in lines {
            let classified = serde_json::from_str::<Value>(line).map(|m| classify(&m));
            let expected = match classified {
                Ok(Incoming::Response {
                    id,
                    outcome: Ok(result),
                }) => Some((id, result)),
                _ => None,
            };
            let read = result_of(line.as_bytes())
                .map(|(id, raw)| (id, serde_json::from_str::<Value>(raw.get()).expect("json")));
            // A line with an id twice, and a `null` result (what `Option` reads as absent), are
            // left to the general path.
            if line.contains(r#""id":3,"id":4"#) || line.contains(r#""result":null"#) {
                assert_eq!(read, None, "{line}");
                continue;
            }
            assert_eq!(read, expected, "{line}");
        }
    }

    static NEVER: AtomicBool = AtomicBool::new(false);

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
        let (t, notices) = server(
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
        let first = t.request("a", json!({}), Duration::from_secs(10), &NEVER);
        assert_eq!(first.expect("answer"), json!({"ok": true}));
        let echoed = t
            .request("b", json!({}), Duration::from_secs(10), &NEVER)
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
        let (t, _) = server("echo starting >&2; sleep 30");
        let err = t
            .request("x", json!({}), Duration::from_millis(200), &NEVER)
            .expect_err("times out");
        assert!(matches!(err, UpstreamError::Timeout { .. }), "{err}");
        assert!(err.to_string().contains("recent stderr: starting"), "{err}");

        let (t, _) = server("read line; echo 'fatal: bad config' >&2; exit 4");
        let started = Instant::now();
        let err = t
            .request("initialize", json!({}), Duration::from_secs(20), &NEVER)
            .expect_err("closed");
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(
            err.to_string(),
            "the server closed the connection (exit status: 4) before answering initialize; \
             recent stderr: fatal: bad config"
        );
        // Later requests fail at once.
        let err = t
            .request("again", json!({}), Duration::from_secs(20), &NEVER)
            .expect_err("closed");
        assert!(matches!(err, UpstreamError::Closed { .. }), "{err}");
    }

    #[test]
    fn a_cancelled_request_returns_at_once_and_the_server_is_told() {
        // Answers nothing until it reads the cancellation, then echoes it back as a request
        // of its own (which the client answers -32601) so the test can see it arrived.
        let (t, _) = server(
            r#"read req
               read note
               echo "$note" >&2
               sleep 30"#,
        );
        let cancel = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&cancel);
        let setter = thread::spawn(move || {
            thread::sleep(Duration::from_millis(150));
            flag.store(true, Ordering::Relaxed);
        });
        let started = Instant::now();
        let err = t
            .request("tools/call", json!({}), Duration::from_secs(20), &cancel)
            .expect_err("cancelled");
        setter.join().expect("setter");
        assert!(matches!(err, UpstreamError::Cancelled { .. }), "{err}");
        assert!(started.elapsed() < Duration::from_secs(2));
        let until = Instant::now() + Duration::from_secs(5);
        while !t
            .stderr_excerpt()
            .unwrap_or_default()
            .contains("notifications/cancelled")
        {
            assert!(Instant::now() < until, "{:?}", t.stderr_excerpt());
            thread::sleep(Duration::from_millis(20));
        }
        let seen = t.stderr_excerpt().unwrap_or_default();
        assert!(seen.contains(r#""requestId":1"#), "{seen}");
    }

    #[test]
    fn requests_from_many_threads_are_answered_out_of_order() {
        // Reads two requests, answers the second first.
        let (t, _) = server(
            r#"read a
               read b
               echo '{"jsonrpc":"2.0","id":2,"result":"second"}'
               echo '{"jsonrpc":"2.0","id":1,"result":"first"}'
               sleep 30"#,
        );
        let t = Arc::new(t);
        let first = {
            let t = Arc::clone(&t);
            thread::spawn(move || t.request("a", json!({}), Duration::from_secs(10), &NEVER))
        };
        thread::sleep(Duration::from_millis(100));
        let second = t.request("b", json!({}), Duration::from_secs(10), &NEVER);
        assert_eq!(second.expect("second"), json!("second"));
        assert_eq!(
            first.join().expect("thread").expect("first"),
            json!("first")
        );
    }
}
