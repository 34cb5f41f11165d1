//! The legacy HTTP+SSE transport (`type: "sse"`, MCP 2024-11-05): a GET opens an event stream
//! whose first `endpoint` event names where to POST messages; every answer comes back on that
//! stream as a `message` event.
//!
//! A reader thread owns the stream: it matches responses to waiting requests by id, answers
//! the server's requests with -32601 (POSTed to the endpoint), and notes notifications.
//!
//! The transport is shared (`&self`, `Send + Sync`): many threads may have requests in flight
//! at once. Request ids come from an atomic counter; each waiting request has its own channel
//! in the pending map, so answers reach their callers in any order. POSTs take an idle
//! kept-alive connection from a small pool, or connect a new one, so concurrent senders never
//! wait for each other (at most [`MAX_IDLE`] idle connections are kept).
//!
//! Invariants:
//! - One event is at most [`MAX_BODY`] (8 MB); a bigger one ends the connection (reported), so
//!   memory stays bounded on an endless stream.
//! - When the stream ends every waiting request ends at once with [`UpstreamError::Closed`].
//! - A request is cancelled when its caller's `cancel` flag is set (polled at least every
//!   [`SLICE`], 50 ms, while its answer is awaited, and during its POST) or its timeout passes:
//!   it leaves the pending map, the server is told with `notifications/cancelled` once the
//!   request was sent (best effort, within [`CANCEL_NOTICE`]; never for `initialize`), and the
//!   call ends with [`UpstreamError::Cancelled`] or [`UpstreamError::Timeout`].
//! - Dropping the transport stops the reader within a read slice (~100 ms).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::rpc::{classify, method_not_found, Incoming, Notices, UpstreamError};
use crate::forward::events::Events;
use crate::forward::http1::{Conn, HttpError, Url, MAX_BODY};

/// The longest wait for a TCP connection.
const CONNECT: Duration = Duration::from_secs(10);
/// How long the stream may take to name its endpoint.
const ENDPOINT: Duration = Duration::from_secs(30);
/// How long one read on the idle stream waits before it is started again.
const IDLE: Duration = Duration::from_secs(60);
/// The longest wait for an answer between two looks at the caller's cancel flag.
pub const SLICE: Duration = Duration::from_millis(50);
/// The most idle kept-alive POST connections kept for later messages.
pub const MAX_IDLE: usize = 16;
/// How long telling the server about a cancelled request may take, connecting included.
pub const CANCEL_NOTICE: Duration = Duration::from_secs(1);

type Outcome = Result<Value, (i64, String)>;

struct Shared {
    pending: Mutex<HashMap<u64, mpsc::Sender<Outcome>>>,
    closed: AtomicBool,
    stop: AtomicBool,
    /// Why the stream ended, for the report.
    ended: Mutex<Option<String>>,
    notices: Arc<Notices>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// A legacy SSE session with one server, shared by every thread that calls it.
pub struct SseTransport {
    shared: Arc<Shared>,
    endpoint: Url,
    headers: Vec<(String, String)>,
    /// Kept-alive POST connections not in use (at most [`MAX_IDLE`]).
    idle: Mutex<Vec<Conn>>,
    next_id: AtomicU64,
}

/// Why a request stopped waiting.
enum GaveUp {
    Cancelled,
    Timeout,
}

impl SseTransport {
    /// Opens the event stream and waits for the server to name its endpoint.
    pub fn open(
        url: &str,
        headers: &[(String, String)],
        notices: Arc<Notices>,
    ) -> Result<Self, UpstreamError> {
        let base = Url::parse(url).map_err(|e| UpstreamError::Protocol(e.to_string()))?;
        let shared = Arc::new(Shared {
            pending: Mutex::new(HashMap::new()),
            closed: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            ended: Mutex::new(None),
            notices,
        });
        let (endpoint_tx, endpoint_rx) = mpsc::channel();
        {
            let shared = Arc::clone(&shared);
            let headers = headers.to_vec();
            thread::spawn(move || read_stream(&base, &headers, &shared, endpoint_tx));
        }
        let endpoint = match endpoint_rx.recv_timeout(ENDPOINT) {
            Ok(Ok(endpoint)) => endpoint,
            Ok(Err(why)) => return Err(UpstreamError::Protocol(why)),
            Err(_) => {
                shared.stop.store(true, Ordering::Relaxed);
                let why = lock(&shared.ended).clone().unwrap_or_else(|| {
                    format!(
                        "the event stream named no endpoint within {} s",
                        ENDPOINT.as_secs()
                    )
                });
                return Err(UpstreamError::Protocol(why));
            }
        };
        Ok(Self {
            shared,
            endpoint,
            headers: headers.to_vec(),
            idle: Mutex::new(Vec::new()),
            next_id: AtomicU64::new(1),
        })
    }

    /// Sends a request and waits up to `timeout` for its answer on the stream, or until
    /// `cancel` is set. Many threads may call this at once; their requests run in parallel.
    pub fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
        cancel: &AtomicBool,
    ) -> Result<Value, UpstreamError> {
        let deadline = Instant::now() + timeout;
        if cancel.load(Ordering::Relaxed) {
            return Err(UpstreamError::Cancelled {
                method: method.to_owned(),
            });
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::channel();
        lock(&self.shared.pending).insert(id, tx);
        if self.shared.closed.load(Ordering::Relaxed) {
            lock(&self.shared.pending).remove(&id);
            return Err(self.closed(method));
        }
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        match self.post(&message, deadline, cancel) {
            Ok(()) => {}
            Err(HttpError::Cancelled) => {
                return Err(self.give_up(method, id, timeout, GaveUp::Cancelled));
            }
            Err(HttpError::Timeout) => {
                return Err(self.give_up(method, id, timeout, GaveUp::Timeout));
            }
            Err(e) => {
                lock(&self.shared.pending).remove(&id);
                return Err(UpstreamError::Http {
                    method: method.to_owned(),
                    source: e,
                });
            }
        }
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left.min(SLICE)) {
                Ok(Ok(result)) => return Ok(result),
                Ok(Err((code, message))) => {
                    return Err(UpstreamError::Rpc {
                        method: method.to_owned(),
                        code,
                        message,
                    })
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if cancel.load(Ordering::Relaxed) {
                        return Err(self.give_up(method, id, timeout, GaveUp::Cancelled));
                    }
                    if Instant::now() >= deadline {
                        return Err(self.give_up(method, id, timeout, GaveUp::Timeout));
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => return Err(self.closed(method)),
            }
        }
    }

    /// Sends a notification.
    pub fn notify(&self, method: &str, params: Option<Value>) -> Result<(), UpstreamError> {
        self.notify_by(method, params, Instant::now() + ENDPOINT)
    }

    /// Whether the event stream ended (every later request fails at once).
    pub fn is_closed(&self) -> bool {
        self.shared.closed.load(Ordering::Relaxed)
    }

    fn notify_by(
        &self,
        method: &str,
        params: Option<Value>,
        deadline: Instant,
    ) -> Result<(), UpstreamError> {
        let mut message = json!({"jsonrpc": "2.0", "method": method});
        if let Some(params) = params {
            message["params"] = params;
        }
        let never = AtomicBool::new(false);
        self.post(&message, deadline, &never)
            .map_err(|source| UpstreamError::Http {
                method: method.to_owned(),
                source,
            })
    }

    /// Stops waiting for request `id`, tells the server (best effort, within
    /// [`CANCEL_NOTICE`]), and returns the error the call ends with.
    fn give_up(&self, method: &str, id: u64, timeout: Duration, why: GaveUp) -> UpstreamError {
        lock(&self.shared.pending).remove(&id);
        let (reason, error) = match why {
            GaveUp::Cancelled => (
                "the caller cancelled the request".to_owned(),
                UpstreamError::Cancelled {
                    method: method.to_owned(),
                },
            ),
            GaveUp::Timeout => (
                format!("no answer within {} ms", timeout.as_millis()),
                UpstreamError::Timeout {
                    method: method.to_owned(),
                    timeout,
                    stderr: String::new(),
                },
            ),
        };
        // MCP: `initialize` is never cancelled.
        if method != "initialize" && !self.is_closed() {
            let params = json!({"requestId": id, "reason": reason});
            let _ = self.notify_by(
                "notifications/cancelled",
                Some(params),
                Instant::now() + CANCEL_NOTICE,
            );
        }
        error
    }

    fn closed(&self, method: &str) -> UpstreamError {
        let why = lock(&self.shared.ended).clone();
        UpstreamError::Closed {
            method: method.to_owned(),
            status: why.map_or_else(String::new, |w| format!(" ({w})")),
            stderr: String::new(),
        }
    }

    /// POSTs one message to the endpoint (answered 202, or 200) on an idle connection or a
    /// new one, polling `cancel` while it waits for the answer.
    fn post(
        &self,
        message: &Value,
        deadline: Instant,
        cancel: &AtomicBool,
    ) -> Result<(), HttpError> {
        let mut conn = self.take(deadline)?;
        let result = post_on(
            &mut conn,
            &self.endpoint,
            &self.headers,
            message,
            deadline,
            cancel,
        );
        // A connection left mid-answer (error, cancel) is not alive, so it is dropped here.
        self.put(conn);
        result
    }

    /// An idle connection that can still carry a POST, or a new one.
    fn take(&self, deadline: Instant) -> Result<Conn, HttpError> {
        loop {
            let Some(mut conn) = lock(&self.idle).pop() else {
                break;
            };
            if conn.alive() {
                return Ok(conn);
            }
        }
        let wait = deadline
            .saturating_duration_since(Instant::now())
            .clamp(Duration::from_millis(1), CONNECT);
        Conn::connect(&self.endpoint, wait)
    }

    /// Keeps `conn` for a later POST if it can carry one and the pool has room.
    fn put(&self, mut conn: Conn) {
        if conn.alive() {
            let mut idle = lock(&self.idle);
            if idle.len() < MAX_IDLE {
                idle.push(conn);
            }
        }
    }
}

impl Drop for SseTransport {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
    }
}

fn post_on(
    conn: &mut Conn,
    endpoint: &Url,
    headers: &[(String, String)],
    message: &Value,
    deadline: Instant,
    cancel: &AtomicBool,
) -> Result<(), HttpError> {
    let mut pairs = vec![("Content-Type", "application/json")];
    pairs.extend(headers.iter().map(|(n, v)| (n.as_str(), v.as_str())));
    let body = message.to_string();
    let mut response =
        conn.exchange(endpoint, "POST", &pairs, body.as_bytes(), deadline, cancel)?;
    let status = response.status;
    let answer = response.read_all(deadline, cancel)?;
    if !(200..300).contains(&status) {
        let text: String = String::from_utf8_lossy(&answer).chars().take(300).collect();
        return Err(HttpError::Answer(format!("HTTP {status}: {}", text.trim())));
    }
    Ok(())
}

/// Where the `endpoint` event points: an absolute `http://` URL, or a path on the stream's
/// host.
fn resolve(base: &Url, endpoint: &str) -> Result<Url, String> {
    let endpoint = endpoint.trim();
    let text = if endpoint.starts_with("http://") || endpoint.starts_with("https://") {
        endpoint.to_owned()
    } else if endpoint.starts_with('/') {
        format!("http://{}{endpoint}", base.authority)
    } else {
        let dir = base.path.rsplit_once('/').map_or("", |(dir, _)| dir);
        format!("http://{}{dir}/{endpoint}", base.authority)
    };
    Url::parse(&text).map_err(|e| format!("the endpoint event names {endpoint:?}: {e}"))
}

/// The reader thread: opens the stream and handles its events until it ends or `stop`.
fn read_stream(
    base: &Url,
    headers: &[(String, String)],
    shared: &Shared,
    endpoint_tx: mpsc::Sender<Result<Url, String>>,
) {
    let why = stream(base, headers, shared, &endpoint_tx)
        .err()
        .unwrap_or_else(|| "the event stream ended".to_owned());
    let _ = endpoint_tx.send(Err(why.clone()));
    *lock(&shared.ended) = Some(why);
    shared.closed.store(true, Ordering::Relaxed);
    // Dropping the senders wakes every waiting request.
    lock(&shared.pending).clear();
}

fn stream(
    base: &Url,
    headers: &[(String, String)],
    shared: &Shared,
    endpoint_tx: &mpsc::Sender<Result<Url, String>>,
) -> Result<(), String> {
    let mut conn = Conn::connect(base, CONNECT).map_err(|e| e.to_string())?;
    let mut pairs = vec![("Accept", "text/event-stream")];
    pairs.extend(headers.iter().map(|(n, v)| (n.as_str(), v.as_str())));
    let mut response = conn
        .exchange(
            base,
            "GET",
            &pairs,
            b"",
            Instant::now() + ENDPOINT,
            &shared.stop,
        )
        .map_err(|e| format!("GET {}: {e}", base.path))?;
    let streaming = response
        .header("content-type")
        .is_some_and(|t| t.trim_start().starts_with("text/event-stream"));
    if response.status != 200 || !streaming {
        return Err(format!(
            "GET {} answered HTTP {} ({}), not an event stream",
            base.path,
            response.status,
            response.header("content-type").unwrap_or("no content type")
        ));
    }
    let mut events = Events::default();
    let mut endpoint: Option<Url> = None;
    loop {
        let piece = match response.read_some(Instant::now() + IDLE, &shared.stop) {
            Ok(piece) => piece,
            Err(HttpError::Timeout) => continue,
            Err(HttpError::Cancelled) => return Ok(()),
            Err(e) => return Err(e.to_string()),
        };
        if piece.is_empty() {
            return Ok(());
        }
        for event in events.feed(&piece) {
            if event.name == "endpoint" {
                let url = resolve(base, &event.data)?;
                endpoint = Some(url.clone());
                let _ = endpoint_tx.send(Ok(url));
                continue;
            }
            let Ok(message) = serde_json::from_str::<Value>(&event.data) else {
                shared
                    .notices
                    .warn("ignored an event whose data is not JSON".into());
                continue;
            };
            match classify(&message) {
                Incoming::Response { id, outcome } => {
                    if let Some(waiter) = lock(&shared.pending).remove(&id) {
                        let _ = waiter.send(outcome);
                    }
                }
                Incoming::Request { id, method } => {
                    if let Some(url) = &endpoint {
                        let answer = method_not_found(&id, &method);
                        if let Ok(mut conn) = Conn::connect(url, CONNECT) {
                            let deadline = Instant::now() + CONNECT;
                            let never = AtomicBool::new(false);
                            let _ = post_on(&mut conn, url, headers, &answer, deadline, &never);
                        }
                    }
                }
                Incoming::Notification { method } => shared.notices.notification(&method),
                Incoming::Invalid(why) => {
                    shared.notices.warn(format!("ignored a message: {why}"));
                }
            }
        }
        if events.held() > MAX_BODY {
            return Err(format!("an event is over {MAX_BODY} bytes"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::{TcpListener, TcpStream};

    /// The event stream a test server writes to.
    type Stream = Arc<Mutex<Option<TcpStream>>>;

    /// A legacy SSE server on 127.0.0.1: GET opens the event stream (endpoint `/message`);
    /// every POST's body goes to `handler`, which writes the POST's answer itself and may push
    /// events on the stream. Its stream URL.
    fn serve<F>(handler: F) -> String
    where
        F: Fn(&Value, &mut TcpStream, &Stream) + Send + Sync + 'static,
    {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let handler = Arc::new(handler);
        let events: Stream = Arc::default();
        thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let (handler, events) = (Arc::clone(&handler), Arc::clone(&events));
                thread::spawn(move || {
                    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                    while let Some((verb, body)) = read_request(&mut reader) {
                        if verb == "GET" {
                            let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n";
                            let _ = stream.write_all(head.as_bytes());
                            let _ = stream.write_all(b"event: endpoint\ndata: /message\n\n");
                            *lock(&events) = stream.try_clone().ok();
                        } else {
                            handler(&body, &mut stream, &events);
                        }
                    }
                });
            }
        });
        format!("http://127.0.0.1:{port}/sse")
    }

    fn read_request(reader: &mut BufReader<TcpStream>) -> Option<(String, Value)> {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let verb = line.split(' ').next().unwrap_or("").to_owned();
        let mut length = 0;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).ok()? == 0 {
                return None;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse().unwrap_or(0);
            }
            if line.trim_end().is_empty() {
                break;
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).ok()?;
        Some((verb, serde_json::from_slice(&body).unwrap_or(Value::Null)))
    }

    fn accepted(stream: &mut TcpStream) {
        let _ = stream.write_all(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n");
    }

    /// Sends the response to `request` on the event stream.
    fn push(events: &Stream, request: &Value, result: Value) {
        let message = json!({"jsonrpc": "2.0", "id": request["id"], "result": result});
        if let Some(stream) = lock(events).as_mut() {
            let _ = stream.write_all(format!("event: message\ndata: {message}\n\n").as_bytes());
        }
    }

    /// Waits up to `limit` for `done`.
    fn until(limit: Duration, done: impl Fn() -> bool) -> bool {
        let end = Instant::now() + limit;
        while !done() {
            if Instant::now() >= end {
                return false;
            }
            thread::sleep(Duration::from_millis(5));
        }
        true
    }

    fn open(url: &str) -> Arc<SseTransport> {
        let notices = Arc::new(Notices::default());
        Arc::new(SseTransport::open(url, &[], notices).expect("open"))
    }

    #[test]
    fn the_transport_can_be_shared_between_threads() {
        fn shared<T: Send + Sync>() {}
        shared::<SseTransport>();
    }

    #[test]
    fn requests_in_flight_at_once_do_not_wait_for_each_other() {
        let slow_seen = Arc::new(AtomicBool::new(false));
        let fast_answered = Arc::new(AtomicBool::new(false));
        let url = {
            let (slow_seen, fast_answered) = (Arc::clone(&slow_seen), Arc::clone(&fast_answered));
            serve(move |body, stream, events| match body["method"].as_str() {
                Some("slow") => {
                    slow_seen.store(true, Ordering::SeqCst);
                    // Even the POST is held until the second request was answered: a single
                    // POST connection, or serialized requests, would make this wait run out.
                    let after = until(Duration::from_secs(5), || {
                        fast_answered.load(Ordering::SeqCst)
                    });
                    accepted(stream);
                    push(events, body, json!({"after_fast": after}));
                }
                Some("fast") => {
                    accepted(stream);
                    push(events, body, json!({"fast": true}));
                    fast_answered.store(true, Ordering::SeqCst);
                }
                _ => accepted(stream),
            })
        };
        let t = open(&url);
        let slow = {
            let t = Arc::clone(&t);
            thread::spawn(move || {
                let never = AtomicBool::new(false);
                t.request("slow", json!({}), Duration::from_secs(10), &never)
            })
        };
        assert!(until(Duration::from_secs(5), || slow_seen.load(Ordering::SeqCst)));
        let started = Instant::now();
        let never = AtomicBool::new(false);
        let fast = t
            .request("fast", json!({}), Duration::from_secs(10), &never)
            .expect("fast");
        assert_eq!(fast, json!({"fast": true}));
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "fast waited for slow"
        );
        let slow = slow.join().expect("thread").expect("slow");
        assert_eq!(slow, json!({"after_fast": true}));
        assert!(lock(&t.shared.pending).is_empty());
    }

    #[test]
    fn a_cancelled_request_ends_at_once_and_the_server_is_told() {
        let hung: Arc<Mutex<Option<Value>>> = Arc::default();
        let told: Arc<Mutex<Vec<Value>>> = Arc::default();
        let url = {
            let (hung, told) = (Arc::clone(&hung), Arc::clone(&told));
            serve(move |body, stream, _| {
                match body["method"].as_str() {
                    // Accepted, never answered on the stream.
                    Some("hang") => *lock(&hung) = Some(body["id"].clone()),
                    Some("notifications/cancelled") => lock(&told).push(body["params"].clone()),
                    _ => {}
                }
                accepted(stream);
            })
        };
        let t = open(&url);
        let cancel = Arc::new(AtomicBool::new(false));
        let setter = {
            let (cancel, hung) = (Arc::clone(&cancel), Arc::clone(&hung));
            thread::spawn(move || {
                assert!(until(Duration::from_secs(5), || lock(&hung).is_some()));
                thread::sleep(Duration::from_millis(100));
                cancel.store(true, Ordering::SeqCst);
                Instant::now()
            })
        };
        let err = t
            .request("hang", json!({}), Duration::from_secs(30), &cancel)
            .expect_err("cancelled");
        let ended = Instant::now();
        let set = setter.join().expect("setter");
        assert!(
            matches!(&err, UpstreamError::Cancelled { method } if method == "hang"),
            "{err}"
        );
        assert!(
            ended - set < Duration::from_millis(1500),
            "{:?}",
            ended - set
        );
        let id = lock(&hung).clone().expect("the request reached the server");
        assert!(until(Duration::from_secs(2), || !lock(&told).is_empty()));
        let told_now = lock(&told).clone();
        assert_eq!(told_now.len(), 1, "{told_now:?}");
        assert_eq!(told_now[0]["requestId"], id);
        assert!(told_now[0]["reason"].is_string());
        assert!(lock(&t.shared.pending).is_empty());
        // A timeout is told the same way.
        let never = AtomicBool::new(false);
        let err = t
            .request("hang", json!({}), Duration::from_millis(200), &never)
            .expect_err("timeout");
        assert!(matches!(err, UpstreamError::Timeout { .. }), "{err}");
        assert!(until(Duration::from_secs(2), || lock(&told).len() == 2));
        assert_eq!(lock(&told)[1]["requestId"], 2);
    }

    #[test]
    fn endpoints_resolve_against_the_stream_url() {
        let base = Url::parse("http://127.0.0.1:9/mcp/sse").expect("url");
        let at = |e: &str| resolve(&base, e).map(|u| (u.authority, u.path));
        assert_eq!(
            at("/message?sessionId=1"),
            Ok(("127.0.0.1:9".into(), "/message?sessionId=1".into()))
        );
        assert_eq!(
            at("messages"),
            Ok(("127.0.0.1:9".into(), "/mcp/messages".into()))
        );
        assert_eq!(
            at("http://127.0.0.1:10/m"),
            Ok(("127.0.0.1:10".into(), "/m".into()))
        );
        assert!(at("https://example.com/m").is_err());
    }
}
