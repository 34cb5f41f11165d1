//! `session_get`: one session, active or closed, with every field it has, and on request its
//! most recent recording. What outgrows the answer is cut with `<field>_truncated`,
//! `<field>_total_chars` and `<field>_next_offset`, read on with `offset`: the session's
//! summary alone, or with `include_recording` the transcript (also cut at `max_chars`), beside
//! summaries that show their start.

use coremcp_nervhq::{bytewise, SERVICE};
use coremcp_plugin_sdk::budget;
use coremcp_plugin_sdk::prelude::*;

use coremcp_recording::{unpack, ENCODING, MAX_TRANSCRIPT_BYTES};
use coremcp_store::plugin::TxError;
use coremcp_store::records::Record;

use super::{no_session, session_json, SessionId, COLUMNS, RECORDING};

/// The default cut of a transcript, in characters.
pub const DEFAULT_MAX_CHARS: usize = 20_000;

pub const TOOL: Tool = Tool::typed("session_get", &typed(handler)).hints(Hints::READ);

/// Get one session with all its fields; include_recording adds its latest recording, cut at
/// max_chars.
#[derive(Debug, Args)]
pub struct Get {
    /// the session's id
    session_id: SessionId,
    /// add the latest recording
    #[arg(default)]
    include_recording: bool,
    /// cut at (default 20000)
    #[arg(min = 0, default = DEFAULT_MAX_CHARS)]
    max_chars: usize,
    /// summary (or transcript) from char
    #[arg(min = 0, default = 0)]
    offset: usize,
}

fn handler(_: &Ctx<'_>, args: Get) -> Result<Value, ToolError> {
    let id = args.session_id.as_str();
    let (include_recording, max_chars) = (args.include_recording, args.max_chars);
    let (session, recording) = SERVICE.read(|tx| {
        let c = bytewise(tx);
        let row = tx
            .query_opt(
                &format!("SELECT {COLUMNS} FROM session WHERE id = $1"),
                &[id.into()],
            )?
            .ok_or_else(|| no_session(id))?;
        let session = session_json(&row)?;
        let recording = if include_recording {
            let row = tx.query_opt(
                &format!(
                    "SELECT id, recorded_at, title, summary, tags, format, transcript, encoding,
                            size_bytes, content_hash, stats
                     FROM session_recording WHERE session_id = $1
                     ORDER BY recorded_at DESC, id{c} DESC LIMIT 1"
                ),
                &[id.into()],
            )?;
            match row {
                Some(row) => Some((
                    Record::of(&row, &format!("{RECORDING} content_hash"))?.done(),
                    transcript_of(&row)?,
                )),
                None => None,
            }
        } else {
            None
        };
        Ok((session, recording))
    })?;
    let mut result = session.done();
    let Some((mut recording, transcript)) = recording else {
        // The session alone: its summary is what `offset` reads. Beside metadata at its 16 KiB
        // limit, a long cwd or repo yields too (each says so).
        let fields = [("summary", args.offset), ("cwd", 0), ("repo", 0)];
        budget::fit_fields(&mut result, &fields, budget::result_budget());
        return Ok(result);
    };
    // With a recording, `offset` reads its transcript; the summaries show their start (the
    // session's reads whole without include_recording).
    budget::cut_field(&mut result, "summary", budget::LISTED_TEXT);
    budget::cut_field(&mut recording, "summary", budget::LISTED_TEXT);
    recording["transcript"] = transcript.into();
    result["recording"] = json!({});
    let room = budget::result_budget().saturating_sub(budget::chars(&result));
    budget::fit_windows(
        &mut recording,
        &[("transcript", args.offset, max_chars)],
        room,
    );
    result["recording"] = recording;
    Ok(result)
}

/// The stored transcript as text, unpacked when Ops `session_record` packed it.
fn transcript_of(row: &coremcp_store::Row) -> Result<String, TxError> {
    let stored = row.get_text("transcript")?;
    if row.get_text("encoding")? != ENCODING {
        return Ok(stored);
    }
    unpack(&stored, MAX_TRANSCRIPT_BYTES).map_err(|e| {
        TxError::from(ToolError::new(
            codes::FAILED,
            format!("the stored recording is damaged: {e}"),
        ))
    })
}
