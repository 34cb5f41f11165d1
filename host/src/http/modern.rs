//! `/mcp` for MCP 2026-07-28 clients: sessionless POSTs, chosen per request by an
//! `MCP-Protocol-Version` header that names no 2025 revision.
//!
//! - Each request is checked on its own: the `_meta` envelope, then the routing headers
//!   against the body, then the version; a refusal is a JSON-RPC error with the status the
//!   specification gives its code (400, or 404 for an unknown method).
//! - All the requests of one principal go through that principal's one sessionless session
//!   (`Sessions::modern`), each under an id of ours put in place of the client's, so that two
//!   clients that number their requests alike never meet; the router puts the client's id back.
//!   Nothing here keeps state between requests that a second `coremcp serve` on the same store
//!   would need: any process answers any request.
//! - A request is cancelled by closing its response (JSON or stream); `subscriptions/listen`
//!   is an event stream that stays open, and ends by the client closing it.
//! - No `Mcp-Session-Id` is ever sent; GET and DELETE are 405.

use hyper::body::Bytes;
use hyper::header::{HeaderMap, HeaderName};
use hyper::{Response, StatusCode};
use serde_json::value::RawValue;

use super::auth::Principal;
use super::body::{self, Body};
use super::endpoint::{reply_mode, Accepts, Mode, VERSION_HEADER};
use super::outbox::ExpectError;
use super::sse::SseBody;
use coremcp_wire::modern::{self, Headers, Refusal};
use coremcp_wire::rpc;

fn refused(id: Option<&str>, refusal: &Refusal) -> Response<Body> {
    reply(refusal.to_message(id))
}

/// A JSON answer, with the status its error code calls for.
fn reply(message: String) -> Response<Body> {
    let status = modern::http_status(modern::error_code(&message));
    body::json(
        StatusCode::from_u16(status).unwrap_or(StatusCode::OK),
        message,
    )
}

/// The routing headers by name, made once (a lookup by `&str` parses the name every time).
static ROUTING: std::sync::LazyLock<[(HeaderName, &str); 3]> = std::sync::LazyLock::new(|| {
    [
        (
            HeaderName::from_static(VERSION_HEADER),
            "MCP-Protocol-Version",
        ),
        (HeaderName::from_static("mcp-method"), "Mcp-Method"),
        (HeaderName::from_static("mcp-name"), "Mcp-Name"),
    ]
});

fn routing_headers(headers: &HeaderMap) -> Headers<'_> {
    let mut duplicated = None;
    let [version, method, name] = ROUTING.each_ref().map(|(header, shown)| {
        let mut values = headers.get_all(header).iter();
        let first = values.next();
        if values.next().is_some() {
            duplicated = duplicated.or(Some(*shown));
        }
        first.and_then(|v| v.to_str().ok())
    });
    Headers {
        version,
        method,
        name,
        duplicated,
    }
}

/// `message` with the id at `at..at + len` replaced by `id`.
fn with_request_id(message: &[u8], at: usize, len: usize, id: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(message.len() + id.len());
    out.extend_from_slice(&message[..at]);
    out.extend_from_slice(id.as_bytes());
    out.extend_from_slice(&message[at + len..]);
    out
}

impl super::endpoint::Endpoint<'_> {
    /// Serves one POSTed 2026 message.
    pub(super) async fn post_modern(
        &self,
        headers: &HeaderMap,
        principal: Principal,
        accepts: Accepts,
        message: Bytes,
    ) -> Response<Body> {
        let (id, method, params): (&RawValue, String, Option<&RawValue>) =
            match rpc::parse(&message) {
                rpc::Incoming::Invalid { id, code, message } => {
                    return body::rpc_error(
                        StatusCode::BAD_REQUEST,
                        id.map(RawValue::get),
                        code,
                        &message,
                    )
                }
                // Cancelling is closing the request's stream; there are no requests of ours to
                // answer. A notification is taken and has no effect.
                rpc::Incoming::Notification { .. } | rpc::Incoming::Response { .. } => {
                    return body::empty(StatusCode::ACCEPTED)
                }
                rpc::Incoming::Request { id, method, params } => (id, method.into_owned(), params),
            };
        let original = id.get().to_owned();
        let envelope = match checked_envelope(headers, &method, params) {
            Ok(envelope) => envelope,
            Err(refusal) => return refused(Some(&original), &refusal),
        };
        let listen = method == "subscriptions/listen";
        if listen && !accepts.sse {
            return body::rpc_error(
                StatusCode::NOT_ACCEPTABLE,
                Some(&original),
                rpc::INVALID_REQUEST,
                "Not Acceptable: subscriptions/listen is answered as text/event-stream",
            );
        }
        // Only log messages ride a call's stream: an approval is an answer of its own in 2026.
        let wants_stream = listen || envelope.log_level.is_some();
        let mode = match listen {
            true => Mode::Sse,
            false => reply_mode(accepts, &method, wants_stream),
        };
        let session = self.sessions.modern(&principal);
        let ours = self.sessions.modern_request_id();
        let router = std::sync::Arc::clone(session.router());
        let expected =
            match router.expect_as(&ours, Some(original.clone()), mode == Mode::Sse, None) {
                Ok(expected) => expected,
                Err(e @ (ExpectError::Duplicate(_) | ExpectError::Closed)) => {
                    return body::rpc_error(
                        StatusCode::SERVICE_UNAVAILABLE,
                        Some(&original),
                        rpc::INTERNAL_ERROR,
                        &e.to_string(),
                    )
                }
            };
        let core = session.session().clone();
        // Closing the response cancels the request (2026: there is no other way on HTTP).
        let cancel = {
            let (core, router, ours) = (core.clone(), std::sync::Arc::clone(&router), ours.clone());
            move || {
                router.forget(&ours);
                core.cancel(&ours);
            }
        };
        start(
            core,
            &router,
            &ours,
            &method,
            (id, params, &message),
            envelope,
        );
        match (mode, expected.notes) {
            (Mode::Sse, Some(notes)) => super::endpoint::sse_response(
                SseBody::request(notes, expected.answer).on_early_drop(cancel),
            ),
            _ => {
                let mut guard = CancelOnDrop(Some(Box::new(cancel)));
                let answer = expected.answer.await;
                guard.0 = None;
                match answer {
                    Ok(message) => reply(message),
                    // The handler failed, or the server is shutting down.
                    Err(_) => body::rpc_error(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        Some(&original),
                        rpc::INTERNAL_ERROR,
                        "internal error: the request ended without an answer",
                    ),
                }
            }
        }
    }
}

/// Cancels a request whose JSON response is dropped before its answer (the client went away).
struct CancelOnDrop(Option<Box<dyn FnOnce() + Send>>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(cancel) = self.0.take() {
            cancel();
        }
    }
}

/// The request's envelope, checked in the order the SDK checks it: its keys, the routing
/// headers against the body, then the version.
fn checked_envelope(
    headers: &HeaderMap,
    method: &str,
    params: Option<&RawValue>,
) -> Result<modern::Envelope, Refusal> {
    let envelope = modern::envelope(params)?;
    modern::check_headers(&routing_headers(headers), method, &envelope)?;
    modern::check_version(&envelope)?;
    Ok(envelope)
}

/// Starts handling the request under our id `ours`: a call of a tool quick lately may even
/// run here ([`coremcp_engine::inline::on_runtime`]), from the request as read (the envelope
/// checked the name it carries); anything else on a blocking thread, from its own copy of
/// `message`, which carries our id in place of the client's `id`.
fn start(
    core: crate::session::Session,
    router: &std::sync::Arc<super::outbox::Router>,
    ours: &str,
    method: &str,
    (id, params, message): (&RawValue, Option<&RawValue>, &Bytes),
    envelope: modern::Envelope,
) {
    if core.is_quick_call(method, envelope.name()) {
        coremcp_engine::inline::with(coremcp_engine::inline::on_runtime(), || {
            core.handle_checked_request(ours, method, params, envelope)
        });
    } else {
        let at = id.get().as_ptr() as usize - message.as_ptr() as usize;
        let request = with_request_id(message, at, id.get().len(), ours);
        let handling = tokio::task::spawn_blocking(move || core.handle_checked(&request, envelope));
        let watch = (std::sync::Arc::clone(router), ours.to_owned());
        tokio::spawn(async move {
            if let Err(e) = handling.await {
                tracing::error!("handling a request failed: {e}");
                watch.0.forget(&watch.1);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::endpoint::is_modern;
    use hyper::header::HeaderValue;

    #[test]
    fn the_era_follows_the_version_header() {
        let mut headers = HeaderMap::new();
        assert!(!is_modern(&headers), "no header is 2025");
        headers.insert(VERSION_HEADER, HeaderValue::from_static("2026-07-28"));
        headers.insert(
            super::super::endpoint::SESSION_HEADER,
            HeaderValue::from_static("ab"),
        );
        assert!(!is_modern(&headers), "a session is 2025");
        headers.remove(super::super::endpoint::SESSION_HEADER);
        for (value, modern) in [
            ("2025-06-18", false),
            ("2025-11-25", false),
            ("2024-11-05", false),
            ("2026-07-28", true),
            ("2099-01-01", true),
        ] {
            headers.insert(VERSION_HEADER, HeaderValue::from_static(value));
            assert_eq!(is_modern(&headers), modern, "{value}");
        }
    }

    #[test]
    fn an_id_is_replaced_in_place() {
        let message = br#"{"jsonrpc":"2.0","id":17,"method":"x"}"#;
        let at = 22;
        assert_eq!(&message[at..at + 2], b"17");
        assert_eq!(
            with_request_id(message, at, 2, "\"~3\""),
            br#"{"jsonrpc":"2.0","id":"~3","method":"x"}"#.to_vec()
        );
    }
}
