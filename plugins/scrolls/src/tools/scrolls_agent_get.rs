//! `scrolls_agent_get`: one agent and its open assigned items.

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
}

fn handler(_: &Ctx<'_>, args: Get) -> Result<Value, ToolError> {
    SERVICE.read(|tx| {
        let row = AGENT.find(tx, "name", &[args.name.as_str()])?;
        let mut agent = AGENT.json(&row)?;
        if args.include_work {
            let sql = format!(
                "SELECT {LISTED} FROM scrolls_item i WHERE i.assignee_id = $1 \
                 AND i.status NOT IN {CLOSED} ORDER BY {}, i.id LIMIT 200",
                views::PRIORITY_RANK
            );
            let rows = tx.query(&sql, &[row.get_text("id")?.into()])?;
            let work = rows
                .iter()
                .map(views::listed)
                .collect::<Result<Vec<_>, _>>()?;
            agent["work"] = Value::Array(work);
        }
        Ok(agent)
    })
}
