//! `registry_source_list`: sources by ref, filtered, keyset-paged, optionally with their
//! checkouts.

use std::collections::HashMap;

use coremcp_plugin_sdk::page::Paging;
use coremcp_plugin_sdk::{typed, Args, Ctx, Hints, Tool, ToolError};
use serde_json::Value;

use crate::args::{ProjectKey, Shown};
use crate::common::{cursor, list_result, page, Query, SERVICE};
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
    let limit = args.page.limit;
    let mut q = Query::default();
    if let Some(kind) = args.kind {
        q.eq("s.kind", kind.as_str());
    }
    if let Some(status) = args.status.status() {
        q.eq("s.status", status);
    }
    if let Some(text) = &args.query {
        q.contains(&["p.key || '/' || s.name", "s.url"], text);
    }
    if let Some(after) = cursor(&args.page, "source", 2)? {
        let key = q.bind(after[0].as_str());
        let name = q.bind(after[1].as_str());
        q.and(format!(
            "(p.key > {key} OR (p.key = {key} AND s.name > {name}))"
        ));
    }
    SERVICE.run(|tx| {
        // The closure may run again (a busy store): start from the same filters each time.
        let mut q = q.clone();
        if let Some(key) = &args.project {
            let id = project::id(tx, "project", key.as_str())?;
            q.eq("s.project_id", id);
        }
        let sql = format!(
            "{}{} ORDER BY p.key, s.name LIMIT {}",
            source::SELECT,
            q.where_sql(),
            limit + 1
        );
        let rows = tx.query(&sql, &q.params)?;
        let (rows, next) = page(rows, limit, "source", |r| {
            Ok(vec![r.get_text("project_key")?, r.get_text("name")?])
        })?;
        let mut found = if args.include_checkouts {
            let ids = rows
                .iter()
                .map(|r| r.get_text("id"))
                .collect::<Result<Vec<_>, _>>()?;
            source::checkouts(tx, &ids)?
        } else {
            HashMap::new()
        };
        let mut items = Vec::with_capacity(rows.len());
        for row in &rows {
            let mut item = source::json(row)?;
            if args.include_checkouts {
                let list = found.remove(&row.get_text("id")?).unwrap_or_default();
                item["checkouts"] = Value::Array(list);
            }
            items.push(item);
        }
        Ok(list_result(items, next))
    })
}
