//! `registry_theme_add`: a new theme; an existing key is a conflict.

use coremcp_plugin_sdk::{typed, Args, Ctx, Hints, Tool, ToolError};
use coremcp_store::plugin::{new_id, now};
use serde_json::Value;

use crate::args::{Description, Name, ThemeKey};
use crate::common::{duplicate, SERVICE};
use crate::theme;

pub const TOOL: Tool = Tool::new(
    "registry_theme_add",
    "Add a theme record (a top-level grouping of projects). The key is permanent; \
        an existing key is a conflict. Returns the theme.",
    &typed(handler),
)
.hints(Hints::ADD);

#[derive(Debug, Args)]
pub struct Add {
    /// permanent slug ^[a-z0-9][a-z0-9-]{0,39}$, e.g. reliability
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
    let key = args.key.as_str();
    SERVICE.run(|tx| {
        let inserted = tx.query(
            &format!(
                "INSERT INTO registry_theme \
                 (id, key, name, description, status, version, created_at, updated_at) \
                 VALUES ($1, $2, $3, $4, 'active', 1, $5, $5) \
                 ON CONFLICT (key) DO NOTHING RETURNING {}",
                theme::FIELDS
            ),
            &[
                new_id().into(),
                key.into(),
                args.name.as_str().into(),
                args.description.as_ref().map(Description::as_str).into(),
                now().into(),
            ],
        )?;
        match inserted.first() {
            Some(row) => Ok(theme::json(row)?),
            None => {
                let version = theme::by_key(tx, key)?.map_or(Ok(0), |r| r.get_i64("version"))?;
                let hint = "change it with registry_theme_update";
                Err(duplicate(&theme::what(key), version, hint).into())
            }
        }
    })
}
