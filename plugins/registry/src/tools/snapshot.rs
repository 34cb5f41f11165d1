//! Stored code snapshots of a source at a commit: `registry_snapshot_save` and
//! `registry_snapshot_get`.
//!
//! Invariants:
//! - One snapshot per (source, commit). Saving over one needs `replace: true`; otherwise it
//!   is a `conflict` that says whether the stored content is the same.
//! - Each source keeps its [`KEEP_PER_SOURCE`] most recently saved snapshots; a save prunes
//!   older ones in the same transaction, so the limit always holds.
//! - "Latest" is the snapshot saved last (a replaced one counts as saved again), by the
//!   source's save counter `seq`, never by wall-clock time.
//! - An answer stays within `max_chars` and the host's result limit, so it always arrives
//!   with its structured content (see [`crate::snapshot::fit`]).

use coremcp_plugin_sdk::legacy::{Args, Untyped};
use coremcp_plugin_sdk::{self as sdk, codes, Ctx, Hints, Tool};
use coremcp_plugin_sdk::{Annotations, ToolError};
use coremcp_store::plugin::{invalid, json_text, json_value, new_id, now, timestamp_out, TxError};
use coremcp_store::Row;
use serde_json::{json, Value};

use crate::common::{not_found, Record, OVERWRITES, SERVICE};
use crate::snapshot::{self as snap, Detail};
use crate::tools::source;
use crate::validate;

/// Snapshots kept per source; older ones are pruned on save.
pub const KEEP_PER_SOURCE: i64 = 20;
/// The default `max_chars`.
const DEFAULT_MAX_CHARS: u64 = 20_000;
/// What a whole answer may serialise to: the host cuts results over 20 000 characters and
/// then drops their structured content.
const RESULT_BUDGET: usize = 19_500;

pub const SAVE: Tool = Tool::new(
    "registry_snapshot_save",
    "Store a structural code snapshot of a source at a commit: pass the object \
        code_snapshot returns (or CI's format-1 equivalent) as snapshot. One snapshot per \
        source and commit: an existing one is a conflict unless replace is true, which \
        overwrites it. Keeps the 20 most recently saved snapshots per source and prunes older \
        ones. Returns the stored snapshot's id, stats and content hash.",
    &Untyped::new(
        r#"{
        "type": "object",
        "properties": {
            "source": {"type": "string", "minLength": 1, "description": "source ref PROJECT/name, e.g. CORE/core-mcp"},
            "commit": {"type": "string", "minLength": 40, "maxLength": 40, "description": "full 40-hex commit SHA the snapshot was taken at"},
            "branch": {"type": "string", "minLength": 1, "maxLength": 255, "description": "branch the commit was on"},
            "snapshot": {"type": "object", "description": "code_snapshot output, format 1: {format_version?: 1, files: [{path, language, symbols: [...]}], counts or stats, ...}"},
            "replace": {"type": "boolean", "description": "overwrite a stored snapshot of the same commit (default false: that is a conflict)"}
        },
        "required": ["source", "commit", "snapshot"],
        "additionalProperties": false
    }"#,
        save,
    ),
)
.hints(Hints::of(OVERWRITES));

pub const GET: Tool = Tool::new(
    "registry_snapshot_get",
    "Fetch a stored code snapshot of a source, or its outline. Without commit it \
        returns the latest one plus the list of stored commits. detail: summary (counts per \
        language, no files), outline (paths and symbol kinds, names, lines; default) or full \
        (everything saved). paths keeps files under those folders or files. The answer is cut \
        to max_chars by leaving out whole files, marked truncated: true with omitted_files.",
    &Untyped::new(
        r#"{
        "type": "object",
        "properties": {
            "source": {"type": "string", "minLength": 1, "description": "source ref PROJECT/name"},
            "commit": {"type": "string", "minLength": 7, "maxLength": 40, "description": "commit SHA, or an unambiguous abbreviation of 7+ hex digits (default: the latest snapshot)"},
            "paths": {"type": "array", "items": {"type": "string"}, "maxItems": 100, "description": "only files that are one of these paths or lie under them (whole path segments: src matches src/a.rs, not srcx/)"},
            "detail": {"type": "string", "enum": ["summary", "outline", "full"], "description": "how much of each file (default outline)"},
            "max_chars": {"type": "integer", "minimum": 500, "description": "cut the answer to this many characters (default and at most 20000, the result limit)"}
        },
        "required": ["source"],
        "additionalProperties": false
    }"#,
        get,
    ),
)
.hints(Hints::of(Annotations::READ_ONLY));

fn save(_: &Ctx<'_>, args: Args) -> Result<Value, ToolError> {
    let source_ref = args.str("source")?;
    validate::source_ref("source", source_ref)?;
    let commit = validate::commit_sha("commit", args.str("commit")?)?;
    let branch = args.opt_str("branch")?;
    if let Some(branch) = branch {
        validate::branch("branch", branch)?;
    }
    let Some(Value::Object(payload)) = args.0.get("snapshot") else {
        return Err(invalid(
            "snapshot",
            "must be a JSON object: the structured content code_snapshot returns",
        ));
    };
    let checked = snap::check(payload)?;
    let replace = args.opt_bool("replace")?.unwrap_or(false);
    let created_by = sdk::config("client").filter(|c| !c.is_empty());
    let stats_text = json_text(&checked.stats);
    SERVICE.run(|tx| -> Result<Value, TxError> {
        let source_id = source::find(tx, "source", source_ref)?.get_text("id")?;
        let existing = tx.query_opt(
            "SELECT id, content_hash, created_at FROM registry_snapshot \
             WHERE source_id = $1 AND commit_sha = $2",
            &[source_id.as_str().into(), commit.as_str().into()],
        )?;
        let seq = tx
            .query_one(
                "SELECT COALESCE(MAX(seq), 0) + 1 AS next FROM registry_snapshot \
                 WHERE source_id = $1",
                &[source_id.as_str().into()],
            )?
            .get_i64("next")?;
        let now = now();
        let id = match &existing {
            Some(row) if !replace => {
                let same = row.get_text("content_hash")? == checked.content_hash;
                return Err(ToolError::new(
                    codes::CONFLICT,
                    format!(
                        "a snapshot of {source_ref} at {commit} is already stored (saved {}, \
                         {} content); pass replace: true to overwrite it",
                        timestamp_out(&row.get_text("created_at")?),
                        if same { "the same" } else { "different" }
                    ),
                )
                .into());
            }
            Some(row) => {
                let id = row.get_text("id")?;
                tx.execute(
                    "UPDATE registry_snapshot SET branch = $1, format_version = $2, stats = $3, \
                     content = $4, content_hash = $5, created_by = $6, created_at = $7, \
                     seq = $8 WHERE id = $9",
                    &[
                        branch.into(),
                        snap::FORMAT_VERSION.into(),
                        stats_text.as_str().into(),
                        checked.content.as_str().into(),
                        checked.content_hash.as_str().into(),
                        created_by.as_deref().into(),
                        now.as_str().into(),
                        seq.into(),
                        id.as_str().into(),
                    ],
                )?;
                id
            }
            None => {
                let id = new_id();
                tx.execute(
                    "INSERT INTO registry_snapshot (id, source_id, commit_sha, branch, \
                     format_version, stats, content, content_hash, created_by, created_at, seq) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
                    &[
                        id.as_str().into(),
                        source_id.as_str().into(),
                        commit.as_str().into(),
                        branch.into(),
                        snap::FORMAT_VERSION.into(),
                        stats_text.as_str().into(),
                        checked.content.as_str().into(),
                        checked.content_hash.as_str().into(),
                        created_by.as_deref().into(),
                        now.as_str().into(),
                        seq.into(),
                    ],
                )?;
                id
            }
        };
        let pruned = tx.execute(
            &format!(
                "DELETE FROM registry_snapshot WHERE source_id = $1 AND id NOT IN \
                 (SELECT id FROM registry_snapshot WHERE source_id = $1 \
                  ORDER BY seq DESC LIMIT {KEEP_PER_SOURCE})"
            ),
            &[source_id.as_str().into()],
        )?;
        Ok(Record::default()
            .set("id", id)
            .set("source", source_ref)
            .set("commit", commit.as_str())
            .opt("branch", branch)
            .set("format_version", snap::FORMAT_VERSION)
            .set("stats", checked.stats.clone())
            .set("counts", checked.counts.clone())
            .set("content_hash", checked.content_hash.as_str())
            .set("content_chars", checked.content.chars().count())
            .set("created_at", now)
            .opt("created_by", created_by.clone())
            .set("replaced", existing.is_some())
            .set("pruned", pruned)
            .done())
    })
}

const FIELDS: &str =
    "id, commit_sha, branch, format_version, stats, content, content_hash, created_by, created_at";

/// The stored commits of a source, latest first, as `{commit, branch?, created_at}`.
fn commit_list(rows: &[Row]) -> Result<Vec<Value>, coremcp_store::StoreError> {
    rows.iter()
        .map(|r| {
            Ok(Record::default()
                .set("commit", r.get_text("commit_sha")?)
                .opt("branch", r.get_opt_text("branch")?)
                .set("created_at", timestamp_out(&r.get_text("created_at")?))
                .done())
        })
        .collect()
}

fn get(_: &Ctx<'_>, args: Args) -> Result<Value, ToolError> {
    let source_ref = args.str("source")?;
    validate::source_ref("source", source_ref)?;
    let commit = args
        .opt_str("commit")?
        .map(|c| validate::commit_prefix("commit", c))
        .transpose()?;
    let prefixes: Vec<String> = args
        .str_list("paths")?
        .into_iter()
        .map(snap::path_prefix)
        .collect();
    let detail = Detail::parse(args.opt_str("detail")?.unwrap_or("outline"))?;
    let max_chars = args.opt_u64("max_chars")?.unwrap_or(DEFAULT_MAX_CHARS);
    let budget = usize::try_from(max_chars).map_or(RESULT_BUDGET, |m| m.min(RESULT_BUDGET));

    let (row, commits) = SERVICE.run(|tx| -> Result<(Row, Option<Vec<Value>>), TxError> {
        let source_id = source::find(tx, "source", source_ref)?.get_text("id")?;
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
    view(source_ref, &row, commits, &prefixes, detail, budget)
        .map_err(|e| ToolError::new(codes::INTERNAL, format!("stored snapshot: {e}")))
}

/// The answer for one stored snapshot.
fn view(
    source_ref: &str,
    row: &Row,
    commits: Option<Vec<Value>>,
    prefixes: &[String],
    detail: Detail,
    budget: usize,
) -> Result<Value, String> {
    let text = |name: &str| row.get_text(name).map_err(|e| e.to_string());
    let content: Value = serde_json::from_str(&text("content")?)
        .map_err(|e| format!("the stored content is not JSON: {e}"))?;
    let Value::Object(mut content) = content else {
        return Err("the stored content is not a JSON object".into());
    };
    let files: Vec<Value> = match content.remove("files") {
        Some(Value::Array(files)) => files,
        _ => Vec::new(),
    };
    let selected: Vec<&Value> = files
        .iter()
        .filter(|f| {
            f.get("path")
                .and_then(Value::as_str)
                .is_some_and(|p| snap::path_matches(p, prefixes))
        })
        .collect();
    let owned: Vec<Value> = selected.iter().map(|f| (*f).clone()).collect();
    let mut base = Record::default()
        .set("id", text("id")?)
        .set("source", source_ref)
        .set("commit", text("commit_sha")?)
        .opt(
            "branch",
            row.get_opt_text("branch").map_err(|e| e.to_string())?,
        )
        .set(
            "format_version",
            row.get_i64("format_version").map_err(|e| e.to_string())?,
        )
        .set("created_at", timestamp_out(&text("created_at")?))
        .opt(
            "created_by",
            row.get_opt_text("created_by").map_err(|e| e.to_string())?,
        )
        .set("content_hash", text("content_hash")?)
        .set("detail", detail.name())
        .set("stats", json_value(Some(text("stats")?)))
        .set("counts", snap::counts(&owned));
    if !prefixes.is_empty() {
        base = base.set("paths", json!(prefixes));
    }
    if detail == Detail::Summary {
        base = base.set("languages", snap::languages(&owned));
    }
    if detail == Detail::Full {
        // The snapshot's own top-level fields besides its files (root, counts, …).
        content.remove("format_version");
        base = base.set("header", Value::Object(content));
    }
    if let Some(commits) = commits {
        base = base.set("commits", Value::Array(commits));
    }
    let files = match detail {
        Detail::Summary => None,
        Detail::Outline | Detail::Full => {
            Some(owned.iter().map(|f| snap::file_view(f, detail)).collect())
        }
    };
    let Value::Object(base) = base.done() else {
        return Err("a record is an object".into());
    };
    Ok(snap::fit(base, files, budget))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn save_and_get_are_registry_tools_with_honest_annotations() {
        const { assert!(SAVE.hints.destructive && !SAVE.hints.read_only) };
        assert_eq!(GET.hints, coremcp_plugin_sdk::Hints::READ);
        assert!(SAVE.description.contains("20"));
        assert!(SAVE.handler.schema()["properties"].is_object());
    }
}
