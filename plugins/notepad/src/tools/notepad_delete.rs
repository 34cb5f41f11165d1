//! `notepad_delete`: remove one note. An absent note is not an error (`deleted: false`); an
//! expired one is removed too, but counts as absent, so it also answers `deleted: false`.

use coremcp_nervhq::SERVICE;
use coremcp_plugin_sdk::prelude::*;
use coremcp_store::plugin::now_ms;

use super::{expired, NoteRef};

pub const TOOL: Tool = Tool::new(
    "notepad_delete",
    "Delete one note; deleted: false if it was absent.",
    &typed(handler),
)
.hints(Hints::DESTRUCTIVE_IDEMPOTENT);

fn handler(_: &Ctx<'_>, note: NoteRef) -> Result<Value, ToolError> {
    let (scope, key) = (note.scope.as_str(), note.key.as_str());
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
