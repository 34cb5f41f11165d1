//! Projects: the record, its JSON and the lookups other tools use.
//!
//! Invariants:
//! - A project key matches `^[A-Z][A-Z0-9]{1,9}$` and never changes: it is also the Scrolls
//!   item prefix (`CORE-42`), and other services refer to it.
//! - `docs_source`, when set, is an active `docs`-kind source of the same project. The store
//!   has no foreign key for it (project and source refer to each other), so
//!   `registry_project_update` is the only place that writes it, and it checks.
//! - A project is never deleted, only archived.

use coremcp_plugin_sdk::ToolError;
use coremcp_store::plugin::{invalid, TxError};
use coremcp_store::{Row, StoreError, Tx};
use serde_json::Value;

use crate::common::{not_found, Record};

/// A project row with its theme key, docs source ref parts and active-source count.
pub const SELECT: &str = "SELECT p.id, p.key, p.name, p.description, p.status, p.version, \
    p.created_at, p.updated_at, p.theme_id, p.docs_source_id, t.key AS theme_key, \
    dp.key AS docs_project_key, ds.name AS docs_source_name, \
    (SELECT COUNT(*) FROM registry_source c \
     WHERE c.project_id = p.id AND c.status = 'active') AS source_count \
    FROM registry_project p \
    LEFT JOIN registry_theme t ON t.id = p.theme_id \
    LEFT JOIN registry_source ds ON ds.id = p.docs_source_id \
    LEFT JOIN registry_project dp ON dp.id = ds.project_id";

pub fn json(row: &Row) -> Result<Value, StoreError> {
    let docs_source = match (
        row.get_opt_text("docs_project_key")?,
        row.get_opt_text("docs_source_name")?,
    ) {
        (Some(project), Some(name)) => Some(format!("{project}/{name}")),
        _ => None,
    };
    Ok(Record::default()
        .set("key", row.get_text("key")?)
        .set("name", row.get_text("name")?)
        .opt("description", row.get_opt_text("description")?)
        .opt("theme", row.get_opt_text("theme_key")?)
        .opt("docs_source", docs_source)
        .set("source_count", row.get_i64("source_count")?)
        .set("status", row.get_text("status")?)
        .stamps(row)?
        .done())
}

pub fn by_key(tx: &mut Tx<'_>, key: &str) -> Result<Option<Row>, StoreError> {
    tx.query_opt(&format!("{SELECT} WHERE p.key = $1"), &[key.into()])
}

pub fn missing(field: &str, key: &str) -> ToolError {
    not_found(
        field,
        format!("there is no project \"{key}\" (see registry_project_list status all)"),
    )
}

/// The id of project `key` in any status (which argument `field` names).
pub fn id(tx: &mut Tx<'_>, field: &str, key: &str) -> Result<String, TxError> {
    let row = by_key(tx, key)?.ok_or_else(|| missing(field, key))?;
    Ok(row.get_text("id")?)
}

/// The id of the active project `key`: a missing project is `not_found`, an archived one
/// `invalid_arguments` (new sources never land in an archived project).
pub fn active_id(tx: &mut Tx<'_>, field: &str, key: &str) -> Result<String, TxError> {
    let row = by_key(tx, key)?.ok_or_else(|| missing(field, key))?;
    if row.get_text("status")? != "active" {
        return Err(invalid(
            field,
            format!(
                "project \"{key}\" is archived; re-activate it first (registry_project_update \
                 status active)"
            ),
        )
        .into());
    }
    Ok(row.get_text("id")?)
}
