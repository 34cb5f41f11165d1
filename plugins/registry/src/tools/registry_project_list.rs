//! `registry_project_list`: projects by key, filtered, keyset-paged, optionally with their
//! active sources.

use coremcp_plugin_sdk::page::Paging;
use coremcp_plugin_sdk::{typed, Args, Ctx, Hints, Tool, ToolError};
use serde_json::Value;

use crate::args::{ProjectKey, Shown, ThemeKey};
use crate::common::{ids, page_result, with_related, Order, Query, SERVICE};
use crate::{project, source, theme};

pub const TOOL: Tool = Tool::new(
    "registry_project_list",
    "List projects by key, each with its theme, docs source and count of active \
        sources; include_sources adds those sources. Default: active projects only. Paged: \
        pass next_cursor back as cursor.",
    &typed(handler),
)
.hints(Hints::READ);

#[derive(Debug, Args)]
pub struct List {
    /// only the project with exactly this key
    key: Option<ProjectKey>,
    /// only projects of this theme (theme key)
    theme: Option<ThemeKey>,
    /// which projects (default active)
    #[arg(default = Shown::Active)]
    status: Shown,
    /// add each project's active sources (default false)
    #[arg(default)]
    include_sources: bool,
    /// case-insensitive substring of the key or name
    #[arg(min_len = 1, max_len = 200)]
    query: Option<String>,
    #[arg(flatten)]
    page: Paging,
}

fn handler(_: &Ctx<'_>, args: List) -> Result<Value, ToolError> {
    let order = Order {
        tag: "project",
        keys: &[("p.key", "key")],
    };
    let mut q = Query::new();
    if let Some(key) = &args.key {
        q.eq("p.key", key.as_str());
    }
    if let Some(status) = args.status.status() {
        q.eq("p.status", status);
    }
    if let Some(text) = &args.query {
        q.contains(&["p.key", "p.name"], text);
    }
    order.after(&mut q, &args.page)?;
    SERVICE.run(|tx| {
        // The closure may run again (a busy store): start from the same filters each time.
        let mut q = q.clone();
        if let Some(theme) = &args.theme {
            q.eq("p.theme_id", theme::id(tx, "theme", theme.as_str())?);
        }
        let (rows, next) = order.page(tx, project::SELECT, &q, &args.page)?;
        let sources = match args.include_sources {
            true => Some(("sources", source::active_by_project(tx, &ids(&rows)?)?)),
            false => None,
        };
        Ok(page_result(
            with_related(&rows, project::json, sources)?,
            next,
        ))
    })
}
