//! What every upstream transport shares: the error a request can end with, how an incoming
//! JSON-RPC message is classified, and the notices a connection collects on the side
//! (`list_changed`, discarded lines).
//!
//! Invariants: classification never panics on bad input (anything that is not a JSON-RPC
//! message is [`Incoming::Invalid`]); the notices hold at most [`MAX_WARNINGS`] entries.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use serde_json::{json, Value};

use coremcp_net::client::HttpError;

/// The most side warnings a connection keeps (the oldest are kept; later ones are counted).
pub(crate) const MAX_WARNINGS: usize = 16;

/// Why a request to an upstream server failed. Messages are for the server's report; a
/// `stderr` field is empty or `"; recent stderr: …"`.
#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    /// The server could not be started.
    #[error("{0}")]
    Spawn(#[from] coremcp_spawn::SpawnError),
    /// No answer in time.
    #[error("no answer to {method} within {} ms{stderr}", timeout.as_millis())]
    Timeout {
        method: String,
        timeout: Duration,
        stderr: String,
    },
    /// The server went away (exited, closed its output, or broke the connection).
    #[error("the server closed the connection{status} before answering {method}{stderr}")]
    Closed {
        method: String,
        status: String,
        stderr: String,
    },
    /// The server answered with a JSON-RPC error.
    #[error("the server answered {method} with error {code}: {message}")]
    Rpc {
        method: String,
        code: i64,
        message: String,
    },
    /// HTTP failed (connect, status, body).
    #[error("{method}: {source}")]
    Http { method: String, source: HttpError },
    /// The caller gave up (the agent cancelled the call); the server was told with
    /// `notifications/cancelled`.
    #[error("{method} was cancelled")]
    Cancelled { method: String },
    /// The server broke the protocol (bad answer, unsupported version…).
    #[error("{0}")]
    Protocol(String),
    /// The answer was over the size limit and was discarded unread (the connection stays
    /// usable: the line was skipped whole).
    #[error(
        "its answer to {method}{} is over the {limit}-byte limit and was discarded unread",
        bytes.map_or_else(String::new, |b| format!(" ({b} bytes)")),
        limit = coremcp_wire::mcp::MAX_LINE_BYTES
    )]
    TooLarge { method: String, bytes: Option<u64> },
}

/// An answer that is not a result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// The server answered with a JSON-RPC error.
    Error { code: i64, message: String },
    /// The answer was over the size limit and was discarded unread.
    TooLarge { bytes: u64 },
    /// The answer's result is not what the request answers with (a list page without its list).
    Unreadable(String),
}

impl From<(i64, String)> for Refused {
    fn from((code, message): (i64, String)) -> Self {
        Refused::Error { code, message }
    }
}

impl Refused {
    /// The error request `method` ends with.
    pub fn into_error(self, method: &str) -> UpstreamError {
        let method = method.to_owned();
        match self {
            Refused::Error { code, message } => UpstreamError::Rpc {
                method,
                code,
                message,
            },
            Refused::TooLarge { bytes } => UpstreamError::TooLarge {
                method,
                bytes: Some(bytes),
            },
            Refused::Unreadable(why) => UpstreamError::Protocol(format!("{method}: {why}")),
        }
    }
}

/// One message from the server, classified.
#[derive(Debug, PartialEq)]
pub enum Incoming {
    /// The answer to our request `id`: its result, or its error (code, message).
    Response {
        id: u64,
        outcome: Result<Value, (i64, String)>,
    },
    /// A request of the server's (answered -32601: this client serves none).
    Request {
        id: Value,
        method: String,
    },
    Notification {
        method: String,
    },
    /// Not a JSON-RPC message we can use.
    Invalid(String),
}

/// Classifies one JSON-RPC message.
pub fn classify(message: &Value) -> Incoming {
    let method = message.get("method").and_then(Value::as_str);
    let id = message.get("id").filter(|v| !v.is_null());
    match (method, id) {
        (Some(method), Some(id)) => Incoming::Request {
            id: id.clone(),
            method: method.to_owned(),
        },
        (Some(method), None) => Incoming::Notification {
            method: method.to_owned(),
        },
        (None, Some(id)) => {
            let Some(id) = id.as_u64() else {
                return Incoming::Invalid(format!("a response to an id we never sent: {id}"));
            };
            match response_outcome(message) {
                Some(outcome) => Incoming::Response { id, outcome },
                None => Incoming::Invalid(format!(
                    "the response to request {id} has neither result nor error"
                )),
            }
        }
        (None, None) => Incoming::Invalid("a message with neither method nor id".into()),
    }
}

/// A JSON-RPC response's result, or its error as (code, message); `None` with neither.
/// (Core MCP reads responses both as a client of upstream servers and as a server that asked
/// its client something.)
pub fn response_outcome(message: &Value) -> Option<Result<Value, (i64, String)>> {
    match (message.get("result"), message.get("error")) {
        (Some(result), _) => Some(Ok(result.clone())),
        (None, Some(error)) => Some(Err((
            error.get("code").and_then(Value::as_i64).unwrap_or(0),
            error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("(no message)")
                .to_owned(),
        ))),
        (None, None) => None,
    }
}

/// The -32601 answer to a server's request.
pub(crate) fn method_not_found(id: &Value, method: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601,
           "message": format!("the Core MCP client does not serve {method}")}})
}

/// What a connection notices besides answers.
#[derive(Debug, Default)]
pub struct Notices {
    list_changed: AtomicBool,
    warnings: Mutex<(Vec<String>, u64)>,
}

impl Notices {
    /// Handles a notification from the server.
    pub fn notification(&self, method: &str) {
        // Tools, prompts or resources: the supervisor lists all three again.
        if matches!(
            method,
            "notifications/tools/list_changed"
                | "notifications/prompts/list_changed"
                | "notifications/resources/list_changed"
        ) {
            self.list_changed.store(true, Ordering::Relaxed);
        }
    }

    /// Whether the server said its tools changed since the last [`Notices::take_list_changed`].
    pub(crate) fn take_list_changed(&self) -> bool {
        self.list_changed.swap(false, Ordering::Relaxed)
    }

    pub fn warn(&self, text: String) {
        let mut guard = self.warnings.lock().unwrap_or_else(|e| e.into_inner());
        if guard.0.len() < MAX_WARNINGS {
            guard.0.push(text);
        } else {
            guard.1 += 1;
        }
    }

    /// The warnings so far (with a count of those not kept).
    pub fn warnings(&self) -> Vec<String> {
        let guard = self.warnings.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = guard.0.clone();
        if guard.1 > 0 {
            out.push(format!("{} more warnings not kept", guard.1));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_classified() {
        assert_eq!(
            classify(&json!({"jsonrpc": "2.0", "id": 3, "result": {"a": 1}})),
            Incoming::Response {
                id: 3,
                outcome: Ok(json!({"a": 1}))
            }
        );
        assert_eq!(
            classify(&json!({"id": 4, "error": {"code": -32602, "message": "bad"}})),
            Incoming::Response {
                id: 4,
                outcome: Err((-32602, "bad".into()))
            }
        );
        assert_eq!(
            classify(&json!({"id": "x", "method": "roots/list"})),
            Incoming::Request {
                id: json!("x"),
                method: "roots/list".into()
            }
        );
        assert_eq!(
            classify(&json!({"method": "notifications/tools/list_changed", "id": null})),
            Incoming::Notification {
                method: "notifications/tools/list_changed".into()
            }
        );
        assert!(matches!(classify(&json!({"id": 1})), Incoming::Invalid(_)));
        assert!(matches!(
            classify(&json!({"id": "s", "result": 1})),
            Incoming::Invalid(_)
        ));
        assert!(matches!(classify(&json!([1, 2])), Incoming::Invalid(_)));
    }

    #[test]
    fn notices_are_flagged_and_bounded() {
        let notices = Notices::default();
        notices.notification("notifications/message");
        assert!(!notices.take_list_changed());
        notices.notification("notifications/tools/list_changed");
        assert!(notices.take_list_changed());
        assert!(!notices.take_list_changed());
        for i in 0..20 {
            notices.warn(format!("w{i}"));
        }
        let warnings = notices.warnings();
        assert_eq!(warnings.len(), MAX_WARNINGS + 1);
        assert_eq!(warnings[MAX_WARNINGS], "4 more warnings not kept");
        assert_eq!(
            method_not_found(&json!(7), "sampling/createMessage")["error"]["code"],
            -32601
        );
    }
}
