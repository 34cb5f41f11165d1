//! The 2026-07-28 requests of a session: the envelope checked on each, `server/discover`,
//! `subscriptions/listen`, and the approval of an upstream server asked through
//! `input_required` (multi round-trip requests) instead of a request of ours.
//!
//! Invariants: every modern request is checked on its own `_meta` (keys, then version) before
//! anything runs; a capability counts only in the request that declares it; an approval is
//! given only by an `accept` in `inputResponses` beside a `requestState` that verifies
//! (`modern::state`) for this principal, tool and arguments — anything else that claims to be
//! a state is refused -32602 and nothing is called. It approves the server's connection that
//! is current where the retry lands (any process on the data folder), as an elicitation answer
//! approves the current one: the client relays the human's answer in both eras.

use std::sync::Arc;

use serde_json::value::RawValue;
use serde_json::{json, Value};

use super::upstream::Outcome;
use super::{Inner, Session};
use crate::calls::Call;
use crate::modern::{self, state, Refusal};
use crate::upstream::approval::{self, Answer};
use crate::upstream::supervisor::Connection;
use crate::{mcp, rpc};

/// The key of our one input request: the human's approval.
const APPROVAL_KEY: &str = "approval";

/// What a 2026 `tools/call` brings for an approval.
pub(super) struct Mrtr {
    /// The request declared elicitation.
    pub can_elicit: bool,
    /// `inputResponses`, on a retry.
    pub responses: Option<Value>,
    /// `requestState`, on a retry.
    pub state: Option<String>,
}

impl Session {
    /// Handles one request of a modern session.
    pub(super) fn modern_request(&self, id: &str, method: &str, params: Option<&RawValue>) {
        let inner = &self.inner;
        let refuse = |refusal: Refusal| inner.out.send(refusal.to_message(Some(id)));
        if method == "initialize" {
            #[derive(serde::Deserialize)]
            struct Init {
                #[serde(default, rename = "protocolVersion")]
                version: Option<String>,
            }
            let requested = params
                .and_then(|p| serde_json::from_str::<Init>(p.get()).ok())
                .and_then(|p| p.version)
                .unwrap_or_default();
            let mut refusal = modern::unsupported(&requested);
            refusal.message = format!(
                "initialize is not served on a connection that speaks MCP {} (it began with a \
                 request carrying its protocol-version key); {}",
                modern::VERSIONS.join(", "),
                refusal.message
            );
            return refuse(refusal);
        }
        let envelope = match modern::envelope(params) {
            Ok(envelope) => envelope,
            Err(refusal) => return refuse(refusal),
        };
        if let Err(refusal) = modern::check_version(&envelope) {
            return refuse(refusal);
        }
        if let Some(level) = envelope.log_level.as_deref() {
            if super::log_rank(level).is_none() {
                return refuse(Refusal::new(
                    rpc::INVALID_PARAMS,
                    format!(
                        "unknown log level {level:?} in \"{}\" (expected one of: {})",
                        modern::LOG_LEVEL_KEY,
                        super::LOG_LEVELS.join(", ")
                    ),
                ));
            }
        }
        let answer = match method {
            "server/discover" => {
                if let Some(client) = envelope.client() {
                    crate::plugins::host_api::set_value("client", client);
                }
                Ok(modern::discover_result(&mcp::instructions(
                    &inner.plugins.installed_ids(),
                    inner.enabled.is_some() && inner.meta_tools,
                )))
            }
            "tools/list" => self.tools_list(params).map(|r| modern::cacheable(&r)),
            "tools/call" => return self.call_tool(id, params, Some(&envelope)),
            "subscriptions/listen" => match modern::listen_filter(params) {
                Ok(filter) => return inner.era.listen(id, filter),
                Err(refusal) => return refuse(refusal),
            },
            _ => Err((rpc::METHOD_NOT_FOUND, format!("method not found: {method}"))),
        };
        inner.out.send(match answer {
            Ok(result) => rpc::response(id, &result),
            Err((code, message)) => rpc::error(Some(id), code, &message),
        });
    }
}

impl Inner {
    /// The approval of `server` for a 2026 call: `Ok(None)` when the human approved it now,
    /// `Ok(Some(outcome))` for the answer to send instead of calling (the question, or a
    /// refusal of the request), `Err(Some(text))` for the texts of a legacy approval (declined,
    /// dismissed).
    pub(super) fn approve_modern(
        &self,
        call: &Call,
        conn: &Arc<Connection>,
        server: &str,
        tool: &str,
        args: &str,
        mrtr: &Mrtr,
    ) -> Result<Option<Outcome>, Option<String>> {
        let key = (server.to_owned(), conn.generation);
        let full = call.tool.as_str();
        if self.declined_lock().contains(&key) {
            return Err(Some(approval::declined(server, full)));
        }
        let principal = self.caller.principal().to_string();
        let expect = state::Expect {
            method: "tools/call",
            tool: full,
            arguments: args,
            principal: &principal,
        };
        let sealer = state::sealer(self.config.data_dir.as_deref());
        if let Some(token) = &mrtr.state {
            let claims = match sealer.open(token, &expect) {
                Ok(claims) => claims,
                Err(why) => {
                    tracing::warn!(server, tool = full, principal = %principal, "a requestState was refused: {why}");
                    return Ok(Some(Outcome::Refused(Refusal {
                        code: rpc::INVALID_PARAMS,
                        message: format!(
                            "invalid_request_state: the requestState of this call is refused \
                             ({why}); nothing was called. Call {full} again without it to be \
                             asked anew"
                        ),
                        data: Some("{\"reason\":\"invalid_request_state\"}".to_owned()),
                    })));
                }
            };
            tracing::debug!(server, issued = claims.iat, "a requestState verified");
            // A retry without the answer is asked again, not refused.
            if let Some(response) = mrtr.responses.as_ref().and_then(|r| r.get(APPROVAL_KEY)) {
                return match approval::answer(response) {
                    Answer::Approved => {
                        tracing::info!(server, principal = %principal, "the human approved the server");
                        conn.approve(&self.caller);
                        Ok(None)
                    }
                    Answer::Dismissed => Err(Some(approval::dismissed(server, full))),
                    Answer::Declined => {
                        tracing::info!(server, "the human declined the server");
                        self.declined_lock().insert(key);
                        Err(Some(approval::declined(server, full)))
                    }
                };
            }
        }
        if !mrtr.can_elicit {
            return Ok(Some(Outcome::Refused(modern::missing_capability(
                "elicitation",
                &format!(
                    "the first call to the MCP server \"{server}\" needs a human's approval, \
                     asked through elicitation; nothing was called. {}",
                    approval::cannot_ask(server, full)
                ),
            ))));
        }
        let mut question =
            approval::request(server, conn.client.server_info.as_deref(), tool, args);
        if let Some(object) = question.as_object_mut() {
            object.insert("mode".to_owned(), json!("form"));
        }
        tracing::info!(
            server,
            tool = full,
            "asking the human for approval (input_required)"
        );
        let result = json!({
            "resultType": "input_required",
            "inputRequests": {APPROVAL_KEY: {"method": "elicitation/create", "params": question}},
            "requestState": sealer.seal(&expect),
        });
        Ok(Some(Outcome::Result(result.to_string())))
    }
}
