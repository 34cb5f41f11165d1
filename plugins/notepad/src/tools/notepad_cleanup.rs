//! `notepad_cleanup`: delete expired notes and, with `older_than_s`, notes not updated for that
//! long; `dry_run` only lists them.
//!
//! Which notes qualify: every expired note (`expires_at` at or before now), and, when
//! `older_than_s` is given, every note whose `updated_at` is at least that many seconds ago.
//! `expired_only` says the same thing from the other side: it defaults to true without
//! `older_than_s` and to false with it; `expired_only: true` with `older_than_s`, and
//! `expired_only: false` without it, contradict each other and are refused.
//!
//! Invariants: the deletion is one `DELETE … RETURNING`, so what is reported is exactly what was
//! removed; the listed items are capped at `MAX_LISTED`, sorted by (scope, key), the rest
//! counted in `more`.

use coremcp_nervhq::{bytewise, Query, SERVICE};
use coremcp_plugin_sdk::args::invalid;
use coremcp_plugin_sdk::budget::sweep;
use coremcp_plugin_sdk::prelude::*;
use coremcp_plugin_sdk::time::seconds_before;
use coremcp_store::plugin::{now_ms, timestamp};
use coremcp_store::Row;

use super::{expired, Scope};

pub const TOOL: Tool = Tool::new(
    "notepad_cleanup",
    "Delete expired notes and, with older_than_s, also notes not updated for that \
        many seconds; dry_run only lists what would go. Filter by scope (exact) or \
        scope_prefix. expired_only defaults to true without older_than_s and to false with it \
        (passing expired_only: true together with older_than_s is an error). Returns deleted (with \
        dry_run: how many would be) and the notes (up to 200, the rest counted in more), each \
        with its reason: expired or older_than.",
    &typed(handler),
)
.hints(Hints::DESTRUCTIVE);

#[derive(Debug, Args)]
pub struct Cleanup {
    /// only this scope (exact)
    scope: Option<Scope>,
    /// only scopes starting with this, e.g. session:
    scope_prefix: Option<String>,
    /// only expired notes (default: true without older_than_s, false with it)
    expired_only: Option<bool>,
    /// also delete notes whose last update is at least this many seconds ago
    older_than_s: Option<u64>,
    /// list what would be deleted, delete nothing (default false)
    #[arg(default)]
    dry_run: bool,
}

fn handler(_: &Ctx<'_>, args: Cleanup) -> Result<Value, ToolError> {
    let scope = args.scope.as_ref().map(Scope::as_str);
    let scope_prefix = args.scope_prefix.as_deref();
    let older_than_s = args.older_than_s;
    match (args.expired_only, older_than_s) {
        (Some(true), Some(_)) => {
            return Err(invalid(
                "expired_only",
                "expired_only: true keeps notes that have not expired, so it cannot go with \
                 older_than_s; leave expired_only out to delete expired notes and notes older \
                 than older_than_s",
            ))
        }
        (Some(false), None) => {
            return Err(invalid(
                "older_than_s",
                "expired_only: false needs older_than_s, the age in seconds past which notes \
                 that have not expired are deleted too",
            ))
        }
        _ => {}
    }
    let dry_run = args.dry_run;
    let at = now_ms();
    let cutoff = older_than_s
        .map(|s| seconds_before(at, s, "older_than_s"))
        .transpose()?;
    let (count, mut rows) = SERVICE.run(|tx| {
        let c = bytewise(tx);
        let mut q = Query::new();
        let now = q.bind(timestamp(at));
        let mut qualifies = format!("expires_at <= {now}");
        if let Some(cutoff) = &cutoff {
            let p = q.bind(cutoff.as_str());
            qualifies = format!("({qualifies} OR updated_at <= {p})");
        }
        q.and(qualifies);
        q.eq_opt("scope", scope);
        q.prefix_opt("scope", scope_prefix);
        let filter = q.where_clause();
        if dry_run {
            let count = tx
                .query_one(
                    &format!("SELECT COUNT(*) AS n FROM notepad_entry{filter}"),
                    q.params(),
                )?
                .get_i64("n")?;
            let rows = tx.query(
                &format!(
                    "SELECT scope, key, expires_at FROM notepad_entry{filter}
                     ORDER BY scope{c}, key{c} LIMIT {}",
                    coremcp_nervhq::result::MAX_LISTED
                ),
                q.params(),
            )?;
            Ok((count as usize, rows))
        } else {
            let rows = tx.query(
                &format!("DELETE FROM notepad_entry{filter} RETURNING scope, key, expires_at"),
                q.params(),
            )?;
            Ok((rows.len(), rows))
        }
    })?;
    let mut items = Vec::with_capacity(rows.len());
    // Byte-wise, like the listing's COLLATE "C": DELETE … RETURNING has no order of its own.
    rows.sort_by_cached_key(|row| key_of(row).unwrap_or_default());
    for row in &rows {
        let reason = if expired(row.get_opt_text("expires_at").ok().flatten().as_deref(), at) {
            "expired"
        } else {
            "older_than"
        };
        let (scope, key) = key_of(row).map_err(coremcp_store::plugin::tool_error)?;
        items.push(json!({"scope": scope, "key": key, "reason": reason}));
    }
    Ok(sweep("deleted", count, dry_run, items))
}

fn key_of(row: &Row) -> Result<(String, String), coremcp_store::StoreError> {
    Ok((row.get_text("scope")?, row.get_text("key")?))
}
