//! `git_diff`: the working tree against the index (default), the index against HEAD
//! (`staged`), or a revision or range (`target`), as per-file stats plus the patch text.
//!
//! Invariants: pathspecs are confined and literal and follow `--`; `target` can never be read
//! as an option; the patch text is cut at `max_chars` with a marker, and the whole result fits
//! the host's limit.

use coremcp_plugin_sdk::Ctx;
use coremcp_plugin_sdk::ToolError;
use coremcp_plugin_sdk::{typed, Args, Hints, Tool};
use serde_json::{json, Value};

use crate::git::not_an_option;
use crate::parse::numstat;
use crate::text;

/// How a cut diff says to get the rest.
pub const HINT: &str = "pass paths or stat_only, or a larger max_chars (at most 19000)";

pub const TOOL: Tool = Tool::typed("git_diff", &typed(run)).hints(Hints::READ);

/// Diff of the work tree (default), index (staged) or revisions (target): per-file stats and
/// patch, cut at max_chars.
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

    let cut = if stat_only {
        text::cut(&numstat::summary(&files), usize::MAX, 0, HINT)
    } else {
        let mut patch_args = crate::repo::owned(&["diff", "--no-color", "--no-ext-diff"]);
        patch_args.push(format!("--unified={context}"));
        patch_args.extend(what);
        let out = repo.ok(crate::git::Mode::Read, &patch_args)?;
        text::cut(&out.text(), max_chars, out.stdout.dropped, HINT)
    };
    let mut value = json!({
        "repo": repo.top().display().to_string(),
        "comparing": comparing,
        "files_changed": files.len(),
        "insertions": insertions,
        "deletions": deletions,
        "files": super::json(&files)?,
        "text": cut.text,
        "truncated": cut.truncated,
    });
    if cut.truncated {
        value["total_chars"] = json!(cut.total_chars);
    }
    text::fit(&mut value, "text", Some("files"), HINT);
    Ok(value)
}
