//! Sources of a project (git repos, docs repos, packages, service URLs):
//! `registry_source_list`, `_add`, `_update`.
//!
//! Invariants: a source is named by its ref `PROJECT/name`, unique within its project and
//! permanent (`kind` never changes either: a project's `docs_source` relies on it); it is never
//! deleted, only archived. `metadata` is a JSON object that `update` merges (RFC 7386: a `null`
//! member removes that key).

use std::collections::HashMap;

use coremcp_plugin_sdk::legacy::{Args, Untyped};
use coremcp_plugin_sdk::{Annotations, ToolError};
use coremcp_plugin_sdk::{Ctx, Hints, Tool};
use coremcp_store::plugin::{invalid, json_text, json_value, limit, new_id, now, TxError};
use coremcp_store::{Row, StoreError, Tx};
use serde_json::{Map, Value};

use crate::common::{
    check_expected, clearable, cursor, duplicate, expected_version, guarded_update, in_list,
    list_result, not_found, opt_text, page, status_filter, Query, Record, ADDS, MAX_DESCRIPTION,
    PATCHES, SERVICE,
};
use crate::tools::project;
use crate::validate;

/// The most JSON text `metadata` may take.
const MAX_METADATA: usize = 16_000;
const MAX_URL: usize = 2000;

pub const LIST: Tool = Tool::new(
    "registry_source_list",
    "List sources (git repos, docs repos, packages, service URLs) by ref \
        PROJECT/name, optionally with the hosts and paths where each is checked out. Default: \
        active sources only. Paged: pass next_cursor back as cursor.",
    &Untyped::new(
        r#"{
        "type": "object",
        "properties": {
            "project": {"type": "string", "description": "only this project's sources (project key, e.g. CORE)"},
            "kind": {"type": "string", "enum": ["git", "docs", "package", "service", "url"], "description": "only sources of this kind"},
            "status": {"type": "string", "enum": ["active", "archived", "all"], "description": "which sources (default active)"},
            "include_checkouts": {"type": "boolean", "description": "add checkouts: the hosts and paths where each source is cloned (default false)"},
            "query": {"type": "string", "minLength": 1, "maxLength": 200, "description": "case-insensitive substring of the ref or the URL"},
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
    "registry_source_add",
    "Add a source to a project: a git repo, docs repo, package, service or URL. \
        Its ref is PROJECT/name (unique in the project; an existing one is a conflict). The \
        project must exist and be active. Returns the source.",
    &Untyped::new(
        r#"{
        "type": "object",
        "properties": {
            "project": {"type": "string", "minLength": 1, "description": "project key, e.g. CORE"},
            "name": {"type": "string", "minLength": 1, "description": "^[a-z0-9][a-z0-9._-]*$, unique in the project, e.g. core-mcp"},
            "kind": {"type": "string", "enum": ["git", "docs", "package", "service", "url"], "description": "what it is (permanent)"},
            "url": {"type": "string", "minLength": 1, "maxLength": 2000, "description": "clone, package or service URL"},
            "default_branch": {"type": "string", "minLength": 1, "maxLength": 255, "description": "default main"},
            "description": {"type": "string", "maxLength": 4000, "description": "what it holds"},
            "metadata": {"type": "object", "description": "free-form JSON object (at most 16000 characters)"}
        },
        "required": ["project", "name", "kind", "url"],
        "additionalProperties": false
    }"#,
        add,
    ),
)
.hints(Hints::of(ADDS));

pub const UPDATE: Tool = Tool::new(
    "registry_source_update",
    "Patch a source: only the fields you pass change; metadata is merged (a null \
        member removes that key); archive it with status archived (sources are never deleted). \
        With expected_version, a source that changed since you read it is a conflict naming \
        its current version. A patch that changes nothing is a no-op. Returns the source.",
    &Untyped::new(
        r#"{
        "type": "object",
        "properties": {
            "source": {"type": "string", "minLength": 1, "description": "source ref PROJECT/name, e.g. CORE/core-mcp"},
            "url": {"type": "string", "minLength": 1, "maxLength": 2000, "description": "new URL"},
            "default_branch": {"type": "string", "minLength": 1, "maxLength": 255, "description": "new default branch"},
            "description": {"type": "string", "maxLength": 4000, "description": "new description (\"\" clears it)"},
            "metadata": {"type": "object", "description": "merged into the stored metadata (RFC 7386: a null member removes that key)"},
            "status": {"type": "string", "enum": ["active", "archived"], "description": "archive or re-activate"},
            "expected_version": {"type": "integer", "minimum": 1, "description": "the version you read; refused with conflict if the source is at another"}
        },
        "required": ["source"],
        "additionalProperties": false
    }"#,
        update,
    ),
)
.hints(Hints::of(PATCHES));

/// A source row with its project key, for [`source_json`].
pub(crate) const SELECT: &str = "SELECT s.id, s.project_id, p.key AS project_key, s.name, \
    s.kind, s.url, s.default_branch, s.description, s.metadata, s.status, s.version, \
    s.created_at, s.updated_at \
    FROM registry_source s JOIN registry_project p ON p.id = s.project_id";

pub(crate) fn source_json(row: &Row) -> Result<Value, StoreError> {
    let project = row.get_text("project_key")?;
    let name = row.get_text("name")?;
    let metadata = json_value(row.get_opt_text("metadata")?);
    Ok(Record::default()
        .set("ref", format!("{project}/{name}"))
        .set("project", project)
        .set("name", name)
        .set("kind", row.get_text("kind")?)
        .set("url", row.get_text("url")?)
        .set("default_branch", row.get_text("default_branch")?)
        .opt("description", row.get_opt_text("description")?)
        .opt("metadata", (!metadata.is_null()).then_some(metadata))
        .set("status", row.get_text("status")?)
        .stamps(row)?
        .done())
}

/// The source `ref` (which argument `field` names), any status; a missing one is
/// `not_found`.
pub(crate) fn find(tx: &mut Tx<'_>, field: &str, source_ref: &str) -> Result<Row, TxError> {
    let (project, name) = validate::source_ref(field, source_ref)?;
    let row = tx.query_opt(
        &format!("{SELECT} WHERE p.key = $1 AND s.name = $2"),
        &[project.into(), name.into()],
    )?;
    row.ok_or_else(|| {
        not_found(
            field,
            format!(
                "there is no source \"{source_ref}\" (see registry_source_list project \
                 {project})"
            ),
        )
        .into()
    })
}

/// The active sources of each of `project_ids`, by name.
pub(crate) fn active_by_project(
    tx: &mut Tx<'_>,
    project_ids: &[String],
) -> Result<HashMap<String, Vec<Value>>, StoreError> {
    let mut out: HashMap<String, Vec<Value>> = HashMap::new();
    if project_ids.is_empty() {
        return Ok(out);
    }
    let mut q = Query::default();
    let ids = in_list(&mut q, project_ids);
    let sql =
        format!("{SELECT} WHERE s.project_id IN {ids} AND s.status = 'active' ORDER BY s.name");
    for row in tx.query(&sql, &q.params)? {
        out.entry(row.get_text("project_id")?)
            .or_default()
            .push(source_json(&row)?);
    }
    Ok(out)
}

/// The checkouts (host, path, branch) of each of `source_ids`, by host name.
fn checkouts(
    tx: &mut Tx<'_>,
    source_ids: &[String],
) -> Result<HashMap<String, Vec<Value>>, StoreError> {
    let mut out: HashMap<String, Vec<Value>> = HashMap::new();
    if source_ids.is_empty() {
        return Ok(out);
    }
    let mut q = Query::default();
    let ids = in_list(&mut q, source_ids);
    let sql = format!(
        "SELECT c.source_id, h.name AS host, c.path, c.branch, c.updated_at \
         FROM registry_checkout c JOIN registry_host h ON h.id = c.host_id \
         WHERE c.source_id IN {ids} ORDER BY h.name"
    );
    for row in tx.query(&sql, &q.params)? {
        let item = Record::default()
            .set("host", row.get_text("host")?)
            .set("path", row.get_text("path")?)
            .opt("branch", row.get_opt_text("branch")?)
            .set(
                "updated_at",
                coremcp_store::plugin::timestamp_out(&row.get_text("updated_at")?),
            )
            .done();
        out.entry(row.get_text("source_id")?)
            .or_default()
            .push(item);
    }
    Ok(out)
}

fn list(_: &Ctx<'_>, args: Args) -> Result<Value, ToolError> {
    let limit = limit(&args)?;
    let project_key = args.opt_str("project")?;
    if let Some(key) = project_key {
        validate::project_key("project", key)?;
    }
    let with_checkouts = args.opt_bool("include_checkouts")?.unwrap_or(false);
    let mut q = Query::default();
    if let Some(kind) = args.opt_str("kind")? {
        q.eq("s.kind", kind);
    }
    if let Some(status) = status_filter(&args, "active")? {
        q.eq("s.status", status);
    }
    if let Some(text) = args.opt_str("query")? {
        q.contains(&["p.key || '/' || s.name", "s.url"], text);
    }
    if let Some(after) = cursor(&args, "source", 2)? {
        let key = q.bind(after[0].as_str());
        let name = q.bind(after[1].as_str());
        q.and(format!(
            "(p.key > {key} OR (p.key = {key} AND s.name > {name}))"
        ));
    }
    SERVICE.run(|tx| {
        // The closure may run again (a busy store): start from the same filters each time.
        let mut q = q.clone();
        if let Some(key) = project_key {
            let id = project::project_id(tx, "project", key)?;
            q.eq("s.project_id", id);
        }
        let sql = format!(
            "{SELECT}{} ORDER BY p.key, s.name LIMIT {}",
            q.where_sql(),
            limit + 1
        );
        let rows = tx.query(&sql, &q.params)?;
        let (rows, next) = page(rows, limit, "source", |r| {
            Ok(vec![r.get_text("project_key")?, r.get_text("name")?])
        })?;
        let mut found = if with_checkouts {
            let ids = rows
                .iter()
                .map(|r| r.get_text("id"))
                .collect::<Result<Vec<_>, _>>()?;
            checkouts(tx, &ids)?
        } else {
            HashMap::new()
        };
        let mut items = Vec::with_capacity(rows.len());
        for row in &rows {
            let mut item = source_json(row)?;
            if with_checkouts {
                let list = found.remove(&row.get_text("id")?).unwrap_or_default();
                item["checkouts"] = Value::Array(list);
            }
            items.push(item);
        }
        Ok(list_result(items, next))
    })
}

fn metadata_arg(args: &Args) -> Result<Option<&Map<String, Value>>, ToolError> {
    match args.0.get("metadata") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(map)) => Ok(Some(map)),
        Some(_) => Err(invalid("metadata", "must be a JSON object")),
    }
}

fn check_metadata_size(value: &Value) -> Result<(), ToolError> {
    let size = json_text(value).chars().count();
    if size > MAX_METADATA {
        return Err(invalid(
            "metadata",
            format!("is {size} characters of JSON; at most {MAX_METADATA} are allowed"),
        ));
    }
    Ok(())
}

fn add(_: &Ctx<'_>, args: Args) -> Result<Value, ToolError> {
    let project_key = args.str("project")?;
    validate::project_key("project", project_key)?;
    let name = args.str("name")?;
    validate::source_name("name", name)?;
    let kind = args.str("kind")?;
    let url = args.str("url")?;
    validate::token("url", url, MAX_URL)?;
    let branch = args.opt_str("default_branch")?.unwrap_or("main");
    validate::branch("default_branch", branch)?;
    let description = opt_text(&args, "description", MAX_DESCRIPTION)?;
    let metadata = metadata_arg(&args)?.map(|m| Value::Object(m.clone()));
    if let Some(m) = &metadata {
        check_metadata_size(m)?;
    }
    let source_ref = format!("{project_key}/{name}");
    SERVICE.run(|tx| {
        let project_id = project::active_project_id(tx, "project", project_key)?;
        let now = now();
        let inserted = tx.query(
            "INSERT INTO registry_source (id, project_id, name, kind, url, default_branch, \
             description, metadata, status, version, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'active', 1, $9, $9) \
             ON CONFLICT (project_id, name) DO NOTHING RETURNING id",
            &[
                new_id().into(),
                project_id.as_str().into(),
                name.into(),
                kind.into(),
                url.into(),
                branch.into(),
                description.into(),
                metadata.as_ref().map(json_text).into(),
                now.into(),
            ],
        )?;
        if inserted.is_empty() {
            let existing = find(tx, "source", &source_ref)?;
            return Err(duplicate(
                &format!("source \"{source_ref}\""),
                existing.get_i64("version")?,
                "change it with registry_source_update",
            )
            .into());
        }
        Ok(source_json(&find(tx, "source", &source_ref)?)?)
    })
}

/// RFC 7386 JSON merge patch: `patch`'s members replace `target`'s, recursively for objects;
/// a `null` member removes the key.
pub(crate) fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(members) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    if let Value::Object(map) = target {
        for (key, value) in members {
            if value.is_null() {
                map.remove(key);
            } else {
                merge_patch(map.entry(key.clone()).or_insert(Value::Null), value);
            }
        }
    }
}

fn update(_: &Ctx<'_>, args: Args) -> Result<Value, ToolError> {
    let source_ref = args.str("source")?;
    validate::source_ref("source", source_ref)?;
    let url = args.opt_str("url")?;
    if let Some(url) = url {
        validate::token("url", url, MAX_URL)?;
    }
    let branch = args.opt_str("default_branch")?;
    if let Some(branch) = branch {
        validate::branch("default_branch", branch)?;
    }
    let description = clearable(&args, "description", |v| {
        validate::text("description", v, MAX_DESCRIPTION)
    })?;
    let metadata = metadata_arg(&args)?.map(|m| Value::Object(m.clone()));
    let status = args.opt_str("status")?;
    let expected = expected_version(&args)?;
    let what = format!("source \"{source_ref}\"");
    SERVICE.run(|tx| {
        let row = find(tx, "source", source_ref)?;
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
                merge_patch(&mut merged, patch);
                // An emptied object is stored as no metadata at all.
                match merged {
                    Value::Object(m) if m.is_empty() => Value::Null,
                    other => other,
                }
            }
            None => old_metadata.clone(),
        };
        if !new_metadata.is_null() {
            check_metadata_size(&new_metadata)?;
        }
        let new_url = url.unwrap_or(&old_url);
        let new_branch = branch.unwrap_or(&old_branch);
        let new_description = description.unwrap_or(old_description.as_deref());
        let new_status = status.unwrap_or(&old_status);
        if new_url == old_url
            && new_branch == old_branch
            && new_description == old_description.as_deref()
            && new_metadata == old_metadata
            && new_status == old_status
        {
            return Ok(source_json(&row)?);
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
        Ok(source_json(&find(tx, "source", source_ref)?)?)
    })
}

#[cfg(test)]
mod tests {
    use super::merge_patch;
    use serde_json::json;

    #[test]
    fn metadata_merges_like_rfc_7386() {
        let cases = [
            (json!({"a": 1}), json!({"b": 2}), json!({"a": 1, "b": 2})),
            (json!({"a": 1, "b": 2}), json!({"a": null}), json!({"b": 2})),
            (
                json!({"n": {"x": 1, "y": 2}}),
                json!({"n": {"y": null, "z": 3}}),
                json!({"n": {"x": 1, "z": 3}}),
            ),
            (json!({"a": [1, 2]}), json!({"a": [3]}), json!({"a": [3]})),
            (serde_json::Value::Null, json!({"a": 1}), json!({"a": 1})),
            (
                json!({"a": "x"}),
                json!({"a": {"b": null}}),
                json!({"a": {}}),
            ),
        ];
        for (mut target, patch, expected) in cases {
            merge_patch(&mut target, &patch);
            assert_eq!(target, expected, "{patch}");
        }
    }
}
