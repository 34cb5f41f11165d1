//! `notepad_get`: one note with its value and metadata; an absent or expired note is
//! `not_found` naming scope and key.

use coremcp_nervhq::SERVICE;
use coremcp_plugin_sdk::prelude::*;
use coremcp_store::plugin::now;
use coremcp_store::records::Record;

use super::{live, NoteRef};

pub const TOOL: Tool = Tool::new(
    "notepad_get",
    "Get one note: value, version, updated_at, updated_by, expires_at. Expired is not_found.",
    &typed(handler),
)
.hints(Hints::READ);

/// Built once: the statement is the same for every call.
static SQL: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "SELECT scope, key, value, version, updated_at, updated_by, expires_at FROM notepad_entry
         WHERE scope = $1 AND key = $2 AND {}",
        live("$3")
    )
});

fn handler(_: &Ctx<'_>, note: NoteRef) -> Result<Value, ToolError> {
    let (scope, key) = (note.scope.as_str(), note.key.as_str());
    let now = now();
    let note = SERVICE.read(|tx| {
        let Some(row) = tx.query_opt(&SQL, &[scope.into(), key.into(), now.as_str().into()])?
        else {
            return Ok(None);
        };
        let fields = "scope key value version:int updated_at:ts updated_by? expires_at?:ts";
        Ok(Some(Record::of(&row, fields)?.done()))
    })?;
    note.ok_or_else(|| {
        ToolError::new(
            codes::NOT_FOUND,
            format!("no note {scope}/{key} (it was never set, was deleted or has expired)"),
        )
    })
}
