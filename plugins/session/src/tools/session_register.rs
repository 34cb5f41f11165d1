//! `session_register`: register an active agent session, or register again.
//!
//! Invariants:
//! - One statement (`INSERT … ON CONFLICT (id) DO UPDATE`), so registering the same id from two
//!   places at once yields one session.
//! - Registering an existing id keeps `started_at` and `heartbeat_count`, replaces agent and
//!   host, replaces each optional field that is given and keeps the ones left out, and counts as
//!   a heartbeat (`last_heartbeat_at` = now).
//! - Registering a closed session re-activates it (the close fields are cleared): this is how a
//!   client whose heartbeat answered `closed: true` comes back under the same id.

use coremcp_nervhq::grammar::check_session_id;
use coremcp_nervhq::SERVICE;
use coremcp_plugin_sdk::legacy::{Args, Untyped};
use coremcp_plugin_sdk::ToolError;
use coremcp_plugin_sdk::{self as sdk, Ctx, Hints, Tool};
use coremcp_store::plugin::{invalid, json_text, new_id, now};
use coremcp_store::Param;
use serde_json::{json, Value};

use super::{HEARTBEAT_INTERVAL_S, STALE_AFTER_S};

/// The most bytes `metadata` may take as JSON text.
const MAX_METADATA_BYTES: usize = 16 * 1024;

pub const TOOL: Tool = Tool::new(
    "session_register",
    "Register an active agent session. Returns session_id (yours, or a new ULID), \
        heartbeat_interval_s (60: call session_heartbeat that often) and stale_after_s (900: \
        after that long without one, session_close_stale may close it). Repeating with the same \
        session_id is the same session: started_at is kept, given fields are updated (fields \
        left out keep their value), and a closed session becomes active again.",
    &Untyped::new(
        r#"{
        "type": "object",
        "properties": {
            "agent": {"type": "string", "minLength": 1, "maxLength": 200, "description": "agent or client name"},
            "session_id": {"type": "string", "description": "your own session id, a ULID or UUID (repeat it to register the same session again); absent: a new ULID"},
            "host": {"type": "string", "minLength": 1, "maxLength": 255, "description": "the host the agent runs on (default: this Core MCP's host name)"},
            "project": {"type": "string", "maxLength": 200, "description": "project key the session works on"},
            "cwd": {"type": "string", "maxLength": 4096, "description": "working directory"},
            "repo": {"type": "string", "maxLength": 1000, "description": "repository (path, URL or source ref)"},
            "branch": {"type": "string", "maxLength": 255, "description": "git branch"},
            "model": {"type": "string", "maxLength": 200, "description": "model name"},
            "groups": {"type": "array", "items": {"type": "string"}, "maxItems": 100, "description": "tool groups loaded in the session"},
            "metadata": {"type": "object", "description": "free-form JSON object (at most 16 KiB)"}
        },
        "required": ["agent"],
        "additionalProperties": false
    }"#,
        handler,
    ),
)
.hints(Hints::of(coremcp_nervhq::IDEMPOTENT_WRITE));

const REGISTER: &str = "
    INSERT INTO session (id, agent, host, project_key, cwd, repo, branch, model, groups,
                         metadata, status, started_at, last_heartbeat_at, heartbeat_count,
                         version)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'active', $11, $11, 0, 1)
    ON CONFLICT (id) DO UPDATE SET
        agent = excluded.agent,
        host = excluded.host,
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

fn handler(_: &Ctx<'_>, args: Args) -> Result<Value, ToolError> {
    let agent = args.str("agent")?;
    let id = match args.opt_str("session_id")? {
        Some(id) => {
            check_session_id("session_id", id)?;
            id.to_owned()
        }
        None => new_id(),
    };
    let host = match args.opt_str("host")? {
        Some(host) => host.to_owned(),
        None => sdk::config("host.name")
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "unknown".to_owned()),
    };
    let groups = args.0.get("groups").filter(|v| !v.is_null()).map(json_text);
    let metadata = args
        .0
        .get("metadata")
        .filter(|v| !v.is_null())
        .map(json_text);
    if let Some(text) = &metadata {
        if text.len() > MAX_METADATA_BYTES {
            return Err(invalid(
                "metadata",
                format!(
                    "{} bytes of JSON is over the limit of {MAX_METADATA_BYTES}",
                    text.len()
                ),
            ));
        }
    }
    let mut params: Vec<Param> = vec![id.as_str().into(), agent.into(), host.into()];
    for name in ["project", "cwd", "repo", "branch", "model"] {
        params.push(args.opt_str(name)?.into());
    }
    params.extend([groups.into(), metadata.into(), now().into()]);
    let version = SERVICE.run(|tx| Ok(tx.query_one(REGISTER, &params)?.get_i64("version")?))?;
    Ok(json!({
        "session_id": id,
        "heartbeat_interval_s": HEARTBEAT_INTERVAL_S,
        "stale_after_s": STALE_AFTER_S,
        "created": version == 1,
        "status": "active",
    }))
}
