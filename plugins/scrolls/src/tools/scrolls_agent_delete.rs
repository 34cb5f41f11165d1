//! `scrolls_agent_delete`: delete an agent, giving its open work back or to another agent.

use coremcp_plugin_sdk::prelude::*;

use crate::agents;
use crate::args::AgentName;
use crate::SERVICE;

pub const TOOL: Tool =
    Tool::typed("scrolls_agent_delete", &typed(handler)).hints(Hints::DESTRUCTIVE);

/// Delete an agent; its open items go to reassign_to, else to nobody (released to open).
/// Returns how many moved.
#[derive(Debug, Args)]
pub struct Delete {
    /// agent name
    name: AgentName,
    /// gets its open items (default nobody)
    reassign_to: Option<AgentName>,
}

fn handler(_: &Ctx<'_>, args: Delete) -> Result<Value, ToolError> {
    SERVICE.run(|tx| {
        let to = args.reassign_to.as_ref().map(AgentName::as_str);
        let given = agents::delete(tx, args.name.as_str(), to)?;
        let done = json!({"deleted": args.name.as_str(), "reassigned": given});
        Ok(
            coremcp_store::records::Record(done.as_object().cloned().unwrap_or_default())
                .opt("to", to)
                .done(),
        )
    })
}
