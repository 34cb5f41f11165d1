//! `scrolls_item_move`: re-parent an item, keeping its key.

use coremcp_plugin_sdk::prelude::*;

use crate::args::ItemId;
use crate::{items, SERVICE};

pub const TOOL: Tool = Tool::typed("scrolls_item_move", &typed(handler)).hints(Hints::IDEMPOTENT);

/// Re-parent an item by the level rules (epic under project, story/task under epic or
/// project, subtask under story/task, project under theme); position orders siblings.
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
            place(tx, key, position)?;
        }
        Ok(items::answer(
            &items::find(tx, "id", key)?,
            0,
            coremcp_plugin_sdk::budget::result_budget(),
        )?)
    })
}

/// Puts item `key` at `position` (0: first) among its siblings, which keep their order around
/// it; children are listed in this order (`children` in the get tools).
fn place(
    tx: &mut coremcp_store::Tx<'_>,
    key: &str,
    position: u64,
) -> Result<(), coremcp_store::plugin::TxError> {
    let rows = tx.query(
        "SELECT s.id FROM scrolls_item s JOIN scrolls_item m ON m.key = $1 \
         AND s.parent_id = m.parent_id WHERE s.id <> m.id \
         ORDER BY (s.position IS NULL), s.position, s.id",
        &[key.into()],
    )?;
    let mut order = rows
        .iter()
        .map(|r| r.get_text("id"))
        .collect::<Result<Vec<_>, _>>()?;
    let moved = items::find(tx, "id", key)?.get_text("id")?;
    let at = usize::try_from(position)
        .unwrap_or(usize::MAX)
        .min(order.len());
    order.insert(at, moved);
    for (i, id) in order.iter().enumerate() {
        tx.execute(
            "UPDATE scrolls_item SET position = $1 WHERE id = $2",
            &[(i as i64).into(), id.as_str().into()],
        )?;
    }
    Ok(())
}
