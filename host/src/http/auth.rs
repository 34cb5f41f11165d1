//! Bearer tokens for `coremcp serve --tokens FILE` and `COREMCP_TOKENS_TEXT`: the format, and
//! the check of one request's `Authorization` header.
//!
//! The file holds one `NAME TOKEN` pair a line; blank lines and lines starting with `#` are
//! skipped. The variable holds the same lines, separated by newlines or `;` (a Docker env file
//! has one line per variable), and both may be given: their names and tokens must not repeat.
//! A source that does not parse is refused whole, naming the line — a server never runs with
//! half its tokens.
//!
//! Invariants:
//! - A presented token is compared with **every** configured token in constant time (no early
//!   exit on the first differing byte, nor on the first match), so the time taken says nothing
//!   about how close a guess was or which token matched.
//! - A token is never logged or shown; errors name the line and the NAME only.

use std::fmt;
use std::path::Path;

/// The shortest token accepted: anything shorter is guessable.
pub const MIN_TOKEN_CHARS: usize = 16;

/// Who is calling: the principal a session records for later grant checks.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Principal {
    /// No tokens are configured (a loopback listener): the local user, like the stdio client.
    Local,
    /// The caller presented the token of this NAME.
    Token(String),
    /// The caller presented an OAuth access token: its issuer, principal claim and scopes.
    Signed {
        issuer: std::sync::Arc<str>,
        name: String,
        scopes: Vec<String>,
    },
}

impl fmt::Display for Principal {
    /// As grants write the principal: a static token's NAME, `oauth:SUBJECT`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Principal::Local => f.write_str("local"),
            Principal::Token(name) => f.write_str(name),
            Principal::Signed { name, .. } => {
                write!(f, "{}{name}", coremcp_wire::policy::OAUTH_PREFIX)
            }
        }
    }
}

/// Why a tokens file was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TokensError {
    #[error("cannot read the tokens file {path}: {reason}")]
    Read { path: String, reason: String },
    /// The file exists but this process's user may not read it (a container's own user, say).
    #[error(
        "cannot read the tokens file {path}: permission denied to this process (uid {uid}, gid \
         {gid}); make it readable by that user (e.g. chown {uid} {path}; chmod 400 {path}), or \
         give the tokens in COREMCP_TOKENS_TEXT instead"
    )]
    Unreadable { path: String, uid: u32, gid: u32 },
    #[error("{path} line {line}: {reason}")]
    Line {
        path: String,
        line: usize,
        reason: String,
    },
    #[error("{path} holds no token: add a `NAME TOKEN` line")]
    Empty { path: String },
    #[error(
        "{name} of COREMCP_TOKENS_TEXT has the same {what} as {other} of the tokens file: give \
         each token once"
    )]
    Both {
        name: String,
        what: &'static str,
        other: String,
    },
}

/// The configured tokens.
pub struct Tokens {
    entries: Vec<(String, Vec<u8>)>,
}

impl fmt::Debug for Tokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.entries.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("Tokens").field("names", &names).finish()
    }
}

/// Why a request was not let in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Denied {
    /// No `Authorization: Bearer …` header.
    Missing,
    /// A bearer token that matches none configured (or a malformed header).
    Invalid,
}

impl Tokens {
    /// Reads and parses a tokens file.
    pub fn load(path: &Path) -> Result<Self, TokensError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::PermissionDenied => {
                // SAFETY: getuid(2) and getgid(2) take nothing and always succeed.
                let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
                TokensError::Unreadable {
                    path: shown.clone(),
                    uid,
                    gid,
                }
            }
            _ => TokensError::Read {
                path: shown.clone(),
                reason: e.to_string(),
            },
        })?;
        warn_if_readable_by_others(path);
        Self::parse(&text, &shown)
    }

    /// The tokens of a file and of `COREMCP_TOKENS_TEXT` together (`None`: neither is given; an
    /// empty variable counts as not given). A name or token in both is refused.
    pub fn from_sources(
        file: Option<&Path>,
        text: Option<&str>,
    ) -> Result<Option<Self>, TokensError> {
        let from_file = file.map(Self::load).transpose()?;
        let from_text = text
            .filter(|t| !t.trim().is_empty())
            .map(|t| Self::parse(&t.replace(';', "\n"), crate::config::env::TOKENS_TEXT))
            .transpose()?;
        match (from_file, from_text) {
            (Some(mut file), Some(text)) => {
                for (name, token) in text.entries {
                    let clash = file
                        .entries
                        .iter()
                        .find(|(n, t)| *n == name || *t == token)
                        .map(|(n, _)| n.clone());
                    if let Some(other) = clash {
                        let what = if other == name { "name" } else { "token" };
                        return Err(TokensError::Both { name, what, other });
                    }
                    file.entries.push((name, token));
                }
                Ok(Some(file))
            }
            (file, text) => Ok(file.or(text)),
        }
    }

    /// Parses the text of a tokens file; `shown` names the file in errors.
    pub fn parse(text: &str, shown: &str) -> Result<Self, TokensError> {
        let mut entries: Vec<(String, Vec<u8>)> = Vec::new();
        for (index, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let refuse = |reason: String| TokensError::Line {
                path: shown.to_owned(),
                line: index + 1,
                reason,
            };
            let mut fields = line.split_whitespace();
            let (Some(name), Some(token), None) = (fields.next(), fields.next(), fields.next())
            else {
                return Err(refuse(
                    "expected `NAME TOKEN` (two fields separated by spaces)".to_owned(),
                ));
            };
            if !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            {
                return Err(refuse(format!(
                    "the name \"{name}\" may hold only letters, digits, '-', '_' and '.'"
                )));
            }
            if name == "stdio" {
                return Err(refuse(
                    "the name stdio is the stdio client's principal; choose another".to_owned(),
                ));
            }
            if let Err(why) = check_token(token) {
                return Err(refuse(format!("the token of {name} {why}")));
            }
            if entries.iter().any(|(n, _)| n == name) {
                return Err(refuse(format!("the name {name} is given twice")));
            }
            if entries.iter().any(|(_, t)| t == token.as_bytes()) {
                return Err(refuse(format!(
                    "the token of {name} is the same as an earlier one"
                )));
            }
            entries.push((name.to_owned(), token.as_bytes().to_vec()));
        }
        if entries.is_empty() {
            return Err(TokensError::Empty {
                path: shown.to_owned(),
            });
        }
        Ok(Self { entries })
    }

    /// How many tokens are configured.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Never true for a parsed file (an empty one is refused).
    /// The configured token names.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|(name, _)| name.as_str())
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Checks an `Authorization` header value; the principal of the token it carries.
    pub fn check(&self, authorization: Option<&[u8]>) -> Result<Principal, Denied> {
        let Some(value) = authorization else {
            return Err(Denied::Missing);
        };
        let presented = bearer(value).ok_or(Denied::Invalid)?;
        let mut found: Option<usize> = None;
        for (index, (_, token)) in self.entries.iter().enumerate() {
            // Every entry is compared; `found` is only written, never branched on, in the loop.
            let equal = constant_time_eq(presented, token);
            found = if equal { Some(index) } else { found };
        }
        found
            .map(|index| Principal::Token(self.entries[index].0.clone()))
            .ok_or(Denied::Invalid)
    }
}

/// The token of a `Bearer TOKEN` header value (the scheme is case-insensitive).
/// Whether `token` may be a bearer token: visible ASCII only (so it can never break a header
/// line) and at least [`MIN_TOKEN_CHARS`] long. The error completes "the token …".
pub fn check_token(token: &str) -> Result<(), String> {
    if !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err("may hold only visible ASCII characters".to_owned());
    }
    if token.len() < MIN_TOKEN_CHARS {
        return Err(format!("is shorter than {MIN_TOKEN_CHARS} characters"));
    }
    Ok(())
}

pub(crate) fn bearer(value: &[u8]) -> Option<&[u8]> {
    let value = value.trim_ascii();
    let (scheme, rest) = value.split_at_checked(6)?;
    if !scheme.eq_ignore_ascii_case(b"bearer") || !rest.first()?.is_ascii_whitespace() {
        return None;
    }
    let token = rest.trim_ascii();
    (!token.is_empty()).then_some(token)
}

/// Compares two byte strings in time that depends only on their lengths' maximum.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let len = a.len().max(b.len());
    let mut diff = u8::from(a.len() != b.len());
    for i in 0..len {
        let x = a.get(i).copied().unwrap_or(0);
        let y = b.get(i).copied().unwrap_or(0);
        diff |= x ^ y;
    }
    // black_box keeps the optimiser from turning the loop into an early-exit comparison.
    std::hint::black_box(diff) == 0
}

/// Warns when the tokens file can be read by other users.
fn warn_if_readable_by_others(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    if let Ok(meta) = std::fs::metadata(path) {
        if meta.permissions().mode() & 0o044 != 0 {
            tracing::warn!(
                "the tokens file {} is readable by other users; chmod 600 it",
                path.display()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str =
        "# who may call\n\nalice  0123456789abcdef0123\n  bob\tsecret-secret-secret-1\n";

    fn refused(text: &str) -> String {
        Tokens::parse(text, "tokens.txt")
            .expect_err("should be refused")
            .to_string()
    }

    #[test]
    fn parses_names_and_tokens_skipping_comments() {
        let tokens = Tokens::parse(GOOD, "tokens.txt").expect("parses");
        assert_eq!(tokens.len(), 2);
        assert_eq!(
            tokens.check(Some(b"Bearer 0123456789abcdef0123")),
            Ok(Principal::Token("alice".into()))
        );
        assert_eq!(
            tokens.check(Some(b"bearer   secret-secret-secret-1 ")),
            Ok(Principal::Token("bob".into()))
        );
        assert!(
            !format!("{tokens:?}").contains("secret"),
            "Debug hides tokens"
        );
    }

    #[test]
    fn tokens_come_from_the_environment_beside_or_instead_of_a_file() {
        let text = "alice 0123456789abcdef0123; bob secret-secret-secret-1\n\ncarol carol-carol-carol-carol";
        let tokens = Tokens::from_sources(None, Some(text))
            .expect("parses")
            .expect("some");
        assert_eq!(tokens.len(), 3);
        assert_eq!(
            tokens.check(Some(b"Bearer secret-secret-secret-1")),
            Ok(Principal::Token("bob".into()))
        );
        assert!(Tokens::from_sources(None, Some("  "))
            .expect("empty")
            .is_none());
        assert!(Tokens::from_sources(None, None).expect("none").is_none());
        // An entry that does not parse is named by its place in the variable.
        let error = Tokens::from_sources(None, Some("alice 0123456789abcdef0123;bob"))
            .expect_err("refused")
            .to_string();
        assert_eq!(
            error,
            "COREMCP_TOKENS_TEXT line 2: expected `NAME TOKEN` (two fields separated by spaces)"
        );
        // Beside a file: both count, and nothing may repeat across them.
        let dir = std::env::temp_dir().join(format!("coremcp-tokens-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let file = dir.join("tokens");
        std::fs::write(&file, "dave dave-dave-dave-dave-1\n").expect("write");
        let both = Tokens::from_sources(Some(&file), Some(text))
            .expect("parses")
            .expect("some");
        assert_eq!(both.len(), 4);
        let clash = Tokens::from_sources(Some(&file), Some("dave 0123456789abcdef0123"))
            .expect_err("same name")
            .to_string();
        assert!(clash.contains("the same name as dave"), "{clash}");
        let clash = Tokens::from_sources(Some(&file), Some("erin dave-dave-dave-dave-1"))
            .expect_err("same token")
            .to_string();
        assert!(
            clash.contains("erin") && clash.contains("same token") && !clash.contains("dave-dave"),
            "{clash}"
        );
        std::fs::remove_dir_all(&dir).expect("clean up");
    }

    #[test]
    fn refuses_what_is_wrong_naming_the_line() {
        assert_eq!(
            refused("alice 0123456789abcdef\nbob\n"),
            "tokens.txt line 2: expected `NAME TOKEN` (two fields separated by spaces)"
        );
        assert!(refused("a b c\n").contains("line 1"));
        assert!(refused("alice short\n").contains("shorter than 16"));
        assert!(refused("al/ice 0123456789abcdef\n").contains("the name"));
        assert!(refused("a 0123456789abcdef\na 0123456789abcdeX\n").contains("given twice"));
        assert!(refused("a 0123456789abcdef\nb 0123456789abcdef\n").contains("same as"));
        assert_eq!(
            refused("# only a comment\n"),
            "tokens.txt holds no token: add a `NAME TOKEN` line"
        );
        assert!(!refused("a 0123456789abcdef\nb 0123456789abcdef\n").contains("0123"));
    }

    #[test]
    fn denies_missing_wrong_and_malformed_headers() {
        let tokens = Tokens::parse(GOOD, "t").expect("parses");
        assert_eq!(tokens.check(None), Err(Denied::Missing));
        assert_eq!(
            tokens.check(Some(b"Bearer 0123456789abcdef012")),
            Err(Denied::Invalid)
        );
        assert_eq!(
            tokens.check(Some(b"Bearer 0123456789abcdef01234")),
            Err(Denied::Invalid)
        );
        assert_eq!(
            tokens.check(Some(b"Basic 0123456789abcdef0123")),
            Err(Denied::Invalid)
        );
        assert_eq!(tokens.check(Some(b"Bearer")), Err(Denied::Invalid));
        assert_eq!(tokens.check(Some(b"Bearer ")), Err(Denied::Invalid));
        assert_eq!(
            tokens.check(Some(b"Bearer0123456789abcdef0123")),
            Err(Denied::Invalid)
        );
    }

    #[test]
    fn constant_time_comparison() {
        assert!(constant_time_eq(b"", b""));
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abc\0"));
        assert!(!constant_time_eq(b"", b"a"));
    }
}
