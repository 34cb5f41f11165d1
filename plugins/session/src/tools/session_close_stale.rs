//! `session_close_stale`: close active sessions whose last heartbeat is at least
//! `older_than_s` (default 900) seconds ago, with close_reason `stale`; `dry_run` only lists
//! them.
//!
//! Invariants: the closing is one `UPDATE … WHERE status = 'active' AND last_heartbeat_at <= …
//! RETURNING`, so a session that heartbeats in the meantime is either closed and told so on its
//! next heartbeat, or not closed at all; the listed items are capped at `MAX_LISTED`, oldest
//! heartbeat first, the rest counted in `more`.

use coremcp_nervhq::result::{ts, MAX_LISTED};
use coremcp_nervhq::{bytewise, Query, SERVICE};
use coremcp_plugin_sdk::budget::sweep;
use coremcp_plugin_sdk::prelude::*;
use coremcp_plugin_sdk::time::seconds_before;
use coremcp_store::plugin::{now_ms, timestamp, tool_error};

use super::STALE_AFTER_S;

pub const TOOL: Tool = Tool::new(
    "session_close_stale",
    "Close active sessions whose last heartbeat is at least older_than_s seconds \
        ago (default 900), with close_reason stale; filter by host and agent. dry_run only \
        lists them. A closed session's next heartbeat answers closed: true, and its client \
        registers again. Returns closed (with dry_run: how many would be) and the sessions (up \
        to 200, oldest heartbeat first, the rest counted in more).",
    &typed(handler),
)
.hints(Hints::IDEMPOTENT);

#[derive(Debug, Args)]
pub struct CloseStale {
    /// seconds since the last heartbeat (default 900)
    #[arg(min = 0, default = STALE_AFTER_S)]
    older_than_s: u64,
    /// only sessions on this host
    host: Option<String>,
    /// only sessions of this agent
    agent: Option<String>,
    /// list what would be closed, close nothing (default false)
    #[arg(default)]
    dry_run: bool,
}

fn handler(_: &Ctx<'_>, args: CloseStale) -> Result<Value, ToolError> {
    let (older_than_s, dry_run) = (args.older_than_s, args.dry_run);
    let at = now_ms();
    let cutoff = seconds_before(at, older_than_s, "older_than_s")?;
    let (host, agent) = (args.host.as_deref(), args.agent.as_deref());
    let (count, mut rows) = SERVICE.run(|tx| {
        let c = bytewise(tx);
        let mut q = Query::new();
        q.and("status = 'active'");
        let p = q.bind(cutoff.as_str());
        q.and(format!("last_heartbeat_at <= {p}"));
        q.eq_opt("host", host);
        q.eq_opt("agent", agent);
        let filter = q.where_clause();
        if dry_run {
            let count = tx
                .query_one(
                    &format!("SELECT COUNT(*) AS n FROM session{filter}"),
                    q.params(),
                )?
                .get_i64("n")?;
            let rows = tx.query(
                &format!(
                    "SELECT id, agent, host, last_heartbeat_at FROM session{filter}
                     ORDER BY last_heartbeat_at, id{c} LIMIT {MAX_LISTED}"
                ),
                q.params(),
            )?;
            Ok((count as usize, rows))
        } else {
            let mut params = q.params().to_vec();
            params.push(timestamp(at).into());
            let rows = tx.query(
                &format!(
                    "UPDATE session SET status = 'closed', closed_at = ${}, close_reason = 'stale',
                         version = version + 1{filter}
                     RETURNING id, agent, host, last_heartbeat_at",
                    params.len()
                ),
                &params,
            )?;
            Ok((rows.len(), rows))
        }
    })?;
    let mut items = Vec::with_capacity(rows.len());
    // UPDATE … RETURNING has no order: oldest heartbeat first, as the dry run lists them.
    rows.sort_by_cached_key(|row| {
        (
            ts(row, "last_heartbeat_at").unwrap_or_default(),
            row.get_text("id").unwrap_or_default(),
        )
    });
    for row in &rows {
        items.push(json!({
            "session_id": row.get_text("id").map_err(tool_error)?,
            "agent": row.get_text("agent").map_err(tool_error)?,
            "host": row.get_text("host").map_err(tool_error)?,
            "last_heartbeat_at": ts(row, "last_heartbeat_at").map_err(tool_error)?,
        }));
    }
    Ok(sweep("closed", count, dry_run, items))
}
