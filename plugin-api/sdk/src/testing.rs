//! What a group's own tests use: [`assert_group`], the one check of a table against the
//! catalog, and [`call`], which runs a tool the way the host does (schema check, then the
//! typed handler) without a host.

use std::sync::atomic::AtomicBool;

use coremcp_plugin_api::CallCtx;
use serde_json::Value;

use crate::export::{self, Ctx};
use crate::{Group, Tool, ToolError};

/// Checks `group` against its catalog entry: the same tool names in the same order; every
/// schema one the argument checker enforces in full (closed, described, no `null` types,
/// under 8 000 characters); descriptions under 1 000 characters; a feature-gated tool exactly
/// where the catalog gates one. Panics listing every problem.
pub fn assert_group(group: &Group) {
    let mut problems = Vec::new();
    let ours: Vec<&str> = group.tools.iter().map(|t| t.name).collect();
    let catalog: Vec<&str> = group.catalog.names().collect();
    if ours != catalog {
        problems.push(format!(
            "tools {ours:?} are not the catalog's {catalog:?} in its order"
        ));
    }
    for tool in group.entries() {
        match tool.description.chars().count() {
            0 => problems.push(format!(
                "{}: no description (give its argument struct a doc comment)",
                tool.name
            )),
            1000.. => problems.push(format!(
                "{}: description of 1000 characters or more",
                tool.name
            )),
            _ => {}
        }
        if let Err(e) = crate::schema::check_schema(&tool.handler.schema()) {
            problems.push(format!("{}: {e}", tool.name));
        }
        let gated = group
            .catalog
            .entry(tool.name)
            .is_some_and(|e| e.feature.is_some());
        if !tool.built && !gated {
            problems.push(format!(
                "{}: marked as not built, but the catalog gates it behind no feature",
                tool.name
            ));
        }
    }
    if let Err(e) = export::schemas(group) {
        problems.push(e);
    }
    assert!(
        problems.is_empty(),
        "the {} group does not match the catalog:\n{}",
        group.id(),
        problems.join("\n")
    );
}

/// [`assert_group`], and each tool's behaviour hints are `hints`, in table order.
pub fn assert_hints(group: &Group, hints: &[crate::Hints]) {
    assert_group(group);
    let ours: Vec<(&str, crate::Hints)> = group.tools.iter().map(|t| (t.name, t.hints)).collect();
    let expected: Vec<(&str, crate::Hints)> = group
        .tools
        .iter()
        .map(|t| t.name)
        .zip(hints.iter().copied())
        .collect();
    assert_eq!(ours, expected, "the {} group's hints", group.id());
}

/// Runs `tool` of `group` with `args` (a JSON object) as the host would, with a deadline a
/// minute away.
pub fn call(group: &Group, tool: &str, args: Value) -> Result<Value, ToolError> {
    let cancelled = AtomicBool::new(false);
    call_with(group, tool, args, &cancelled)
}

/// [`call`] with a stop signal the test controls.
pub fn call_with(
    group: &Group,
    tool: &str,
    args: Value,
    cancelled: &AtomicBool,
) -> Result<Value, ToolError> {
    let deadline = crate::time::now_ms().max(0) as u64 + 60_000;
    let raw = CallCtx {
        deadline_unix_ms: deadline,
        cancelled,
    };
    let tool: &Tool = group
        .tool(tool)
        .unwrap_or_else(|| panic!("the {} group has no tool {tool}", group.id()));
    let schema = tool.handler.schema();
    let text = export::run(group, tool, &schema, &Ctx::new(&raw), &args.to_string())?;
    serde_json::from_str(&text)
        .map_err(|e| ToolError::new(crate::codes::INTERNAL, format!("result: {e}")))
}

/// The typed arguments `A` from `args` (a JSON object), checked as the host's call would check
/// them (the schema, then the parse): for tests that drive a tool's logic without its handler.
pub fn parse<A: crate::args::ToolArgs>(args: Value) -> Result<A, ToolError> {
    let Value::Object(map) = args else {
        return Err(ToolError::new(
            crate::codes::INVALID_ARGUMENTS,
            "the arguments must be a JSON object",
        ));
    };
    crate::schema::validate_args(&A::schema(), &map)
        .map_err(|e| ToolError::new(crate::codes::INVALID_ARGUMENTS, e))?;
    A::parse(map).map_err(ToolError::from)
}

/// The message of a check's refusal of argument `field`: it must be `invalid_arguments` and
/// name the argument (for the tests of `rules` and of a group's own checks).
pub fn refused<T: std::fmt::Debug>(result: Result<T, ToolError>, field: &str) -> String {
    let err = result.expect_err("refused");
    assert_eq!(err.code.as_str(), crate::codes::INVALID_ARGUMENTS, "{err}");
    assert!(
        err.message.contains(&format!("\"{field}\"")),
        "names the field: {err}"
    );
    err.message.to_string()
}
