//! The grammar of NervHQ arguments the schema validator cannot express (it has no `pattern`):
//! note scopes and keys, the byte limit of a value, and session ids. Every refusal is
//! `invalid_arguments` naming the argument (`scope`, `entries[57].key`, …) and showing the rule.
//! The argument types [`Scope`], [`Key`] and [`SessionId`] apply them while the arguments are
//! parsed, so a handler only ever sees valid ones.

use coremcp_plugin_sdk::ToolError;
use coremcp_store::plugin::invalid;

/// The most bytes a note's value may hold (16 KiB).
pub const MAX_VALUE_BYTES: usize = 16 * 1024;
/// The most characters of a key, and of the name part of a scope.
pub const MAX_NAME_CHARS: usize = 200;
/// The scope kinds that take a name, in the order the grammar lists them.
pub const SCOPE_KINDS: [&str; 4] = ["project", "agent", "session", "host"];

/// How the scope grammar reads in an error.
pub const SCOPE_GRAMMAR: &str = "global | project:<KEY> | agent:<name> | session:<id> | \
    host:<name>, where <KEY>, <name> and <id> are 1-200 characters of A-Z a-z 0-9 . _ : @ / -";
/// How the key grammar reads in an error.
pub const KEY_GRAMMAR: &str = "1-200 characters of A-Z a-z 0-9 . _ : / -";

fn key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '/' | '-')
}

fn name_char(c: char) -> bool {
    key_char(c) || c == '@'
}

fn within(text: &str, allowed: fn(char) -> bool) -> bool {
    !text.is_empty() && text.chars().count() <= MAX_NAME_CHARS && text.chars().all(allowed)
}

/// A value as an error shows it: JSON-quoted and cut, so a huge or odd argument stays readable.
pub fn shown(text: &str) -> String {
    const MAX: usize = 60;
    if text.chars().count() <= MAX {
        return serde_json::Value::from(text).to_string();
    }
    let head: String = text.chars().take(MAX).collect();
    format!("{}…", serde_json::Value::from(head))
}

coremcp_plugin_sdk::checked_string! {
    /// A note scope, checked by [`check_scope`].
    Scope => check_scope;
    /// A note key, checked by [`check_key`].
    Key => check_key;
    /// A session id, checked by [`check_session_id`].
    SessionId => check_session_id;
}

/// Whether `scope` follows the scope grammar.
pub fn is_scope(scope: &str) -> bool {
    if scope == "global" {
        return true;
    }
    match scope.split_once(':') {
        Some((kind, name)) => SCOPE_KINDS.contains(&kind) && within(name, name_char),
        None => false,
    }
}

/// `scope` (the argument `field`) follows the scope grammar.
pub fn check_scope(field: &str, scope: &str) -> Result<(), ToolError> {
    if is_scope(scope) {
        Ok(())
    } else {
        Err(invalid(
            field,
            format!("{} is not a scope: use {SCOPE_GRAMMAR}", shown(scope)),
        ))
    }
}

/// `key` (the argument `field`) follows the key grammar.
pub fn check_key(field: &str, key: &str) -> Result<(), ToolError> {
    if within(key, key_char) {
        Ok(())
    } else {
        Err(invalid(
            field,
            format!("{} is not a key: use {KEY_GRAMMAR}", shown(key)),
        ))
    }
}

/// `value` (the argument `field`) fits [`MAX_VALUE_BYTES`]; `of` says whose value it is.
pub fn check_value(field: &str, value: &str, of: &str) -> Result<(), ToolError> {
    if value.len() <= MAX_VALUE_BYTES {
        Ok(())
    } else {
        Err(invalid(
            field,
            format!(
                "the value{of} is {} bytes, over the limit of {MAX_VALUE_BYTES} bytes (16 KiB)",
                value.len()
            ),
        ))
    }
}

/// Whether `id` is a ULID (26 Crockford base32 characters, any case, at most `7ZZ…`) or a UUID
/// (8-4-4-4-12 hex digits, any case).
pub fn is_session_id(id: &str) -> bool {
    is_ulid(id) || is_uuid(id)
}

fn is_ulid(id: &str) -> bool {
    let crockford = |c: char| {
        c.is_ascii_alphanumeric() && !matches!(c.to_ascii_uppercase(), 'I' | 'L' | 'O' | 'U')
    };
    // 26 base32 digits carry 130 bits; a ULID is 128, so the first digit is at most 7.
    id.len() == 26 && id.chars().all(crockford) && id.as_bytes()[0] <= b'7'
}

fn is_uuid(id: &str) -> bool {
    let groups: Vec<&str> = id.split('-').collect();
    groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(g, n)| g.len() == n && g.chars().all(|c| c.is_ascii_hexdigit()))
}

/// `id` (the argument `field`) is a session id.
pub fn check_session_id(field: &str, id: &str) -> Result<(), ToolError> {
    if is_session_id(id) {
        Ok(())
    } else {
        Err(invalid(
            field,
            format!(
                "{} is not a session id: use a ULID (26 Crockford base32 characters) or a UUID \
                 (8-4-4-4-12 hex digits)",
                shown(id)
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes() {
        for ok in [
            "global",
            "project:CORE",
            "agent:claude-code",
            "agent:codex@devbox-1",
            "session:01JABCDEFGHJKMNPQRSTVWXYZ0",
            "host:devbox-1.lan",
            "project:a:b/c",
            &format!("host:{}", "h".repeat(200)),
        ] {
            assert!(is_scope(ok), "{ok}");
            assert!(check_scope("scope", ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "Global",
            "global:",
            "project",
            "project:",
            "team:x",
            "agent:two words",
            "host:é",
            " global",
            &format!("host:{}", "h".repeat(201)),
        ] {
            assert!(!is_scope(bad), "{bad:?}");
            let err = check_scope("scope", bad).expect_err(bad);
            assert_eq!(err.code.as_str(), "invalid_arguments");
            assert!(err.message.contains("\"scope\""), "{err}");
            assert!(err.message.contains("project:<KEY>"), "{err}");
        }
    }

    #[test]
    fn keys() {
        for ok in ["a", "todo/next", "A.b_c:d-e/f", &"k".repeat(200)] {
            assert!(check_key("key", ok).is_ok(), "{ok}");
        }
        for bad in ["", "a b", "a@b", "ü", "a\n", &"k".repeat(201)] {
            let err = check_key("entries[3].key", bad).expect_err(bad);
            assert!(err.message.contains("\"entries[3].key\""), "{err}");
            assert!(err.message.contains(KEY_GRAMMAR), "{err}");
        }
    }

    #[test]
    fn values_are_limited_in_bytes_not_characters() {
        assert!(check_value("value", &"a".repeat(MAX_VALUE_BYTES), "").is_ok());
        let err = check_value("value", &"a".repeat(MAX_VALUE_BYTES + 1), "").expect_err("over");
        assert!(err.message.contains("\"value\""), "{err}");
        assert!(err.message.contains("16385 bytes"), "{err}");
        // 8193 two-byte characters: under the limit in characters, over it in bytes.
        let wide = "é".repeat(MAX_VALUE_BYTES / 2 + 1);
        assert!(wide.chars().count() < MAX_VALUE_BYTES);
        assert!(check_value("value", &wide, "").is_err());
    }

    #[test]
    fn session_ids() {
        for ok in [
            "01ARZ3NDEKTSV4RRFFQ69G5FAV",
            "01arz3ndektsv4rrffq69g5fav",
            "7ZZZZZZZZZZZZZZZZZZZZZZZZZ",
            "123e4567-e89b-12d3-a456-426614174000",
            "123E4567-E89B-12D3-A456-426614174000",
        ] {
            assert!(is_session_id(ok), "{ok}");
        }
        for bad in [
            "",
            "session-1",
            "01ARZ3NDEKTSV4RRFFQ69G5FA",   // 25
            "01ARZ3NDEKTSV4RRFFQ69G5FAVX", // 27
            "01ARZ3NDEKTSV4RRFFQ69G5FAU",  // U is not Crockford
            "8ZZZZZZZZZZZZZZZZZZZZZZZZZ",  // over 128 bits
            "123e4567e89b12d3a456426614174000",
            "123e4567-e89b-12d3-a456-42661417400g",
            "123e4567-e89b-12d3-a4566-42661417400",
        ] {
            assert!(!is_session_id(bad), "{bad}");
        }
        let err = check_session_id("session_id", "nope").expect_err("bad");
        assert!(err.message.contains("\"session_id\""), "{err}");
        assert!(err.message.contains("ULID"), "{err}");
    }

    #[test]
    fn long_values_are_cut_in_errors() {
        let long = "x".repeat(500);
        assert!(shown(&long).len() < 80);
        assert_eq!(shown("a\"b"), "\"a\\\"b\"");
    }
}
