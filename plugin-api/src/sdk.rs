//! The SDK a plugin author writes a group with: a [`Group`] is a table of [`Tool`]s plus
//! functions, and [`export_plugin!`](crate::export_plugin) turns it into the library's root
//! module.
//!
//! Invariants:
//! - Every function the library exports runs inside `catch_unwind`: a panic in a tool becomes a
//!   `panic` tool error, and the host keeps serving.
//! - Arguments are checked against the tool's input schema before its handler runs.
//! - A plugin logs through the host ([`log`]); it never writes to stdout.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use abi_stable::prefix_type::PrefixTypeTrait;
use abi_stable::std_types::{RResult, RStr, RString};
use serde_json::{Map, Value};

use crate::abi::{CallCtx, CallResult, HostApiRef, LogLevel, PluginMod, PluginModRef, ToolError};
use crate::manifest::{Annotations, FeatureGate, Manifest, Runs, ToolSpec};
use crate::schema::validate_args;

/// Stable error codes. The host shows them to the model; callers may branch on them.
pub mod codes {
    /// The arguments do not fit the tool's schema or its rules.
    pub const INVALID_ARGUMENTS: &str = "invalid_arguments";
    /// Something the tool needs is not configured (an env var, a CLI).
    pub const NOT_CONFIGURED: &str = "not_configured";
    /// The named thing does not exist.
    pub const NOT_FOUND: &str = "not_found";
    /// The operation ran and failed (a non-zero exit, bad output).
    pub const FAILED: &str = "failed";
    /// The operation did not finish in time.
    pub const TIMEOUT: &str = "timeout";
    /// The host asked the call to stop.
    pub const CANCELLED: &str = "cancelled";
    /// The plugin panicked; the host keeps serving.
    pub const PANIC: &str = "panic";
    /// The tool or its group cannot run in this build or on this host.
    pub const UNAVAILABLE: &str = "unavailable";
    /// A row changed since it was read (`expected_version`).
    pub const CONFLICT: &str = "conflict";
    /// A bug: something that should not happen did.
    pub const INTERNAL: &str = "internal";
}

/// One group: the table every listing, call and test of the plugin is driven by.
pub struct Group {
    /// The group id; the library file is `libcoremcp_<id>.so`.
    pub id: &'static str,
    /// The plugin's own version.
    pub version: &'static str,
    /// The tools, in listing order.
    pub tools: &'static [Tool],
    /// Runs once when the host initialises the plugin (after the host callbacks are set); an
    /// error refuses the plugin with that message.
    pub init: Option<fn() -> Result<(), ToolError>>,
}

/// The function that runs one tool.
pub type Handler = fn(&Ctx<'_>, Args) -> Result<Value, ToolError>;

/// One tool of a group.
pub struct Tool {
    pub name: &'static str,
    pub description: &'static str,
    /// The input schema as JSON text, a `{"type":"object",…}` schema.
    pub input_schema: &'static str,
    pub annotations: Annotations,
    pub runs: Runs,
    pub remote_host: bool,
    /// `Some((feature, enabled))` for a tool built behind a cargo feature.
    pub feature: Option<(&'static str, bool)>,
    pub handler: Handler,
}

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

/// What every group table must be, checked by each group's own tests: every input schema is
/// JSON, a closed object schema (`"type": "object"`, `"additionalProperties": false`) whose
/// properties each have a description and whose `required` names only properties; it never
/// declares `remote_host` (the host handles that argument); descriptions stay under 1 000
/// characters and schemas under 8 000 (the host's limits). Returns every problem found.
pub fn check_table(group: &Group) -> Result<(), Vec<String>> {
    let mut problems = Vec::new();
    for tool in group.tools {
        let name = tool.name;
        if tool.description.chars().count() >= 1000 {
            problems.push(format!("{name}: description of 1000 characters or more"));
        }
        if tool.input_schema.chars().count() >= 8000 {
            problems.push(format!("{name}: input schema of 8000 characters or more"));
        }
        let schema: Value = match serde_json::from_str(tool.input_schema) {
            Ok(schema) => schema,
            Err(e) => {
                problems.push(format!("{name}: input schema is not JSON: {e}"));
                continue;
            }
        };
        if schema["type"] != "object" || schema["additionalProperties"] != false {
            problems.push(format!(
                "{name}: not a closed object schema (type object, additionalProperties false)"
            ));
        }
        let empty = Map::new();
        let properties = schema["properties"].as_object().unwrap_or(&empty);
        if properties.contains_key("remote_host") {
            problems.push(format!(
                "{name}: declares remote_host, which the host handles (set Tool::remote_host)"
            ));
        }
        for (arg, spec) in properties {
            if spec["description"].as_str().is_none_or(str::is_empty) {
                problems.push(format!("{name}.{arg}: no description"));
            }
        }
        for required in schema["required"].as_array().into_iter().flatten() {
            if !required
                .as_str()
                .is_some_and(|r| properties.contains_key(r))
            {
                problems.push(format!("{name}: required {required} is not a property"));
            }
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

/// Builds the root module for `group`. Called once by the code [`export_plugin!`] generates.
///
/// [`export_plugin!`]: crate::export_plugin
pub fn root_module(group: &'static Group) -> PluginModRef {
    let schemas = group
        .tools
        .iter()
        .map(|tool| {
            serde_json::from_str::<Value>(tool.input_schema)
                .map_err(|e| format!("tool {}: input schema is not valid JSON: {e}", tool.name))
        })
        .collect();
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

/// The manifest of `group` with its parsed schemas.
pub fn manifest(group: &Group, schemas: &[Value]) -> Manifest {
    Manifest {
        group: group.id.to_owned(),
        plugin_version: group.version.to_owned(),
        api_version: crate::API_VERSION.to_owned(),
        tools: group
            .tools
            .iter()
            .zip(schemas)
            .map(|(tool, schema)| ToolSpec {
                name: tool.name.to_owned(),
                description: tool.description.to_owned(),
                input_schema: schema.clone(),
                annotations: tool.annotations,
                runs: tool.runs,
                remote_host: tool.remote_host,
                feature: tool.feature.map(|(name, enabled)| FeatureGate {
                    name: name.to_owned(),
                    enabled,
                }),
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
    guard(|| {
        let (state, schemas) = state_with_schemas()?;
        let name = tool.as_str();
        let (tool, schema) = state
            .group
            .tools
            .iter()
            .zip(schemas)
            .find(|(t, _)| t.name == name)
            .ok_or_else(|| {
                ToolError::new(
                    codes::NOT_FOUND,
                    format!("the {} group has no tool \"{name}\"", state.group.id),
                )
            })?;
        if let Some((feature, false)) = tool.feature {
            return Err(ToolError::new(
                codes::UNAVAILABLE,
                format!("{name} is not in this build: it needs the \"{feature}\" feature"),
            ));
        }
        let args = parse_args(args_json.as_str())?;
        validate_args(schema, &args).map_err(|e| ToolError::new(codes::INVALID_ARGUMENTS, e))?;
        let value = (tool.handler)(&Ctx { raw: ctx }, Args(args))?;
        serde_json::to_string(&value)
            .map(RString::from)
            .map_err(|e| ToolError::new(codes::INTERNAL, format!("result: {e}")))
    })
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
    STATE.get().map_or("plugin", |s| s.group.id)
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

/// A tool's arguments, already checked against its schema.
#[derive(Debug, Clone, Default)]
pub struct Args(pub Map<String, Value>);

impl Args {
    fn get(&self, name: &str) -> Option<&Value> {
        self.0.get(name).filter(|v| !v.is_null())
    }

    fn wrong(name: &str, expected: &str) -> ToolError {
        ToolError::new(
            codes::INVALID_ARGUMENTS,
            format!("argument \"{name}\" must be {expected}"),
        )
    }

    /// A required string argument.
    pub fn str(&self, name: &str) -> Result<&str, ToolError> {
        self.opt_str(name)?.ok_or_else(|| {
            ToolError::new(
                codes::INVALID_ARGUMENTS,
                format!("missing required argument \"{name}\""),
            )
        })
    }

    /// An optional string argument.
    pub fn opt_str(&self, name: &str) -> Result<Option<&str>, ToolError> {
        self.get(name)
            .map(|v| v.as_str().ok_or_else(|| Self::wrong(name, "a string")))
            .transpose()
    }

    /// A list of strings (a missing argument is an empty list).
    pub fn str_list(&self, name: &str) -> Result<Vec<&str>, ToolError> {
        let Some(value) = self.get(name) else {
            return Ok(Vec::new());
        };
        let items = value
            .as_array()
            .ok_or_else(|| Self::wrong(name, "an array of strings"))?;
        items
            .iter()
            .map(|v| {
                v.as_str()
                    .ok_or_else(|| Self::wrong(name, "an array of strings"))
            })
            .collect()
    }

    /// An optional non-negative integer argument.
    pub fn opt_u64(&self, name: &str) -> Result<Option<u64>, ToolError> {
        self.get(name)
            .map(|v| {
                v.as_u64()
                    .ok_or_else(|| Self::wrong(name, "a non-negative integer"))
            })
            .transpose()
    }

    /// An optional boolean argument.
    pub fn opt_bool(&self, name: &str) -> Result<Option<bool>, ToolError> {
        self.get(name)
            .map(|v| v.as_bool().ok_or_else(|| Self::wrong(name, "a boolean")))
            .transpose()
    }

    /// The arguments as one JSON object.
    pub fn into_value(self) -> Value {
        Value::Object(self.0)
    }
}

/// Exports a [`Group`] as the library's root module.
///
/// ```ignore
/// static GROUP: coremcp_plugin_api::sdk::Group = /* … */;
/// coremcp_plugin_api::export_plugin!(GROUP);
/// ```
///
/// The static it defines is the abi_stable library header the host reads (name and layout
/// included) before running any code of the plugin.
#[macro_export]
macro_rules! export_plugin {
    ($group:path) => {
        #[no_mangle]
        #[allow(non_upper_case_globals)]
        pub static _1as_0lib_1header_0root_bmodule_bloader: $crate::__private::LibHeader = {
            extern "C" fn __coremcp_root_module() -> $crate::__private::RootModuleResult {
                $crate::__private::__call_root_module_loader(__coremcp_module)
            }
            fn __coremcp_module() -> $crate::PluginModRef {
                $crate::sdk::root_module(&$group)
            }
            // SAFETY: the constructor returns the `PluginModRef` that `root_module` builds,
            // which is the module type `from_constructor` is instantiated with.
            unsafe {
                $crate::__private::LibHeader::from_constructor::<$crate::PluginModRef>(
                    __coremcp_root_module,
                    $crate::__private::CheckTypeLayout::Yes,
                )
            }
        };
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn never(_: &Ctx<'_>, _: Args) -> Result<Value, ToolError> {
        Ok(Value::Null)
    }

    const fn tool(name: &'static str, input_schema: &'static str) -> Tool {
        Tool {
            name,
            description: "d",
            input_schema,
            annotations: Annotations::READ_ONLY,
            runs: Runs::Local,
            remote_host: true,
            feature: None,
            handler: never,
        }
    }

    #[test]
    fn check_table_names_every_problem() {
        static GOOD: Group = Group {
            id: "good",
            version: "1",
            tools: &[tool(
                "good_get",
                r#"{"type":"object","properties":{"id":{"type":"string","description":"the id"}},"required":["id"],"additionalProperties":false}"#,
            )],
            init: None,
        };
        assert_eq!(check_table(&GOOD), Ok(()));
        static BAD: Group = Group {
            id: "bad",
            version: "1",
            tools: &[
                tool("bad_json", "{"),
                tool(
                    "bad_open",
                    r#"{"type":"object","properties":{"remote_host":{"type":"string"}},"required":["x"]}"#,
                ),
            ],
            init: None,
        };
        let problems = check_table(&BAD).expect_err("bad table");
        let all = problems.join("\n");
        for needle in [
            "bad_json: input schema is not JSON",
            "bad_open: not a closed object schema",
            "bad_open: declares remote_host",
            "bad_open.remote_host: no description",
            "bad_open: required \"x\" is not a property",
        ] {
            assert!(all.contains(needle), "{needle} missing from:\n{all}");
        }
    }

    #[test]
    fn exported_header_has_the_name_abi_stable_looks_up() {
        assert_eq!(
            abi_stable::library::ROOT_MODULE_LOADER_NAME,
            "_1as_0lib_1header_0root_bmodule_bloader"
        );
    }
}
