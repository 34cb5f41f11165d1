//! `notepad_get`: one note with its value and metadata; an absent or expired note is
//! `not_found` naming scope and key.

use coremcp_nervhq::result::{put_opt, ts, ts_opt};
use coremcp_nervhq::SERVICE;
use coremcp_plugin_sdk::prelude::*;
use coremcp_store::plugin::now;

use super::{live, scope_and_key, NoteRef};

pub const TOOL: Tool = Tool::new(
    "notepad_get",
    "Get one note: its value, version, updated_at, updated_by and expires_at. An \
        expired note is absent (not_found) even before notepad_cleanup removes it.",
    &typed(handler),
)
.hints(Hints::READ);

fn handler(_: &Ctx<'_>, note: NoteRef) -> Result<Value, ToolError> {
    let (scope, key) = scope_and_key(&note.scope, &note.key)?;
    let now = now();
    let sql = format!(
        "SELECT value, version, updated_at, updated_by, expires_at FROM notepad_entry
         WHERE scope = $1 AND key = $2 AND {}",
        live("$3")
    );
    let note = SERVICE.run(|tx| {
        let Some(row) = tx.query_opt(&sql, &[scope.into(), key.into(), now.as_str().into()])?
        else {
            return Ok(None);
        };
        let mut map = Map::new();
        map.insert("scope".into(), scope.into());
        map.insert("key".into(), key.into());
        map.insert("value".into(), row.get_text("value")?.into());
        map.insert("version".into(), row.get_i64("version")?.into());
        map.insert("updated_at".into(), ts(&row, "updated_at")?.into());
        put_opt(&mut map, "updated_by", row.get_opt_text("updated_by")?);
        put_opt(&mut map, "expires_at", ts_opt(&row, "expires_at")?);
        Ok(Some(Value::Object(map)))
    })?;
    note.ok_or_else(|| {
        ToolError::new(
            codes::NOT_FOUND,
            format!("no note {scope}/{key} (it was never set, was deleted or has expired)"),
        )
    })
}
