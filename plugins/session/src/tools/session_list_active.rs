//! `session_list_active`: active sessions, most recent heartbeat first, filtered by host, agent
//! and project, keyset-paged on (last_heartbeat_at, id). A session that heartbeats while a
//! client pages moves to the front, so it may be missed on later pages; each page is
//! consistent in itself.

use coremcp_nervhq::{bytewise, Query, SERVICE};
use coremcp_plugin_sdk::page::{keyset_result, Paging};
use coremcp_plugin_sdk::prelude::*;
use coremcp_plugin_sdk::time::{now_ms, parse_timestamp};

use super::{listing_json, ACTIVE_COLUMNS, STALE_AFTER_S};

pub const TOOL: Tool = Tool::new(
    "session_list_active",
    "List active sessions, most recent heartbeat first: agent, host, project, cwd, \
        repo, branch, model, started_at, last heartbeat, heartbeat_count, note, current item, \
        and stale (no heartbeat for 900 s or more, not closed yet). Filter by host, agent and \
        project; pass next_cursor back for the next page.",
    &typed(handler),
)
.hints(Hints::READ);

#[derive(Debug, Args)]
pub struct ListActive {
    #[arg(flatten)]
    filter: super::Filter,
    #[arg(flatten)]
    page: Paging,
}

fn handler(_: &Ctx<'_>, args: ListActive) -> Result<Value, ToolError> {
    let limit = args.page.limit;
    let after = args.page.after(2)?;
    let stale_before = now_ms() - STALE_AFTER_S as i64 * 1000;
    let rows = SERVICE.run(|tx| {
        let c = bytewise(tx);
        let mut q = Query::new();
        q.and("status = 'active'");
        args.filter.apply(&mut q, "");
        if let Some(after) = &after {
            let (t, i) = (q.bind(after[0].as_str()), q.bind(after[1].as_str()));
            q.and(format!(
                "(last_heartbeat_at < {t} OR (last_heartbeat_at = {t} AND id{c} < {i}))"
            ));
        }
        let sql = format!(
            "SELECT {ACTIVE_COLUMNS} FROM session{} ORDER BY last_heartbeat_at DESC, id{c} DESC
             LIMIT {}",
            q.where_clause(),
            limit + 1
        );
        let mut items = Vec::new();
        for row in tx.query(&sql, q.params())? {
            let item = listing_json(&row)?;
            let last = item.0["last_heartbeat_at"]
                .as_str()
                .and_then(parse_timestamp);
            items.push(item.set("stale", last.unwrap_or(0) <= stale_before).done());
        }
        Ok(items)
    })?;
    Ok(keyset_result(
        rows,
        limit,
        &["last_heartbeat_at", "session_id"],
        40,
    ))
}
