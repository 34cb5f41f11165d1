//! `scrolls_agent_list`: agents with their open-work counts.

use coremcp_plugin_sdk::prelude::*;
use coremcp_store::query::Query;
use coremcp_store::BackendKind;

use crate::agents::AGENT;
use crate::args::Token;
use crate::SERVICE;

pub const TOOL: Tool = Tool::typed("scrolls_agent_list", &typed(handler)).hints(Hints::READ);

/// List agents with their count of open items. Default: active.
#[derive(Debug, Args)]
pub struct List {
    /// default active
    #[arg(default = Shown::Active)]
    status: Shown,
    /// with this capability
    capability: Option<Token>,
    #[arg(flatten)]
    page: Paging,
}

/// Which agents a list shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ArgEnum)]
pub enum Shown {
    Active,
    Paused,
    Retired,
    All,
}

fn handler(_: &Ctx<'_>, args: List) -> Result<Value, ToolError> {
    SERVICE.read(|tx| {
        let mut q = Query::new();
        q.eq_opt(
            "a.status",
            (args.status != Shown::All).then(|| args.status.as_str()),
        );
        if let Some(capability) = &args.capability {
            let p = q.bind(capability.as_str());
            q.and(match tx.kind() {
                BackendKind::Sqlite => format!(
                    "EXISTS (SELECT 1 FROM json_each(a.capabilities) c WHERE c.value = {p})"
                ),
                BackendKind::Postgres => {
                    format!("a.capabilities @> jsonb_build_array(CAST({p} AS TEXT))")
                }
            });
        }
        Ok(crate::agents::listed(AGENT.list(tx, &q, &args.page, None)?))
    })
}
