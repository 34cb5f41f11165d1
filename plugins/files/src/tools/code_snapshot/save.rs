//! `code_snapshot`'s answers: the snapshot itself when it fits, else a summary with the files
//! that fit; and `save_to`, which stores the whole snapshot in the Registry at the checkout's
//! HEAD commit.
//!
//! Invariants:
//! - Every answer fits the result budget and is whole JSON: files are left out whole, from
//!   the end in path order, never cut inside.
//! - `save_to` goes through the host (`registry.call` with `registry_snapshot_save`), never to
//!   a store directly, so the Registry's own checks, its retention and the caller's grants
//!   apply; it stores with `replace: true` (saving the same commit again is asked for).

use coremcp_git_cli::{self as git, Mode};
use coremcp_plugin_kit::Roots;
use coremcp_plugin_sdk::budget::{chars, fit_array, result_budget};
use coremcp_plugin_sdk::{args::invalid, Ctx, ToolError};
use serde_json::{json, Map, Value};

use super::Snapshot;

/// Files the summary names as the largest.
const LARGEST: usize = 10;

/// The commit a saved snapshot is stored at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    pub commit: String,
    /// The branch checked out, when one is (not on a detached HEAD).
    pub branch: Option<String>,
}

/// HEAD of the checkout holding `path` (inside the roots), or an error naming `save_to`.
pub fn head(ctx: &Ctx<'_>, roots: &Roots, path: Option<&str>) -> Result<Head, ToolError> {
    let at = roots.resolve("path", path, None)?;
    let dir = match at.is_dir() {
        true => at.clone(),
        false => at.parent().map_or_else(|| at.clone(), ToOwned::to_owned),
    };
    let ceilings = git::ceilings(roots);
    let read = |args: &[&str]| {
        let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        git::invoke(ctx, &dir, &ceilings, Mode::Read, &args)
    };
    let commit = read(&["rev-parse", "--verify", "--quiet", "HEAD^{commit}"])?;
    if !commit.success() {
        return Err(invalid(
            "save_to",
            format!(
                "stores the snapshot at the checkout's HEAD commit, and {} is not inside a git \
                 checkout with a commit: snapshot a checkout, or leave save_to out",
                at.display()
            ),
        ));
    }
    let branch = read(&["symbolic-ref", "--short", "--quiet", "HEAD"])?;
    Ok(Head {
        commit: commit.line(),
        branch: branch.success().then(|| branch.line()),
    })
}

/// Stores `snapshot` under the Registry source `source` at `head`; answers the summary and
/// where it went.
pub fn save(
    ctx: &Ctx<'_>,
    snapshot: &Snapshot,
    source: &str,
    head: &Head,
) -> Result<Value, ToolError> {
    let mut args = json!({
        "source": source,
        "commit": head.commit,
        "snapshot": coremcp_plugin_sdk::to_json(snapshot)?,
        "replace": true,
    });
    if let Some(branch) = &head.branch {
        args["branch"] = branch.as_str().into();
    }
    let timeout_ms = u64::try_from(ctx.remaining().as_millis()).unwrap_or(u64::MAX);
    let payload = json!({"tool": "registry_snapshot_save", "args": args, "timeout_ms": timeout_ms});
    let saved = coremcp_plugin_sdk::host_call("registry.call", &payload).map_err(|e| {
        ToolError::new(
            e.code.as_str(),
            format!(
                "save_to: the Registry did not store the snapshot: {}",
                e.message
            ),
        )
    })?;
    let mut out = summary(snapshot);
    let mut stored = Map::new();
    for key in [
        "id",
        "source",
        "commit",
        "branch",
        "replaced",
        "content_chars",
    ] {
        if let Some(value) = saved.get(key).filter(|v| !v.is_null()) {
            stored.insert(key.to_owned(), value.clone());
        }
    }
    out["saved"] = Value::Object(stored);
    out["hint"] = json!(format!(
        "registry_snapshot_get {{\"source\": \"{source}\", \"commit\": \"{}\"}} serves it \
         (detail, paths)",
        head.commit
    ));
    Ok(out)
}

/// The snapshot as the answer: whole when it fits, else the summary with the files that fit.
pub fn inline(snapshot: Snapshot) -> Value {
    let whole = match serde_json::to_value(&snapshot) {
        Ok(whole) => whole,
        Err(e) => return json!({"error": e.to_string()}),
    };
    if chars(&whole) <= result_budget() {
        return whole;
    }
    let mut out = summary(&snapshot);
    out["files"] = whole["files"].clone();
    // Room for the counts of what was left out and the hint.
    let omitted = fit_array(&mut out, "files", result_budget() - 600);
    out["truncated"] = true.into();
    out["files_omitted"] = omitted.into();
    out["hint"] = json!(
        "the snapshot is larger than an answer: the files that fit are listed whole; narrow \
         path or include for the rest, or pass save_to (a Registry source) to store it whole \
         for registry_snapshot_get"
    );
    out
}

/// Counts, languages and the largest files of a snapshot.
pub fn summary(snapshot: &Snapshot) -> Value {
    let mut languages: std::collections::BTreeMap<&str, usize> = Default::default();
    for file in &snapshot.files {
        if let Some(language) = file.language {
            *languages.entry(language).or_default() += 1;
        }
    }
    let mut largest: Vec<(&str, usize)> = snapshot
        .files
        .iter()
        .filter_map(|f| Some((f.path.as_str(), f.symbols.as_ref()?.len())))
        .collect();
    largest.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    largest.truncate(LARGEST);
    json!({
        "format_version": snapshot.format_version,
        "counts": snapshot.counts,
        "root": snapshot.root,
        "truncated": snapshot.truncated,
        "languages": languages,
        "largest": largest
            .into_iter()
            .map(|(path, symbols)| json!({"path": path, "symbols": symbols}))
            .collect::<Vec<_>>(),
    })
}
