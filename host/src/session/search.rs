//! Search and call (`--groups search`, and beside the group switches of `--groups dynamic`):
//! two meta tools through which a client that never lists again reaches every tool its caller
//! may use — `tools_search` finds them (name, description, input schema), `tools_call` calls
//! one by name.
//!
//! Invariants:
//! - The meta tool names are outside the catalog (no catalog group is named `tools`).
//! - `tools_search` needs no session state: it ranks the entries the caller would be listed
//!   in a full session (the session passes them in), so it serves a sessionless 2026 request
//!   as well as a session.
//! - `tools_call` only names the inner call: the session runs that call exactly as a direct
//!   one (route, policy, approval, limits, result); a meta tool is never called through it.
//! - A search answer fits the result limit: whole tools are left out from the end, counted.

use coremcp_plugin_api::{Annotations, ToolSpec};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};

pub const SEARCH: &str = "tools_search";
pub const CALL: &str = "tools_call";

/// Tools a search answers when the call does not say.
const DEFAULT_LIMIT: usize = 5;
/// The most a search answers.
const MAX_LIMIT: usize = 20;
/// Room kept under the session's result budget for the answer's wrapper.
const WRAPPER: usize = 1_000;

/// Whether `name` is one of these meta tools.
pub fn is_meta(name: &str) -> bool {
    matches!(name, SEARCH | CALL)
}

/// The two meta tools, as they are listed.
pub fn specs() -> Vec<ToolSpec> {
    use super::groups::spec;
    vec![
        spec(
            SEARCH,
            "Find the tool for a task among every tool here (all groups and upstream servers): \
             the best matches by name and description, each with its input schema. Then call \
             one with tools_call. Search again with other words if none fits.",
            json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "minLength": 1, "maxLength": 200,
                              "description": "what you want to do, in a few words"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT,
                              "description": "tools to return (default 5)"},
                },
                "required": ["query"],
                "additionalProperties": false,
            }),
            Annotations::READ_ONLY,
        ),
        spec(
            CALL,
            "Call a tool that tools_search found, by name, with arguments that follow its input \
             schema. It runs exactly as a direct call and answers that tool's own result.",
            json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "minLength": 1, "maxLength": 200,
                             "description": "the tool's name, as tools_search gave it"},
                    "arguments": {"type": "object", "description": "its arguments"},
                },
                "required": ["name"],
                "additionalProperties": false,
            }),
            Annotations::default(),
        ),
    ]
}

/// The inner call `tools_call`'s arguments name: the tool and its arguments (a JSON object's
/// text), or a message naming what is wrong.
pub fn inner_call(args: &str) -> Result<(String, String), String> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Call {
        name: String,
        #[serde(default)]
        arguments: Option<Box<RawValue>>,
    }
    let call: Call = serde_json::from_str(args).map_err(|e| {
        format!("{CALL}: {e} (pass {{\"name\": \"git_status\", \"arguments\": {{…}}}})")
    })?;
    if call.name.is_empty() {
        return Err(format!(
            "{CALL}: \"name\" is empty; find a tool with {SEARCH}"
        ));
    }
    if is_meta(&call.name) || super::groups::is_meta(&call.name) {
        return Err(format!(
            "{CALL} calls a tool, not the meta tool {}: call that directly",
            call.name
        ));
    }
    let arguments = match call.arguments.as_deref().map(RawValue::get) {
        None | Some("null") => "{}".to_owned(),
        Some(text) if text.trim_start().starts_with('{') => text.to_owned(),
        Some(_) => return Err(format!("{CALL}: \"arguments\" must be an object")),
    };
    Ok((call.name, arguments))
}

/// What `tools_search` was asked.
pub struct Query {
    words: Vec<String>,
    limit: usize,
}

/// Reads `tools_search`'s arguments.
pub fn query(args: &str) -> Result<Query, String> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Args {
        query: String,
        #[serde(default)]
        limit: Option<u64>,
    }
    let args: Args = serde_json::from_str(args)
        .map_err(|e| format!("{SEARCH}: {e} (pass {{\"query\": \"git status\"}})"))?;
    let words: Vec<String> = words(&args.query)
        .into_iter()
        .filter(|w| !STOP_WORDS.contains(&w.as_str()))
        .collect();
    if words.is_empty() {
        return Err(format!(
            "{SEARCH}: \"query\" has no words to search for; say what you want to do"
        ));
    }
    let limit = match args.limit {
        None => DEFAULT_LIMIT,
        Some(n) if (1..=MAX_LIMIT as u64).contains(&n) => n as usize,
        Some(n) => {
            return Err(format!(
                "{SEARCH}: \"limit\" is {n}; it is 1 to {MAX_LIMIT}"
            ))
        }
    };
    Ok(Query { words, limit })
}

/// Lowercase words of `text`, split at anything but letters and digits, each without a plural
/// `s` (so "containers" meets "container").
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| {
            let w = w.to_lowercase();
            match w.strip_suffix('s') {
                Some(stem) if stem.len() >= 3 && !stem.ends_with('s') => stem.to_owned(),
                _ => w,
            }
        })
        .collect()
}

/// Words that say nothing of a tool.
const STOP_WORDS: [&str; 16] = [
    "a", "an", "the", "of", "to", "in", "for", "and", "or", "with", "on", "my", "me", "it", "i",
    "from",
];

/// How well a tool named `name`, described by `description`, matches `query`: each query word
/// counts 4 as a word of the name, 3 as the start of one, 2 as another part of the name, and 1
/// more as a word of the description.
fn score(query: &Query, name: &str, description: &str) -> u32 {
    let name_words = words(name);
    let lower_name = name.to_lowercase();
    let description_words = words(description);
    query
        .words
        .iter()
        .map(|w| {
            let in_name = if name_words.iter().any(|n| n == w) {
                4
            } else if name_words.iter().any(|n| n.starts_with(w.as_str())) {
                3
            } else if lower_name.contains(w.as_str()) {
                2
            } else {
                0
            };
            in_name + u32::from(description_words.iter().any(|d| d == w))
        })
        .sum()
}

/// The answer to `query` over `entries` (`tools/list` entries, JSON text): the best-scoring
/// tools, best first (ties by name), as many as the limit asks and the session's result
/// `budget` allows.
pub fn answer<'a>(query: &Query, entries: impl Iterator<Item = &'a str>, budget: usize) -> Value {
    let room = budget.saturating_sub(WRAPPER);
    let mut found: Vec<(u32, Value)> = entries
        .filter_map(|entry| serde_json::from_str::<Value>(entry).ok())
        .filter_map(|tool| {
            let name = tool["name"].as_str()?;
            let description = tool["description"].as_str().unwrap_or_default();
            let score = score(query, name, description);
            (score > 0).then_some((score, tool))
        })
        .collect();
    found.sort_by(|(a, x), (b, y)| {
        b.cmp(a)
            .then_with(|| x["name"].as_str().cmp(&y["name"].as_str()))
    });
    let matches = found.len();
    let mut tools: Vec<Value> = Vec::new();
    let mut size = 0;
    let mut left_out = 0;
    for (_, tool) in found.into_iter().take(query.limit) {
        let shown = json!({
            "name": tool["name"],
            "description": tool["description"],
            "inputSchema": tool["inputSchema"],
        });
        let cost = shown.to_string().chars().count() + 1;
        if size + cost > room {
            left_out += 1;
            continue;
        }
        size += cost;
        tools.push(shown);
    }
    let mut out = json!({
        "matches": matches,
        "tools": tools,
        "next": "call one with tools_call {\"name\": …, \"arguments\": {…}}",
    });
    if left_out > 0 {
        out["left_out"] = left_out.into();
        out["hint"] =
            "some matches did not fit one answer: ask with a lower limit or other words".into();
    }
    if matches == 0 {
        out["next"] = "no tool matches these words: search again with other words (what the \
                       tool acts on, e.g. \"container logs\", \"commit\", \"note\")"
            .into();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAX: usize = coremcp_wire::budget::MAX;

    fn entry(name: &str, description: &str) -> String {
        json!({"name": name, "description": description,
               "inputSchema": {"type": "object", "properties": {}}})
        .to_string()
    }

    fn names(answer: &Value) -> Vec<&str> {
        answer["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect()
    }

    #[test]
    fn tools_rank_by_name_words_before_description_words() {
        let entries = [
            entry("git_status", "Working tree status of a repository."),
            entry("git_log", "Commits, newest first."),
            entry("docker_container_logs", "Tail a container's logs."),
            entry("files_search", "Search file contents like ripgrep."),
            entry("notepad_get", "Get one note."),
        ];
        let q = query(r#"{"query": "container logs"}"#).expect("query");
        let found = answer(&q, entries.iter().map(String::as_str), MAX);
        assert_eq!(names(&found)[0], "docker_container_logs", "{found}");
        // "log" is part of git_log's name: found, after the one that has both words.
        assert!(names(&found).contains(&"git_log"), "{found}");
        assert!(!names(&found).contains(&"notepad_get"), "{found}");
        let q = query(r#"{"query": "status", "limit": 1}"#).expect("query");
        assert_eq!(
            names(&answer(&q, entries.iter().map(String::as_str), MAX)),
            ["git_status"]
        );
        let q = query(r#"{"query": "kubernetes"}"#).expect("query");
        let none = answer(&q, entries.iter().map(String::as_str), MAX);
        assert_eq!(none["matches"], 0);
        assert!(none["next"]
            .as_str()
            .unwrap_or_default()
            .contains("other words"));
    }

    #[test]
    fn a_search_answer_fits_the_result_limit() {
        let big = "word ".repeat(1_500);
        let entries: Vec<String> = (0..20)
            .map(|i| entry(&format!("tool_{i:02}"), &big))
            .collect();
        let q = query(r#"{"query": "word", "limit": 20}"#).expect("query");
        for budget in [coremcp_wire::budget::MAX, coremcp_wire::budget::CODEX] {
            let found = answer(&q, entries.iter().map(String::as_str), budget);
            assert!(found.to_string().chars().count() <= budget, "too big");
            let shown = names(&found).len();
            assert!(shown > 0 && shown < 20, "{shown}");
            assert_eq!(found["left_out"], 20 - shown);
        }
    }

    #[test]
    fn bad_arguments_are_named() {
        for (args, says) in [
            (r#"{}"#, "query"),
            (r#"{"query": "  "}"#, "no words"),
            (r#"{"query": "x", "limit": 50}"#, "1 to 20"),
            (r#"{"query": "x", "extra": 1}"#, "extra"),
        ] {
            let Err(e) = query(args) else {
                panic!("{args} accepted")
            };
            assert!(e.contains(says), "{args}: {e}");
        }
        assert_eq!(
            inner_call(r#"{"name": "git_status"}"#).expect("call"),
            ("git_status".to_owned(), "{}".to_owned())
        );
        let (name, args) =
            inner_call(r#"{"name": "notepad_get", "arguments": {"scope": "global"}}"#).expect("ok");
        assert_eq!(
            (name.as_str(), args.as_str()),
            ("notepad_get", r#"{"scope": "global"}"#)
        );
        for (args, says) in [
            (r#"{"name": "tools_call"}"#, "meta tool"),
            (r#"{"name": "groups_enable"}"#, "meta tool"),
            (r#"{"name": ""}"#, "empty"),
            (r#"{"name": "x", "arguments": [1]}"#, "object"),
            (r#"{"arguments": {}}"#, "name"),
        ] {
            let Err(e) = inner_call(args) else {
                panic!("{args} accepted")
            };
            assert!(e.contains(says), "{args}: {e}");
        }
    }
}
