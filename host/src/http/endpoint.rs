//! The MCP endpoint, `/mcp`, per the Streamable HTTP transport of MCP 2025-06-18.
//!
//! - **POST**: one JSON-RPC message per body. A request is answered as `application/json`, or
//!   as an SSE stream (`text/event-stream`) that carries the request's notifications before its
//!   answer — see [`reply_mode`] for the choice. A notification or a response → 202, no body.
//!   A body that is not a JSON-RPC message → 400 with a JSON-RPC error.
//! - `initialize` without `Mcp-Session-Id` creates a session; its answer carries the header.
//!   Every other message needs the header: without it 400, with an unknown or ended id (or one
//!   another principal opened) 404. One exception: `server/discover`, which newer clients send
//!   before `initialize` to probe for the sessionless protocol, is answered -32601 at once, so
//!   that they fall back to `initialize` without a detour through an HTTP error.
//! - **GET** (`Accept: text/event-stream`) opens the session's server-to-client stream (one at
//!   a time: 409 while one is open); without that Accept 405.
//! - **DELETE** ends the session (404 for its id from then on).
//! - `MCP-Protocol-Version` is checked on every message but `initialize`: a version we do not
//!   speak → 400 naming the ones we do; no header → 2025-03-26, as the spec says.
//!
//! Invariants: no tokio worker ever waits for a plugin (the session runs on the blocking pool,
//! calls on the plugin pool); a POST whose client went away un-registers itself, so a late
//! answer is dropped rather than kept; the session's reply to each request reaches exactly the
//! POST that sent it.

use std::sync::Arc;
use std::time::Duration;

use hyper::body::{Body as HttpBody, Bytes};
use hyper::header::{
    HeaderMap, HeaderValue, ACCEPT, ALLOW, CACHE_CONTROL, CONTENT_LENGTH, CONTENT_TYPE,
};
use hyper::{Method, Request, Response, StatusCode};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::auth::Principal;
use super::body::{self, Body, ReadError, BODY_PACE, MAX_BODY_BYTES};
use super::outbox::{ExpectError, Router, StreamError};
use super::sessions::{CreateError, HttpSession, Sessions};
use super::sse::{parse_event_id, SseBody};
use coremcp_wire::mcp;
use coremcp_wire::rpc;

/// The session header.
pub const SESSION_HEADER: &str = "mcp-session-id";
/// The protocol version header.
pub const VERSION_HEADER: &str = "mcp-protocol-version";
/// The version assumed when a client sends no `MCP-Protocol-Version`.
pub const DEFAULT_HEADER_VERSION: &str = "2025-03-26";

/// How a request is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Json,
    Sse,
}

/// What a client's `Accept` header allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Accepts {
    pub json: bool,
    pub sse: bool,
}

impl Accepts {
    /// Reads `Accept`; no header accepts anything.
    pub fn of(headers: &HeaderMap) -> Self {
        let values: Vec<&HeaderValue> = headers.get_all(ACCEPT).iter().collect();
        if values.is_empty() {
            return Self {
                json: true,
                sse: true,
            };
        }
        let mut accepts = Self {
            json: false,
            sse: false,
        };
        for value in values {
            for item in value.as_bytes().split(|b| *b == b',') {
                let media = item.split(|b| *b == b';').next().unwrap_or_default();
                let media = media.trim_ascii();
                let is = |name: &str| media.eq_ignore_ascii_case(name.as_bytes());
                if is("*/*") {
                    accepts.json = true;
                    accepts.sse = true;
                } else if is("application/json") || is("application/*") {
                    accepts.json = true;
                } else if is("text/event-stream") || is("text/*") {
                    accepts.sse = true;
                }
            }
        }
        accepts
    }
}

/// JSON when the client accepts it, except for a `tools/call` that will send messages while it
/// runs — the client set a `progressToken` or asked for log messages, or it is an upstream
/// tool whose first call asks the human through elicitation — which, when the client accepts
/// SSE, is answered as a stream. A client that accepts only SSE always gets SSE.
pub fn reply_mode(accepts: Accepts, method: &str, wants_stream: bool) -> Mode {
    if !accepts.sse {
        return Mode::Json;
    }
    if !accepts.json || (method == "tools/call" && wants_stream) {
        return Mode::Sse;
    }
    Mode::Json
}

/// One POSTed message, classified.
enum Message {
    Request(Posted),
    /// A notification, or a response to a request of ours.
    Accepted {
        /// `notifications/cancelled`: the id of the request the client gave up.
        cancels: Option<String>,
    },
    Invalid {
        id: Option<String>,
        code: i64,
        message: String,
    },
}

/// A request POSTed in a 2025 session.
struct Posted {
    id: String,
    method: String,
    progress: Option<String>,
    /// The tool of a `tools/call` (`params.name`).
    tool: Option<String>,
}

fn classify(body: &[u8]) -> Message {
    #[derive(Deserialize)]
    struct Meta<'a> {
        #[serde(borrow, default, rename = "progressToken")]
        progress_token: Option<&'a RawValue>,
    }
    #[derive(Deserialize)]
    struct Params<'a> {
        #[serde(borrow, default, rename = "_meta")]
        meta: Option<Meta<'a>>,
        #[serde(borrow, default, rename = "requestId")]
        request_id: Option<&'a RawValue>,
        #[serde(borrow, default)]
        name: Option<std::borrow::Cow<'a, str>>,
    }
    fn params_of(params: Option<&RawValue>) -> Option<Params<'_>> {
        params.and_then(|p| serde_json::from_str::<Params<'_>>(p.get()).ok())
    }
    match rpc::parse(body) {
        rpc::Incoming::Request { id, method, params } => {
            let mut params = params_of(params);
            let tool = match method == "tools/call" {
                true => params.as_mut().and_then(|p| p.name.take()),
                false => None,
            };
            Message::Request(Posted {
                id: id.get().to_owned(),
                progress: params
                    .and_then(|p| p.meta)
                    .and_then(|m| m.progress_token)
                    .map(|t| t.get().to_owned()),
                method: method.into_owned(),
                tool: tool.map(std::borrow::Cow::into_owned),
            })
        }
        rpc::Incoming::Notification { method, params } => Message::Accepted {
            cancels: (method == "notifications/cancelled")
                .then(|| params_of(params).and_then(|p| p.request_id))
                .flatten()
                .map(|id| id.get().to_owned()),
        },
        rpc::Incoming::Response { .. } => Message::Accepted { cancels: None },
        rpc::Incoming::Invalid { id, code, message } => Message::Invalid {
            id: id.map(|i| i.get().to_owned()),
            code,
            message,
        },
    }
}

fn header<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// Whether a request speaks 2026: its `MCP-Protocol-Version` names no 2025 revision, and it
/// names no session (a 2026 client has none; a 2025 client's bad version is refused on the
/// session path, naming the versions it can use).
pub fn is_modern(headers: &HeaderMap) -> bool {
    !headers.contains_key(SESSION_HEADER)
        && headers
            .get(VERSION_HEADER)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| !coremcp_wire::mcp::SUPPORTED_VERSIONS.contains(&v.trim()))
}

/// 405 for GET and DELETE from a 2026 client: it only POSTs.
pub fn modern_method_not_allowed() -> Response<Body> {
    let mut response = body::rpc_error(
        StatusCode::METHOD_NOT_ALLOWED,
        None,
        rpc::INVALID_REQUEST,
        "Method Not Allowed: MCP 2026-07-28 takes POST only (subscriptions/listen replaces the GET stream)",
    );
    response
        .headers_mut()
        .insert(ALLOW, HeaderValue::from_static("POST"));
    response
}

/// 405 with the methods `/mcp` takes.
pub fn method_not_allowed() -> Response<Body> {
    let mut response = body::rpc_error(
        StatusCode::METHOD_NOT_ALLOWED,
        None,
        rpc::INVALID_REQUEST,
        "Method Not Allowed: /mcp takes POST, GET (Accept: text/event-stream) and DELETE",
    );
    response
        .headers_mut()
        .insert(ALLOW, HeaderValue::from_static("GET, POST, DELETE"));
    response
}

/// The endpoint, over the session table.
pub struct Endpoint<'a> {
    pub sessions: &'a Sessions,
}

impl Endpoint<'_> {
    /// Serves one request to `/mcp` from `principal`.
    pub async fn serve<B>(&self, request: Request<B>, principal: Principal) -> Response<Body>
    where
        B: HttpBody<Data = Bytes> + Unpin,
        B::Error: std::fmt::Display,
    {
        if is_modern(request.headers()) && *request.method() != Method::POST {
            return modern_method_not_allowed();
        }
        match *request.method() {
            Method::POST => self.post(request, principal).await,
            Method::GET => self.get(request.headers(), &principal).await,
            Method::DELETE => self.delete(request.headers(), &principal),
            _ => method_not_allowed(),
        }
    }

    /// The session a message names — which must be `principal`'s — with its protocol version
    /// checked.
    #[allow(clippy::result_large_err)] // The error is the response itself.
    fn session(
        &self,
        headers: &HeaderMap,
        principal: &Principal,
        id: Option<&str>,
    ) -> Result<Arc<HttpSession>, Response<Body>> {
        let Some(session_id) = header(headers, SESSION_HEADER) else {
            return Err(body::rpc_error(
                StatusCode::BAD_REQUEST,
                id,
                rpc::INVALID_REQUEST,
                "Bad Request: no Mcp-Session-Id header; start a session with initialize",
            ));
        };
        // Another caller's session is as unknown as one that never existed.
        let found = self
            .sessions
            .get(session_id)
            .filter(|s| s.principal() == principal);
        let Some(session) = found else {
            return Err(body::rpc_error(
                StatusCode::NOT_FOUND,
                id,
                rpc::INVALID_REQUEST,
                "Not Found: no such session (it ended, or never existed); start a new one with initialize",
            ));
        };
        let version = header(headers, VERSION_HEADER).unwrap_or(DEFAULT_HEADER_VERSION);
        if !mcp::SUPPORTED_VERSIONS.contains(&version.trim()) {
            return Err(body::rpc_error(
                StatusCode::BAD_REQUEST,
                id,
                rpc::INVALID_REQUEST,
                &format!(
                    "Bad Request: unsupported MCP-Protocol-Version \"{version}\" (supported: {})",
                    mcp::SUPPORTED_VERSIONS.join(", ")
                ),
            ));
        }
        Ok(session)
    }

    async fn post<B>(&self, request: Request<B>, principal: Principal) -> Response<Body>
    where
        B: HttpBody<Data = Bytes> + Unpin,
        B::Error: std::fmt::Display,
    {
        let (parts, request_body) = request.into_parts();
        let headers = &parts.headers;
        if let Some(kind) = headers.get(CONTENT_TYPE) {
            let media = kind
                .to_str()
                .unwrap_or("")
                .split(';')
                .next()
                .unwrap_or("")
                .trim();
            if !media.eq_ignore_ascii_case("application/json") {
                return body::rpc_error(
                    StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    None,
                    rpc::INVALID_REQUEST,
                    "Unsupported Media Type: POST a JSON-RPC message as application/json",
                );
            }
        }
        let accepts = Accepts::of(headers);
        if !accepts.json && !accepts.sse {
            return body::rpc_error(
                StatusCode::NOT_ACCEPTABLE,
                None,
                rpc::INVALID_REQUEST,
                "Not Acceptable: accept application/json and text/event-stream",
            );
        }
        let declared = header(headers, CONTENT_LENGTH.as_str()).and_then(|v| v.trim().parse().ok());
        let message =
            match body::read_limited(request_body, declared, MAX_BODY_BYTES, BODY_PACE).await {
                Ok(bytes) => bytes,
                Err(ReadError::TooLarge) => return body::too_large(),
                Err(e @ ReadError::TooSlow(_)) => return body::too_slow(&e),
                Err(e @ ReadError::Failed(_)) => {
                    return body::rpc_error(
                        StatusCode::BAD_REQUEST,
                        None,
                        rpc::PARSE_ERROR,
                        &e.to_string(),
                    )
                }
            };
        if is_modern(headers) {
            return self.post_modern(headers, principal, accepts, message).await;
        }
        match classify(&message) {
            Message::Invalid { id, code, message } => {
                body::rpc_error(StatusCode::BAD_REQUEST, id.as_deref(), code, &message)
            }
            Message::Request(posted) => {
                self.post_request(headers, principal, accepts, message, posted)
                    .await
            }
            Message::Accepted { cancels } => {
                let session = match self.session(headers, &principal, None) {
                    Ok(session) => session,
                    Err(response) => return response,
                };
                if let Some(id) = cancels {
                    // The session will not answer a cancelled call: end the POST waiting for it.
                    session.router().forget(&id);
                }
                let core = session.session().clone();
                if let Err(e) = tokio::task::spawn_blocking(move || core.handle(&message)).await {
                    tracing::error!("handling a notification failed: {e}");
                }
                body::empty(StatusCode::ACCEPTED)
            }
        }
    }

    /// A request of a 2025 session: `initialize` opens the session, anything else names one;
    /// answered as JSON or as an event stream.
    async fn post_request(
        &self,
        headers: &HeaderMap,
        principal: Principal,
        accepts: Accepts,
        message: Bytes,
        posted: Posted,
    ) -> Response<Body> {
        let Posted {
            id,
            method,
            progress,
            tool,
        } = posted;
        if method == "server/discover" && headers.get(SESSION_HEADER).is_none() {
            return body::json(
                StatusCode::OK,
                rpc::error(
                    Some(&id),
                    rpc::METHOD_NOT_FOUND,
                    "method not found: server/discover (start a session with initialize)",
                ),
            );
        }
        let (session, created) = if method == "initialize" && headers.get(SESSION_HEADER).is_none()
        {
            match self.sessions.create(principal) {
                Ok(session) => (session, true),
                Err(e @ CreateError::Full { .. }) => {
                    return body::rpc_error(
                        StatusCode::SERVICE_UNAVAILABLE,
                        Some(&id),
                        rpc::INTERNAL_ERROR,
                        &e.to_string(),
                    )
                }
                Err(e @ CreateError::Entropy(_)) => {
                    tracing::error!("{e}");
                    return body::rpc_error(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        Some(&id),
                        rpc::INTERNAL_ERROR,
                        &e.to_string(),
                    );
                }
            }
        } else {
            match self.session(headers, &principal, Some(&id)) {
                Ok(session) => (session, false),
                Err(response) => return response,
            }
        };
        if method == "logging/setLevel" {
            session.note_logging();
        }
        // A call of an upstream tool may ask the human for approval on its stream.
        let upstream = tool
            .as_deref()
            .is_some_and(|name| name.starts_with("mcp__"));
        let wants_stream = progress.is_some() || session.wants_logs() || upstream;
        let mode = reply_mode(accepts, &method, wants_stream);
        let quick = session.session().is_quick_call(&method, tool.as_deref());
        let mut response = answer(&session, id, progress, mode, message, quick).await;
        if created {
            if let Ok(value) = HeaderValue::from_str(session.id()) {
                response.headers_mut().insert(SESSION_HEADER, value);
            }
        }
        response
    }

    async fn get(&self, headers: &HeaderMap, principal: &Principal) -> Response<Body> {
        // The stream is for clients that name it; a browser's `*/*` does not open one.
        let names_sse = headers.get_all(ACCEPT).iter().any(|v| {
            String::from_utf8_lossy(v.as_bytes())
                .to_ascii_lowercase()
                .contains("text/event-stream")
        });
        if !names_sse {
            return method_not_allowed();
        }
        let session = match self.session(headers, principal, None) {
            Ok(session) => session,
            Err(response) => return response,
        };
        // A client resuming a POST stream it lost: what came after its last event, then the
        // rest of that stream (Streamable HTTP, "Resumability").
        if let Some((stream, after)) = header(headers, "last-event-id").and_then(parse_event_id) {
            let router = session.router();
            if let Some(parked) = resume_when_parked(router, stream).await {
                tracing::info!(session = %super::sessions::short(session.id()), stream, after, "stream resumed");
                return sse_response(SseBody::resumed(
                    parked,
                    stream.to_owned(),
                    after,
                    Arc::clone(router),
                ));
            }
        }
        match session.router().listen() {
            Ok(notes) => {
                tracing::info!(session = %super::sessions::short(session.id()), "server-to-client stream open");
                sse_response(SseBody::listen(notes))
            }
            Err(StreamError::Conflict) => body::rpc_error(
                StatusCode::CONFLICT,
                None,
                rpc::INVALID_REQUEST,
                "Conflict: this session already has a GET stream open",
            ),
            Err(StreamError::Closed) => gone(None),
        }
    }

    fn delete(&self, headers: &HeaderMap, principal: &Principal) -> Response<Body> {
        let session = match self.session(headers, principal, None) {
            Ok(session) => session,
            Err(response) => return response,
        };
        if self.sessions.end(session.id()) {
            body::empty(StatusCode::OK)
        } else {
            gone(None)
        }
    }
}

/// The parked stream `stream`, waiting up to [`RESUME_WAIT`] while it is still being sent: a
/// client may resume before this side has noticed it went away.
async fn resume_when_parked(router: &Router, stream: &str) -> Option<super::outbox::Parked> {
    let deadline = tokio::time::Instant::now() + RESUME_WAIT;
    loop {
        if let Some(parked) = router.resume(stream) {
            return Some(parked);
        }
        if !router.is_live(stream) || tokio::time::Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// How long a resuming `GET` waits for its stream to park.
const RESUME_WAIT: Duration = Duration::from_secs(2);

/// 404 for a session that ended while the request was being served.
fn gone(id: Option<&str>) -> Response<Body> {
    body::rpc_error(
        StatusCode::NOT_FOUND,
        id,
        rpc::INVALID_REQUEST,
        "Not Found: the session ended",
    )
}

pub(super) fn sse_response(body: SseBody) -> Response<Body> {
    let mut response = Response::new(http_body_util::BodyExt::boxed_unsync(body));
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// Un-registers a POST's request if the POST goes away before its answer.
struct ForgetOnDrop<'a> {
    router: &'a Router,
    id: &'a str,
    seq: u64,
}

impl Drop for ForgetOnDrop<'_> {
    fn drop(&mut self) {
        self.router.forget_expected(self.id, self.seq);
    }
}

/// Hands a request to its session and answers the POST with the session's reply.
async fn answer(
    session: &Arc<HttpSession>,
    id: String,
    progress: Option<String>,
    mode: Mode,
    message: Bytes,
    quick: bool,
) -> Response<Body> {
    let router = Arc::clone(session.router());
    let expected = match router.expect(&id, mode == Mode::Sse, progress) {
        Ok(expected) => expected,
        Err(e @ ExpectError::Duplicate(_)) => {
            return body::rpc_error(
                StatusCode::BAD_REQUEST,
                Some(&id),
                rpc::INVALID_REQUEST,
                &e.to_string(),
            )
        }
        Err(ExpectError::Closed) => return gone(Some(&id)),
    };
    let core = session.session().clone();
    // A call of a loaded tool only registers itself and goes to the pool (or runs here, if its
    // tool has been quick lately): handle it here. Any other message may load a plugin, so it
    // runs on a blocking thread. (`quick` is `Session::is_quick_call` of what the transport
    // already read of `message`.)
    let handling = if quick {
        // A call of a tool quick lately may even run here ([`coremcp_engine::inline::on_runtime`]).
        coremcp_engine::inline::with(coremcp_engine::inline::on_runtime(), || {
            core.handle(&message)
        });
        None
    } else {
        Some(tokio::task::spawn_blocking(move || core.handle(&message)))
    };
    match (mode, expected.notes) {
        (Mode::Sse, Some(notes)) => {
            // The stream ends by itself if handling fails (the answer's sender is dropped).
            if let Some(handling) = handling {
                let (watch_router, watch_id, seq) = (Arc::clone(&router), id, expected.seq);
                tokio::spawn(async move {
                    if let Err(e) = handling.await {
                        tracing::error!("handling a request failed: {e}");
                        watch_router.forget_expected(&watch_id, seq);
                    }
                });
            }
            let stream = router.stream_id();
            sse_response(SseBody::resumable(notes, expected.answer, stream, router))
        }
        _ => {
            let _forget = ForgetOnDrop {
                router: &router,
                id: &id,
                seq: expected.seq,
            };
            if let Some(Err(e)) = match handling {
                Some(handling) => Some(handling.await),
                None => None,
            } {
                tracing::error!("handling a request failed: {e}");
                return body::rpc_error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    Some(&id),
                    rpc::INTERNAL_ERROR,
                    "internal error while handling the request",
                );
            }
            match expected.answer.await {
                Ok(reply) => body::json(StatusCode::OK, reply),
                // Cancelled by the client (no answer is owed), or the session ended.
                Err(_) if router.is_closed() => gone(Some(&id)),
                Err(_) => body::empty(StatusCode::ACCEPTED),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accepts(value: Option<&str>) -> Accepts {
        let mut headers = HeaderMap::new();
        if let Some(v) = value {
            headers.insert(ACCEPT, HeaderValue::from_str(v).expect("header"));
        }
        Accepts::of(&headers)
    }

    #[test]
    fn accept_headers() {
        let both = Accepts {
            json: true,
            sse: true,
        };
        assert_eq!(accepts(None), both);
        assert_eq!(accepts(Some("application/json, text/event-stream")), both);
        assert_eq!(accepts(Some("*/*")), both);
        assert_eq!(
            accepts(Some("Application/JSON;q=0.9")),
            Accepts {
                json: true,
                sse: false
            }
        );
        assert_eq!(
            accepts(Some("text/event-stream")),
            Accepts {
                json: false,
                sse: true
            }
        );
        assert_eq!(
            accepts(Some("text/html")),
            Accepts {
                json: false,
                sse: false
            }
        );
    }

    #[test]
    fn json_is_preferred_unless_a_call_wants_its_notifications() {
        let both = Accepts {
            json: true,
            sse: true,
        };
        let sse_only = Accepts {
            json: false,
            sse: true,
        };
        let json_only = Accepts {
            json: true,
            sse: false,
        };
        assert_eq!(reply_mode(both, "tools/list", false), Mode::Json);
        assert_eq!(reply_mode(both, "tools/call", false), Mode::Json);
        assert_eq!(reply_mode(both, "tools/call", true), Mode::Sse);
        assert_eq!(reply_mode(both, "tools/list", true), Mode::Json);
        assert_eq!(reply_mode(sse_only, "ping", false), Mode::Sse);
        assert_eq!(reply_mode(json_only, "tools/call", true), Mode::Json);
    }
}
