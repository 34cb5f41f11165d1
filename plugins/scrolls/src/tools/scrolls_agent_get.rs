//! `scrolls_agent_get`: one agent and its open assigned items.

use coremcp_plugin_sdk::budget::{fit_array, result_budget};
use coremcp_plugin_sdk::prelude::*;

use crate::agents::AGENT;
use crate::args::AgentName;
use crate::items::CLOSED;
use crate::views::{self, LISTED};
use crate::SERVICE;

pub const TOOL: Tool = Tool::typed("scrolls_agent_get", &typed(handler)).hints(Hints::READ);

/// Get an agent and its open items.
#[derive(Debug, Args)]
pub struct Get {
    /// agent name
    name: AgentName,
    /// add open items (default true)
    #[arg(default = true)]
    include_work: bool,
    /// description offset
    #[arg(min = 0, default = 0)]
    offset: usize,
}

/// The most open items an agent's answer looks at.
const MAX_WORK: usize = 200;

fn handler(_: &Ctx<'_>, args: Get) -> Result<Value, ToolError> {
    SERVICE.read(|tx| {
        let row = AGENT.find(tx, "name", &[args.name.as_str()])?;
        let mut agent = crate::agents::answer(AGENT.json(&row)?, args.offset);
        if args.include_work {
            let sql = format!(
                "SELECT {LISTED} FROM scrolls_item i WHERE i.assignee_id = $1 \
                 AND i.status NOT IN {CLOSED} ORDER BY {}, i.id LIMIT {MAX_WORK}",
                views::PRIORITY_RANK
            );
            let rows = tx.query(&sql, &[row.get_text("id")?.into()])?;
            let work = rows
                .iter()
                .map(views::listed)
                .collect::<Result<Vec<_>, _>>()?;
            let listed = work.len();
            agent["work"] = Value::Array(work);
            // Whole items are left out from the end past the answer's room: the level lists
            // (with `assignee`) and scrolls_ready_list page them all.
            let omitted = fit_array(&mut agent, "work", result_budget() - 200);
            if omitted > 0 || listed == MAX_WORK {
                let count = tx.query_one(
                    &format!(
                        "SELECT COUNT(*) AS n FROM scrolls_item i WHERE i.assignee_id = $1 \
                         AND i.status NOT IN {CLOSED}"
                    ),
                    &[row.get_text("id")?.into()],
                )?;
                let total = count.get_i64("n")? as usize;
                let shown = listed - omitted;
                if total > shown {
                    agent["work_total"] = total.into();
                    agent["work_omitted"] = (total - shown).into();
                }
            }
        }
        Ok(agent)
    })
}
