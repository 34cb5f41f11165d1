//! `git_commit`: commit what is staged (with `all`, tracked modifications too) and return the
//! new commit's SHA, short SHA, branch and summary.
//!
//! Invariants: hooks run (a refusing hook is an error quoting its output); nothing staged is
//! a clear error before git runs, unless `allow_empty`; the message reaches git as one
//! `--message=` argument, never through a shell or an editor.

use coremcp_plugin_sdk::ToolError;
use coremcp_plugin_sdk::{codes, Ctx};
use coremcp_plugin_sdk::{typed, Args, Hints, Tool};
use serde_json::{json, Value};

use crate::git::{Mode, EXCERPT_CHARS};
use crate::parse::{log, numstat};
use crate::repo::{owned, Repo};

pub const TOOL: Tool = Tool::typed("git_commit", &typed(run)).hints(Hints::ADD);

/// Commit what is staged (all: tracked changes too); hooks run. Nothing staged is an error.
#[derive(Debug, Args)]
pub struct Commit {
    #[arg(flatten)]
    at: super::RepoPath,
    /// the commit message
    message: String,
    /// like -a
    #[arg(default)]
    all: bool,
    /// commit even if empty
    #[arg(default)]
    allow_empty: bool,
}
fn run(ctx: &Ctx<'_>, args: Commit) -> Result<Value, ToolError> {
    let repo = super::open(ctx, &args.at)?;
    let message = args.message.as_str();
    if message.trim().is_empty() {
        return Err(ToolError::new(
            codes::INVALID_ARGUMENTS,
            "argument \"message\" must not be empty",
        ));
    }
    let (all, allow_empty) = (args.all, args.allow_empty);
    if !allow_empty && !has_changes(&repo, &["diff", "--cached", "--quiet"])? {
        let tracked = all && has_changes(&repo, &["diff", "--quiet"])?;
        if !tracked {
            let hint = if all {
                "there are no staged changes and no modified tracked files; stage new files with \
                 git_add"
            } else {
                "no changes are staged; stage them with git_add (or pass all: true to commit \
                 modified tracked files)"
            };
            return Err(ToolError::new(
                codes::FAILED,
                format!("nothing to commit: {hint}, or pass allow_empty: true for an empty commit"),
            ));
        }
    }
    let mut argv = owned(&["commit"]);
    argv.push(format!("--message={message}"));
    if all {
        argv.push("--all".to_owned());
    }
    if allow_empty {
        argv.push("--allow-empty".to_owned());
    }
    let out = repo.run(Mode::Write, &argv)?;
    if !out.success() {
        let said = out.said();
        return Err(ToolError::new(
            codes::FAILED,
            format!(
                "git commit failed (exit {}); a hook or git refused the commit: {}",
                out.code,
                if said.is_empty() {
                    "(no output)"
                } else {
                    &said
                }
            ),
        ));
    }
    let meta = repo.read(&[
        "log",
        "-1",
        "--no-color",
        "--no-show-signature",
        log::FORMAT,
        "HEAD",
    ])?;
    let commit = log::parse(&meta.text())
        .into_iter()
        .next()
        .ok_or_else(|| ToolError::new(codes::FAILED, "the new commit could not be read back"))?;
    let stats = repo.read(&[
        "show",
        "--format=",
        "--no-ext-diff",
        "--numstat",
        "-z",
        "HEAD",
    ])?;
    let files = numstat::parse(&stats.text());
    let (insertions, deletions) = numstat::totals(&files);
    let mut value = json!({
        "repo": repo.top().display().to_string(),
        "sha": commit.sha,
        "short_sha": commit.short_sha,
        "summary": commit.subject,
        "files_changed": files.len(),
        "insertions": insertions,
        "deletions": deletions,
        "text": out.stdout.excerpt(EXCERPT_CHARS),
    });
    if let Some(branch) = repo.current_branch()? {
        value["branch"] = json!(branch);
    }
    Ok(value)
}

/// Whether `git diff … --quiet` finds differences (exit 1); other failures are errors.
fn has_changes(repo: &Repo<'_>, args: &[&str]) -> Result<bool, ToolError> {
    let argv = owned(args);
    let out = repo.run(Mode::Read, &argv)?;
    match out.code {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(crate::git::failure(&argv, &out)),
    }
}
