//! One module per tool of the group, each exporting its table entry as `TOOL`, and what they
//! share: the lifecycle constants, the [`SessionId`] argument, and a session row as JSON.

pub mod session_close;
pub mod session_close_stale;
pub mod session_get;
pub mod session_heartbeat;
pub mod session_list_active;
pub mod session_list_recorded;
pub mod session_record;
pub mod session_register;

use coremcp_plugin_sdk::prelude::*;
use coremcp_store::query::Query;
use coremcp_store::records::Record;
use coremcp_store::{Row, StoreError};

pub use coremcp_nervhq::grammar::SessionId;

/// How often a client should send `session_heartbeat`, in seconds.
pub const HEARTBEAT_INTERVAL_S: u64 = 60;
/// After how many seconds without a heartbeat a session counts as stale (the default of
/// `session_close_stale`).
pub const STALE_AFTER_S: u64 = 900;

/// Every column of `session`, for [`session_json`].
pub const COLUMNS: &str = "id, agent, host, project_key, cwd, repo, branch, model, groups, \
    metadata, status, started_at, last_heartbeat_at, heartbeat_count, note, current_item, \
    closed_at, close_reason, summary, version";

/// The columns an active-session listing shows.
pub const ACTIVE_COLUMNS: &str = "id, agent, host, project_key, cwd, repo, branch, model, \
    started_at, last_heartbeat_at, heartbeat_count, note, current_item";

/// The fields both a listing and `session_get` show, from [`ACTIVE_COLUMNS`].
const LISTING: &str = "session_id=id agent host project=project_key? cwd? repo? branch? model? \
    started_at:ts last_heartbeat_at:ts heartbeat_count:int note? current_item?";

/// The fields of a closed session's close.
pub const CLOSE: &str = "status closed_at?:ts close_reason? summary?";

/// The filters both session lists take (`#[arg(flatten)]`).
#[derive(Debug, Args)]
pub struct Filter {
    /// on this host
    host: Option<String>,
    /// of this agent
    agent: Option<String>,
    /// of this project
    project: Option<String>,
}

impl Filter {
    /// The given filters as conditions on the session table, its columns prefixed `of`.
    pub fn apply(&self, q: &mut Query, of: &str) {
        q.eq_opt(&format!("{of}host"), self.host.as_deref());
        q.eq_opt(&format!("{of}agent"), self.agent.as_deref());
        q.eq_opt(&format!("{of}project_key"), self.project.as_deref());
    }
}

/// `not_found` for a session id.
pub fn no_session(id: &str) -> ToolError {
    ToolError::new(
        codes::NOT_FOUND,
        format!("no session {id}: register it with session_register"),
    )
}

/// A listing's fields, from a row with [`ACTIVE_COLUMNS`].
pub fn listing_json(row: &Row) -> Result<Record, StoreError> {
    Record::of(row, LISTING)
}

/// Every field of a session, from a row with [`COLUMNS`]; absent ones are left out.
pub fn session_json(row: &Row) -> Result<Record, StoreError> {
    Record::of(
        row,
        &format!("{LISTING} groups?:json metadata?:json {CLOSE} version:int"),
    )
}

/// A recording's metadata (no transcript), from a row of `session_recording`.
pub const RECORDING: &str = "recording_id=id recorded_at:ts title? summary? tags?:json \
    stats?:json format size_bytes:int";
