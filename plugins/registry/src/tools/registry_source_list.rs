//! `registry_source_list`: sources by ref, filtered, keyset-paged, optionally with their
//! checkouts.

use coremcp_plugin_sdk::page::Paging;
use coremcp_plugin_sdk::{typed, Args, Ctx, Hints, Tool, ToolError};
use serde_json::Value;

use crate::args::{ProjectKey, Shown};
use crate::common::{ids, page_result, with_related, Order, Query, SERVICE};
use crate::project;
use crate::source::{self, Kind};

pub const TOOL: Tool = Tool::new(
    "registry_source_list",
    "List sources (git repos, docs repos, packages, service URLs) by ref \
        PROJECT/name, optionally with the hosts and paths where each is checked out. Default: \
        active sources only. Paged: pass next_cursor back as cursor.",
    &typed(handler),
)
.hints(Hints::READ);

#[derive(Debug, Args)]
pub struct List {
    /// only this project's sources (project key, e.g. CORE)
    project: Option<ProjectKey>,
    /// only sources of this kind
    kind: Option<Kind>,
    /// which sources (default active)
    #[arg(default = Shown::Active)]
    status: Shown,
    /// add checkouts: the hosts and paths where each source is cloned (default false)
    #[arg(default)]
    include_checkouts: bool,
    /// case-insensitive substring of the ref or the URL
    #[arg(min_len = 1, max_len = 200)]
    query: Option<String>,
    #[arg(flatten)]
    page: Paging,
}

fn handler(_: &Ctx<'_>, args: List) -> Result<Value, ToolError> {
    let order = Order {
        tag: "source",
        keys: &[("p.key", "project_key"), ("s.name", "name")],
    };
    let mut q = Query::new();
    if let Some(kind) = args.kind {
        q.eq("s.kind", kind.as_str());
    }
    if let Some(status) = args.status.status() {
        q.eq("s.status", status);
    }
    if let Some(text) = &args.query {
        q.contains(&["p.key || '/' || s.name", "s.url"], text);
    }
    order.after(&mut q, &args.page)?;
    SERVICE.run(|tx| {
        // The closure may run again (a busy store): start from the same filters each time.
        let mut q = q.clone();
        if let Some(key) = &args.project {
            q.eq("s.project_id", project::id(tx, "project", key.as_str())?);
        }
        let (rows, next) = order.page(tx, source::SELECT, &q, &args.page)?;
        let checkouts = match args.include_checkouts {
            true => Some(("checkouts", source::checkouts(tx, &ids(&rows)?)?)),
            false => None,
        };
        Ok(page_result(
            with_related(&rows, source::json, checkouts)?,
            next,
        ))
    })
}
