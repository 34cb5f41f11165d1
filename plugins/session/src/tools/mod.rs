//! One module per tool of the group, each exporting its table entry as `TOOL`, and what they
//! share: the lifecycle constants, the [`SessionId`] argument, and a session row as JSON.

pub mod session_close;
pub mod session_close_stale;
pub mod session_get;
pub mod session_heartbeat;
pub mod session_list_active;
pub mod session_list_recorded;
pub mod session_register;

use coremcp_nervhq::grammar::check_session_id;
use coremcp_nervhq::result::{put_opt, ts, ts_opt};
use coremcp_plugin_sdk::args::{ArgError, ArgType};
use coremcp_plugin_sdk::prelude::*;
use coremcp_store::plugin::json_value;
use coremcp_store::query::Query;
use coremcp_store::{Row, StoreError};

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

/// A session id argument: a ULID or a UUID, refused by name otherwise.
#[derive(Debug, Clone)]
pub struct SessionId(pub String);

impl ArgType for SessionId {
    fn schema() -> Value {
        String::schema()
    }

    fn from_value(value: Value, at: &str) -> Result<Self, ArgError> {
        let id = String::from_value(value, at)?;
        match check_session_id(at, &id) {
            Ok(()) => Ok(Self(id)),
            // The grammar's message names the argument already.
            Err(e) => Err(ArgError::new(at, without_field(&e.message, at))),
        }
    }
}

/// `message` without its leading `argument "FIELD": ` (the argument error adds it back).
fn without_field<'a>(message: &'a str, field: &str) -> &'a str {
    message
        .strip_prefix(&format!("argument \"{field}\": "))
        .unwrap_or(message)
}

/// The filters both session lists take (`#[arg(flatten)]`).
#[derive(Debug, Args)]
pub struct Filter {
    /// only sessions on this host
    host: Option<String>,
    /// only sessions of this agent
    agent: Option<String>,
    /// only sessions on this project key
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

/// The fields both a listing and `session_get` show, from a row with [`ACTIVE_COLUMNS`].
pub fn listing_json(row: &Row) -> Result<Map<String, Value>, StoreError> {
    let mut map = Map::new();
    map.insert("session_id".into(), row.get_text("id")?.into());
    map.insert("agent".into(), row.get_text("agent")?.into());
    map.insert("host".into(), row.get_text("host")?.into());
    put_opt(&mut map, "project", row.get_opt_text("project_key")?);
    for column in ["cwd", "repo", "branch", "model"] {
        put_opt(&mut map, column, row.get_opt_text(column)?);
    }
    map.insert("started_at".into(), ts(row, "started_at")?.into());
    map.insert(
        "last_heartbeat_at".into(),
        ts(row, "last_heartbeat_at")?.into(),
    );
    map.insert(
        "heartbeat_count".into(),
        row.get_i64("heartbeat_count")?.into(),
    );
    put_opt(&mut map, "note", row.get_opt_text("note")?);
    put_opt(&mut map, "current_item", row.get_opt_text("current_item")?);
    Ok(map)
}

/// Every field of a session, from a row with [`COLUMNS`]; absent ones are left out.
pub fn session_json(row: &Row) -> Result<Map<String, Value>, StoreError> {
    let mut map = listing_json(row)?;
    for column in ["groups", "metadata"] {
        let value = json_value(row.get_opt_text(column)?);
        if !value.is_null() {
            map.insert(column.into(), value);
        }
    }
    map.insert("status".into(), row.get_text("status")?.into());
    put_opt(&mut map, "closed_at", ts_opt(row, "closed_at")?);
    put_opt(&mut map, "close_reason", row.get_opt_text("close_reason")?);
    put_opt(&mut map, "summary", row.get_opt_text("summary")?);
    map.insert("version".into(), row.get_i64("version")?.into());
    Ok(map)
}

/// A recording's metadata (no transcript), from a row of `session_recording`.
pub fn recording_json(row: &Row) -> Result<Map<String, Value>, StoreError> {
    let mut map = Map::new();
    map.insert("recording_id".into(), row.get_text("id")?.into());
    map.insert("recorded_at".into(), ts(row, "recorded_at")?.into());
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
    Ok(map)
}
