//! `scrolls_search`: ranked text search over every level's titles, descriptions and comments.

use coremcp_plugin_sdk::page::{page_result, position, ranked_page};
use coremcp_plugin_sdk::prelude::*;

use crate::args::{ItemId, Status};
use crate::level::Level;
use crate::views::{self, Within};
use crate::SERVICE;

pub const TOOL: Tool = Tool::typed("scrolls_search", &typed(handler)).hints(Hints::READ);

/// Ranked search over all levels (title, description, comments): every word, in any form (the last
/// may be a prefix). Open items unless status or include_closed.
#[derive(Debug, Args)]
pub struct Search {
    /// words, all must match
    #[arg(min_len = 1, max_len = 500)]
    query: String,
    /// only these levels
    #[arg(max_items = 6)]
    levels: Vec<Level>,
    /// e.g. CORE
    project: Option<ItemId>,
    /// statuses
    #[arg(max_items = 6)]
    status: Vec<Status>,
    /// closed too
    #[arg(default)]
    include_closed: bool,
    /// default 20
    #[arg(min = 1, max = 100, default = 20)]
    limit: usize,
    /// next_cursor
    cursor: Option<String>,
}

fn handler(_: &Ctx<'_>, args: Search) -> Result<Value, ToolError> {
    let statuses: Vec<String> = args.status.iter().map(|s| s.as_str().to_owned()).collect();
    let from = position(args.cursor.as_deref())?;
    SERVICE.read(|tx| {
        let project = match &args.project {
            Some(key) => Some(super::item_id(tx, "project", key.as_str())?),
            None => None,
        };
        let within = Within {
            levels: &args.levels,
            project: project.as_deref(),
            statuses: &statuses,
            include_closed: args.include_closed,
        };
        let rows = views::search(tx, &args.query, &within, from, args.limit + 1)?;
        let rows = rows
            .iter()
            .map(views::listed)
            .collect::<Result<Vec<_>, _>>()?;
        let (items, next) = ranked_page(rows, args.limit, from, &json!({"items": []}));
        Ok(page_result(items, next))
    })
}
