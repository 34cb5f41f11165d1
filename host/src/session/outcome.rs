//! What the session's call paths hand each other: how an upstream call went ([`Outcome`]) and
//! what a 2026 `tools/call` brings for an approval ([`Mrtr`]). Kept apart from the paths that
//! make and read them (`upstream.rs`, `modern_call.rs`, `surface.rs`), so none of those needs
//! another just for its types.

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
    Refused(crate::modern::Refusal),
}

/// What a 2026 `tools/call` brings for an approval.
pub(super) struct Mrtr {
    /// The request declared elicitation.
    pub can_elicit: bool,
    /// `inputResponses`, on a retry.
    pub responses: Option<Value>,
    /// `requestState`, on a retry.
    pub state: Option<String>,
}
