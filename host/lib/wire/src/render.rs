//! Rendering to the MCP wire: tool entries for `tools/list` and `CallToolResult`s.
//!
//! Invariants (ARCHITECTURE.md, "What agent clients need": one slip and Claude Code or Gemini
//! CLI show no tools at all): an optional field is omitted, never `null`; every listed
//! `inputSchema` is a `"type": "object"` schema; a result's text is at most [`MAX_RESULT_CHARS`]
//! characters, a visible truncation marker included, and a truncated result carries no
//! `structuredContent`. A built-in tool's answer is never cut into a broken document
//! ([`plugin_success`]).

use coremcp_plugin_api::{Annotations, ToolError, ToolSpec};
use serde_json::value::RawValue;
use serde_json::{json, Value};

use crate::mcp::{MAX_DESCRIPTION_CHARS, MAX_RESULT_CHARS, MAX_SCHEMA_CHARS};
use crate::rpc::json_string;

/// Why a tool was left out of the listing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unlisted {
    #[error("its input schema is not a \"type\": \"object\" schema")]
    SchemaNotObject,
    #[error("its input schema is {0} characters long (the limit is {MAX_SCHEMA_CHARS})")]
    SchemaTooLong(usize),
}

/// One tool's `tools/list` entry as JSON text.
pub fn tool_entry(spec: &ToolSpec) -> Result<String, Unlisted> {
    if spec.input_schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err(Unlisted::SchemaNotObject);
    }
    // Serialised once: the limit is checked on the text that goes out.
    let schema = match with_remote_host(spec) {
        Some(extended) => extended.to_string(),
        None => spec.input_schema.to_string(),
    };
    let schema_chars = schema.chars().count();
    if schema_chars > MAX_SCHEMA_CHARS {
        return Err(Unlisted::SchemaTooLong(schema_chars));
    }
    let mut description = match &spec.feature {
        Some(gate) if !gate.enabled => std::borrow::Cow::Owned(format!(
            "[unavailable in this build: needs the \"{}\" feature] {}",
            gate.name, spec.description
        )),
        _ => std::borrow::Cow::Borrowed(spec.description.as_str()),
    };
    if description.chars().count() > MAX_DESCRIPTION_CHARS {
        let mut cut: String = description
            .chars()
            .take(MAX_DESCRIPTION_CHARS - 1)
            .collect();
        cut.push('…');
        description = std::borrow::Cow::Owned(cut);
    }
    let annotations = on_the_wire(spec.annotations);
    let mut entry = String::with_capacity(schema.len() + description.len() + spec.name.len() + 64);
    entry.push_str("{\"name\":");
    entry.push_str(&json_string(&spec.name));
    entry.push_str(",\"description\":");
    entry.push_str(&json_string(&description));
    entry.push_str(",\"inputSchema\":");
    entry.push_str(&schema);
    if !annotations.is_empty() {
        entry.push_str(",\"annotations\":");
        entry.push_str(&json!(annotations).to_string());
    }
    entry.push('}');
    Ok(entry)
}

/// What `remote_host` says: short, because 92 tools carry it (README's "Relays and remote
/// hosts" explains it whole).
const REMOTE_HOST_DESCRIPTION: &str = "Registry host";

/// The hints a client needs. A read-only tool says so and whether it reaches other systems
/// (its destructive and idempotent hints mean nothing, the specification says, so they are
/// left out); any other tool says whether it is destructive and whether it reaches other
/// systems, and that it is idempotent when it is. What is left out is MCP's default
/// (`readOnlyHint: false`, `idempotentHint: false`). The full list is sent on every session,
/// so each hint left out is saved up to 107 times.
fn on_the_wire(hints: Annotations) -> Annotations {
    let read_only = hints.read_only_hint == Some(true);
    Annotations {
        read_only_hint: hints.read_only_hint.filter(|&h| h),
        destructive_hint: hints.destructive_hint.filter(|_| !read_only),
        idempotent_hint: hints.idempotent_hint.filter(|&h| h && !read_only),
        open_world_hint: hints.open_world_hint,
    }
}

/// The schema a client sees: a tool that takes `remote_host` (the host handles it; plugins
/// never declare it) gets the property, if the schema lists properties at all.
/// `None`: the plugin's own schema is what goes out.
fn with_remote_host(spec: &ToolSpec) -> Option<Value> {
    if !spec.remote_host
        || !spec
            .input_schema
            .get("properties")
            .is_some_and(Value::is_object)
    {
        return None;
    }
    let mut schema = spec.input_schema.clone();
    if let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        properties.insert(
            "remote_host".into(),
            json!({
                "type": "string",
                "description": REMOTE_HOST_DESCRIPTION
            }),
        );
    }
    Some(schema)
}

/// A `tools/list` result holding `entries` (each JSON text), with `next_cursor` only when
/// there is a next page; built with [`crate::rpc::HEADROOM`] to spare, for its answer.
pub fn tools_list(entries: &[&str], next_cursor: Option<&str>) -> String {
    let mut out = String::with_capacity(
        entries.iter().map(|e| e.len() + 1).sum::<usize>() + 40 + crate::rpc::HEADROOM,
    );
    out.push_str("{\"tools\":[");
    for (i, entry) in entries.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(entry);
    }
    out.push(']');
    if let Some(cursor) = next_cursor {
        out.push_str(",\"nextCursor\":");
        out.push_str(&json_string(cursor));
    }
    out.push('}');
    out
}

/// `entry` (a `tools/list` entry, JSON text) declaring that its results hold at most `budget`
/// characters, in the `_meta` key Claude Code reads ([`crate::budget::RESULT_SIZE_KEY`]); an
/// entry's own `_meta` keeps its other keys. `None`: not an entry (not a JSON object).
pub fn declare_result_size(entry: &str, budget: usize) -> Option<String> {
    let trimmed = entry.trim_end();
    if !entry.contains("\"_meta\"") {
        // Ours, which never carry a `_meta`: the key goes in before the closing brace.
        let body = trimmed.strip_suffix('}')?;
        if !body.trim_start().starts_with('{') {
            return None;
        }
        let comma = if body.trim_end().ends_with('{') {
            ""
        } else {
            ","
        };
        return Some(format!(
            "{body}{comma}\"_meta\":{{\"{}\":{budget}}}}}",
            crate::budget::RESULT_SIZE_KEY
        ));
    }
    let mut map: serde_json::Map<String, Value> = serde_json::from_str(entry).ok()?;
    let meta = map
        .entry("_meta")
        .or_insert_with(|| Value::Object(serde_json::Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(serde_json::Map::new());
    }
    meta[crate::budget::RESULT_SIZE_KEY] = budget.into();
    serde_json::to_string(&map).ok()
}

/// A successful tool result from the plugin's JSON text.
///
/// A JSON string becomes text content. Any other value is text content holding the JSON and
/// also `structuredContent` (an object as it is; another value as `{"result": value}`).
pub fn call_success(json_text: &str) -> String {
    let trimmed = json_text.trim_start();
    if trimmed.starts_with('"') {
        return match serde_json::from_str::<String>(trimmed) {
            Ok(text) => text_result(&text, None, false),
            Err(e) => call_error_text(&format!("internal: the plugin returned bad JSON: {e}")),
        };
    }
    let raw = match serde_json::from_str::<&RawValue>(trimmed) {
        Ok(raw) => raw,
        Err(e) => return call_error_text(&format!("internal: the plugin returned bad JSON: {e}")),
    };
    let structured: std::borrow::Cow<'_, str> = if trimmed.starts_with('{') {
        raw.get().into()
    } else {
        format!("{{\"result\":{}}}", raw.get()).into()
    };
    text_result(raw.get(), Some(&structured), false)
}

/// A tool error as a result the model sees (`isError: true`). A tool that is not available
/// (its feature is not built, say) did not fail: its message, which names it, is shown alone,
/// exactly as when the host answers for a missing plugin.
pub fn call_error(tool: &str, err: &ToolError) -> String {
    // A message that already names the tool ("docs_write is not in this build: …") is
    // whole as it is; any other gets the usual prefix, whatever its code.
    let named = err
        .message
        .strip_prefix(tool)
        .is_some_and(|rest| rest.starts_with(' '));
    if err.code.as_str() == coremcp_plugin_api::codes::UNAVAILABLE && named {
        return call_error_text(&err.message);
    }
    call_error_text(&format!("{tool} failed ({}): {}", err.code, err.message))
}

/// An error result with this text.
pub fn call_error_text(text: &str) -> String {
    text_result(text, None, true)
}

fn text_result(text: &str, structured: Option<&str>, is_error: bool) -> String {
    let (text, truncated) = truncate(text);
    let mut out = String::with_capacity(text.len() + structured.map_or(0, str::len) + 64);
    out.push_str("{\"content\":[{\"type\":\"text\",\"text\":");
    crate::rpc::push_json_string(&mut out, &text);
    out.push_str("}]");
    if let (Some(structured), false) = (structured, truncated) {
        out.push_str(",\"structuredContent\":");
        out.push_str(structured);
    }
    if is_error {
        out.push_str(",\"isError\":true");
    }
    out.push('}');
    out
}

/// Cuts `text` to at most [`MAX_RESULT_CHARS`] characters, the marker that says what was cut
/// included.
pub fn truncate(text: &str) -> (std::borrow::Cow<'_, str>, bool) {
    truncate_to(text, MAX_RESULT_CHARS)
}

/// Cuts `text` to at most `limit` characters, the marker that says what was cut included.
pub fn truncate_to(text: &str, limit: usize) -> (std::borrow::Cow<'_, str>, bool) {
    // Byte length bounds the character count from above: most results skip the count.
    if text.len() <= limit {
        return (text.into(), false);
    }
    let total = text.chars().count();
    if total <= limit {
        return (text.into(), false);
    }
    let marker_for = |shown: usize| {
        format!(
            "\n…[truncated: showing {shown} of {total} characters; narrow the request to see the rest]"
        )
    };
    // The marker's length depends on the number it shows, which is at most the limit's.
    let shown = limit.saturating_sub(marker_for(limit).chars().count());
    let cut = text
        .char_indices()
        .nth(shown)
        .map_or(text.len(), |(i, _)| i);
    (
        format!("{}{}", &text[..cut], marker_for(shown)).into(),
        true,
    )
}

/// A built-in tool's answer as its result; `Err` with the result that replaces it when the
/// answer is larger than the session's `budget` (characters, see [`crate::budget`]). Every
/// tool fits its own answers to the budget it is told (ARCHITECTURE.md, "One result
/// contract"), so this is a guard against a defect, never a way to page: a JSON answer is
/// withheld whole rather than cut into a broken document, and a text answer keeps its first
/// part with a marker.
pub fn plugin_success(tool: &str, json_text: &str, budget: usize) -> Result<String, String> {
    let budget = budget.min(MAX_RESULT_CHARS);
    if json_text.len() <= budget {
        return Ok(call_success(json_text));
    }
    let total = json_text.chars().count();
    if total <= budget {
        return Ok(call_success(json_text));
    }
    if json_text.trim_start().starts_with('"') {
        let text: String = serde_json::from_str(json_text.trim_start()).unwrap_or_default();
        let (cut, _) = truncate_to(&text, budget);
        return Err(text_result(&cut, None, false));
    }
    Err(call_error_text(&oversized_text(tool, total, budget)))
}

/// What the agent reads in place of a built-in tool's answer that did not fit.
pub(crate) fn oversized_text(tool: &str, total: usize, budget: usize) -> String {
    format!(
        "{tool} ran, but its answer ({total} characters) is larger than the {budget} a \
         result may hold, so Core MCP withheld it rather than send a broken document. This is a \
         defect of Core MCP and was logged. Ask for less (a smaller limit, a narrower path or \
         query, the tool's cursor or offset); a change the call made has been made."
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use coremcp_plugin_api::{Annotations, FeatureGate, Runs};

    fn spec(schema: Value) -> ToolSpec {
        ToolSpec {
            name: "t".into(),
            description: "d".into(),
            input_schema: schema,
            annotations: Annotations::default(),
            runs: Runs::Local,
            remote_host: false,
            feature: None,
            guard: None,
            escalation: None,
            task: None,
        }
    }

    #[test]
    fn tool_entries_omit_what_is_unset() {
        let entry = tool_entry(&spec(json!({"type": "object"}))).expect("listed");
        assert_eq!(
            entry,
            r#"{"name":"t","description":"d","inputSchema":{"type":"object"}}"#
        );
        let mut with = spec(json!({"type": "object"}));
        with.annotations.read_only_hint = Some(true);
        with.feature = Some(FeatureGate {
            name: "docs-write".into(),
            enabled: false,
        });
        let entry: Value = serde_json::from_str(&tool_entry(&with).expect("listed")).expect("json");
        assert_eq!(entry["annotations"], json!({"readOnlyHint": true}));
        assert!(entry["description"]
            .as_str()
            .expect("text")
            .starts_with("[unavailable in this build: needs the \"docs-write\" feature]"));
    }

    #[test]
    fn hints_equal_to_the_defaults_are_left_out() {
        let wire = |a: Annotations| serde_json::to_value(on_the_wire(a)).expect("json");
        assert_eq!(
            wire(Annotations::READ_ONLY),
            json!({"readOnlyHint": true, "openWorldHint": false})
        );
        assert_eq!(
            wire(Annotations::OPEN_WORLD_DESTRUCTIVE),
            json!({"destructiveHint": true, "openWorldHint": true})
        );
        let additive = Annotations {
            read_only_hint: Some(false),
            destructive_hint: Some(false),
            idempotent_hint: Some(true),
            open_world_hint: Some(false),
        };
        assert_eq!(
            wire(additive),
            json!({"destructiveHint": false, "idempotentHint": true, "openWorldHint": false})
        );
    }

    #[test]
    fn tools_that_take_remote_host_list_it() {
        let mut with = spec(json!({"type": "object", "properties": {"a": {"type": "string"}}}));
        with.remote_host = true;
        let entry: Value = serde_json::from_str(&tool_entry(&with).expect("listed")).expect("json");
        assert_eq!(
            entry["inputSchema"]["properties"]["remote_host"]["type"],
            "string"
        );
        assert_eq!(entry["inputSchema"]["properties"]["a"]["type"], "string");
        let without = spec(json!({"type": "object", "properties": {}}));
        let entry: Value =
            serde_json::from_str(&tool_entry(&without).expect("listed")).expect("json");
        assert_eq!(entry["inputSchema"]["properties"], json!({}));
    }

    #[test]
    fn tool_entries_refuse_bad_schemas() {
        assert_eq!(
            tool_entry(&spec(json!({"type": "string"}))),
            Err(Unlisted::SchemaNotObject)
        );
        let big = json!({"type": "object", "description": "x".repeat(9000)});
        assert!(matches!(
            tool_entry(&spec(big)),
            Err(Unlisted::SchemaTooLong(_))
        ));
        let mut long = spec(json!({"type": "object"}));
        long.description = "é".repeat(5000);
        let entry: Value = serde_json::from_str(&tool_entry(&long).expect("listed")).expect("json");
        assert_eq!(
            entry["description"].as_str().expect("text").chars().count(),
            MAX_DESCRIPTION_CHARS
        );
    }

    #[test]
    fn list_pages() {
        assert_eq!(tools_list(&[], None), r#"{"tools":[]}"#);
        assert_eq!(
            tools_list(&["{}", "{}"], Some("2")),
            r#"{"tools":[{},{}],"nextCursor":"2"}"#
        );
    }

    fn check(plugin_json: &str, expected: Value) {
        let got: Value = serde_json::from_str(&call_success(plugin_json)).expect("json");
        assert_eq!(got, expected, "{plugin_json}");
    }

    #[test]
    fn results() {
        check(
            r#"{"a":1}"#,
            json!({"content":[{"type":"text","text":"{\"a\":1}"}],"structuredContent":{"a":1}}),
        );
        check(
            r#""plain""#,
            json!({"content":[{"type":"text","text":"plain"}]}),
        );
        check(
            "[1,2]",
            json!({"content":[{"type":"text","text":"[1,2]"}],"structuredContent":{"result":[1,2]}}),
        );
        check(
            "not json",
            json!({"content":[{"type":"text","text":"internal: the plugin returned bad JSON: expected ident at line 1 column 2"}],"isError":true}),
        );
        let err = ToolError::new(
            "unavailable",
            "x is not in this build: it needs the \"f\" feature",
        );
        let got: Value = serde_json::from_str(&call_error("x", &err)).expect("json");
        assert_eq!(
            got["content"][0]["text"],
            "x is not in this build: it needs the \"f\" feature"
        );
        // Any other unavailable gets the prefix, which says which tool and what kind.
        let err = ToolError::new(
            "unavailable",
            "the Registry's checkout is outside the roots",
        );
        let got: Value = serde_json::from_str(&call_error("x", &err)).expect("json");
        assert_eq!(
            got["content"][0]["text"],
            "x failed (unavailable): the Registry's checkout is outside the roots"
        );
        let err = ToolError::new("timeout", "too slow");
        let got: Value = serde_json::from_str(&call_error("x", &err)).expect("json");
        assert_eq!(
            got,
            json!({"content":[{"type":"text","text":"x failed (timeout): too slow"}],"isError":true})
        );
    }

    #[test]
    fn truncation() {
        let (short, cut) = truncate("abc");
        assert_eq!((short.as_ref(), cut), ("abc", false));
        let exact = "é".repeat(MAX_RESULT_CHARS);
        assert!(
            !truncate(&exact).1,
            "exactly the limit in characters is kept"
        );
        let long = "é".repeat(MAX_RESULT_CHARS + 5);
        let (text, cut) = truncate(&long);
        assert!(cut);
        assert_eq!(
            text.chars().count(),
            MAX_RESULT_CHARS,
            "the marker is inside the limit"
        );
        let shown = MAX_RESULT_CHARS - 84;
        assert!(text.starts_with(&"é".repeat(shown)));
        assert!(
            text.ends_with(&format!(
                "[truncated: showing {shown} of {} characters; narrow the request to see the rest]",
                MAX_RESULT_CHARS + 5
            )),
            "{}",
            &text[text.len() - 200..]
        );
        let big = format!("{{\"s\":\"{}\"}}", "x".repeat(30_000));
        let got: Value = serde_json::from_str(&call_success(&big)).expect("json");
        assert!(
            got.get("structuredContent").is_none(),
            "a truncated result drops structuredContent"
        );
    }

    #[test]
    fn a_built_in_answer_too_large_is_withheld_whole_and_named() {
        let max = MAX_RESULT_CHARS;
        assert!(plugin_success("t", r#"{"a":1}"#, max).is_ok());
        let big = format!("{{\"s\":\"{}\"}}", "x".repeat(30_000));
        let replaced = plugin_success("files_list", &big, max).expect_err("too large");
        let got: Value = serde_json::from_str(&replaced).expect("json");
        let text = got["content"][0]["text"].as_str().expect("text");
        assert!(
            text.starts_with("files_list ran, but its answer (30008 characters)"),
            "{text}"
        );
        assert_eq!(got["isError"], true);
        assert!(got.get("structuredContent").is_none());
        let text_answer = format!("\"{}\"", "y".repeat(30_000));
        let kept = plugin_success("t", &text_answer, max).expect_err("too large");
        let got: Value = serde_json::from_str(&kept).expect("json");
        let text = got["content"][0]["text"].as_str().expect("text");
        assert!(text.starts_with("yyy") && text.chars().count() <= MAX_RESULT_CHARS);
    }

    #[test]
    fn an_entry_declares_its_result_size_keeping_its_own_meta() {
        let key = crate::budget::RESULT_SIZE_KEY;
        let ours = declare_result_size(r#"{"name":"t","inputSchema":{"type":"object"}}"#, 20_000)
            .expect("entry");
        let ours: Value = serde_json::from_str(&ours).expect("json");
        assert_eq!(ours["_meta"][key], 20_000);
        assert_eq!(ours["name"], "t");
        let theirs = declare_result_size(r#"{"name":"u","_meta":{"x":1}}"#, 10_000).expect("entry");
        let theirs: Value = serde_json::from_str(&theirs).expect("json");
        assert_eq!(theirs["_meta"], serde_json::json!({"x": 1, key: 10_000}));
        let odd = declare_result_size(r#"{"name":"v","_meta":null}"#, 10_000).expect("entry");
        assert!(odd.contains(key), "{odd}");
        assert_eq!(
            declare_result_size("{}", 1).as_deref(),
            Some(&*format!(r#"{{"_meta":{{"{key}":1}}}}"#))
        );
        assert!(declare_result_size("[1]", 1).is_none());
    }

    #[test]
    fn the_guard_holds_the_sessions_budget() {
        // What fits the largest budget may not fit a smaller session's.
        let answer = format!("{{\"s\":\"{}\"}}", "x".repeat(12_000));
        assert!(plugin_success("t", &answer, MAX_RESULT_CHARS).is_ok());
        let replaced = plugin_success("t", &answer, 10_000).expect_err("over 10 000");
        assert!(
            replaced.contains("larger than the 10000 a result may hold"),
            "{replaced}"
        );
        let text_answer = format!("\"{}\"", "é".repeat(12_000));
        let kept = plugin_success("t", &text_answer, 10_000).expect_err("over 10 000");
        let got: Value = serde_json::from_str(&kept).expect("json");
        let text = got["content"][0]["text"].as_str().expect("text");
        assert!(text.chars().count() <= 10_000, "{}", text.chars().count());
        assert!(text.contains("[truncated: showing"), "{text}");
        // A budget above the largest is the largest.
        let huge = format!("{{\"s\":\"{}\"}}", "x".repeat(25_000));
        assert!(plugin_success("t", &huge, usize::MAX).is_err());
    }
}
