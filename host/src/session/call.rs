//! The call path of a `tools/call`, in its steps: read ([`parse`]), the meta tools
//! (`tools_search`, `tools_call`, the group switches), the caller judged, the route decided
//! (`crate::route`), then carried out (`carry.rs`).
//!
//! Invariants: `tools_call` names a call that then runs here exactly as a direct one.

use std::borrow::Cow;
use std::sync::PoisonError;
use std::time::Duration;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::{groups, search, Session};
use crate::route;
use coremcp_relay::hop::Incoming;
use coremcp_wire::mcp::Menu;
use coremcp_wire::policy::Caller;
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

/// A `tools/call` as read: the tool, its arguments (a JSON object's text) and what else the
/// request brings.
pub(super) struct Request<'a> {
    pub name: Cow<'a, str>,
    pub args: Cow<'a, str>,
    pub meta: Option<&'a RawValue>,
    pub input_responses: Option<serde_json::Value>,
    pub request_state: Option<String>,
    /// Named through `tools_call`: it runs whether or not its group is enabled.
    pub via_meta: bool,
}

/// Reads a `tools/call`'s params; the error is the JSON-RPC message's text.
fn parse(params: Option<&RawValue>) -> Result<Request<'_>, String> {
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
    let params = match params.map(|p| serde_json::from_str::<Params<'_>>(p.get())) {
        Some(Ok(p)) => p,
        Some(Err(e)) => return Err(format!("tools/call: {e}")),
        None => return Err("tools/call needs params".to_owned()),
    };
    let args = match params.arguments.map(RawValue::get) {
        None | Some("null") => "{}",
        Some(text) if text.starts_with('{') => text,
        Some(_) => return Err("tools/call: arguments must be an object".to_owned()),
    };
    Ok(Request {
        name: params.name,
        args: Cow::Borrowed(args),
        meta: params.meta,
        input_responses: params.input_responses,
        request_state: params.request_state,
        via_meta: false,
    })
}

impl Session {
    pub(super) fn tools_call(&self, id: &str, params: Option<&RawValue>) {
        self.call_tool(id, params, None)
    }

    /// A `tools/call`; `modern` is the envelope of a 2026 request. Read, unwrapped from the
    /// meta tools, its caller judged, its route decided, then carried out (`carry.rs`).
    pub(super) fn call_tool(
        &self,
        id: &str,
        params: Option<&RawValue>,
        modern: Option<&coremcp_wire::modern::Envelope>,
    ) {
        let request = match parse(params) {
            Ok(request) => request,
            Err(message) => return self.reject(id, rpc::INVALID_PARAMS, &message),
        };
        let Some(request) = self.resolve_meta(id, request, modern) else {
            return;
        };
        let Some((caller, hop)) = self.judge_caller(id, &request) else {
            return;
        };
        let cx = self.inner.route_cx_for(&caller);
        let route = route::decide(&cx, &request.name, &request.args, &hop);
        tracing::debug!(tool = %request.name, route = route.kind(), "call {}", request.name);
        self.carry_out(id, request, route, &caller, &hop, modern);
    }

    /// A JSON-RPC error answering request `id`.
    pub(super) fn reject(&self, id: &str, code: i64, message: &str) {
        self.inner.out.send(rpc::error(Some(id), code, message));
    }

    /// A tool error result answering request `id`.
    pub(super) fn tool_error(&self, id: &str, text: &str) {
        self.inner
            .out
            .send(rpc::response(id, &render::call_error_text(text)));
    }

    /// The meta tools: `tools_call` unwrapped into the call it names, which then runs exactly
    /// as a direct one; `tools_search` and the group switches answered here, and a tool of a
    /// group not enabled refused. `None`: answered.
    fn resolve_meta<'a>(
        &self,
        id: &str,
        request: Request<'a>,
        modern: Option<&coremcp_wire::modern::Envelope>,
    ) -> Option<Request<'a>> {
        let inner = &self.inner;
        let mut request = request;
        if inner.menu != Menu::Plain && request.name == search::CALL {
            match search::inner_call(&request.args) {
                Ok((name, args)) => {
                    request.name = Cow::Owned(name);
                    request.args = Cow::Owned(args);
                    request.via_meta = true;
                }
                Err(message) => {
                    self.tool_error(id, &message);
                    return None;
                }
            }
        }
        let name = request.name.as_ref();
        if inner.menu != Menu::Plain && name == search::SEARCH {
            let client = inner.client_of(&Incoming::default(), modern);
            self.search_call(id, &request.args, inner.budget_of(client.as_deref(), None));
            return None;
        }
        if let Some(enabled) = &inner.enabled {
            if groups::is_meta(name) && inner.menu == Menu::Dynamic {
                self.groups_call(id, name, &request.args, enabled);
                return None;
            }
            let hidden = self.group_of(name).filter(|g| !enabled.contains(g));
            if let Some(group) = hidden.filter(|_| !request.via_meta) {
                crate::metrics::refused(&crate::metrics::Subject::of(name, Some(&group)));
                self.tool_error(
                    id,
                    &groups::not_enabled(name, &group, inner.menu == Menu::Dynamic),
                );
                return None;
            }
        }
        Some(request)
    }

    /// Who the policy judges — the session's caller, or the principal a configured peer passed
    /// on — and what the call's `_meta` says of its way here. A client name is believed from a
    /// configured peer only; a call that already passed through here is refused. `None`:
    /// answered.
    fn judge_caller(&self, id: &str, request: &Request<'_>) -> Option<(Cow<'_, Caller>, Incoming)> {
        let inner = &self.inner;
        let mut hop = match Incoming::parse(request.meta) {
            Ok(hop) => hop,
            Err(e) => {
                self.reject(id, rpc::INVALID_PARAMS, &format!("tools/call: {e}"));
                return None;
            }
        };
        hop.client = hop
            .client(&inner.caller, &inner.config.peer_tokens)
            .map(str::to_owned);
        let judged = hop.check_loop().and_then(|()| {
            hop.caller(
                &inner.caller,
                &inner.config.peer_tokens,
                inner.config.oauth_issuer.as_deref(),
            )
        });
        match judged {
            Ok(caller) => Some((caller, hop)),
            Err(e) => {
                crate::metrics::refused(&crate::metrics::Subject::of(&request.name, None));
                let text = e.to_string();
                tracing::warn!(tool = %request.name, "call refused: {text}");
                self.tool_error(id, &text);
                None
            }
        }
    }

    /// Answers `tools_search`: the tools of every group and upstream server the caller would
    /// be listed, enabled or not, ranked for its query.
    fn search_call(&self, id: &str, args: &str, budget: usize) {
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
                render::call_success(&search::answer(&query, entries, budget).to_string())
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
    pub(super) fn timeout_for(
        &self,
        args: &str,
        declared: impl FnOnce() -> Option<u64>,
    ) -> Duration {
        call_timeout(self.inner.config.call_timeout, args, declared)
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
