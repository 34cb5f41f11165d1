//! `registry_project_add`: a new project, in an active theme if one is given.

use crate::args::{Description, Name, ProjectKey, ThemeKey};
use crate::common::SERVICE;
use crate::project::PROJECT;
use crate::theme::THEME;
use coremcp_plugin_sdk::prelude::*;

pub const TOOL: Tool = Tool::typed("registry_project_add", &typed(handler)).hints(Hints::ADD);

/// Add a project. Its key is permanent and prefixes its Scrolls items (CORE-42).
#[derive(Debug, Args)]
pub struct Add {
    /// ^[A-Z][A-Z0-9]{1,9}$, e.g. CORE
    #[arg(min_len = 1)]
    key: ProjectKey,
    /// display name
    #[arg(min_len = 1, max_len = 200)]
    name: Name,
    /// theme key it belongs to
    #[arg(min_len = 1)]
    theme: Option<ThemeKey>,
    /// what the project is
    #[arg(max_len = 4000)]
    description: Option<Description>,
}

fn handler(_: &Ctx<'_>, args: Add) -> Result<Value, ToolError> {
    SERVICE.run(|tx| {
        let theme_id = match &args.theme {
            Some(theme) => Some(THEME.id(tx, "theme", &[theme.as_str()], true)?),
            None => None,
        };
        let columns = [
            ("key", (&args.key).into()),
            ("theme_id", theme_id.into()),
            ("name", (&args.name).into()),
            ("description", args.description.as_ref().into()),
            ("status", "active".into()),
        ];
        Ok(PROJECT.json(&PROJECT.add(tx, &[args.key.as_str()], &columns)?)?)
    })
}
