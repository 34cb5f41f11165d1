//! `session_list_recorded`: recordings' metadata and summaries with their session's agent, host
//! and project, newest first, keyset-paged on (recorded_at, id).
//!
//! Filters: project, agent and host (exact, on the session); `since` ≤ recorded_at < `until`;
//! `query` is a case-insensitive substring of the title or the summary (`%` and `_` match
//! themselves). Transcripts are never listed: `session_get include_recording` reads one.

use coremcp_nervhq::query::contains_pattern;
use coremcp_nervhq::result::{page, page_result, put_opt, ts};
use coremcp_nervhq::{bytewise, Query, SERVICE};
use coremcp_plugin_sdk::legacy::{Args, Untyped};
use coremcp_plugin_sdk::{Annotations, ToolError};
use coremcp_plugin_sdk::{Ctx, Hints, Tool};
use coremcp_store::plugin::{
    decode_cursor, encode_cursor, invalid, json_value, limit, parse_timestamp, timestamp,
};
use serde_json::{json, Map, Value};

pub const TOOL: Tool = Tool::new(
    "session_list_recorded",
    "List recorded sessions, newest first: each recording's metadata and summary \
        with the session's agent, host and project (no transcripts: session_get with \
        include_recording reads one). Filters combine: project, agent, host, since (inclusive) \
        and until (exclusive) on recorded_at, query (case-insensitive text in title or \
        summary). Pass next_cursor back for the next page.",
    &Untyped::new(
        r#"{
        "type": "object",
        "properties": {
            "project": {"type": "string", "description": "only sessions on this project key"},
            "agent": {"type": "string", "description": "only sessions of this agent"},
            "host": {"type": "string", "description": "only sessions on this host"},
            "since": {"type": "string", "description": "RFC 3339 time: only recordings made at or after it"},
            "until": {"type": "string", "description": "RFC 3339 time: only recordings made before it"},
            "query": {"type": "string", "maxLength": 200, "description": "text to find in the title or summary (case-insensitive)"},
            "limit": {"type": "integer", "minimum": 1, "maximum": 200, "description": "recordings per page (default 50)"},
            "cursor": {"type": "string", "description": "next_cursor of the previous page"}
        },
        "additionalProperties": false
    }"#,
        handler,
    ),
)
.hints(Hints::of(Annotations::READ_ONLY));

/// An RFC 3339 argument, normalised to the stored form.
fn time_arg(args: &Args, name: &str) -> Result<Option<String>, ToolError> {
    args.opt_str(name)?
        .map(|text| {
            parse_timestamp(text).map(timestamp).ok_or_else(|| {
                invalid(
                    name,
                    format!("{text:?} is not an RFC 3339 time such as 2026-01-31T09:00:00Z"),
                )
            })
        })
        .transpose()
}

fn handler(_: &Ctx<'_>, args: Args) -> Result<Value, ToolError> {
    let project = args.opt_str("project")?;
    let agent = args.opt_str("agent")?;
    let host = args.opt_str("host")?;
    let since = time_arg(&args, "since")?;
    let until = time_arg(&args, "until")?;
    let query = args
        .opt_str("query")?
        .filter(|q| !q.is_empty())
        .map(|q| contains_pattern(&q.to_lowercase()));
    let limit = limit(&args)?;
    let after = args
        .opt_str("cursor")?
        .map(|c| decode_cursor(c, 2))
        .transpose()?;
    let rows = SERVICE.run(|tx| {
        let c = bytewise(tx);
        let mut q = Query::new();
        q.eq_opt("s.project_key", project);
        q.eq_opt("s.agent", agent);
        q.eq_opt("s.host", host);
        if let Some(since) = &since {
            let p = q.bind(since.as_str());
            q.and(format!("r.recorded_at >= {p}"));
        }
        if let Some(until) = &until {
            let p = q.bind(until.as_str());
            q.and(format!("r.recorded_at < {p}"));
        }
        if let Some(pattern) = &query {
            let p = q.bind(pattern.as_str());
            q.and(format!(
                "(LOWER(COALESCE(r.title, '')) LIKE {p} ESCAPE '\\' \
                  OR LOWER(COALESCE(r.summary, '')) LIKE {p} ESCAPE '\\')"
            ));
        }
        if let Some(after) = &after {
            let (t, i) = (q.bind(after[0].as_str()), q.bind(after[1].as_str()));
            q.and(format!(
                "(r.recorded_at < {t} OR (r.recorded_at = {t} AND r.id{c} < {i}))"
            ));
        }
        let sql = format!(
            "SELECT r.id, r.session_id, r.recorded_at, r.title, r.summary, r.tags, r.format,
                    r.size_bytes, r.stats, s.agent, s.host, s.project_key
             FROM session_recording r JOIN session s ON s.id = r.session_id{}
             ORDER BY r.recorded_at DESC, r.id{c} DESC LIMIT {}",
            q.where_clause(),
            limit + 1
        );
        let mut items = Vec::new();
        for row in tx.query(&sql, q.params())? {
            let mut map = Map::new();
            map.insert("recording_id".into(), row.get_text("id")?.into());
            map.insert("session_id".into(), row.get_text("session_id")?.into());
            map.insert("recorded_at".into(), ts(&row, "recorded_at")?.into());
            map.insert("agent".into(), row.get_text("agent")?.into());
            map.insert("host".into(), row.get_text("host")?.into());
            put_opt(&mut map, "project", row.get_opt_text("project_key")?);
            put_opt(&mut map, "title", row.get_opt_text("title")?);
            put_opt(&mut map, "summary", row.get_opt_text("summary")?);
            for column in ["tags", "stats"] {
                let value = json_value(row.get_opt_text(column)?);
                if !value.is_null() {
                    map.insert(column.into(), value);
                }
            }
            map.insert("format".into(), row.get_text("format")?.into());
            map.insert("size_bytes".into(), row.get_i64("size_bytes")?.into());
            items.push(Value::Object(map));
        }
        Ok(items)
    })?;
    let base = json!({"items": [], "next_cursor": encode_cursor(&["x".repeat(40).as_str(); 2])});
    let (items, next) = page(rows, limit, &base, |item| {
        encode_cursor(&[
            item["recorded_at"].as_str().unwrap_or_default(),
            item["recording_id"].as_str().unwrap_or_default(),
        ])
    });
    Ok(page_result(items, next))
}
