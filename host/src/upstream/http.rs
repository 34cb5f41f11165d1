//! The Streamable HTTP transport to an upstream server (`type: "http"`): each request is a POST
//! answered with JSON or an SSE stream, on a kept-alive connection ([`Conn`]), with the
//! server's `Mcp-Session-Id` sent back on every later request.
//!
//! Invariants:
//! - What is read per answer is bounded by [`MAX_BODY`] (8 MB), a JSON body or the whole
//!   event stream alike.
//! - When the server answers 404 for our session (it restarted or dropped it), the session is
//!   set up again once (`initialize` with the same parameters, then `initialized`) and the
//!   request resent; a second 404 is an error.
//! - A request of the server's inside an event stream is answered -32601 on its own connection;
//!   notifications are noted ([`Notices`]).
//! - Configured `headers` go on every request; nothing here logs them.
//! - Dropping the transport ends the session with a DELETE (best effort, at most ~1 s).

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::rpc::{classify, method_not_found, Incoming, Notices, UpstreamError};
use crate::forward::events::Events;
use crate::forward::http1::{Conn, HttpError, Response, Url, MAX_BODY};

/// The longest wait for a TCP connection.
const CONNECT: Duration = Duration::from_secs(10);
/// How long `initialize` may take when the session is set up again.
const HANDSHAKE: Duration = Duration::from_secs(30);

/// A Streamable HTTP session with one server.
pub struct HttpTransport {
    url: Url,
    headers: Vec<(String, String)>,
    conn: Option<Conn>,
    session: Option<String>,
    /// The negotiated version, sent as `MCP-Protocol-Version` after `initialize`.
    version: Option<String>,
    /// The parameters of our `initialize`, to set the session up again after a 404.
    init: Option<Value>,
    next_id: u64,
    notices: Arc<Notices>,
    never: AtomicBool,
}

/// How one POST was answered.
enum Answer {
    Outcome(Result<Value, (i64, String)>),
    UnknownSession,
    Accepted,
}

impl HttpTransport {
    pub fn new(
        url: &str,
        headers: &[(String, String)],
        notices: Arc<Notices>,
    ) -> Result<Self, UpstreamError> {
        let url = Url::parse(url).map_err(|e| UpstreamError::Protocol(e.to_string()))?;
        Ok(Self {
            url,
            headers: headers.to_vec(),
            conn: None,
            session: None,
            version: None,
            init: None,
            next_id: 1,
            notices,
            never: AtomicBool::new(false),
        })
    }

    /// Sends a request and waits up to `timeout` for its answer.
    pub fn request(
        &mut self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, UpstreamError> {
        if method == "initialize" {
            self.session = None;
            self.init = Some(params.clone());
        }
        let deadline = Instant::now() + timeout;
        let mut set_up_again = false;
        loop {
            let id = self.next_id;
            self.next_id += 1;
            let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
            match self.post(&message, Some(id), deadline, method)? {
                Answer::Outcome(Ok(result)) => {
                    if method == "initialize" {
                        self.version = result
                            .get("protocolVersion")
                            .and_then(Value::as_str)
                            .map(str::to_owned);
                    }
                    return Ok(result);
                }
                Answer::Outcome(Err((code, message))) => {
                    return Err(UpstreamError::Rpc {
                        method: method.to_owned(),
                        code,
                        message,
                    })
                }
                Answer::UnknownSession if !set_up_again && self.session.is_some() => {
                    set_up_again = true;
                    self.set_up_again()?;
                }
                Answer::UnknownSession => {
                    return Err(UpstreamError::Protocol(format!(
                        "{method}: the server answered HTTP 404"
                    )))
                }
                Answer::Accepted => {
                    return Err(UpstreamError::Protocol(format!(
                        "{method}: the server answered 202 Accepted to a request"
                    )))
                }
            }
        }
    }

    /// Sends a notification (answered 202 or 200).
    pub fn notify(&mut self, method: &str, params: Option<Value>) -> Result<(), UpstreamError> {
        let mut message = json!({"jsonrpc": "2.0", "method": method});
        if let Some(params) = params {
            message["params"] = params;
        }
        self.post(&message, None, Instant::now() + HANDSHAKE, method)
            .map(|_| ())
    }

    fn set_up_again(&mut self) -> Result<(), UpstreamError> {
        let params = self.init.clone().ok_or_else(|| {
            UpstreamError::Protocol("the session was lost before it was set up".into())
        })?;
        self.session = None;
        self.request("initialize", params, HANDSHAKE)?;
        self.notify("notifications/initialized", None)
    }

    fn headers(&self) -> Vec<(String, String)> {
        let mut headers = vec![
            ("Content-Type".to_owned(), "application/json".to_owned()),
            (
                "Accept".to_owned(),
                "application/json, text/event-stream".to_owned(),
            ),
        ];
        if let Some(version) = &self.version {
            headers.push(("MCP-Protocol-Version".to_owned(), version.clone()));
        }
        if let Some(session) = &self.session {
            headers.push(("Mcp-Session-Id".to_owned(), session.clone()));
        }
        headers.extend(self.headers.iter().cloned());
        headers
    }

    /// POSTs one message; for a request (`id`), reads its answer.
    fn post(
        &mut self,
        message: &Value,
        id: Option<u64>,
        deadline: Instant,
        method: &str,
    ) -> Result<Answer, UpstreamError> {
        let http = |source: HttpError| UpstreamError::Http {
            method: method.to_owned(),
            source,
        };
        if !self.conn.as_mut().is_some_and(Conn::alive) {
            let wait = remaining(deadline).min(CONNECT);
            self.conn = Some(Conn::connect(&self.url, wait).map_err(http)?);
        }
        let headers = self.headers();
        let pairs: Vec<(&str, &str)> = headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        let body = message.to_string();
        let url = self.url.clone();
        let notices = Arc::clone(&self.notices);
        let Some(conn) = self.conn.as_mut() else {
            return Err(UpstreamError::Protocol("no connection".into()));
        };
        let outcome = (|| {
            let mut response =
                conn.exchange(&url, "POST", &pairs, body.as_bytes(), deadline, &self.never)?;
            let session = response.header("mcp-session-id").map(str::to_owned);
            let answer = read_answer(
                &mut response,
                id,
                deadline,
                &self.never,
                &notices,
                &url,
                &pairs,
            );
            Ok::<_, HttpError>((session, answer))
        })();
        match outcome {
            Ok((session, answer)) => {
                if session.is_some() {
                    self.session = session;
                }
                answer.map_err(|e| match e {
                    Failure::Http(e) => http(e),
                    Failure::Other(e) => e,
                })
            }
            Err(e) => {
                self.conn = None;
                Err(http(e))
            }
        }
    }
}

impl Drop for HttpTransport {
    /// Ends the session politely (DELETE), best effort and briefly.
    fn drop(&mut self) {
        let Some(session) = self.session.take() else {
            return;
        };
        let deadline = Instant::now() + Duration::from_secs(1);
        if !self.conn.as_mut().is_some_and(Conn::alive) {
            self.conn = Conn::connect(&self.url, Duration::from_secs(1)).ok();
        }
        if let Some(conn) = self.conn.as_mut() {
            let mut headers = vec![("Mcp-Session-Id", session.as_str())];
            headers.extend(self.headers.iter().map(|(n, v)| (n.as_str(), v.as_str())));
            if let Ok(mut response) =
                conn.exchange(&self.url, "DELETE", &headers, b"", deadline, &self.never)
            {
                let _ = response.read_all(deadline, &self.never);
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

fn remaining(deadline: Instant) -> Duration {
    deadline
        .saturating_duration_since(Instant::now())
        .max(Duration::from_millis(1))
}

/// Reads the answer to request `id` (or the acknowledgement of a notification).
fn read_answer(
    response: &mut Response<'_>,
    id: Option<u64>,
    deadline: Instant,
    never: &AtomicBool,
    notices: &Notices,
    url: &Url,
    headers: &[(&str, &str)],
) -> Result<Answer, Failure> {
    let status = response.status;
    if status == 404 {
        let _ = response.read_all(deadline, never);
        return Ok(Answer::UnknownSession);
    }
    if !(200..300).contains(&status) {
        let body = response.read_all(deadline, never).unwrap_or_default();
        let text: String = String::from_utf8_lossy(&body).chars().take(300).collect();
        return Err(HttpError::Answer(format!("HTTP {status}: {}", text.trim())).into());
    }
    let streaming = response
        .header("content-type")
        .is_some_and(|t| t.trim_start().starts_with("text/event-stream"));
    let Some(id) = id else {
        let _ = response.read_all(deadline, never)?;
        return Ok(Answer::Accepted);
    };
    if status == 202 {
        let _ = response.read_all(deadline, never)?;
        return Ok(Answer::Accepted);
    }
    if !streaming {
        let body = response.read_all(deadline, never)?;
        let message: Value = serde_json::from_slice(&body).map_err(|e| {
            Failure::Other(UpstreamError::Protocol(format!(
                "the answer is not JSON: {e}"
            )))
        })?;
        return match handle(&message, id, notices, url, headers, deadline) {
            Some(outcome) => Ok(Answer::Outcome(outcome)),
            None => Err(Failure::Other(UpstreamError::Protocol(format!(
                "the answer is not the response to request {id}"
            )))),
        };
    }
    let mut events = Events::default();
    let mut read = 0usize;
    loop {
        let piece = response.read_some(deadline, never)?;
        if piece.is_empty() {
            return Err(Failure::Other(UpstreamError::Protocol(format!(
                "the event stream ended without the response to request {id}"
            ))));
        }
        read += piece.len();
        if read > MAX_BODY {
            return Err(HttpError::Answer(format!("the answer is over {MAX_BODY} bytes")).into());
        }
        for event in events.feed(&piece) {
            let Ok(message) = serde_json::from_str::<Value>(&event.data) else {
                notices.warn("ignored an event whose data is not JSON".into());
                continue;
            };
            if let Some(outcome) = handle(&message, id, notices, url, headers, deadline) {
                // Read the stream to its end so the connection can be reused.
                while !response.read_some(deadline, never)?.is_empty() {}
                return Ok(Answer::Outcome(outcome));
            }
        }
    }
}

/// Handles one message of an answer: the outcome if it is the response to `id`.
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
