//! `scrolls_item_move`: re-parent an item, keeping its key.

use coremcp_plugin_sdk::prelude::*;

use crate::args::ItemId;
use crate::{items, SERVICE};

pub const TOOL: Tool = Tool::typed("scrolls_item_move", &typed(handler)).hints(Hints::IDEMPOTENT);

/// Re-parent an item within the level rules (project under theme, epic under project, story/task
/// under epic or project, subtask under story/task).
#[derive(Debug, Args)]
pub struct Move {
    /// item key, e.g. CORE-42
    id: ItemId,
    /// e.g. CORE-1
    new_parent: ItemId,
    /// place among siblings
    #[arg(min = 0)]
    position: Option<u64>,
}

fn handler(_: &Ctx<'_>, args: Move) -> Result<Value, ToolError> {
    SERVICE.run(|tx| {
        let (key, parent) = (args.id.as_str(), args.new_parent.as_str());
        let actor = crate::actor::of(tx, None)?;
        items::move_to(tx, key, "new_parent", parent, actor.as_deref())?;
        if let Some(position) = args.position {
            let position = i64::try_from(position).unwrap_or(i64::MAX);
            tx.execute(
                "UPDATE scrolls_item SET position = $1 WHERE key = $2",
                &[position.into(), key.into()],
            )?;
        }
        Ok(items::answer(
            &items::find(tx, "id", key)?,
            0,
            coremcp_plugin_sdk::budget::RESULT_BUDGET,
        )?)
    })
}
