//! `scrolls_comment_list`: an item's comments, newest first.

use coremcp_plugin_sdk::prelude::*;

use crate::args::ItemId;
use crate::{views, SERVICE};

pub const TOOL: Tool = Tool::typed("scrolls_comment_list", &typed(handler)).hints(Hints::READ);

/// List an item's comments, newest first. A body over 1000 chars is cut; its body_cursor as
/// cursor reads on.
#[derive(Debug, Args)]
pub struct List {
    /// item key, e.g. CORE-42
    id: ItemId,
    #[arg(flatten)]
    page: Paging,
}

fn handler(_: &Ctx<'_>, args: List) -> Result<Value, ToolError> {
    SERVICE.read(|tx| {
        let item = super::item_id(tx, "id", args.id.as_str())?;
        // A long comment's body_cursor reads on in that comment's body.
        match args
            .page
            .cursor
            .as_deref()
            .and_then(views::read_body_cursor)
        {
            Some((comment, offset)) => views::comment_body(tx, &item, &comment, offset),
            None => views::comments(tx, &item, &args.page),
        }
    })
}
