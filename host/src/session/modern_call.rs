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

use super::outcome::{input_required_for_legacy, Mrtr, Outcome};
use super::{Inner, Session};
use crate::calls::Call;
use coremcp_upstream::approval::{self, Answer};
use coremcp_upstream::supervisor::Connection;
use coremcp_wire::mcp;
use coremcp_wire::modern::{self, state, Refusal};
use coremcp_wire::rpc;

/// The key of our one input request: the human's approval.
pub(super) const APPROVAL_KEY: &str = "approval";

impl Session {
    /// Handles one request of a modern session.
    pub(super) fn modern_request(&self, id: &str, method: &str, params: Option<&RawValue>) {
        self.modern_request_checked(id, method, params, None)
    }

    /// Like [`Session::modern_request`]; `checked` is the envelope the transport already read
    /// and checked (keys and version) from this very request, so it is not read again.
    pub(super) fn modern_request_checked(
        &self,
        id: &str,
        method: &str,
        params: Option<&RawValue>,
        checked: Option<modern::Envelope>,
    ) {
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
        let envelope = match checked {
            Some(envelope) => envelope,
            None => match modern::envelope(params) {
                Ok(envelope) => envelope,
                Err(refusal) => return refuse(refusal),
            },
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
                let client = envelope.client();
                let budget = inner.budget_of(client.as_deref(), None);
                if let Some(client) = client {
                    coremcp_engine::host_api::set_value("client", client);
                }
                Ok(modern::discover_result(
                    &mcp::instructions(&inner.plugins.installed_ids(), inner.menu, budget),
                    inner.upstreams.has_servers(),
                ))
            }
            "tools/list" => self
                .tools_list(params, envelope.client().as_deref())
                .map(|r| modern::cacheable(&r)),
            "tools/call" => return self.call_tool(id, params, Some(&envelope)),
            "tasks/get" | "tasks/update" | "tasks/cancel" => {
                return self.task_request(id, method, params, &envelope)
            }
            method
                if coremcp_upstream::surface::serves(method) && inner.upstreams.has_servers() =>
            {
                return self.surface_request(id, method, params, Some(&envelope))
            }
            "subscriptions/listen" => {
                let asked = modern::listen_filter(params)
                    .and_then(|filter| Ok((filter, modern::listen_task_ids(params)?)));
                match asked {
                    Ok((mut filter, tasks)) => {
                        // Only what is served is granted: prompts and resources come from
                        // upstream servers.
                        let surface = inner.upstreams.has_servers();
                        filter.prompts &= surface;
                        filter.resources &= surface;
                        if !tasks.is_empty() && !envelope.tasks {
                            return refuse(modern::missing_extension(
                                coremcp_wire::tasks::EXTENSION,
                                "notifications of tasks (taskIds) are part of the tasks \
                                 extension",
                            ));
                        }
                        return self.listen(id, filter, &tasks);
                    }
                    Err(refusal) => return refuse(refusal),
                }
            }
            _ => Err((rpc::METHOD_NOT_FOUND, format!("method not found: {method}"))),
        };
        inner.out.send(match answer {
            Ok(result) => rpc::response(id, &result),
            Err((code, message)) => rpc::error(Some(id), code, &message),
        });
    }
}

impl Inner {
    /// What a 2026 call's `requestState` binds it to, for `call` with `args`: for another
    /// principal, tool or arguments, altered, forged or expired, the refusal to answer with.
    pub(super) fn open_state(
        &self,
        call: &Call,
        args: &str,
        token: &str,
    ) -> Result<state::Claims, Refusal> {
        let principal = self.caller.principal().to_string();
        let expect = self.expect(call, args, &principal);
        let sealer = crate::state_key::sealer(self.config.data_dir.as_deref());
        sealer.open(token, &expect).map_err(|why| {
            tracing::warn!(tool = %call.tool, principal = %principal, "a requestState was refused: {why}");
            Refusal {
                code: rpc::INVALID_PARAMS,
                message: format!(
                    "invalid_request_state: the requestState of this call is refused ({why}); \
                     nothing was called. Call {} again without it to be asked anew",
                    call.tool
                ),
                data: Some("{\"reason\":\"invalid_request_state\"}".to_owned()),
            }
        })
    }

    fn expect<'a>(&self, call: &'a Call, args: &'a str, principal: &'a str) -> state::Expect<'a> {
        state::Expect {
            method: "tools/call",
            tool: call.tool.as_str(),
            arguments: args,
            principal,
        }
    }

    /// The approval of `server` for a 2026 call: `Ok(None)` when the human approved it now,
    /// `Ok(Some(outcome))` for the answer to send instead of calling (the question, or a
    /// refusal of the request), `Err(Some(text))` for the texts of a legacy approval (declined,
    /// dismissed). `opened` is the call's own verified state of an approval question, if any.
    #[allow(clippy::too_many_arguments)] // One call's whole context; a struct would only rename it.
    pub(super) fn approve_modern(
        &self,
        call: &Call,
        conn: &Arc<Connection>,
        server: &str,
        tool: &str,
        args: &str,
        mrtr: &Mrtr,
        opened: Option<&state::Claims>,
    ) -> Result<Option<Outcome>, Option<String>> {
        let key = (server.to_owned(), conn.generation);
        let full = call.tool.as_str();
        if self.declined_lock().contains(&key) {
            return Err(Some(approval::declined(server, full)));
        }
        let principal = self.caller.principal().to_string();
        if let Some(claims) = opened {
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
        let sealer = crate::state_key::sealer(self.config.data_dir.as_deref());
        let result = json!({
            "resultType": "input_required",
            "inputRequests": {APPROVAL_KEY: {"method": "elicitation/create", "params": question}},
            "requestState": sealer.seal(&self.expect(call, args, &principal)),
        });
        Ok(Some(Outcome::Result(result.to_string())))
    }

    /// An upstream server's `input_required` result for our 2026 client: its questions as
    /// they are, its state sealed inside ours (so the retry comes back to this call, and the
    /// server gets its own state back with the answers).
    pub(super) fn relay_input_required(&self, call: &Call, args: &str, result: &Value) -> String {
        let principal = self.caller.principal().to_string();
        let sealer = crate::state_key::sealer(self.config.data_dir.as_deref());
        let upstream = result["requestState"].as_str().map(str::to_owned);
        let mut relayed = json!({
            "resultType": "input_required",
            "requestState": sealer.seal_upstream(&self.expect(call, args, &principal), upstream),
        });
        if let Some(requests) = result.get("inputRequests").filter(|r| r.is_object()) {
            relayed["inputRequests"] = requests.clone();
        }
        relayed.to_string()
    }
}

/// The most rounds of questions a 2026 upstream server may ask a 2025 client of ours in one
/// call.
const MAX_ROUNDS: usize = 4;

impl Inner {
    /// An upstream server's `input_required` for a 2025 client of ours: each of its
    /// elicitations asked as a request of ours (`elicitation/create`), the answers by key, and
    /// the server's state for the retry. `Err(None)`: cancelled; `Err(Some(text))`: the client
    /// cannot be asked, or did not answer.
    pub(super) fn ask_for_upstream(
        &self,
        call: &Call,
        server: &str,
        result: &Value,
        round: usize,
    ) -> Result<(Value, Option<String>), Option<String>> {
        let full = call.tool.as_str();
        if round > MAX_ROUNDS {
            return Err(Some(format!(
                "{full} did not run: the MCP server \"{server}\" asked for input {MAX_ROUNDS} \
                 times without being satisfied"
            )));
        }
        let requests = result["inputRequests"].as_object();
        let all_elicitations = requests.is_some_and(|r| {
            r.values()
                .all(|q| q["method"].as_str() == Some("elicitation/create"))
        });
        if !all_elicitations || !self.can_elicit.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(Some(input_required_for_legacy(full, server)));
        }
        let mut responses = serde_json::Map::new();
        for (key, request) in requests.into_iter().flatten() {
            match self.asks.ask(
                &*self.out,
                "elicitation/create",
                request["params"].clone(),
                call.deadline,
                &call.cancelled,
            ) {
                Ok(answer) => {
                    responses.insert(key.clone(), answer);
                }
                Err(super::ask::AskError::Cancelled) => return Err(None),
                Err(e) => {
                    return Err(Some(format!(
                        "{full} did not run: the question of the MCP server \"{server}\" was \
                         not answered ({e})"
                    )))
                }
            }
        }
        let state = result["requestState"].as_str().map(str::to_owned);
        Ok((Value::Object(responses), state))
    }
}
