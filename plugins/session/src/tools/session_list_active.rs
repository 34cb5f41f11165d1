//! `session_list_active`: active sessions, most recent heartbeat first, filtered by host, agent
//! and project, keyset-paged on (last_heartbeat_at, id). A session that heartbeats while a
//! client pages moves to the front, so it may be missed on later pages; each page is
//! consistent in itself.

use coremcp_nervhq::{Query, SERVICE};
use coremcp_plugin_sdk::prelude::*;
use coremcp_plugin_sdk::time::{now_ms, parse_timestamp};
use coremcp_store::records::{Key, Order};

use super::{listing_json, ACTIVE_COLUMNS, STALE_AFTER_S};

pub const TOOL: Tool = Tool::typed("session_list_active", &typed(handler)).hints(Hints::READ);

/// List active sessions, latest heartbeat first, with stale (no heartbeat for 900 s). Filters:
/// host, agent, project.
#[derive(Debug, Args)]
pub struct ListActive {
    #[arg(flatten)]
    filter: super::Filter,
    #[arg(flatten)]
    page: Paging,
}

/// The list's order and cursors.
const ORDER: Order<'static> = Order::desc(
    "active",
    &[
        Key::time("last_heartbeat_at", "last_heartbeat_at"),
        Key::text("id", "id"),
    ],
);

fn handler(_: &Ctx<'_>, args: ListActive) -> Result<Value, ToolError> {
    let stale_before = now_ms() - STALE_AFTER_S as i64 * 1000;
    let mut q = Query::new();
    q.and("status = 'active'");
    args.filter.apply(&mut q, "");
    let select = format!("SELECT {ACTIVE_COLUMNS} FROM session");
    SERVICE.read(|tx| {
        ORDER.list(tx, &select, &q, &args.page, |row| {
            let item = listing_json(row)?;
            let last = item.0["last_heartbeat_at"]
                .as_str()
                .and_then(parse_timestamp);
            Ok(item.set("stale", last.unwrap_or(0) <= stale_before).done())
        })
    })
}
