//! `registry_source_update`: patch a source; `metadata` is merged (RFC 7386).

use coremcp_plugin_sdk::prelude::*;
use coremcp_store::plugin::{json_text, json_value};

use crate::args::{Branch, Description, SourceRef, Status, Url};
use crate::common::SERVICE;
use crate::source::{self, SOURCE};

pub const TOOL: Tool =
    Tool::typed("registry_source_update", &typed(handler)).hints(Hints::IDEMPOTENT);

/// Patch a source: only the fields you pass change; metadata is merged (a null member removes that
/// key); archive it with status archived (sources are never deleted). With expected_version, a
/// source that changed since you read it is a conflict naming its current version. A patch that
/// changes nothing is a no-op. Returns the source.
#[derive(Debug, Args)]
pub struct Update {
    /// source ref PROJECT/name, e.g. CORE/core-mcp
    #[arg(min_len = 1)]
    source: SourceRef,
    /// new URL
    #[arg(min_len = 1, max_len = 2000)]
    url: Option<Url>,
    /// new default branch
    #[arg(min_len = 1, max_len = 255)]
    default_branch: Option<Branch>,
    /// new description ("" clears it)
    #[arg(max_len = 4000)]
    description: Option<Clearable<Description>>,
    /// merged into the stored metadata (RFC 7386: a null member removes that key)
    metadata: Option<Map<String, Value>>,
    /// archive or re-activate
    status: Option<Status>,
    /// the version you read; refused with conflict if the source is at another
    #[arg(min = 1)]
    expected_version: Option<u64>,
}

fn handler(_: &Ctx<'_>, args: Update) -> Result<Value, ToolError> {
    let metadata = args.metadata.map(Value::Object);
    SERVICE.run(|tx| {
        SOURCE.update(
            tx,
            "source",
            &args.source.key(),
            args.expected_version,
            |_, row| {
                let old = json_value(row.get_opt_text("metadata")?);
                let mut new = old.clone();
                if let Some(patch) = &metadata {
                    source::merge_patch(&mut new, patch);
                }
                // An emptied object is stored as no metadata at all.
                if new.as_object().is_some_and(Map::is_empty) {
                    new = Value::Null;
                }
                if !new.is_null() {
                    source::check_metadata_size(&new)?;
                }
                // Compared as JSON: the store may keep another spelling of the same object.
                let metadata =
                    (new != old).then(|| (!new.is_null()).then(|| json_text(&new)).into());
                Ok(vec![
                    ("url", args.url.as_ref().map(Into::into)),
                    (
                        "default_branch",
                        args.default_branch.as_ref().map(Into::into),
                    ),
                    (
                        "description",
                        args.description.as_ref().map(|c| c.value().into()),
                    ),
                    ("metadata", metadata),
                    ("status", args.status.map(Into::into)),
                ])
            },
        )
    })
}
