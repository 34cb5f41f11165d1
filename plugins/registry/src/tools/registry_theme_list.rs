//! `registry_theme_list`: themes by key, filtered, keyset-paged.

use crate::args::{Shown, ThemeKey};
use crate::common::{Query, SERVICE};
use crate::theme::THEME;
use coremcp_plugin_sdk::prelude::*;

pub const TOOL: Tool = Tool::typed("registry_theme_list", &typed(handler)).hints(Hints::READ);

/// List themes (top-level groupings of projects). Default: active.
#[derive(Debug, Args)]
pub struct List {
    /// exact key
    key: Option<ThemeKey>,
    /// default active
    #[arg(default = Shown::Active)]
    status: Shown,
    /// substring of key or name
    #[arg(min_len = 1, max_len = 200)]
    query: Option<String>,
    #[arg(flatten)]
    page: Paging,
}

fn handler(_: &Ctx<'_>, args: List) -> Result<Value, ToolError> {
    let mut q = Query::new();
    q.eq_opt("key", args.key.as_ref().map(ThemeKey::as_str));
    q.eq_opt("status", args.status.status());
    q.contains(&["key", "name"], args.query.as_deref());
    SERVICE.read(|tx| THEME.list(tx, &q, &args.page, None))
}
