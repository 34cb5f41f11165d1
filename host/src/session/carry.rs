//! Carrying out a decided route: [`Session::carry_out`] is the one function every route of a
//! `tools/call` goes through — a refusal or an unknown tool answered, an upstream call or a
//! built-in one started — and the pool thread then runs the call where the route says: this
//! process's plugin, the relays or route targets, or a `remote_host`'s Core MCP.
//!
//! Invariants: every call gets one answer (or none once cancelled), sent by whoever finishes it
//! first — the run, the watchdog or a cancel (`crate::calls`); a peer's answer is passed on as
//! the peer wrote it, and only a failure to get one is worded here.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use coremcp_plugin_api::CallCtx;
use coremcp_relay::client::Reply;
use coremcp_relay::hop::{Incoming, Outgoing};
use coremcp_relay::ForwardError;
use coremcp_upstream::hub::Target;
use coremcp_wire::policy::Caller;
use coremcp_wire::{render, rpc};

use super::call::{Request, APPROVAL_WAIT};
use super::outcome::{Mrtr, Outcome};
use super::tasks::Fate;
use super::{duplicate, log_rank, Inner, Session};
use crate::calls::{Call, Origin};
use crate::registry;
use crate::route::{self, Refusal, Route, Run, To};
use coremcp_engine::{host_api, pool};

impl Session {
    /// Carries out `route` for the call `request` of request `id` by `caller`: answered now
    /// (unknown, refused) or started on a pool thread (upstream, built-in).
    pub(super) fn carry_out(
        &self,
        id: &str,
        request: Request<'_>,
        route: Route,
        caller: &Caller,
        hop: &Incoming,
        modern: Option<&coremcp_wire::modern::Envelope>,
    ) {
        let name = request.name.as_ref();
        let client = self.inner.client_of(hop, modern);
        let origin = Origin {
            caller,
            client: client.as_deref(),
            budget: self.inner.budget_of(client.as_deref(), hop.budget),
        };
        match route {
            Route::Unknown(message) => {
                crate::metrics::refused(&crate::metrics::Subject::unknown());
                self.reject(id, rpc::INVALID_PARAMS, &message)
            }
            Route::Refused(refusal) => {
                // An upstream name is counted by its server only once the server is known to
                // exist (a denial); any other refused `mcp__` name is the caller's text.
                let subject = match (&refusal, name.starts_with("mcp__")) {
                    (Refusal::Denied(_), true) | (_, false) => {
                        crate::metrics::Subject::of(name, None)
                    }
                    (_, true) => crate::metrics::Subject::unknown(),
                };
                crate::metrics::refused(&subject);
                self.tool_error(id, refusal.text())
            }
            Route::Upstream(target) => {
                let mrtr = modern.map(|envelope| Mrtr {
                    can_elicit: envelope.can_elicit,
                    tasks: envelope.tasks,
                    responses: request.input_responses.clone(),
                    state: request.request_state.clone(),
                });
                self.start_upstream(id, &request, target, origin, mrtr)
            }
            Route::Run(run) => {
                let run = match self.task_fate(name, &run, modern) {
                    Fate::Task(tasks) => match self.start_task(id, &request, run, origin, tasks) {
                        Ok(()) => return,
                        Err(run) => run,
                    },
                    Fate::Refused(refusal) => {
                        return self.inner.out.send(refusal.to_message(Some(id)))
                    }
                    Fate::Cannot(text) => return self.tool_error(id, &text),
                    Fate::Plain => run,
                };
                self.start_run(id, &request, run, origin, hop, modern)
            }
        }
    }

    /// Starts an upstream call: sent on from this thread when nothing about it can wait,
    /// else on a pool thread.
    fn start_upstream(
        &self,
        id: &str,
        request: &Request<'_>,
        target: Target,
        origin: Origin<'_>,
        mrtr: Option<Mrtr>,
    ) {
        let inner = &self.inner;
        let mut timeout = self.timeout_for(&request.args, || None);
        if inner.upstreams.may_ask(&target, &inner.caller) {
            // A human answers in minutes, not seconds.
            timeout += APPROVAL_WAIT;
        }
        let Some(call) = inner.calls.start(id, &request.name, None, timeout, origin) else {
            return self.reject(id, rpc::INVALID_REQUEST, &duplicate(id));
        };
        if let Some(token) = progress_token(request.meta) {
            let _ = call.progress.set(token);
        }
        let job_inner = Arc::clone(inner);
        let args = request.args.clone().into_owned();
        if mrtr.is_none() {
            if let Some(outcome) = job_inner.upstream_now(&call, &target, &args) {
                return job_inner.finish_upstream(&call, outcome);
            }
        }
        pool::global().spawn(Box::new(move || {
            job_inner.answer_upstream(&call, &target, &args, mrtr.as_ref());
        }));
    }

    /// Starts a built-in tool's call behind its group's gate.
    fn start_run(
        &self,
        id: &str,
        request: &Request<'_>,
        run: Run,
        origin: Origin<'_>,
        hop: &Incoming,
        modern: Option<&coremcp_wire::modern::Envelope>,
    ) {
        let inner = &self.inner;
        let name = request.name.as_ref();
        let slot = &inner.plugins.slots()[run.index];
        // The tool's declared default is looked up only for a call that gives none.
        let timeout = self.timeout_for(&request.args, || {
            slot.listing().and_then(|l| l.declared_timeout(name))
        });
        let Some(call) = inner.calls.start(id, name, Some(&slot.id), timeout, origin) else {
            return self.reject(id, rpc::INVALID_REQUEST, &duplicate(id));
        };
        if let Some(floor) = modern
            .and_then(|m| m.log_level.as_deref())
            .and_then(log_rank)
        {
            call.log_floor.store(floor + 1, Ordering::Relaxed);
        }
        // What a peer is told of the call: its principal, the agent's client, its path so far.
        let out = match run.to {
            To::Plugin => Outgoing::default(),
            To::Relays(_) | To::Remote(_) => {
                Outgoing::new(origin.caller, hop, origin.client).with_budget(call.budget)
            }
        };
        let job_inner = Arc::clone(inner);
        let subject = call.subject.clone();
        slot.gate.submit(
            pool::global(),
            Box::new(move || job_inner.run_call(&call, &run, &out)),
            Some(subject.pace()),
        );
    }
}

impl Inner {
    /// Runs an upstream call on a pool thread and answers it, unless the watchdog or a cancel
    /// did.
    fn answer_upstream(
        self: &Arc<Self>,
        call: &Arc<Call>,
        target: &Target,
        args: &str,
        mrtr: Option<&Mrtr>,
    ) {
        let outcome = self.run_upstream(call, target, args, mrtr);
        self.finish_upstream(call, outcome);
    }

    /// Answers an upstream call with its outcome, unless the watchdog or a cancel did.
    fn finish_upstream(&self, call: &Call, outcome: Outcome) {
        let message = match outcome {
            Outcome::Result(result) => rpc::response(&call.id, &result),
            Outcome::Refused(refusal) => refusal.to_message(Some(&call.id)),
            // The cancel or the watchdog claimed it; nothing is left to answer.
            Outcome::Cancelled => return,
            // The thread that reads the server's answer sends it.
            Outcome::Detached => return,
        };
        if self.calls.finish(call, &message) {
            self.out.send(message);
            self.calls.answered();
        }
    }

    /// Runs one call on a pool thread and answers it, unless the watchdog or a cancel did.
    fn run_call(self: &Arc<Self>, call: &Call, run: &Run, out: &Outgoing) {
        if call.cancelled.load(Ordering::Relaxed) {
            // The cancel or the watchdog claimed it; nothing is left to answer.
            if self.calls.finish(call, "") {
                self.calls.answered();
            }
            return;
        }
        let deadline = peer_deadline(call.deadline, call.timeout);
        let message = match &run.to {
            To::Plugin => {
                let started = std::time::Instant::now();
                let result = self.run_plugin(run, call);
                call.subject.pace().record(started.elapsed(), true);
                rpc::response(&call.id, &result)
            }
            To::Relays(relays) => {
                let outcome = relays.call(&call.tool, &run.args, out, deadline, &call.cancelled);
                forwarded_answer(&call.id, &call.tool, outcome, call.budget)
            }
            To::Remote(host) => self.run_remote(run, call, out, host, deadline),
        };
        if self.calls.finish(call, &message) {
            self.out.send(message);
            self.calls.answered();
        }
    }

    /// Runs the call in its group's plugin; the `CallToolResult` as JSON text.
    pub(super) fn run_plugin(self: &Arc<Self>, run: &Run, call: &Call) -> String {
        let inner = Arc::clone(self);
        let floor = call.log_floor.load(Ordering::Relaxed);
        let request = call.id.clone();
        let sink: host_api::LogSink = Arc::new(move |level, group: &str, message: &str| {
            inner.forward_log(&request, level, group, message, floor);
        });
        // The catalog's name of the tool, looked up in its own group only.
        let tool = self.plugins.slots()[run.index]
            .catalog
            .and_then(|group| group.entry(&call.tool))
            .map(|entry| entry.name);
        host_api::with_call(
            sink,
            Arc::clone(&call.caller),
            call.client.clone(),
            tool,
            call.budget,
            || self.run_loaded(run, call),
        )
    }

    fn run_loaded(&self, run: &Run, call: &Call) -> String {
        let (index, args) = (run.index, run.args.as_str());
        let loaded = self.plugins.load(index);
        if self
            .listed_generation()
            .is_some_and(|g| g != self.plugins.generation())
        {
            // Loading showed tools other than the sidecar listed: the client hears of it.
            self.relist();
        }
        match loaded {
            Err(e) => render::call_error_text(&route::unavailable(&call.tool, &e)),
            Ok(loaded) if run.judge_after_load => {
                let group = self.plugins.slots()[index].id.as_str();
                let decision = route::judge_loaded(
                    &self.config.grants,
                    &call.caller,
                    group,
                    &loaded,
                    &call.tool,
                    args,
                );
                match decision {
                    coremcp_wire::policy::Decision::Allow => self.call_loaded(&loaded, call, args),
                    coremcp_wire::policy::Decision::Refuse(text) => {
                        tracing::warn!(tool = %call.tool, "call refused: {text}");
                        render::call_error_text(&text)
                    }
                }
            }
            Ok(loaded) => self.call_loaded(&loaded, call, args),
        }
    }

    /// Calls the tool in its loaded library; the `CallToolResult` as JSON text.
    fn call_loaded(&self, loaded: &coremcp_engine::Loaded, call: &Call, args: &str) -> String {
        let ctx = CallCtx {
            deadline_unix_ms: call.deadline_unix_ms,
            cancelled: &call.cancelled,
        };
        let outcome = loaded.library.module.call()(&ctx, call.tool.as_str().into(), args.into());
        match outcome.into_result() {
            Ok(json) => match render::plugin_success(&call.tool, json.as_str(), call.budget) {
                Ok(result) => result,
                Err(replaced) => {
                    crate::metrics::oversized(&call.subject);
                    tracing::error!(
                        tool = %call.tool,
                        chars = json.as_str().chars().count(),
                        "defect: a built-in tool answered more than a result may hold; the \
                         answer was withheld"
                    );
                    replaced
                }
            },
            Err(e) => {
                use coremcp_plugin_api::codes::{INTERNAL, PANIC};
                if matches!(e.code.as_str(), PANIC | INTERNAL) {
                    let _ = call
                        .crashed
                        .set(format!("{} failed ({}): {}", call.tool, e.code, e.message));
                }
                render::call_error(&call.tool, &e)
            }
        }
    }

    /// Runs a call on the Core MCP of Registry host `host`, its address looked up now.
    fn run_remote(
        &self,
        run: &Run,
        call: &Call,
        out: &Outgoing,
        host: &str,
        deadline: Instant,
    ) -> String {
        let target = match registry::resolve(&self.plugins, host, self.config.call_timeout) {
            Ok(target) => target,
            Err(e) => {
                let text = format!("{}: {e}", call.tool);
                return rpc::response(&call.id, &render::call_error_text(&text));
            }
        };
        tracing::debug!(tool = %call.tool, host = %host, "forwarding to remote_host {host}");
        let outcome = coremcp_relay::call_remote(
            &self.config.relay,
            &target.url,
            &call.tool,
            &run.args,
            out,
            deadline,
            &call.cancelled,
        );
        forwarded_answer(&call.id, &call.tool, outcome, call.budget)
    }
}

/// The JSON-RPC message that answers request `id` with what peers made of the call. A peer
/// keeps to the budget the call carried; one that did not (an older Core MCP) has its text cut
/// to `budget` on the way, as an upstream server's is.
fn forwarded_answer(
    id: &str,
    tool: &str,
    outcome: Result<Reply, ForwardError>,
    budget: usize,
) -> String {
    match outcome {
        // Written, a result has at least as many bytes as characters.
        Ok(Reply::Result(result)) if result.len() > budget => {
            let cut = serde_json::from_str::<serde_json::Value>(&result)
                .ok()
                .and_then(|mut value| {
                    coremcp_upstream::publish::cap_result(&mut value, budget)
                        .then(|| value.to_string())
                });
            coremcp_wire::rpc::response(id, cut.as_deref().unwrap_or(&result))
        }
        Ok(Reply::Result(result)) => coremcp_wire::rpc::response(id, &result),
        // As the peer answered it, `data` included.
        Ok(Reply::Error {
            code,
            message,
            data,
        }) => coremcp_wire::modern::error_with_data(Some(id), code, &message, data.as_deref()),
        Err(e) if e.may_have_run() => coremcp_wire::rpc::response(
            id,
            &coremcp_wire::render::call_error_text(&format!(
                "{tool}: {e}. It may have run there (a request was sent and no answer came): \
                 check its effect before calling it again"
            )),
        ),
        Err(e) => coremcp_wire::rpc::response(
            id,
            &coremcp_wire::render::call_error_text(&format!("{tool} could not be forwarded: {e}")),
        ),
    }
}

/// The `progressToken` of a request's `_meta`, as JSON text.
fn progress_token(meta: Option<&serde_json::value::RawValue>) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Meta<'a> {
        #[serde(borrow, default, rename = "progressToken")]
        token: Option<&'a serde_json::value::RawValue>,
    }
    let meta: Meta<'_> = serde_json::from_str(meta?.get()).ok()?;
    meta.token.map(|t| t.get().to_owned())
}

/// How long before the call's own deadline a peer must have answered, so the answer names
/// the peer that was too slow rather than being the host's generic timeout.
fn peer_deadline(deadline: Instant, timeout: Duration) -> Instant {
    deadline - (timeout / 10).min(Duration::from_millis(250))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    const MAX: usize = coremcp_wire::budget::MAX;

    #[test]
    fn peers_answers_pass_through_unchanged() {
        let ok = forwarded_answer(
            "7",
            "t",
            Ok(Reply::Result(r#"{"content":[],"isError":true}"#.into())),
            MAX,
        );
        assert_eq!(
            ok,
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":[],"isError":true}}"#
        );
        let err = forwarded_answer(
            "7",
            "t",
            Ok(Reply::Error {
                code: -32602,
                message: "bad".into(),
                data: Some(r#"{"field":"scope","hint":[1,2]}"#.into()),
            }),
            MAX,
        );
        let err: Value = serde_json::from_str(&err).expect("json");
        assert_eq!(err["error"]["code"], -32602);
        assert_eq!(err["error"]["message"], "bad");
        assert_eq!(
            err["error"]["data"],
            serde_json::json!({"field": "scope", "hint": [1, 2]})
        );
        // A request that reached the peer and got no answer: the call may have run.
        let lost = forwarded_answer(
            "8",
            "notepad_set",
            Err(ForwardError::Peer {
                peer: "http://r1/mcp".into(),
                error: coremcp_net::client::HttpError::Timeout,
            }),
            MAX,
        );
        assert!(lost.contains("It may have run there"), "{lost}");
        // One that never left: it did not.
        let unsent = forwarded_answer(
            "9",
            "notepad_set",
            Err(ForwardError::Peer {
                peer: "http://r1/mcp".into(),
                error: coremcp_net::client::HttpError::Connect {
                    addr: "r1".into(),
                    reason: "refused".into(),
                },
            }),
            MAX,
        );
        assert!(
            unsent.contains("could not be forwarded") && !unsent.contains("may have run"),
            "{unsent}"
        );
    }

    #[test]
    fn a_peers_answer_over_the_budget_is_cut_to_it() {
        let long = serde_json::json!({"content": [{"type": "text", "text": "z".repeat(15_000)}]});
        let reply = || Ok(Reply::Result(long.to_string()));
        // Within the budget: as the peer wrote it.
        let whole = forwarded_answer("1", "t", reply(), MAX);
        assert!(whole.contains(&"z".repeat(15_000)));
        // A Codex session's budget: cut, with the marker inside it.
        let cut: Value =
            serde_json::from_str(&forwarded_answer("1", "t", reply(), 10_000)).expect("json");
        let text = cut["result"]["content"][0]["text"].as_str().expect("text");
        // The marker counts in the limit (a shorter number may leave a character spare).
        assert!((9_990..=10_000).contains(&text.chars().count()));
        assert!(
            text.contains("[truncated by Core MCP"),
            "{}",
            &text[9_800..]
        );
    }
}
