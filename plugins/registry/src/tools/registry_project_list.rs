//! `registry_project_list`: projects by key, filtered, keyset-paged, optionally with their
//! active sources.

use crate::args::{ProjectKey, Shown, ThemeKey};
use crate::common::{Query, Relate, SERVICE};
use crate::project::PROJECT;
use crate::source;
use crate::theme::THEME;
use coremcp_plugin_sdk::prelude::*;

pub const TOOL: Tool = Tool::typed("registry_project_list", &typed(handler)).hints(Hints::READ);

/// List projects by key with theme, docs source and source count. Default: active.
#[derive(Debug, Args)]
pub struct List {
    /// exact key
    key: Option<ProjectKey>,
    /// theme key
    theme: Option<ThemeKey>,
    /// default active
    #[arg(default = Shown::Active)]
    status: Shown,
    /// add active sources
    #[arg(default)]
    include_sources: bool,
    /// substring of key or name
    #[arg(min_len = 1, max_len = 200)]
    query: Option<String>,
    #[arg(flatten)]
    page: Paging,
}

fn handler(_: &Ctx<'_>, args: List) -> Result<Value, ToolError> {
    let mut q = Query::new();
    q.eq_opt("p.key", args.key.as_ref().map(ProjectKey::as_str));
    q.eq_opt("p.status", args.status.status());
    q.contains(&["p.key", "p.name"], args.query.as_deref());
    let sources = args
        .include_sources
        .then_some(("sources", source::active_by_project as Relate));
    SERVICE.read(|tx| {
        // The closure may run again (a busy store): start from the same filters each time.
        let mut q = q.clone();
        if let Some(theme) = &args.theme {
            q.eq(
                "p.theme_id",
                THEME.id(tx, "theme", &[theme.as_str()], false)?,
            );
        }
        PROJECT.list(tx, &q, &args.page, sources)
    })
}
