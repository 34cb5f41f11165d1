//! `session_list_recorded`: recordings' metadata and summaries with their session's agent, host
//! and project, newest first, keyset-paged on (recorded_at, id).
//!
//! Filters: project, agent and host (exact, on the session); `since` ≤ recorded_at < `until`;
//! `query` is a case-insensitive substring of the title or the summary (`%` and `_` match
//! themselves). Transcripts are never listed: `session_get include_recording` reads one.

use coremcp_nervhq::{bytewise, Query, SERVICE};
use coremcp_plugin_sdk::page::{keyset_result, Paging};
use coremcp_plugin_sdk::prelude::*;
use coremcp_plugin_sdk::time::Time;
use coremcp_store::query::contains_pattern;
use coremcp_store::records::Record;

use super::RECORDING;

pub const TOOL: Tool = Tool::new(
    "session_list_recorded",
    "List recorded sessions, newest first: each recording's metadata and summary \
        with the session's agent, host and project (no transcripts: session_get with \
        include_recording reads one). Filters combine: project, agent, host, since (inclusive) \
        and until (exclusive) on recorded_at, query (case-insensitive text in title or \
        summary). Pass next_cursor back for the next page.",
    &typed(handler),
)
.hints(Hints::READ);

#[derive(Debug, Args)]
pub struct ListRecorded {
    #[arg(flatten)]
    filter: super::Filter,
    /// RFC 3339 time: only recordings made at or after it
    since: Option<Time>,
    /// RFC 3339 time: only recordings made before it
    until: Option<Time>,
    /// text to find in the title or summary (case-insensitive)
    #[arg(max_len = 200)]
    query: Option<String>,
    #[arg(flatten)]
    page: Paging,
}

fn handler(_: &Ctx<'_>, args: ListRecorded) -> Result<Value, ToolError> {
    let since = args.since.map(|t| t.stored());
    let until = args.until.map(|t| t.stored());
    let query = args
        .query
        .filter(|q| !q.is_empty())
        .map(|q| contains_pattern(&q.to_lowercase()));
    let limit = args.page.limit;
    let after = args.page.after(2)?;
    let fields = format!("{RECORDING} session_id agent host project=project_key?");
    let rows = SERVICE.run(|tx| {
        let c = bytewise(tx);
        let mut q = Query::new();
        args.filter.apply(&mut q, "s.");
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
            items.push(Record::of(&row, &fields)?.done());
        }
        Ok(items)
    })?;
    Ok(keyset_result(
        rows,
        limit,
        &["recorded_at", "recording_id"],
        40,
    ))
}
