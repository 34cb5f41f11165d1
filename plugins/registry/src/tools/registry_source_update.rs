//! `registry_source_update`: patch a source; `metadata` is merged (RFC 7386).

use coremcp_plugin_sdk::{typed, Args, Ctx, Hints, Tool, ToolError};
use coremcp_store::plugin::{json_text, json_value};
use serde_json::{Map, Value};

use crate::args::{Branch, Clearable, Description, SourceRef, Status, Url};
use crate::common::{check_expected, expected, patch, SERVICE};
use crate::source;

pub const TOOL: Tool = Tool::new(
    "registry_source_update",
    "Patch a source: only the fields you pass change; metadata is merged (a null \
        member removes that key); archive it with status archived (sources are never deleted). \
        With expected_version, a source that changed since you read it is a conflict naming \
        its current version. A patch that changes nothing is a no-op. Returns the source.",
    &typed(handler),
)
.hints(Hints::IDEMPOTENT);

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
    let source_ref = args.source.as_str();
    let metadata = args.metadata.map(Value::Object);
    let expected = expected(args.expected_version);
    let what = format!("source \"{source_ref}\"");
    SERVICE.run(|tx| {
        let row = source::find(tx, "source", source_ref)?;
        check_expected(&what, row.get_i64("version")?, expected)?;
        let old_metadata = json_value(row.get_opt_text("metadata")?);
        let new_metadata = match &metadata {
            Some(patch) => {
                let mut merged = old_metadata.clone();
                source::merge_patch(&mut merged, patch);
                // An emptied object is stored as no metadata at all.
                match merged {
                    Value::Object(m) if m.is_empty() => Value::Null,
                    other => other,
                }
            }
            None => old_metadata.clone(),
        };
        if !new_metadata.is_null() {
            source::check_metadata_size(&new_metadata)?;
        }
        // Compared as JSON: the store may keep another spelling of the same object.
        let metadata = (new_metadata != old_metadata).then(|| {
            (!new_metadata.is_null())
                .then(|| json_text(&new_metadata))
                .into()
        });
        let changes = vec![
            ("url", args.url.as_ref().map(Into::into)),
            (
                "default_branch",
                args.default_branch.as_ref().map(Into::into),
            ),
            (
                "description",
                args.description.as_ref().map(Clearable::param),
            ),
            ("metadata", metadata),
            ("status", args.status.map(|s| s.as_str().into())),
        ];
        if !patch(tx, "registry_source", &row, &what, expected, changes)? {
            return Ok(source::json(&row)?);
        }
        Ok(source::json(&source::find(tx, "source", source_ref)?)?)
    })
}
