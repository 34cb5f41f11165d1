//! The Registry's own key grammars (themes, projects, sources, hosts, source refs); the rules
//! every group shares (text, tokens, URLs, addresses, commits) are the SDK's
//! [`coremcp_plugin_sdk::rules`].
//!
//! The SDK's schema validator has no `pattern`, so every key pattern the Registry publishes is
//! checked here by hand. Invariant: each check returns `invalid_arguments` naming the argument,
//! the value and the rule it broke, so a caller can fix the call from the message alone.

use coremcp_plugin_sdk::{rules, ToolError};
use coremcp_store::plugin::invalid;

/// `^[a-z0-9][a-z0-9-]{0,39}$`
pub fn theme_key(field: &str, key: &str) -> Result<(), ToolError> {
    rules::slug(field, key, "theme key", 40, "-", "reliability")
}

/// `^[A-Z][A-Z0-9]{1,9}$`
pub fn project_key(field: &str, key: &str) -> Result<(), ToolError> {
    let b = key.as_bytes();
    let ok = (2..=10).contains(&b.len())
        && b[0].is_ascii_uppercase()
        && b[1..]
            .iter()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit());
    if ok {
        Ok(())
    } else {
        Err(invalid(
            field,
            format!(
                "{key:?} is not a project key: use 2–10 of A-Z and 0-9, starting with a letter \
                 (^[A-Z][A-Z0-9]{{1,9}}$, e.g. CORE)"
            ),
        ))
    }
}

/// A source name: `^[a-z0-9][a-z0-9._-]*$`, at most 100 characters.
pub fn source_name(field: &str, name: &str) -> Result<(), ToolError> {
    rules::slug(field, name, "source name", 100, "._-", "core-mcp")
}

/// `^[a-z0-9][a-z0-9-]{0,62}$`
pub fn host_name(field: &str, name: &str) -> Result<(), ToolError> {
    rules::slug(field, name, "host name", 63, "-", "devbox-1")
}

/// A source ref `PROJECT/name`, split into its project key and source name.
pub fn source_ref<'a>(field: &str, text: &'a str) -> Result<(&'a str, &'a str), ToolError> {
    let Some((project, name)) = text.split_once('/') else {
        return Err(invalid(
            field,
            format!("{text:?} is not a source ref: write it PROJECT/name, e.g. CORE/core-mcp"),
        ));
    };
    project_key(field, project)?;
    source_name(field, name)?;
    Ok((project, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    use coremcp_plugin_sdk::testing::refused;

    #[test]
    fn key_patterns() {
        for ok in ["reliability", "a", "0x", "dev-ops", &"a".repeat(40)] {
            assert!(theme_key("key", ok).is_ok(), "{ok}");
        }
        for bad in ["", "-a", "Reliability", "a_b", "a b", "é", &"a".repeat(41)] {
            let msg = refused(theme_key("key", bad), "key");
            assert!(msg.contains("theme key"), "{msg}");
        }
        for ok in ["CORE", "AB", "X1", "ABCDEFGHIJ"] {
            assert!(project_key("key", ok).is_ok(), "{ok}");
        }
        for bad in ["C", "core", "1AB", "CO-RE", "ABCDEFGHIJK", ""] {
            let msg = refused(project_key("key", bad), "key");
            assert!(msg.contains("e.g. CORE"), "{msg}");
        }
        for ok in ["core-mcp", "a", "x.y_z-1", "9"] {
            assert!(source_name("name", ok).is_ok(), "{ok}");
        }
        for bad in ["", ".git", "Core", "a/b", "a b", &"a".repeat(101)] {
            refused(source_name("name", bad), "name");
        }
        for ok in ["devbox-1", "a", &"a".repeat(63)] {
            assert!(host_name("name", ok).is_ok(), "{ok}");
        }
        for bad in ["", "-a", "Devbox", "a.b", "a_b", &"a".repeat(64)] {
            refused(host_name("name", bad), "name");
        }
    }

    #[test]
    fn source_refs() {
        assert_eq!(
            source_ref("source", "CORE/core-mcp").expect("ref"),
            ("CORE", "core-mcp")
        );
        for bad in ["CORE", "core/x", "CORE/", "/x", "CORE/a/b", "CORE/X"] {
            refused(source_ref("source", bad), "source");
        }
    }
}
