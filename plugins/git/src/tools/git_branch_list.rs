//! `git_branch_list`: local and/or remote-tracking branches with upstream, ahead/behind and
//! the last commit, from `git for-each-ref`, in ref order, a page at a time.
//!
//! Invariants: read-only; `contains` and `pattern` can never be read as an option and an
//! unknown commit is `not_found`; symbolic refs such as `origin/HEAD` are not listed; `count`
//! is every branch that matches, and `next_cursor` (the last branch shown) reaches the rest,
//! each exactly once, however many there are.

use coremcp_plugin_sdk::ArgEnum;
use coremcp_plugin_sdk::Ctx;
use coremcp_plugin_sdk::ToolError;
use coremcp_plugin_sdk::{typed, Args, Hints, Tool};
use serde_json::{json, Value};

use crate::git::{not_an_option, Mode};
use crate::parse::refs;
use crate::repo::owned;
use coremcp_plugin_sdk::args::invalid;
use coremcp_plugin_sdk::page::{decode_cursor, encode_cursor, page};

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
    /// glob, e.g. fix/*
    pattern: Option<String>,
    /// next_cursor
    cursor: Option<String>,
}
fn run(ctx: &Ctx<'_>, args: BranchList) -> Result<Value, ToolError> {
    let repo = super::open(ctx, &args.at)?;
    let roots: &[&str] = match args.scope {
        Scope::Remote => &["refs/remotes"],
        Scope::All => &["refs/heads", "refs/remotes"],
        Scope::Local => &["refs/heads"],
    };
    let mut argv = owned(&["for-each-ref", refs::FORMAT]);
    if let Some(commit) = args.contains.as_deref() {
        not_an_option("contains", commit)?;
        argv.push(format!("--contains={commit}"));
    }
    match args.pattern.as_deref() {
        Some(pattern) => {
            check_pattern(pattern)?;
            argv.extend(roots.iter().map(|root| format!("{root}/{pattern}")));
        }
        None => argv.extend(owned(roots)),
    }
    let after = args
        .cursor
        .as_deref()
        .map(|c| decode_cursor(c, 2))
        .transpose()?;
    let out = repo.ok(Mode::Read, &argv)?;
    let branches = refs::parse(&out.text());
    let current = branches.iter().find(|b| b.current).map(|b| b.name.clone());
    let count = branches.len();
    // Ref order: the local branches, then the remote ones, each by name, as git lists them.
    let key = |remote: bool, name: &str| (if remote { "r" } else { "l" }, name.to_owned());
    let listed = match super::json(&branches)? {
        Value::Array(listed) => listed,
        _ => Vec::new(),
    };
    let rest: Vec<Value> = listed
        .into_iter()
        .zip(&branches)
        .filter(|(_, b)| {
            after.as_ref().is_none_or(|a| {
                let (kind, name) = key(b.remote, &b.name);
                (kind, name.as_str()) > (a[0].as_str(), a[1].as_str())
            })
        })
        .map(|(v, _)| v)
        .collect();
    let mut value = json!({
        "repo": repo.top().display().to_string(),
        "scope": args.scope.as_str(),
        "count": count,
        "branches": [],
    });
    if let Some(current) = current {
        value["current"] = json!(current);
    }
    // Room for the cursor, at its longest, before the branches are counted in.
    let longest = branches.iter().map(|b| b.name.len()).max().unwrap_or(0);
    value["next_cursor"] = json!("0".repeat(2 * (longest + 16)));
    // As many as fit one answer, at most a list's 200.
    let (shown, next) = page(rest, 200, &value, |b| {
        let remote = b["remote"].as_bool().unwrap_or(false);
        encode_cursor(&[
            if remote { "r" } else { "l" },
            b["name"].as_str().unwrap_or(""),
        ])
    });
    value["branches"] = Value::Array(shown);
    match next {
        Some(cursor) => value["next_cursor"] = json!(cursor),
        None => {
            if let Some(map) = value.as_object_mut() {
                map.remove("next_cursor");
            }
        }
    }
    Ok(value)
}

/// A branch-name glob git reads as a pattern and nothing else: name characters, `/` and the
/// wildcards `*`, `?`, `[`, `]`, never a leading `-`.
fn check_pattern(pattern: &str) -> Result<(), ToolError> {
    not_an_option("pattern", pattern)?;
    let allowed = |c: char| c.is_ascii_alphanumeric() || "._/-*?[]+@".contains(c);
    if pattern.is_empty() || pattern.len() > 200 || !pattern.chars().all(allowed) {
        return Err(invalid(
            "pattern",
            format!(
                "{pattern:?} is not a branch-name glob: use name characters, / and the \
                 wildcards * ? [ ] (like feature/* or *fix*)"
            ),
        ));
    }
    Ok(())
}
