//! `registry_snapshot_get`: a stored code snapshot of a source, or its outline, within
//! `max_chars` and the host's result limit, so it always arrives with its structured content
//! (see [`coremcp_snapshot::view`]).

use coremcp_plugin_sdk::budget::RESULT_BUDGET;
use coremcp_plugin_sdk::prelude::*;
use coremcp_store::plugin::{invalid, json_value, ts, TxError};
use coremcp_store::{Row, StoreError};

use crate::args::SourceRef;
use crate::common::{not_found, Record, SERVICE};
use crate::source::SOURCE;
use coremcp_snapshot::{self as snap, Detail};

pub const TOOL: Tool = Tool::new(
    "registry_snapshot_get",
    "Fetch a stored code snapshot of a source, or its outline. Without commit it \
        returns the latest one plus the list of stored commits. detail: summary (counts per \
        language, no files), outline (paths and symbol kinds, names, lines; default) or full \
        (everything saved). paths keeps files under those folders or files. The answer is cut \
        to max_chars by leaving out whole files, marked truncated: true with omitted_files.",
    &typed(handler),
)
.hints(Hints::READ);

#[derive(Debug, Args)]
pub struct Get {
    /// source ref PROJECT/name
    #[arg(min_len = 1)]
    source: SourceRef,
    /// commit SHA, or an unambiguous abbreviation of 7+ hex digits (default: the latest
    /// snapshot)
    #[arg(min_len = 7, max_len = 40)]
    commit: Option<String>,
    /// only files that are one of these paths or lie under them (whole path segments: src
    /// matches src/a.rs, not srcx/)
    #[arg(max_items = 100)]
    paths: Vec<String>,
    /// how much of each file (default outline)
    #[arg(default = Detail::Outline)]
    detail: Detail,
    /// cut the answer to this many characters (default and at most 20000, the result limit)
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
    let budget = args.max_chars.min(RESULT_BUDGET);
    let (row, commits) = SERVICE.run(|tx| -> Result<(Row, Option<Vec<Value>>), TxError> {
        let source_id = SOURCE.id(tx, "source", &args.source.key(), false)?;
        let all = tx.query(
            "SELECT commit_sha, branch, created_at FROM registry_snapshot \
             WHERE source_id = $1 ORDER BY seq DESC",
            &[source_id.as_str().into()],
        )?;
        let stored = || {
            all.iter()
                .filter_map(|r| r.get_text("commit_sha").ok())
                .collect::<Vec<_>>()
                .join(", ")
        };
        match &commit {
            Some(prefix) => {
                let mut rows = tx.query(
                    &format!(
                        "SELECT {FIELDS} FROM registry_snapshot \
                         WHERE source_id = $1 AND commit_sha LIKE $2 ORDER BY seq DESC"
                    ),
                    &[source_id.as_str().into(), format!("{prefix}%").into()],
                )?;
                match rows.len() {
                    0 => Err(not_found(
                        "commit",
                        if all.is_empty() {
                            format!("no snapshot of {source_ref} is stored at all")
                        } else {
                            format!(
                                "no snapshot of {source_ref} at {prefix} (stored commits, latest \
                                 first: {})",
                                stored()
                            )
                        },
                    )
                    .into()),
                    1 => Ok((rows.remove(0), None)),
                    n => Err(invalid(
                        "commit",
                        format!(
                            "{prefix} matches {n} stored snapshots of {source_ref}; give more \
                             digits (stored commits: {})",
                            stored()
                        ),
                    )
                    .into()),
                }
            }
            None => {
                let row = tx
                    .query_opt(
                        &format!(
                            "SELECT {FIELDS} FROM registry_snapshot WHERE source_id = $1 \
                             ORDER BY seq DESC LIMIT 1"
                        ),
                        &[source_id.as_str().into()],
                    )?
                    .ok_or_else(|| {
                        not_found(
                            "source",
                            format!(
                                "no snapshot of {source_ref} is stored yet (store one with \
                                 registry_snapshot_save)"
                            ),
                        )
                    })?;
                Ok((row, Some(commit_list(&all)?)))
            }
        }
    })?;
    let internal = |e: String| ToolError::new(codes::INTERNAL, format!("stored snapshot: {e}"));
    let base = base(source_ref, &row, commits).map_err(|e| internal(e.to_string()))?;
    let content = row
        .get_text("content")
        .map_err(|e| internal(e.to_string()))?;
    snap::view(base, &content, &prefixes, detail, budget).map_err(internal)
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
