//! The prompts, resources and resource templates of the upstream servers, for one session:
//! their listings, and `prompts/get`, `resources/read` and `completion/complete` passed on to
//! the server they belong to — in both eras, under the grants and the approval tools have.
//!
//! Invariants: nothing reaches a server the caller is not granted (prompts like tools of the
//! same name, resources only with a grant of the whole server); `prompts/get` and
//! `resources/read` ask the human first on a connection not yet approved, as a tool call
//! does; `completion/complete` never asks (it answers no suggestions instead); every request
//! gets one answer — a result, or a JSON-RPC error naming what was wrong — unless cancelled.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};

use super::outcome::{Mrtr, Outcome};
use super::{Inner, Session};
use crate::calls::Call;
use coremcp_engine::pool;
use coremcp_upstream::hub::Listing;
use coremcp_upstream::rpc::UpstreamError;
use coremcp_upstream::supervisor::Server;
use coremcp_upstream::surface;
use coremcp_wire::modern::{Envelope, Refusal};
use coremcp_wire::rpc;

/// Time kept back from the deadline so the server's own timeout is reported first.
const MARGIN: Duration = Duration::from_millis(250);

/// One request on its way to an upstream server.
struct Forward {
    server: Arc<Server>,
    method: &'static str,
    /// The parameters as the server takes them (its own names and URIs).
    params: Value,
    /// What the human is asked about, and what errors name.
    label: String,
}

fn invalid(message: String) -> Refusal {
    Refusal::new(rpc::INVALID_PARAMS, message)
}

impl Session {
    /// Serves one of this module's methods (`modern`: the envelope of a 2026 request).
    pub(super) fn surface_request(
        &self,
        id: &str,
        method: &str,
        params: Option<&RawValue>,
        modern: Option<&Envelope>,
    ) {
        let inner = &self.inner;
        let listing = |key: &str, pick: fn(&Listing) -> &Vec<String>| {
            let hub = &inner.upstreams;
            let listing = hub.surface_for(&inner.caller);
            let result = format!("{{\"{key}\":[{}]}}", pick(&listing).join(","));
            *inner.surface_lock() = Some(listing);
            match modern {
                Some(_) => coremcp_wire::modern::cacheable(&result),
                None => result,
            }
        };
        let answer = match method {
            "prompts/list" => listing("prompts", |l| &l.prompts),
            "resources/list" => listing("resources", |l| &l.resources),
            "resources/templates/list" => listing("resourceTemplates", |l| &l.templates),
            _ => return self.forward(id, method, params, modern),
        };
        inner.out.send(rpc::response(id, &answer));
    }

    /// Resolves a `prompts/get`, `resources/read` or `completion/complete` and runs it on the
    /// pool.
    fn forward(
        &self,
        id: &str,
        method: &str,
        params: Option<&RawValue>,
        modern: Option<&Envelope>,
    ) {
        let inner = &self.inner;
        let value: Value = params
            .and_then(|p| serde_json::from_str(p.get()).ok())
            .unwrap_or_else(|| json!({}));
        let forward = match inner.resolve_forward(method, value) {
            Ok(forward) => forward,
            Err(refusal) => return inner.out.send(refusal.to_message(Some(id))),
        };
        let mut timeout = inner.config.call_timeout;
        if inner.upstreams.policy().needs_approval(forward.server.id()) {
            timeout += super::call::APPROVAL_WAIT;
        }
        let client = inner.session_client();
        let origin = crate::calls::Origin {
            caller: &inner.caller,
            client: None,
            budget: inner.budget_of(client.as_deref(), None),
        };
        let Some(call) = inner.calls.start(id, &forward.label, None, timeout, origin) else {
            return inner.out.send(rpc::error(
                Some(id),
                rpc::INVALID_REQUEST,
                &super::duplicate(id),
            ));
        };
        call.not_a_tool.store(true, Ordering::Relaxed);
        let mrtr = modern.map(|envelope| {
            #[derive(Deserialize)]
            struct Retry {
                #[serde(default, rename = "inputResponses")]
                responses: Option<Value>,
                #[serde(default, rename = "requestState")]
                state: Option<String>,
            }
            let retry = params
                .and_then(|p| serde_json::from_str::<Retry>(p.get()).ok())
                .unwrap_or(Retry {
                    responses: None,
                    state: None,
                });
            Mrtr {
                can_elicit: envelope.can_elicit,
                tasks: false,
                responses: retry.responses,
                state: retry.state,
            }
        });
        let job = Arc::clone(inner);
        pool::global().spawn(Box::new(move || {
            let message = match job.run_forward(&call, &forward, mrtr.as_ref()) {
                Ok(result) => rpc::response(&call.id, &result),
                Err(Some(refusal)) => refusal.to_message(Some(&call.id)),
                Err(None) => return,
            };
            if job.calls.finish(&call, &message) {
                job.out.send(message);
                job.calls.answered();
            }
        }));
    }
}

impl Inner {
    pub(super) fn surface_lock(&self) -> std::sync::MutexGuard<'_, Option<Listing>> {
        self.surface_listed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Tells the client its prompts or resources changed, if it listed them and they did.
    pub(super) fn surface_changed(&self) {
        let mut listed = self.surface_lock();
        let Some(before) = listed.as_ref() else {
            return;
        };
        let after = self.upstreams.surface_for(&self.caller);
        let prompts = before.prompts != after.prompts;
        let resources = before.resources != after.resources || before.templates != after.templates;
        *listed = Some(after);
        drop(listed);
        if prompts {
            self.out.send(rpc::notification_without_params(
                "notifications/prompts/list_changed",
            ));
        }
        if resources {
            self.out.send(rpc::notification_without_params(
                "notifications/resources/list_changed",
            ));
        }
    }

    /// Where a request goes and what it says there, or why it cannot go.
    fn resolve_forward(&self, method: &str, mut params: Value) -> Result<Forward, Refusal> {
        let hub = &self.upstreams;
        let caller = &self.caller;
        let (server, label) = match method {
            "prompts/get" => {
                let full = params["name"]
                    .as_str()
                    .ok_or_else(|| invalid("prompts/get needs a name".into()))?
                    .to_owned();
                let (target, name) = hub.resolve_prompt(caller, &full).map_err(invalid)?;
                params["name"] = Value::from(name);
                (target.server, full)
            }
            "resources/read" => {
                let uri = params["uri"]
                    .as_str()
                    .ok_or_else(|| invalid("resources/read needs a uri".into()))?
                    .to_owned();
                let (server, original) = hub.resolve_resource(caller, &uri).map_err(invalid)?;
                params["uri"] = Value::from(original);
                (server, uri)
            }
            "completion/complete" => {
                let reference = &mut params["ref"];
                match reference["type"].as_str() {
                    Some("ref/prompt") => {
                        let full = reference["name"].as_str().unwrap_or_default().to_owned();
                        let (target, name) = hub.resolve_prompt(caller, &full).map_err(invalid)?;
                        reference["name"] = Value::from(name);
                        (target.server, full)
                    }
                    Some("ref/resource") => {
                        let uri = reference["uri"].as_str().unwrap_or_default().to_owned();
                        let (server, original) =
                            hub.resolve_resource(caller, &uri).map_err(invalid)?;
                        reference["uri"] = Value::from(original);
                        (server, uri)
                    }
                    other => {
                        return Err(invalid(format!(
                            "completion/complete: ref.type must be ref/prompt or ref/resource, \
                             not {other:?}"
                        )))
                    }
                }
            }
            other => {
                return Err(Refusal::new(
                    rpc::METHOD_NOT_FOUND,
                    format!("method not found: {other}"),
                ))
            }
        };
        if let Some(object) = params.as_object_mut() {
            // Ours, not the server's: the 2026 retry fields are put back where they belong.
            object.remove("_meta");
            object.remove("inputResponses");
            object.remove("requestState");
        }
        let method = match method {
            "prompts/get" => "prompts/get",
            "resources/read" => "resources/read",
            _ => "completion/complete",
        };
        Ok(Forward {
            server,
            method,
            params,
            label: format!("{method} {label}"),
        })
    }

    /// Runs a forwarded request: its result's JSON text; `Err(None)` when it was cancelled.
    fn run_forward(
        self: &Arc<Self>,
        call: &Arc<Call>,
        forward: &Forward,
        mrtr: Option<&Mrtr>,
    ) -> Result<String, Option<Refusal>> {
        let server = &forward.server;
        let sid = server.id();
        let failed = |why: String| Some(Refusal::new(rpc::INTERNAL_ERROR, why));
        let conn = server.connection(call.deadline).map_err(|why| {
            failed(format!(
                "{} is unavailable: the MCP server \"{sid}\" {why}",
                forward.label
            ))
        })?;
        let args = forward.params.to_string();
        let opened = match mrtr.and_then(|m| m.state.as_deref()) {
            None => None,
            Some(token) => Some(self.open_state(call, &args, token).map_err(Some)?),
        };
        let asks = self.upstreams.policy().needs_approval(sid) && !conn.approved_for(&self.caller);
        if asks && forward.method == "completion/complete" {
            // Suggestions are not worth a question; the real request will ask.
            return Ok("{\"completion\":{\"values\":[]}}".to_owned());
        }
        let refused = |text: Option<String>| text.map(|t| Refusal::new(rpc::INVALID_REQUEST, t));
        if asks {
            match mrtr {
                None => self
                    .approve(call, &conn, sid, &forward.label, &args)
                    .map_err(refused)?,
                Some(mrtr) => {
                    let ours = opened.as_ref().filter(|c| c.u.is_none());
                    match self
                        .approve_modern(call, &conn, sid, &forward.label, &args, mrtr, ours)
                        .map_err(refused)?
                    {
                        None => {}
                        Some(Outcome::Result(question)) => return Ok(question),
                        Some(Outcome::Refused(refusal)) => return Err(Some(refusal)),
                        Some(Outcome::Cancelled | Outcome::Detached) => return Err(None),
                    }
                }
            }
        }
        let mut params = forward.params.clone();
        if let (Some(mrtr), Some(upstream)) = (mrtr, opened.as_ref().and_then(|c| c.u.clone())) {
            if let Some(responses) = &mrtr.responses {
                params["inputResponses"] = responses.clone();
            }
            if !upstream.is_empty() {
                params["requestState"] = Value::from(upstream);
            }
        }
        if mrtr.is_some_and(|m| m.can_elicit) && conn.client.is_modern() {
            params["_meta"] = json!({coremcp_wire::modern::CAPABILITIES_KEY: {"elicitation": {}}});
        }
        let left = call
            .deadline
            .saturating_duration_since(Instant::now())
            .saturating_sub(MARGIN);
        let timeout = conn.client.timeout().min(left);
        match conn
            .client
            .request(forward.method, params, timeout, &call.cancelled)
        {
            Ok(result) if result["resultType"] == "input_required" => match mrtr {
                Some(mrtr) => match super::outcome::undeclared(&result, mrtr, sid) {
                    Some(refusal) => Err(Some(refusal)),
                    None => Ok(self.relay_input_required(call, &args, &result)),
                },
                None => Err(Some(Refusal::new(
                    rpc::INVALID_REQUEST,
                    super::outcome::input_required_for_legacy(&forward.label, sid),
                ))),
            },
            Ok(result) => Ok(match forward.method {
                // A 2026 read is cacheable, like a list.
                "resources/read" => match mrtr {
                    Some(_) => coremcp_wire::modern::cacheable(
                        &surface::read_result(sid, result).to_string(),
                    ),
                    None => surface::read_result(sid, result).to_string(),
                },
                "prompts/get" => surface::prompt_result(sid, result).to_string(),
                _ => result.to_string(),
            }),
            Err(UpstreamError::Cancelled { .. }) => Err(None),
            Err(UpstreamError::Rpc { code, message, .. }) => Err(Some(Refusal::new(code, message))),
            Err(e) => Err(failed(format!(
                "{} failed: the MCP server \"{sid}\": {e}",
                forward.label
            ))),
        }
    }
}
