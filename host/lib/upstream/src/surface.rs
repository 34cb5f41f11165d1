//! The rest of an upstream server's surface besides its tools: its prompts, resources and
//! resource templates, published under names that say which server they are from.
//!
//! - A prompt is `mcp__<id>__<prompt>`, like a tool (a name that cannot be one is withheld).
//! - A resource URI (or template) is `coremcp+<id>:` followed by the server's own URI, byte for
//!   byte, so [`unwrap_uri`] gives the exact URI back to send to the server; the URIs in what
//!   the server answers are wrapped the same way.
//!
//! Invariants: descriptions are capped at 1 000 characters, the text of a read or a prompt at
//! 20 000 in all (with the marker tools get), and nothing optional is published as `null`.

use std::collections::HashMap;

use serde_json::Value;

use super::publish::{cap_description, full_name};
use coremcp_wire::mcp::MAX_RESULT_CHARS;

/// The scheme prefix of a published resource URI: `coremcp+` then the server id.
const SCHEME: &str = "coremcp+";

/// The MCP methods a surface answers: the session passes them on to its servers.
pub fn serves(method: &str) -> bool {
    matches!(
        method,
        "prompts/list"
            | "prompts/get"
            | "resources/list"
            | "resources/templates/list"
            | "resources/read"
            | "completion/complete"
    )
}

/// A server's published prompts, resources and templates.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Surface {
    pub prompts: Vec<Value>,
    /// Full prompt name → the server's own.
    pub prompt_names: HashMap<String, String>,
    pub resources: Vec<Value>,
    pub templates: Vec<Value>,
    /// Why items were left out.
    pub warnings: Vec<String>,
}

/// `uri` of server `id` as we publish it.
pub(crate) fn wrap_uri(id: &str, uri: &str) -> String {
    format!("{SCHEME}{id}:{uri}")
}

/// The server id and its own URI of a published resource URI, if it is one.
pub(crate) fn unwrap_uri(uri: &str) -> Option<(&str, &str)> {
    let rest = uri.strip_prefix(SCHEME)?;
    let (id, original) = rest.split_once(':')?;
    (!id.is_empty()).then_some((id, original))
}

/// Whether `uri` is an instance of the URI template `template` (its `{variables}` each
/// standing for one or more characters other than `/`; the rest literal).
pub fn matches(template: &str, uri: &str) -> bool {
    let mut pieces = template.split('{');
    let Some(first) = pieces.next() else {
        return false;
    };
    let Some(mut rest) = uri.strip_prefix(first) else {
        return false;
    };
    for piece in pieces {
        let Some((_, literal)) = piece.split_once('}') else {
            return false;
        };
        // The variable takes what comes before the next literal (or the next `/`).
        let end = match literal.is_empty() {
            true => rest.find('/').unwrap_or(rest.len()),
            false => match rest.find(literal) {
                Some(at) => at,
                None => return false,
            },
        };
        if end == 0 || rest[..end].contains('/') {
            return false;
        }
        rest = &rest[end + literal.len()..];
    }
    rest.is_empty()
}

/// Whether a prompt name can be published (the rule tool names follow).
fn publishable(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Publishes what server `id` listed.
pub fn publish(id: &str, prompts: &[Value], resources: &[Value], templates: &[Value]) -> Surface {
    let mut surface = Surface::default();
    for prompt in prompts {
        let Some(name) = prompt["name"].as_str() else {
            surface
                .warnings
                .push("a prompt without a name was left out".into());
            continue;
        };
        if !publishable(name) {
            surface.warnings.push(format!(
                "the prompt {name:?} was left out: its name is not letters, digits, '_' and '-' \
                 (64 at most)"
            ));
            continue;
        }
        let full = full_name(id, name);
        let mut entry = clean(prompt);
        entry["name"] = Value::from(full.clone());
        surface.prompt_names.insert(full, name.to_owned());
        surface.prompts.push(entry);
    }
    for (items, key, out) in [
        (resources, "uri", &mut surface.resources),
        (templates, "uriTemplate", &mut surface.templates),
    ] {
        for item in items {
            let Some(uri) = item[key].as_str() else {
                continue;
            };
            let mut entry = clean(item);
            entry[key] = Value::from(wrap_uri(id, uri));
            out.push(entry);
        }
    }
    surface
}

/// An item without its `null`s, its description capped.
fn clean(item: &Value) -> Value {
    let mut item = item.clone();
    if let Some(object) = item.as_object_mut() {
        object.retain(|_, v| !v.is_null());
        if let Some(text) = object.get("description").and_then(Value::as_str) {
            let capped = cap_description(text);
            object.insert("description".into(), Value::from(capped));
        }
    }
    item
}

/// A `resources/read` result of server `id` as our client gets it: every URI wrapped, the text
/// capped.
pub fn read_result(id: &str, mut result: Value) -> Value {
    if let Some(contents) = result.get_mut("contents").and_then(Value::as_array_mut) {
        for item in contents.iter_mut() {
            wrap_in(id, item);
        }
        let mut budget = MAX_RESULT_CHARS;
        for item in contents.iter_mut() {
            cap_text(item, "text", &mut budget);
        }
    }
    strip_nulls(&mut result);
    result
}

/// A `prompts/get` result of server `id` as our client gets it: embedded resource URIs
/// wrapped, the text of the messages capped.
pub fn prompt_result(id: &str, mut result: Value) -> Value {
    if let Some(messages) = result.get_mut("messages").and_then(Value::as_array_mut) {
        let mut budget = MAX_RESULT_CHARS;
        for message in messages.iter_mut() {
            let content = &mut message["content"];
            if let Some(resource) = content.get_mut("resource") {
                wrap_in(id, resource);
            }
            if content.get("type").and_then(Value::as_str) == Some("resource_link") {
                wrap_in(id, content);
            }
            cap_text(content, "text", &mut budget);
        }
    }
    strip_nulls(&mut result);
    result
}

fn wrap_in(id: &str, item: &mut Value) {
    if let Some(uri) = item.get("uri").and_then(Value::as_str) {
        let wrapped = wrap_uri(id, uri);
        item["uri"] = Value::from(wrapped);
    }
}

/// Cuts `item[key]` to what is left of `budget`, with the marker tools get.
fn cap_text(item: &mut Value, key: &str, budget: &mut usize) {
    let Some(text) = item.get(key).and_then(Value::as_str) else {
        return;
    };
    let count = text.chars().count();
    if count <= *budget {
        *budget -= count;
        return;
    }
    let kept: String = text.chars().take(*budget).collect();
    let marker = format!(
        "\n\n[truncated by Core MCP: this text has {count} characters; the first {} are shown]",
        *budget
    );
    item[key] = Value::from(kept + &marker);
    *budget = 0;
}

fn strip_nulls(result: &mut Value) {
    if let Some(object) = result.as_object_mut() {
        object.retain(|_, v| !v.is_null());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn uris_round_trip_exactly() {
        for uri in [
            "test://static/resource/1",
            "file:///a b/c?x=1#y",
            "weird:",
            "",
        ] {
            let wrapped = wrap_uri("everything", uri);
            assert_eq!(unwrap_uri(&wrapped), Some(("everything", uri)), "{wrapped}");
        }
        assert_eq!(unwrap_uri("file:///x"), None);
        assert_eq!(unwrap_uri("coremcp+:x"), None);
    }

    #[test]
    fn templates_match_their_instances() {
        assert!(matches(
            "test://template/{id}/data",
            "test://template/123/data"
        ));
        assert!(!matches(
            "test://template/{id}/data",
            "test://template//data"
        ));
        assert!(!matches(
            "test://template/{id}/data",
            "test://template/1/2/data"
        ));
        assert!(matches("a://{x}", "a://b"));
        assert!(!matches("a://{x}", "a://b/c"));
        assert!(matches("fixed", "fixed"));
        assert!(!matches("fixed", "fixed2"));
    }

    #[test]
    fn prompts_are_named_for_their_server_and_bad_names_are_withheld() {
        let surface = publish(
            "s",
            &[
                json!({"name": "greet", "description": "x".repeat(2000), "title": null}),
                json!({"name": "bad name"}),
            ],
            &[json!({"uri": "a://b", "name": "b"})],
            &[json!({"uriTemplate": "a://{x}", "name": "t"})],
        );
        assert_eq!(surface.prompts.len(), 1);
        assert_eq!(surface.prompts[0]["name"], "mcp__s__greet");
        assert!(surface.prompts[0].get("title").is_none());
        assert_eq!(
            surface.prompts[0]["description"]
                .as_str()
                .map(|d| d.chars().count()),
            Some(1000)
        );
        assert_eq!(
            surface
                .prompt_names
                .get("mcp__s__greet")
                .map(String::as_str),
            Some("greet")
        );
        assert_eq!(surface.warnings.len(), 1);
        assert_eq!(surface.resources[0]["uri"], "coremcp+s:a://b");
        assert_eq!(surface.templates[0]["uriTemplate"], "coremcp+s:a://{x}");
    }

    #[test]
    fn read_results_are_wrapped_and_capped() {
        let out = read_result(
            "s",
            json!({"contents": [{"uri": "a://b", "text": "y".repeat(30_000)},
                                {"uri": "a://c", "blob": "AA=="}]}),
        );
        assert_eq!(out["contents"][0]["uri"], "coremcp+s:a://b");
        assert!(out["contents"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("[truncated by Core MCP")));
        assert_eq!(out["contents"][1]["uri"], "coremcp+s:a://c");
        let prompt = prompt_result(
            "s",
            json!({"messages": [{"role": "user", "content": {"type": "resource",
                   "resource": {"uri": "a://d", "text": "t"}}}]}),
        );
        assert_eq!(
            prompt["messages"][0]["content"]["resource"]["uri"],
            "coremcp+s:a://d"
        );
    }
}
