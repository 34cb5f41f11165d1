//! `scrolls_item_claim`: take an item to work on, atomically.

use coremcp_plugin_sdk::prelude::*;

use crate::args::{AgentName, ItemId};
use crate::{items, SERVICE};

pub const TOOL: Tool = Tool::typed("scrolls_item_claim", &typed(handler)).hints(Hints::IDEMPOTENT);

/// Atomically assign an open item to an agent and set it in_progress: of two agents claiming
/// at once exactly one wins, the other gets conflict naming the holder. Claiming again what
/// you hold is fine; force: true takes it over from another agent. Returns the item.
#[derive(Debug, Args)]
pub struct Claim {
    /// the item's key
    id: ItemId,
    /// the claiming agent (registered with scrolls_agent_register)
    agent: AgentName,
    /// take it over from another agent (default false)
    #[arg(default)]
    force: bool,
}

fn handler(_: &Ctx<'_>, args: Claim) -> Result<Value, ToolError> {
    SERVICE.run(|tx| {
        items::claim(tx, args.id.as_str(), args.agent.as_str(), args.force)?;
        Ok(items::json(&items::find(tx, "id", args.id.as_str())?)?)
    })
}
