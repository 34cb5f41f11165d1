//! The root module a group becomes: the three functions the library exports, and what a
//! handler may call back into the host.
//!
//! Invariants:
//! - Every function the library exports runs inside `catch_unwind`: a panic in a tool becomes a
//!   `panic` tool error, and the host keeps serving.
//! - An object answer still over the call's result budget yields its largest parts
//!   (`budget::fit_record`), each saying so, so the host never has to withhold one.
//! - Arguments are checked against the tool's input schema before its handler runs, and every
//!   schema is checked ([`crate::schema::check_schema`]) when the module is built: a plugin
//!   with a schema the validator would not enforce refuses to load.
//! - A plugin logs through the host ([`log`]); it never writes to stdout.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use abi_stable::prefix_type::PrefixTypeTrait;
use abi_stable::std_types::{RResult, RStr, RString};
use coremcp_plugin_api::abi::{CallCtx, CallResult, HostApiRef, PluginMod, PluginModRef};
use coremcp_plugin_api::{EscalationSpec, FeatureGate, LogLevel, Manifest, TaskSpec, ToolSpec};
use serde_json::{Map, Value};

use crate::group::Group;
use crate::schema::{check_keywords, validate_args};
use crate::{codes, ToolError};

struct State {
    group: &'static Group,
    /// The parsed input schema of each tool, in table order, or the first schema that failed.
    schemas: Result<Vec<Value>, String>,
    host: OnceLock<HostApiRef>,
}

static STATE: OnceLock<State> = OnceLock::new();

fn state() -> Result<&'static State, ToolError> {
    STATE
        .get()
        .ok_or_else(|| ToolError::new(codes::INTERNAL, "the plugin's root module was not built"))
}

/// The state and the parsed schemas, or the schema error that makes the plugin unusable.
fn state_with_schemas() -> Result<(&'static State, &'static [Value]), ToolError> {
    let state = state()?;
    let schemas = state
        .schemas
        .as_ref()
        .map_err(|e| ToolError::new(codes::INTERNAL, e.clone()))?;
    Ok((state, schemas))
}

/// Every tool's and internal entry's schema ([`Group::entries`] order), each checked, or the
/// first problem.
pub(crate) fn schemas(group: &Group) -> Result<Vec<Value>, String> {
    group
        .entries()
        .map(|tool| {
            let schema = tool.handler.schema();
            check_keywords(&schema)
                .map_err(|e| format!("tool {}: input schema: {e}", tool.name))?;
            Ok(schema)
        })
        .collect()
}

/// Builds the root module for `group`. Called once by the code [`export_plugin!`] generates.
///
/// [`export_plugin!`]: crate::export_plugin
pub fn root_module(group: &'static Group) -> PluginModRef {
    let schemas = schemas(group);
    // A second call (abi_stable caches the module, so there is none) would keep the first state.
    let _ = STATE.set(State {
        group,
        schemas,
        host: OnceLock::new(),
    });
    PluginMod {
        manifest: ffi_manifest,
        init: ffi_init,
        call: ffi_call,
    }
    .leak_into_prefix()
}

/// Runs `f`, turning a panic into a `panic` tool error.
fn guard<T>(f: impl FnOnce() -> Result<T, ToolError>) -> RResult<T, ToolError> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(result) => result.into(),
        Err(payload) => {
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a non-text panic payload".to_owned());
            RResult::RErr(ToolError::new(
                codes::PANIC,
                format!("the plugin panicked: {message}"),
            ))
        }
    }
}

/// The manifest of `group` with its schemas: the catalog decides where each tool runs, whether
/// it takes `remote_host` and its open-world hint.
pub fn manifest(group: &Group, schemas: &[Value]) -> Manifest {
    let catalog = group.catalog;
    Manifest {
        group: catalog.id.to_owned(),
        plugin_version: group.version.to_owned(),
        api_version: coremcp_plugin_api::API_VERSION.to_owned(),
        // The listed tools only: the internal entries' schemas follow theirs and are left out.
        tools: group
            .tools
            .iter()
            .zip(schemas)
            .map(|(tool, schema)| {
                let entry = catalog.entry(tool.name);
                let settings = entry.map_or(
                    coremcp_catalog::Settings {
                        runs: catalog.runs,
                        remote_host: catalog.remote_host,
                        open_world: catalog.open_world,
                    },
                    |e| catalog.settings(e),
                );
                ToolSpec {
                    name: tool.name.to_owned(),
                    description: tool.description.to_owned(),
                    input_schema: schema.clone(),
                    annotations: tool.hints.annotations(settings.open_world),
                    runs: settings.runs,
                    remote_host: settings.remote_host,
                    feature: entry.and_then(|e| e.feature).map(|(name, _)| FeatureGate {
                        name: name.to_owned(),
                        enabled: tool.built,
                    }),
                    // The host judges a tool of a group outside its catalog by these.
                    guard: entry
                        .filter(|e| e.guard != coremcp_catalog::Guard::Reads)
                        .map(|e| (&e.guard).into()),
                    escalation: entry.and_then(|e| e.escalation).map(|e| EscalationSpec {
                        argument: e.argument.to_owned(),
                        hands_over: e.hands_over.to_owned(),
                    }),
                    task: entry.and_then(|e| {
                        Some(TaskSpec {
                            when: e.task.as_ref()?.into(),
                            required: e.task_required,
                        })
                    }),
                }
            })
            .collect(),
    }
}

extern "C" fn ffi_manifest() -> RResult<RString, ToolError> {
    guard(|| {
        let (state, schemas) = state_with_schemas()?;
        serde_json::to_string(&manifest(state.group, schemas))
            .map(RString::from)
            .map_err(|e| ToolError::new(codes::INTERNAL, format!("manifest: {e}")))
    })
}

extern "C" fn ffi_init(host: HostApiRef) -> RResult<(), ToolError> {
    guard(|| {
        let state = state()?;
        let _ = state.host.set(host);
        // The default hook prints to stderr with no group; route panics to the host's log
        // instead. This library has its own copy of std, so the hook is the plugin's alone.
        std::panic::set_hook(Box::new(|info| {
            log(LogLevel::Error, &format!("panic: {info}"));
        }));
        match state.group.init {
            Some(init) => init(),
            None => Ok(()),
        }
    })
}

extern "C" fn ffi_call(ctx: &CallCtx, tool: RStr<'_>, args_json: RStr<'_>) -> CallResult {
    crate::budget::new_call();
    guard(|| {
        let (state, schemas) = state_with_schemas()?;
        let name = tool.as_str();
        let (tool, schema) = state
            .group
            .entries()
            .zip(schemas)
            .find(|(t, _)| t.name == name)
            .ok_or_else(|| {
                ToolError::new(
                    codes::NOT_FOUND,
                    format!("the {} group has no tool \"{name}\"", state.group.id()),
                )
            })?;
        run(
            state.group,
            tool,
            schema,
            &Ctx { raw: ctx },
            args_json.as_str(),
        )
        .map(RString::from)
    })
}

/// Checks and runs one call of `tool` and writes its answer: the path every call takes, in a
/// host or in a test.
pub(crate) fn run(
    group: &Group,
    tool: &crate::Tool,
    schema: &Value,
    ctx: &Ctx<'_>,
    args_json: &str,
) -> Result<String, ToolError> {
    let value = answer(group, tool, schema, ctx, args_json)?;
    let text = serde_json::to_string(&value)
        .map_err(|e| ToolError::new(codes::INTERNAL, format!("result: {e}")))?;
    // A tool fits its own answer; one that did not (a record at every limit in a small
    // session's budget) yields its largest parts rather than being withheld by the host. An
    // answer of fewer bytes than the smallest budget fits any, and never asks the host.
    if text.len() <= crate::budget::MIN_BUDGET || !value.is_object() {
        return Ok(text);
    }
    let budget = crate::budget::result_budget();
    let before = text.chars().count();
    if before <= budget {
        return Ok(text);
    }
    let mut value = value;
    crate::budget::fit_record(&mut value, budget);
    log(
        LogLevel::Warn,
        &format!(
            "{}: an answer of {before} characters outgrew the call's budget of {budget} and its \
             largest parts yielded",
            tool.name
        ),
    );
    serde_json::to_string(&value)
        .map_err(|e| ToolError::new(codes::INTERNAL, format!("result: {e}")))
}

/// The handler's answer to one call of `tool`, its arguments checked.
fn answer(
    group: &Group,
    tool: &crate::Tool,
    schema: &Value,
    ctx: &Ctx<'_>,
    args_json: &str,
) -> Result<Value, ToolError> {
    if !tool.built {
        let feature = group
            .catalog
            .entry(tool.name)
            .and_then(|e| e.feature)
            .map_or("a", |(f, _)| f);
        return Err(ToolError::new(
            codes::UNAVAILABLE,
            format!(
                "{} is not in this build: it needs the \"{feature}\" feature",
                tool.name
            ),
        ));
    }
    let args = parse_args(args_json)?;
    validate_args(schema, &args).map_err(|e| ToolError::new(codes::INVALID_ARGUMENTS, e))?;
    tool.handler.call(ctx, args)
}

fn parse_args(text: &str) -> Result<Map<String, Value>, ToolError> {
    if text.trim().is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(ToolError::new(
            codes::INVALID_ARGUMENTS,
            format!("arguments must be a JSON object, got {other}"),
        )),
        Err(e) => Err(ToolError::new(
            codes::INVALID_ARGUMENTS,
            format!("arguments are not valid JSON: {e}"),
        )),
    }
}

fn host() -> Option<HostApiRef> {
    STATE.get().and_then(|s| s.host.get().copied())
}

fn group_id() -> &'static str {
    STATE.get().map_or("plugin", |s| s.group.id())
}

/// Logs through the host. Before `init` (or outside a host, in a plugin's unit tests) the
/// message goes to stderr: a plugin never writes to stdout.
pub fn log(level: LogLevel, message: &str) {
    match host() {
        Some(host) => host.log()(level, group_id().into(), message.into()),
        None => eprintln!("[{}] {level:?}: {message}", group_id()),
    }
}

/// Reads a host configuration value, `None` when unset or outside a host.
pub fn config(key: &str) -> Option<String> {
    host().and_then(|h| h.config()(key.into()).into_option().map(String::from))
}

/// Asks the host to perform `op` with a JSON payload.
pub fn host_call(op: &str, payload: &Value) -> Result<Value, ToolError> {
    let host = host().ok_or_else(|| ToolError::new(codes::UNAVAILABLE, "no host to call"))?;
    let text = host.host_call()(op.into(), payload.to_string().as_str().into()).into_result()?;
    serde_json::from_str(text.as_str())
        .map_err(|e| ToolError::new(codes::INTERNAL, format!("host_call {op}: bad JSON: {e}")))
}

/// What a handler sees of its call: the deadline, the stop signal, and the host.
pub struct Ctx<'a> {
    raw: &'a CallCtx<'a>,
}

impl<'a> Ctx<'a> {
    /// Wraps a raw context; plugins' own tests use this to call handlers directly.
    pub fn new(raw: &'a CallCtx<'a>) -> Self {
        Self { raw }
    }

    /// Whether the host asked this call to stop (deadline passed or client cancelled).
    pub fn is_cancelled(&self) -> bool {
        self.raw.is_cancelled()
    }

    /// Time left before the call's deadline (zero once it passed).
    pub fn remaining(&self) -> Duration {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        Duration::from_millis(self.raw.deadline_unix_ms.saturating_sub(now))
    }

    /// The raw context, for passing a stop signal on (for example to a child process).
    pub fn raw(&self) -> &CallCtx<'a> {
        self.raw
    }
}
