//! The `host_call` operations a plugin may ask of the command that serves: `registry.hosts`
//! (the Registry's hosts, as `registry_host_list` answers them, every page) and `status` (the
//! `/api/status` document, from the same function; with `{"hosts": true}` also the
//! `remote_host` targets, read as `remote_host` reads them, which loads the Registry),
//! `registry.call` (one of the few Registry tools machine set-up writes with), and
//! `session.record` (Ops `session_record`'s write: the Session service's internal
//! `session_record` entry, on the relay list when there is one, else in this process), and
//! `caller` (who the asking call is made for: its principal and the client's name, which
//! Scrolls records as the actor of what a call does, and `result_chars`, the budget its
//! answer must fit, which the SDK fits every answer to).
//!
//! Invariants:
//! - They answer from the host's own functions, so a plugin never sees a second copy of a
//!   fact the host shows elsewhere.
//! - `status` shows the recent errors of the principal whose call asks, never another's
//!   (every one to this machine's own user and to an operator).
//! - A recording goes where the Session group's calls go: the relays of a proxy (with their
//!   failover), or this process's Session plugin on its store.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use coremcp_plugin_api::{codes, ToolError};
use serde_json::{json, Value};

use crate::config::Config;
use crate::registry::{list_hosts, LookupError};
use coremcp_engine::host_api::register_op;
use coremcp_engine::PluginSet;
use coremcp_relay::client::Reply;
use coremcp_relay::Relays;

/// How long a `registry.hosts` lookup may take when the payload names no `timeout_ms`.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);
/// The longest a plugin may ask a lookup to take.
const MAX_TIMEOUT: Duration = Duration::from_secs(60);

/// Builds the status document as a viewer may see it (`None`: every principal's errors).
pub type StatusFn = Arc<dyn Fn(Option<&str>) -> Value + Send + Sync>;

/// Registers the operations for a server configured by `config`, whose plugins are `plugins`
/// and whose status document `status` builds.
pub fn register(config: &Config, plugins: Arc<PluginSet>, status: StatusFn) {
    let relays = match config.service_mode {
        false => coremcp_relay::relays(&config.relay),
        true => None,
    };
    let recording = Arc::clone(&plugins);
    register_op(
        "session.record",
        Arc::new(move |payload: &Value| session_record(&recording, relays.as_deref(), payload)),
    );
    let calling = Arc::clone(&plugins);
    let grants = Arc::clone(&config.grants);
    register_op(
        "registry.call",
        Arc::new(move |payload: &Value| registry_call(&calling, &grants, payload)),
    );
    let listing = Arc::clone(&plugins);
    register_op(
        "registry.hosts",
        Arc::new(move |payload: &Value| registry_hosts(&listing, payload)),
    );
    // Who the call that asks is made for, as the host knows it: the principal (judged again
    // when a configured peer forwarded it), the client's name and the answer's budget.
    let peers = config.peer_tokens.clone();
    register_op(
        "caller",
        Arc::new(move |_: &Value| {
            let caller = coremcp_engine::host_api::call_caller();
            // The client a peer passed the call on for, else this process's session's.
            let client = coremcp_engine::host_api::call_client()
                .map(|c| c.to_string())
                .or_else(|| coremcp_engine::host_api::value("client"));
            let mut out = json!({});
            if let Some(caller) = caller {
                // A peer's own token stands for the other machine's user, whom its client's
                // name tells apart better.
                if peers.iter().any(|p| caller.is(p)) {
                    out["peer"] = true.into();
                }
                out["principal"] = caller.principal().into();
            }
            if let Some(client) = client.filter(|c| !c.is_empty()) {
                out["client"] = client.into();
            }
            if let Some(budget) = coremcp_engine::host_api::call_budget() {
                out["result_chars"] = budget.into();
            }
            Ok(out)
        }),
    );
    let registry = Arc::clone(&plugins);
    let facts = config.clone();
    register_op(
        "status",
        Arc::new(move |payload: &Value| {
            // The principal of the call that asks (`core_status`) sees its own recent errors;
            // outside a call, nobody's.
            let principal = coremcp_engine::host_api::call_principal();
            let viewer = match principal.as_deref() {
                Some(principal) => facts.errors_visible_to(principal),
                None => Some(""),
            };
            let mut doc = status(viewer);
            if payload.get("hosts").and_then(Value::as_bool) == Some(true) {
                add_hosts(&mut doc, &registry);
            }
            Ok(doc)
        }),
    );
}

/// Adds the `remote_host` targets to a status document: `hosts` (each `{name, url}`), or
/// `hosts_error` saying why they could not be read. Both `core_status` and the status page
/// (`/api/status?hosts=true`) take them from here.
pub fn add_hosts(doc: &mut Value, plugins: &Arc<PluginSet>) {
    match crate::registry::forwarding_targets(plugins, DEFAULT_TIMEOUT) {
        Ok(hosts) => {
            doc["hosts"] = hosts
                .iter()
                .map(|h| json!({"name": h.name, "url": h.url}))
                .collect();
        }
        Err(e) => doc["hosts_error"] = e.to_string().into(),
    }
}

/// `{"filter": {registry_host_list arguments}, "timeout_ms": N}` → `{"hosts": [...]}`.
fn registry_hosts(plugins: &Arc<PluginSet>, payload: &Value) -> Result<Value, ToolError> {
    let filter = payload.get("filter").cloned().unwrap_or_else(|| json!({}));
    if !filter.is_object() {
        return Err(ToolError::new(
            codes::INVALID_ARGUMENTS,
            "registry.hosts: \"filter\" must be an object of registry_host_list arguments",
        ));
    }
    let hosts = list_hosts(plugins, &filter, timeout_of(payload)).map_err(tool_error)?;
    Ok(json!({ "hosts": hosts }))
}

/// `{"tool": "registry_…", "args": {…}, "timeout_ms": N}` → the tool's answer: the Registry
/// tools machine set-up needs (`bootstrap`'s host, `repo_setup`'s checkout), the docs tools'
/// lookup of a docs source's checkout and `code_snapshot`'s `save_to`, nothing else. A Registry
/// tool the grants take away from the principal of the call that asks is refused here as it would
/// be when called directly.
fn registry_call(
    plugins: &Arc<PluginSet>,
    grants: &coremcp_wire::policy::Grants,
    payload: &Value,
) -> Result<Value, ToolError> {
    let tool = payload["tool"].as_str().unwrap_or_default();
    if !REGISTRY_CALLS.contains(&tool) {
        return Err(ToolError::new(
            codes::INVALID_ARGUMENTS,
            format!(
                "registry.call: \"{tool}\" is not one of {}",
                REGISTRY_CALLS.join(", ")
            ),
        ));
    }
    let args = payload.get("args").cloned().unwrap_or_else(|| json!({}));
    if let Some(caller) = coremcp_engine::host_api::call_caller() {
        if grants.takes_away(&caller, "registry", tool) {
            return Err(ToolError::new(
                codes::UNAVAILABLE,
                format!(
                    "{tool} is not granted to {}, so this call cannot write to the Registry \
                     through it",
                    caller.described()
                ),
            ));
        }
        // A field that steers (where code, credentials or calls go) is written through the
        // host only as the write of the tool that owns it (repo_setup's checkout, bootstrap's
        // host), whose own grant covers it; any other such write is judged as a direct call.
        let guard = coremcp_catalog::find(tool)
            .zip(args.as_object())
            .and_then(|((_, entry), args)| entry.guarded(args));
        let owned = coremcp_engine::host_api::call_tool()
            .is_some_and(|calling| OWNED_WRITES.contains(&(calling, tool)));
        if guard.is_some() && !owned {
            let subject = coremcp_wire::policy::Subject::BuiltIn {
                group: "registry",
                tool,
                guard,
            };
            if let coremcp_wire::policy::Decision::Refuse(why) = grants.decide(&caller, subject) {
                return Err(ToolError::new(codes::UNAVAILABLE, why));
            }
        }
    }
    let text =
        crate::registry::call(plugins, tool, &args, timeout_of(payload)).map_err(tool_error)?;
    serde_json::from_str(&text)
        .map_err(|e| ToolError::new(codes::INTERNAL, format!("{tool} answered bad JSON: {e}")))
}

/// The name of the Session group's recording write, on the wire and in its plugin.
pub const RECORD: &str = "session_record";

/// `{"args": {the Session group's session_record arguments}, "timeout_ms": N}` → its answer,
/// from the relays when `relays` is given, else from this process's Session plugin.
fn session_record(
    plugins: &Arc<PluginSet>,
    relays: Option<&Relays>,
    payload: &Value,
) -> Result<Value, ToolError> {
    let args = payload
        .get("args")
        .filter(|a| a.is_object())
        .ok_or_else(|| {
            ToolError::new(
                codes::INVALID_ARGUMENTS,
                "session.record: \"args\" must be an object of the recording's fields",
            )
        })?;
    let timeout = timeout_of(payload);
    let Some(relays) = relays else {
        let index = plugins.route("session_get").ok_or_else(|| {
            ToolError::new(
                codes::NOT_CONFIGURED,
                "session_record needs the Session group to store the recording: install its \
                 plugin here (and leave it in --groups), or configure a relay that serves it",
            )
        })?;
        let text =
            crate::registry::call_in(plugins, index, RECORD, args, timeout).map_err(tool_error)?;
        let mut answer: Value = serde_json::from_str(&text).map_err(|e| {
            ToolError::new(codes::INTERNAL, format!("{RECORD} answered bad JSON: {e}"))
        })?;
        answer["stored_by"] = "this_process".into();
        return Ok(answer);
    };
    let cancelled = AtomicBool::new(false);
    let reply = relays
        .call(
            RECORD,
            &args.to_string(),
            // The write of a transcript read on this machine, for this machine's own user.
            &coremcp_relay::hop::Outgoing::new(
                &coremcp_wire::policy::Caller::Stdio,
                &coremcp_relay::hop::Incoming::default(),
                coremcp_engine::host_api::value("client").as_deref(),
            ),
            Instant::now() + timeout,
            &cancelled,
        )
        .map_err(|e| {
            ToolError::new(
                codes::UNAVAILABLE,
                format!("session_record could not store the recording: {e}"),
            )
        })?;
    match reply {
        Reply::Result(result) => relay_answer(&result).map(|mut answer| {
            answer["stored_by"] = "relay".into();
            answer
        }),
        Reply::Error { code, message, .. } => Err(ToolError::new(
            codes::FAILED,
            format!("the relay refused session_record (JSON-RPC error {code}): {message}"),
        )),
    }
}

/// A relay's `tools/call` result as the value its tool answered, or its error text.
fn relay_answer(result: &str) -> Result<Value, ToolError> {
    let bad = |why: &str| {
        ToolError::new(
            codes::FAILED,
            format!("the relay's session_record result {why}"),
        )
    };
    let result: Value = serde_json::from_str(result).map_err(|_| bad("is not JSON"))?;
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    if result["isError"] == Value::Bool(true) {
        return Err(ToolError::new(
            codes::FAILED,
            format!("the relay could not store the recording: {text}"),
        ));
    }
    match result.get("structuredContent") {
        Some(value) => Ok(value.clone()),
        None => serde_json::from_str(text).map_err(|_| bad("holds no JSON object")),
    }
}

/// The Registry writes that are part of another tool's own work, which that tool's grant
/// covers: (the calling tool, the Registry tool it writes with).
const OWNED_WRITES: [(&str, &str); 3] = [
    ("repo_setup", "registry_source_update"),
    ("bootstrap", "registry_host_add"),
    ("bootstrap", "registry_host_update"),
];

/// The Registry tools `registry.call` may run.
const REGISTRY_CALLS: [&str; 8] = [
    "registry_theme_list",
    "registry_project_list",
    "registry_host_list",
    "registry_host_add",
    "registry_host_update",
    "registry_source_list",
    "registry_source_update",
    "registry_snapshot_save",
];

fn timeout_of(payload: &Value) -> Duration {
    payload
        .get("timeout_ms")
        .and_then(Value::as_u64)
        .map_or(DEFAULT_TIMEOUT, Duration::from_millis)
        .min(MAX_TIMEOUT)
}

fn tool_error(e: LookupError) -> ToolError {
    match e {
        // The called tool's own words and code: it may be another group's than the Registry's
        // (`session_record` is the Session group's).
        LookupError::Tool { code, message } => ToolError::new(&code, message),
        LookupError::NotSelected => ToolError::new(
            codes::NOT_CONFIGURED,
            "the Registry group is not part of this Core MCP (see --groups, and whether its \
             plugin is installed)",
        ),
        LookupError::Unavailable(_) => ToolError::new(codes::UNAVAILABLE, e.to_string()),
        LookupError::Failed(_) | LookupError::Unknown { .. } | LookupError::NotATarget { .. } => {
            ToolError::new(codes::FAILED, e.to_string())
        }
    }
}
