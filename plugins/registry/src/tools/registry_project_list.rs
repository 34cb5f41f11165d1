//! `registry_project_list`: projects by key, filtered, keyset-paged, optionally with their
//! active sources.

use coremcp_plugin_sdk::page::Paging;
use coremcp_plugin_sdk::{typed, Args, Ctx, Hints, Tool, ToolError};
use serde_json::Value;

use crate::args::{ProjectKey, Shown, ThemeKey};
use crate::common::{cursor, list_result, page, Query, SERVICE};
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
    let limit = args.page.limit;
    let mut q = Query::default();
    if let Some(key) = &args.key {
        q.eq("p.key", key.as_str());
    }
    if let Some(status) = args.status.status() {
        q.eq("p.status", status);
    }
    if let Some(text) = &args.query {
        q.contains(&["p.key", "p.name"], text);
    }
    if let Some(after) = cursor(&args.page, "project", 1)? {
        q.gt("p.key", after[0].as_str());
    }
    SERVICE.run(|tx| {
        // The closure may run again (a busy store): start from the same filters each time.
        let mut q = q.clone();
        if let Some(theme) = &args.theme {
            let id = theme::id(tx, "theme", theme.as_str())?;
            q.eq("p.theme_id", id);
        }
        let sql = format!(
            "{}{} ORDER BY p.key LIMIT {}",
            project::SELECT,
            q.where_sql(),
            limit + 1
        );
        let rows = tx.query(&sql, &q.params)?;
        let (rows, next) = page(rows, limit, "project", |r| Ok(vec![r.get_text("key")?]))?;
        let mut sources = if args.include_sources {
            let ids = rows
                .iter()
                .map(|r| r.get_text("id"))
                .collect::<Result<Vec<_>, _>>()?;
            source::active_by_project(tx, &ids)?
        } else {
            Default::default()
        };
        let mut items = Vec::with_capacity(rows.len());
        for row in &rows {
            let mut item = project::json(row)?;
            if args.include_sources {
                let list = sources.remove(&row.get_text("id")?).unwrap_or_default();
                item["sources"] = Value::Array(list);
            }
            items.push(item);
        }
        Ok(list_result(items, next))
    })
}
