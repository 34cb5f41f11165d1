//! `notepad_list`: notes' keys and metadata (values on request), filtered by scope, scope
//! prefix and key prefix, in (scope, key) order, byte-wise on both backends.
//!
//! Invariants:
//! - Keyset paging on (scope, key): `next_cursor` is the last note returned, and only there
//!   when more notes follow, so notes written between pages are neither repeated nor skipped
//!   unless they sort before the cursor.
//! - With values a page may hold fewer than `limit` notes, so the result stays under the host's
//!   result limit and keeps its structured content.

use coremcp_nervhq::grammar::check_scope;
use coremcp_nervhq::result::{page, page_result, put_opt, ts, ts_opt};
use coremcp_nervhq::{bytewise, Query, SERVICE};
use coremcp_plugin_api::sdk::{Args, Ctx, Tool};
use coremcp_plugin_api::{Annotations, Runs, ToolError};
use coremcp_store::plugin::{decode_cursor, encode_cursor, limit, now};
use serde_json::{json, Map, Value};

use super::live;

pub const TOOL: Tool = Tool {
    name: "notepad_list",
    description: "List notes in (scope, key) order: keys, versions, updated_at and expires_at, \
        with values only if include_values. Filters combine: scope (exact), scope_prefix (e.g. \
        project:), key_prefix. Expired notes are left out. Pages hold up to limit notes (fewer \
        with values, to stay under the result limit); pass next_cursor back for the next one.",
    input_schema: r#"{
        "type": "object",
        "properties": {
            "scope": {"type": "string", "description": "only this scope (exact)"},
            "scope_prefix": {"type": "string", "description": "only scopes starting with this, e.g. project: or agent:"},
            "key_prefix": {"type": "string", "description": "only keys starting with this (case-sensitive)"},
            "include_values": {"type": "boolean", "description": "include each note's value (default false)"},
            "limit": {"type": "integer", "minimum": 1, "maximum": 200, "description": "notes per page (default 50)"},
            "cursor": {"type": "string", "description": "next_cursor of the previous page"}
        },
        "additionalProperties": false
    }"#,
    annotations: Annotations::READ_ONLY,
    runs: Runs::Forwarded,
    remote_host: true,
    feature: None,
    handler,
};

fn handler(_: &Ctx<'_>, args: Args) -> Result<Value, ToolError> {
    let scope = args.opt_str("scope")?;
    if let Some(scope) = scope {
        check_scope("scope", scope)?;
    }
    let scope_prefix = args.opt_str("scope_prefix")?;
    let key_prefix = args.opt_str("key_prefix")?;
    let include_values = args.opt_bool("include_values")?.unwrap_or(false);
    let limit = limit(&args)?;
    let after = args
        .opt_str("cursor")?
        .map(|c| decode_cursor(c, 2))
        .transpose()?;
    let now = now();
    let rows = SERVICE.run(|tx| {
        let c = bytewise(tx);
        let mut q = Query::new();
        let p = q.bind(now.as_str());
        q.and(live(&p));
        q.eq_opt("scope", scope);
        q.prefix_opt("scope", scope_prefix);
        q.prefix_opt("key", key_prefix);
        if let Some(after) = &after {
            let (s, k) = (q.bind(after[0].as_str()), q.bind(after[1].as_str()));
            q.and(format!(
                "(scope{c} > {s} OR (scope = {s} AND key{c} > {k}))"
            ));
        }
        let value = if include_values { ", value" } else { "" };
        let sql = format!(
            "SELECT scope, key, version, updated_at, expires_at{value} FROM notepad_entry{}
             ORDER BY scope{c}, key{c} LIMIT {}",
            q.where_clause(),
            limit + 1
        );
        let mut items = Vec::new();
        for row in tx.query(&sql, q.params())? {
            let mut map = Map::new();
            map.insert("scope".into(), row.get_text("scope")?.into());
            map.insert("key".into(), row.get_text("key")?.into());
            map.insert("version".into(), row.get_i64("version")?.into());
            map.insert("updated_at".into(), ts(&row, "updated_at")?.into());
            put_opt(&mut map, "expires_at", ts_opt(&row, "expires_at")?);
            if include_values {
                map.insert("value".into(), row.get_text("value")?.into());
            }
            items.push(Value::Object(map));
        }
        Ok(items)
    })?;
    let base = json!({"items": [], "next_cursor": encode_cursor(&["x".repeat(200).as_str(); 2])});
    let (items, next) = page(rows, limit, &base, |item| {
        encode_cursor(&[
            item["scope"].as_str().unwrap_or_default(),
            item["key"].as_str().unwrap_or_default(),
        ])
    });
    Ok(page_result(items, next))
}
