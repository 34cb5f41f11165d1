//! Projects: `registry_project_list`, `_add`, `_update`.
//!
//! Invariants:
//! - A project key matches `^[A-Z][A-Z0-9]{1,9}$` and never changes: it is also the Scrolls
//!   item prefix (`CORE-42`), and other services refer to it.
//! - `docs_source`, when set, is an active `docs`-kind source of the same project. The store
//!   has no foreign key for it (project and source refer to each other), so this module is
//!   the only place that writes it, and it checks.
//! - A project is never deleted, only archived.

use coremcp_plugin_sdk::legacy::{Args, Untyped};
use coremcp_plugin_sdk::{Annotations, ToolError};
use coremcp_plugin_sdk::{Ctx, Hints, Tool};
use coremcp_store::plugin::{invalid, limit, new_id, now, TxError};
use coremcp_store::{Row, StoreError, Tx};
use serde_json::Value;

use crate::common::{
    check_expected, clearable, cursor, duplicate, expected_version, guarded_update, list_result,
    not_found, opt_text, page, status_filter, text, Query, Record, ADDS, MAX_DESCRIPTION, MAX_NAME,
    PATCHES, SERVICE,
};
use crate::tools::{source, theme};
use crate::validate;

pub const LIST: Tool = Tool::new(
    "registry_project_list",
    "List projects by key, each with its theme, docs source and count of active \
        sources; include_sources adds those sources. Default: active projects only. Paged: \
        pass next_cursor back as cursor.",
    &Untyped::new(
        r#"{
        "type": "object",
        "properties": {
            "key": {"type": "string", "description": "only the project with exactly this key"},
            "theme": {"type": "string", "description": "only projects of this theme (theme key)"},
            "status": {"type": "string", "enum": ["active", "archived", "all"], "description": "which projects (default active)"},
            "include_sources": {"type": "boolean", "description": "add each project's active sources (default false)"},
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
    "registry_project_add",
    "Add a project. Its key is permanent and is also the Scrolls item prefix \
        (CORE → CORE-42); an existing key is a conflict. The theme, if given, must exist and be \
        active. Set its docs source later with registry_project_update. Returns the project.",
    &Untyped::new(
        r#"{
        "type": "object",
        "properties": {
            "key": {"type": "string", "minLength": 1, "description": "^[A-Z][A-Z0-9]{1,9}$, e.g. CORE"},
            "name": {"type": "string", "minLength": 1, "maxLength": 200, "description": "display name"},
            "theme": {"type": "string", "minLength": 1, "description": "theme key it belongs to"},
            "description": {"type": "string", "maxLength": 4000, "description": "what the project is"}
        },
        "required": ["key", "name"],
        "additionalProperties": false
    }"#,
        add,
    ),
)
.hints(Hints::of(ADDS));

pub const UPDATE: Tool = Tool::new(
    "registry_project_update",
    "Patch a project, including which of its sources holds its docs: only the \
        fields you pass change; archive it with status archived (projects are never deleted). \
        With expected_version, a project that changed since you read it is a conflict naming \
        its current version. A patch that changes nothing is a no-op. Returns the project.",
    &Untyped::new(
        r#"{
        "type": "object",
        "properties": {
            "key": {"type": "string", "minLength": 1, "description": "the project's key"},
            "name": {"type": "string", "minLength": 1, "maxLength": 200, "description": "new display name"},
            "theme": {"type": "string", "description": "new theme key (\"\" removes the theme)"},
            "description": {"type": "string", "maxLength": 4000, "description": "new description (\"\" clears it)"},
            "docs_source": {"type": "string", "description": "ref PROJECT/name of an active docs-kind source of this project (\"\" clears it)"},
            "status": {"type": "string", "enum": ["active", "archived"], "description": "archive or re-activate"},
            "expected_version": {"type": "integer", "minimum": 1, "description": "the version you read; refused with conflict if the project is at another"}
        },
        "required": ["key"],
        "additionalProperties": false
    }"#,
        update,
    ),
)
.hints(Hints::of(PATCHES));

/// A project row with its theme key, docs source ref parts and active-source count.
const SELECT: &str = "SELECT p.id, p.key, p.name, p.description, p.status, p.version, \
    p.created_at, p.updated_at, p.theme_id, p.docs_source_id, t.key AS theme_key, \
    dp.key AS docs_project_key, ds.name AS docs_source_name, \
    (SELECT COUNT(*) FROM registry_source c \
     WHERE c.project_id = p.id AND c.status = 'active') AS source_count \
    FROM registry_project p \
    LEFT JOIN registry_theme t ON t.id = p.theme_id \
    LEFT JOIN registry_source ds ON ds.id = p.docs_source_id \
    LEFT JOIN registry_project dp ON dp.id = ds.project_id";

fn project_json(row: &Row) -> Result<Value, StoreError> {
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

fn by_key(tx: &mut Tx<'_>, key: &str) -> Result<Option<Row>, StoreError> {
    tx.query_opt(&format!("{SELECT} WHERE p.key = $1"), &[key.into()])
}

fn missing(field: &str, key: &str) -> ToolError {
    not_found(
        field,
        format!("there is no project \"{key}\" (see registry_project_list status all)"),
    )
}

/// The id of project `key` in any status (which argument `field` names).
pub(crate) fn project_id(tx: &mut Tx<'_>, field: &str, key: &str) -> Result<String, TxError> {
    let row = by_key(tx, key)?.ok_or_else(|| missing(field, key))?;
    Ok(row.get_text("id")?)
}

/// The id of the active project `key`: a missing project is `not_found`, an archived one
/// `invalid_arguments` (new sources never land in an archived project).
pub(crate) fn active_project_id(
    tx: &mut Tx<'_>,
    field: &str,
    key: &str,
) -> Result<String, TxError> {
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

fn list(_: &Ctx<'_>, args: Args) -> Result<Value, ToolError> {
    let limit = limit(&args)?;
    let mut q = Query::default();
    if let Some(key) = args.opt_str("key")? {
        validate::project_key("key", key)?;
        q.eq("p.key", key);
    }
    let theme_key = args.opt_str("theme")?;
    if let Some(theme) = theme_key {
        validate::theme_key("theme", theme)?;
    }
    if let Some(status) = status_filter(&args, "active")? {
        q.eq("p.status", status);
    }
    if let Some(text) = args.opt_str("query")? {
        q.contains(&["p.key", "p.name"], text);
    }
    if let Some(after) = cursor(&args, "project", 1)? {
        q.gt("p.key", after[0].as_str());
    }
    let with_sources = args.opt_bool("include_sources")?.unwrap_or(false);
    SERVICE.run(|tx| {
        // The closure may run again (a busy store): start from the same filters each time.
        let mut q = q.clone();
        if let Some(theme) = theme_key {
            let id = theme::theme_id(tx, "theme", theme)?;
            q.eq("p.theme_id", id);
        }
        let sql = format!(
            "{SELECT}{} ORDER BY p.key LIMIT {}",
            q.where_sql(),
            limit + 1
        );
        let rows = tx.query(&sql, &q.params)?;
        let (rows, next) = page(rows, limit, "project", |r| Ok(vec![r.get_text("key")?]))?;
        let mut sources = if with_sources {
            let ids = rows
                .iter()
                .map(|r| r.get_text("id"))
                .collect::<Result<Vec<_>, _>>()?;
            source::active_by_project(tx, &ids)?
        } else {
            Default::default()
        };
        let mut items = Vec::with_capacity(rows.len());
        for row in &rows {
            let mut item = project_json(row)?;
            if with_sources {
                let list = sources.remove(&row.get_text("id")?).unwrap_or_default();
                item["sources"] = Value::Array(list);
            }
            items.push(item);
        }
        Ok(list_result(items, next))
    })
}

fn add(_: &Ctx<'_>, args: Args) -> Result<Value, ToolError> {
    let key = args.str("key")?;
    validate::project_key("key", key)?;
    let name = text(&args, "name", MAX_NAME)?;
    let theme_key = args.opt_str("theme")?;
    if let Some(theme) = theme_key {
        validate::theme_key("theme", theme)?;
    }
    let description = opt_text(&args, "description", MAX_DESCRIPTION)?;
    SERVICE.run(|tx| {
        let theme_id = match theme_key {
            Some(theme) => Some(theme::active_theme_id(tx, "theme", theme)?),
            None => None,
        };
        let now = now();
        let inserted = tx.query(
            "INSERT INTO registry_project (id, key, theme_id, name, description, \
             docs_source_id, status, version, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, NULL, 'active', 1, $6, $6) \
             ON CONFLICT (key) DO NOTHING RETURNING id",
            &[
                new_id().into(),
                key.into(),
                theme_id.into(),
                name.into(),
                description.into(),
                now.into(),
            ],
        )?;
        let row = by_key(tx, key)?.ok_or_else(|| missing("key", key))?;
        if inserted.is_empty() {
            return Err(duplicate(
                &format!("project \"{key}\""),
                row.get_i64("version")?,
                "change it with registry_project_update",
            )
            .into());
        }
        Ok(project_json(&row)?)
    })
}

/// The id of the source `docs_ref` if it can hold the docs of project `key`: an active
/// `docs`-kind source of that same project.
fn docs_source_id(tx: &mut Tx<'_>, key: &str, docs_ref: &str) -> Result<String, TxError> {
    let field = "docs_source";
    let (project, _) = validate::source_ref(field, docs_ref)?;
    if project != key {
        return Err(invalid(
            field,
            format!(
                "\"{docs_ref}\" belongs to project {project}, not {key}: a project's docs \
                 source is one of its own sources"
            ),
        )
        .into());
    }
    let row = source::find(tx, field, docs_ref)?;
    let kind = row.get_text("kind")?;
    if kind != "docs" {
        return Err(invalid(
            field,
            format!(
                "\"{docs_ref}\" is a {kind} source; the docs source must be of kind docs (add \
                 one with registry_source_add kind docs)"
            ),
        )
        .into());
    }
    if row.get_text("status")? != "active" {
        return Err(invalid(
            field,
            format!("\"{docs_ref}\" is archived; re-activate it first (registry_source_update)"),
        )
        .into());
    }
    Ok(row.get_text("id")?)
}

fn update(_: &Ctx<'_>, args: Args) -> Result<Value, ToolError> {
    let key = args.str("key")?;
    validate::project_key("key", key)?;
    let name = opt_text(&args, "name", MAX_NAME)?;
    let theme_key = clearable(&args, "theme", |v| validate::theme_key("theme", v))?;
    let description = clearable(&args, "description", |v| {
        validate::text("description", v, MAX_DESCRIPTION)
    })?;
    let docs_ref = clearable(&args, "docs_source", |v| {
        validate::source_ref("docs_source", v).map(|_| ())
    })?;
    let status = args.opt_str("status")?;
    let expected = expected_version(&args)?;
    let what = format!("project \"{key}\"");
    SERVICE.run(|tx| {
        let row = by_key(tx, key)?.ok_or_else(|| missing("key", key))?;
        let version = row.get_i64("version")?;
        check_expected(&what, version, expected)?;
        let old_name = row.get_text("name")?;
        let old_description = row.get_opt_text("description")?;
        let old_theme = row.get_opt_text("theme_id")?;
        let old_docs = row.get_opt_text("docs_source_id")?;
        let old_status = row.get_text("status")?;
        let new_theme = match theme_key {
            // Keeping the theme it has needs no check, even if that theme was archived since.
            Some(Some(theme)) if row.get_opt_text("theme_key")?.as_deref() == Some(theme) => {
                old_theme.clone()
            }
            Some(Some(theme)) => Some(theme::active_theme_id(tx, "theme", theme)?),
            Some(None) => None,
            None => old_theme.clone(),
        };
        let new_docs = match docs_ref {
            Some(Some(docs)) => Some(docs_source_id(tx, key, docs)?),
            Some(None) => None,
            None => old_docs.clone(),
        };
        let new_name = name.unwrap_or(&old_name);
        let new_description = description.unwrap_or(old_description.as_deref());
        let new_status = status.unwrap_or(&old_status);
        if new_name == old_name
            && new_description == old_description.as_deref()
            && new_theme == old_theme
            && new_docs == old_docs
            && new_status == old_status
        {
            return Ok(project_json(&row)?);
        }
        let id = row.get_text("id")?;
        guarded_update(
            tx,
            "UPDATE registry_project SET name = $1, description = $2, theme_id = $3, \
             docs_source_id = $4, status = $5, version = version + 1, updated_at = $6 \
             WHERE id = $7 AND version = $8",
            &[
                new_name.into(),
                new_description.into(),
                new_theme.into(),
                new_docs.into(),
                new_status.into(),
                now().into(),
                id.as_str().into(),
                version.into(),
            ],
            "registry_project",
            &id,
            &what,
            expected,
        )?;
        let row = by_key(tx, key)?.ok_or_else(|| missing("key", key))?;
        Ok(project_json(&row)?)
    })
}
