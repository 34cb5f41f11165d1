//! Checks tool arguments against the tool's input schema before the handler runs, so every tool
//! answers bad input with the same clear error that names the argument.
//!
//! It understands the subset of JSON Schema the catalog uses (docs/tools.md): `type` (one or a
//! list), `properties`, `required`, `additionalProperties: false`, `enum`, `items`, `minimum`,
//! `maximum`, `minLength`/`maxLength` (in characters), `minItems`/`maxItems`, and the
//! `description` annotation. [`check_schema`] refuses any other keyword, so a schema never
//! promises a rule that nothing enforces.

use serde_json::{Map, Value};

/// Validates an arguments object against an object schema. The error names the argument.
pub fn validate_args(schema: &Value, args: &Map<String, Value>) -> Result<(), String> {
    let properties = schema.get("properties").and_then(Value::as_object);
    if let Some(required) = schema.get("required").and_then(Value::as_array) {
        for name in required.iter().filter_map(Value::as_str) {
            if !args.contains_key(name) {
                return Err(format!("missing required argument \"{name}\""));
            }
        }
    }
    let closed = schema.get("additionalProperties") == Some(&Value::Bool(false));
    for (name, value) in args {
        match properties.and_then(|p| p.get(name)) {
            Some(prop) => validate_value(prop, value, &format!("argument \"{name}\""))?,
            None if closed => {
                let known: Vec<&str> = properties
                    .map(|p| p.keys().map(String::as_str).collect())
                    .unwrap_or_default();
                return Err(if known.is_empty() {
                    format!("unknown argument \"{name}\": this tool takes no arguments")
                } else {
                    format!(
                        "unknown argument \"{name}\" (expected one of: {})",
                        known.join(", ")
                    )
                });
            }
            None => {}
        }
    }
    Ok(())
}

fn validate_value(schema: &Value, value: &Value, at: &str) -> Result<(), String> {
    if let Some(expected) = schema.get("type") {
        let ok = match expected {
            Value::String(t) => has_type(value, t),
            Value::Array(ts) => ts
                .iter()
                .filter_map(Value::as_str)
                .any(|t| has_type(value, t)),
            _ => true,
        };
        if !ok {
            return Err(format!(
                "{at}: expected {}, got {}",
                describe_type(expected),
                type_name(value)
            ));
        }
    }
    if let Some(options) = schema.get("enum").and_then(Value::as_array) {
        if !options.contains(value) {
            let listed: Vec<String> = options.iter().map(Value::to_string).collect();
            return Err(format!("{at}: {value} is not one of {}", listed.join(", ")));
        }
    }
    if let Some(number) = value.as_f64() {
        if let Some(min) = schema.get("minimum").and_then(Value::as_f64) {
            if number < min {
                return Err(format!("{at}: {value} is below the minimum {min}"));
            }
        }
        if let Some(max) = schema.get("maximum").and_then(Value::as_f64) {
            if number > max {
                return Err(format!("{at}: {value} is above the maximum {max}"));
            }
        }
    }
    if let Some(text) = value.as_str() {
        let length = text.chars().count();
        if let Some(min) = schema.get("minLength").and_then(Value::as_u64) {
            if (length as u64) < min {
                return Err(format!(
                    "{at}: {length} characters is shorter than the minimum {min}"
                ));
            }
        }
        if let Some(max) = schema.get("maxLength").and_then(Value::as_u64) {
            if length as u64 > max {
                return Err(format!(
                    "{at}: {length} characters is over the limit of {max}"
                ));
            }
        }
    }
    if let Some(values) = value.as_array() {
        if let Some(min) = schema.get("minItems").and_then(Value::as_u64) {
            if (values.len() as u64) < min {
                return Err(format!(
                    "{at}: {} items is fewer than the minimum {min}",
                    values.len()
                ));
            }
        }
        if let Some(max) = schema.get("maxItems").and_then(Value::as_u64) {
            if values.len() as u64 > max {
                return Err(format!(
                    "{at}: {} items is over the limit of {max}",
                    values.len()
                ));
            }
        }
    }
    if let (Some(items), Some(values)) = (schema.get("items"), value.as_array()) {
        for (i, item) in values.iter().enumerate() {
            validate_value(items, item, &format!("{at}[{i}]"))?;
        }
    }
    if let (Some(object), true) = (value.as_object(), schema.get("properties").is_some()) {
        validate_args(schema, object).map_err(|e| format!("{at}: {e}"))?;
    }
    Ok(())
}

/// The keywords [`validate_args`] enforces, and the annotations it allows: `description`, and
/// `default` (what an absent argument means; the host reads `timeout_s`'s to set a call's
/// deadline).
const KEYWORDS: &[&str] = &[
    "default",
    "type",
    "properties",
    "required",
    "additionalProperties",
    "enum",
    "items",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "description",
];
const TYPES: &[&str] = &["string", "integer", "number", "boolean", "array", "object"];

/// Checks that `schema` is a tool input schema this module enforces in full: a closed object
/// (`type: object`, `additionalProperties: false`) whose properties each have a description,
/// whose `required` names only properties, that never declares `remote_host` (the host
/// handles it), uses only the enforced keywords and no `null` type, and stays under the
/// host's 8 000 characters. The error names the first problem and where it is.
pub fn check_schema(schema: &Value) -> Result<(), String> {
    let size = schema.to_string().chars().count();
    if size >= 8000 {
        return Err(format!("{size} characters, the limit is under 8000"));
    }
    if schema["type"] != "object" || schema["additionalProperties"] != false {
        return Err("not a closed object schema (type object, additionalProperties false)".into());
    }
    if schema["properties"].get("remote_host").is_some() {
        return Err("declares remote_host, which the host handles".into());
    }
    check_node(schema, "", true)
}

/// The part of [`check_schema`] every plugin's schemas must pass to load: only keywords the
/// argument checker enforces, with values it understands (no `null` type). An open object
/// (a test fixture's echo) passes this; the catalog's tables are held to [`check_schema`].
pub fn check_keywords(schema: &Value) -> Result<(), String> {
    check_node(schema, "", false)
}

fn check_node(schema: &Value, at: &str, described: bool) -> Result<(), String> {
    let Some(map) = schema.as_object() else {
        return Err(format!("{at}: a schema must be an object"));
    };
    let here = if at.is_empty() { "the schema" } else { at };
    for (keyword, value) in map {
        if !KEYWORDS.contains(&keyword.as_str()) {
            return Err(format!(
                "{here}: keyword \"{keyword}\" is not enforced by the argument checker"
            ));
        }
        let ok = match keyword.as_str() {
            // `null` only as one of an array item's types (an SQL parameter may be NULL): an
            // argument itself is left out, never `null`.
            "type" => match value {
                Value::String(t) => TYPES.contains(&t.as_str()),
                Value::Array(ts) => {
                    !ts.is_empty()
                        && ts.iter().all(|t| {
                            t.as_str().is_some_and(|t| {
                                TYPES.contains(&t) || (t == "null" && at.ends_with("[]"))
                            })
                        })
                }
                _ => false,
            },
            "additionalProperties" => value == &Value::Bool(false),
            "enum" => value.as_array().is_some_and(|v| !v.is_empty()),
            "required" => value.as_array().is_some_and(|names| {
                names.iter().all(|n| {
                    n.as_str()
                        .is_some_and(|n| map["properties"].get(n).is_some())
                })
            }),
            "description" => value.as_str().is_some_and(|d| !d.is_empty()),
            "default" => !value.is_null(),
            "minimum" | "maximum" => value.is_number(),
            "minLength" | "maxLength" | "minItems" | "maxItems" => value.is_u64(),
            _ => true,
        };
        if !ok {
            return Err(format!(
                "{here}: \"{keyword}\" is {value}, which is not allowed"
            ));
        }
    }
    if let Some(properties) = map.get("properties") {
        let Some(properties) = properties.as_object() else {
            return Err(format!("{here}: properties must be an object"));
        };
        for (name, property) in properties {
            let at = if at.is_empty() {
                name.clone()
            } else {
                format!("{at}.{name}")
            };
            if described && property.get("description").is_none() {
                return Err(format!("{at}: no description"));
            }
            check_node(property, &at, described)?;
        }
    }
    if let Some(items) = map.get("items") {
        check_node(items, &format!("{here}[]"), described)?;
    }
    Ok(())
}

fn has_type(value: &Value, name: &str) -> bool {
    match name {
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        "null" => value.is_null(),
        _ => false,
    }
}

fn describe_type(expected: &Value) -> String {
    match expected {
        Value::String(t) => article(t),
        Value::Array(ts) => ts
            .iter()
            .filter_map(Value::as_str)
            .map(article)
            .collect::<Vec<_>>()
            .join(" or "),
        other => other.to_string(),
    }
}

fn article(t: &str) -> String {
    match t {
        "integer" | "object" | "array" => format!("an {t}"),
        "null" => "null".to_owned(),
        _ => format!("a {t}"),
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "an integer",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(args: Value, expected: Result<(), &str>) {
        let schema = json!({
            "type": "object",
            "properties": {
                "args": {"type": "array", "items": {"type": "string"}},
                "timeout_s": {"type": "integer", "minimum": 1, "maximum": 600},
                "mode": {"type": "string", "enum": ["a", "b"]},
                "flag": {"type": "boolean"}
            },
            "required": ["args"],
            "additionalProperties": false
        });
        let args = args.as_object().cloned().expect("test args are an object");
        assert_eq!(
            validate_args(&schema, &args),
            expected.map_err(str::to_owned)
        );
    }

    #[test]
    fn validation_cases() {
        check(json!({"args": ["x"]}), Ok(()));
        check(
            json!({"args": [], "timeout_s": 5, "mode": "b", "flag": true}),
            Ok(()),
        );
        check(json!({}), Err("missing required argument \"args\""));
        check(
            json!({"args": "x"}),
            Err("argument \"args\": expected an array, got a string"),
        );
        check(
            json!({"args": ["x", 2]}),
            Err("argument \"args\"[1]: expected a string, got an integer"),
        );
        check(
            json!({"args": [], "timeout_s": 1.5}),
            Err("argument \"timeout_s\": expected an integer, got a number"),
        );
        check(
            json!({"args": [], "timeout_s": 0}),
            Err("argument \"timeout_s\": 0 is below the minimum 1"),
        );
        check(
            json!({"args": [], "mode": "c"}),
            Err("argument \"mode\": \"c\" is not one of \"a\", \"b\""),
        );
        check(
            json!({"args": [], "extra": 1}),
            Err("unknown argument \"extra\" (expected one of: args, timeout_s, mode, flag)"),
        );
    }

    #[test]
    fn lengths_and_item_counts() {
        let schema = json!({
            "type": "object",
            "properties": {
                "key": {"type": "string", "minLength": 1, "maxLength": 3},
                "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 2}
            },
            "additionalProperties": false
        });
        let run = |args: Value| validate_args(&schema, args.as_object().expect("object"));
        assert_eq!(run(json!({"key": "äöü", "tags": ["a", "b"]})), Ok(()));
        assert_eq!(
            run(json!({"key": ""})),
            Err("argument \"key\": 0 characters is shorter than the minimum 1".to_owned())
        );
        assert_eq!(
            run(json!({"key": "abcd"})),
            Err("argument \"key\": 4 characters is over the limit of 3".to_owned())
        );
        assert_eq!(
            run(json!({"tags": []})),
            Err("argument \"tags\": 0 items is fewer than the minimum 1".to_owned())
        );
        assert_eq!(
            run(json!({"tags": ["a", "b", "c"]})),
            Err("argument \"tags\": 3 items is over the limit of 2".to_owned())
        );
    }
}

#[cfg(test)]
mod check_tests {
    use super::check_schema;
    use serde_json::json;

    #[test]
    fn a_keyword_the_checker_does_not_enforce_is_refused() {
        let good = json!({"type": "object", "properties": {"id": {"type": "string", "description": "the id", "minLength": 1}}, "required": ["id"], "additionalProperties": false});
        assert_eq!(check_schema(&good), Ok(()));
        let params = json!({"type": "object", "properties": {"p": {"type": "array", "description": "d", "items": {"type": ["string", "null"]}}}, "additionalProperties": false});
        assert_eq!(check_schema(&params), Ok(()));
        let cases = [
            (
                json!({"type": "object", "properties": {"id": {"type": "string", "description": "d", "pattern": "^a"}}, "additionalProperties": false}),
                "id: keyword \"pattern\" is not enforced",
            ),
            (
                json!({"type": "object", "properties": {"id": {"type": ["string", "null"], "description": "d"}}, "additionalProperties": false}),
                "id: \"type\"",
            ),
            (
                json!({"type": "object", "properties": {"id": {"type": "string"}}, "additionalProperties": false}),
                "id: no description",
            ),
            (
                json!({"type": "object", "properties": {}}),
                "not a closed object schema",
            ),
            (
                json!({"type": "object", "properties": {"remote_host": {"type": "string", "description": "d"}}, "additionalProperties": false}),
                "declares remote_host",
            ),
            (
                json!({"type": "object", "properties": {}, "required": ["x"], "additionalProperties": false}),
                "\"required\"",
            ),
            (
                json!({"type": "object", "properties": {"e": {"type": "array", "description": "d", "items": {"type": "object", "properties": {"k": {"type": "string", "description": "d", "$ref": "#"}}, "additionalProperties": false}}}, "additionalProperties": false}),
                "e[].k: keyword \"$ref\"",
            ),
        ];
        for (schema, needle) in cases {
            let err = check_schema(&schema).expect_err(needle);
            assert!(err.contains(needle), "{err} does not contain {needle}");
        }
    }
}
