//! `session_record`: an agent session's transcript, read on this machine, stored as a recording
//! with the Session service. The transcript is Claude Code's (auto-detected: the newest
//! `~/.claude/projects/<folder>/*.jsonl` for this process's folder or a root) or Codex's (the
//! newest `$CODEX_HOME/sessions/…/*.jsonl`), or `transcript_path` inside the roots; its stats
//! come from [`crate::transcript`], and it is packed by `coremcp-recording`.
//!
//! Invariants:
//! - Only the write leaves this machine: the host stores it (`host_call("session.record")`)
//!   where the Session group's calls go — the relay list when there is one, else this
//!   process's Session plugin on its store.
//! - A transcript over the recording limit is refused before it is read into memory.
//! - The same transcript recorded twice is one recording (`content_hash`); the second call
//!   answers `recorded: false` and changes nothing.

use std::path::{Path, PathBuf};

use coremcp_plugin_kit::Roots;
use coremcp_plugin_sdk::args::invalid;
use coremcp_plugin_sdk::{host_call, prelude::*};
use coremcp_recording::{pack, MAX_TRANSCRIPT_BYTES};

use crate::transcript::{self, claude_project_dir, newest_jsonl, Format};

pub const TOOL: Tool = Tool::typed("session_record", &typed(handler)).hints(Hints::ADD);

/// Record an agent session from its Claude Code or Codex transcript (found, or
/// transcript_path): stats, compressed, stored. Idempotent.
#[derive(Debug, Args)]
pub struct Record {
    /// default: the transcript's
    #[arg(min_len = 1, max_len = 100)]
    session_id: Option<String>,
    /// in the roots (default: this session's)
    #[arg(min_len = 1, max_len = 4096)]
    transcript_path: Option<String>,
    /// the recording's title
    #[arg(min_len = 1, max_len = 500)]
    title: Option<String>,
    /// what the session did
    #[arg(max_len = 20000)]
    summary: Option<String>,
    /// labels
    #[arg(max_items = 50)]
    tags: Option<Vec<String>>,
    /// project key for a new session
    #[arg(min_len = 1, max_len = 200)]
    project: Option<String>,
}

fn handler(ctx: &Ctx<'_>, args: Record) -> Result<Value, ToolError> {
    let roots = Roots::from_host()?;
    let path = match args.transcript_path.as_deref() {
        Some(given) => roots.resolve("transcript_path", Some(given), None)?,
        None => detect(&roots)?,
    };
    let text = read(&path)?;
    let host = coremcp_plugin_sdk::config("host.name")
        .filter(|h| !h.is_empty())
        .unwrap_or_else(crate::tools::bootstrap::machine_name);
    let (store, stats) = prepare(&args, &path, &text, &host)?;
    let timeout_ms = ctx.remaining().as_millis().max(1) as u64;
    let mut out = host_call(
        "session.record",
        &json!({"args": store, "timeout_ms": timeout_ms}),
    )?;
    out["transcript_path"] = path.display().to_string().into();
    out["size_bytes"] = store["size_bytes"].clone();
    out["packed_chars"] = store["transcript"].as_str().map_or(0, str::len).into();
    out["content_hash"] = store["content_hash"].clone();
    out["stats"] = stats;
    Ok(out)
}

/// The Session service's `session_record` arguments for `text` read from `path`, and the stats.
pub fn prepare(
    args: &Record,
    path: &Path,
    text: &str,
    host: &str,
) -> Result<(Value, Value), ToolError> {
    let (format, stats) = transcript::read(text);
    let session_id = args
        .session_id
        .clone()
        .or_else(|| stats.client_session_id.clone())
        .ok_or_else(|| {
            invalid(
                "session_id",
                format!(
                    "{} carries no session id (no sessionId or session_meta id): name the session",
                    path.display()
                ),
            )
        })?;
    let packed = pack(text).map_err(|e| invalid("transcript_path", e.to_string()))?;
    let stats_json = stats.to_json(format);
    let stored_format = if path.extension().is_some_and(|x| x == "md") {
        "markdown"
    } else if stats.lines > stats.unparsed_lines {
        "jsonl"
    } else {
        "text"
    };
    let agent = match format {
        Format::ClaudeCode => Some("claude-code"),
        Format::Codex => Some("codex"),
        Format::Other => None,
    };
    let mut store = json!({
        "session_id": session_id,
        "host": host,
        "format": stored_format,
        "transcript": packed.data,
        "size_bytes": packed.size_bytes,
        "content_hash": packed.content_hash,
        "stats": stats_json,
    });
    let optional = [
        ("agent", agent.map(str::to_owned)),
        ("project", args.project.clone()),
        ("cwd", stats.cwd.clone()),
        ("started_at", stats.first_at.clone()),
        ("ended_at", stats.last_at.clone()),
        ("title", args.title.clone()),
        ("summary", args.summary.clone()),
    ];
    for (key, value) in optional {
        if let Some(value) = value {
            store[key] = value.into();
        }
    }
    if let Some(tags) = &args.tags {
        store["tags"] = tags.clone().into();
    }
    Ok((store, stats_json))
}

/// The transcript of the current session: the newest of Claude Code's for this process's folder
/// and the roots, and Codex's.
fn detect(roots: &Roots) -> Result<PathBuf, ToolError> {
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let home = env("HOME").map(PathBuf::from).ok_or_else(|| {
        ToolError::new(
            codes::NOT_CONFIGURED,
            "session_record: HOME is not set, so no transcript can be found: give transcript_path",
        )
    })?;
    let mut folders: Vec<PathBuf> = std::env::current_dir().into_iter().collect();
    folders.extend(roots.paths().iter().cloned());
    let codex = env("CODEX_HOME").map_or_else(|| home.join(".codex"), PathBuf::from);
    let (found, looked) = newest_transcript(&home, &folders, &codex.join("sessions"));
    found.ok_or_else(|| {
        ToolError::new(
            codes::NOT_FOUND,
            format!(
                "no transcript of this session was found (looked in {}): give transcript_path",
                looked
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )
    })
}

/// The newest `.jsonl` in Claude Code's folders for `folders` and under `codex_sessions`
/// (its `YYYY/MM/DD` tree), with every folder looked in.
pub fn newest_transcript(
    home: &Path,
    folders: &[PathBuf],
    codex_sessions: &Path,
) -> (Option<PathBuf>, Vec<PathBuf>) {
    let mut looked: Vec<PathBuf> = Vec::new();
    for folder in folders {
        let dir = claude_project_dir(home, folder);
        if !looked.contains(&dir) {
            looked.push(dir);
        }
    }
    let mut candidates: Vec<PathBuf> = looked.iter().filter_map(|d| newest_jsonl(d)).collect();
    candidates.extend(newest_in_tree(codex_sessions, 3));
    looked.push(codex_sessions.to_owned());
    let newest = candidates
        .into_iter()
        .filter_map(|p| Some((std::fs::metadata(&p).ok()?.modified().ok()?, p)))
        .max()
        .map(|(_, p)| p);
    (newest, looked)
}

/// The newest `.jsonl` in `dir` or in its sub-folders down to `depth` levels, following the
/// newest-named folder at each level (Codex names them by date).
fn newest_in_tree(dir: &Path, depth: u32) -> Option<PathBuf> {
    if let Some(file) = newest_jsonl(dir) {
        return Some(file);
    }
    if depth == 0 {
        return None;
    }
    let mut subdirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect();
    subdirs.sort();
    subdirs
        .iter()
        .rev()
        .find_map(|d| newest_in_tree(d, depth - 1))
}

/// The transcript's text, refused over the recording limit before it is read.
fn read(path: &Path) -> Result<String, ToolError> {
    let shown = path.display();
    let failed = |e: std::io::Error| invalid("transcript_path", format!("{shown}: {e}"));
    let meta = std::fs::metadata(path).map_err(failed)?;
    if !meta.is_file() {
        return Err(invalid("transcript_path", format!("{shown} is not a file")));
    }
    if meta.len() > MAX_TRANSCRIPT_BYTES {
        return Err(invalid(
            "transcript_path",
            format!(
                "{shown} is {} bytes; at most {MAX_TRANSCRIPT_BYTES} are recorded",
                meta.len()
            ),
        ));
    }
    let bytes = std::fs::read(path).map_err(failed)?;
    String::from_utf8(bytes)
        .map_err(|_| invalid("transcript_path", format!("{shown} is not UTF-8 text")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use coremcp_plugin_sdk::testing::parse;

    fn record(args: Value) -> Record {
        parse(args).expect("arguments")
    }

    #[test]
    fn a_claude_code_transcript_becomes_the_services_arguments() {
        let session = "0b0e2c3a-7d7e-4a55-9c53-1b2f1f0a9e11";
        let text = transcript::claude_fixture(session, "/work/demo", 3);
        let args = record(json!({"title": "demo", "tags": ["a"], "project": "CORE"}));
        let (store, stats) =
            prepare(&args, Path::new("/t/s.jsonl"), &text, "devbox").expect("prepare");
        assert_eq!(store["session_id"], session);
        assert_eq!(store["agent"], "claude-code");
        assert_eq!(store["format"], "jsonl");
        assert_eq!(store["cwd"], "/work/demo");
        assert_eq!(store["host"], "devbox");
        assert_eq!(
            (store["title"].clone(), store["project"].clone()),
            (json!("demo"), json!("CORE"))
        );
        assert_eq!(store["tags"], json!(["a"]));
        assert_eq!(store["size_bytes"], text.len());
        assert_eq!(stats["turns"], 3);
        assert_eq!(stats["tool_calls"], 3);
        let data = store["transcript"].as_str().expect("packed");
        assert_eq!(
            coremcp_recording::unpack(data, MAX_TRANSCRIPT_BYTES).expect("unpack"),
            text
        );
        assert!(store.get("summary").is_none(), "no nulls: {store}");
    }

    #[test]
    fn a_transcript_without_a_session_id_needs_one_named() {
        let text = "plain words\n";
        let err =
            prepare(&record(json!({})), Path::new("/t/notes.txt"), text, "h").expect_err("no id");
        assert!(err.message.contains("session_id"), "{err}");
        let (store, _) = prepare(
            &record(json!({"session_id": "01J0000000000000000000000A"})),
            Path::new("/t/notes.md"),
            text,
            "h",
        )
        .expect("named");
        assert_eq!(store["format"], "markdown");
        assert!(store.get("agent").is_none());
    }

    #[test]
    fn the_newest_of_claude_codes_and_codexs_transcripts_is_found() {
        let tmp = std::env::temp_dir().join(format!("coremcp-rec-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        let project = tmp.join("work/demo");
        let claude = claude_project_dir(&tmp, &project);
        let codex = tmp.join(".codex/sessions");
        let day = codex.join("2026/12/04");
        for dir in [&claude, &day, &codex.join("2026/11/30")] {
            std::fs::create_dir_all(dir).expect("mkdir");
        }
        let (none, looked) = newest_transcript(&tmp, std::slice::from_ref(&project), &codex);
        assert_eq!(none, None);
        assert_eq!(looked, [claude.clone(), codex.clone()]);
        std::fs::write(claude.join("a.jsonl"), "{}\n").expect("write");
        let (found, _) = newest_transcript(&tmp, std::slice::from_ref(&project), &codex);
        assert_eq!(found, Some(claude.join("a.jsonl")));
        std::fs::write(day.join("rollout-1.jsonl"), "{}\n").expect("write");
        let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        std::fs::File::options()
            .write(true)
            .open(claude.join("a.jsonl"))
            .and_then(|f| f.set_modified(hour_ago))
            .expect("age the Claude Code transcript");
        let (found, _) = newest_transcript(&tmp, &[project], &codex);
        assert_eq!(found, Some(day.join("rollout-1.jsonl")));
        let _ = std::fs::remove_dir_all(&tmp);
    }
}
