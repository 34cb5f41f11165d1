//! `scrolls_item_claim`: take an item to work on, atomically.

use coremcp_plugin_sdk::prelude::*;

use crate::args::{AgentName, ItemId};
use crate::{items, SERVICE};

pub const TOOL: Tool = Tool::typed("scrolls_item_claim", &typed(handler)).hints(Hints::IDEMPOTENT);

/// Atomically assign an open item to an agent, in_progress; a rival claim is a conflict naming
/// the holder. force takes it over; an update with assignee "" releases it.
#[derive(Debug, Args)]
pub struct Claim {
    /// item key, e.g. CORE-42
    id: ItemId,
    /// agent name
    agent: AgentName,
    /// take it from its holder
    #[arg(default)]
    force: bool,
}

fn handler(_: &Ctx<'_>, args: Claim) -> Result<Value, ToolError> {
    SERVICE.run(|tx| {
        items::claim(tx, args.id.as_str(), args.agent.as_str(), args.force)?;
        Ok(items::answer(
            &items::find(tx, "id", args.id.as_str())?,
            0,
            coremcp_plugin_sdk::budget::result_budget(),
        )?)
    })
}
