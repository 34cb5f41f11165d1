//! `registry_theme_update`: patch a theme; only the fields given change.

use coremcp_plugin_sdk::{typed, Args, Ctx, Hints, Tool, ToolError};
use coremcp_store::plugin::now;
use coremcp_store::StoreError;
use serde_json::Value;

use crate::args::{Clearable, Description, Name, Status, ThemeKey};
use crate::common::{check_expected, expected, guarded_update, not_found, SERVICE};
use crate::theme;

pub const TOOL: Tool = Tool::new(
    "registry_theme_update",
    "Patch a theme: only the fields you pass change; archive it with status \
        archived (themes are never deleted). With expected_version, a theme that changed since \
        you read it is a conflict naming its current version. A patch that changes nothing is \
        a no-op. Returns the theme.",
    &typed(handler),
)
.hints(Hints::IDEMPOTENT);

#[derive(Debug, Args)]
pub struct Update {
    /// the theme's key
    #[arg(min_len = 1)]
    key: ThemeKey,
    /// new display name
    #[arg(min_len = 1, max_len = 200)]
    name: Option<Name>,
    /// new description ("" clears it)
    #[arg(max_len = 4000)]
    description: Option<Clearable<Description>>,
    /// archive or re-activate
    status: Option<Status>,
    /// the version you read; refused with conflict if the theme is at another
    #[arg(min = 1)]
    expected_version: Option<u64>,
}

fn handler(_: &Ctx<'_>, args: Update) -> Result<Value, ToolError> {
    let key = args.key.as_str();
    let expected = expected(args.expected_version);
    let what = theme::what(key);
    SERVICE.run(|tx| {
        let row = theme::by_key(tx, key)?.ok_or_else(|| {
            not_found(
                "key",
                format!("there is no theme \"{key}\" (see registry_theme_list)"),
            )
        })?;
        let version = row.get_i64("version")?;
        check_expected(&what, version, expected)?;
        let old_name = row.get_text("name")?;
        let old_description = row.get_opt_text("description")?;
        let old_status = row.get_text("status")?;
        let new_name = args.name.as_ref().map_or(old_name.as_str(), Name::as_str);
        let new_description = match &args.description {
            Some(patch) => patch.value().map(Description::as_str),
            None => old_description.as_deref(),
        };
        let new_status: &str = args.status.map_or(&old_status, |s| s.as_str());
        if new_name == old_name
            && new_description == old_description.as_deref()
            && new_status == old_status
        {
            return Ok(theme::json(&row)?);
        }
        let id = row.get_text("id")?;
        guarded_update(
            tx,
            "UPDATE registry_theme SET name = $1, description = $2, status = $3, \
             version = version + 1, updated_at = $4 WHERE id = $5 AND version = $6",
            &[
                new_name.into(),
                new_description.into(),
                new_status.into(),
                now().into(),
                id.as_str().into(),
                version.into(),
            ],
            "registry_theme",
            &id,
            &what,
            expected,
        )?;
        let row = theme::by_key(tx, key)?.ok_or_else(|| StoreError::NotFound(what.clone()))?;
        Ok(theme::json(&row)?)
    })
}
