//! Themes, the top-level groupings of projects: `registry_theme_list`, `_add`, `_update`.
//!
//! Invariants: a theme key matches `^[a-z0-9][a-z0-9-]{0,39}$` and never changes; a theme is
//! never deleted, only archived (projects and other services refer to its key).

use coremcp_plugin_sdk::legacy::{Args, Untyped};
use coremcp_plugin_sdk::{Annotations, ToolError};
use coremcp_plugin_sdk::{Ctx, Hints, Tool};
use coremcp_store::plugin::{limit, new_id, now};
use coremcp_store::{Row, StoreError, Tx};
use serde_json::Value;

use crate::common::{
    check_expected, cursor, duplicate, expected_version, guarded_update, list_result, not_found,
    opt_text, page, status_filter, text, Query, Record, ADDS, MAX_DESCRIPTION, MAX_NAME, PATCHES,
    SERVICE,
};
use crate::validate;

pub const LIST: Tool = Tool::new(
    "registry_theme_list",
    "List themes, the top-level groupings of projects, by key. Default: active \
        themes only. Paged: pass next_cursor back as cursor.",
    &Untyped::new(
        r#"{
        "type": "object",
        "properties": {
            "key": {"type": "string", "description": "only the theme with exactly this key"},
            "status": {"type": "string", "enum": ["active", "archived", "all"], "description": "which themes (default active)"},
            "query": {"type": "string", "minLength": 1, "maxLength": 200, "description": "case-insensitive substring of the key or name"},
            "limit": {"type": "integer", "minimum": 1, "maximum": 200, "description": "items per page (default 50)"},
            "cursor": {"type": "string", "description": "next_cursor of the previous page"}
        },
        "required": [],
        "additionalProperties": false
    }"#,
        list,
    ),
)
.hints(Hints::of(Annotations::READ_ONLY));

pub const ADD: Tool = Tool::new(
    "registry_theme_add",
    "Add a theme record (a top-level grouping of projects). The key is permanent; \
        an existing key is a conflict. Returns the theme.",
    &Untyped::new(
        r#"{
        "type": "object",
        "properties": {
            "key": {"type": "string", "minLength": 1, "description": "permanent slug ^[a-z0-9][a-z0-9-]{0,39}$, e.g. reliability"},
            "name": {"type": "string", "minLength": 1, "maxLength": 200, "description": "display name"},
            "description": {"type": "string", "maxLength": 4000, "description": "what the theme covers"}
        },
        "required": ["key", "name"],
        "additionalProperties": false
    }"#,
        add,
    ),
)
.hints(Hints::of(ADDS));

pub const UPDATE: Tool = Tool::new(
    "registry_theme_update",
    "Patch a theme: only the fields you pass change; archive it with status \
        archived (themes are never deleted). With expected_version, a theme that changed since \
        you read it is a conflict naming its current version. A patch that changes nothing is \
        a no-op. Returns the theme.",
    &Untyped::new(
        r#"{
        "type": "object",
        "properties": {
            "key": {"type": "string", "minLength": 1, "description": "the theme's key"},
            "name": {"type": "string", "minLength": 1, "maxLength": 200, "description": "new display name"},
            "description": {"type": "string", "maxLength": 4000, "description": "new description (\"\" clears it)"},
            "status": {"type": "string", "enum": ["active", "archived"], "description": "archive or re-activate"},
            "expected_version": {"type": "integer", "minimum": 1, "description": "the version you read; refused with conflict if the theme is at another"}
        },
        "required": ["key"],
        "additionalProperties": false
    }"#,
        update,
    ),
)
.hints(Hints::of(PATCHES));

const FIELDS: &str = "id, key, name, description, status, version, created_at, updated_at";

fn theme_json(row: &Row) -> Result<Value, StoreError> {
    Ok(Record::default()
        .set("key", row.get_text("key")?)
        .set("name", row.get_text("name")?)
        .opt("description", row.get_opt_text("description")?)
        .set("status", row.get_text("status")?)
        .stamps(row)?
        .done())
}

fn by_key(tx: &mut Tx<'_>, key: &str) -> Result<Option<Row>, StoreError> {
    tx.query_opt(
        &format!("SELECT {FIELDS} FROM registry_theme WHERE key = $1"),
        &[key.into()],
    )
}

fn what(key: &str) -> String {
    format!("theme \"{key}\"")
}

fn list(_: &Ctx<'_>, args: Args) -> Result<Value, ToolError> {
    let limit = limit(&args)?;
    let mut q = Query::default();
    if let Some(key) = args.opt_str("key")? {
        validate::theme_key("key", key)?;
        q.eq("key", key);
    }
    if let Some(status) = status_filter(&args, "active")? {
        q.eq("status", status);
    }
    if let Some(text) = args.opt_str("query")? {
        q.contains(&["key", "name"], text);
    }
    if let Some(after) = cursor(&args, "theme", 1)? {
        q.gt("key", after[0].as_str());
    }
    let sql = format!(
        "SELECT {FIELDS} FROM registry_theme{} ORDER BY key LIMIT {}",
        q.where_sql(),
        limit + 1
    );
    SERVICE.run(|tx| {
        let rows = tx.query(&sql, &q.params)?;
        let (rows, next) = page(rows, limit, "theme", |r| Ok(vec![r.get_text("key")?]))?;
        let items = rows.iter().map(theme_json).collect::<Result<_, _>>()?;
        Ok(list_result(items, next))
    })
}

fn add(_: &Ctx<'_>, args: Args) -> Result<Value, ToolError> {
    let key = args.str("key")?;
    validate::theme_key("key", key)?;
    let name = text(&args, "name", MAX_NAME)?;
    let description = opt_text(&args, "description", MAX_DESCRIPTION)?;
    SERVICE.run(|tx| {
        let now = now();
        let inserted = tx.query(
            &format!(
                "INSERT INTO registry_theme \
                 (id, key, name, description, status, version, created_at, updated_at) \
                 VALUES ($1, $2, $3, $4, 'active', 1, $5, $5) \
                 ON CONFLICT (key) DO NOTHING RETURNING {FIELDS}"
            ),
            &[
                new_id().into(),
                key.into(),
                name.into(),
                description.into(),
                now.into(),
            ],
        )?;
        match inserted.first() {
            Some(row) => Ok(theme_json(row)?),
            None => {
                let version = by_key(tx, key)?.map_or(Ok(0), |r| r.get_i64("version"))?;
                Err(duplicate(&what(key), version, "change it with registry_theme_update").into())
            }
        }
    })
}

fn update(_: &Ctx<'_>, args: Args) -> Result<Value, ToolError> {
    let key = args.str("key")?;
    validate::theme_key("key", key)?;
    let name = opt_text(&args, "name", MAX_NAME)?;
    let description = crate::common::clearable(&args, "description", |v| {
        validate::text("description", v, MAX_DESCRIPTION)
    })?;
    let status = args.opt_str("status")?;
    let expected = expected_version(&args)?;
    SERVICE.run(|tx| {
        let row = by_key(tx, key)?.ok_or_else(|| {
            not_found(
                "key",
                format!("there is no theme \"{key}\" (see registry_theme_list)"),
            )
        })?;
        let version = row.get_i64("version")?;
        check_expected(&what(key), version, expected)?;
        let old_name = row.get_text("name")?;
        let old_description = row.get_opt_text("description")?;
        let old_status = row.get_text("status")?;
        let new_name = name.unwrap_or(&old_name);
        let new_description = match description {
            Some(value) => value,
            None => old_description.as_deref(),
        };
        let new_status = status.unwrap_or(&old_status);
        if new_name == old_name
            && new_description == old_description.as_deref()
            && new_status == old_status
        {
            return Ok(theme_json(&row)?);
        }
        let id = row.get_text("id")?;
        guarded_update(
            tx,
            "UPDATE registry_theme SET name = $1, description = $2, status = $3, \
             version = version + 1, updated_at = $4 WHERE id = $5 AND version = $6",
            &[
                new_name.into(),
                new_description.into(),
                new_status.into(),
                now().into(),
                id.as_str().into(),
                version.into(),
            ],
            "registry_theme",
            &id,
            &what(key),
            expected,
        )?;
        let row = by_key(tx, key)?.ok_or_else(|| StoreError::NotFound(what(key)))?;
        Ok(theme_json(&row)?)
    })
}

/// The id of the active theme `key`, which argument `field` names: a missing theme is
/// `not_found`, an archived one `invalid_arguments` (new work never lands in an archive).
pub(crate) fn active_theme_id(
    tx: &mut Tx<'_>,
    field: &str,
    key: &str,
) -> Result<String, coremcp_store::plugin::TxError> {
    validate::theme_key(field, key)?;
    let row = by_key(tx, key)?.ok_or_else(|| {
        not_found(
            field,
            format!("there is no theme \"{key}\" (see registry_theme_list; add it with registry_theme_add)"),
        )
    })?;
    if row.get_text("status")? != "active" {
        return Err(coremcp_store::plugin::invalid(
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
pub(crate) fn theme_id(
    tx: &mut Tx<'_>,
    field: &str,
    key: &str,
) -> Result<String, coremcp_store::plugin::TxError> {
    let row = by_key(tx, key)?.ok_or_else(|| {
        not_found(
            field,
            format!("there is no theme \"{key}\" (see registry_theme_list status all)"),
        )
    })?;
    Ok(row.get_text("id")?)
}
