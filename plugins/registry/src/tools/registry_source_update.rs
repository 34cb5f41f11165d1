//! `registry_source_update`: patch a source; `metadata` is merged (RFC 7386).

use coremcp_plugin_sdk::{typed, Args, Ctx, Hints, Tool, ToolError};
use coremcp_store::plugin::{json_text, json_value, now};
use serde_json::{Map, Value};

use crate::args::{Branch, Clearable, Description, SourceRef, Status, Url};
use crate::common::{check_expected, expected, guarded_update, SERVICE};
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
        let version = row.get_i64("version")?;
        check_expected(&what, version, expected)?;
        let old_url = row.get_text("url")?;
        let old_branch = row.get_text("default_branch")?;
        let old_description = row.get_opt_text("description")?;
        let old_metadata = json_value(row.get_opt_text("metadata")?);
        let old_status = row.get_text("status")?;
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
        let new_url = args.url.as_ref().map_or(old_url.as_str(), Url::as_str);
        let new_branch = args
            .default_branch
            .as_ref()
            .map_or(old_branch.as_str(), Branch::as_str);
        let new_description = match &args.description {
            Some(patch) => patch.value().map(Description::as_str),
            None => old_description.as_deref(),
        };
        let new_status: &str = args.status.map_or(&old_status, |s| s.as_str());
        if new_url == old_url
            && new_branch == old_branch
            && new_description == old_description.as_deref()
            && new_metadata == old_metadata
            && new_status == old_status
        {
            return Ok(source::json(&row)?);
        }
        let id = row.get_text("id")?;
        guarded_update(
            tx,
            "UPDATE registry_source SET url = $1, default_branch = $2, description = $3, \
             metadata = $4, status = $5, version = version + 1, updated_at = $6 \
             WHERE id = $7 AND version = $8",
            &[
                new_url.into(),
                new_branch.into(),
                new_description.into(),
                (!new_metadata.is_null())
                    .then(|| json_text(&new_metadata))
                    .into(),
                new_status.into(),
                now().into(),
                id.as_str().into(),
                version.into(),
            ],
            "registry_source",
            &id,
            &what,
            expected,
        )?;
        Ok(source::json(&source::find(tx, "source", source_ref)?)?)
    })
}
