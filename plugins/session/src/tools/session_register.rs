//! `session_register`: register an active agent session, or register again.
//!
//! Invariants:
//! - One statement (`INSERT … ON CONFLICT (id) DO UPDATE`), so registering the same id from two
//!   places at once yields one session.
//! - Registering an existing id keeps `started_at` and `heartbeat_count`, replaces the agent,
//!   replaces each optional field that is given (`host` too) and keeps the ones left out, and
//!   counts as a heartbeat (`last_heartbeat_at` = now). A new session without `host` is this
//!   host's; registering again through another machine does not move it.
//! - Registering a closed session re-activates it (the close fields are cleared): this is how a
//!   client whose heartbeat answered `closed: true` comes back under the same id.

use coremcp_nervhq::SERVICE;
use coremcp_plugin_sdk as sdk;
use coremcp_plugin_sdk::prelude::*;
use coremcp_store::plugin::{invalid, json_text, new_id, now};
use coremcp_store::Param;

use super::{SessionId, HEARTBEAT_INTERVAL_S, STALE_AFTER_S};

/// The most bytes `metadata` may take as JSON text.
const MAX_METADATA_BYTES: usize = 16 * 1024;

pub const TOOL: Tool = Tool::typed("session_register", &typed(handler)).hints(Hints::IDEMPOTENT);

/// Register an active agent session; returns session_id, heartbeat_interval_s, stale_after_s.
/// The same session_id again updates it (reactivating a closed one).
#[derive(Debug, Args)]
pub struct Register {
    /// agent or client name
    #[arg(min_len = 1, max_len = 200)]
    agent: String,
    /// your ULID or UUID (absent: a new ULID)
    session_id: Option<SessionId>,
    /// default: this host
    #[arg(min_len = 1, max_len = 255)]
    host: Option<String>,
    /// project key
    #[arg(max_len = 200)]
    project: Option<String>,
    /// working directory
    #[arg(max_len = 4096)]
    cwd: Option<String>,
    /// path, URL or source ref
    #[arg(max_len = 1000)]
    repo: Option<String>,
    /// git branch
    #[arg(max_len = 255)]
    branch: Option<String>,
    /// model name
    #[arg(max_len = 200)]
    model: Option<String>,
    /// tool groups in use
    #[arg(max_items = 100)]
    groups: Option<Vec<String>>,
    /// JSON object
    metadata: Option<Map<String, Value>>,
}

const REGISTER: &str = "
    INSERT INTO session (id, agent, host, project_key, cwd, repo, branch, model, groups,
                         metadata, status, started_at, last_heartbeat_at, heartbeat_count,
                         version)
    VALUES ($1, $2, COALESCE($3, $12), $4, $5, $6, $7, $8, $9, $10, 'active', $11, $11, 0, 1)
    ON CONFLICT (id) DO UPDATE SET
        agent = excluded.agent,
        host = COALESCE($3, session.host),
        project_key = COALESCE(excluded.project_key, session.project_key),
        cwd = COALESCE(excluded.cwd, session.cwd),
        repo = COALESCE(excluded.repo, session.repo),
        branch = COALESCE(excluded.branch, session.branch),
        model = COALESCE(excluded.model, session.model),
        groups = COALESCE(excluded.groups, session.groups),
        metadata = COALESCE(excluded.metadata, session.metadata),
        status = 'active',
        last_heartbeat_at = excluded.last_heartbeat_at,
        closed_at = NULL,
        close_reason = NULL,
        summary = NULL,
        version = session.version + 1
    RETURNING version";

fn handler(_: &Ctx<'_>, args: Register) -> Result<Value, ToolError> {
    let id = args.session_id.map_or_else(new_id, |id| id.0);
    // A new session's host when none is given; an existing one keeps its own.
    let this_host = sdk::config("host.name")
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown".to_owned());
    let groups = args.groups.map(|g| json_text(&Value::from(g)));
    let metadata = args.metadata.map(|m| json_text(&Value::Object(m)));
    if let Some(text) = metadata.as_ref().filter(|t| t.len() > MAX_METADATA_BYTES) {
        return Err(invalid(
            "metadata",
            format!(
                "{} bytes of JSON is over the limit of {MAX_METADATA_BYTES}",
                text.len()
            ),
        ));
    }
    let mut params: Vec<Param> = vec![id.as_str().into(), args.agent.into(), args.host.into()];
    for value in [args.project, args.cwd, args.repo, args.branch, args.model] {
        params.push(value.into());
    }
    params.extend([
        groups.into(),
        metadata.into(),
        now().into(),
        this_host.into(),
    ]);
    let version = SERVICE.run(|tx| Ok(tx.query_one(REGISTER, &params)?.get_i64("version")?))?;
    Ok(json!({
        "session_id": id,
        "heartbeat_interval_s": HEARTBEAT_INTERVAL_S,
        "stale_after_s": STALE_AFTER_S,
        "created": version == 1,
        "status": "active",
    }))
}
