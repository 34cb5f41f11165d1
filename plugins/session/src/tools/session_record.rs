//! The recording write behind Ops `session_record`: an internal entry of the group (never
//! listed), which the host calls in-process when it has no relays, and a service-mode Core MCP
//! runs when a proxy forwards the write to it.
//!
//! Invariants:
//! - The packed transcript is unpacked here and its size and hash checked against what the
//!   caller says, so a stored `content_hash` is always the hash of the stored text.
//! - One transaction: the session row (created closed when absent, so a recording always hangs
//!   off one) and the recording; `content_hash` is UNIQUE, so a second upload of the same
//!   transcript, even a concurrent one, stores nothing and answers with the first recording.

use coremcp_nervhq::SERVICE;
use coremcp_plugin_sdk::prelude::*;
use coremcp_recording::{content_hash, unpack, ENCODING, MAX_PACKED_CHARS, MAX_TRANSCRIPT_BYTES};
use coremcp_store::plugin::TxError;
use coremcp_store::plugin::{invalid, json_text, new_id, now, parse_timestamp, timestamp};
use coremcp_store::{Param, Tx};

use super::SessionId;

pub const TOOL: Tool = Tool::typed("session_record", &typed(handler)).hints(Hints::IDEMPOTENT);

#[derive(Debug, Clone, Copy, ArgEnum)]
enum Format {
    Jsonl,
    Markdown,
    Text,
}

/// Store a session recording packed by Ops session_record (gzip, then base64) under a session,
/// creating the session closed when it does not exist. Called by the host for session_record;
/// not a tool clients list.
#[derive(Debug, Args)]
pub struct Store {
    /// the session the recording belongs to
    session_id: SessionId,
    /// the agent, for a session row created here
    #[arg(min_len = 1, max_len = 200)]
    agent: Option<String>,
    /// the host the transcript was read on, for a session row created here
    #[arg(min_len = 1, max_len = 255)]
    host: Option<String>,
    /// project key, for a session row created here
    #[arg(max_len = 200)]
    project: Option<String>,
    /// working folder, for a session row created here
    #[arg(max_len = 4096)]
    cwd: Option<String>,
    /// when the session started (RFC 3339), for a session row created here
    #[arg(max_len = 64)]
    started_at: Option<String>,
    /// when the session ended (RFC 3339), for a session row created here
    #[arg(max_len = 64)]
    ended_at: Option<String>,
    /// the recording's title
    #[arg(max_len = 500)]
    title: Option<String>,
    /// what the session did
    #[arg(max_len = 20000)]
    summary: Option<String>,
    /// labels
    #[arg(max_items = 50)]
    tags: Option<Vec<String>>,
    /// the transcript's format
    format: Format,
    /// the transcript, gzip then base64
    #[arg(min_len = 1, max_len = MAX_PACKED_CHARS)]
    transcript: String,
    /// bytes of the unpacked transcript
    #[arg(max = MAX_TRANSCRIPT_BYTES)]
    size_bytes: u64,
    /// sha256: and the hex SHA-256 of the unpacked transcript
    #[arg(min_len = 71, max_len = 71)]
    content_hash: String,
    /// turns, tool calls, duration and the like
    stats: Option<Map<String, Value>>,
}

const NEW_SESSION: &str = "
    INSERT INTO session (id, agent, host, project_key, cwd, status, started_at,
                         last_heartbeat_at, heartbeat_count, closed_at, close_reason, version)
    VALUES ($1, $2, $3, $4, $5, 'closed', $6, $7, 0, $7, 'done', 1)
    ON CONFLICT (id) DO NOTHING";

const NEW_RECORDING: &str = "
    INSERT INTO session_recording (id, session_id, recorded_at, title, summary, tags, format,
                                   transcript, encoding, size_bytes, content_hash, stats)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
    ON CONFLICT (content_hash) DO NOTHING";

fn handler(_: &Ctx<'_>, args: Store) -> Result<Value, ToolError> {
    let text = unpack(&args.transcript, MAX_TRANSCRIPT_BYTES)
        .map_err(|e| invalid("transcript", e.to_string()))?;
    if text.len() as u64 != args.size_bytes {
        return Err(invalid(
            "size_bytes",
            format!(
                "the transcript unpacks to {} bytes, not {}",
                text.len(),
                args.size_bytes
            ),
        ));
    }
    if content_hash(&text) != args.content_hash {
        return Err(invalid(
            "content_hash",
            "it is not the SHA-256 of the unpacked transcript",
        ));
    }
    let id = args.session_id.as_str();
    let stamp = |field: &str, given: &Option<String>| -> Result<Option<String>, ToolError> {
        given
            .as_deref()
            .map(|t| {
                parse_timestamp(t)
                    .map(timestamp)
                    .ok_or_else(|| invalid(field, format!("{t:?} is not an RFC 3339 time")))
            })
            .transpose()
    };
    let recorded_at = now();
    let started = stamp("started_at", &args.started_at)?.unwrap_or_else(|| recorded_at.clone());
    let ended = stamp("ended_at", &args.ended_at)?.unwrap_or_else(|| started.clone());
    let session: Vec<Param> = vec![
        id.into(),
        args.agent.unwrap_or_else(|| "unknown".to_owned()).into(),
        args.host.unwrap_or_else(|| "unknown".to_owned()).into(),
        args.project.into(),
        args.cwd.into(),
        started.into(),
        ended.into(),
    ];
    let recording_id = new_id();
    let recording: Vec<Param> = vec![
        recording_id.as_str().into(),
        id.into(),
        recorded_at.into(),
        args.title.into(),
        args.summary.into(),
        args.tags.map(|t| json_text(&Value::from(t))).into(),
        args.format.as_str().into(),
        args.transcript.into(),
        ENCODING.into(),
        i64::try_from(args.size_bytes).unwrap_or(i64::MAX).into(),
        args.content_hash.as_str().into(),
        args.stats.map(|s| json_text(&Value::Object(s))).into(),
    ];
    SERVICE.run(|tx| {
        let hash = args.content_hash.as_str();
        if let Some(first) = recorded(tx, hash)? {
            return Ok(first);
        }
        let created_session = tx.execute(NEW_SESSION, &session)? == 1;
        if tx.execute(NEW_RECORDING, &recording)? == 1 {
            return Ok(json!({
                "recorded": true,
                "recording_id": recording_id,
                "session_id": id,
                "created_session": created_session,
            }));
        }
        // The same transcript was recorded between the two statements (PostgreSQL).
        recorded(tx, hash)?.ok_or_else(|| {
            ToolError::new(
                codes::CONFLICT,
                "the recording was removed while storing it; retry",
            )
            .into()
        })
    })
}

/// The answer for a transcript already recorded under `hash`, if it is.
fn recorded(tx: &mut Tx<'_>, hash: &str) -> Result<Option<Value>, TxError> {
    let row = tx.query_opt(
        "SELECT id, session_id FROM session_recording WHERE content_hash = $1",
        &[hash.into()],
    )?;
    let Some(row) = row else { return Ok(None) };
    Ok(Some(json!({
        "recorded": false,
        "recording_id": row.get_text("id")?,
        "session_id": row.get_text("session_id")?,
        "created_session": false,
        "note": "this transcript is already recorded (same content_hash): nothing changed",
    })))
}
