//! Human approval of upstream servers: the policy read from the environment, the
//! elicitation request that asks a human, and the exact texts an agent gets back.
//!
//! Invariants:
//! - Approval is required unless `COREMCP_MCP_REQUIRE_APPROVAL=false` (which prints the boot
//!   line [`OFF_LINE`]) or the server is named in `COREMCP_MCP_PREAPPROVED`.
//! - Only an explicit `accept` approves; `decline`, `cancel`, an error, a malformed answer or
//!   no answer in time all mean "not approved" (fail closed). A `decline` is final for the
//!   connection; a `cancel` (the question was dismissed, as a headless client does) is said to
//!   be one, and the next call asks again.
//! - An approval holds for the principal that gave it on that connection only: another
//!   principal's first call asks its own human.

use serde_json::{json, Value};

/// The boot line when approval is off (worded once, here).
pub(crate) const OFF_LINE: &str =
    "MCP approval is OFF (COREMCP_MCP_REQUIRE_APPROVAL=false) — calls run unattended.";

/// The most characters of a call's arguments shown to the human.
const ARGUMENTS_SHOWN: usize = 500;

/// Who needs a human's yes before their first call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    pub required: bool,
    pub preapproved: Vec<String>,
}

impl Default for Policy {
    fn default() -> Self {
        Self {
            required: true,
            preapproved: Vec::new(),
        }
    }
}

impl Policy {
    /// Reads `COREMCP_MCP_REQUIRE_APPROVAL` and `COREMCP_MCP_PREAPPROVED`.
    pub fn parse(require: Option<&str>, preapproved: Option<&str>) -> Result<Self, String> {
        let required = match require.map(str::trim) {
            None | Some("") | Some("true") | Some("1") => true,
            Some("false") | Some("0") => false,
            Some(other) => {
                return Err(format!(
                    "COREMCP_MCP_REQUIRE_APPROVAL={other}: expected true or false"
                ))
            }
        };
        let mut ids = Vec::new();
        for id in preapproved.unwrap_or("").split(',').map(str::trim) {
            if id.is_empty() {
                continue;
            }
            coremcp_wire::names::check_id(id)
                .map_err(|e| format!("COREMCP_MCP_PREAPPROVED: {e}"))?;
            ids.push(id.to_owned());
        }
        Ok(Self {
            required,
            preapproved: ids,
        })
    }

    /// Whether the first call to `server` on a connection must be approved by a human.
    pub fn needs_approval(&self, server: &str) -> bool {
        self.required && !self.preapproved.iter().any(|id| id == server)
    }
}

/// What the human answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    Approved,
    Declined,
    /// The question was dismissed without an answer (`cancel`).
    Dismissed,
}

/// The `elicitation/create` parameters that ask whether `tool` of `server` may be called.
pub fn request(server: &str, server_info: Option<&str>, tool: &str, arguments: &str) -> Value {
    let about = server_info.map_or_else(String::new, |info| format!(" ({info})"));
    let mut shown: String = arguments.chars().take(ARGUMENTS_SHOWN).collect();
    if shown.len() < arguments.len() {
        shown.push('…');
    }
    let message = format!(
        "An AI agent wants to call \"{tool}\" on the MCP server \"{server}\"{about} through Core \
         MCP. Upstream servers are not confined: the arguments go to the server as they are.\n\
         Arguments: {shown}\n\
         Accept to allow calls to \"{server}\" until it reconnects; decline to refuse this call."
    );
    json!({
        "message": message,
        "requestedSchema": {"type": "object", "properties": {}}
    })
}

/// Reads the client's answer to [`request`]: only `action: "accept"` approves.
pub fn answer(result: &Value) -> Answer {
    match result.get("action").and_then(Value::as_str) {
        Some("accept") => Answer::Approved,
        Some("cancel") => Answer::Dismissed,
        Some(_) | None => Answer::Declined,
    }
}

/// The result text of a call whose question the client dismissed (`cancel`).
pub fn dismissed(server: &str, tool: &str) -> String {
    format!(
        "The question whether \"{tool}\" may use the MCP server \"{server}\" was dismissed \
         without an answer, so nothing was called. Ask the user to approve it, or carry on with \
         the tools you have."
    )
}

/// The result text of a call the human refused (worded once, here).
pub fn declined(server: &str, tool: &str) -> String {
    format!(
        "The human declined to use the MCP server \"{server}\", so \"{tool}\" was not called. \
         Do not retry it; carry on with the tools you have."
    )
}

/// The result text when approval is needed and the client cannot be asked.
pub fn cannot_ask(server: &str, tool: &str) -> String {
    format!(
        "\"{tool}\" was not called: the first call to the MCP server \"{server}\" on a new \
         connection needs a human's approval, which Core MCP asks for through MCP elicitation, \
         and this client did not declare the elicitation capability. To pre-approve, start \
         coremcp with COREMCP_MCP_PREAPPROVED={server} (this server) or \
         COREMCP_MCP_REQUIRE_APPROVAL=false (every server; calls then run unattended)."
    )
}

/// The result text when asking failed (no answer in time, or an error from the client).
pub fn not_answered(server: &str, tool: &str, why: &str) -> String {
    format!(
        "\"{tool}\" was not called: Core MCP asked for approval to use the MCP server \
         \"{server}\" and got no answer ({why}). Nothing was sent to the server."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_is_read_and_refuses_bad_values() {
        assert_eq!(Policy::parse(None, None), Ok(Policy::default()));
        let off = Policy::parse(Some("false"), Some(" a, b-2 ,")).expect("parses");
        assert!(!off.required);
        assert_eq!(off.preapproved, ["a", "b-2"]);
        assert!(!off.needs_approval("x"));
        let on = Policy::parse(Some("true"), Some("a")).expect("parses");
        assert!(!on.needs_approval("a"));
        assert!(on.needs_approval("b"));
        let err = Policy::parse(Some("maybe"), None).expect_err("refused");
        assert!(err.contains("COREMCP_MCP_REQUIRE_APPROVAL=maybe"), "{err}");
        let err = Policy::parse(None, Some("ok,bad_id")).expect_err("refused");
        assert!(err.contains("\"bad_id\""), "{err}");
    }

    #[test]
    fn only_accept_approves() {
        assert_eq!(answer(&json!({"action": "accept"})), Answer::Approved);
        assert_eq!(
            answer(&json!({"action": "accept", "content": {}})),
            Answer::Approved
        );
        // A dismissed question is not an approval either (and not a decline: asked again).
        assert_eq!(answer(&json!({"action": "cancel"})), Answer::Dismissed);
        for other in [
            json!({"action": "decline"}),
            json!({"action": "whatever"}),
            json!({}),
            json!(null),
        ] {
            assert_eq!(answer(&other), Answer::Declined, "{other}");
        }
    }

    #[test]
    fn the_texts_are_the_designs() {
        assert_eq!(
            declined("time", "mcp__time__get_current_time"),
            "The human declined to use the MCP server \"time\", so \
             \"mcp__time__get_current_time\" was not called. Do not retry it; carry on with the \
             tools you have."
        );
        let text = cannot_ask("time", "mcp__time__x");
        assert!(text.contains("COREMCP_MCP_PREAPPROVED=time"), "{text}");
        assert!(
            text.contains("COREMCP_MCP_REQUIRE_APPROVAL=false"),
            "{text}"
        );
        let params = request("time", Some("mcp-time 1.0"), "get", &"a".repeat(900));
        let message = params["message"].as_str().expect("message");
        assert!(message.contains("\"time\" (mcp-time 1.0)"), "{message}");
        assert!(
            message.contains(&format!("{}…", "a".repeat(500))),
            "{message}"
        );
        assert_eq!(params["requestedSchema"]["type"], "object");
    }
}
