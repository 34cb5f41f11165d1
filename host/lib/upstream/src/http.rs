//! The Streamable HTTP transport to an upstream server (`type: "http"`): each request is a POST
//! answered with JSON or an SSE stream, on a kept-alive connection ([`Conn`]), with the
//! server's `Mcp-Session-Id` sent back on every later request.
//!
//! The transport is shared (`&self`, `Send + Sync`): many threads may have requests in flight
//! at once. Each exchange takes an idle kept-alive connection from a small [`Pool`] (shared
//! with the legacy SSE transport), or connects a new one, and puts it back afterwards if it can
//! carry another request (at most [`MAX_IDLE`] are kept). Request ids come from an atomic
//! counter; the session id, the negotiated version and the `initialize` parameters sit behind
//! a mutex, read once per request.
//!
//! Invariants:
//! - What is read per answer is bounded by [`MAX_BODY`] (8 MB), a JSON body or the whole
//!   event stream alike.
//! - When the server answers 404 for our session (it restarted or dropped it), the session is
//!   set up again once (`initialize` with the same parameters, then `initialized`) and the
//!   request resent; a second 404 is an error. Setting up again never runs twice at once:
//!   requests that see the 404 together queue on one lock, and only the first whose stale
//!   session is still the current one sets it up; the others resend on the new session. The
//!   new session is used by other requests only once `initialized` was sent on it.
//! - A request is cancelled when its caller's `cancel` flag is set (polled while waiting, at
//!   least every 100 ms) or its timeout passes: once it was sent, the server is told with
//!   `notifications/cancelled` (best effort, on another connection, within [`CANCEL_NOTICE`];
//!   never for `initialize`), its connection is dropped, and the call ends with
//!   [`UpstreamError::Cancelled`] or [`UpstreamError::Timeout`].
//! - A request of the server's inside an event stream is answered -32601 on its own connection;
//!   notifications are noted ([`Notices`]).
//! - Configured `headers` go on every request; nothing here logs them.
//! - Dropping the transport ends the session with a DELETE (best effort, at most ~1 s).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::rpc::{classify, method_not_found, Incoming, Notices, UpstreamError};
use super::wait::lock;
use coremcp_net::client::{Conn, HttpError, Response, Url};
use coremcp_net::mcp::{self, Framing, ReadError};

/// The longest wait for a TCP connection.
const CONNECT: Duration = Duration::from_secs(10);
/// How long `initialize` may take when the session is set up again.
const HANDSHAKE: Duration = Duration::from_secs(30);
/// The most idle kept-alive connections a [`Pool`] keeps for later requests.
pub(crate) const MAX_IDLE: usize = 16;
/// How long telling the server about a cancelled request may take, connecting included.
pub(crate) const CANCEL_NOTICE: Duration = Duration::from_secs(1);
/// How often a request waiting for another thread to set the session up looks at its flag.
const POLL: Duration = Duration::from_millis(20);
/// How long to wait before resuming a stream that named no `retry:`.
const DEFAULT_RETRY: Duration = Duration::from_secs(1);
/// Resumptions of one request's stream at most (each still within the call's deadline).
const MAX_RESUMES: usize = 16;

/// An argument's path in a tool's arguments, and the `Mcp-Param-<token>` it is mirrored in.
type Annotation = (Vec<String>, String);

/// A Streamable HTTP session with one server, shared by every thread that calls it.
pub(crate) struct HttpTransport {
    url: Url,
    headers: Vec<(String, String)>,
    /// Kept-alive connections not in use.
    pool: Pool,
    state: Mutex<State>,
    /// Held while the session is set up again after a 404, so that happens once at a time.
    renewing: Mutex<()>,
    next_id: AtomicU64,
    notices: Arc<Notices>,
    /// The `x-mcp-header` annotations of each tool the server listed: the argument's path and
    /// the `Mcp-Param-<token>` it is mirrored in (2026).
    param_tokens: Mutex<std::collections::HashMap<String, Vec<Annotation>>>,
}

#[derive(Default)]
struct State {
    /// The server speaks MCP 2026-07-28 with us (sessionless).
    modern: bool,
    session: Option<String>,
    /// The negotiated version, sent as `MCP-Protocol-Version` after `initialize`.
    version: Option<String>,
    /// The parameters of our `initialize`, to set the session up again after a 404.
    init: Option<Value>,
}

/// The session headers one message went with.
#[derive(Clone, Default)]
struct Sent {
    session: Option<String>,
    version: Option<String>,
    /// MCP 2026-07-28: no session, and `Mcp-Method` / `Mcp-Name` mirror each message.
    modern: bool,
}

/// How one POST was answered.
enum Answer {
    Outcome(Result<Value, (i64, String)>),
    UnknownSession,
    Accepted,
}

/// What reading one HTTP answer gave: the answer, or a stream to resume.
enum Read {
    Done(Answer),
    /// The event stream closed before the response, having named its last event: resume it
    /// with `GET` and `Last-Event-ID` after `retry` (Streamable HTTP, "Resumability").
    Resume {
        last_id: String,
        retry: Option<Duration>,
    },
}

/// Idle kept-alive connections to one server, at most [`MAX_IDLE`]: a request takes one (or
/// connects anew) and puts it back afterwards if it can carry another.
pub struct Pool {
    url: Url,
    idle: Mutex<Vec<Conn>>,
}

impl Pool {
    /// An empty pool of connections to `url`'s server.
    pub fn new(url: Url) -> Self {
        Self {
            url,
            idle: Mutex::new(Vec::new()),
        }
    }

    /// An idle connection that can still carry a request, or a new one (connecting within
    /// what is left before `deadline`, at most 10 s).
    pub fn take(&self, deadline: Instant) -> Result<Conn, HttpError> {
        loop {
            let Some(mut conn) = lock(&self.idle).pop() else {
                break;
            };
            if conn.alive() {
                return Ok(conn);
            }
        }
        Conn::connect(&self.url, remaining(deadline).min(CONNECT))
    }

    /// Keeps `conn` for a later request if it can carry one and the pool has room; a
    /// connection left mid-answer (error, cancel) is not alive, so it is dropped here.
    pub(crate) fn put(&self, mut conn: Conn) {
        if conn.alive() {
            let mut idle = lock(&self.idle);
            if idle.len() < MAX_IDLE {
                idle.push(conn);
            }
        }
    }

    /// How many idle connections are kept.
    #[cfg(test)]
    pub fn idle(&self) -> usize {
        lock(&self.idle).len()
    }
}

impl HttpTransport {
    pub fn new(
        url: &str,
        headers: &[(String, String)],
        notices: Arc<Notices>,
    ) -> Result<Self, UpstreamError> {
        let url = Url::parse(url).map_err(|e| UpstreamError::Protocol(e.to_string()))?;
        Ok(Self {
            pool: Pool::new(url.clone()),
            url,
            headers: headers.to_vec(),
            state: Mutex::new(State::default()),
            renewing: Mutex::new(()),
            next_id: AtomicU64::new(1),
            notices,
            param_tokens: Mutex::new(std::collections::HashMap::new()),
        })
    }

    #[cfg(test)]
    /// Sends a request and waits up to `timeout` for its answer, or until `cancel` is set.
    /// Many threads may call this at once; their requests run in parallel.
    pub fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
        cancel: &AtomicBool,
    ) -> Result<Value, UpstreamError> {
        self.request_shaped(method, params, timeout, cancel, None)
    }

    /// [`HttpTransport::request`], the answer's result read through `shape`.
    pub(crate) fn request_shaped(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
        cancel: &AtomicBool,
        shape: Option<crate::shape::Shape>,
    ) -> Result<Value, UpstreamError> {
        let deadline = Instant::now() + timeout;
        if method == "initialize" {
            lock(&self.state).init = Some(params.clone());
            let (result, session) = self.initialize(params, deadline, timeout, cancel)?;
            let mut state = lock(&self.state);
            state.session = session;
            state.version = version_of(&result);
            return Ok(result);
        }
        let mut set_up_again = false;
        loop {
            let sent = self.current();
            match self
                .call(
                    method,
                    &params,
                    &sent,
                    (deadline, timeout),
                    cancel,
                    shape.as_ref(),
                )?
                .0
            {
                Answer::Outcome(Ok(result)) => return Ok(result),
                Answer::Outcome(Err((code, message))) => {
                    return Err(UpstreamError::Rpc {
                        method: method.to_owned(),
                        code,
                        message,
                    })
                }
                Answer::UnknownSession if !set_up_again => {
                    if let Some(stale) = &sent.session {
                        set_up_again = true;
                        self.set_up_again(stale, method, deadline, timeout, cancel)?;
                        continue;
                    }
                    return Err(not_found(method));
                }
                Answer::UnknownSession => return Err(not_found(method)),
                Answer::Accepted => {
                    return Err(UpstreamError::Protocol(format!(
                        "{method}: the server answered 202 Accepted to a request"
                    )))
                }
            }
        }
    }

    /// Speaks MCP 2026-07-28 (`version`, no session) from now on, or the 2025 revisions again
    /// (`None`: after a probe the server did not answer as a modern one).
    pub(crate) fn set_modern(&self, version: Option<&str>) {
        let mut state = lock(&self.state);
        state.modern = version.is_some();
        state.version = version.map(str::to_owned);
        state.session = None;
    }

    /// Takes note of the tools the server listed, for the `Mcp-Param-*` headers their
    /// `x-mcp-header` annotations ask a 2026 call of them to carry.
    pub(crate) fn note_tools(&self, tools: &[Value]) {
        let tokens = tools
            .iter()
            .filter_map(|tool| {
                let name = tool["name"].as_str()?;
                let mut found = Vec::new();
                annotations(&tool["inputSchema"], &mut Vec::new(), &mut found);
                (!found.is_empty()).then(|| (name.to_owned(), found))
            })
            .collect();
        *lock(&self.param_tokens) = tokens;
    }

    /// The `Mcp-Param-*` headers of a 2026 `tools/call` message.
    fn param_headers(&self, message: &Value) -> Vec<(String, String)> {
        if message["method"] != "tools/call" {
            return Vec::new();
        }
        let params = &message["params"];
        let Some(name) = params["name"].as_str() else {
            return Vec::new();
        };
        let tokens = lock(&self.param_tokens);
        let Some(annotated) = tokens.get(name) else {
            return Vec::new();
        };
        annotated
            .iter()
            .filter_map(|(path, token)| {
                let value = path
                    .iter()
                    .try_fold(&params["arguments"], |node, key| node.get(key))?;
                let text = match value {
                    Value::Bool(b) => b.to_string(),
                    Value::Number(n) => n.to_string(),
                    Value::String(s) => s.clone(),
                    _ => return None,
                };
                Some((format!("Mcp-Param-{token}"), mcp::header_value(&text)))
            })
            .collect()
    }

    /// Sends a notification (answered 202 or 200).
    pub fn notify(&self, method: &str, params: Option<Value>) -> Result<(), UpstreamError> {
        let sent = self.current();
        self.notify_on(method, params, &sent, Instant::now() + HANDSHAKE)
    }

    fn notify_on(
        &self,
        method: &str,
        params: Option<Value>,
        sent: &Sent,
        deadline: Instant,
    ) -> Result<(), UpstreamError> {
        let mut message = json!({"jsonrpc": "2.0", "method": method});
        if let Some(params) = params {
            message["params"] = params;
        }
        let never = AtomicBool::new(false);
        match self.post(&message, None, sent, deadline, &never, None) {
            Ok(_) => Ok(()),
            Err(Failure::Http(HttpError::TooLarge { bytes })) => Err(UpstreamError::TooLarge {
                method: method.to_owned(),
                bytes,
            }),
            Err(Failure::Http(source)) => Err(UpstreamError::Http {
                method: method.to_owned(),
                source,
            }),
            Err(Failure::Other(e)) => Err(e),
        }
    }

    /// The session headers to send now.
    fn current(&self) -> Sent {
        let state = lock(&self.state);
        Sent {
            session: state.session.clone(),
            version: state.version.clone(),
            modern: state.modern,
        }
    }

    /// Sends `initialize` with no session; its result and the session the server named.
    fn initialize(
        &self,
        params: Value,
        deadline: Instant,
        timeout: Duration,
        cancel: &AtomicBool,
    ) -> Result<(Value, Option<String>), UpstreamError> {
        let method = "initialize";
        match self.call(
            method,
            &params,
            &Sent::default(),
            (deadline, timeout),
            cancel,
            None,
        )? {
            (Answer::Outcome(Ok(result)), session) => Ok((result, session)),
            (Answer::Outcome(Err((code, message))), _) => Err(UpstreamError::Rpc {
                method: method.to_owned(),
                code,
                message,
            }),
            (Answer::UnknownSession, _) => Err(not_found(method)),
            (Answer::Accepted, _) => Err(UpstreamError::Protocol(format!(
                "{method}: the server answered 202 Accepted to a request"
            ))),
        }
    }

    /// Sets the session up again after the server answered 404 to a request sent on `stale`,
    /// unless another request already did (then the current session is a new one).
    fn set_up_again(
        &self,
        stale: &str,
        method: &str,
        deadline: Instant,
        timeout: Duration,
        cancel: &AtomicBool,
    ) -> Result<(), UpstreamError> {
        let _renewing = self.wait_renewing(method, deadline, timeout, cancel)?;
        let params = {
            let state = lock(&self.state);
            if state.session.as_deref() != Some(stale) {
                return Ok(());
            }
            state.init.clone().ok_or_else(|| {
                UpstreamError::Protocol("the session was lost before it was set up".into())
            })?
        };
        let (result, session) =
            self.initialize(params, Instant::now() + HANDSHAKE, HANDSHAKE, cancel)?;
        let fresh = Sent {
            session,
            version: version_of(&result),
            modern: false,
        };
        self.notify_on(
            "notifications/initialized",
            None,
            &fresh,
            Instant::now() + HANDSHAKE,
        )?;
        let mut state = lock(&self.state);
        state.session = fresh.session;
        state.version = fresh.version;
        Ok(())
    }

    /// Takes the lock of setting the session up again, polling `cancel` and the deadline while
    /// another request holds it.
    fn wait_renewing(
        &self,
        method: &str,
        deadline: Instant,
        timeout: Duration,
        cancel: &AtomicBool,
    ) -> Result<MutexGuard<'_, ()>, UpstreamError> {
        loop {
            match self.renewing.try_lock() {
                Ok(guard) => return Ok(guard),
                Err(TryLockError::Poisoned(e)) => return Ok(e.into_inner()),
                Err(TryLockError::WouldBlock) => {}
            }
            if cancel.load(Ordering::Relaxed) {
                return Err(UpstreamError::Cancelled {
                    method: method.to_owned(),
                });
            }
            if Instant::now() >= deadline {
                return Err(timed_out(method, timeout));
            }
            thread::sleep(POLL);
        }
    }

    /// Sends one request on `sent` and reads its answer; when the caller cancels or the
    /// deadline passes after it was sent, tells the server and ends with the matching error.
    fn call(
        &self,
        method: &str,
        params: &Value,
        sent: &Sent,
        (deadline, timeout): (Instant, Duration),
        cancel: &AtomicBool,
        shape: Option<&crate::shape::Shape>,
    ) -> Result<(Answer, Option<String>), UpstreamError> {
        if cancel.load(Ordering::Relaxed) {
            return Err(UpstreamError::Cancelled {
                method: method.to_owned(),
            });
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        match self.post(&message, Some(id), sent, deadline, cancel, shape) {
            Ok((answer, session)) => {
                if let Some(new) = &session {
                    self.adopt(sent, new);
                }
                Ok((answer, session))
            }
            Err(Failure::Http(HttpError::Cancelled)) => {
                self.tell_cancelled(method, id, sent, "the caller cancelled the request");
                Err(UpstreamError::Cancelled {
                    method: method.to_owned(),
                })
            }
            Err(Failure::Http(HttpError::Timeout)) => {
                let reason = format!("no answer within {} ms", timeout.as_millis());
                self.tell_cancelled(method, id, sent, &reason);
                Err(timed_out(method, timeout))
            }
            Err(Failure::Http(HttpError::TooLarge { bytes })) => Err(UpstreamError::TooLarge {
                method: method.to_owned(),
                bytes,
            }),
            Err(Failure::Http(source)) => Err(UpstreamError::Http {
                method: method.to_owned(),
                source,
            }),
            Err(Failure::Other(e)) => Err(e),
        }
    }

    /// A session id the server named on an answer other than `initialize`'s replaces the one
    /// the request was sent with, unless another request changed it meanwhile.
    fn adopt(&self, sent: &Sent, new: &str) {
        if sent.session.is_none() || sent.session.as_deref() == Some(new) {
            return;
        }
        let mut state = lock(&self.state);
        if state.session == sent.session {
            state.session = Some(new.to_owned());
        }
    }

    /// Tells the server request `id` is abandoned (best effort, within [`CANCEL_NOTICE`]).
    fn tell_cancelled(&self, method: &str, id: u64, sent: &Sent, reason: &str) {
        if method == "initialize" {
            return; // MCP: `initialize` is never cancelled.
        }
        let params = json!({"requestId": id, "reason": reason});
        let _ = self.notify_on(
            "notifications/cancelled",
            Some(params),
            sent,
            Instant::now() + CANCEL_NOTICE,
        );
    }

    /// The headers of a message on `sent` (with its routing headers for a 2026 `message`),
    /// and the configured ones.
    fn headers(&self, sent: &Sent, message: Option<&Value>) -> Vec<(String, String)> {
        let modern = message.filter(|_| sent.modern);
        let mut headers = mcp::headers(sent.version.as_deref(), sent.session.as_deref(), modern);
        headers.extend(self.headers.iter().cloned());
        headers
    }

    /// POSTs one message with the session headers of `sent`; for a request (`id`), reads its
    /// answer. Also returns the session id the server named, if any.
    fn post(
        &self,
        message: &Value,
        id: Option<u64>,
        sent: &Sent,
        deadline: Instant,
        cancel: &AtomicBool,
        shape: Option<&crate::shape::Shape>,
    ) -> Result<(Answer, Option<String>), Failure> {
        let mut conn = self.pool.take(deadline)?;
        let mut headers = self.headers(sent, Some(message));
        if sent.modern {
            headers.extend(self.param_headers(message));
        }
        let pairs: Vec<(&str, &str)> = headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        let body = message.to_string();
        let outcome = (|| {
            let mut response =
                conn.exchange(&self.url, "POST", &pairs, body.as_bytes(), deadline, cancel)?;
            let session = response.header("mcp-session-id").map(str::to_owned);
            let reading = Reading {
                notices: &self.notices,
                url: &self.url,
                headers: &pairs,
                shape,
            };
            let answer = read_answer(&mut response, id, true, deadline, cancel, &reading)?;
            Ok::<_, Failure>((answer, session))
        })();
        // A connection left mid-answer (error, cancel) is not alive, so it is dropped here.
        self.pool.put(conn);
        match outcome? {
            (Read::Done(answer), session) => Ok((answer, session)),
            (Read::Resume { last_id, retry }, session) => {
                let sent = Sent {
                    session: session.clone().or_else(|| sent.session.clone()),
                    version: sent.version.clone(),
                    modern: sent.modern,
                };
                // Only a request's stream is resumed: a notification has no stream to wait on.
                let id = id.unwrap_or_default();
                let answer = self.resume(id, &sent, (last_id, retry), deadline, cancel, shape)?;
                Ok((answer, session))
            }
        }
    }

    /// Resumes the event stream of request `id` with `GET` and `Last-Event-ID`, waiting the
    /// `retry` the server asked for each time, until its response arrives, the server offers
    /// no resumption, or the deadline passes.
    fn resume(
        &self,
        id: u64,
        sent: &Sent,
        (mut last_id, mut retry): (String, Option<Duration>),
        deadline: Instant,
        cancel: &AtomicBool,
        shape: Option<&crate::shape::Shape>,
    ) -> Result<Answer, Failure> {
        for _ in 0..MAX_RESUMES {
            let wake = Instant::now() + retry.unwrap_or(DEFAULT_RETRY);
            while Instant::now() < wake {
                if cancel.load(Ordering::Relaxed) {
                    return Err(HttpError::Cancelled.into());
                }
                if Instant::now() >= deadline {
                    return Err(HttpError::Timeout.into());
                }
                std::thread::sleep(POLL.min(wake.saturating_duration_since(Instant::now())));
            }
            let mut headers = self.headers(sent, None);
            headers.push(("Last-Event-ID".to_owned(), last_id.clone()));
            let pairs: Vec<(&str, &str)> = headers
                .iter()
                .map(|(n, v)| (n.as_str(), v.as_str()))
                .collect();
            let mut conn = self.pool.take(deadline)?;
            let answer = (|| {
                let mut response =
                    conn.exchange(&self.url, "GET", &pairs, b"", deadline, cancel)?;
                if response.status == 405 {
                    let _ = response.read_all(deadline, cancel);
                    return Err(Failure::Other(UpstreamError::Protocol(format!(
                        "the event stream ended without the response to request {id}, and the \
                         server does not offer resuming it (GET answered 405)"
                    ))));
                }
                let reading = Reading {
                    notices: &self.notices,
                    url: &self.url,
                    headers: &pairs,
                    shape,
                };
                read_answer(&mut response, Some(id), false, deadline, cancel, &reading)
            })();
            self.pool.put(conn);
            match answer? {
                Read::Resume {
                    last_id: next,
                    retry: asked,
                } => {
                    last_id = next;
                    retry = asked.or(retry);
                }
                Read::Done(answer) => return Ok(answer),
            }
        }
        Err(Failure::Other(UpstreamError::Protocol(format!(
            "the event stream of request {id} ended {MAX_RESUMES} times without its response"
        ))))
    }
}

impl Drop for HttpTransport {
    /// Ends the session politely (DELETE), best effort and briefly.
    fn drop(&mut self) {
        let Some(session) = lock(&self.state).session.take() else {
            return;
        };
        let deadline = Instant::now() + Duration::from_secs(1);
        let never = AtomicBool::new(false);
        if let Ok(mut conn) = self.pool.take(deadline) {
            let mut headers = vec![("Mcp-Session-Id", session.as_str())];
            headers.extend(self.headers.iter().map(|(n, v)| (n.as_str(), v.as_str())));
            if let Ok(mut response) =
                conn.exchange(&self.url, "DELETE", &headers, b"", deadline, &never)
            {
                let _ = response.read_all(deadline, &never);
            }
        }
    }
}

enum Failure {
    Http(HttpError),
    Other(UpstreamError),
}

impl From<HttpError> for Failure {
    fn from(e: HttpError) -> Self {
        Self::Http(e)
    }
}

fn version_of(result: &Value) -> Option<String> {
    result
        .get("protocolVersion")
        .and_then(Value::as_str)
        .map(str::to_owned)
}

fn not_found(method: &str) -> UpstreamError {
    UpstreamError::Protocol(format!("{method}: the server answered HTTP 404"))
}

fn timed_out(method: &str, timeout: Duration) -> UpstreamError {
    UpstreamError::Timeout {
        method: method.to_owned(),
        timeout,
        stderr: String::new(),
    }
}

fn remaining(deadline: Instant) -> Duration {
    deadline
        .saturating_duration_since(Instant::now())
        .max(Duration::from_millis(1))
}

/// Where an answer is read for: the server's notices, and its URL and headers (a request the
/// server sends on the stream is answered through them).
struct Reading<'a> {
    notices: &'a Notices,
    url: &'a Url,
    headers: &'a [(&'a str, &'a str)],
    /// How the response's result becomes its value (`None`: all of it).
    shape: Option<&'a crate::shape::Shape>,
}

/// Reads the answer to request `id` (or the acknowledgement of a notification) the way every
/// client of ours does (`coremcp_net::mcp`): each message of it is handled here — the response
/// to `id` is the outcome, a request of the server's is answered -32601, a notification noted.
/// With `drain`, a stream is read to its end after the response.
fn read_answer(
    response: &mut Response<'_>,
    id: Option<u64>,
    drain: bool,
    deadline: Instant,
    cancel: &AtomicBool,
    reading: &Reading<'_>,
) -> Result<Read, Failure> {
    let Reading {
        notices,
        url,
        headers,
        shape,
    } = *reading;
    let on_message = |bytes: &[u8], framing: Framing| {
        // The response, read as a shape asks: its result never parsed whole.
        if let (Some(shape), Some(id)) = (shape, id) {
            if let Some((got, result)) =
                super::stdio::result_of(bytes).filter(|(got, _)| *got == id)
            {
                debug_assert_eq!(got, id);
                return shape(&result).map(|value| Some(Ok(value)));
            }
        }
        let message: Value = match serde_json::from_slice(bytes) {
            Ok(message) => message,
            Err(_) if framing == Framing::Event => {
                notices.warn("ignored an event whose data is not JSON".into());
                return Ok(None);
            }
            Err(e) => return Err(format!("the answer is not JSON: {e}")),
        };
        Ok(id.and_then(|id| handle(&message, id, notices, url, headers, deadline)))
    };
    match mcp::read_answer(response, id, drain, deadline, cancel, on_message) {
        Ok(mcp::Read::Reply(outcome)) => Ok(Read::Done(Answer::Outcome(outcome))),
        Ok(mcp::Read::UnknownSession) => Ok(Read::Done(Answer::UnknownSession)),
        Ok(mcp::Read::Accepted) => Ok(Read::Done(Answer::Accepted)),
        Ok(mcp::Read::Resume { last_id, retry }) => Ok(Read::Resume { last_id, retry }),
        Err(ReadError::Http(e)) => Err(Failure::Http(e)),
        Err(e @ ReadError::Status { .. }) => Err(Failure::Http(HttpError::Answer(e.to_string()))),
        Err(e) => Err(Failure::Other(UpstreamError::Protocol(e.to_string()))),
    }
}

/// The `x-mcp-header` annotations of a schema: for each property reached through
/// `properties` alone whose type is a string, integer or boolean, its path and token.
fn annotations(schema: &Value, path: &mut Vec<String>, found: &mut Vec<Annotation>) {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    for (key, property) in properties {
        path.push(key.clone());
        let typed = matches!(
            property["type"].as_str(),
            Some("string" | "integer" | "boolean")
        );
        match property["x-mcp-header"].as_str() {
            Some(token) if typed && !token.is_empty() => {
                found.push((path.clone(), token.to_owned()))
            }
            _ => annotations(property, path, found),
        }
        path.pop();
    }
}

pub(super) fn handle(
    message: &Value,
    id: u64,
    notices: &Notices,
    url: &Url,
    headers: &[(&str, &str)],
    deadline: Instant,
) -> Option<Result<Value, (i64, String)>> {
    match classify(message) {
        Incoming::Response { id: got, outcome } if got == id => Some(outcome),
        Incoming::Response { id: got, .. } => {
            notices.warn(format!("ignored a response to request {got}"));
            None
        }
        Incoming::Request { id, method } => {
            // On its own connection: this one is busy with the stream.
            let answer = method_not_found(&id, &method).to_string();
            let never = AtomicBool::new(false);
            if let Ok(mut conn) = Conn::connect(url, remaining(deadline).min(CONNECT)) {
                if let Ok(mut response) =
                    conn.exchange(url, "POST", headers, answer.as_bytes(), deadline, &never)
                {
                    let _ = response.read_all(deadline, &never);
                }
            }
            None
        }
        Incoming::Notification { method } => {
            notices.notification(&method);
            None
        }
        Incoming::Invalid(why) => {
            notices.warn(format!("ignored a message: {why}"));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{
        accepted, reply, result, serve, shareable, until, Hangs, SlowFast,
    };
    use super::*;
    use coremcp_net::client::MAX_BODY;

    fn transport(base: &str) -> Arc<HttpTransport> {
        let notices = Arc::new(Notices::default());
        Arc::new(HttpTransport::new(&format!("{base}/mcp"), &[], notices).expect("transport"))
    }

    #[test]
    fn the_transport_can_be_shared_between_threads() {
        shareable::<HttpTransport>();
    }

    #[test]
    fn requests_in_flight_at_once_do_not_wait_for_each_other() {
        let race = SlowFast::default();
        // "slow" is answered only once "fast" was: serialized requests would make its wait
        // run out.
        let base = serve(race.server(|seen, stream, value| {
            reply(stream, 200, &[], &result(seen, value));
        }));
        let t = transport(&base);
        race.check(&t, HttpTransport::request);
        // Both connections were kept for later requests.
        assert_eq!(t.pool.idle(), 2);
    }

    #[test]
    fn a_cancelled_request_ends_at_once_and_the_server_is_told() {
        let hangs = Hangs::default();
        let t = transport(&serve(hangs.server(false)));
        hangs.cancel(&*t, HttpTransport::request);
    }

    #[test]
    fn a_silent_server_times_out_and_is_told() {
        let hangs = Hangs::default();
        let t = transport(&serve(hangs.server(false)));
        hangs.time_out(&*t, HttpTransport::request, 1);
    }

    #[test]
    fn a_lost_session_is_set_up_again_once_for_requests_that_see_it_together() {
        const CALLS: usize = 8;
        #[derive(Default)]
        struct Server {
            initialized: Vec<String>,
            stale: usize,
            deleted: Vec<String>,
            init_params: Vec<Value>,
        }
        let server: Arc<Mutex<Server>> = Arc::default();
        let base = {
            let server = Arc::clone(&server);
            serve(move |seen, stream| {
                let session = seen.header("mcp-session-id").map(str::to_owned);
                if seen.verb == "DELETE" {
                    lock(&server).deleted.extend(session);
                    reply(stream, 200, &[], &Value::Null);
                    return;
                }
                match (seen.method(), session.as_deref()) {
                    ("initialize", None) => {
                        let name = {
                            let mut server = lock(&server);
                            server.init_params.push(seen.body["params"].clone());
                            format!("s{}", server.init_params.len())
                        };
                        let answer = result(seen, json!({"protocolVersion": "2025-06-18"}));
                        reply(stream, 200, &[("Mcp-Session-Id", &name)], &answer);
                    }
                    ("notifications/initialized", Some(s)) => {
                        lock(&server).initialized.push(s.to_owned());
                        accepted(stream);
                    }
                    ("ping", Some("s1")) => {
                        // s1 is forgotten: answer 404 once every call has seen it, so they
                        // all find the session lost together.
                        lock(&server).stale += 1;
                        until(Duration::from_secs(5), || lock(&server).stale >= CALLS);
                        reply(stream, 404, &[], &json!({"error": "unknown session"}));
                    }
                    ("ping", Some(s)) => {
                        let version = seen.header("mcp-protocol-version").unwrap_or("");
                        let answer = result(seen, json!({"session": s, "version": version}));
                        reply(stream, 200, &[], &answer);
                    }
                    _ => reply(stream, 400, &[], &json!({"error": "unexpected"})),
                }
            })
        };
        let t = transport(&base);
        let never = AtomicBool::new(false);
        let params = json!({"protocolVersion": "2025-06-18", "clientInfo": {"name": "t"}});
        t.request("initialize", params.clone(), Duration::from_secs(5), &never)
            .expect("initialize");
        t.notify("notifications/initialized", None)
            .expect("initialized");
        let calls: Vec<_> = (0..CALLS)
            .map(|_| {
                let t = Arc::clone(&t);
                thread::spawn(move || {
                    let never = AtomicBool::new(false);
                    t.request("ping", json!({}), Duration::from_secs(20), &never)
                })
            })
            .collect();
        for call in calls {
            let answer = call.join().expect("thread").expect("ping");
            assert_eq!(answer, json!({"session": "s2", "version": "2025-06-18"}));
        }
        {
            let server = lock(&server);
            assert_eq!(server.stale, CALLS);
            assert_eq!(server.init_params, vec![params.clone(), params]);
            assert_eq!(server.initialized, vec!["s1", "s2"]);
        }
        drop(t);
        assert_eq!(lock(&server).deleted, vec!["s2"]);
    }

    /// Answers `initialize` (session `s`) and `notifications/initialized`; `None` otherwise.
    fn handshake(
        seen: &super::super::testing::Seen,
        stream: &mut std::net::TcpStream,
    ) -> Option<()> {
        match seen.method() {
            "initialize" => {
                let answer = result(seen, json!({"protocolVersion": "2025-06-18"}));
                reply(stream, 200, &[("Mcp-Session-Id", "s")], &answer);
            }
            "notifications/initialized" => accepted(stream),
            _ => return None,
        }
        Some(())
    }

    #[test]
    fn a_redirect_is_not_followed_so_the_headers_never_leave_the_origin() {
        let elsewhere = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let seen_there = Arc::clone(&elsewhere);
        let other = serve(move |_, stream| {
            seen_there.fetch_add(1, Ordering::Relaxed);
            reply(stream, 200, &[], &json!({}));
        });
        let target = format!("{other}/mcp");
        let base = serve(move |seen, stream| {
            if handshake(seen, stream).is_none() {
                reply(stream, 307, &[("Location", target.as_str())], &Value::Null);
            }
        });
        let notices = Arc::new(Notices::default());
        let headers = [("Authorization".to_owned(), "Bearer secret".to_owned())];
        let t = HttpTransport::new(&format!("{base}/mcp"), &headers, notices).expect("transport");
        let never = AtomicBool::new(false);
        t.request("initialize", json!({}), Duration::from_secs(5), &never)
            .expect("initialize");
        let err = t
            .request("ping", json!({}), Duration::from_secs(5), &never)
            .expect_err("a redirect is an error");
        assert!(err.to_string().contains("HTTP 307"), "{err}");
        assert_eq!(
            elsewhere.load(Ordering::Relaxed),
            0,
            "nothing went to the other origin"
        );
    }

    #[test]
    fn a_stream_closed_before_the_response_is_resumed_with_its_last_event_id() {
        use std::io::Write as _;
        let resumed_from = Arc::new(Mutex::new(Vec::<String>::new()));
        let seen_ids = Arc::clone(&resumed_from);
        let base = serve(move |seen, stream| {
            if handshake(seen, stream).is_some() {
                return;
            }
            let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n";
            if seen.verb == "POST" {
                // The priming event names an id and a retry, then the stream ends.
                let _ = stream.write_all(
                    format!("{head}Connection: close\r\n\r\nid: e1\nretry: 50\ndata: \n\n")
                        .as_bytes(),
                );
                let _ = stream.shutdown(std::net::Shutdown::Both);
                return;
            }
            let from = seen.header("last-event-id").unwrap_or_default().to_owned();
            lock(&seen_ids).push(from);
            let answer = json!({"jsonrpc": "2.0", "id": 2, "result": {"resumed": true}});
            // The resumed stream carries the response and stays open.
            let _ =
                stream.write_all(format!("{head}Transfer-Encoding: chunked\r\n\r\n").as_bytes());
            let event = format!("id: e2\ndata: {answer}\n\n");
            let _ = stream.write_all(format!("{:x}\r\n{event}\r\n", event.len()).as_bytes());
            std::thread::sleep(Duration::from_secs(10));
        });
        let t = transport(&base);
        let never = AtomicBool::new(false);
        t.request("initialize", json!({}), Duration::from_secs(5), &never)
            .expect("initialize");
        let started = Instant::now();
        let answer = t
            .request("tools/call", json!({}), Duration::from_secs(5), &never)
            .expect("resumed");
        assert_eq!(answer, json!({"resumed": true}));
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(*lock(&resumed_from), ["e1"]);
    }

    #[test]
    fn a_second_404_is_an_error() {
        let base = serve(|seen, stream| match seen.method() {
            "initialize" => {
                let answer = result(seen, json!({"protocolVersion": "2025-06-18"}));
                reply(stream, 200, &[("Mcp-Session-Id", "s")], &answer);
            }
            "notifications/initialized" => accepted(stream),
            _ => reply(stream, 404, &[], &Value::Null),
        });
        let t = transport(&base);
        let never = AtomicBool::new(false);
        t.request("initialize", json!({}), Duration::from_secs(5), &never)
            .expect("initialize");
        let err = t
            .request("ping", json!({}), Duration::from_secs(5), &never)
            .expect_err("404");
        assert!(err.to_string().contains("404"), "{err}");
    }

    #[test]
    fn an_answer_over_the_limit_fails_its_request_at_once_and_the_next_one_works() {
        let base = serve(|seen, stream| match seen.method() {
            "initialize" => {
                let answer = result(seen, json!({"protocolVersion": "2025-06-18"}));
                reply(stream, 200, &[("Mcp-Session-Id", "s")], &answer);
            }
            "notifications/initialized" => accepted(stream),
            "huge" => {
                let text = "h".repeat(MAX_BODY + 1);
                reply(stream, 200, &[], &result(seen, json!({"text": text})));
            }
            _ => reply(stream, 200, &[], &result(seen, json!("small"))),
        });
        let t = transport(&base);
        let never = AtomicBool::new(false);
        t.request("initialize", json!({}), Duration::from_secs(5), &never)
            .expect("initialize");
        let started = Instant::now();
        let err = t
            .request("huge", json!({}), Duration::from_secs(20), &never)
            .expect_err("too large");
        assert!(started.elapsed() < Duration::from_secs(5), "at once");
        assert!(matches!(err, UpstreamError::TooLarge { .. }), "{err}");
        assert!(
            err.to_string()
                .starts_with("its answer to huge (8388654 bytes) is over the 8388608-byte limit"),
            "{err}"
        );
        let next = t
            .request("small", json!({}), Duration::from_secs(5), &never)
            .expect("the transport still works");
        assert_eq!(next, json!("small"));
    }
}
