//! `session_heartbeat`: mark a session alive.
//!
//! Invariants:
//! - The count goes up in one `UPDATE … SET heartbeat_count = heartbeat_count + 1 …
//!   RETURNING`, never read-then-write, so heartbeats from several processes are all counted.
//! - A closed session is not touched: the answer says `closed: true` (with its reason) and the
//!   client registers again.
//! - `note` and `current_item` keep their last value when left out; an empty string clears one.

use coremcp_nervhq::result::ts;
use coremcp_nervhq::SERVICE;
use coremcp_plugin_sdk::prelude::*;
use coremcp_store::plugin::now;
use coremcp_store::records::Record;
use coremcp_store::Param;

use super::{no_session, SessionId};

pub const TOOL: Tool = Tool::typed("session_heartbeat", &typed(handler)).hints(Hints::IDEMPOTENT);

/// Mark a session alive (every heartbeat_interval_s) with an optional note and current item.
/// closed: true means register again.
#[derive(Debug, Args)]
pub struct Heartbeat {
    /// from session_register
    session_id: SessionId,
    /// short status note
    #[arg(max_len = 200)]
    note: Option<String>,
    /// item key, e.g. CORE-42
    #[arg(max_len = 200)]
    current_item: Option<String>,
}

fn handler(_: &Ctx<'_>, args: Heartbeat) -> Result<Value, ToolError> {
    let id = args.session_id.as_str();
    let mut params: Vec<Param> = vec![id.into(), now().into()];
    let mut set = String::from("heartbeat_count = heartbeat_count + 1, last_heartbeat_at = $2");
    for (column, value) in [("note", args.note), ("current_item", args.current_item)] {
        if let Some(value) = value {
            params.push(Some(value).filter(|v| !v.is_empty()).into());
            set.push_str(&format!(", {column} = ${}", params.len()));
        }
    }
    let sql = format!(
        "UPDATE session SET {set} WHERE id = $1 AND status = 'active'
         RETURNING heartbeat_count, last_heartbeat_at"
    );
    SERVICE.run(|tx| {
        if let Some(row) = tx.query_opt(&sql, &params)? {
            return Ok(json!({
                "session_id": id,
                "closed": false,
                "heartbeat_count": row.get_i64("heartbeat_count")?,
                "last_heartbeat_at": ts(&row, "last_heartbeat_at")?,
            }));
        }
        let row = tx
            .query_opt(
                "SELECT close_reason FROM session WHERE id = $1",
                &[id.into()],
            )?
            .ok_or_else(|| no_session(id))?;
        let closed = Record::of(&row, "close_reason?")?.set("session_id", id);
        Ok(closed.set("closed", true).done())
    })
}
