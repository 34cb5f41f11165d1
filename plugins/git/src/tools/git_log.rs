//! `git_log`: commits (newest first) with sha, author, ISO 8601 date, subject and body,
//! filtered by revision, path, date, author and message.
//!
//! Invariants: at most `max_count` commits (1–200); `has_more` tells whether the history goes
//! on; filters reach git as single `--opt=value` arguments and `rev` can never be read as an
//! option; a branch with no commits yet gives an empty list.

use coremcp_plugin_sdk::Ctx;
use coremcp_plugin_sdk::ToolError;
use coremcp_plugin_sdk::{typed, Args, Hints, Tool};
use serde_json::{json, Value};

use crate::git::{not_an_option, Mode};
use crate::parse::log::{self, Commit};
use crate::repo::owned;
use crate::text::{self, fit_array, RESULT_BUDGET};

/// A body longer than this is cut (git_show gives the whole message).
const MAX_BODY_CHARS: usize = 2000;

pub const TOOL: Tool = Tool::typed("git_log", &typed(run)).hints(Hints::READ);

/// Commits, newest first (sha, author, date, subject, body); has_more if more match. Filters:
/// rev, path, since/until, author, grep.
#[derive(Debug, Args)]
pub struct Log {
    #[arg(flatten)]
    at: super::RepoPath,
    /// default 20
    #[arg(min = 1, max = 200, default = 20)]
    max_count: u64,
    /// default HEAD
    rev: Option<String>,
    /// relative to repo_path
    path: Option<String>,
    /// 2024-05-01, RFC 3339 or "2 weeks ago"
    since: Option<String>,
    /// as since
    until: Option<String>,
    /// author pattern
    author: Option<String>,
    /// message pattern
    grep: Option<String>,
}
fn run(ctx: &Ctx<'_>, args: Log) -> Result<Value, ToolError> {
    let repo = super::open(ctx, &args.at)?;
    let max_count = args.max_count;
    let rev = args.rev.as_deref();
    if let Some(rev) = rev {
        not_an_option("rev", rev)?;
    }
    let path = args
        .path
        .as_deref()
        .map(|p| repo.pathspec("path", p))
        .transpose()?;
    for (field, value) in [("since", &args.since), ("until", &args.until)] {
        if let Some(value) = value {
            crate::date::check(field, value)?;
        }
    }
    let mut argv = owned(&["log", "--no-color", "--no-show-signature", log::FORMAT]);
    // One more than asked, to know whether there is more.
    argv.push(format!("--max-count={}", max_count + 1));
    for (value, flag) in [
        (&args.since, "--since"),
        (&args.until, "--until"),
        (&args.author, "--author"),
        (&args.grep, "--grep"),
    ] {
        if let Some(value) = value {
            argv.push(format!("{flag}={value}"));
        }
    }
    argv.push(rev.unwrap_or("HEAD").to_owned());
    argv.push("--".to_owned());
    argv.extend(path);
    let out = repo.run(Mode::Read, &argv)?;
    let mut commits = if out.success() {
        log::parse(&out.text())
    } else if rev.is_none()
        && repo
            .run(
                Mode::Read,
                &owned(&["rev-parse", "--verify", "--quiet", "HEAD"]),
            )?
            .code
            != 0
    {
        // An unborn branch: no history yet.
        Vec::new()
    } else {
        return Err(crate::git::failure(&argv, &out));
    };
    let has_more = commits.len() as u64 > max_count;
    commits.truncate(max_count as usize);
    for commit in &mut commits {
        cut_body(commit);
    }
    let mut value = json!({
        "repo": repo.top().display().to_string(),
        "count": commits.len(),
        "has_more": has_more,
        "commits": super::json(&commits)?,
    });
    let dropped = fit_array(&mut value, "commits", RESULT_BUDGET);
    if dropped > 0 {
        let left = commits.len() - dropped;
        value["count"] = json!(left);
        value["has_more"] = json!(true);
        value["truncated"] = json!(true);
    }
    Ok(value)
}

fn cut_body(commit: &mut Commit) {
    if let Some(body) = &commit.body {
        let cut = text::cut(body, MAX_BODY_CHARS, 0, "git_show gives the whole message");
        if cut.truncated {
            commit.body = Some(cut.text);
        }
    }
}
