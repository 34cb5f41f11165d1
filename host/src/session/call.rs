//! The call path: a `tools/call` from the moment it is read to its answer — the meta tools
//! (`tools_search`, `tools_call`, the group switches), the policy and route of the call, and
//! each route carried out: a plugin of this process, a peer Core MCP (relays, routes,
//! `remote_host`), or an upstream server.
//!
//! Invariants: `tools_call` names a call that then runs here exactly as a direct one; every
//! call gets one answer (or none once cancelled), sent by whoever finishes it first — the run,
//! the watchdog or a cancel (`crate::calls`).

use std::borrow::Cow;
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use coremcp_plugin_api::CallCtx;
use serde::Deserialize;
use serde_json::value::RawValue;

use super::outcome::{Mrtr, Outcome};
use super::{duplicate, groups, log_rank, search, Inner, Session};
use crate::calls::Call;
use crate::route::{self, Route, Run};
use coremcp_engine::host_api;
use coremcp_engine::pool;
use coremcp_upstream::hub::Target;
use coremcp_wire::mcp::Menu;
use coremcp_wire::render;
use coremcp_wire::rpc;

/// Built once: building a searcher costs more than searching a short text with it.
static TIMEOUT_KEY: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"timeout_s\""));

/// The longest deadline a call can ask for through `timeout_s`.
const MAX_CALL_TIMEOUT: Duration = Duration::from_secs(605);
/// Time a tool's own `timeout_s` gets on top, to report its own timeout before the host's.
const TIMEOUT_GRACE: Duration = Duration::from_secs(5);
/// Time an upstream call that may ask the human for approval gets on top of its deadline.
pub(super) const APPROVAL_WAIT: Duration = Duration::from_secs(120);

/// A call's deadline: `default`, or the tool's own `timeout_s` (given in `args`, else
/// `declared`, asked only then) and a grace on top when that is longer, up to
/// [`MAX_CALL_TIMEOUT`].
fn call_timeout(default: Duration, args: &str, declared: impl FnOnce() -> Option<u64>) -> Duration {
    #[derive(Deserialize)]
    struct Probe {
        timeout_s: Option<u64>,
    }
    let given = if TIMEOUT_KEY.find(args.as_bytes()).is_some() {
        serde_json::from_str::<Probe>(args)
            .ok()
            .and_then(|p| p.timeout_s)
    } else {
        None
    };
    match given.or_else(declared) {
        Some(s) => {
            (Duration::from_secs(s) + TIMEOUT_GRACE).clamp(default, MAX_CALL_TIMEOUT.max(default))
        }
        None => default,
    }
}

impl Session {
    pub(super) fn tools_call(&self, id: &str, params: Option<&RawValue>) {
        self.call_tool(id, params, None)
    }

    /// A `tools/call`; `modern` is the envelope of a 2026 request.
    pub(super) fn call_tool(
        &self,
        id: &str,
        params: Option<&RawValue>,
        modern: Option<&coremcp_wire::modern::Envelope>,
    ) {
        #[derive(Deserialize)]
        struct Params<'a> {
            #[serde(borrow)]
            name: Cow<'a, str>,
            #[serde(borrow, default)]
            arguments: Option<&'a RawValue>,
            #[serde(borrow, rename = "_meta", default)]
            meta: Option<&'a RawValue>,
            #[serde(default, rename = "inputResponses")]
            input_responses: Option<serde_json::Value>,
            #[serde(default, rename = "requestState")]
            request_state: Option<String>,
        }
        let inner = &self.inner;
        let reject =
            |code: i64, message: String| inner.out.send(rpc::error(Some(id), code, &message));
        let params = match params.map(|p| serde_json::from_str::<Params<'_>>(p.get())) {
            Some(Ok(p)) => p,
            Some(Err(e)) => return reject(rpc::INVALID_PARAMS, format!("tools/call: {e}")),
            None => return reject(rpc::INVALID_PARAMS, "tools/call needs params".to_owned()),
        };
        let args = match params.arguments.map(RawValue::get) {
            None | Some("null") => "{}",
            Some(text) if text.starts_with('{') => text,
            Some(_) => {
                return reject(
                    rpc::INVALID_PARAMS,
                    "tools/call: arguments must be an object".to_owned(),
                )
            }
        };
        let name = params.name.as_ref();
        // `tools_call`: the call it names runs from here exactly as a direct one.
        let named;
        let (name, args, via_meta) = if inner.menu != Menu::Plain && name == search::CALL {
            match search::inner_call(args) {
                Ok(call) => {
                    named = call;
                    (named.0.as_str(), named.1.as_str(), true)
                }
                Err(message) => {
                    return inner
                        .out
                        .send(rpc::response(id, &render::call_error_text(&message)))
                }
            }
        } else {
            (name, args, false)
        };
        if inner.menu != Menu::Plain && name == search::SEARCH {
            return self.search_call(id, args);
        }
        if let Some(enabled) = &inner.enabled {
            if groups::is_meta(name) && inner.menu == Menu::Dynamic {
                return self.groups_call(id, name, args, enabled);
            }
            let hidden = self.group_of(name).filter(|g| !enabled.contains(g));
            if let Some(group) = hidden.filter(|_| !via_meta) {
                crate::metrics::refused(&crate::metrics::Subject::of(name, Some(&group)));
                let text = groups::not_enabled(name, &group, inner.menu == Menu::Dynamic);
                return inner
                    .out
                    .send(rpc::response(id, &render::call_error_text(&text)));
            }
        }
        let mut hop = match coremcp_relay::hop::Incoming::parse(params.meta) {
            Ok(hop) => hop,
            Err(e) => return reject(rpc::INVALID_PARAMS, format!("tools/call: {e}")),
        };
        // A client name is believed from a configured peer only; from anyone else it is dropped.
        let client = hop
            .client(&inner.caller, &inner.config.peer_tokens)
            .map(str::to_owned);
        hop.client = client;
        // Who the policy judges: the session's caller, or the principal a configured peer
        // passed on; a call that already passed through here is refused before anything.
        let caller = match hop.check_loop().and_then(|()| {
            hop.caller(
                &inner.caller,
                &inner.config.peer_tokens,
                inner.config.oauth_issuer.as_deref(),
            )
        }) {
            Ok(caller) => caller,
            Err(e) => {
                crate::metrics::refused(&crate::metrics::Subject::of(name, None));
                let text = e.to_string();
                tracing::warn!(tool = %name, "call refused: {text}");
                return inner
                    .out
                    .send(rpc::response(id, &render::call_error_text(&text)));
            }
        };
        let route = route::decide(&inner.route_cx_for(&caller), name, args, &hop);
        tracing::debug!(tool = %name, route = route.kind(), "call {name}");
        match route {
            Route::Unknown(message) => {
                crate::metrics::refused(&crate::metrics::Subject::unknown());
                reject(rpc::INVALID_PARAMS, message)
            }
            Route::Refused(refusal) => {
                // An upstream name is counted by its server only once the server is known to
                // exist (a denial); any other refused `mcp__` name is the caller's text.
                let subject = match (&refusal, name.starts_with("mcp__")) {
                    (route::Refusal::Denied(_), true) | (_, false) => {
                        crate::metrics::Subject::of(name, None)
                    }
                    (_, true) => crate::metrics::Subject::unknown(),
                };
                crate::metrics::refused(&subject);
                inner
                    .out
                    .send(rpc::response(id, &render::call_error_text(refusal.text())))
            }
            Route::Upstream(target) => {
                let mut timeout = self.timeout_for(args, || None);
                if inner.upstreams.may_ask(&target, &inner.caller) {
                    // A human answers in minutes, not seconds.
                    timeout += APPROVAL_WAIT;
                }
                let Some(call) =
                    inner
                        .calls
                        .start(id, name, None, timeout, &caller, hop.client.as_deref())
                else {
                    return reject(rpc::INVALID_REQUEST, duplicate(id));
                };
                let job_inner = Arc::clone(inner);
                let args = args.to_owned();
                let mrtr = modern.map(|envelope| Mrtr {
                    can_elicit: envelope.can_elicit,
                    responses: params.input_responses,
                    state: params.request_state,
                });
                // Sent on from this thread when nothing about it can wait.
                if mrtr.is_none() {
                    if let Some(outcome) = job_inner.upstream_now(&call, &target, &args) {
                        return job_inner.finish_upstream(&call, outcome);
                    }
                }
                pool::global().spawn(Box::new(move || {
                    job_inner.answer_upstream(&call, &target, &args, mrtr.as_ref());
                }));
            }
            Route::Run(run) => {
                let group = inner.plugins.slots()[run.index].id.as_str();
                // The tool's declared default is looked up only for a call that gives none.
                let slot = &inner.plugins.slots()[run.index];
                let timeout = self.timeout_for(args, || {
                    slot.listing().and_then(|l| l.declared_timeout(name))
                });
                let Some(call) = inner.calls.start(
                    id,
                    name,
                    Some(group),
                    timeout,
                    &caller,
                    hop.client.as_deref(),
                ) else {
                    return reject(rpc::INVALID_REQUEST, duplicate(id));
                };
                if let Some(floor) = modern
                    .and_then(|m| m.log_level.as_deref())
                    .and_then(log_rank)
                {
                    call.log_floor.store(floor + 1, Ordering::Relaxed);
                }
                let job_inner = Arc::clone(inner);
                let index = run.index;
                let subject = call.subject.clone();
                inner.plugins.slots()[index].gate.submit(
                    pool::global(),
                    Box::new(move || job_inner.run_call(&call, &run)),
                    Some(subject.pace()),
                );
            }
        }
    }

    /// Answers `tools_search`: the tools of every group and upstream server the caller would
    /// be listed, enabled or not, ranked for its query.
    fn search_call(&self, id: &str, args: &str) {
        let inner = &self.inner;
        let result = match search::query(args) {
            Ok(query) => {
                // Every group, enabled or not; only the tools the caller may call.
                let (grants, caller) = (&inner.config.grants, &inner.caller);
                let plugin = inner.render_entries(&|_: &str| true, &|group: &str, tool: &str| {
                    route::may_call(grants, caller, group, tool)
                });
                let upstream = match inner.upstreams.enabled() {
                    true => inner.upstreams.entries_for(&inner.caller),
                    false => Vec::new(),
                };
                let entries = plugin
                    .iter()
                    .map(|e| &**e)
                    .chain(upstream.iter().map(String::as_str));
                render::call_success(&search::answer(&query, entries).to_string())
            }
            Err(message) => render::call_error_text(&message),
        };
        inner.out.send(rpc::response(id, &result));
    }

    /// Answers a meta tool of dynamic mode, then tells the client if its tool list changed.
    fn groups_call(&self, id: &str, name: &str, args: &str, enabled: &groups::Enabled) {
        let inner = &self.inner;
        if !inner.meta_tools && name != groups::LIST {
            let text = groups::needs_a_session(name);
            return inner
                .out
                .send(rpc::response(id, &render::call_error_text(&text)));
        }
        let outcome = groups::call(&inner.plugins, enabled, name, args);
        let result = match &outcome.result {
            Ok(value) => render::call_success(&value.to_string()),
            Err(message) => render::call_error_text(message),
        };
        inner.out.send(rpc::response(id, &result));
        if outcome.changed {
            *inner.tools.write().unwrap_or_else(PoisonError::into_inner) = None;
            inner.out.send(rpc::notification_without_params(
                "notifications/tools/list_changed",
            ));
        }
    }

    /// The group of a plugin tool (catalog first, then the loaded groups outside it).
    fn group_of(&self, tool: &str) -> Option<String> {
        if let Some(group) = coremcp_catalog::group_of(tool) {
            return Some(group.id.to_owned());
        }
        let plugins = &self.inner.plugins;
        plugins
            .loaded_route(tool)
            .map(|index| plugins.slots()[index].id.clone())
    }

    /// The call's deadline: the default, or longer when the tool runs for its own
    /// `timeout_s` — the one the call gives, else the one the tool declares (`declared`).
    fn timeout_for(&self, args: &str, declared: impl FnOnce() -> Option<u64>) -> Duration {
        call_timeout(self.inner.config.call_timeout, args, declared)
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
    fn run_call(self: &Arc<Self>, call: &Call, run: &Run) {
        if call.cancelled.load(Ordering::Relaxed) {
            // The cancel or the watchdog claimed it; nothing is left to answer.
            if self.calls.finish(call, "") {
                self.calls.answered();
            }
            return;
        }
        let cx = self.route_cx();
        let deadline = route::peer_deadline(call.deadline, call.timeout);
        let message = match route::call_peer(&cx, run, &call.tool, deadline, &call.cancelled) {
            None => {
                let started = std::time::Instant::now();
                let result = self.run_plugin(run, call);
                call.subject.pace().record(started.elapsed(), true);
                rpc::response(&call.id, &result)
            }
            Some(outcome) => route::forwarded_answer(&call.id, &call.tool, outcome),
        };
        if self.calls.finish(call, &message) {
            self.out.send(message);
            self.calls.answered();
        }
    }

    /// Runs the call in its group's plugin; the `CallToolResult` as JSON text.
    fn run_plugin(self: &Arc<Self>, run: &Run, call: &Call) -> String {
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
            Ok(json) => match render::plugin_success(&call.tool, json.as_str()) {
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
            Err(e) => render::call_error(&call.tool, &e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tools_own_timeout_sets_the_deadline_given_or_declared() {
        let default = Duration::from_secs(30);
        let secs = |s: u64| Duration::from_secs(s);
        // Nothing said, nothing declared: the default.
        assert_eq!(call_timeout(default, r#"{"a":1}"#, || None), default);
        // The declared default runs its full time (a Compose `down` with a long grace).
        assert_eq!(call_timeout(default, "{}", || Some(120)), secs(125));
        // A call that gives its own never asks for the declared one.
        let given = call_timeout(default, r#"{"timeout_s":60}"#, || unreachable!("looked up"));
        assert_eq!(given, secs(65));
        // What the call gives wins over what the tool declares, either way.
        assert_eq!(
            call_timeout(default, r#"{"timeout_s":300}"#, || Some(120)),
            secs(305)
        );
        assert_eq!(
            call_timeout(default, r#"{"timeout_s":1}"#, || Some(120)),
            default
        );
        // Never shorter than the default, never past the longest.
        assert_eq!(call_timeout(default, "{}", || Some(10)), default);
        assert_eq!(
            call_timeout(default, r#"{"timeout_s":9999}"#, || None),
            MAX_CALL_TIMEOUT
        );
        // A nested `timeout_s` or a bad value is not the tool's.
        assert_eq!(
            call_timeout(default, r#"{"x":{"timeout_s":300}}"#, || None),
            default
        );
        assert_eq!(
            call_timeout(default, r#"{"timeout_s":"300"}"#, || Some(120)),
            secs(125)
        );
    }
}
