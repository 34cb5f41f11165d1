//! `registry_theme_update`: patch a theme; only the fields given change.

use crate::args::{Description, Name, Status, ThemeKey};
use crate::common::SERVICE;
use crate::theme::THEME;
use coremcp_plugin_sdk::prelude::*;

pub const TOOL: Tool =
    Tool::typed("registry_theme_update", &typed(handler)).hints(Hints::IDEMPOTENT);

/// Patch a theme: only given fields change; archive with status archived. Returns the theme.
#[derive(Debug, Args)]
pub struct Update {
    /// the theme's key
    #[arg(min_len = 1)]
    key: ThemeKey,
    /// new display name
    #[arg(min_len = 1, max_len = 200)]
    name: Option<Name>,
    /// "" clears it
    #[arg(max_len = 4000)]
    description: Option<Clearable<Description>>,
    /// archive or re-activate
    status: Option<Status>,
    /// version read
    #[arg(min = 1)]
    expected_version: Option<u64>,
}

fn handler(_: &Ctx<'_>, args: Update) -> Result<Value, ToolError> {
    let key = [args.key.as_str()];
    SERVICE.run(|tx| {
        THEME.update(tx, "key", &key, args.expected_version, |_, _| {
            Ok(vec![
                ("name", args.name.as_ref().map(Into::into)),
                (
                    "description",
                    args.description.as_ref().map(|c| c.value().into()),
                ),
                ("status", args.status.map(Into::into)),
            ])
        })
    })
}
