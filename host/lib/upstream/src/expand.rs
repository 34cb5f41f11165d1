//! `${VAR}` and `${VAR:-default}` in an `mcp.json` entry, expanded from Core MCP's own
//! environment when the file is loaded (the convention of Claude Code's `.mcp.json`), so a
//! token need not sit in the file.
//!
//! Invariants: only `${NAME}` and `${NAME:-default}` are special (a `$` not followed by `{`
//! is kept as it is); a variable that is unset (or empty) and has no default refuses the entry,
//! naming the variable and never a value; an expansion is never expanded again. Every value
//! taken from the environment (of 6 characters or more) is remembered, so that what a server
//! writes to its stderr is shown with `${NAME}` in its place ([`redact`]).

use std::borrow::Cow;
use std::sync::{PoisonError, RwLock};

/// The values expanded from the environment, with the placeholder each is shown as.
static EXPANDED: RwLock<Vec<(String, String)>> = RwLock::new(Vec::new());
/// Shorter values are not hidden: they would mangle ordinary text.
const MIN_REDACTED: usize = 6;

/// Why a text could not be expanded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ExpandError {
    #[error("${{{0}}} is not set in Core MCP's environment (give it a value, or a default: ${{{0}:-…}})")]
    Unset(String),
    #[error("\"${{\" without its closing \"}}\"")]
    Unterminated,
    #[error("\"${{{0}}}\": a variable name is letters, digits and _, not starting with a digit")]
    BadName(String),
}

/// `text` with every `${NAME}` / `${NAME:-default}` replaced through `lookup`.
pub(crate) fn expand(
    text: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<String, ExpandError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after.find('}').ok_or(ExpandError::Unterminated)?;
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (inner, None),
        };
        let valid = !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(ExpandError::BadName(inner.to_owned()));
        }
        match (lookup(name).filter(|v| !v.is_empty()), default) {
            (Some(value), _) => out.push_str(&value),
            (None, Some(default)) => out.push_str(default),
            (None, None) => return Err(ExpandError::Unset(name.to_owned())),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// [`expand`] from this process's environment, remembering the values it took.
pub fn from_env(text: &str) -> Result<String, ExpandError> {
    expand(text, &|name| {
        let value = std::env::var(name).ok()?;
        if value.len() >= MIN_REDACTED {
            let mut known = EXPANDED.write().unwrap_or_else(PoisonError::into_inner);
            if !known.iter().any(|(v, _)| *v == value) {
                known.push((value.clone(), format!("${{{name}}}")));
            }
        }
        Some(value)
    })
}

/// `text` with every value [`from_env`] expanded shown as its `${NAME}`.
pub(crate) fn redact(text: &str) -> Cow<'_, str> {
    let known = EXPANDED.read().unwrap_or_else(PoisonError::into_inner);
    let mut out = Cow::Borrowed(text);
    for (value, placeholder) in known.iter() {
        if out.contains(value.as_str()) {
            out = Cow::Owned(out.replace(value.as_str(), placeholder));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(name: &str) -> Option<String> {
        match name {
            "TOKEN" => Some("s3cr3t".into()),
            "EMPTY" => Some(String::new()),
            "DOLLAR" => Some("${TOKEN}".into()),
            _ => None,
        }
    }

    #[test]
    fn variables_and_defaults_expand_once() {
        let run = |t: &str| expand(t, &lookup);
        assert_eq!(run("Bearer ${TOKEN}").as_deref(), Ok("Bearer s3cr3t"));
        assert_eq!(
            run("${BASE:-https://mcp.example}/mcp").as_deref(),
            Ok("https://mcp.example/mcp")
        );
        assert_eq!(run("${EMPTY:-fallback}").as_deref(), Ok("fallback"));
        assert_eq!(run("${BASE:-}x").as_deref(), Ok("x"));
        assert_eq!(run("a $HOME b $ c").as_deref(), Ok("a $HOME b $ c"));
        assert_eq!(
            run("${DOLLAR}").as_deref(),
            Ok("${TOKEN}"),
            "never expanded twice"
        );
        assert_eq!(run("${TOKEN}${TOKEN}").as_deref(), Ok("s3cr3ts3cr3t"));
    }

    #[test]
    fn expanded_values_are_shown_by_name() {
        std::env::set_var("COREMCP_EXPAND_REDACT_TEST", "a-long-secret-value");
        let url = from_env("https://h/${COREMCP_EXPAND_REDACT_TEST}").expect("expands");
        assert_eq!(url, "https://h/a-long-secret-value");
        assert_eq!(
            redact("token=a-long-secret-value rejected"),
            "token=${COREMCP_EXPAND_REDACT_TEST} rejected"
        );
        assert!(matches!(redact("nothing here"), Cow::Borrowed(_)));
    }

    #[test]
    fn what_cannot_expand_is_named() {
        let run = |t: &str| expand(t, &lookup);
        assert_eq!(run("${MISSING}"), Err(ExpandError::Unset("MISSING".into())));
        assert_eq!(run("${EMPTY}"), Err(ExpandError::Unset("EMPTY".into())));
        assert_eq!(run("x ${TOKEN"), Err(ExpandError::Unterminated));
        assert_eq!(run("${1X}"), Err(ExpandError::BadName("1X".into())));
        assert_eq!(run("${}"), Err(ExpandError::BadName(String::new())));
        let text = run("${MISSING}").expect_err("unset").to_string();
        assert!(text.contains("${MISSING} is not set"), "{text}");
    }
}
