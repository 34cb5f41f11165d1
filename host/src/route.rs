//! Where one tool call goes (ARCHITECTURE.md: the path of one call), decided in one place,
//! [`decide`], as one exhaustive [`Route`]: an upstream server, this process's plugin, the relay
//! list, another host's Core MCP (`remote_host`), or a refusal (service mode, a plugin that cannot
//! serve, `remote_host` where it is not taken, the policy), or not a tool of this server at all.
//! This module only decides: the session carries the decision out (`session/carry.rs`); matches on
//! [`Route`] have no wildcard arm, so a new destination cannot be left unanswered.
//!
//! Invariants:
//! - `remote_host` never reaches a plugin or a peer: it is taken out of the arguments here, so
//!   the receiving side cannot forward the call again (one hop).
//! - The Registry's tools and `bootstrap` run only where the agent runs; `remote_host` on them is
//!   refused, never ignored.
//! - Every route passes the policy ([`coremcp_wire::policy`]) before it is taken; a call that runs
//!   here is judged with its tool's catalog guard, a call that runs elsewhere only by explicit
//!   rules (the other side applies its own policy).
//! - The route of a catalog tool is decided from the catalog, without loading its plugin.
//! - A service-mode `session_record` is the Session group's recording write (its internal
//!   entry), routed like the group's tools; everywhere else it is the Ops tool.

use std::sync::Arc;

use coremcp_plugin_api::Runs;
use serde_json::{Map, Value};

use crate::config::Config;
use coremcp_engine::loader::LoadError;
use coremcp_engine::PluginSet;
use coremcp_relay::hop::Incoming;
use coremcp_relay::{self as forward, Relays};
use coremcp_upstream::hub::{Target, Upstreams};
use coremcp_wire::policy::{Caller, Decision, Subject};

/// Built once: building a searcher costs more than searching a short text with it.
static REMOTE_HOST_KEY: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"remote_host\""));

/// Where a call goes.
pub enum Route {
    /// A tool of an upstream MCP server (`mcp__<id>__<tool>`) the caller is granted.
    Upstream(Target),
    /// A built-in tool, run behind its group's gate.
    Run(Run),
    /// Refused before running: a tool error result the model sees.
    Refused(Refusal),
    /// Not a tool this server has: a JSON-RPC error (-32602), with its message.
    Unknown(String),
}

/// A built-in tool's call, with the arguments it is sent (without `remote_host`).
pub struct Run {
    /// The slot of the tool's group (whose gate it waits behind).
    pub index: usize,
    pub to: To,
    pub args: String,
    /// A tool of a group outside the catalog whose library was not loaded yet: its guards,
    /// which its manifest declares, are judged once it has loaded, before it runs
    /// ([`judge_loaded`]) — loading here would hold the reading thread.
    pub judge_after_load: bool,
}

/// Who runs a built-in tool's call.
pub enum To {
    /// The group's plugin in this process.
    Plugin,
    /// The relay list (a forwarded group, relays configured, not service mode), or the
    /// group's route (service mode, `--route`).
    Relays(Arc<Relays>),
    /// The Core MCP of this Registry host; its address is looked up when the call runs.
    Remote(String),
}

/// Why a call is refused before it runs.
pub enum Refusal {
    /// A local group's tool asked of a service-mode Core MCP.
    ServiceMode(String),
    /// The tool's plugin cannot serve (it failed to load or was refused).
    Unavailable(String),
    /// `remote_host` on a tool that does not take it, or a malformed one.
    RemoteHost(String),
    /// An upstream tool name no configured server publishes.
    UnknownUpstream(String),
    /// The policy refused the caller.
    Denied(String),
    /// A routed call arrived at a service that would route it again.
    RouteLoop(String),
}

impl Refusal {
    /// The text the model sees.
    pub fn text(&self) -> &str {
        match self {
            Refusal::ServiceMode(text)
            | Refusal::Unavailable(text)
            | Refusal::RemoteHost(text)
            | Refusal::UnknownUpstream(text)
            | Refusal::Denied(text)
            | Refusal::RouteLoop(text) => text,
        }
    }
}

impl Route {
    /// A word for logs.
    pub fn kind(&self) -> &'static str {
        match self {
            Route::Upstream(_) => "upstream",
            Route::Run(Run { to: To::Plugin, .. }) => "plugin",
            Route::Run(Run {
                to: To::Relays(_), ..
            }) => "relay",
            Route::Run(Run {
                to: To::Remote(_), ..
            }) => "remote_host",
            Route::Refused(Refusal::ServiceMode(_)) => "service-mode refusal",
            Route::Refused(Refusal::Unavailable(_)) => "unavailable",
            Route::Refused(Refusal::RemoteHost(_)) => "remote_host refusal",
            Route::Refused(Refusal::UnknownUpstream(_)) => "unknown upstream",
            Route::Refused(Refusal::Denied(_)) => "denied",
            Route::Refused(Refusal::RouteLoop(_)) => "route loop",
            Route::Unknown(_) => "unknown",
        }
    }
}

/// What [`decide`] needs to know about the server and the caller.
pub struct Context<'a> {
    pub config: &'a Config,
    pub plugins: &'a Arc<PluginSet>,
    pub upstreams: &'a Upstreams,
    /// Who the policy judges: the session's caller, or the principal a configured peer
    /// passed on ([`Incoming::caller`]).
    pub caller: &'a Caller,
}

/// Decides where a call of `tool` with `args` (a JSON object's text) goes; `hop`: what its
/// `_meta` says of its way here (a route passed it on, the path so far).
pub fn decide(cx: &Context<'_>, tool: &str, args: &str, hop: &Incoming) -> Route {
    let routed = hop.routed;
    let Some(index) = cx.plugins.route(tool).or_else(|| recording_write(cx, tool)) else {
        return not_built_in(cx, tool);
    };
    let (remote_host, args) = match take_remote_host(args) {
        Ok(split) => split,
        Err(text) => return Route::Refused(Refusal::RemoteHost(format!("{tool}: {text}"))),
    };
    let slot = &cx.plugins.slots()[index];
    let group = slot.catalog;
    let to = if let Some(host) = remote_host {
        let accepted = match group {
            Some(group) => group.settings_of(tool).is_some_and(|s| s.remote_host),
            // Outside the catalog the plugin's manifest says.
            None => cx
                .plugins
                .load(index)
                .is_ok_and(|l| l.tools().iter().any(|t| t.name == tool && t.remote_host)),
        };
        if !accepted {
            return Route::Refused(Refusal::RemoteHost(format!(
                "{tool} runs only where the agent runs: it does not take remote_host"
            )));
        }
        To::Remote(host)
    } else {
        let forwarded = group.is_some_and(|g| g.runs == Runs::Forwarded);
        // A proxy sends forwarded groups to its relays; a service serves them from its store
        // unless `--route` passes the group on to the Core MCP that owns it.
        let peers = match cx.config.service_mode {
            false => forward::relays(&cx.config.relay),
            true => forward::route_of(&cx.config.relay, &slot.id),
        };
        match peers.filter(|_| forwarded) {
            Some(_) if routed && cx.config.service_mode => {
                return Route::Refused(Refusal::RouteLoop(format!(
                    "{tool} was passed on by another Core MCP's --route and this one routes the \
                     {} group too (route_loop): a call is routed once, so the service that owns \
                     the group must serve it from its store (no --route for it there)",
                    slot.id
                )))
            }
            Some(relays) => To::Relays(relays),
            None => {
                if let Some(Err(e)) = slot.state() {
                    return Route::Refused(Refusal::Unavailable(unavailable(tool, &e)));
                }
                To::Plugin
            }
        }
    };
    // Judged exactly as if it ran here, wherever it runs: a `remote_host` call is no way
    // around a guard (the machine that runs it judges it again, for the same principal).
    // Outside the catalog the guards its manifest declares, judged the same way: now if its
    // library is loaded, else once it is (`judge_after_load`).
    let (entry, judge_after_load) = match group {
        Some(group) => (group.entry(tool), false),
        None => match slot.state() {
            Some(Ok(loaded)) => (loaded.entry(tool), false),
            Some(Err(_)) | None => (None, true),
        },
    };
    let guard = match &to {
        To::Plugin | To::Relays(_) | To::Remote(_) => entry.and_then(|e| guard_of(e, &args)),
    };
    let subject = Subject::BuiltIn {
        group: &slot.id,
        tool,
        guard,
    };
    match cx.config.grants.decide(cx.caller, subject) {
        Decision::Allow => Route::Run(Run {
            index,
            to,
            args,
            judge_after_load,
        }),
        Decision::Refuse(text) => Route::Refused(Refusal::Denied(text)),
    }
}

/// In service mode, `session_record` is the write a proxy's Ops `session_record` forwards: the
/// Session group's internal entry of that name (the transcript was read on the proxy's machine).
fn recording_write(cx: &Context<'_>, tool: &str) -> Option<usize> {
    (cx.config.service_mode && tool == crate::host_ops::RECORD)
        .then(|| cx.plugins.route("session_get"))
        .flatten()
}

/// The route of a name no installed group serves.
fn not_built_in(cx: &Context<'_>, tool: &str) -> Route {
    if tool.starts_with("mcp__") {
        let target = match cx.upstreams.resolve(tool) {
            Ok(target) => target,
            Err(text) => return Route::Refused(Refusal::UnknownUpstream(text)),
        };
        let subject = Subject::Upstream {
            server: target.server.id(),
            tool: &target.tool,
            full: tool,
        };
        return match cx.config.grants.decide(cx.caller, subject) {
            Decision::Allow => Route::Upstream(target),
            Decision::Refuse(text) => Route::Refused(Refusal::Denied(text)),
        };
    }
    match coremcp_catalog::group_of(tool) {
        // A group relays serve, which this one leaves out: say so, not that it runs elsewhere.
        Some(group)
            if cx.config.service_mode && coremcp_catalog::served_in_service_mode(group.runs) =>
        {
            Route::Refused(Refusal::ServiceMode(format!(
                "{tool} is not served by this relay (group_not_enabled): its {} group is not \
                 enabled here (see this relay's --groups, and whether the group's plugin is \
                 installed); route it to a relay that serves the {} group",
                group.title, group.id
            )))
        }
        Some(group) if cx.config.service_mode => Route::Refused(Refusal::ServiceMode(format!(
            "{tool} is not served in service mode (not_available_in_service_mode): this Core MCP \
             (coremcp serve --service) serves only the forwarded groups and the Registry; the {} \
             group runs in the Core MCP on the agent's machine",
            group.title
        ))),
        Some(group) => Route::Unknown(format!(
            "unknown tool: {tool} (a tool of the {} group, which this Core MCP does not serve: \
             its plugin is not installed, or --groups leaves it out)",
            group.title
        )),
        None => Route::Unknown(format!("unknown tool: {tool}")),
    }
}

/// The policy's word on a call of `tool` of a group outside the catalog, once its library
/// `loaded` is (see [`Run::judge_after_load`]).
pub fn judge_loaded(
    grants: &coremcp_wire::policy::Grants,
    caller: &coremcp_wire::policy::Caller,
    group: &str,
    loaded: &coremcp_engine::Loaded,
    tool: &str,
    args: &str,
) -> Decision {
    let guard = loaded.entry(tool).and_then(|e| guard_of(e, args));
    grants.decide(caller, Subject::BuiltIn { group, tool, guard })
}

/// Whether `caller` may call `tool` of group `group` with some arguments: not when every call
/// of it needs a grant the caller lacks (what `tools_search` offers a caller).
pub fn may_call(
    grants: &coremcp_wire::policy::Grants,
    caller: &coremcp_wire::policy::Caller,
    group: &str,
    tool: &str,
) -> bool {
    let guard = coremcp_catalog::group(group)
        .and_then(|g| g.entry(tool))
        .and_then(|entry| guard_of(entry, "{}"));
    grants.decide(caller, Subject::BuiltIn { group, tool, guard }) == Decision::Allow
}

/// What this call needs a grant for over HTTP, as the tool's entry says for these arguments
/// (`None`: nothing): the catalog's, or for a tool outside the catalog the guards its
/// manifest declares.
fn guard_of(entry: &coremcp_catalog::Entry, args: &str) -> Option<coremcp_catalog::Guarded> {
    if entry.guard == coremcp_catalog::Guard::Reads && entry.escalation.is_none() {
        return None;
    }
    if entry.guard == coremcp_catalog::Guard::Always && entry.escalation.is_none() {
        return Some(coremcp_catalog::Guarded::ChangesMachine);
    }
    // Arguments that are not an object count as guarded (fail closed); the plugin refuses
    // them anyway.
    match serde_json::from_str::<Map<String, Value>>(args) {
        Ok(map) => entry.guarded(&map),
        Err(_) => Some(entry.guard.kind()),
    }
}

/// The text of a call whose group cannot serve.
pub fn unavailable(tool: &str, error: &LoadError) -> String {
    match (error, coremcp_catalog::feature_of(tool)) {
        (LoadError::NotInstalled { .. }, Some(feature)) => {
            format!("{tool} is not in this build: it needs the \"{feature}\" feature")
        }
        _ => format!("{tool} is unavailable: {error}"),
    }
}

/// Splits `remote_host` off the arguments. An empty value counts as absent.
fn take_remote_host(args: &str) -> Result<(Option<String>, String), String> {
    if REMOTE_HOST_KEY.find(args.as_bytes()).is_none() {
        return Ok((None, args.to_owned()));
    }
    let mut map: Map<String, Value> = serde_json::from_str(args)
        .map_err(|e| format!("the arguments are not a JSON object: {e}"))?;
    let host = match map.remove("remote_host") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.is_empty() => None,
        Some(Value::String(s)) => Some(s),
        Some(other) => {
            return Err(format!(
                "argument \"remote_host\" must be a Registry host name (a string), not {other}"
            ))
        }
    };
    Ok((host, Value::Object(map).to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::tests::Scratch;

    /// Decides `tool` with `args` for `caller` on a server over an empty plugins folder,
    /// changed by `adjust`; the route and the arguments it keeps.
    fn decided(adjust: impl FnOnce(&mut Config), caller: Caller, tool: &str, args: &str) -> Route {
        let folder = Scratch::new();
        let mut config = Config::with_plugins(folder.path().to_owned());
        adjust(&mut config);
        let plugins = Arc::new(PluginSet::discover(&config.engine()).expect("discover"));
        let upstreams = coremcp_upstream::hub::Upstreams::none();
        let cx = Context {
            config: &config,
            plugins: &plugins,
            upstreams: &upstreams,
            caller: &caller,
        };
        decide(&cx, tool, args, &Incoming::default())
    }

    fn kind(route: &Route) -> &'static str {
        route.kind()
    }

    #[test]
    fn a_name_nobody_serves_is_unknown_and_an_unknown_server_is_refused() {
        let route = decided(|_| {}, Caller::Stdio, "no_such_tool", "{}");
        assert!(matches!(&route, Route::Unknown(m) if m == "unknown tool: no_such_tool"));
        let route = decided(|_| {}, Caller::Stdio, "mcp__gh__search", "{}");
        assert_eq!(kind(&route), "unknown upstream");
    }

    #[test]
    fn a_local_tool_runs_here_without_loading_its_plugin() {
        let route = decided(|_| {}, Caller::Stdio, "git_status", r#"{"path":"."}"#);
        let Route::Run(run) = route else {
            panic!("git_status runs here");
        };
        assert!(matches!(run.to, To::Plugin));
        assert_eq!(run.args, r#"{"path":"."}"#);
        assert!(
            !run.judge_after_load,
            "a catalog tool is judged from the catalog"
        );
    }

    #[test]
    fn remote_host_goes_to_that_host_only_for_a_tool_that_takes_it() {
        let args = r#"{"path":"a.md","remote_host":"devbox-2"}"#;
        let Route::Run(run) = decided(|_| {}, Caller::Stdio, "docs_read", args) else {
            panic!("docs_read takes remote_host");
        };
        assert!(matches!(&run.to, To::Remote(host) if host == "devbox-2"));
        assert_eq!(
            run.args, r#"{"path":"a.md"}"#,
            "remote_host never reaches a peer"
        );
        let args = r#"{"remote_host":"devbox-2"}"#;
        let route = decided(|_| {}, Caller::Stdio, "registry_host_list", args);
        assert!(
            matches!(&route, Route::Refused(Refusal::RemoteHost(t)) if t.contains("does not take remote_host")),
            "{}",
            kind(&route)
        );
    }

    #[test]
    fn the_policy_judges_every_route_before_it_is_taken() {
        let caller = Caller::Token("ci".into());
        let route = decided(|_| {}, caller.clone(), "shell_run", r#"{"script":"true"}"#);
        assert!(
            matches!(&route, Route::Refused(Refusal::Denied(t)) if t.contains("shell_run")),
            "{}",
            kind(&route)
        );
        // Through remote_host too: judged exactly as if it ran here.
        let args = r#"{"script":"true","remote_host":"devbox-2"}"#;
        let route = decided(|_| {}, caller.clone(), "shell_run", args);
        assert_eq!(kind(&route), "denied");
        let grants = |config: &mut Config| {
            config.grants = Arc::new(
                coremcp_wire::policy::Grants::parse(
                    crate::config::env::GRANT_VARS,
                    Some("ci=shell_run"),
                    None,
                )
                .expect("grants"),
            );
        };
        let route = decided(grants, caller, "shell_run", r#"{"script":"true"}"#);
        assert_eq!(kind(&route), "plugin");
    }

    #[test]
    fn a_service_refuses_a_local_groups_tool_naming_where_it_runs() {
        let route = decided(|c| c.service_mode = true, Caller::Stdio, "git_status", "{}");
        assert!(
            matches!(&route, Route::Refused(Refusal::ServiceMode(t)) if t.contains("not_available_in_service_mode")),
            "{}",
            kind(&route)
        );
    }

    #[test]
    fn remote_host_is_taken_out_of_the_arguments() {
        assert_eq!(
            take_remote_host(r#"{"a":1}"#),
            Ok((None, r#"{"a":1}"#.to_owned()))
        );
        assert_eq!(
            take_remote_host(r#"{"a":1,"remote_host":"devbox-2"}"#),
            Ok((Some("devbox-2".to_owned()), r#"{"a":1}"#.to_owned()))
        );
        assert_eq!(
            take_remote_host(r#"{"remote_host":""}"#),
            Ok((None, "{}".to_owned()))
        );
        let err = take_remote_host(r#"{"remote_host":3}"#).expect_err("number");
        assert!(err.contains("must be a Registry host name"), "{err}");
    }
}
