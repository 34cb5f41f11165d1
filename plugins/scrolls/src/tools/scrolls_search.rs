//! `scrolls_search`: ranked text search over every level's titles, descriptions and comments.
//!
//! A search that finds more than its first page keeps the order it found
//! (`coremcp_store::walk`) and pages through it, applying its filters again on each page: a
//! walk sees an item that stays in the list exactly once, whatever is claimed, closed or
//! created meanwhile.

use coremcp_plugin_sdk::page::{page_result, ranked_page};
use coremcp_plugin_sdk::prelude::*;
use coremcp_store::plugin::TxError;
use coremcp_store::walk;

use crate::args::{ItemId, Status};
use crate::level::Level;
use crate::views::{self, Within, LISTED};
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

/// The walks of this service's searches (`coremcp_store::walk`).
const WALK: &str = "scrolls_walk";

fn handler(_: &Ctx<'_>, args: Search) -> Result<Value, ToolError> {
    let statuses: Vec<String> = args.status.iter().map(|s| s.as_str().to_owned()).collect();
    let walking = args.cursor.as_deref().map(walk::cursor).transpose()?;
    let within = |tx: &mut coremcp_store::Tx<'_>| -> Result<Option<String>, TxError> {
        Ok(match &args.project {
            Some(key) => Some(super::item_id(tx, "project", key.as_str())?),
            None => None,
        })
    };
    if let Some((token, pos)) = walking {
        return SERVICE.read(|tx| {
            let project = within(tx)?;
            let ids = walk::ids(tx, WALK, &token)?.ok_or_else(walk::expired)?;
            walk_page(
                tx,
                &ids,
                (&token, pos),
                args.limit,
                &keeps(&args, &statuses, project.as_deref()),
            )
        });
    }
    // The first page: when every match fits it, no walk is kept.
    let first = SERVICE.read(|tx| {
        let project = within(tx)?;
        let rows = views::search(
            tx,
            &args.query,
            &keeps(&args, &statuses, project.as_deref()),
            args.limit + 1,
            LISTED,
        )?;
        let rows = rows
            .iter()
            .map(views::listed)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ranked_page(rows, args.limit, 0, &json!({"items": []})))
    })?;
    if first.1.is_none() {
        return Ok(page_result(first.0, None));
    }
    // More than a page: the order found now is kept, and every page goes through it.
    SERVICE.run(|tx| {
        let project = within(tx)?;
        let keep = keeps(&args, &statuses, project.as_deref());
        let rows = views::search(tx, &args.query, &keep, walk::MAX_IDS, "i.id")?;
        let ids = rows
            .iter()
            .map(|r| r.get_text("id"))
            .collect::<Result<Vec<_>, _>>()?;
        let token = walk::keep(tx, WALK, &ids)?;
        walk_page(tx, &ids, (&token, 0), args.limit, &keep)
    })
}

/// What the search keeps of what it finds.
fn keeps<'a>(args: &'a Search, statuses: &'a [String], project: Option<&'a str>) -> Within<'a> {
    Within {
        levels: &args.levels,
        project,
        statuses,
        include_closed: args.include_closed,
    }
}

/// The page of the walk `token` (its `ids`) from `pos`: the items still there that `within`
/// still keeps, in the walk's order, as many as fit.
fn walk_page(
    tx: &mut coremcp_store::Tx<'_>,
    ids: &[String],
    at: (&str, usize),
    limit: usize,
    within: &Within<'_>,
) -> Result<Value, TxError> {
    walk::present(ids, at, limit, |slice| {
        let rows = views::listed_by_ids(tx, slice, within)?;
        rows.iter()
            .map(|row| Ok((row.get_text("id")?, views::listed(row)?)))
            .collect::<Result<Vec<_>, TxError>>()
    })
}
