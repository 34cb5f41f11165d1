//! `registry_theme_add`: a new theme; an existing key is a conflict.

use crate::args::{Description, Name, ThemeKey};
use crate::common::SERVICE;
use crate::theme::THEME;
use coremcp_plugin_sdk::prelude::*;

pub const TOOL: Tool = Tool::typed("registry_theme_add", &typed(handler)).hints(Hints::ADD);

/// Add a theme (a top-level grouping of projects); its key is permanent.
#[derive(Debug, Args)]
pub struct Add {
    /// permanent ^[a-z0-9][a-z0-9-]{0,39}$, e.g. reliability
    #[arg(min_len = 1)]
    key: ThemeKey,
    /// display name
    #[arg(min_len = 1, max_len = 200)]
    name: Name,
    /// what the theme covers
    #[arg(max_len = 4000)]
    description: Option<Description>,
}

fn handler(_: &Ctx<'_>, args: Add) -> Result<Value, ToolError> {
    let columns = [
        ("key", (&args.key).into()),
        ("name", (&args.name).into()),
        ("description", args.description.as_ref().into()),
        ("status", "active".into()),
    ];
    SERVICE.run(|tx| Ok(THEME.json(&THEME.add(tx, &[args.key.as_str()], &columns)?)?))
}
