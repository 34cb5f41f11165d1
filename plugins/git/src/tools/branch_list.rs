//! `git_branch_list`: local and/or remote-tracking branches with upstream, ahead/behind and
//! the last commit, from `git for-each-ref`.
//!
//! Invariants: read-only; `contains` can never be read as an option and an unknown commit is
//! `not_found`; symbolic refs such as `origin/HEAD` are not listed.

use coremcp_plugin_sdk::legacy::Args;
use coremcp_plugin_sdk::Ctx;
use coremcp_plugin_sdk::ToolError;
use serde_json::{json, Value};

use crate::git::{not_an_option, Mode};
use crate::parse::refs;
use crate::repo::owned;
use crate::text::{fit_array, RESULT_BUDGET};

pub fn run(ctx: &Ctx<'_>, args: Args) -> Result<Value, ToolError> {
    let repo = super::open(ctx, &args)?;
    let scope = args.opt_str("scope")?.unwrap_or("local");
    let patterns: &[&str] = match scope {
        "remote" => &["refs/remotes"],
        "all" => &["refs/heads", "refs/remotes"],
        _ => &["refs/heads"],
    };
    let mut argv = owned(&["for-each-ref", refs::FORMAT]);
    if let Some(commit) = args.opt_str("contains")? {
        not_an_option("contains", commit)?;
        argv.push(format!("--contains={commit}"));
    }
    argv.extend(owned(patterns));
    let out = repo.ok(Mode::Read, &argv)?;
    let branches = refs::parse(&out.text());
    let current = branches.iter().find(|b| b.current).map(|b| b.name.clone());
    let mut value = json!({
        "repo": repo.top().display().to_string(),
        "scope": scope,
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
