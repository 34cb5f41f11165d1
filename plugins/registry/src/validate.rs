//! The Registry's own key grammars (themes, projects, sources, hosts, source refs); the rules
//! every group shares (text, tokens, URLs, addresses, commits) are the SDK's
//! [`coremcp_plugin_sdk::rules`].
//!
//! The SDK's schema validator has no `pattern`, so every key pattern the Registry publishes is
//! checked here by hand. Invariant: each check returns `invalid_arguments` naming the argument,
//! the value and the rule it broke, so a caller can fix the call from the message alone.

use coremcp_plugin_sdk::ToolError;
use coremcp_store::plugin::invalid;

/// `^[a-z0-9][a-z0-9-]{0,39}$`
pub fn theme_key(field: &str, key: &str) -> Result<(), ToolError> {
    check(slug(key, 40, &['-']), || {
        invalid(
            field,
            format!(
                "{key:?} is not a theme key: use 1–40 of a-z, 0-9 and '-', starting with a \
                 letter or digit (^[a-z0-9][a-z0-9-]{{0,39}}$, e.g. reliability)"
            ),
        )
    })
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
    check(slug(name, 100, &['.', '_', '-']), || {
        invalid(
            field,
            format!(
                "{name:?} is not a source name: use 1–100 of a-z, 0-9, '.', '_' and '-', \
                 starting with a letter or digit (^[a-z0-9][a-z0-9._-]*$, e.g. core-mcp)"
            ),
        )
    })
}

/// `^[a-z0-9][a-z0-9-]{0,62}$`
pub fn host_name(field: &str, name: &str) -> Result<(), ToolError> {
    check(slug(name, 63, &['-']), || {
        invalid(
            field,
            format!(
                "{name:?} is not a host name: use 1–63 of a-z, 0-9 and '-', starting with a \
                 letter or digit (^[a-z0-9][a-z0-9-]{{0,62}}$, e.g. devbox-1)"
            ),
        )
    })
}

/// Whether `text` is a lowercase slug: first character `[a-z0-9]`, the rest also from
/// `extra`, at most `max` characters.
fn slug(text: &str, max: usize, extra: &[char]) -> bool {
    let mut chars = text.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    first_ok
        && text.len() <= max
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || extra.contains(&c))
}

fn check(ok: bool, error: impl FnOnce() -> ToolError) -> Result<(), ToolError> {
    if ok {
        Ok(())
    } else {
        Err(error())
    }
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
