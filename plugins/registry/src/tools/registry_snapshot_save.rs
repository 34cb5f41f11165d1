//! `registry_snapshot_save`: store a code snapshot of a source at a commit.
//!
//! Invariants:
//! - One snapshot per (source, commit). Saving over one needs `replace: true`; otherwise it
//!   is a `conflict` that says whether the stored content is the same.
//! - Each source keeps its [`KEEP_PER_SOURCE`] most recently saved snapshots; a save prunes
//!   older ones in the same transaction, so the limit always holds.
//! - "Latest" is the snapshot saved last (a replaced one counts as saved again), by the
//!   source's save counter `seq`, never by wall-clock time.

use coremcp_plugin_sdk as sdk;
use coremcp_plugin_sdk::prelude::*;
use coremcp_store::plugin::{json_text, new_id, now, ts, TxError};

use coremcp_snapshot as snap;

use crate::args::{Branch, SourceRef};
use crate::common::{Record, SERVICE};
use crate::source::SOURCE;

/// Snapshots kept per source; older ones are pruned on save.
pub const KEEP_PER_SOURCE: i64 = 20;

pub const TOOL: Tool =
    Tool::typed("registry_snapshot_save", &typed(handler)).hints(Hints::DESTRUCTIVE);

/// Store code_snapshot's output for a source at a commit (an existing one is a conflict unless
/// replace). Keeps the 20 newest per source.
#[derive(Debug, Args)]
pub struct Save {
    /// source ref, e.g. CORE/core-mcp
    #[arg(min_len = 1)]
    source: SourceRef,
    /// 40-hex commit SHA
    #[arg(min_len = 40, max_len = 40)]
    commit: String,
    /// branch the commit was on
    #[arg(min_len = 1, max_len = 255)]
    branch: Option<Branch>,
    /// code_snapshot's output (format 1)
    #[arg(required)]
    snapshot: Map<String, Value>,
    /// overwrite the same commit's (else conflict)
    #[arg(default)]
    replace: bool,
}

fn handler(_: &Ctx<'_>, args: Save) -> Result<Value, ToolError> {
    let source_ref = args.source.as_str();
    let commit = coremcp_plugin_sdk::rules::commit_sha("commit", &args.commit)?;
    let branch = args.branch.as_ref().map(Branch::as_str);
    let checked = snap::check(&args.snapshot)?;
    let replace = args.replace;
    let created_by = sdk::caller::who();
    let stats_text = json_text(&checked.stats);
    SERVICE.run(|tx| -> Result<Value, TxError> {
        let source_id = SOURCE.id(tx, "source", &args.source.key(), false)?;
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
        if let Some(row) = existing.as_ref().filter(|_| !replace) {
            let same = row.get_text("content_hash")? == checked.content_hash;
            return Err(ToolError::new(
                codes::CONFLICT,
                format!(
                    "a snapshot of {source_ref} at {commit} is already stored (saved {}, {} \
                     content); pass replace: true to overwrite it",
                    ts(row, "created_at")?,
                    if same { "the same" } else { "different" }
                ),
            )
            .into());
        }
        // Replacing keeps the snapshot's id; it counts as saved again (a new seq).
        let now = now();
        let id = tx
            .query_one(
                "INSERT INTO registry_snapshot (id, source_id, commit_sha, branch, format_version, \
                 stats, content, content_hash, created_by, created_at, seq) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) \
                 ON CONFLICT (source_id, commit_sha) DO UPDATE SET branch = excluded.branch, \
                 format_version = excluded.format_version, stats = excluded.stats, \
                 content = excluded.content, content_hash = excluded.content_hash, \
                 created_by = excluded.created_by, created_at = excluded.created_at, \
                 seq = excluded.seq RETURNING id",
                &[
                    new_id().into(),
                    source_id.as_str().into(),
                    commit.as_str().into(),
                    branch.into(),
                    i64::from(snap::FORMAT_VERSION).into(),
                    stats_text.as_str().into(),
                    checked.content.as_str().into(),
                    checked.content_hash.as_str().into(),
                    created_by.as_deref().into(),
                    now.as_str().into(),
                    seq.into(),
                ],
            )?
            .get_text("id")?;
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
