//! `registry_theme_list`: themes by key, filtered, keyset-paged.

use coremcp_plugin_sdk::page::Paging;
use coremcp_plugin_sdk::{typed, Args, Ctx, Hints, Tool, ToolError};
use serde_json::Value;

use crate::args::{Shown, ThemeKey};
use crate::common::{page_result, Order, Query, SERVICE};
use crate::theme;

pub const TOOL: Tool = Tool::new(
    "registry_theme_list",
    "List themes, the top-level groupings of projects, by key. Default: active \
        themes only. Paged: pass next_cursor back as cursor.",
    &typed(handler),
)
.hints(Hints::READ);

#[derive(Debug, Args)]
pub struct List {
    /// only the theme with exactly this key
    key: Option<ThemeKey>,
    /// which themes (default active)
    #[arg(default = Shown::Active)]
    status: Shown,
    /// case-insensitive substring of the key or name
    #[arg(min_len = 1, max_len = 200)]
    query: Option<String>,
    #[arg(flatten)]
    page: Paging,
}

fn handler(_: &Ctx<'_>, args: List) -> Result<Value, ToolError> {
    let order = Order {
        tag: "theme",
        keys: &[("key", "key")],
    };
    let mut q = Query::new();
    if let Some(key) = &args.key {
        q.eq("key", key.as_str());
    }
    if let Some(status) = args.status.status() {
        q.eq("status", status);
    }
    if let Some(text) = &args.query {
        q.contains(&["key", "name"], text);
    }
    order.after(&mut q, &args.page)?;
    let select = format!("SELECT {} FROM registry_theme", theme::FIELDS);
    SERVICE.run(|tx| {
        let (rows, next) = order.page(tx, &select, &q, &args.page)?;
        let items = rows.iter().map(theme::json).collect::<Result<_, _>>()?;
        Ok(page_result(items, next))
    })
}
