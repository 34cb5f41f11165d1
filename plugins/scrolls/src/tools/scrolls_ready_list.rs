//! `scrolls_ready_list`: the work queue, a page at a time.
//!
//! Invariants: a page goes on from the queue place of the last item shown (its cursor), never
//! from a position: an item that stays ready throughout a walk is seen exactly once, however
//! many are claimed, closed or created between its pages (one created before the place the
//! walk reached is not shown; the next walk finds it).

use coremcp_plugin_sdk::args::invalid;
use coremcp_plugin_sdk::page::{decode_cursor, encode_cursor, page, page_result};
use coremcp_plugin_sdk::prelude::*;

use crate::args::{AgentName, ItemId};
use crate::level::Level;
use crate::{views, SERVICE};

pub const TOOL: Tool = Tool::typed("scrolls_ready_list", &typed(handler)).hints(Hints::READ);

/// Work queue: open items whose dependencies are closed, unassigned or assigned to agent, by
/// priority, due date, age.
#[derive(Debug, Args)]
pub struct Ready {
    /// and assigned to this agent
    agent: Option<AgentName>,
    /// e.g. CORE
    project: Option<ItemId>,
    /// default story, task, subtask
    #[arg(max_items = 6)]
    levels: Vec<Level>,
    /// default 10
    #[arg(min = 1, max = 100, default = 10)]
    limit: usize,
    /// next_cursor
    cursor: Option<String>,
}

fn handler(_: &Ctx<'_>, args: Ready) -> Result<Value, ToolError> {
    let levels = match args.levels.is_empty() {
        true => vec![Level::Story, Level::Task, Level::Subtask],
        false => args.levels,
    };
    let after = args.cursor.as_deref().map(read_cursor).transpose()?;
    SERVICE.read(|tx| {
        let project = match &args.project {
            Some(key) => Some(super::item_id(tx, "project", key.as_str())?),
            None => None,
        };
        let agent = args.agent.as_ref().map(AgentName::as_str);
        if let Some(agent) = agent {
            crate::agents::AGENT.find(tx, "agent", &[agent])?;
        }
        let rows = views::ready(
            tx,
            agent,
            project.as_deref(),
            &levels,
            after.as_ref(),
            args.limit + 1,
        )?;
        let items = rows
            .iter()
            .map(views::listed)
            .collect::<Result<Vec<_>, _>>()?;
        // Room for the widest cursor before the items are counted in.
        let base = json!({"items": [], "next_cursor": "0".repeat(1_200)});
        let (items, more) = page(items, args.limit, &base, |_| String::new());
        let next = match (more, items.len().checked_sub(1).map(|i| &rows[i])) {
            (Some(_), Some(last)) => Some(cursor_of(last)?),
            _ => None,
        };
        Ok(page_result(items, next))
    })
}

/// The cursor after `row` (a [`views::ready`] row): its place in the queue.
fn cursor_of(row: &coremcp_store::Row) -> Result<String, coremcp_store::StoreError> {
    let (rank, undated) = (row.get_i64("rank_key")?, row.get_i64("undated_key")?);
    let texts = [
        row.get_text("due_key")?,
        row.get_text("created_key")?,
        row.get_text("key")?,
    ];
    Ok(encode_cursor(&[
        &rank.to_string(),
        &undated.to_string(),
        &texts[0],
        &texts[1],
        &texts[2],
    ]))
}

/// The queue place a cursor of this tool names.
fn read_cursor(cursor: &str) -> Result<views::ReadyKey, ToolError> {
    let parts = decode_cursor(cursor, 5)?;
    let number = |text: &str| {
        text.parse::<i64>().map_err(|_| {
            invalid(
                "cursor",
                "is not a cursor this tool returned (pass next_cursor unchanged)",
            )
        })
    };
    Ok(views::ReadyKey {
        rank: number(&parts[0])?,
        undated: number(&parts[1])?,
        due: parts[2].clone(),
        created: parts[3].clone(),
        key: parts[4].clone(),
    })
}
