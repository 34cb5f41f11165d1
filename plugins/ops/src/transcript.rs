//! Reading an agent client's session transcript (for `session_record`): which client wrote it,
//! and the stats a recording carries — turns, assistant messages, tool calls, the first and
//! last timestamps and the duration between them, the client's own session id and working
//! folder.
//!
//! Formats (both JSON Lines, one event per line):
//! - Claude Code (`~/.claude/projects/<folder>/<session>.jsonl`): events with `type` `user`,
//!   `assistant`, `summary`, …, a `timestamp`, `sessionId`, `cwd`, and `message.content`
//!   blocks (`text`, `tool_use`, `tool_result`). A `user` event holding only `tool_result`
//!   blocks is a tool's answer, not a turn.
//! - Codex (`~/.codex/sessions/YYYY/MM/DD/rollout-….jsonl`): a `session_meta` event whose
//!   `payload` has `id` and `cwd`, then `response_item` events whose `payload.type` is
//!   `message` (with `role`) or `function_call`.
//!
//! Invariants: a line that is not JSON is counted (`unparsed_lines`), never fatal; nothing is
//! read from a file but its text; the stats never hold a `null`.

use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

/// Who wrote a transcript.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    ClaudeCode,
    Codex,
    /// JSON Lines of neither shape.
    Other,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::ClaudeCode => "claude_code",
            Format::Codex => "codex",
            Format::Other => "jsonl",
        }
    }
}

/// What a transcript says about its session.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Stats {
    pub lines: u64,
    pub unparsed_lines: u64,
    pub turns: u64,
    pub assistant_messages: u64,
    pub tool_calls: u64,
    pub first_at: Option<String>,
    pub last_at: Option<String>,
    pub client_session_id: Option<String>,
    pub cwd: Option<String>,
}

impl Stats {
    /// The stats as a recording stores them (`duration_s` when both ends are known).
    pub fn to_json(&self, format: Format) -> Value {
        let mut out = Map::new();
        out.insert("client".into(), format.name().into());
        for (key, value) in [
            ("lines", self.lines),
            ("unparsed_lines", self.unparsed_lines),
            ("turns", self.turns),
            ("assistant_messages", self.assistant_messages),
            ("tool_calls", self.tool_calls),
        ] {
            out.insert(key.into(), value.into());
        }
        for (key, value) in [
            ("first_at", &self.first_at),
            ("last_at", &self.last_at),
            ("client_session_id", &self.client_session_id),
            ("cwd", &self.cwd),
        ] {
            if let Some(value) = value {
                out.insert(key.into(), value.as_str().into());
            }
        }
        let ms = |t: &Option<String>| {
            t.as_deref()
                .and_then(coremcp_plugin_sdk::time::parse_timestamp)
        };
        if let (Some(first), Some(last)) = (ms(&self.first_at), ms(&self.last_at)) {
            out.insert("duration_s".into(), ((last - first).max(0) / 1000).into());
        }
        Value::Object(out)
    }
}

/// The format and stats of a JSON Lines transcript.
pub fn read(text: &str) -> (Format, Stats) {
    let mut stats = Stats::default();
    let mut format = None;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        stats.lines += 1;
        let Ok(event) = serde_json::from_str::<Value>(line) else {
            stats.unparsed_lines += 1;
            continue;
        };
        let kind = event["type"].as_str().unwrap_or_default();
        let seen = match kind {
            "session_meta" | "response_item" | "event_msg" | "turn_context" => Format::Codex,
            "user" | "assistant" | "summary" | "system"
                if event.get("message").is_some() || kind == "summary" =>
            {
                Format::ClaudeCode
            }
            _ => Format::Other,
        };
        if format.is_none() && seen != Format::Other {
            format = Some(seen);
        }
        if let Some(at) = event["timestamp"].as_str() {
            if stats.first_at.is_none() {
                stats.first_at = Some(at.to_owned());
            }
            stats.last_at = Some(at.to_owned());
        }
        match seen {
            Format::ClaudeCode => claude_event(&event, kind, &mut stats),
            Format::Codex => codex_event(&event, kind, &mut stats),
            Format::Other => {}
        }
    }
    (format.unwrap_or(Format::Other), stats)
}

fn set_once(slot: &mut Option<String>, value: Option<&str>) {
    if slot.is_none() {
        *slot = value.filter(|v| !v.is_empty()).map(str::to_owned);
    }
}

fn claude_event(event: &Value, kind: &str, stats: &mut Stats) {
    set_once(&mut stats.client_session_id, event["sessionId"].as_str());
    set_once(&mut stats.cwd, event["cwd"].as_str());
    let content = &event["message"]["content"];
    let blocks: &[Value] = content.as_array().map_or(&[], Vec::as_slice);
    let of = |t: &str| blocks.iter().filter(|b| b["type"] == t).count() as u64;
    match kind {
        "user" => {
            let only_results = !blocks.is_empty() && of("tool_result") == blocks.len() as u64;
            if !only_results {
                stats.turns += 1;
            }
        }
        "assistant" => {
            stats.assistant_messages += 1;
            stats.tool_calls += of("tool_use");
        }
        _ => {}
    }
}

fn codex_event(event: &Value, kind: &str, stats: &mut Stats) {
    let payload = &event["payload"];
    match (kind, payload["type"].as_str().unwrap_or_default()) {
        ("session_meta", _) => {
            set_once(&mut stats.client_session_id, payload["id"].as_str());
            set_once(&mut stats.cwd, payload["cwd"].as_str());
        }
        ("response_item", "message") => match payload["role"].as_str() {
            Some("user") => stats.turns += 1,
            Some("assistant") => stats.assistant_messages += 1,
            _ => {}
        },
        ("response_item", "function_call" | "custom_tool_call" | "local_shell_call") => {
            stats.tool_calls += 1;
        }
        _ => {}
    }
}

/// Claude Code's transcript folder for a session started in `cwd`: `~/.claude/projects/` and
/// the folder's path with every character but letters and digits made `-`.
pub fn claude_project_dir(home: &Path, cwd: &Path) -> PathBuf {
    let name: String = cwd
        .display()
        .to_string()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    home.join(".claude/projects").join(name)
}

/// The most recently written `.jsonl` file in `dir`.
pub fn newest_jsonl(dir: &Path) -> Option<PathBuf> {
    std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .max()
        .map(|(_, path)| path)
}

/// A Claude Code transcript of the shape it writes (for tests and examples): `turns` user
/// prompts, each answered with one tool call, its result, and a reply.
pub fn claude_fixture(session: &str, cwd: &str, turns: u32) -> String {
    let mut lines = Vec::new();
    for i in 0..turns {
        let at = |s: u32| format!("2026-12-01T10:{:02}:{:02}.000Z", i, s);
        let base = |kind: &str, s: u32| {
            json!({"parentUuid": null, "isSidechain": false, "userType": "external", "cwd": cwd,
                   "sessionId": session, "version": "2.0.0", "type": kind,
                   "uuid": format!("{kind}-{i}-{s}"), "timestamp": at(s)})
        };
        let mut user = base("user", 0);
        user["message"] = json!({"role": "user", "content": format!("step {i}: list the files")});
        let mut call = base("assistant", 1);
        call["message"] = json!({"id": format!("msg_{i}"), "type": "message", "role": "assistant",
        "model": "claude-sonnet-4", "content": [
            {"type": "text", "text": "Listing them."},
            {"type": "tool_use", "id": format!("toolu_{i}"), "name": "Bash", "input": {"command": "ls"}}
        ]});
        let mut result = base("user", 2);
        result["message"] = json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": format!("toolu_{i}"), "content": "README.md\nsrc\n"}
        ]});
        let mut reply = base("assistant", 3);
        reply["message"] = json!({"id": format!("msg_{i}b"), "type": "message", "role": "assistant",
            "model": "claude-sonnet-4", "content": [{"type": "text", "text": "Two entries."}]});
        lines.extend([user, call, result, reply].iter().map(Value::to_string));
    }
    lines.join("\n") + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claude_code_transcript_gives_its_turns_tools_and_duration() {
        let text = claude_fixture("5f1c-aa", "/home/me/app", 3) + "not json\n";
        let (format, stats) = read(&text);
        assert_eq!(format, Format::ClaudeCode);
        assert_eq!(
            (stats.turns, stats.assistant_messages, stats.tool_calls),
            (3, 6, 3)
        );
        assert_eq!((stats.lines, stats.unparsed_lines), (13, 1));
        let json = stats.to_json(format);
        assert_eq!(json["client_session_id"], "5f1c-aa");
        assert_eq!(json["cwd"], "/home/me/app");
        assert_eq!(json["duration_s"], 123, "{json}");
    }

    #[test]
    fn a_codex_transcript_is_recognised() {
        let text = [
            json!({"timestamp": "2026-12-01T10:00:00.000Z", "type": "session_meta", "payload": {"id": "c0dex", "cwd": "/w"}}),
            json!({"timestamp": "2026-12-01T10:00:01.000Z", "type": "response_item", "payload": {"type": "message", "role": "user", "content": []}}),
            json!({"timestamp": "2026-12-01T10:00:05.000Z", "type": "response_item", "payload": {"type": "function_call", "name": "shell"}}),
            json!({"timestamp": "2026-12-01T10:00:09.000Z", "type": "response_item", "payload": {"type": "message", "role": "assistant", "content": []}}),
        ]
        .map(|v| v.to_string())
        .join("\n");
        let (format, stats) = read(&text);
        assert_eq!(format, Format::Codex);
        let json = stats.to_json(format);
        assert_eq!(
            (
                json["turns"].clone(),
                json["tool_calls"].clone(),
                json["duration_s"].clone()
            ),
            (json!(1), json!(1), json!(9))
        );
        assert_eq!(json["client_session_id"], "c0dex");
        let (other, _) = read("{\"a\":1}\n");
        assert_eq!(other, Format::Other);
    }

    #[test]
    fn claude_folders_are_named_after_the_working_folder() {
        assert_eq!(
            claude_project_dir(Path::new("/home/me"), Path::new("/work/my_app.v2")),
            PathBuf::from("/home/me/.claude/projects/-work-my-app-v2")
        );
    }
}
