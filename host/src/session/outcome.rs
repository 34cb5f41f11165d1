//! What the session's call paths hand each other: how an upstream call went ([`Outcome`]) and
//! what a 2026 `tools/call` brings for an approval ([`Mrtr`]), and the answers an upstream
//! server's question gets when the client cannot be asked it. Kept apart from the paths that
//! make and read them (`upstream.rs`, `modern_call.rs`, `surface.rs`), so none of those needs
//! another just for its types; and a detached upstream call the session keeps ([`Detached`]).

use serde_json::Value;

/// How an upstream call went on its pool thread.
pub(super) enum Outcome {
    /// The `CallToolResult` to send.
    Result(String),
    /// Nothing to send: the client cancelled it (or its deadline passed).
    Cancelled,
    /// Sent without waiting: the server's answer will be sent from the thread that reads it.
    Detached,
    /// A JSON-RPC error instead of a result (a 2026 request refused by its own contents).
    Refused(coremcp_wire::modern::Refusal),
}

/// What a 2026 `tools/call` brings for an approval.
pub(super) struct Mrtr {
    /// The request declared elicitation.
    pub can_elicit: bool,
    /// The request declared the tasks extension: an upstream server's task is passed on.
    pub tasks: bool,
    /// `inputResponses`, on a retry.
    pub responses: Option<Value>,
    /// `requestState`, on a retry.
    pub state: Option<String>,
}

/// The refusal (-32021) of an upstream server's questions that need a capability our 2026
/// client did not declare in this request, if any do: they must not reach it.
pub(super) fn undeclared(
    result: &Value,
    mrtr: &Mrtr,
    server: &str,
) -> Option<coremcp_wire::modern::Refusal> {
    let requests = result["inputRequests"].as_object()?;
    let needed = requests.values().find_map(|q| match q["method"].as_str() {
        Some("elicitation/create") if mrtr.can_elicit => None,
        Some("elicitation/create") => Some("elicitation"),
        Some("sampling/createMessage") => Some("sampling"),
        Some("roots/list") => Some("roots"),
        _ => Some("elicitation"),
    })?;
    Some(coremcp_wire::modern::missing_capability(
        needed,
        &format!("the MCP server \"{server}\" asks for it before it answers"),
    ))
}

/// The text of a call whose upstream server asked for input a 2025 client of ours cannot be
/// given: it did not declare elicitation, or the server asks for something else.
pub(super) fn input_required_for_legacy(full: &str, server: &str) -> String {
    format!(
        "{full} did not run: the MCP server \"{server}\" asks for input first (an MCP \
         2026-07-28 input_required result), and this client cannot be asked it (Core MCP passes \
         on elicitation to clients that declare it, and any question to 2026-07-28 clients). \
         Carry on with other tools."
    )
}

/// A detached upstream call in flight, so that a cancel or the deadline can abandon it.
pub(super) struct Detached {
    pub conn: std::sync::Arc<coremcp_upstream::supervisor::Connection>,
    pub id: u64,
}

impl Detached {
    /// Tells the server the call is abandoned (on a pool thread: a write to a server that does
    /// not read could block).
    pub(super) fn abandon(self, reason: &'static str) {
        coremcp_engine::pool::global().spawn(Box::new(move || {
            if let Some(transport) = self.conn.client.stdio() {
                transport.abandon(self.id, reason);
            }
        }));
    }
}
