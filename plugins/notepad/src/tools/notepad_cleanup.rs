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

use coremcp_nervhq::{Query, SERVICE};
use coremcp_plugin_sdk::args::invalid;
use coremcp_plugin_sdk::budget;
use coremcp_plugin_sdk::prelude::*;
use coremcp_plugin_sdk::time::seconds_before;
use coremcp_store::plugin::{now_ms, timestamp, tool_error};
use coremcp_store::records::{sweep, Key, Record};

use super::{expired, Scope};

pub const TOOL: Tool = Tool::typed("notepad_cleanup", &typed(handler)).hints(Hints::DESTRUCTIVE);

/// Delete expired notes (with older_than_s, idle ones too); dry_run only lists. Returns the
/// count and a sample, with reasons.
#[derive(Debug, Args)]
pub struct Cleanup {
    /// exact scope
    scope: Option<Scope>,
    /// e.g. session:
    scope_prefix: Option<String>,
    /// default: true without older_than_s
    expired_only: Option<bool>,
    /// also notes idle this long
    older_than_s: Option<u64>,
    /// list only
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
    let keys = [Key::text("scope", "scope"), Key::text("key", "key")];
    let (count, rows) = SERVICE.run(|tx| {
        let delete = |_: &mut Query| "DELETE FROM notepad_entry".to_owned();
        sweep(
            tx,
            "notepad_entry",
            &q,
            "scope, key, expires_at",
            &keys,
            dry_run,
            delete,
        )
    })?;
    let mut items = Vec::with_capacity(rows.len());
    for row in &rows {
        let expires_at = row.get_opt_text("expires_at").map_err(tool_error)?;
        let reason = if expired(expires_at.as_deref(), at) {
            "expired"
        } else {
            "older_than"
        };
        let item = Record::of(row, "scope key").map_err(tool_error)?;
        items.push(item.set("reason", reason).done());
    }
    Ok(budget::sweep("deleted", count, dry_run, items))
}
