//! `session_list_recorded`: recordings' metadata and summaries with their session's agent, host
//! and project, newest first, keyset-paged on (recorded_at, id).
//!
//! Filters: project, agent and host (exact, on the session); `since` ≤ recorded_at < `until`;
//! `query` is a case-insensitive substring of the title or the summary (`%` and `_` match
//! themselves). Transcripts are never listed: `session_get include_recording` reads one.

use coremcp_nervhq::{Query, SERVICE};
use coremcp_plugin_sdk::prelude::*;
use coremcp_plugin_sdk::time::Time;
use coremcp_store::records::{Key, Order, Record};

use super::RECORDING;

pub const TOOL: Tool = Tool::typed("session_list_recorded", &typed(handler)).hints(Hints::READ);

/// List recorded sessions, newest first, without transcripts (session_get include_recording reads
/// one).
#[derive(Debug, Args)]
pub struct ListRecorded {
    #[arg(flatten)]
    filter: super::Filter,
    /// RFC 3339, inclusive
    since: Option<Time>,
    /// RFC 3339, exclusive
    until: Option<Time>,
    /// text in title or summary
    #[arg(max_len = 200)]
    query: Option<String>,
    #[arg(flatten)]
    page: Paging,
}

/// The list's order and cursors.
const ORDER: Order<'static> = Order::desc(
    "recorded",
    &[
        Key::time("r.recorded_at", "recorded_at"),
        Key::text("r.id", "id"),
    ],
);

fn handler(_: &Ctx<'_>, args: ListRecorded) -> Result<Value, ToolError> {
    let mut q = Query::new();
    args.filter.apply(&mut q, "s.");
    if let Some(since) = args.since {
        let p = q.bind(since.stored());
        q.and(format!("r.recorded_at >= {p}"));
    }
    if let Some(until) = args.until {
        let p = q.bind(until.stored());
        q.and(format!("r.recorded_at < {p}"));
    }
    q.contains(
        &["COALESCE(r.title, '')", "COALESCE(r.summary, '')"],
        args.query.as_deref().filter(|q| !q.is_empty()),
    );
    let select = "SELECT r.id, r.session_id, r.recorded_at, r.title, r.summary, r.tags, r.format, \
        r.size_bytes, r.stats, s.agent, s.host, s.project_key \
        FROM session_recording r JOIN session s ON s.id = r.session_id";
    let fields = format!("{RECORDING} session_id agent host project=project_key?");
    SERVICE.read(|tx| {
        ORDER.list(tx, select, &q, &args.page, |row| {
            // A listed summary shows its start; session_get reads it whole.
            let mut recording = Record::of(row, &fields)?.done();
            coremcp_plugin_sdk::budget::cut_field(
                &mut recording,
                "summary",
                coremcp_plugin_sdk::budget::LISTED_TEXT,
            );
            Ok(recording)
        })
    })
}
