//! `git_status`: branch, upstream, ahead/behind and the staged, unstaged, untracked and
//! conflicted files, from `git status --porcelain=v2 --branch -z`.
//!
//! Invariants: read-only (no index refresh is written: `GIT_OPTIONAL_LOCKS=0`); `counts` are
//! always complete even when a long list is cut to fit the result limit (`truncated: true`).

use coremcp_plugin_sdk::Ctx;
use coremcp_plugin_sdk::ToolError;
use coremcp_plugin_sdk::{typed, Args, Hints, Tool};
use serde_json::{json, Value};

use crate::parse::status;
use crate::text::{fit_array, result_budget};

pub const TOOL: Tool = Tool::typed("git_status", &typed(run)).hints(Hints::READ);

/// Working-tree state: branch, upstream, ahead/behind, and staged, unstaged, untracked and
/// conflicted files.
#[derive(Debug, Args)]
pub struct Status {
    #[arg(flatten)]
    at: super::RepoPath,
}
fn run(ctx: &Ctx<'_>, args: Status) -> Result<Value, ToolError> {
    let repo = super::open(ctx, &args.at)?;
    let out = repo.read(&["status", "--porcelain=v2", "--branch", "-z"])?;
    let status = status::parse(&out.text());
    let counts = json!({
        "staged": status.staged.len(),
        "unstaged": status.unstaged.len(),
        "untracked": status.untracked.len(),
        "conflicted": status.conflicted.len(),
    });
    let clean = status.is_clean();
    let mut value = super::json(&status)?;
    value["repo"] = json!(repo.top().display().to_string());
    value["clean"] = json!(clean);
    value["counts"] = counts;
    let mut truncated = false;
    for list in ["untracked", "unstaged", "staged", "conflicted"] {
        truncated |= fit_array(&mut value, list, result_budget()) > 0;
    }
    if truncated {
        value["truncated"] = json!(true);
    }
    Ok(value)
}
