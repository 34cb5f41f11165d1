//! `notepad_delete`: remove one note. An absent note is not an error (`deleted: false`); an
//! expired one is removed too, but counts as absent, so it also answers `deleted: false`.

use coremcp_nervhq::SERVICE;
use coremcp_plugin_api::sdk::{Args, Ctx, Tool};
use coremcp_plugin_api::{Runs, ToolError};
use coremcp_store::plugin::now_ms;
use serde_json::{json, Value};

use super::{expired, scope_and_key};

pub const TOOL: Tool = Tool {
    name: "notepad_delete",
    description: "Delete one note. Succeeds with deleted: false if the note is absent (or had \
        already expired).",
    input_schema: r#"{
        "type": "object",
        "properties": {
            "scope": {"type": "string", "description": "global, project:<KEY>, agent:<name>, session:<id> or host:<name>"},
            "key": {"type": "string", "description": "the note's key"}
        },
        "required": ["scope", "key"],
        "additionalProperties": false
    }"#,
    annotations: coremcp_nervhq::DESTRUCTIVE_IDEMPOTENT,
    runs: Runs::Forwarded,
    remote_host: true,
    feature: None,
    handler,
};

fn handler(_: &Ctx<'_>, args: Args) -> Result<Value, ToolError> {
    let (scope, key) = scope_and_key(&args)?;
    let at = now_ms();
    let deleted = SERVICE.run(|tx| {
        let row = tx.query_opt(
            "DELETE FROM notepad_entry WHERE scope = $1 AND key = $2 RETURNING expires_at",
            &[scope.into(), key.into()],
        )?;
        Ok(match row {
            Some(row) => !expired(row.get_opt_text("expires_at")?.as_deref(), at),
            None => false,
        })
    })?;
    Ok(json!({"scope": scope, "key": key, "deleted": deleted}))
}
