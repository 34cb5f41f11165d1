//! Sources of a project (git repos, docs repos, packages, service URLs): the record, the lists
//! other records carry, and the metadata rules.
//!
//! Invariants: a source is named by its ref `PROJECT/name`, unique within its project and
//! permanent (`kind` never changes either: a project's `docs_source` relies on it); it is never
//! deleted, only archived. `metadata` is a JSON object that `update` merges (RFC 7386: a `null`
//! member removes that key).

use coremcp_plugin_sdk::prelude::*;
use coremcp_store::plugin::{invalid, json_text};
use coremcp_store::records::{related, Entity, Key, Record, Related};
use coremcp_store::{StoreError, Tx};

/// The most JSON text `metadata` may take.
const MAX_METADATA: usize = 8_000;

/// What a source is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ArgEnum)]
pub enum Kind {
    Git,
    Docs,
    Package,
    Service,
    Url,
}

/// A source with its project key and its ref.
pub static SOURCE: Entity = Entity {
    noun: "source",
    tools: "registry_source",
    table: "registry_source",
    unique: "project_id, name",
    select: "SELECT s.id, s.project_id, p.key AS project_key, p.key || '/' || s.name AS ref, \
        s.name, s.kind, s.url, s.default_branch, s.description, s.metadata, s.status, \
        s.version, s.created_at, s.updated_at \
        FROM registry_source s JOIN registry_project p ON p.id = s.project_id",
    fields: "ref project=project_key name kind url default_branch description? metadata?:json \
        status",
    key: &[
        Key::text("p.key", "project_key"),
        Key::text("s.name", "name"),
    ],
};

/// The active sources of each of `project_ids`, by name.
pub fn active_by_project(tx: &mut Tx<'_>, ids: &[String]) -> Result<Related, StoreError> {
    let sql = format!(
        "{} WHERE s.project_id IN {{ids}} AND s.status = 'active' ORDER BY s.name",
        SOURCE.select
    );
    related(tx, &sql, ids, "project_id", |row| SOURCE.json(row))
}

/// The checkouts (host, path, branch, the URL it was made from) of each of `source_ids`, by
/// host name.
pub fn checkouts(tx: &mut Tx<'_>, ids: &[String]) -> Result<Related, StoreError> {
    let sql = "SELECT c.source_id, h.name AS host, c.path, c.branch, c.url, c.updated_at \
        FROM registry_checkout c JOIN registry_host h ON h.id = c.host_id \
        WHERE c.source_id IN {ids} ORDER BY h.name";
    related(tx, sql, ids, "source_id", |row| {
        Ok(Record::of(row, "host path branch? url? updated_at:ts")?.done())
    })
}

pub fn check_metadata_size(value: &Value) -> Result<(), ToolError> {
    let size = json_text(value).chars().count();
    if size > MAX_METADATA {
        return Err(invalid(
            "metadata",
            format!(
                "is {size} characters of JSON; at most {MAX_METADATA} are allowed, so that a \
                 source always fits one answer: keep large data in the source itself"
            ),
        ));
    }
    Ok(())
}

/// RFC 7386 JSON merge patch: `patch`'s members replace `target`'s, recursively for objects;
/// a `null` member removes the key.
pub fn merge_patch(target: &mut Value, patch: &Value) {
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
