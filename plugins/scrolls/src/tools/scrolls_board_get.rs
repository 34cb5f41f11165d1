//! `scrolls_board_get`: a kanban view of a project or epic.

use coremcp_plugin_sdk::prelude::*;

use crate::args::{AgentName, ItemId};
use crate::level::Level;
use crate::{items, views, SERVICE};

pub const TOOL: Tool = Tool::typed("scrolls_board_get", &typed(handler)).hints(Hints::READ);

/// Kanban view of a project or epic: items in status columns, by priority then age.
#[derive(Debug, Args)]
pub struct Board {
    /// a project or epic key
    scope: ItemId,
    /// default story, task, subtask
    #[arg(default = Shown::All)]
    level: Shown,
    /// agent name
    assignee: Option<AgentName>,
    /// default 20
    #[arg(min = 1, max = 200, default = 20)]
    limit_per_column: usize,
}

/// Which levels a board shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ArgEnum)]
pub enum Shown {
    Story,
    Task,
    Subtask,
    All,
}

fn handler(_: &Ctx<'_>, args: Board) -> Result<Value, ToolError> {
    let levels = match args.level {
        Shown::Story => vec![Level::Story],
        Shown::Task => vec![Level::Task],
        Shown::Subtask => vec![Level::Subtask],
        Shown::All => vec![Level::Story, Level::Task, Level::Subtask],
    };
    SERVICE.read(|tx| {
        let scope = items::find(tx, "scope", args.scope.as_str())?;
        if !matches!(items::level_of(&scope)?, Level::Project | Level::Epic) {
            let problem = format!("{} is not a project or an epic", args.scope.as_str());
            return Err(coremcp_plugin_sdk::args::invalid("scope", problem).into());
        }
        let assignee = match &args.assignee {
            Some(name) => Some(crate::agents::AGENT.id(tx, "assignee", &[name.as_str()], false)?),
            None => None,
        };
        let columns = views::board(
            tx,
            &views::Subtree::of(&scope)?,
            &levels,
            assignee.as_deref(),
            args.limit_per_column,
        )?;
        let columns: Vec<Value> = columns
            .into_iter()
            .map(|(status, count, items)| json!({"status": status, "count": count, "items": items}))
            .collect();
        Ok(json!({"scope": args.scope.as_str(), "columns": columns}))
    })
}
