//! `registry_source_list`: sources by ref, filtered, keyset-paged, optionally with their
//! checkouts.

use crate::args::{ProjectKey, Shown};
use crate::common::{Query, Relate, SERVICE};
use crate::project::PROJECT;
use crate::source::{self, Kind, SOURCE};
use coremcp_plugin_sdk::prelude::*;

pub const TOOL: Tool = Tool::typed("registry_source_list", &typed(handler)).hints(Hints::READ);

/// List sources (git, docs, packages, services) by ref PROJECT/name, optionally with checkouts.
/// Default: active.
#[derive(Debug, Args)]
pub struct List {
    /// project key
    project: Option<ProjectKey>,
    /// only sources of this kind
    kind: Option<Kind>,
    /// default active
    #[arg(default = Shown::Active)]
    status: Shown,
    /// add where each is checked out
    #[arg(default)]
    include_checkouts: bool,
    /// substring of ref or URL
    #[arg(min_len = 1, max_len = 200)]
    query: Option<String>,
    #[arg(flatten)]
    page: Paging,
}

fn handler(_: &Ctx<'_>, args: List) -> Result<Value, ToolError> {
    let mut q = Query::new();
    q.eq_opt("s.kind", args.kind.map(Kind::as_str));
    q.eq_opt("s.status", args.status.status());
    q.contains(&["p.key || '/' || s.name", "s.url"], args.query.as_deref());
    let checkouts = args
        .include_checkouts
        .then_some(("checkouts", source::checkouts as Relate));
    SERVICE.read(|tx| {
        // The closure may run again (a busy store): start from the same filters each time.
        let mut q = q.clone();
        if let Some(key) = &args.project {
            q.eq(
                "s.project_id",
                PROJECT.id(tx, "project", &[key.as_str()], false)?,
            );
        }
        SOURCE.list(tx, &q, &args.page, checkouts)
    })
}
