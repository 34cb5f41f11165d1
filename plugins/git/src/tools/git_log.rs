//! `git_log`: commits (newest first) with sha, author, ISO 8601 date, subject and body,
//! filtered by revision, path, date, author and message.
//!
//! Invariants: at most `max_count` commits (1–200); `has_more` tells whether the history goes
//! on and `next_cursor` reads on: it holds `rev` as the commits it named on the first page and
//! how many were shown, so a walk (with the same filters) sees each commit once even while new
//! commits land; filters reach git as single `--opt=value` arguments and `rev` can never be read
//! as an option; a branch with no commits yet gives an empty list.

use coremcp_plugin_sdk::Ctx;
use coremcp_plugin_sdk::ToolError;
use coremcp_plugin_sdk::{typed, Args, Hints, Tool};
use serde_json::{json, Value};

use coremcp_plugin_sdk::args::invalid;
use coremcp_plugin_sdk::page::{decode_cursor, encode_cursor};

use crate::git::{not_an_option, Mode};
use crate::parse::log::{self, Commit};
use crate::repo::owned;
use crate::text::{self, fit_array, result_budget};

/// A body longer than this is cut (git_show gives the whole message).
const MAX_BODY_CHARS: usize = 2000;

pub const TOOL: Tool = Tool::typed("git_log", &typed(run)).hints(Hints::READ);

/// Commits, newest first (sha, author, date, subject, body). Filters: rev, path, since/until,
/// author, grep.
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
    /// next_cursor
    cursor: Option<String>,
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
    // Where the walk stands: the commits `rev` named when it began, and how many were shown.
    let (pinned, skip) = match args.cursor.as_deref() {
        Some(cursor) => read_cursor(cursor)?,
        None => match pin(&repo, rev.unwrap_or("HEAD"))? {
            Some(pinned) => (pinned, 0),
            None if rev.is_none() => (Vec::new(), 0),
            None => {
                return Err(ToolError::new(
                    coremcp_plugin_sdk::codes::NOT_FOUND,
                    format!(
                        "unknown revision \"{}\" in this repository",
                        rev.unwrap_or("HEAD")
                    ),
                ))
            }
        },
    };
    let mut argv = owned(&["log", "--no-color", "--no-show-signature", log::FORMAT]);
    // One more than asked, to know whether there is more.
    argv.push(format!("--max-count={}", max_count + 1));
    if skip > 0 {
        argv.push(format!("--skip={skip}"));
    }
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
    if pinned.is_empty() {
        // An unborn branch: no history yet.
        return Ok(json!({
            "repo": repo.top().display().to_string(),
            "count": 0,
            "has_more": false,
            "commits": [],
        }));
    }
    argv.extend(pinned.iter().cloned());
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
    // Room for the cursor before the commits are fitted.
    let placeholder = "0".repeat(2 * (pinned.iter().map(|p| p.len() + 4).sum::<usize>() + 32));
    value["next_cursor"] = json!(placeholder);
    let dropped = fit_array(&mut value, "commits", result_budget());
    let shown = commits.len() - dropped;
    if dropped > 0 {
        value["count"] = json!(shown);
        value["has_more"] = json!(true);
        value["truncated"] = json!(true);
    }
    match value["has_more"] == true {
        true => {
            let next = skip + shown;
            let revs = pinned.join(" ");
            value["next_cursor"] = json!(encode_cursor(&[&revs, &next.to_string()]));
        }
        false => {
            if let Some(map) = value.as_object_mut() {
                map.remove("next_cursor");
            }
        }
    }
    Ok(value)
}

/// The commits `rev` names now (`rev-parse`: one sha, or a range's ends with `^` on those it
/// excludes); `None` when it names none.
fn pin(repo: &crate::repo::Repo<'_>, rev: &str) -> Result<Option<Vec<String>>, ToolError> {
    let out = repo.run(Mode::Read, &owned(&["rev-parse", "--revs-only", rev]))?;
    let pinned: Vec<String> = out.text().lines().map(str::to_owned).collect();
    Ok((out.success() && !pinned.is_empty()).then_some(pinned))
}

/// The pinned commits and the count shown so far a cursor of this tool holds.
fn read_cursor(cursor: &str) -> Result<(Vec<String>, usize), ToolError> {
    let parts = decode_cursor(cursor, 2)?;
    let bad = || {
        invalid(
            "cursor",
            "is not a cursor this tool returned (pass next_cursor unchanged)",
        )
    };
    let pinned: Vec<String> = parts[0].split(' ').map(str::to_owned).collect();
    let is_object = |p: &String| {
        let hex = p.strip_prefix('^').unwrap_or(p);
        (4..=64).contains(&hex.len()) && hex.bytes().all(|b| b.is_ascii_hexdigit())
    };
    if pinned.is_empty() || !pinned.iter().all(is_object) {
        return Err(bad());
    }
    let skip = parts[1].parse().map_err(|_| bad())?;
    Ok((pinned, skip))
}

fn cut_body(commit: &mut Commit) {
    if let Some(body) = &commit.body {
        let cut = text::cut(body, MAX_BODY_CHARS, 0, "git_show gives the whole message");
        if cut.truncated {
            commit.body = Some(cut.text);
        }
    }
}
