//! `git_diff`: the working tree against the index (default), the index against HEAD
//! (`staged`), or a revision or range (`target`), as per-file stats plus the patch text.
//!
//! Invariants: pathspecs are confined and literal and follow `--`; `target` can never be read
//! as an option; the patch is read in a window from `offset` of at most `max_chars` (the rest
//! counted, never held), and `text_next_offset` reads on, so a diff of any size is read whole
//! in pieces; the whole result fits the call's budget.

use coremcp_plugin_sdk::Ctx;
use coremcp_plugin_sdk::ToolError;
use coremcp_plugin_sdk::{typed, Args, Hints, Tool};
use serde_json::{json, Value};

use crate::git::not_an_option;
use crate::parse::numstat;

/// How a cut diff says to get the rest.
pub const HINT: &str = "pass text_next_offset as offset to read on, or narrow with paths or \
    stat_only";

pub const TOOL: Tool = Tool::typed("git_diff", &typed(run)).hints(Hints::READ);

/// Diff of the work tree (default), index (staged) or revisions (target): per-file stats and
/// patch.
#[derive(Debug, Args)]
pub struct Diff {
    #[arg(flatten)]
    at: super::RepoPath,
    /// index vs HEAD
    #[arg(default)]
    staged: bool,
    /// a revision (vs the tree) or range a..b
    target: Option<String>,
    /// relative to repo_path
    paths: Vec<String>,
    /// default 3
    #[arg(min = 0, max = 1000, default = 3)]
    context_lines: u64,
    /// files and line counts only
    #[arg(default)]
    stat_only: bool,
    /// cut at (default 12000)
    #[arg(min = 200, max = 19000, default = crate::text::DEFAULT_MAX_CHARS)]
    max_chars: usize,
    /// text from this char
    #[arg(min = 0, default = 0)]
    offset: usize,
}
fn run(ctx: &Ctx<'_>, args: Diff) -> Result<Value, ToolError> {
    let repo = super::open(ctx, &args.at)?;
    let staged = args.staged;
    let target = args.target.as_deref();
    if let Some(target) = target {
        not_an_option("target", target)?;
    }
    let paths = args
        .paths
        .iter()
        .map(|p| repo.pathspec("paths", p))
        .collect::<Result<Vec<_>, _>>()?;
    let (context, stat_only, max_chars) = (args.context_lines, args.stat_only, args.max_chars);
    let args_offset = args.offset;

    let (comparing, mut what) = match (target, staged) {
        (Some(t), _) if t.contains("..") => (format!("the range {t}"), vec![t.to_owned()]),
        (Some(t), _) => (format!("the working tree against {t}"), vec![t.to_owned()]),
        (None, true) => (
            "the index against HEAD".to_owned(),
            vec!["--cached".to_owned()],
        ),
        (None, false) => ("the working tree against the index".to_owned(), vec![]),
    };
    what.push("--".to_owned());
    what.extend(paths);

    let mut stat_args =
        crate::repo::owned(&["diff", "--no-color", "--no-ext-diff", "--numstat", "-z"]);
    stat_args.extend(what.iter().cloned());
    let files = numstat::parse(&repo.ok(crate::git::Mode::Read, &stat_args)?.text());
    let (insertions, deletions) = numstat::totals(&files);

    let mut value = json!({
        "repo": repo.top().display().to_string(),
        "comparing": comparing,
        "files_changed": files.len(),
        "insertions": insertions,
        "deletions": deletions,
        "files": super::json(&files)?,
    });
    let mut patch_args = crate::repo::owned(&["diff", "--no-color", "--no-ext-diff"]);
    patch_args.push(format!("--unified={context}"));
    patch_args.extend(what);
    let args: Vec<&str> = patch_args.iter().map(String::as_str).collect();
    let window = crate::patch::Window {
        args: &args,
        offset: args_offset,
        max_chars,
        hint: HINT,
    };
    crate::patch::answer(&repo, &mut value, &files, stat_only, &window)?;
    Ok(value)
}
