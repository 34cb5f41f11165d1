//! `git_branch_list`: local and/or remote-tracking branches with upstream, ahead/behind and
//! the last commit, from `git for-each-ref`.
//!
//! Invariants: read-only; `contains` can never be read as an option and an unknown commit is
//! `not_found`; symbolic refs such as `origin/HEAD` are not listed.

use coremcp_plugin_sdk::ArgEnum;
use coremcp_plugin_sdk::Ctx;
use coremcp_plugin_sdk::ToolError;
use coremcp_plugin_sdk::{typed, Args, Hints, Tool};
use serde_json::{json, Value};

use crate::git::{not_an_option, Mode};
use crate::parse::refs;
use crate::repo::owned;
use crate::text::{fit_array, RESULT_BUDGET};

pub const TOOL: Tool = Tool::typed("git_branch_list", &typed(run)).hints(Hints::READ);

#[derive(Debug, Clone, Copy, ArgEnum)]
enum Scope {
    Local,
    Remote,
    All,
}

/// Branches with upstream, ahead/behind and last commit.
#[derive(Debug, Args)]
pub struct BranchList {
    #[arg(flatten)]
    at: super::RepoPath,
    /// default local
    #[arg(default = Scope::Local)]
    scope: Scope,
    /// containing this commit
    contains: Option<String>,
}
fn run(ctx: &Ctx<'_>, args: BranchList) -> Result<Value, ToolError> {
    let repo = super::open(ctx, &args.at)?;
    let patterns: &[&str] = match args.scope {
        Scope::Remote => &["refs/remotes"],
        Scope::All => &["refs/heads", "refs/remotes"],
        Scope::Local => &["refs/heads"],
    };
    let mut argv = owned(&["for-each-ref", refs::FORMAT]);
    if let Some(commit) = args.contains.as_deref() {
        not_an_option("contains", commit)?;
        argv.push(format!("--contains={commit}"));
    }
    argv.extend(owned(patterns));
    let out = repo.ok(Mode::Read, &argv)?;
    let branches = refs::parse(&out.text());
    let current = branches.iter().find(|b| b.current).map(|b| b.name.clone());
    let mut value = json!({
        "repo": repo.top().display().to_string(),
        "scope": args.scope.as_str(),
        "count": branches.len(),
        "branches": super::json(&branches)?,
    });
    if let Some(current) = current {
        value["current"] = json!(current);
    }
    if fit_array(&mut value, "branches", RESULT_BUDGET) > 0 {
        value["truncated"] = json!(true);
    }
    Ok(value)
}
