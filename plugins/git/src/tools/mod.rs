//! One module per tool; each exposes `run`, the handler the group table names.
//!
//! Invariants: every handler opens its repository through [`open`] (roots from the host), so
//! no tool touches a path before it is confined; results are JSON objects with a `repo` field
//! (the work tree's top level) and no `null`s.

pub mod add;
pub mod branch_list;
pub mod commit;
pub mod diff;
pub mod log;
pub mod push;
pub mod show;
pub mod status;

use coremcp_plugin_kit::Roots;
use coremcp_plugin_sdk::legacy::Args;
use coremcp_plugin_sdk::Ctx;
use coremcp_plugin_sdk::ToolError;
use serde_json::Value;

use crate::repo::Repo;
use crate::text;

/// Opens the repository named by the `repo_path` argument inside the host's roots.
pub fn open<'c>(ctx: &'c Ctx<'c>, args: &Args) -> Result<Repo<'c>, ToolError> {
    Repo::open(ctx, Roots::from_host()?, args.opt_str("repo_path")?)
}

/// The `max_chars` argument (the schema bounds it).
pub fn max_chars(args: &Args) -> Result<usize, ToolError> {
    Ok(args
        .opt_u64("max_chars")?
        .map_or(text::DEFAULT_MAX_CHARS, |n| n as usize))
}

/// A JSON value of one of our serialisable structs.
pub fn json<T: serde::Serialize>(value: &T) -> Result<Value, ToolError> {
    serde_json::to_value(value)
        .map_err(|e| ToolError::new(coremcp_plugin_sdk::codes::INTERNAL, format!("result: {e}")))
}
