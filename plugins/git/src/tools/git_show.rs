//! `git_show`: one commit (metadata, per-file stats and the patch, or only the stats), or the
//! content of a file (or the listing of a folder) at a revision.
//!
//! Invariants: `revision` can never be read as an option and must name a commit (or, with
//! `path`, a tree-ish); an unknown revision or a path missing at the revision is `not_found`;
//! `path` is confined like every path argument; text is cut at `max_chars`; a binary file's
//! content is not returned.

use coremcp_plugin_sdk::ToolError;
use coremcp_plugin_sdk::{codes, Ctx};
use coremcp_plugin_sdk::{typed, Args, Hints, Tool};
use serde_json::{json, Value};

use crate::git::{not_an_option, Mode};
use crate::parse::{log, numstat};
use crate::repo::{owned, Repo};
use crate::text::{self, result_budget};

const HINT: &str = "pass offset to read on, stat_only, or a larger max_chars (at most 19000); \
    git_diff with target REV~1..REV and paths shows part of a commit";
const FILE_HINT: &str = "pass a larger max_chars (at most 19000)";

pub const TOOL: Tool = Tool::typed("git_show", &typed(run)).hints(Hints::READ);

/// Show one commit (message plus diff or stat), or a file's content at a revision.
#[derive(Debug, Args)]
pub struct Show {
    #[arg(flatten)]
    at: super::RepoPath,
    /// sha, branch, tag, HEAD~2
    revision: String,
    /// this file at the revision
    path: Option<String>,
    /// line counts, no patch
    #[arg(default)]
    stat_only: bool,
    /// cut at (default 12000)
    #[arg(min = 200, max = 19000, default = crate::text::DEFAULT_MAX_CHARS)]
    max_chars: usize,
    /// text from this char
    #[arg(min = 0, default = 0)]
    offset: usize,
}
fn run(ctx: &Ctx<'_>, args: Show) -> Result<Value, ToolError> {
    let repo = super::open(ctx, &args.at)?;
    let revision = args.revision.as_str();
    not_an_option("revision", revision)?;
    let max_chars = args.max_chars;
    match args.path.as_deref() {
        Some(path) => {
            let rel = repo.pathspec("path", path)?;
            file_at(&repo, revision, &rel, max_chars, args.offset)
        }
        None => commit(&repo, revision, args.stat_only, max_chars, args.offset),
    }
}

/// The object `spec` names, or `None`.
fn verify(repo: &Repo<'_>, spec: &str) -> Result<Option<String>, ToolError> {
    let out = repo.run(
        Mode::Read,
        &owned(&["rev-parse", "--verify", "--quiet", spec]),
    )?;
    Ok(out.success().then(|| out.line()))
}

fn unknown(revision: &str, what: &str, hint: &str) -> ToolError {
    ToolError::new(
        codes::NOT_FOUND,
        format!("unknown revision \"{revision}\": it names no {what} in this repository{hint}"),
    )
}

fn commit(
    repo: &Repo<'_>,
    revision: &str,
    stat_only: bool,
    max_chars: usize,
    offset: usize,
) -> Result<Value, ToolError> {
    let sha = verify(repo, &format!("{revision}^{{commit}}"))?.ok_or_else(|| {
        unknown(
            revision,
            "commit",
            " (to see a file at a revision, pass path)",
        )
    })?;
    let meta = repo.read(&[
        "show",
        "-s",
        "--no-color",
        "--no-show-signature",
        log::FORMAT,
        &sha,
    ])?;
    let commit = log::parse(&meta.text()).into_iter().next().ok_or_else(|| {
        ToolError::new(
            codes::FAILED,
            format!("git show printed no commit for {sha}"),
        )
    })?;
    let stats = repo.read(&[
        "show",
        "--format=",
        "--no-color",
        "--no-ext-diff",
        "--numstat",
        "-z",
        &sha,
    ])?;
    let files = numstat::parse(&stats.text());
    let (insertions, deletions) = numstat::totals(&files);
    let mut value = json!({
        "repo": repo.top().display().to_string(),
        "revision": revision,
        "commit": super::json(&commit)?,
        "files_changed": files.len(),
        "insertions": insertions,
        "deletions": deletions,
        "files": super::json(&files)?,
    });
    let window = crate::patch::Window {
        args: &[
            "show",
            "--format=",
            "--no-color",
            "--no-ext-diff",
            "--patch",
            &sha,
        ],
        offset,
        max_chars,
        hint: HINT,
    };
    crate::patch::answer(repo, &mut value, &files, stat_only, &window)?;
    Ok(value)
}

fn file_at(
    repo: &Repo<'_>,
    revision: &str,
    rel: &str,
    max_chars: usize,
    offset: usize,
) -> Result<Value, ToolError> {
    let tree_ish = verify(repo, &format!("{revision}^{{tree}}"))?
        .ok_or_else(|| unknown(revision, "commit or tree", ""))?;
    let commit = verify(repo, &format!("{revision}^{{commit}}"))?;
    let spec = if rel == "." {
        format!("{tree_ish}:")
    } else {
        format!("{tree_ish}:{rel}")
    };
    let oid = verify(repo, &spec)?.ok_or_else(|| {
        ToolError::new(
            codes::NOT_FOUND,
            format!("path \"{rel}\" does not exist at revision \"{revision}\""),
        )
    })?;
    // A submodule's commit is not in this repository: cat-file fails on it.
    let kind = repo.run(Mode::Read, &owned(&["cat-file", "-t", &oid]))?;
    let kind = if kind.success() {
        kind.line()
    } else {
        "submodule".to_owned()
    };
    let mut value = json!({
        "repo": repo.top().display().to_string(),
        "revision": revision,
        "path": rel,
        "type": kind,
    });
    if let Some(commit) = commit {
        value["commit"] = json!(commit);
    }
    match kind.as_str() {
        "blob" => {
            // Read in a window from `offset`: the rest of the blob is counted, never held, so
            // a call costs what it shows (`text_next_offset` is the offset that reads on).
            let window = coremcp_spawn::Window {
                skip: offset,
                keep: max_chars,
            };
            let out = repo.read_window(&["cat-file", "blob", &oid], window)?;
            let read = &out.stdout;
            value["size"] = json!(read.bytes.len() as u64 + read.dropped);
            if read.binary {
                value["binary"] = json!(true);
                value["text"] = json!(format!(
                    "(binary file, {} bytes; content not shown)",
                    value["size"]
                ));
                value["truncated"] = json!(false);
            } else {
                let total = read.chars as usize;
                value["text"] = json!(String::from_utf8_lossy(&read.bytes));
                let start = offset.min(total);
                coremcp_plugin_sdk::budget::fit_piece(
                    &mut value,
                    "text",
                    (start, total),
                    max_chars,
                    result_budget(),
                );
                value["truncated"] = value.get("text_truncated").cloned().unwrap_or(json!(false));
            }
        }
        "tree" => {
            // NAME, with a trailing slash for folders, one a line.
            let out = repo.read(&["ls-tree", "-z", &oid])?;
            let listing: Vec<String> = out
                .text()
                .split('\0')
                .filter_map(|entry| {
                    let (meta, name) = entry.split_once('\t')?;
                    let folder = meta.split(' ').nth(1) == Some("tree");
                    Some(if folder {
                        format!("{name}/")
                    } else {
                        name.to_owned()
                    })
                })
                .collect();
            let cut = text::cut(&listing.join("\n"), max_chars, 0, FILE_HINT);
            value["entries"] = json!(listing.len());
            value["text"] = json!(cut.text);
            value["truncated"] = json!(cut.truncated);
        }
        _ => {
            // A submodule commit: show the pinned commit.
            value["text"] = json!(oid);
            value["truncated"] = json!(false);
        }
    }
    text::fit(&mut value, "text", None, FILE_HINT);
    Ok(value)
}
