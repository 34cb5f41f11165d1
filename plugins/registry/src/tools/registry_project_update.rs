//! `registry_project_update`: patch a project, including which of its sources holds its docs.

use coremcp_plugin_sdk::prelude::*;
use coremcp_store::plugin::{invalid, TxError};
use coremcp_store::{Param, Tx};

use crate::args::{Description, Name, ProjectKey, SourceRef, Status, ThemeKey};
use crate::common::SERVICE;
use crate::project::PROJECT;
use crate::source::SOURCE;
use crate::theme::THEME;

pub const TOOL: Tool =
    Tool::typed("registry_project_update", &typed(handler)).hints(Hints::IDEMPOTENT);

/// Patch a project (including its docs source): only given fields change; archive with status
/// archived.
#[derive(Debug, Args)]
pub struct Update {
    /// the project's key
    #[arg(min_len = 1)]
    key: ProjectKey,
    /// new display name
    #[arg(min_len = 1, max_len = 200)]
    name: Option<Name>,
    /// theme key ("" removes)
    theme: Option<Clearable<ThemeKey>>,
    /// "" clears it
    #[arg(max_len = 4000)]
    description: Option<Clearable<Description>>,
    /// its docs-kind source ref ("" clears)
    docs_source: Option<Clearable<SourceRef>>,
    /// archive or re-activate
    status: Option<Status>,
    /// version read
    #[arg(min = 1)]
    expected_version: Option<u64>,
}

/// The id of the source `docs_ref` if it can hold the docs of project `key`: an active
/// `docs`-kind source of that same project.
fn docs_source_id(tx: &mut Tx<'_>, key: &str, docs_ref: &SourceRef) -> Result<String, TxError> {
    let field = "docs_source";
    let (project, _) = docs_ref.parts();
    let docs = docs_ref.as_str();
    let problem = if project != key {
        format!(
            "\"{docs}\" belongs to project {project}, not {key}: a project's docs source is \
             one of its own sources"
        )
    } else {
        let row = SOURCE.find(tx, field, &docs_ref.key())?;
        match row.get_text("kind")?.as_str() {
            "docs" => return SOURCE.id(tx, field, &docs_ref.key(), true),
            kind => format!(
                "\"{docs}\" is a {kind} source; the docs source must be of kind docs (add one \
                 with registry_source_add kind docs)"
            ),
        }
    };
    Err(invalid(field, problem).into())
}

fn handler(_: &Ctx<'_>, args: Update) -> Result<Value, ToolError> {
    let key = args.key.as_str();
    SERVICE.run(|tx| {
        PROJECT.update(tx, "key", &[key], args.expected_version, |tx, row| {
            let theme = match args.theme.as_ref().map(Clearable::value) {
                // Keeping the theme it has needs no check, even if that theme was archived since.
                Some(Some(theme))
                    if row.get_opt_text("theme_key")?.as_deref() == Some(theme.as_str()) =>
                {
                    None
                }
                Some(Some(theme)) => Some(THEME.id(tx, "theme", &[theme.as_str()], true)?.into()),
                Some(None) => Some(Param::Null),
                None => None,
            };
            let docs = match args.docs_source.as_ref().map(Clearable::value) {
                Some(Some(docs)) => Some(docs_source_id(tx, key, docs)?.into()),
                Some(None) => Some(Param::Null),
                None => None,
            };
            Ok(vec![
                ("name", args.name.as_ref().map(Into::into)),
                (
                    "description",
                    args.description.as_ref().map(|c| c.value().into()),
                ),
                ("theme_id", theme),
                ("docs_source_id", docs),
                ("status", args.status.map(Into::into)),
            ])
        })
    })
}
