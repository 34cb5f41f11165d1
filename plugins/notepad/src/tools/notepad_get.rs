//! `notepad_get`: one note with its value and metadata; an absent or expired note is
//! `not_found` naming scope and key. A value whose escaped JSON outgrows the answer is cut
//! with `value_truncated`, `value_total_chars` and `value_next_offset` (its `offset`).

use coremcp_nervhq::SERVICE;
use coremcp_plugin_sdk::budget;
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

/// One note, its value read from a character offset.
#[derive(Debug, Args)]
pub struct Get {
    #[arg(flatten)]
    note: NoteRef,
    /// value from this char
    #[arg(min = 0, default = 0)]
    offset: usize,
}

fn handler(_: &Ctx<'_>, get: Get) -> Result<Value, ToolError> {
    let (note, offset) = (get.note, get.offset);
    let (scope, key) = (note.scope.as_str(), note.key.as_str());
    let now = now();
    let note = SERVICE.read(|tx| {
        let Some(row) = tx.query_opt(&SQL, &[scope.into(), key.into(), now.as_str().into()])?
        else {
            return Ok(None);
        };
        let fields = "scope key value version:int updated_at:ts updated_by? expires_at?:ts";
        // A value escapes to more characters than it has (stored JSON doubles its quotes):
        // what does not fit is read on from value_next_offset.
        let mut note = Record::of(&row, fields)?.done();
        budget::fit_fields(&mut note, &[("value", offset)], budget::result_budget());
        Ok(Some(note))
    })?;
    note.ok_or_else(|| {
        ToolError::new(
            codes::NOT_FOUND,
            format!("no note {scope}/{key} (it was never set, was deleted or has expired)"),
        )
    })
}
