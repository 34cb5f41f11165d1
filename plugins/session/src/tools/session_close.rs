//! `session_close`: close an active session with a reason and an optional summary. Closing a
//! closed session changes nothing and answers with its close as it stands.

use coremcp_nervhq::SERVICE;
use coremcp_plugin_sdk::prelude::*;
use coremcp_store::plugin::now;
use coremcp_store::records::Record;
use coremcp_store::{Param, Row, StoreError};

use super::{no_session, SessionId};

pub const TOOL: Tool = Tool::typed("session_close", &typed(handler)).hints(Hints::IDEMPOTENT);

#[derive(Debug, Clone, Copy, ArgEnum)]
enum Reason {
    Done,
    Aborted,
    Error,
}

/// Close a session with a reason and optional summary. Closing it again changes nothing.
#[derive(Debug, Args)]
pub struct Close {
    /// from session_register
    session_id: SessionId,
    /// default done
    #[arg(default = Reason::Done)]
    reason: Reason,
    /// what the session did
    #[arg(max_len = 20000)]
    summary: Option<String>,
}

fn handler(_: &Ctx<'_>, args: Close) -> Result<Value, ToolError> {
    let id = args.session_id.as_str();
    let mut params: Vec<Param> = vec![id.into(), now().into(), args.reason.as_str().into()];
    let mut set = String::from("status = 'closed', closed_at = $2, close_reason = $3");
    if let Some(summary) = args.summary {
        params.push(summary.into());
        set.push_str(", summary = $4");
    }
    let sql = format!(
        "UPDATE session SET {set}, version = version + 1 WHERE id = $1 AND status = 'active'
         RETURNING id, status, closed_at, close_reason, summary"
    );
    SERVICE.run(|tx| {
        if let Some(row) = tx.query_opt(&sql, &params)? {
            return Ok(closed(&row)?);
        }
        let row = tx
            .query_opt(
                "SELECT id, status, closed_at, close_reason, summary FROM session WHERE id = $1",
                &[id.into()],
            )?
            .ok_or_else(|| no_session(id))?;
        if row.get_text("status")? != "closed" {
            // Only a register committed between the two statements (PostgreSQL) gets here.
            return Err(ToolError::new(
                codes::CONFLICT,
                format!("session {id} was registered again while closing it; retry"),
            )
            .into());
        }
        Ok(closed(&row)?)
    })
}

/// The closed session; a summary longer than the answer holds is cut with
/// `summary_next_offset`, which `session_get`'s `offset` reads on from.
fn closed(row: &Row) -> Result<Value, StoreError> {
    let mut out = Record::of(row, &format!("session_id=id {}", super::CLOSE))?.done();
    coremcp_plugin_sdk::budget::fit_fields(
        &mut out,
        &[("summary", 0)],
        coremcp_plugin_sdk::budget::result_budget(),
    );
    Ok(out)
}
