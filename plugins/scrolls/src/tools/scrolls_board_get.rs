//! `scrolls_board_get`: a kanban view of a project or epic.

use coremcp_plugin_sdk::budget;
use coremcp_plugin_sdk::prelude::*;

use crate::args::{AgentName, ItemId};
use crate::level::Level;
use crate::{items, views, SERVICE};

pub const TOOL: Tool = Tool::typed("scrolls_board_get", &typed(handler)).hints(Hints::READ);

/// Kanban view of a project or epic: items in status columns, by priority then age.
#[derive(Debug, Args)]
pub struct Board {
    /// project or epic, e.g. CORE
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
        let mut board = json!({"scope": args.scope.as_str(), "columns": columns});
        fit_columns(&mut board);
        Ok(board)
    })
}

/// Leaves out whole items from the end of the longest column until the board fits the
/// answer; a column's `count` stays the whole count, so `shown` (set when fewer are shown)
/// says what is missing, and the level lists (with `status`) page it.
fn fit_columns(board: &mut Value) {
    // Sizes are subtracted as items go and measured again whenever the estimate fits.
    let mut size = budget::chars(board);
    while size > budget::result_budget() {
        let Some(columns) = board["columns"].as_array_mut() else {
            return;
        };
        let Some(longest) = columns
            .iter_mut()
            .max_by_key(|c| c["items"].as_array().map_or(0, Vec::len))
        else {
            return;
        };
        let Some(item) = longest["items"].as_array_mut().and_then(Vec::pop) else {
            return;
        };
        let shown = longest["items"].as_array().map_or(0, Vec::len);
        longest["shown"] = shown.into();
        board["truncated"] = true.into();
        size = size.saturating_sub(budget::chars(&item));
        if size <= budget::result_budget() {
            size = budget::chars(board);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_board_sheds_items_from_its_longest_column_until_it_fits() {
        let items = |n: usize| -> Vec<Value> {
            (0..n)
                .map(|i| json!({"key": format!("S-{i}"), "title": "t".repeat(300)}))
                .collect()
        };
        let mut board = json!({"scope": "P", "columns": [
            {"status": "open", "count": 500, "items": items(200)},
            {"status": "done", "count": 3, "items": items(3)},
        ]});
        fit_columns(&mut board);
        assert!(budget::chars(&board) <= budget::result_budget());
        assert_eq!(board["truncated"], true);
        assert_eq!(
            board["columns"][1]["items"].as_array().map(Vec::len),
            Some(3)
        );
        assert!(board["columns"][1].get("shown").is_none());
        let shown = board["columns"][0]["items"].as_array().map_or(0, Vec::len);
        assert_eq!(board["columns"][0]["shown"], shown);
        assert!(shown > 40, "{shown}");
    }
}
