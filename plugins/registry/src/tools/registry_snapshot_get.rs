//! `registry_snapshot_get`: a stored code snapshot of a source, or its outline, within
//! `max_chars` and the host's result limit, so it always arrives with its structured content
//! (see [`coremcp_snapshot::view`]).

use coremcp_plugin_sdk::budget::result_budget;
use coremcp_plugin_sdk::prelude::*;
use coremcp_store::plugin::{invalid, json_value, ts, TxError};
use coremcp_store::{Row, StoreError};

use crate::args::SourceRef;
use crate::common::{not_found, Record, SERVICE};
use crate::source::SOURCE;
use coremcp_snapshot::{self as snap, Detail};

pub const TOOL: Tool = Tool::typed("registry_snapshot_get", &typed(handler)).hints(Hints::READ);

/// Fetch a source's stored code snapshot (default the latest, with the stored commits): whole
/// files, as many as fit.
#[derive(Debug, Args)]
pub struct Get {
    /// source ref PROJECT/name
    #[arg(min_len = 1)]
    source: SourceRef,
    /// SHA or 7+ hex prefix (default the latest)
    #[arg(min_len = 7, max_len = 40)]
    commit: Option<String>,
    /// only these files or folders
    #[arg(max_items = 100)]
    paths: Vec<String>,
    /// next_cursor
    cursor: Option<String>,
    /// default outline
    #[arg(default = Detail::Outline)]
    detail: Detail,
    /// cut at (default 20000)
    #[arg(min = 500, default = 20_000)]
    max_chars: usize,
}

const FIELDS: &str =
    "id, commit_sha, branch, format_version, stats, content, content_hash, created_by, created_at";

fn handler(_: &Ctx<'_>, args: Get) -> Result<Value, ToolError> {
    let source_ref = args.source.as_str();
    let commit = args
        .commit
        .as_deref()
        .map(|c| coremcp_plugin_sdk::rules::commit_prefix("commit", c))
        .transpose()?;
    let prefixes: Vec<String> = args.paths.iter().map(|p| snap::path_prefix(p)).collect();
    let detail = args.detail;
    let budget = args.max_chars.min(result_budget());
    let after = coremcp_plugin_sdk::page::cursor_key(args.cursor.as_deref())?;
    let (row, commits) = SERVICE.read(|tx| -> Result<(Row, Option<Vec<Value>>), TxError> {
        let source_id = SOURCE.id(tx, "source", &args.source.key(), false)?;
        let all = tx.query(
            "SELECT commit_sha, branch, created_at FROM registry_snapshot \
             WHERE source_id = $1 ORDER BY seq DESC",
            &[source_id.as_str().into()],
        )?;
        let stored: Vec<String> = all
            .iter()
            .map(|r| r.get_text("commit_sha"))
            .collect::<Result<_, _>>()?;
        let sha = pick(&stored, commit.as_deref(), source_ref)?;
        let row = tx.query_one(
            &format!(
                "SELECT {FIELDS} FROM registry_snapshot WHERE source_id = $1 AND commit_sha = $2"
            ),
            &[source_id.as_str().into(), sha.into()],
        )?;
        Ok((
            row,
            commit.is_none().then(|| commit_list(&all)).transpose()?,
        ))
    })?;
    let internal = |e: String| ToolError::new(codes::INTERNAL, format!("stored snapshot: {e}"));
    let base = base(source_ref, &row, commits).map_err(|e| internal(e.to_string()))?;
    let content = row
        .get_text("content")
        .map_err(|e| internal(e.to_string()))?;
    snap::view(base, &content, &prefixes, after.as_deref(), detail, budget).map_err(internal)
}

/// The one stored commit (latest first in `stored`) that `commit` names, or the latest.
fn pick<'a>(
    stored: &'a [String],
    commit: Option<&str>,
    source: &str,
) -> Result<&'a str, ToolError> {
    let wanted: Vec<&String> = match commit {
        Some(prefix) => stored.iter().filter(|c| c.starts_with(prefix)).collect(),
        None => stored.iter().take(1).collect(),
    };
    let (listed, which) = (stored.join(", "), commit.unwrap_or("any commit"));
    match wanted[..] {
        [sha] => Ok(sha),
        [] if stored.is_empty() => Err(not_found(
            if commit.is_some() { "commit" } else { "source" },
            format!(
                "no snapshot of {source} is stored yet (store one with registry_snapshot_save)"
            ),
        )),
        [] => Err(not_found(
            "commit",
            format!("no snapshot of {source} at {which} (stored commits, latest first: {listed})"),
        )),
        _ => Err(invalid(
            "commit",
            format!(
                "{which} matches {} stored snapshots of {source}; give more digits (stored \
                 commits: {listed})",
                wanted.len()
            ),
        )),
    }
}

/// The stored commits of a source, latest first, as `{commit, branch?, created_at}`.
fn commit_list(rows: &[Row]) -> Result<Vec<Value>, StoreError> {
    rows.iter()
        .map(|r| {
            Ok(Record::default()
                .set("commit", r.get_text("commit_sha")?)
                .opt("branch", r.get_opt_text("branch")?)
                .set("created_at", ts(r, "created_at")?)
                .done())
        })
        .collect()
}

/// The stored record's own fields of a view.
fn base(
    source_ref: &str,
    row: &Row,
    commits: Option<Vec<Value>>,
) -> Result<Map<String, Value>, StoreError> {
    Ok(Record::default()
        .set("id", row.get_text("id")?)
        .set("source", source_ref)
        .set("commit", row.get_text("commit_sha")?)
        .opt("branch", row.get_opt_text("branch")?)
        .set("format_version", row.get_i64("format_version")?)
        .set("created_at", ts(row, "created_at")?)
        .opt("created_by", row.get_opt_text("created_by")?)
        .set("content_hash", row.get_text("content_hash")?)
        .set("stats", json_value(Some(row.get_text("stats")?)))
        .opt("commits", commits)
        .0)
}
