//! How an upstream server's tools would be published to agents (ARCHITECTURE.md: "Limits", "What
//! agent clients need"): pure functions from the server's `tools/list` entries to
//! `mcp__<id>__<tool>` tools, and the result cap applied to what a call hands back.
//!
//! Invariants:
//! - Nothing broken is ever published: a tool whose input schema is not an object schema or is
//!   over [`MAX_SCHEMA_CHARS`], or that would take a built-in tool's name, is **withheld** with
//!   a reason.
//! - Every published name is one model APIs accept (`^[A-Za-z0-9_-]{1,64}$`): a tool name with
//!   other characters has them replaced by `_`, a full name over [`MAX_NAME_CHARS`] is cut and
//!   ends in a short hash of the original name, and a name taken by an earlier tool of the
//!   server gets a numbered suffix (`_2`, `_3`, …) — deterministically, in the server's order,
//!   so the same listing always publishes the same names. Each such rename is reported
//!   ([`Publication::renamed`]), and calls reach the server by its own name
//!   ([`Publication::originals`]).
//! - A description over [`MAX_DESCRIPTION_CHARS`] is cut, ending in `…`.
//! - A server never publishes more than its `maxTools` (default 200), so one server cannot flood
//!   every client's context; the tools past it are only **counted** ([`Publication::over_limit`]),
//!   never kept, and at most [`WITHHELD_KEPT`] tools withheld for another reason are kept with
//!   it (the rest counted too): a server that lists 100 000 tools costs what one that lists
//!   `maxTools` does.
//! - A published tool never carries `null` for an optional field: absent or wrong-typed
//!   optional fields are left out.

use serde_json::{Map, Value};

use coremcp_catalog::GROUPS;
use coremcp_wire::mcp::{MAX_DESCRIPTION_CHARS, MAX_RESULT_CHARS, MAX_SCHEMA_CHARS};

/// The longest full tool name clients accept.
pub(crate) const MAX_NAME_CHARS: usize = 64;
/// Tools withheld for a reason (not the limit) kept, with it, per server; the rest are counted.
pub(crate) const WITHHELD_KEPT: usize = 50;

/// A tool that is not published, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Withheld {
    /// The tool's name as the server gave it (or a placeholder when it gave none).
    pub tool: String,
    pub reason: String,
}

/// The outcome of publishing one server's tools.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Publication {
    /// The tools as agents would see them (`name` is the full `mcp__<id>__<tool>`).
    pub published: Vec<Value>,
    /// The server's own name of each published tool, in the same order.
    pub originals: Vec<String>,
    /// The published tools whose name is not `mcp__<id>__` and the server's: (published name,
    /// the server's name).
    pub renamed: Vec<(String, String)>,
    /// The first tools withheld for a reason other than the limit, with it.
    pub withheld: Vec<Withheld>,
    /// Tools withheld for such a reason past those (counted only).
    pub more_withheld: usize,
    /// Tools past `maxTools` (counted only).
    pub over_limit: usize,
    /// The limit they are past.
    pub max_tools: usize,
}

impl Publication {
    /// One line for the log: what was published, withheld and left over the limit.
    pub(crate) fn summary(&self, id: &str) -> String {
        let mut line = format!(
            "upstream server {id}: {} tools published",
            self.published.len()
        );
        let withheld = self.withheld.len() + self.more_withheld;
        if withheld > 0 {
            let first: Vec<String> = self
                .withheld
                .iter()
                .take(3)
                .map(|w| format!("{} ({})", w.tool, w.reason))
                .collect();
            line.push_str(&format!(
                ", {withheld} withheld (first: {})",
                first.join("; ")
            ));
        }
        if self.over_limit > 0 {
            line.push_str(&format!(
                ", {} more past its limit of {} (maxTools in its mcp.json entry), only counted",
                self.over_limit, self.max_tools
            ));
        }
        line
    }

    /// The full names of the published tools.
    pub fn names(&self) -> Vec<String> {
        self.published
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect()
    }

    /// Each published name with the server's own name of the tool.
    pub(crate) fn name_map(&self) -> std::collections::HashMap<String, String> {
        self.names()
            .into_iter()
            .zip(self.originals.iter().cloned())
            .collect()
    }
}

/// The name `tool` of server `id` is published as: characters model APIs refuse replaced by
/// `_`, and at most [`MAX_NAME_CHARS`] in all (a longer one cut, ending in a hash of the
/// original).
fn publishable(id: &str, tool: &str) -> String {
    let clean: String = tool
        .chars()
        .map(
            |c| match c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                true => c,
                false => '_',
            },
        )
        .collect();
    fit_name(&full_name(id, &clean), tool)
}

/// `full` cut to [`MAX_NAME_CHARS`] when longer, ending in `_` and 8 hex digits of the FNV-1a
/// hash of `original` (so two long names that share their start stay apart).
fn fit_name(full: &str, original: &str) -> String {
    if full.chars().count() <= MAX_NAME_CHARS {
        return full.to_owned();
    }
    let hash = original.bytes().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    let suffix = format!("_{hash:08x}");
    // The name is ASCII by now: a byte cut is a character cut.
    let keep = MAX_NAME_CHARS - suffix.len();
    format!("{}{suffix}", &full[..keep])
}

/// The full name of `tool` on server `id`.
pub(crate) fn full_name(id: &str, tool: &str) -> String {
    format!("mcp__{id}__{tool}")
}

/// The server id and the tool of a published name, `mcp__<id>__<tool>`. An id holds no `_`,
/// so the first `_` after the prefix begins the separator (found without building a substring
/// searcher: this runs for every upstream call).
pub fn split_name(full: &str) -> Option<(&str, &str)> {
    let rest = full.strip_prefix("mcp__")?;
    let at = memchr::memchr(b'_', rest.as_bytes())?;
    let tool = rest[at..].strip_prefix("__")?;
    Some((&rest[..at], tool))
}

/// Publishes the `tools/list` entries of server `id`, at most `max_tools` of them; `unread`
/// more were listed past `tools` and only counted (they are past the limit).
pub fn publish(id: &str, tools: &[Value], max_tools: usize, unread: usize) -> Publication {
    let mut out = Publication {
        over_limit: unread,
        max_tools,
        ..Publication::default()
    };
    let mut seen: std::collections::HashSet<&str> = std::collections::HashSet::new();
    let mut taken: std::collections::HashSet<String> = std::collections::HashSet::new();
    for (index, tool) in tools.iter().enumerate() {
        let name = tool.get("name").and_then(Value::as_str);
        let outcome = name
            .ok_or_else(|| "it has no name".to_owned())
            .and_then(|name| {
                if name.is_empty() {
                    return Err("its name is empty".into());
                }
                if seen.contains(name) {
                    return Err("the server lists this name twice; the first one is kept".into());
                }
                let mut full = publishable(id, name);
                let mut n = 2;
                while taken.contains(&full) {
                    let suffix = format!("_{n}");
                    let base = publishable(id, name);
                    let keep = base.len().min(MAX_NAME_CHARS - suffix.len());
                    full = format!("{}{suffix}", &base[..keep]);
                    n += 1;
                }
                publish_one(&full, tool)
            });
        match outcome {
            Ok(_) if out.published.len() >= max_tools => out.over_limit += 1,
            Ok(published) => {
                if let Some(name) = name {
                    seen.insert(name);
                    let full = published["name"].as_str().unwrap_or_default().to_owned();
                    if full != full_name(id, name) {
                        out.renamed.push((full.clone(), name.to_owned()));
                    }
                    taken.insert(full);
                    out.originals.push(name.to_owned());
                }
                out.published.push(published);
            }
            Err(_) if out.withheld.len() >= WITHHELD_KEPT => out.more_withheld += 1,
            Err(reason) => out.withheld.push(Withheld {
                tool: name.map_or_else(|| format!("(tool #{index} without a name)"), str::to_owned),
                reason,
            }),
        }
    }
    out
}

fn publish_one(full: &str, tool: &Value) -> Result<Value, String> {
    let full = full.to_owned();
    check_name(&full)?;
    let schema = check_schema(tool.get("inputSchema"), "input schema")?;
    let mut published = Map::new();
    published.insert("name".into(), Value::String(full));
    if let Some(title) = tool.get("title").and_then(Value::as_str) {
        published.insert("title".into(), Value::String(title.to_owned()));
    }
    if let Some(text) = tool.get("description").and_then(Value::as_str) {
        published.insert("description".into(), Value::String(cap_description(text)));
    }
    published.insert("inputSchema".into(), schema);
    if let Some(output) = tool.get("outputSchema").filter(|v| !v.is_null()) {
        published.insert(
            "outputSchema".into(),
            check_schema(Some(output), "output schema")?,
        );
    }
    if let Some(annotations) = tool.get("annotations").filter(|v| v.is_object()) {
        published.insert("annotations".into(), annotations.clone());
    }
    Ok(Value::Object(published))
}

/// The full name (already one clients accept, see [`publishable`]) must not be a built-in
/// tool's.
fn check_name(full: &str) -> Result<(), String> {
    if GROUPS.iter().any(|g| g.entry(full).is_some()) {
        return Err(format!("{full} is the name of a built-in tool"));
    }
    Ok(())
}

/// A schema must be a JSON object with `"type": "object"` and at most [`MAX_SCHEMA_CHARS`]
/// characters as JSON text.
fn check_schema(schema: Option<&Value>, what: &str) -> Result<Value, String> {
    let schema = schema.ok_or_else(|| format!("it has no {what}"))?;
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err(format!(
            "its {what} is not an object schema (\"type\": \"object\")"
        ));
    }
    let chars = schema.to_string().chars().count();
    if chars > MAX_SCHEMA_CHARS {
        return Err(format!(
            "its {what} is {chars} characters; the limit is {MAX_SCHEMA_CHARS}"
        ));
    }
    Ok(schema.clone())
}

/// `text` cut to [`MAX_DESCRIPTION_CHARS`] characters, the last being `…` when cut.
pub(crate) fn cap_description(text: &str) -> String {
    if text.chars().count() <= MAX_DESCRIPTION_CHARS {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(MAX_DESCRIPTION_CHARS - 1).collect();
    cut.push('…');
    cut
}

/// Cuts the text content of a `CallToolResult` to `limit` characters in all (the session's
/// budget, at most [`MAX_RESULT_CHARS`]), ending the last kept text with a marker (counted in
/// the limit) that says how much was left out; text items past the limit are dropped. Other content (images, resources) is kept. A
/// cut result, or one whose `structuredContent` alone outgrows the limit, loses its
/// `structuredContent` (it would no longer match the text). Returns whether anything was cut.
pub fn cap_result(result: &mut Value, limit: usize) -> bool {
    let limit = limit.min(MAX_RESULT_CHARS);
    let cut = cap_result_at(result, limit);
    let structured_too_big = result
        .get("structuredContent")
        .is_some_and(|s| s.to_string().chars().count() > limit);
    if cut || structured_too_big {
        if let Some(object) = result.as_object_mut() {
            object.remove("structuredContent");
        }
    }
    cut || structured_too_big
}

fn cap_result_at(result: &mut Value, limit: usize) -> bool {
    let Some(content) = result.get_mut("content").and_then(Value::as_array_mut) else {
        return false;
    };
    let text_of = |item: &Value| {
        (item.get("type").and_then(Value::as_str) == Some("text"))
            .then(|| item.get("text").and_then(Value::as_str).map(str::to_owned))
            .flatten()
    };
    let total: usize = content
        .iter()
        .filter_map(text_of)
        .map(|t| t.chars().count())
        .sum();
    if total <= limit {
        return false;
    }
    let marker_for = |shown: usize| {
        format!(
            "\n\n[truncated by Core MCP: the result has {total} characters of text; the first \
             {shown} are shown]"
        )
    };
    let mut budget = limit.saturating_sub(marker_for(limit).chars().count());
    let marker = marker_for(budget);
    let mut kept = Vec::with_capacity(content.len());
    let mut marked = false;
    for mut item in content.drain(..) {
        let Some(text) = text_of(&item) else {
            kept.push(item);
            continue;
        };
        if marked {
            continue;
        }
        let chars = text.chars().count();
        if chars <= budget {
            budget -= chars;
            kept.push(item);
            continue;
        }
        let mut cut: String = text.chars().take(budget).collect();
        cut.push_str(&marker);
        item["text"] = Value::String(cut);
        kept.push(item);
        marked = true;
    }
    *content = kept;
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_published_name_splits_back_into_its_server_and_tool() {
        for (id, tool) in [("everything", "echo"), ("a-1", "get__thing"), ("t", "_x")] {
            assert_eq!(split_name(&full_name(id, tool)), Some((id, tool)));
        }
        for name in [
            "echo",
            "mcp__",
            "mcp__everything",
            "mcp__every_thing",
            "mcp_x__y",
        ] {
            assert_eq!(split_name(name), None, "{name}");
        }
    }

    fn tool(name: &str) -> Value {
        json!({"name": name, "description": "d", "inputSchema": {"type": "object"}})
    }

    #[test]
    fn tools_are_published_under_the_server_prefix_without_nulls() {
        let tools = [
            json!({"name": "echo", "title": "Echo", "description": "Echoes",
                            "inputSchema": {"type": "object", "properties": {"m": {"type": "string"}}},
                            "annotations": null, "outputSchema": null}),
        ];
        let out = publish("everything", &tools, 200, 0);
        assert!(out.withheld.is_empty(), "{:?}", out.withheld);
        assert_eq!(out.names(), ["mcp__everything__echo"]);
        let text = out.published[0].to_string();
        assert!(!text.contains("null"), "{text}");
        assert_eq!(out.published[0]["title"], "Echo");
    }

    #[test]
    fn long_descriptions_are_capped_with_an_ellipsis() {
        let mut t = tool("long");
        t["description"] = Value::String("é".repeat(2000));
        let out = publish("s", &[t], 200, 0);
        let description = out.published[0]["description"].as_str().expect("text");
        assert_eq!(description.chars().count(), MAX_DESCRIPTION_CHARS);
        assert!(description.ends_with('…'));
        assert_eq!(cap_description("short"), "short");
    }

    #[test]
    fn bad_or_huge_schemas_are_withheld_with_a_reason() {
        let big = json!({"name": "big", "inputSchema": {"type": "object",
                          "description": "x".repeat(10_000)}});
        let array = json!({"name": "array", "inputSchema": {"type": "array"}});
        let none = json!({"name": "none"});
        let out = publish("s", &[big, array, none, tool("fine")], 200, 0);
        assert_eq!(out.names(), ["mcp__s__fine"]);
        let reasons: Vec<(&str, &str)> = out
            .withheld
            .iter()
            .map(|w| (w.tool.as_str(), w.reason.as_str()))
            .collect();
        assert_eq!(reasons.len(), 3);
        assert_eq!(reasons[0].0, "big");
        assert!(
            reasons[0].1.contains("the limit is 8000"),
            "{}",
            reasons[0].1
        );
        assert!(reasons[1].1.contains("not an object schema"));
        assert!(reasons[2].1.contains("no input schema"));
    }

    #[test]
    fn names_model_apis_refuse_are_renamed_deterministically_and_reported() {
        let long = "t".repeat(70);
        let fits = "t".repeat(64 - "mcp__s__".len());
        let tools = [
            tool(&long),
            tool(&fits),
            tool("a.b"),
            tool("a/b"),
            tool("a_b"),
            json!({"x": 1}),
        ];
        let out = publish("s", &tools, 200, 0);
        let names = out.names();
        // Every name is one model APIs accept.
        for name in &names {
            assert!(name.len() <= 64, "{name}");
            assert!(
                name.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
                "{name}"
            );
        }
        // The long one: cut, ending in a hash of its own name; the one that fits: as it is.
        assert_eq!(names[0].len(), 64);
        assert!(names[0].starts_with("mcp__s__ttt"), "{}", names[0]);
        assert_ne!(names[0], names[1]);
        assert_eq!(names[1], format!("mcp__s__{fits}"));
        // Odd characters become _, and a name taken already gets the next number.
        assert_eq!(
            names[2..],
            ["mcp__s__a_b", "mcp__s__a_b_2", "mcp__s__a_b_3"]
        );
        assert_eq!(out.withheld[0].reason, "it has no name");
        // Calls reach the server by its own names, and each rename is reported.
        let map = out.name_map();
        assert_eq!(map["mcp__s__a_b"], "a.b");
        assert_eq!(map["mcp__s__a_b_2"], "a/b");
        assert_eq!(map["mcp__s__a_b_3"], "a_b");
        assert_eq!(map[&names[0]], long);
        assert_eq!(out.renamed.len(), 4, "{:?}", out.renamed);
        // The same listing publishes the same names.
        assert_eq!(publish("s", &tools, 200, 0).names(), names);
    }

    #[test]
    fn a_server_publishes_at_most_its_limit() {
        let tools: Vec<Value> = (0..10).map(|i| tool(&format!("t{i}"))).collect();
        let mut with_broken = tools.clone();
        with_broken.insert(1, json!({"name": "bad", "inputSchema": {"type": "array"}}));
        let out = publish("s", &with_broken, 3, 5);
        assert_eq!(out.names(), ["mcp__s__t0", "mcp__s__t1", "mcp__s__t2"]);
        assert_eq!(
            out.withheld.len(),
            1,
            "the broken one, kept with its reason"
        );
        assert_eq!(out.withheld[0].tool, "bad");
        assert_eq!(
            out.over_limit,
            7 + 5,
            "seven kept past the limit and five unread"
        );
        let line = out.summary("s");
        assert!(
            line.contains("3 tools published")
                && line.contains("1 withheld (first: bad (")
                && line.contains("12 more past its limit of 3"),
            "{line}"
        );
    }

    #[test]
    fn a_server_listing_a_hundred_thousand_tools_keeps_only_a_count_past_its_limit() {
        let mut tools: Vec<Value> = (0..100_000).map(|i| tool(&format!("t{i}"))).collect();
        // Withheld ones past the first few are counted too.
        for i in 0..200 {
            tools[i * 2 + 1] = json!({"name": format!("bad{i}"), "inputSchema": {"type": "array"}});
        }
        let out = publish("s", &tools, 200, 0);
        assert_eq!(out.published.len(), 200);
        assert_eq!(out.withheld.len(), WITHHELD_KEPT);
        assert_eq!(out.withheld.len() + out.more_withheld, 200);
        assert_eq!(out.over_limit, 100_000 - 200 - 200);
    }

    #[test]
    fn duplicates_and_built_in_names_are_withheld() {
        let out = publish("s", &[tool("a"), tool("a")], 200, 0);
        assert_eq!(out.names(), ["mcp__s__a"]);
        assert!(out.withheld[0].reason.contains("twice"));
        // No built-in starts with mcp__, so the check can only be exercised directly.
        assert!(check_name("registry_theme_list")
            .expect_err("built-in")
            .contains("built-in"));
    }

    #[test]
    fn results_are_capped_at_the_limit_with_a_marker() {
        let mut small = json!({"content": [{"type": "text", "text": "abc"}]});
        assert!(!cap_result(&mut small, MAX_RESULT_CHARS));
        assert_eq!(small["content"][0]["text"], "abc");

        let mut big = json!({"content": [
            {"type": "text", "text": "a".repeat(MAX_RESULT_CHARS - 10)},
            {"type": "image", "data": "AA==", "mimeType": "image/png"},
            {"type": "text", "text": "b".repeat(50)},
            {"type": "text", "text": "c".repeat(50)},
        ], "isError": false});
        assert!(cap_result(&mut big, MAX_RESULT_CHARS));
        let content = big["content"].as_array().expect("content");
        assert_eq!(
            content.len(),
            2,
            "the later texts are dropped, the image kept"
        );
        let first = content[0]["text"].as_str().expect("text");
        assert!(
            first.ends_with("the result has 20090 characters of text; the first 19907 are shown]")
        );
        assert_eq!(
            first.chars().count(),
            MAX_RESULT_CHARS,
            "the marker counts in the limit"
        );
        assert_eq!(big["isError"], false);

        let mut tiny = json!({"content": [{"type": "text", "text": "é".repeat(300)}],
            "structuredContent": {"a": 1}});
        assert!(cap_result_at(&mut tiny, 200));
        let text = tiny["content"][0]["text"].as_str().expect("text");
        assert!(
            text.starts_with("éé\u{e9}") && text.chars().count() == 200,
            "{text}"
        );
        let mut big_structured = json!({"content": [{"type": "text", "text": "ok"}],
            "structuredContent": {"a": "x".repeat(30_000)}});
        assert!(cap_result(&mut big_structured, MAX_RESULT_CHARS));
        assert!(big_structured.get("structuredContent").is_none());
        let mut odd = json!({"content": "not a list"});
        assert!(!cap_result(&mut odd, MAX_RESULT_CHARS));
        // A Codex session's budget: the same result is cut at 10 000.
        let mut codex = json!({"content": [{"type": "text", "text": "d".repeat(12_000)}],
            "structuredContent": {"d": 1}});
        assert!(cap_result(&mut codex, 10_000));
        let text = codex["content"][0]["text"].as_str().expect("text");
        assert!((9_990..=10_000).contains(&text.chars().count()));
        assert!(codex.get("structuredContent").is_none());
    }
}
