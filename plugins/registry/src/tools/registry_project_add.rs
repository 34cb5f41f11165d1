//! `registry_project_add`: a new project, in an active theme if one is given.

use coremcp_plugin_sdk::{typed, Args, Ctx, Hints, Tool, ToolError};
use coremcp_store::plugin::{new_id, now};
use serde_json::Value;

use crate::args::{Description, Name, ProjectKey, ThemeKey};
use crate::common::{duplicate, SERVICE};
use crate::{project, theme};

pub const TOOL: Tool = Tool::new(
    "registry_project_add",
    "Add a project. Its key is permanent and is also the Scrolls item prefix \
        (CORE → CORE-42); an existing key is a conflict. The theme, if given, must exist and be \
        active. Set its docs source later with registry_project_update. Returns the project.",
    &typed(handler),
)
.hints(Hints::ADD);

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
    let key = args.key.as_str();
    SERVICE.run(|tx| {
        let theme_id = match &args.theme {
            Some(theme) => Some(theme::active_id(tx, "theme", theme.as_str())?),
            None => None,
        };
        let inserted = tx.query(
            "INSERT INTO registry_project (id, key, theme_id, name, description, \
             docs_source_id, status, version, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, NULL, 'active', 1, $6, $6) \
             ON CONFLICT (key) DO NOTHING RETURNING id",
            &[
                new_id().into(),
                key.into(),
                theme_id.into(),
                args.name.as_str().into(),
                args.description.as_ref().map(Description::as_str).into(),
                now().into(),
            ],
        )?;
        let row = project::by_key(tx, key)?.ok_or_else(|| project::missing("key", key))?;
        if inserted.is_empty() {
            return Err(duplicate(
                &format!("project \"{key}\""),
                row.get_i64("version")?,
                "change it with registry_project_update",
            )
            .into());
        }
        Ok(project::json(&row)?)
    })
}
