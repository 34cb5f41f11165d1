//! The legacy HTTP+SSE transport (`type: "sse"`, MCP 2024-11-05): a GET opens an event stream
//! whose first `endpoint` event names where to POST messages; every answer comes back on that
//! stream as a `message` event.
//!
//! A reader thread owns the stream: it matches responses to waiting requests by id, answers
//! the server's requests with -32601 (POSTed to the endpoint), and notes notifications.
//!
//! The transport is shared (`&self`, `Send + Sync`): many threads may have requests in flight
//! at once. Request ids come from an atomic counter; each waiting request has its own channel
//! in the [`Pending`] map, so answers reach their callers in any order. POSTs take an idle
//! kept-alive connection from a [`Pool`], or connect a new one, so concurrent senders never
//! wait for each other.
//!
//! Invariants:
//! - One event is at most [`MAX_BODY`] (8 MB); a bigger one ends the connection (reported), so
//!   memory stays bounded on an endless stream.
//! - When the stream ends every waiting request ends at once with [`UpstreamError::Closed`].
//! - A request is cancelled when its caller's `cancel` flag is set (polled at least every
//!   [`SLICE`](super::wait::SLICE), 50 ms, while its answer is awaited, and during its POST)
//!   or its timeout passes: it leaves the pending map, the server is told with
//!   `notifications/cancelled` once the request was sent (best effort, within
//!   [`CANCEL_NOTICE`]; never for `initialize`), and the call ends with
//!   [`UpstreamError::Cancelled`] or [`UpstreamError::Timeout`] (the wait is
//!   [`Pending::wait`], shared with the stdio transport).
//! - Dropping the transport stops the reader within a read slice (~100 ms).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::http::Pool;
use super::rpc::{classify, method_not_found, Incoming, Notices, Refused, UpstreamError};
use super::wait::{lock, Call, GaveUp, Peer, Pending};
use coremcp_net::client::{Conn, HttpError, Url, MAX_BODY};
use coremcp_net::events::Events;

/// The longest wait for a TCP connection.
const CONNECT: Duration = Duration::from_secs(10);
/// How long the stream may take to name its endpoint.
const ENDPOINT: Duration = Duration::from_secs(30);
/// How long one read on the idle stream waits before it is started again.
const IDLE: Duration = Duration::from_secs(60);
/// How long telling the server about a cancelled request may take, connecting included.
pub(crate) const CANCEL_NOTICE: Duration = Duration::from_secs(1);

struct Shared {
    /// Closed when the stream ends.
    pending: Pending,
    stop: AtomicBool,
    /// Why the stream ended, for the report.
    ended: Mutex<Option<String>>,
    notices: Arc<Notices>,
}

/// A legacy SSE session with one server, shared by every thread that calls it.
pub(crate) struct SseTransport {
    shared: Arc<Shared>,
    endpoint: Url,
    headers: Vec<(String, String)>,
    /// Kept-alive POST connections to the endpoint not in use.
    pool: Pool,
    next_id: AtomicU64,
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
            pending: Pending::default(),
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
            pool: Pool::new(endpoint.clone()),
            endpoint,
            headers: headers.to_vec(),
            next_id: AtomicU64::new(1),
        })
    }

    #[cfg(test)]
    /// Sends a request and waits up to `timeout` for its answer on the stream, or until
    /// `cancel` is set. Many threads may call this at once; their requests run in parallel.
    pub fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
        cancel: &AtomicBool,
    ) -> Result<Value, UpstreamError> {
        self.request_shaped(method, params, timeout, cancel, None)
    }

    /// [`SseTransport::request`], the answer's result read through `shape`.
    pub(crate) fn request_shaped(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
        cancel: &AtomicBool,
        shape: Option<crate::shape::Shape>,
    ) -> Result<Value, UpstreamError> {
        let deadline = Instant::now() + timeout;
        if cancel.load(Ordering::Relaxed) {
            return Err(UpstreamError::Cancelled {
                method: method.to_owned(),
            });
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let pending = &self.shared.pending;
        let Some(answer) = pending.register_shaped(id, shape) else {
            return Err(self.closed(method));
        };
        let call = Call {
            method,
            id,
            timeout,
            deadline,
            cancel,
        };
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        match self.post(&message, deadline, cancel) {
            Ok(()) => pending.wait(&call, answer, self),
            Err(HttpError::Cancelled) => Err(pending.give_up(&call, GaveUp::Cancelled, self)),
            Err(HttpError::Timeout) => Err(pending.give_up(&call, GaveUp::Timeout, self)),
            Err(source) => {
                pending.forget(id);
                Err(UpstreamError::Http {
                    method: method.to_owned(),
                    source,
                })
            }
        }
    }

    /// Sends a notification.
    pub fn notify(&self, method: &str, params: Option<Value>) -> Result<(), UpstreamError> {
        self.notify_by(method, params, Instant::now() + ENDPOINT)
    }

    /// Whether the event stream ended (every later request fails at once).
    pub fn is_closed(&self) -> bool {
        self.shared.pending.is_closed()
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

    /// POSTs one message to the endpoint (answered 202, or 200) on an idle connection or a
    /// new one, polling `cancel` while it waits for the answer.
    fn post(
        &self,
        message: &Value,
        deadline: Instant,
        cancel: &AtomicBool,
    ) -> Result<(), HttpError> {
        let mut conn = self.pool.take(deadline)?;
        let result = post_on(
            &mut conn,
            &self.endpoint,
            &self.headers,
            message,
            deadline,
            cancel,
        );
        // A connection left mid-answer (error, cancel) is not alive, so it is dropped here.
        self.pool.put(conn);
        result
    }
}

impl Peer for SseTransport {
    /// Tells the server within [`CANCEL_NOTICE`], unless the stream ended.
    fn tell_cancelled(&self, id: u64, reason: &str) {
        if !self.is_closed() {
            let params = json!({"requestId": id, "reason": reason});
            let _ = self.notify_by(
                "notifications/cancelled",
                Some(params),
                Instant::now() + CANCEL_NOTICE,
            );
        }
    }

    fn closed(&self, method: &str) -> UpstreamError {
        let why = lock(&self.shared.ended).clone();
        UpstreamError::Closed {
            method: method.to_owned(),
            status: why.map_or_else(String::new, |w| format!(" ({w})")),
            stderr: String::new(),
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
    let scheme = if base.tls { "https" } else { "http" };
    let text = if endpoint.starts_with("http://") || endpoint.starts_with("https://") {
        endpoint.to_owned()
    } else if endpoint.starts_with('/') {
        format!("{scheme}://{}{endpoint}", base.authority)
    } else {
        let dir = base.path.rsplit_once('/').map_or("", |(dir, _)| dir);
        format!("{scheme}://{}{dir}/{endpoint}", base.authority)
    };
    let url =
        Url::parse(&text).map_err(|e| format!("the endpoint event names {endpoint:?}: {e}"))?;
    // The server's headers (its credentials) go to its own origin only.
    if url.origin() != base.origin() {
        return Err(format!(
            "the endpoint event names {endpoint:?}, on another origin than the stream's ({}); \
             its headers are never sent elsewhere",
            base.origin()
        ));
    }
    Ok(url)
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
    shared.pending.close();
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
            // The common message, an answer with a result, goes on as text.
            if let Some((id, result)) = super::stdio::result_of(event.data.as_bytes()) {
                shared.pending.answer_raw(id, Ok(result));
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
                    shared.pending.answer(id, outcome.map_err(Refused::from))
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
    use super::super::testing::{self, Hangs, Seen, SlowFast};
    use super::*;
    use std::io::Write;
    use std::net::TcpStream;

    /// The event stream a test server writes to.
    type Stream = Arc<Mutex<Option<TcpStream>>>;

    /// A legacy SSE server on 127.0.0.1: GET opens the event stream (endpoint `/message`) and
    /// makes it `events`; every POST goes to `handler`, which writes the POST's answer itself
    /// and may push events on the stream. Its stream URL.
    fn serve<F>(events: &Stream, handler: F) -> String
    where
        F: Fn(&Seen, &mut TcpStream) + Send + Sync + 'static,
    {
        let events = Arc::clone(events);
        let base = testing::serve(move |seen, stream| {
            if seen.verb == "GET" {
                let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n";
                let _ = stream.write_all(head.as_bytes());
                let _ = stream.write_all(b"event: endpoint\ndata: /message\n\n");
                *lock(&events) = stream.try_clone().ok();
            } else {
                handler(seen, stream);
            }
        });
        format!("{base}/sse")
    }

    /// Sends the response to `request` on the event stream.
    fn push(events: &Stream, request: &Seen, result: Value) {
        let message = json!({"jsonrpc": "2.0", "id": request.body["id"], "result": result});
        if let Some(stream) = lock(events).as_mut() {
            let _ = stream.write_all(format!("event: message\ndata: {message}\n\n").as_bytes());
        }
    }

    fn open(url: &str) -> Arc<SseTransport> {
        let notices = Arc::new(Notices::default());
        Arc::new(SseTransport::open(url, &[], notices).expect("open"))
    }

    #[test]
    fn the_transport_can_be_shared_between_threads() {
        testing::shareable::<SseTransport>();
    }

    #[test]
    fn requests_in_flight_at_once_do_not_wait_for_each_other() {
        let (race, events) = (SlowFast::default(), Stream::default());
        // Even the POST of "slow" is held until "fast" was answered: a single POST connection,
        // or serialized requests, would make its wait run out.
        let on_stream = Arc::clone(&events);
        let url = serve(
            &events,
            race.server(move |seen, stream, value| {
                testing::accepted(stream);
                push(&on_stream, seen, value);
            }),
        );
        let t = open(&url);
        race.check(&t, SseTransport::request);
        assert!(t.shared.pending.is_empty());
    }

    #[test]
    fn a_cancelled_request_ends_at_once_and_the_server_is_told() {
        let hangs = Hangs::default();
        // "hang" is accepted, and never answered on the stream.
        let t = open(&serve(&Stream::default(), hangs.server(true)));
        hangs.cancel(&*t, SseTransport::request);
        assert!(t.shared.pending.is_empty());
        hangs.time_out(&*t, SseTransport::request, 2);
        assert!(t.shared.pending.is_empty());
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
            at("http://127.0.0.1:9/m"),
            Ok(("127.0.0.1:9".into(), "/m".into()))
        );
        // Another port, host or scheme is another origin: refused, naming it.
        for elsewhere in [
            "http://127.0.0.1:10/m",
            "https://127.0.0.1:9/m",
            "http://evil/m",
        ] {
            let err = at(elsewhere).expect_err(elsewhere);
            assert!(err.contains("another origin"), "{err}");
        }
        let tls = Url::parse("https://mcp.example/sse").expect("url");
        assert!(resolve(&tls, "/messages").is_ok_and(|u| u.tls && u.port == 443));
    }
}
