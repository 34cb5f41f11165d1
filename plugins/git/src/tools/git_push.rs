//! `git_push`: push one local branch to a configured remote, with per-ref results from
//! `git push --porcelain`.
//!
//! Invariants: there is no plain force, only `--force-with-lease`; `remote` must be a
//! configured remote (not a URL or a path, which could write outside the roots), and none of
//! its push URLs (after `insteadOf` rewriting) may be a repository on this machine outside the
//! roots or a remote helper; `remote` and
//! `branch` can never be read as options; the upstream is set by default when the branch has
//! none; a rejected ref is an error (`conflict` when the remote moved on) that says what to
//! do; credential helpers and hooks apply, and git never prompts.

use coremcp_plugin_sdk::ToolError;
use coremcp_plugin_sdk::{codes, Ctx};
use coremcp_plugin_sdk::{typed, Args, Hints, Tool};
use serde_json::{json, Value};

use crate::git::{not_an_option, Mode, EXCERPT_CHARS};
use crate::parse::push::{self, RefUpdate};
use crate::repo::owned;

pub const TOOL: Tool = Tool::typed("git_push", &typed(run)).hints(Hints::DESTRUCTIVE);

/// Push a branch (default current) to a configured remote; sets upstream if none. No plain
/// force: force_with_lease.
#[derive(Debug, Args)]
pub struct Push {
    #[arg(flatten)]
    at: super::RepoPath,
    /// default origin
    remote: Option<String>,
    /// default the current
    branch: Option<String>,
    /// set upstream (default: if it has none)
    set_upstream: Option<bool>,
    /// overwrite only if the remote is as last fetched
    #[arg(default)]
    force_with_lease: bool,
    /// tags too
    #[arg(default)]
    tags: bool,
}
fn run(ctx: &Ctx<'_>, args: Push) -> Result<Value, ToolError> {
    let repo = super::open(ctx, &args.at)?;
    let remote = args.remote.as_deref().unwrap_or("origin");
    not_an_option("remote", remote)?;
    let remotes: Vec<String> = repo
        .read(&["remote"])?
        .text()
        .lines()
        .map(str::to_owned)
        .collect();
    if !remotes.iter().any(|r| r == remote) {
        let known = if remotes.is_empty() {
            "this repository has no remotes".to_owned()
        } else {
            format!("configured: {}", remotes.join(", "))
        };
        return Err(ToolError::new(
            codes::NOT_FOUND,
            format!("no remote named \"{remote}\" ({known}); git_push pushes only to configured remotes"),
        ));
    }
    // Where the push would write, as git will rewrite it.
    let urls = repo
        .read(&["remote", "get-url", "--push", "--all", remote])?
        .text();
    let roots = coremcp_plugin_kit::Roots::from_host()?;
    for url in urls.lines().map(str::trim).filter(|u| !u.is_empty()) {
        crate::git::check_url(
            &roots,
            url,
            repo.top(),
            &format!("remote \"{remote}\" pushes to"),
        )?;
    }
    let branch = match &args.branch {
        Some(b) => b.clone(),
        None => repo.current_branch()?.ok_or_else(|| {
            ToolError::new(
                codes::INVALID_ARGUMENTS,
                "HEAD is detached (no current branch): pass branch",
            )
        })?,
    };
    not_an_option("branch", &branch)?;
    let local_ref = format!("refs/heads/{branch}");
    let exists = repo.run(
        Mode::Read,
        &owned(&["rev-parse", "--verify", "--quiet", &local_ref]),
    )?;
    if !exists.success() {
        return Err(ToolError::new(
            codes::NOT_FOUND,
            format!("no local branch \"{branch}\" (a branch with no commits cannot be pushed)"),
        ));
    }
    let upstream = repo
        .read(&["for-each-ref", "--format=%(upstream:short)", &local_ref])?
        .line();
    let set_upstream = args.set_upstream.unwrap_or(upstream.is_empty());
    let (force_with_lease, tags) = (args.force_with_lease, args.tags);

    let mut argv = owned(&["push", "--porcelain"]);
    if set_upstream {
        argv.push("--set-upstream".to_owned());
    }
    if force_with_lease {
        argv.push("--force-with-lease".to_owned());
    }
    if tags {
        argv.push("--tags".to_owned());
    }
    argv.push(remote.to_owned());
    argv.push(format!("{local_ref}:{local_ref}"));
    let out = repo.run(Mode::Write, &argv)?;
    let pushed = push::parse(&out.text());
    let said = out.stderr.excerpt(EXCERPT_CHARS);

    let rejected: Vec<&RefUpdate> = pushed.refs.iter().filter(|r| r.rejected()).collect();
    if !rejected.is_empty() {
        let code = if rejected.iter().any(|r| r.is_conflict()) {
            codes::CONFLICT
        } else {
            codes::FAILED
        };
        let mut message = rejected
            .iter()
            .map(|r| rejection(r))
            .collect::<Vec<_>>()
            .join("; ");
        if !said.is_empty() {
            message.push_str(&format!("\ngit said: {said}"));
        }
        return Err(ToolError::new(code, message));
    }
    if !out.success() {
        return Err(crate::git::failure(&argv, &out));
    }
    let upstream_after = if set_upstream {
        format!("{remote}/{branch}")
    } else {
        upstream
    };
    let mut value = json!({
        "repo": repo.top().display().to_string(),
        "remote": remote,
        "branch": branch,
        "set_upstream": set_upstream,
        "force_with_lease": force_with_lease,
        "refs": super::json(&pushed.refs)?,
        "text": said,
    });
    if let Some(to) = pushed.to {
        value["to"] = json!(to);
    }
    if !upstream_after.is_empty() {
        value["upstream"] = json!(upstream_after);
    }
    Ok(value)
}

/// What a rejected ref means and what to do about it.
fn rejection(r: &RefUpdate) -> String {
    let reason = r.reason.as_deref().unwrap_or("rejected");
    let what = match reason {
        "non-fast-forward" | "fetch first" => {
            "the remote has commits you do not have; pull or rebase first, or use force_with_lease"
        }
        "stale info" => {
            "force_with_lease refused: the remote branch moved since this repository last \
             fetched it; fetch and review the remote's commits first"
        }
        "needs force" | "already exists" => "the remote ref exists and would be overwritten",
        _ => "the remote refused the update",
    };
    format!("push rejected ({reason}) for {}: {what}", r.remote_ref)
}
