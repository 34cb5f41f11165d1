//! `git_add`: stage paths (`["."]` for every change under `repo_path`), including deletions.
//!
//! Invariants: every path is confined to the roots and the work tree before git sees it, and
//! reaches git after `--` as a literal pathspec relative to the top level; staging again
//! changes nothing more and is not an error (idempotent), even for a deletion already staged;
//! a path that neither exists nor is tracked is `not_found`. The answer lists what is staged
//! afterwards.

use coremcp_plugin_sdk::ToolError;
use coremcp_plugin_sdk::{codes, Ctx};
use coremcp_plugin_sdk::{typed, Args, Hints, Tool};
use serde_json::{json, Value};

use crate::git::Mode;
use crate::parse::status;
use crate::repo::{owned, Repo};
use crate::text::{fit_array, result_budget};

pub const TOOL: Tool = Tool::typed("git_add", &typed(run)).hints(Hints::IDEMPOTENT);

/// Stage paths (["."]: every change, deletions too); staging again is a no-op.
#[derive(Debug, Args)]
pub struct Add {
    #[arg(flatten)]
    at: super::RepoPath,
    /// relative to repo_path
    #[arg(required)]
    paths: Vec<String>,
}
fn run(ctx: &Ctx<'_>, args: Add) -> Result<Value, ToolError> {
    let repo = super::open(ctx, &args.at)?;
    let given = &args.paths;
    if given.is_empty() {
        return Err(ToolError::new(
            codes::INVALID_ARGUMENTS,
            "argument \"paths\" must name at least one path ([\".\"] for all changes)",
        ));
    }
    let paths = given
        .iter()
        .map(|p| repo.pathspec("paths", p))
        .collect::<Result<Vec<_>, _>>()?;
    // git refuses a missing path it does not track, even when its deletion is already
    // staged: leave those out so that staging again is not an error.
    let mut to_add = Vec::new();
    for (rel, given) in paths.iter().zip(given) {
        if repo.top().join(rel).symlink_metadata().is_ok() || tracked(&repo, rel)? {
            to_add.push(rel.clone());
        } else if !staged_deletion(&repo, rel)? {
            return Err(ToolError::new(
                codes::NOT_FOUND,
                format!("argument \"paths\" ({given}): no such file, and git does not track it"),
            ));
        }
    }
    if !to_add.is_empty() {
        let mut argv = owned(&["add", "--"]);
        argv.extend(to_add);
        repo.ok(Mode::Write, &argv)?;
    }
    let out = repo.read(&["status", "--porcelain=v2", "-z"])?;
    let staged = status::parse(&out.text()).staged;
    let mut value = json!({
        "repo": repo.top().display().to_string(),
        "added": paths,
        "staged_count": staged.len(),
        "staged": super::json(&staged)?,
    });
    if fit_array(&mut value, "staged", result_budget()) > 0 {
        value["truncated"] = json!(true);
    }
    Ok(value)
}

/// Whether the index has `rel` (a file, or files under a folder).
fn tracked(repo: &Repo<'_>, rel: &str) -> Result<bool, ToolError> {
    Ok(!repo
        .read(&["ls-files", "-z", "--", rel])?
        .stdout
        .bytes
        .is_empty())
}

/// Whether the index already records the deletion of `rel` (or of files under it).
fn staged_deletion(repo: &Repo<'_>, rel: &str) -> Result<bool, ToolError> {
    let out = repo.run(
        Mode::Read,
        &owned(&["rev-parse", "--verify", "--quiet", "HEAD"]),
    )?;
    if !out.success() {
        return Ok(false);
    }
    let out = repo.read(&[
        "diff",
        "--cached",
        "--name-only",
        "-z",
        "--diff-filter=D",
        "--",
        rel,
    ])?;
    Ok(!out.stdout.bytes.is_empty())
}
