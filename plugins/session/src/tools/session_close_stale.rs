//! `session_close_stale`: close active sessions whose last heartbeat is at least
//! `older_than_s` (default 900) seconds ago, with close_reason `stale`; `dry_run` only lists
//! them.
//!
//! Invariants: the closing is one `UPDATE … WHERE status = 'active' AND last_heartbeat_at <= …
//! RETURNING`, so a session that heartbeats in the meantime is either closed and told so on its
//! next heartbeat, or not closed at all; the listed items are capped at `MAX_LISTED`, oldest
//! heartbeat first, the rest counted in `more`.

use coremcp_nervhq::{Query, SERVICE};
use coremcp_plugin_sdk::budget;
use coremcp_plugin_sdk::prelude::*;
use coremcp_plugin_sdk::time::seconds_before;
use coremcp_store::plugin::{now_ms, timestamp, tool_error};
use coremcp_store::records::{sweep, Key, Record};
use coremcp_store::StoreError;

use super::STALE_AFTER_S;

pub const TOOL: Tool = Tool::typed("session_close_stale", &typed(handler)).hints(Hints::IDEMPOTENT);

/// Close active sessions idle at least older_than_s as stale; dry_run only lists. Returns the
/// count and a sample.
#[derive(Debug, Args)]
pub struct CloseStale {
    /// idle seconds (default 900)
    #[arg(min = 0, default = STALE_AFTER_S)]
    older_than_s: u64,
    /// on this host
    host: Option<String>,
    /// of this agent
    agent: Option<String>,
    /// list only
    #[arg(default)]
    dry_run: bool,
}

fn handler(_: &Ctx<'_>, args: CloseStale) -> Result<Value, ToolError> {
    let (older_than_s, dry_run) = (args.older_than_s, args.dry_run);
    let at = now_ms();
    let cutoff = seconds_before(at, older_than_s, "older_than_s")?;
    let (host, agent) = (args.host.as_deref(), args.agent.as_deref());
    let mut q = Query::new();
    q.and("status = 'active'");
    let p = q.bind(cutoff.as_str());
    q.and(format!("last_heartbeat_at <= {p}"));
    q.eq_opt("host", host);
    q.eq_opt("agent", agent);
    let keys = [
        Key::time("last_heartbeat_at", "last_heartbeat_at"),
        Key::text("id", "id"),
    ];
    let (count, rows) = SERVICE.run(|tx| {
        let columns = "id, agent, host, last_heartbeat_at";
        sweep(tx, "session", &q, columns, &keys, dry_run, |q| {
            let now = q.bind(timestamp(at));
            format!(
                "UPDATE session SET status = 'closed', closed_at = {now}, \
                 close_reason = 'stale', version = version + 1"
            )
        })
    })?;
    let fields = "session_id=id agent host last_heartbeat_at:ts";
    let items = rows.iter().map(|row| Ok(Record::of(row, fields)?.done()));
    let items = items
        .collect::<Result<_, StoreError>>()
        .map_err(tool_error)?;
    Ok(budget::sweep("closed", count, dry_run, items))
}
