//! JSON-RPC 2.0 framing: classifying one incoming message and writing responses. No I/O.
//!
//! Invariants: a request id is echoed back byte for byte; a message that cannot be parsed is
//! answered with id `null` (JSON-RPC requires it there) and never otherwise; a notification is
//! never answered.

use serde::Deserialize;
use serde_json::value::RawValue;

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;
pub const INTERNAL_ERROR: i64 = -32603;

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow, default)]
    jsonrpc: Option<std::borrow::Cow<'a, str>>,
    // `deserialize_with` runs only when the key is present, so `"id": null` stays visible.
    #[serde(borrow, default, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    method: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    error: Option<&'a RawValue>,
}

fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// One incoming message, classified.
#[derive(Debug)]
pub enum Incoming<'a> {
    Request {
        id: &'a RawValue,
        method: std::borrow::Cow<'a, str>,
        params: Option<&'a RawValue>,
    },
    Notification {
        method: std::borrow::Cow<'a, str>,
        params: Option<&'a RawValue>,
    },
    /// A response to a request the server sent.
    Response { id: &'a RawValue },
    /// Not a valid message: answer `error` to `id` (or to `null`).
    Invalid {
        id: Option<&'a RawValue>,
        code: i64,
        message: String,
    },
}

/// Classifies one line.
pub fn parse(line: &[u8]) -> Incoming<'_> {
    let envelope: Envelope<'_> = match serde_json::from_slice(line) {
        Ok(e) => e,
        Err(e) => {
            let (code, message) = match e.classify() {
                serde_json::error::Category::Data => {
                    let first = line.iter().find(|b| !b.is_ascii_whitespace());
                    if first == Some(&b'[') {
                        (
                            INVALID_REQUEST,
                            "batch requests are not supported".to_owned(),
                        )
                    } else {
                        (INVALID_REQUEST, format!("not a JSON-RPC message: {e}"))
                    }
                }
                _ => (PARSE_ERROR, format!("parse error: {e}")),
            };
            return Incoming::Invalid {
                id: None,
                code,
                message,
            };
        }
    };
    // serde reads a struct from an array too (`["2.0", 5, "ping"]` would pass for a request):
    // a message is an object, and an array a batch.
    if line.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[') {
        return Incoming::Invalid {
            id: None,
            code: INVALID_REQUEST,
            message: "batch requests are not supported".to_owned(),
        };
    }
    let id = match envelope.id {
        Some(id) if !valid_id(id) => {
            return Incoming::Invalid {
                id: None,
                code: INVALID_REQUEST,
                message: format!(
                    "the request id must be a string or an integer, not {}",
                    id.get()
                ),
            }
        }
        other => other,
    };
    if envelope.jsonrpc.as_deref() != Some("2.0") {
        return Incoming::Invalid {
            id,
            code: INVALID_REQUEST,
            message: "\"jsonrpc\" must be \"2.0\"".to_owned(),
        };
    }
    if let Some(params) = envelope.params {
        if !matches!(params.get().as_bytes().first(), Some(b'{') | Some(b'[')) {
            return Incoming::Invalid {
                id,
                code: INVALID_REQUEST,
                message: "\"params\" must be an object".to_owned(),
            };
        }
    }
    match (envelope.method, id) {
        (Some(method), Some(id)) => Incoming::Request {
            id,
            method,
            params: envelope.params,
        },
        (Some(method), None) => Incoming::Notification {
            method,
            params: envelope.params,
        },
        (None, Some(id)) if envelope.result.is_some() || envelope.error.is_some() => {
            Incoming::Response { id }
        }
        (None, id) => Incoming::Invalid {
            id,
            code: INVALID_REQUEST,
            message: "missing \"method\"".to_owned(),
        },
    }
}

fn valid_id(id: &RawValue) -> bool {
    let text = id.get();
    match text.as_bytes().first() {
        Some(b'"') => true,
        Some(b'-' | b'0'..=b'9') => !text.contains(['.', 'e', 'E']),
        _ => false,
    }
}

/// How every message this module builds with an id begins: the id comes right after.
pub const ID_PREFIX: &str = "{\"jsonrpc\":\"2.0\",\"id\":";

/// `{"jsonrpc":"2.0","id":ID,"result":RESULT}` where `result` is JSON text.
pub fn response(id: &str, result: &str) -> String {
    let mut out = String::with_capacity(40 + id.len() + result.len());
    out.push_str(ID_PREFIX);
    out.push_str(id);
    out.push_str(",\"result\":");
    out.push_str(result);
    out.push('}');
    out
}

/// Spare room a large result is built with, so that [`response_in`] wraps it where it lies.
pub(crate) const HEADROOM: usize = 64;

/// [`response`] for a result the caller no longer needs: the message is made in the result's
/// own buffer (moved along within it when it has [`HEADROOM`] to spare), so a large result
/// such as a tool listing is not copied to a second one.
pub fn response_in(id: &str, mut result: String) -> String {
    let mut head = String::with_capacity(40 + id.len());
    head.push_str(ID_PREFIX);
    head.push_str(id);
    head.push_str(",\"result\":");
    result.reserve(head.len() + 1);
    result.insert_str(0, &head);
    result.push('}');
    result
}

/// `{"jsonrpc":"2.0","id":ID,"error":{"code":CODE,"message":MESSAGE}}`; `id` `None` is `null`.
pub fn error(id: Option<&str>, code: i64, message: &str) -> String {
    format!(
        "{ID_PREFIX}{},\"error\":{{\"code\":{code},\"message\":{}}}}}",
        id.unwrap_or("null"),
        json_string(message)
    )
}

/// Where the id of a message starting with [`ID_PREFIX`] ends (just past it), read without
/// parsing; `None` for a message that does not start so.
pub(crate) fn id_end(message: &str) -> Option<usize> {
    let rest = message.strip_prefix(ID_PREFIX)?;
    let bytes = rest.as_bytes();
    let len = match bytes.first()? {
        b'"' => {
            let mut i = 1;
            loop {
                match bytes.get(i)? {
                    b'\\' => i += 2,
                    b'"' => break i + 1,
                    _ => i += 1,
                }
            }
        }
        _ => bytes
            .iter()
            .position(|b| !(b.is_ascii_digit() || *b == b'-'))?,
    };
    Some(ID_PREFIX.len() + len)
}

/// The id of an answer as [`response`], [`response_in`] and [`error`] build it (JSON text, as
/// it stands), read without parsing; `None` for anything else — a request or notification,
/// a `null` id, another spelling — which the caller then parses.
pub fn answer_id(message: &str) -> Option<&str> {
    let end = id_end(message).filter(|end| *end > ID_PREFIX.len())?;
    let after = &message[end..];
    (after.starts_with(",\"result\":") || after.starts_with(",\"error\":"))
        .then(|| &message[ID_PREFIX.len()..end])
}

/// `{"jsonrpc":"2.0","method":METHOD,"params":PARAMS}` where `params` is JSON text.
pub fn notification(method: &str, params: &str) -> String {
    format!(
        "{{\"jsonrpc\":\"2.0\",\"method\":{},\"params\":{params}}}",
        json_string(method)
    )
}

/// `{"jsonrpc":"2.0","method":METHOD}`.
pub fn notification_without_params(method: &str) -> String {
    format!("{{\"jsonrpc\":\"2.0\",\"method\":{}}}", json_string(method))
}

/// A Rust string as a JSON string literal.
pub fn json_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    push_json_string(&mut out, text);
    out
}

/// Appends `text` to `out` as a JSON string literal, escaped exactly as serde_json escapes it
/// (`"`, `\\` and the control characters; `\u00xx` in lowercase hex where no short form
/// exists). Every result the model sees goes through here (a tool's JSON result is mostly
/// quotes), so the bytes are classified by a table and the runs between escapes copied whole.
pub fn push_json_string(out: &mut String, text: &str) {
    /// For each byte: 0 (as it is), the letter of its short escape, or `u` (`\u00xx`).
    static ESCAPE: [u8; 256] = {
        let mut table = [0u8; 256];
        let mut byte = 0;
        while byte < 0x20 {
            table[byte] = b'u';
            byte += 1;
        }
        table[0x08] = b'b';
        table[0x09] = b't';
        table[0x0a] = b'n';
        table[0x0c] = b'f';
        table[0x0d] = b'r';
        table[b'"' as usize] = b'"';
        table[b'\\' as usize] = b'\\';
        table
    };
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = text.as_bytes();
    out.reserve(text.len() + 2);
    out.push('"');
    let mut start = 0;
    let mut at = 0;
    while at < bytes.len() {
        let escape = ESCAPE[usize::from(bytes[at])];
        if escape == 0 {
            at += 1;
            continue;
        }
        // Every byte that needs escaping is ASCII, so `at` is a character boundary.
        out.push_str(&text[start..at]);
        out.push('\\');
        out.push(char::from(escape));
        if escape == b'u' {
            out.push_str("00");
            out.push(char::from(HEX[usize::from(bytes[at] >> 4)]));
            out.push(char::from(HEX[usize::from(bytes[at] & 0xf)]));
        }
        at += 1;
        start = at;
    }
    out.push_str(&text[start..]);
    out.push('"');
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_answer_id_is_read_as_it_stands_or_left_to_a_parse() {
        use super::{answer_id, error, response};
        assert_eq!(answer_id(&response("7", "{}")), Some("7"));
        assert_eq!(answer_id(&response("-12", "{}")), Some("-12"));
        assert_eq!(answer_id(&response("\"m-1\"", "{}")), Some("\"m-1\""));
        let escaped = r#""a\"b\\""#;
        assert_eq!(answer_id(&response(escaped, "{}")), Some(escaped));
        assert_eq!(
            answer_id(&error(Some("\"x\""), -32602, "no")),
            Some("\"x\"")
        );
        // Not an answer, or not spelt as ours: the caller parses it.
        assert_eq!(answer_id(&error(None, -32700, "bad")), None);
        assert_eq!(
            answer_id(r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#),
            None
        );
        assert_eq!(
            answer_id(r#"{"jsonrpc":"2.0","method":"notifications/x"}"#),
            None
        );
        assert_eq!(answer_id(r#"{"id":3,"jsonrpc":"2.0","result":{}}"#), None);
        assert_eq!(answer_id(r#"{"jsonrpc":"2.0","id":"unterminated"#), None);
        assert_eq!(answer_id(r#"{"jsonrpc":"2.0","id":"a\"#), None);
        assert_eq!(answer_id(r#"{"jsonrpc":"2.0","id":12"#), None);
    }

    use super::*;

    #[test]
    fn an_owned_result_is_answered_in_its_own_buffer() {
        let entries = vec!["{\"name\":\"t\"}"; 2000];
        let listing = crate::render::tools_list(&entries, None);
        let (at, expected) = (listing.as_ptr(), response("\"an-id\"", &listing));
        let answer = response_in("\"an-id\"", listing);
        assert_eq!(answer, expected);
        assert_eq!(
            answer.as_ptr(),
            at,
            "moved within its buffer, not copied to another"
        );
        // Without room to spare it is the same message.
        assert_eq!(response_in("7", "{}".to_owned()), response("7", "{}"));
    }

    /// Parses `line` and describes the outcome in one short string.
    fn check(line: &str, expected: &str) {
        let got = match parse(line.as_bytes()) {
            Incoming::Request { id, method, params } => format!(
                "request {} {method} {}",
                id.get(),
                params.map_or("-", |p| p.get())
            ),
            Incoming::Notification { method, .. } => format!("notification {method}"),
            Incoming::Response { id } => format!("response {}", id.get()),
            Incoming::Invalid { id, code, message } => {
                format!("invalid {} {code} {message}", id.map_or("-", |i| i.get()))
            }
        };
        assert!(
            got.starts_with(expected),
            "{line}\n  got: {got}\n  want: {expected}"
        );
    }

    #[test]
    fn framing_cases() {
        check(
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            "request 1 ping -",
        );
        check(
            r#"{"jsonrpc":"2.0","id":"a\"b","method":"x","params":{}}"#,
            r#"request "a\"b" x {}"#,
        );
        check(
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            "notification notifications/initialized",
        );
        check(r#"{"jsonrpc":"2.0","id":7,"result":{}}"#, "response 7");
        check(
            r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
            "invalid - -32600 the request id must be a string or an integer, not null",
        );
        check(
            r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#,
            "invalid - -32600 the request id",
        );
        check(
            r#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#,
            "invalid - -32600 the request id",
        );
        check(
            r#"{"jsonrpc":"1.0","id":3,"method":"ping"}"#,
            "invalid 3 -32600 \"jsonrpc\" must be \"2.0\"",
        );
        check(
            r#"{"id":3,"method":"ping"}"#,
            "invalid 3 -32600 \"jsonrpc\" must be \"2.0\"",
        );
        check(
            r#"{"jsonrpc":"2.0","id":3}"#,
            "invalid 3 -32600 missing \"method\"",
        );
        check(
            r#"{"jsonrpc":"2.0","id":3,"method":"x","params":5}"#,
            "invalid 3 -32600 \"params\" must be an object",
        );
        check(
            r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
            "invalid - -32600 batch requests are not supported",
        );
        // An array that reads as the fields of a request in order is still a batch.
        check(
            r#" ["2.0", 5, "ping"]"#,
            "invalid - -32600 batch requests are not supported",
        );
        check("[]", "invalid - -32600 batch requests are not supported");
        check(r#"42"#, "invalid - -32600 not a JSON-RPC message");
        check(
            r#"{"jsonrpc":"2.0","id":1,"method""#,
            "invalid - -32700 parse error",
        );
        check("not json", "invalid - -32700 parse error");
        check(
            r#"{"jsonrpc":"2.0","id":1,"method":5}"#,
            "invalid - -32600 not a JSON-RPC message",
        );
    }

    #[test]
    fn writes_responses() {
        assert_eq!(
            response("1", "{}"),
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#
        );
        assert_eq!(
            error(None, PARSE_ERROR, "bad \"x\""),
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad \"x\""}}"#
        );
        assert_eq!(
            notification("notifications/message", "{}"),
            r#"{"jsonrpc":"2.0","method":"notifications/message","params":{}}"#
        );
    }
}
