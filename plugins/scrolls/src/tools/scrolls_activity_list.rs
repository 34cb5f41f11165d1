//! `scrolls_activity_list`: the change feed.

use coremcp_plugin_sdk::prelude::*;
use coremcp_plugin_sdk::time::Time;

use crate::args::{AgentName, ItemId};
use crate::{items, views, SERVICE};

pub const TOOL: Tool = Tool::typed("scrolls_activity_list", &typed(handler)).hints(Hints::READ);

/// Change feed, newest first, for an item's subtree or an agent.
#[derive(Debug, Args)]
pub struct Activity {
    /// its subtree, e.g. CORE-1
    scope: Option<ItemId>,
    /// only what this agent did
    agent: Option<AgentName>,
    /// RFC 3339
    since: Option<Time>,
    /// only these actions
    #[arg(max_items = 8)]
    actions: Vec<Action>,
    #[arg(flatten)]
    page: Paging,
}

/// An activity action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ArgEnum)]
pub enum Action {
    Created,
    Updated,
    Closed,
    Reopened,
    Moved,
    Claimed,
    Commented,
    Deleted,
}

fn handler(_: &Ctx<'_>, args: Activity) -> Result<Value, ToolError> {
    let actions: Vec<String> = args.actions.iter().map(|a| a.as_str().to_owned()).collect();
    let since = args.since.map(|t| t.stored());
    SERVICE.read(|tx| {
        let scope = match &args.scope {
            Some(key) => Some(views::Subtree::of(&items::find(
                tx,
                "scope",
                key.as_str(),
            )?)?),
            None => None,
        };
        let agent = args.agent.as_ref().map(AgentName::as_str);
        views::activity(
            tx,
            scope.as_ref(),
            agent,
            since.as_deref(),
            &actions,
            &args.page,
        )
    })
}
