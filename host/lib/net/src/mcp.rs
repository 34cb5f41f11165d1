//! What every MCP client of Core MCP speaks over Streamable HTTP — to relays, route targets and
//! `remote_host` Core MCPs (`coremcp_relay::client`) and to upstream servers
//! (`coremcp_upstream::http`): the headers of a message, and how the answer to one POST is read,
//! a JSON body or an event stream. Each client keeps what is its own: its session and how it is
//! set up again, its connections, failover, what a reply becomes.
//!
//! Invariants:
//! - **The 404 rule.** A non-2xx answer that carries a JSON-RPC error for our request is that
//!   error (how a 2026 server refuses one: -32601 with a 404, any code with another status);
//!   any other 404 means the server does not know our session, so it did not run the request.
//! - What is read per answer is bounded by [`MAX_BODY`], a JSON body or a whole event stream.
//! - One event-stream path: messages are handed to the client in order until one is the
//!   response; a POST's stream is then read to its end so the connection can carry another
//!   request. A stream that closes first, having named its last event, is resumable
//!   ([`Read::Resume`]); one that names none is an error.

use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::client::{HttpError, Response, MAX_BODY};
use super::events::Events;

/// How a message reached the reader: a whole JSON body, or one event of a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    Body,
    Event,
}

/// How one POST was answered.
#[derive(Debug, PartialEq)]
pub enum Read<T> {
    /// The response to our request, as the client made it of the message.
    Reply(T),
    /// 404 without a JSON-RPC error for us: the server does not know our session.
    UnknownSession,
    /// 202 (or any 2xx to a notification): accepted, nothing to read.
    Accepted,
    /// The event stream closed before the response, having named its last event: resume it
    /// with `GET` and `Last-Event-ID` after `retry` (Streamable HTTP, "Resumability").
    Resume {
        last_id: String,
        retry: Option<Duration>,
    },
}

/// Why an answer could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error(transparent)]
    Http(#[from] HttpError),
    /// A non-2xx answer that is not one of ours to read; `excerpt`: its body's first 300
    /// characters.
    #[error("HTTP {status}: {excerpt}")]
    Status { status: u16, excerpt: String },
    #[error("the answer is not the response to request {0}")]
    NotTheResponse(u64),
    #[error("the event stream ended without the response to request {0}")]
    StreamEnded(u64),
    /// The client could not make sense of a message.
    #[error("{0}")]
    Message(String),
}

/// The headers of one message: the content types, the protocol version (once known), the
/// session (if any), and for a 2026 message the `Mcp-Method` and `Mcp-Name` it mirrors.
pub fn headers(
    version: Option<&str>,
    session: Option<&str>,
    modern: Option<&Value>,
) -> Vec<(String, String)> {
    let mut headers = vec![
        ("Content-Type".to_owned(), "application/json".to_owned()),
        (
            "Accept".to_owned(),
            "application/json, text/event-stream".to_owned(),
        ),
    ];
    if let Some(version) = version {
        headers.push(("MCP-Protocol-Version".to_owned(), version.to_owned()));
    }
    if let Some(session) = session {
        headers.push(("Mcp-Session-Id".to_owned(), session.to_owned()));
    }
    if let Some(message) = modern {
        headers.extend(routing_headers(message));
    }
    headers
}

/// `Mcp-Method`, and `Mcp-Name` for the methods that name something, of a 2026 message; a
/// value a header cannot carry as it is goes as `=?base64?…?=`.
pub fn routing_headers(message: &Value) -> Vec<(String, String)> {
    let Some(method) = message["method"].as_str() else {
        return Vec::new();
    };
    let mut headers = vec![("Mcp-Method".to_owned(), method.to_owned())];
    let key = match method {
        "tools/call" | "prompts/get" => "name",
        "resources/read" => "uri",
        "tasks/get" | "tasks/update" | "tasks/cancel" => "taskId",
        _ => return headers,
    };
    if let Some(value) = message["params"][key].as_str() {
        headers.push(("Mcp-Name".to_owned(), header_value(value)));
    }
    headers
}

/// `value` as a header value: as it is when it is printable ASCII without edge spaces, else
/// base64 inside the sentinel the specification gives.
pub fn header_value(value: &str) -> String {
    use base64::Engine as _;
    let plain = value.bytes().all(|b| (0x20..0x7f).contains(&b))
        && value.trim() == value
        && !(value.starts_with("=?base64?") && value.ends_with("?="));
    match plain {
        true => value.to_owned(),
        false => format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode(value)
        ),
    }
}

/// Reads the answer to request `id` (`None`: a notification, which has none) from `response`.
/// `on_message` is given each JSON-RPC message and returns the reply when the message is the
/// response to `id` (`Ok(None)`: something else, which it dealt with). With `drain`, a stream
/// is read to its end after the response (a POST's; a resumed GET stream may stay open).
pub fn read_answer<T, F>(
    response: &mut Response<'_>,
    id: Option<u64>,
    drain: bool,
    deadline: Instant,
    cancel: &AtomicBool,
    mut on_message: F,
) -> Result<Read<T>, ReadError>
where
    F: FnMut(&[u8], Framing) -> Result<Option<T>, String>,
{
    let status = response.status;
    if !(200..300).contains(&status) {
        let body = response.read_all(deadline, cancel).unwrap_or_default();
        if let Some(code) = id.and_then(|id| error_code_for(&body, id)) {
            if status != 404 || code == coremcp_wire::rpc::METHOD_NOT_FOUND {
                if let Ok(Some(reply)) = on_message(&body, Framing::Body) {
                    return Ok(Read::Reply(reply));
                }
            }
        }
        if status == 404 {
            return Ok(Read::UnknownSession);
        }
        let excerpt: String = String::from_utf8_lossy(&body).chars().take(300).collect();
        return Err(ReadError::Status {
            status,
            excerpt: excerpt.trim().to_owned(),
        });
    }
    let Some(id) = id.filter(|_| status != 202) else {
        let _ = response.read_all(deadline, cancel)?;
        return Ok(Read::Accepted);
    };
    let streaming = response
        .header("content-type")
        .is_some_and(|t| t.trim_start().starts_with("text/event-stream"));
    if !streaming {
        let body = response.read_all(deadline, cancel)?;
        return match on_message(&body, Framing::Body).map_err(ReadError::Message)? {
            Some(reply) => Ok(Read::Reply(reply)),
            None => Err(ReadError::NotTheResponse(id)),
        };
    }
    let mut events = Events::default();
    let mut read = 0usize;
    loop {
        let piece = response.read_some(deadline, cancel)?;
        if piece.is_empty() {
            return match events.last_id() {
                Some(last_id) => Ok(Read::Resume {
                    last_id: last_id.to_owned(),
                    retry: events.retry(),
                }),
                None => Err(ReadError::StreamEnded(id)),
            };
        }
        read += piece.len();
        if read > MAX_BODY {
            return Err(HttpError::TooLarge { bytes: None }.into());
        }
        for event in events.feed(&piece) {
            if let Some(reply) =
                on_message(event.data.as_bytes(), Framing::Event).map_err(ReadError::Message)?
            {
                while drain && !response.read_some(deadline, cancel)?.is_empty() {}
                return Ok(Read::Reply(reply));
            }
        }
    }
}

/// The code of the JSON-RPC error answering request `id`, if `body` is one.
fn error_code_for(body: &[u8], id: u64) -> Option<i64> {
    #[derive(serde::Deserialize)]
    struct Message {
        #[serde(default)]
        id: Option<Value>,
        #[serde(default)]
        error: Option<Code>,
    }
    #[derive(serde::Deserialize)]
    struct Code {
        code: i64,
    }
    let message: Message = serde_json::from_slice(body).ok()?;
    (message.id == Some(Value::from(id)))
        .then_some(message.error)
        .flatten()
        .map(|e| e.code)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_message_carries_its_version_session_and_routing() {
        let message = json!({"method": "tools/call", "params": {"name": "héllo"}});
        let headers = headers(Some("2026-07-28"), None, Some(&message));
        let get = |name: &str| {
            headers
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(get("MCP-Protocol-Version"), Some("2026-07-28"));
        assert_eq!(get("Mcp-Session-Id"), None);
        assert_eq!(get("Mcp-Method"), Some("tools/call"));
        assert_eq!(get("Mcp-Name"), Some("=?base64?aMOpbGxv?="));
        // A task request names its task.
        let task = json!({"method": "tasks/get", "params": {"taskId": "task-1"}});
        let named = routing_headers(&task);
        assert!(
            named.contains(&("Mcp-Name".to_owned(), "task-1".to_owned())),
            "{named:?}"
        );
        let legacy = super::headers(None, Some("s1"), None);
        assert!(legacy
            .iter()
            .any(|(n, v)| n == "Mcp-Session-Id" && v == "s1"));
        assert!(!legacy.iter().any(|(n, _)| n == "Mcp-Method"));
        assert_eq!(header_value("plain name"), "plain name");
        assert_eq!(header_value(" edge"), "=?base64?IGVkZ2U=?=");
    }

    #[test]
    fn only_an_error_for_our_request_is_ours() {
        assert_eq!(
            error_code_for(
                br#"{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"x"}}"#,
                3
            ),
            Some(-32601)
        );
        assert_eq!(
            error_code_for(
                br#"{"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"x"}}"#,
                3
            ),
            None
        );
        assert_eq!(error_code_for(br#"{"error":"unknown session"}"#, 3), None);
        assert_eq!(error_code_for(b"not json", 3), None);
    }
}
