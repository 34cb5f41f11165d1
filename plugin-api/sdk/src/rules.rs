//! Rules for argument values that a JSON schema cannot state, shared by every group: readable
//! text, single tokens, lowercase slug keys, project keys, git branch names and commit SHAs, host
//! addresses, http(s) URLs without credentials and Docker endpoints. Each check returns
//! `invalid_arguments` naming the argument, the value and the rule it broke, so a caller can fix
//! the call from the message alone. Wrap one in an argument type with
//! [`checked_string!`](crate::checked_string) so the value is refused while the arguments are
//! parsed.

use crate::args::invalid;
use crate::ToolError;

/// A title: [`text`] on one line (a line break is refused, naming it).
pub fn line(field: &str, value: &str, max: usize) -> Result<(), ToolError> {
    if value.contains(['\n', '\r']) {
        return Err(invalid(
            field,
            "must be one line: a title holds no line break (put the rest in the description or \
             body)",
        ));
    }
    text(field, value, max)
}

/// Text a person reads (a name, a description): not blank, no control characters but
/// newlines and tabs, at most `max` characters.
pub fn text(field: &str, value: &str, max: usize) -> Result<(), ToolError> {
    if value.trim().is_empty() {
        return Err(invalid(field, "must not be empty or blank"));
    }
    if let Some(c) = value
        .chars()
        .find(|c| c.is_control() && !matches!(c, '\n' | '\t' | '\r'))
    {
        return Err(invalid(
            field,
            format!("must not contain the control character {c:?}"),
        ));
    }
    at_most(field, value, max)
}

/// `value` has at most `max` characters.
fn at_most(field: &str, value: &str, max: usize) -> Result<(), ToolError> {
    let count = value.chars().count();
    if count > max {
        return Err(invalid(
            field,
            format!("is {count} characters long; at most {max} are allowed"),
        ));
    }
    Ok(())
}

/// A single token (a URL, a branch, a role): not empty, no whitespace or control characters,
/// at most `max` characters.
pub fn token(field: &str, value: &str, max: usize) -> Result<(), ToolError> {
    if value.is_empty() {
        return Err(invalid(field, "must not be empty"));
    }
    if let Some(c) = value.chars().find(|c| c.is_whitespace() || c.is_control()) {
        return Err(invalid(
            field,
            format!("{value:?} must not contain whitespace or control characters (found {c:?})"),
        ));
    }
    at_most(field, value, max)
}

/// A project key, `^[A-Z][A-Z0-9]{1,9}$`: the Registry's project keys and the prefix of Scrolls
/// item keys (`CORE` → `CORE-42`).
pub fn project_key(field: &str, key: &str) -> Result<(), ToolError> {
    let b = key.as_bytes();
    let ok = (2..=10).contains(&b.len())
        && b[0].is_ascii_uppercase()
        && b[1..]
            .iter()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit());
    if ok {
        return Ok(());
    }
    Err(invalid(
        field,
        format!(
            "{key:?} is not a project key: use 2–10 of A-Z and 0-9, starting with a letter \
             (^[A-Z][A-Z0-9]{{1,9}}$, e.g. CORE)"
        ),
    ))
}

/// A lowercase slug key (`what`, e.g. "theme key"): 1 to `max` characters of a-z, 0-9 and the
/// characters of `extra`, starting with a letter or digit. The refusal shows the rule as words
/// and as its pattern, with `example`.
pub fn slug(
    field: &str,
    value: &str,
    what: &str,
    max: usize,
    extra: &str,
    example: &str,
) -> Result<(), ToolError> {
    let plain = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    let mut chars = value.chars();
    let ok = chars.next().is_some_and(plain)
        && value.len() <= max
        && chars.all(|c| plain(c) || extra.contains(c));
    if ok {
        return Ok(());
    }
    let mut words: Vec<String> = ["a-z".into(), "0-9".into()].into();
    words.extend(extra.chars().map(|c| format!("'{c}'")));
    let last = words.pop().unwrap_or_default();
    // In a character class '-' goes last, where it stands for itself.
    let mut class: String = extra.chars().filter(|&c| c != '-').collect();
    if extra.contains('-') {
        class.push('-');
    }
    Err(invalid(
        field,
        format!(
            "{value:?} is not a {what}: use 1–{max} of {} and {last}, starting with a letter \
             or digit (^[a-z0-9][a-z0-9{class}]{{0,{}}}$, e.g. {example})",
            words.join(", "),
            max - 1
        ),
    ))
}

/// A git branch name as far as a tool argument goes: a token that git would not read as an
/// option or a range.
pub fn branch(field: &str, value: &str) -> Result<(), ToolError> {
    token(field, value, 255)?;
    if value.starts_with('-') || value.contains("..") || value.ends_with('/') {
        return Err(invalid(
            field,
            format!("{value:?} is not a branch name (no leading '-', no '..', no trailing '/')"),
        ));
    }
    Ok(())
}

/// A DNS name or an IP address (IPv6 with or without brackets).
pub fn address(field: &str, value: &str) -> Result<(), ToolError> {
    let bare = value
        .strip_prefix('[')
        .and_then(|v| v.strip_suffix(']'))
        .unwrap_or(value);
    if bare.parse::<std::net::IpAddr>().is_ok() || dns_name(value) {
        return Ok(());
    }
    Err(invalid(
        field,
        format!(
            "{value:?} is not a DNS name or an IP address (e.g. devbox-1.lan, 10.0.0.7, ::1); \
             give only the host, without scheme or port"
        ),
    ))
}

/// RFC 1123 host name: dot-separated labels of letters, digits and '-' (not at either end of
/// a label), 1–63 characters each, 253 in all; a trailing dot is allowed.
fn dns_name(value: &str) -> bool {
    let name = value.strip_suffix('.').unwrap_or(value);
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        })
}

/// An absolute `http://` or `https://` URL with a host, an optional numeric port, and no
/// user or password (whatever takes it is read by agents: credentials stay in configuration).
pub fn http_url(field: &str, value: &str) -> Result<(), ToolError> {
    token(field, value, 2000)?;
    let bad = |why: &str| {
        invalid(
            field,
            format!(
                "{value:?} is not an absolute http(s) URL ({why}); e.g. http://devbox-1:7070/mcp"
            ),
        )
    };
    let lower = value.to_ascii_lowercase();
    let rest = if lower.starts_with("http://") {
        &value[7..]
    } else if lower.starts_with("https://") {
        &value[8..]
    } else {
        return Err(bad("it must start with http:// or https://"));
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.contains('@') {
        return Err(bad(
            "it must not carry a user or password: credentials belong in configuration, \
             never in a tool argument",
        ));
    }
    let (host, port) = split_host_port(authority);
    if host.is_empty() {
        return Err(bad("it has no host"));
    }
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    if bare.parse::<std::net::IpAddr>().is_err() && !dns_name(host) {
        return Err(bad("its host is not a DNS name or an IP address"));
    }
    if let Some(port) = port {
        if port.parse::<u16>().map_or(true, |p| p == 0) {
            return Err(bad("its port must be a number from 1 to 65535"));
        }
    }
    Ok(())
}

/// `host:port` (or `[v6]:port`) split into its host and port text.
fn split_host_port(authority: &str) -> (&str, Option<&str>) {
    if authority.starts_with('[') {
        return match authority.find(']') {
            Some(end) => {
                let port = authority[end + 1..].strip_prefix(':');
                (&authority[..=end], port)
            }
            None => (authority, None),
        };
    }
    match authority.rsplit_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (authority, None),
    }
}

/// The Docker endpoint schemes Docker's own clients accept for `DOCKER_HOST`.
pub const DOCKER_SCHEMES: [&str; 4] = ["unix://", "npipe://", "ssh://", "tcp://"];

/// `unix://…`, `npipe://…`, `ssh://…` or `tcp://…`, with something after the scheme.
pub fn docker_endpoint(field: &str, value: &str) -> Result<(), ToolError> {
    token(field, value, 2000)?;
    let lower = value.to_ascii_lowercase();
    match DOCKER_SCHEMES.iter().find(|s| lower.starts_with(*s)) {
        Some(scheme) if value.len() > scheme.len() => Ok(()),
        Some(scheme) => Err(invalid(
            field,
            format!("{value:?} has nothing after {scheme} (e.g. unix:///var/run/docker.sock)"),
        )),
        None => Err(invalid(
            field,
            format!(
                "{value:?} is not a Docker endpoint: it must start with {} (e.g. \
                 unix:///var/run/docker.sock, ssh://deploy@devbox-1)",
                DOCKER_SCHEMES.join(", ")
            ),
        )),
    }
}

/// A full 40-hex-digit commit SHA, returned in lowercase.
pub fn commit_sha(field: &str, value: &str) -> Result<String, ToolError> {
    if value.len() == 40 && value.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(value.to_ascii_lowercase())
    } else {
        Err(invalid(
            field,
            format!(
                "{value:?} is not a full commit SHA: give all 40 hex digits (git rev-parse HEAD)"
            ),
        ))
    }
}

/// A commit SHA or an abbreviation of at least 7 hex digits, in lowercase.
pub fn commit_prefix(field: &str, value: &str) -> Result<String, ToolError> {
    if (7..=40).contains(&value.len()) && value.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(value.to_ascii_lowercase())
    } else {
        Err(invalid(
            field,
            format!("{value:?} is not a commit SHA: give 7 to 40 hex digits"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testing::refused;

    #[test]
    fn project_keys() {
        for ok in ["CORE", "AB", "X1", "ABCDEFGHIJ"] {
            assert!(project_key("key", ok).is_ok(), "{ok}");
        }
        for bad in ["C", "core", "1AB", "CO-RE", "ABCDEFGHIJK", ""] {
            let msg = refused(project_key("key", bad), "key");
            assert!(msg.contains("e.g. CORE"), "{msg}");
        }
    }

    #[test]
    fn slugs_show_their_rule_as_words_and_pattern() {
        assert!(slug("key", "dev-ops1", "theme key", 40, "-", "ops").is_ok());
        let msg = refused(
            slug("name", "Core", "source name", 100, "._-", "core-mcp"),
            "name",
        );
        assert!(
            msg.contains("a-z, 0-9, '.', '_' and '-'") && msg.contains("[a-z0-9._-]{0,99}$"),
            "{msg}"
        );
        for bad in ["", "-a", "a b", &"a".repeat(41)] {
            refused(slug("key", bad, "theme key", 40, "-", "ops"), "key");
        }
    }

    #[test]
    fn addresses() {
        for ok in [
            "devbox-1",
            "devbox-1.lan",
            "example.com.",
            "10.0.0.7",
            "::1",
            "[fe80::1]",
            "Host.Example",
        ] {
            assert!(address("address", ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "http://x",
            "x:22",
            "a..b",
            "-a",
            "a-",
            "a b",
            "x/y",
            &format!("{}.com", "a".repeat(64)),
        ] {
            refused(address("address", bad), "address");
        }
    }

    #[test]
    fn http_urls() {
        for ok in [
            "http://devbox-1:7070/mcp",
            "https://laptop.example:7443/mcp",
            "HTTP://10.0.0.7",
            "http://[::1]:7070/mcp",
            "https://h/mcp?x=1",
        ] {
            assert!(http_url("core_mcp_url", ok).is_ok(), "{ok}");
        }
        let cases = [
            ("devbox-1:7070", "http:// or https://"),
            ("ftp://x", "http:// or https://"),
            ("http://", "no host"),
            ("http:///mcp", "no host"),
            ("http://u:p@h/mcp", "credentials"),
            ("http://h:99999/", "port"),
            ("http://h:0/", "port"),
            ("http://h:x/", "port"),
            ("http://a b/", "whitespace"),
            ("http://bad_host/", "host is not"),
            ("", "empty"),
        ];
        for (bad, why) in cases {
            let msg = refused(http_url("core_mcp_url", bad), "core_mcp_url");
            assert!(msg.contains(why), "{bad}: {msg}");
        }
    }

    #[test]
    fn docker_endpoints() {
        for ok in [
            "unix:///var/run/docker.sock",
            "npipe:////./pipe/docker_engine",
            "ssh://deploy@devbox-1",
            "tcp://10.0.0.7:2376",
        ] {
            assert!(docker_endpoint("docker_endpoint", ok).is_ok(), "{ok}");
        }
        for bad in ["http://x", "/var/run/docker.sock", "tcp://", "unix://a b"] {
            refused(docker_endpoint("docker_endpoint", bad), "docker_endpoint");
        }
    }

    #[test]
    fn a_title_is_one_line() {
        assert!(line("title", "Relay failover", 200).is_ok());
        for bad in ["two\nlines", "carriage\rreturn", "", "\n"] {
            refused(line("title", bad, 200), "title");
        }
        let err = line("title", "a\nb", 200).expect_err("a line break");
        assert!(err.message.contains("one line"), "{err}");
    }

    #[test]
    fn commits_branches_and_text() {
        let sha = "0123456789ABCDEF0123456789abcdef01234567";
        assert_eq!(commit_sha("commit", sha).expect("sha"), sha.to_lowercase());
        for bad in ["", "abc", &"g".repeat(40), &"a".repeat(41)] {
            refused(commit_sha("commit", bad), "commit");
        }
        assert_eq!(
            commit_prefix("commit", "ABCDEF0").expect("prefix"),
            "abcdef0"
        );
        refused(commit_prefix("commit", "abc"), "commit");
        for ok in ["main", "release/1.2", "feature/x-y"] {
            assert!(branch("branch", ok).is_ok(), "{ok}");
        }
        for bad in ["", "-x", "a..b", "a b", "x/"] {
            refused(branch("branch", bad), "branch");
        }
        assert!(text("name", "Core MCP", 10).is_ok());
        refused(text("name", "  ", 10), "name");
        refused(text("name", "a\u{7}", 10), "name");
        let msg = refused(text("name", "abcdefghijk", 10), "name");
        assert!(msg.contains("at most 10"), "{msg}");
        refused(token("role", "a b", 64), "role");
    }
}
