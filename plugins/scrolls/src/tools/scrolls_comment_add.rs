//! `scrolls_comment_add`: a comment or work note on any item.

use coremcp_plugin_sdk::prelude::*;

use crate::args::{AgentName, ItemId, Text};
use crate::{items, SERVICE};

pub const TOOL: Tool = Tool::typed("scrolls_comment_add", &typed(handler)).hints(Hints::ADD);

/// Add a comment to any item. Returns its id.
#[derive(Debug, Args)]
pub struct Add {
    /// item key
    id: ItemId,
    /// Markdown
    #[arg(max_len = 20000)]
    body: Text,
    /// default: the client's name
    author: Option<AgentName>,
}

fn handler(_: &Ctx<'_>, args: Add) -> Result<Value, ToolError> {
    let author = args
        .author
        .map(|a| a.0)
        .or_else(|| coremcp_plugin_sdk::config("client").filter(|c| !c.is_empty()));
    SERVICE.run(|tx| {
        let id = items::comment(tx, args.id.as_str(), author.as_deref(), args.body.as_str())?;
        Ok(json!({"id": id, "item": args.id.as_str()}))
    })
}
