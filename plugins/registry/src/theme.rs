//! Themes, the top-level groupings of projects: the record, its JSON and the lookups other
//! tools use.
//!
//! Invariants: a theme key matches `^[a-z0-9][a-z0-9-]{0,39}$` and never changes; a theme is
//! never deleted, only archived (projects and other services refer to its key).

use coremcp_store::plugin::{invalid, TxError};
use coremcp_store::{Row, StoreError, Tx};
use serde_json::Value;

use crate::common::{not_found, Record};

pub const FIELDS: &str = "id, key, name, description, status, version, created_at, updated_at";

pub fn json(row: &Row) -> Result<Value, StoreError> {
    Ok(Record::default()
        .set("key", row.get_text("key")?)
        .set("name", row.get_text("name")?)
        .opt("description", row.get_opt_text("description")?)
        .set("status", row.get_text("status")?)
        .stamps(row)?
        .done())
}

pub fn by_key(tx: &mut Tx<'_>, key: &str) -> Result<Option<Row>, StoreError> {
    tx.query_opt(
        &format!("SELECT {FIELDS} FROM registry_theme WHERE key = $1"),
        &[key.into()],
    )
}

pub fn what(key: &str) -> String {
    format!("theme \"{key}\"")
}

/// The id of the active theme `key`, which argument `field` names: a missing theme is
/// `not_found`, an archived one `invalid_arguments` (new work never lands in an archive).
pub fn active_id(tx: &mut Tx<'_>, field: &str, key: &str) -> Result<String, TxError> {
    let row = by_key(tx, key)?.ok_or_else(|| {
        not_found(
            field,
            format!(
                "there is no theme \"{key}\" (see registry_theme_list; add it with \
                 registry_theme_add)"
            ),
        )
    })?;
    if row.get_text("status")? != "active" {
        return Err(invalid(
            field,
            format!(
                "theme \"{key}\" is archived; re-activate it first (registry_theme_update \
                 status active)"
            ),
        )
        .into());
    }
    Ok(row.get_text("id")?)
}

/// The id of theme `key` in any status, for list filters; a missing one is `not_found`.
pub fn id(tx: &mut Tx<'_>, field: &str, key: &str) -> Result<String, TxError> {
    let row = by_key(tx, key)?.ok_or_else(|| {
        not_found(
            field,
            format!("there is no theme \"{key}\" (see registry_theme_list status all)"),
        )
    })?;
    Ok(row.get_text("id")?)
}
