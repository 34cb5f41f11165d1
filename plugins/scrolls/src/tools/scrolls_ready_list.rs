//! `scrolls_ready_list`: the work queue.

use coremcp_plugin_sdk::page::{page_result, position, ranked_page};
use coremcp_plugin_sdk::prelude::*;

use crate::args::{AgentName, ItemId};
use crate::level::Level;
use crate::{views, SERVICE};

pub const TOOL: Tool = Tool::typed("scrolls_ready_list", &typed(handler)).hints(Hints::READ);

/// Work queue: open items whose dependencies are closed, unassigned or assigned to agent, by
/// priority, due date, age.
#[derive(Debug, Args)]
pub struct Ready {
    /// and assigned to this agent
    agent: Option<AgentName>,
    /// e.g. CORE
    project: Option<ItemId>,
    /// default story, task, subtask
    #[arg(max_items = 6)]
    levels: Vec<Level>,
    /// default 10
    #[arg(min = 1, max = 100, default = 10)]
    limit: usize,
    /// next_cursor
    cursor: Option<String>,
}

fn handler(_: &Ctx<'_>, args: Ready) -> Result<Value, ToolError> {
    let levels = match args.levels.is_empty() {
        true => vec![Level::Story, Level::Task, Level::Subtask],
        false => args.levels,
    };
    let from = position(args.cursor.as_deref())?;
    SERVICE.read(|tx| {
        let project = match &args.project {
            Some(key) => Some(super::item_id(tx, "project", key.as_str())?),
            None => None,
        };
        let agent = args.agent.as_ref().map(AgentName::as_str);
        if let Some(agent) = agent {
            crate::agents::AGENT.find(tx, "agent", &[agent])?;
        }
        let rows = views::ready(
            tx,
            agent,
            project.as_deref(),
            &levels,
            from + args.limit + 1,
        )?;
        let rows = rows
            .iter()
            .skip(from)
            .map(views::listed)
            .collect::<Result<Vec<_>, _>>()?;
        let (items, next) = ranked_page(rows, args.limit, from, &json!({"items": []}));
        Ok(page_result(items, next))
    })
}
