//! `scrolls_comment_add`: a comment or work note on any item.

use coremcp_plugin_sdk::prelude::*;

use crate::args::{AgentName, ItemId, Text};
use crate::{items, SERVICE};

pub const TOOL: Tool = Tool::typed("scrolls_comment_add", &typed(handler)).hints(Hints::ADD);

/// Add a comment to any item. Returns its id.
#[derive(Debug, Args)]
pub struct Add {
    /// item key, e.g. CORE-42
    id: ItemId,
    /// Markdown
    #[arg(max_len = 20000)]
    body: Text,
    /// default: the caller's agent
    author: Option<AgentName>,
}

fn handler(_: &Ctx<'_>, args: Add) -> Result<Value, ToolError> {
    SERVICE.run(|tx| {
        // The caller's registered agent when one is known, else the caller.
        let author = crate::actor::of(tx, args.author.as_ref().map(|a| a.0.as_str()))?;
        let id = items::comment(tx, args.id.as_str(), author.as_deref(), args.body.as_str())?;
        Ok(json!({"id": id, "item": args.id.as_str()}))
    })
}
