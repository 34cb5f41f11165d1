//! The callbacks the host hands every plugin at `init`: log, config and host_call.
//!
//! They are plain `extern "C"` functions over process-wide state (one host per process).
//! `host_call` answers `host.info` itself and every other operation from the handlers the
//! command that serves registers with [`register_op`] (the Registry's hosts, the status page's
//! facts), so a plugin reaches them only through the host and the same function answers it as
//! answers the host's own callers.
//! Invariant: each runs inside `catch_unwind`, so a bug here can never unwind into a plugin.

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, OnceLock, RwLock};

use abi_stable::prefix_type::PrefixTypeTrait;
use abi_stable::std_types::{ROption, RResult, RStr, RString};
use coremcp_plugin_api::codes;
use coremcp_plugin_api::{HostApi, HostApiRef, LogLevel, ToolError};

/// Where plugin log messages go besides stderr (the MCP client, when it asked for them).
pub type LogSink = Arc<dyn Fn(LogLevel, &str, &str) + Send + Sync>;

/// One `host_call` operation: the payload in, the answer out.
pub(crate) type OpHandler =
    Arc<dyn Fn(&serde_json::Value) -> Result<serde_json::Value, ToolError> + Send + Sync>;

static CONFIG: OnceLock<RwLock<HashMap<String, String>>> = OnceLock::new();
static OPS: OnceLock<RwLock<HashMap<&'static str, OpHandler>>> = OnceLock::new();
thread_local! {
    /// The log destination of the plugin call running on this thread.
    static CALL_SINK: std::cell::RefCell<Option<LogSink>> = const { std::cell::RefCell::new(None) };
    /// Who the plugin call running on this thread is made for (for the host operations it
    /// asks for).
    static CALL_CALLER: std::cell::RefCell<Option<Arc<coremcp_wire::policy::Caller>>> =
        const { std::cell::RefCell::new(None) };
    /// The catalog tool of the plugin call running on this thread (`None` for a tool outside
    /// the catalog).
    static CALL_TOOL: std::cell::Cell<Option<&'static str>> = const { std::cell::Cell::new(None) };
    /// The client name a peer passed on with the plugin call running on this thread.
    static CALL_CLIENT: std::cell::RefCell<Option<Arc<str>>> =
        const { std::cell::RefCell::new(None) };
    /// The result budget (characters) of the plugin call running on this thread; 0 outside one.
    static CALL_BUDGET: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    /// The task the plugin call running on this thread runs as, if it does.
    static CALL_TASK: std::cell::RefCell<Option<Arc<str>>> =
        const { std::cell::RefCell::new(None) };
}

/// Runs `f` (one plugin call) as the work of task `task`: the host operations it asks for
/// (`task.current`) name the task.
pub fn with_task<T>(task: Arc<str>, f: impl FnOnce() -> T) -> T {
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            CALL_TASK.with(|slot| slot.borrow_mut().take());
        }
    }
    CALL_TASK.with(|slot| *slot.borrow_mut() = Some(task));
    let _reset = Reset;
    f()
}

/// The task the plugin call running on this thread runs as (`None` outside a call, or for a
/// call that is not a task).
pub fn call_task() -> Option<Arc<str>> {
    CALL_TASK.with(|slot| slot.borrow().clone())
}

/// The principal of the plugin call running on this thread, as grants name it (`None`
/// outside a call).
pub fn call_principal() -> Option<String> {
    call_caller().map(|c| c.principal())
}

/// Who the plugin call running on this thread is made for (`None` outside a call).
pub fn call_caller() -> Option<Arc<coremcp_wire::policy::Caller>> {
    CALL_CALLER.with(|slot| slot.borrow().clone())
}

/// The catalog tool the plugin call running on this thread runs (`None` outside a call, or
/// for a tool outside the catalog).
pub fn call_tool() -> Option<&'static str> {
    CALL_TOOL.with(std::cell::Cell::get)
}

/// The client name of the plugin call running on this thread: the one a configured peer passed
/// on, else its session's.
pub fn call_client() -> Option<Arc<str>> {
    CALL_CLIENT.with(|slot| slot.borrow().clone())
}

/// The result budget, in characters, of the plugin call running on this thread (`None` outside
/// a call).
pub fn call_budget() -> Option<usize> {
    Some(CALL_BUDGET.with(std::cell::Cell::get)).filter(|b| *b > 0)
}

fn config_map() -> &'static RwLock<HashMap<String, String>> {
    CONFIG.get_or_init(Default::default)
}

/// Sets the values plugins read through `config`.
pub(crate) fn set_config(values: Vec<(String, String)>) {
    if let Ok(mut map) = config_map().write() {
        map.clear();
        map.extend(values);
    }
}

/// A value plugins read through `config`, as they read it.
pub fn value(key: &str) -> Option<String> {
    config_map()
        .read()
        .ok()
        .and_then(|map| map.get(key).cloned())
}

/// Sets one value plugins read through `config` (for example `client`, at `initialize`).
pub fn set_value(key: &str, value: String) {
    if let Ok(mut map) = config_map().write() {
        map.insert(key.to_owned(), value);
    }
}

/// Runs `f` (one plugin call of the catalog tool `tool`, if it is one, made for `caller` from
/// `client`, whose answer may hold `budget` characters) with `sink` as the second destination
/// of the log messages the plugin writes on this thread meanwhile: each call's logs reach its
/// own session, never another's. Messages outside a call (a plugin's `init`, its own threads)
/// go to stderr only.
pub fn with_call<T>(
    sink: LogSink,
    caller: Arc<coremcp_wire::policy::Caller>,
    client: Option<Arc<str>>,
    tool: Option<&'static str>,
    budget: usize,
    f: impl FnOnce() -> T,
) -> T {
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            CALL_SINK.with(|slot| slot.borrow_mut().take());
            CALL_CALLER.with(|slot| slot.borrow_mut().take());
            CALL_CLIENT.with(|slot| slot.borrow_mut().take());
            CALL_TOOL.with(|slot| slot.set(None));
            CALL_BUDGET.with(|slot| slot.set(0));
        }
    }
    CALL_SINK.with(|slot| *slot.borrow_mut() = Some(sink));
    CALL_CALLER.with(|slot| *slot.borrow_mut() = Some(caller));
    CALL_CLIENT.with(|slot| *slot.borrow_mut() = client);
    CALL_TOOL.with(|slot| slot.set(tool));
    CALL_BUDGET.with(|slot| slot.set(budget));
    let _reset = Reset;
    f()
}

fn ops() -> &'static RwLock<HashMap<&'static str, OpHandler>> {
    OPS.get_or_init(Default::default)
}

/// Makes `host_call(op, …)` answer with `handler` (replacing an earlier one).
pub fn register_op(op: &'static str, handler: OpHandler) {
    if let Ok(mut map) = ops().write() {
        map.insert(op, handler);
    }
}

/// The callbacks, built once.
pub fn host_api() -> HostApiRef {
    static API: OnceLock<HostApiRef> = OnceLock::new();
    *API.get_or_init(|| {
        HostApi {
            log: ffi_log,
            config: ffi_config,
            host_call: ffi_host_call,
        }
        .leak_into_prefix()
    })
}

extern "C" fn ffi_log(level: LogLevel, group: RStr<'_>, message: RStr<'_>) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        let (group, message) = (group.as_str(), message.as_str());
        match level {
            LogLevel::Error => tracing::error!(target: "plugin", group, "{message}"),
            LogLevel::Warn => tracing::warn!(target: "plugin", group, "{message}"),
            LogLevel::Info => tracing::info!(target: "plugin", group, "{message}"),
            LogLevel::Debug => tracing::debug!(target: "plugin", group, "{message}"),
            LogLevel::Trace => tracing::trace!(target: "plugin", group, "{message}"),
        }
        let sink = CALL_SINK.with(|slot| slot.borrow().clone());
        if let Some(sink) = sink {
            sink(level, group, message);
        }
    }));
}

extern "C" fn ffi_config(key: RStr<'_>) -> ROption<RString> {
    catch_unwind(AssertUnwindSafe(|| {
        config_map()
            .read()
            .ok()
            .and_then(|map| map.get(key.as_str()).cloned())
            .map(RString::from)
            .into()
    }))
    .unwrap_or(ROption::RNone)
}

extern "C" fn ffi_host_call(op: RStr<'_>, json: RStr<'_>) -> RResult<RString, ToolError> {
    catch_unwind(AssertUnwindSafe(|| {
        host_call(op.as_str(), json.as_str()).into()
    }))
    .unwrap_or_else(|_| {
        RResult::RErr(ToolError::new(
            codes::INTERNAL,
            "the host panicked in host_call",
        ))
    })
}

/// The operations a plugin may ask of the host.
fn host_call(op: &str, payload: &str) -> Result<RString, ToolError> {
    if op == "host.info" {
        let mode = config_map()
            .read()
            .ok()
            .and_then(|map| map.get(MODE_KEY).cloned())
            .unwrap_or_else(|| "proxy".to_owned());
        return Ok(serde_json::json!({
            "name": "coremcp",
            "version": env!("CARGO_PKG_VERSION"),
            "api_version": coremcp_plugin_api::API_VERSION,
            "mode": mode,
        })
        .to_string()
        .into());
    }
    let handler = ops().read().ok().and_then(|map| map.get(op).cloned());
    let Some(handler) = handler else {
        let mut known: Vec<&str> = ops()
            .read()
            .map(|map| map.keys().copied().collect())
            .unwrap_or_default();
        known.push("host.info");
        known.sort_unstable();
        return Err(ToolError::new(
            codes::NOT_FOUND,
            format!(
                "the host has no operation \"{op}\" here (known: {})",
                known.join(", ")
            ),
        ));
    };
    let payload: serde_json::Value = if payload.trim().is_empty() {
        serde_json::Value::Null
    } else {
        serde_json::from_str(payload).map_err(|e| {
            ToolError::new(
                codes::INVALID_ARGUMENTS,
                format!("host_call {op}: the payload is not JSON: {e}"),
            )
        })?
    };
    handler(&payload).map(|answer| answer.to_string().into())
}

/// The plugin configuration key that holds the host's mode (`proxy` or `service`).
pub const MODE_KEY: &str = "host.mode";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registered_operations_answer_and_the_others_are_named() {
        register_op(
            "test.echo",
            Arc::new(|payload: &serde_json::Value| Ok(serde_json::json!({"got": payload}))),
        );
        let answer = host_call("test.echo", r#"{"a":1}"#).expect("answer");
        assert_eq!(answer.as_str(), r#"{"got":{"a":1}}"#);
        let info = host_call("host.info", "").expect("info");
        assert!(info.as_str().contains("\"name\":\"coremcp\""), "{info}");
        let unknown = host_call("nope", "{}").expect_err("unknown");
        assert_eq!(unknown.code.as_str(), codes::NOT_FOUND);
        assert!(
            unknown.message.contains("test.echo") && unknown.message.contains("host.info"),
            "{}",
            unknown.message
        );
        let bad = host_call("test.echo", "{not json").expect_err("bad payload");
        assert_eq!(bad.code.as_str(), codes::INVALID_ARGUMENTS);
    }
}
