//! `scrolls_progress_get`: the rollup of everything under any item (the item itself is not one
//! of its own items), with the newest closed items when `since` is given.

use coremcp_plugin_sdk::prelude::*;
use coremcp_plugin_sdk::time::{now, Time};
use coremcp_store::records::Record;

use crate::args::ItemId;
use crate::items;
use crate::views::{self, By, Totals};
use crate::SERVICE;

pub const TOOL: Tool = Tool::typed("scrolls_progress_get", &typed(handler)).hints(Hints::READ);

/// The most recently closed items listed with `since` (`closed_since` counts them all).
const RECENTLY_CLOSED: usize = 20;

/// Rollup under an item: counts and estimates by status, level, assignee or label; % done;
/// blocked and overdue; closed since (with the newest).
#[derive(Debug, Args)]
pub struct Progress {
    /// any item, e.g. CORE-1
    id: ItemId,
    /// default status
    #[arg(default = GroupBy::Status)]
    by: GroupBy,
    /// date or RFC 3339: closed since
    since: Option<Time>,
}

/// What progress groups by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ArgEnum)]
pub enum GroupBy {
    Status,
    Level,
    Assignee,
    Label,
}

fn percent(part: f64, whole: f64) -> f64 {
    if whole > 0.0 {
        (part * 1000.0 / whole).round() / 10.0
    } else {
        0.0
    }
}

fn handler(_: &Ctx<'_>, args: Progress) -> Result<Value, ToolError> {
    let by = match args.by {
        GroupBy::Status => By::Status,
        GroupBy::Level => By::Level,
        GroupBy::Assignee => By::Assignee,
        GroupBy::Label => By::Label,
    };
    let today: String = now().chars().take(10).collect();
    let since = args.since.map(|t| t.stored());
    SERVICE.read(|tx| {
        let tree = views::Subtree::of(&items::find(tx, "id", args.id.as_str())?)?;
        let rollup = views::rollup(tx, &tree, &today, since.as_deref())?;
        let t = Totals::of(&rollup);
        let groups = views::counts(tx, &tree, &rollup, by)?;
        let groups: Vec<Value> = groups
            .into_iter()
            .map(|(value, count, estimate)| {
                Record::default()
                    .opt("value", value)
                    .set("count", count)
                    .set("estimate", estimate)
                    .done()
            })
            .collect();
        let counted = (t.total - t.cancelled) as f64;
        let out = Record::default()
            .set("id", args.id.as_str())
            .set("by", args.by.as_str())
            .set("groups", groups)
            .set("total", t.total)
            .set("done", t.done)
            .set("blocked", t.blocked)
            .set("overdue", t.overdue)
            .set("percent_done", percent(t.done as f64, counted))
            .set(
                "percent_done_by_estimate",
                percent(t.estimate_done, t.estimate),
            )
            .opt("closed_since", since.is_some().then_some(t.closed_since));
        let Some(since) = &since else {
            return Ok(out.done());
        };
        let recent = views::closed_since(tx, &tree, since, RECENTLY_CLOSED)?;
        Ok(out.set("recently_closed", recent).done())
    })
}
