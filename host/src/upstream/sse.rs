//! The legacy HTTP+SSE transport (`type: "sse"`, MCP 2024-11-05): a GET opens an event stream
//! whose first `endpoint` event names where to POST messages; every answer comes back on that
//! stream as a `message` event.
//!
//! A reader thread owns the stream: it matches responses to waiting requests by id, answers
//! the server's requests with -32601 (POSTed to the endpoint), and notes notifications.
//!
//! Invariants:
//! - One event is at most [`MAX_BODY`] (8 MB); a bigger one ends the connection (reported), so
//!   memory stays bounded on an endless stream.
//! - When the stream ends every waiting request ends at once with [`UpstreamError::Closed`].
//! - Dropping the transport stops the reader within a read slice (~100 ms).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
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

/// A legacy SSE session with one server.
pub struct SseTransport {
    shared: Arc<Shared>,
    endpoint: Url,
    headers: Vec<(String, String)>,
    post: Option<Conn>,
    next_id: u64,
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
            post: None,
            next_id: 1,
        })
    }

    /// Sends a request and waits up to `timeout` for its answer on the stream.
    pub fn request(
        &mut self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, UpstreamError> {
        let deadline = Instant::now() + timeout;
        let id = self.next_id;
        self.next_id += 1;
        let (tx, rx) = mpsc::channel();
        lock(&self.shared.pending).insert(id, tx);
        if self.shared.closed.load(Ordering::Relaxed) {
            lock(&self.shared.pending).remove(&id);
            return Err(self.closed(method));
        }
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        if let Err(e) = self.post(&message, deadline) {
            lock(&self.shared.pending).remove(&id);
            return Err(UpstreamError::Http {
                method: method.to_owned(),
                source: e,
            });
        }
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
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
                    stderr: String::new(),
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
        self.post(&message, Instant::now() + ENDPOINT)
            .map_err(|source| UpstreamError::Http {
                method: method.to_owned(),
                source,
            })
    }

    fn closed(&self, method: &str) -> UpstreamError {
        let why = lock(&self.shared.ended).clone();
        UpstreamError::Closed {
            method: method.to_owned(),
            status: why.map_or_else(String::new, |w| format!(" ({w})")),
            stderr: String::new(),
        }
    }

    /// POSTs one message to the endpoint (answered 202, or 200).
    fn post(&mut self, message: &Value, deadline: Instant) -> Result<(), HttpError> {
        if !self.post.as_mut().is_some_and(Conn::alive) {
            let wait = deadline
                .saturating_duration_since(Instant::now())
                .clamp(Duration::from_millis(1), CONNECT);
            self.post = Some(Conn::connect(&self.endpoint, wait)?);
        }
        let Some(conn) = self.post.as_mut() else {
            return Err(HttpError::Answer("no connection".into()));
        };
        let result = post_on(conn, &self.endpoint, &self.headers, message, deadline);
        if result.is_err() {
            self.post = None;
        }
        result
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
) -> Result<(), HttpError> {
    let never = AtomicBool::new(false);
    let mut pairs = vec![("Content-Type", "application/json")];
    pairs.extend(headers.iter().map(|(n, v)| (n.as_str(), v.as_str())));
    let body = message.to_string();
    let mut response =
        conn.exchange(endpoint, "POST", &pairs, body.as_bytes(), deadline, &never)?;
    let status = response.status;
    let answer = response.read_all(deadline, &never)?;
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
                            let _ = post_on(&mut conn, url, headers, &answer, deadline);
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
