//! Commit records from `git log --format=FORMAT` (and `git show -s`), with ASCII record (RS,
//! 0x1e) and unit (US, 0x1f) separators, which commit messages do not contain in practice.
//!
//! Invariants: dates are git's ISO 8601 strict (`%aI`); the body is absent when empty; a
//! record with too few fields is skipped.

use serde::Serialize;

/// The `--format` value the parser reads: sha, short sha, author name, author email, author
/// date, parents, subject, body.
pub const FORMAT: &str = "--format=%x1e%H%x1f%h%x1f%an%x1f%ae%x1f%aI%x1f%P%x1f%s%x1f%b";

/// One commit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Commit {
    pub sha: String,
    pub short_sha: String,
    pub author_name: String,
    pub author_email: String,
    /// The author date, ISO 8601 strict.
    pub date: String,
    pub parents: Vec<String>,
    pub subject: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
}

/// Parses the commits `git log FORMAT` printed.
pub fn parse(output: &str) -> Vec<Commit> {
    output
        .split('\x1e')
        .filter_map(|record| {
            let fields: Vec<&str> = record.splitn(8, '\x1f').collect();
            let [sha, short_sha, name, email, date, parents, subject, body] = fields[..] else {
                return None;
            };
            let body = body.trim();
            Some(Commit {
                sha: sha.trim().to_owned(),
                short_sha: short_sha.to_owned(),
                author_name: name.to_owned(),
                author_email: email.to_owned(),
                date: date.to_owned(),
                parents: parents.split_whitespace().map(str::to_owned).collect(),
                subject: subject.to_owned(),
                body: (!body.is_empty()).then(|| body.to_owned()),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn check(input: &str, expected: Value) {
        let got = serde_json::to_value(parse(input)).expect("serialises");
        assert_eq!(got, expected, "{input:?}");
    }

    #[test]
    fn records() {
        check("", json!([]));
        check(
            "\x1eaaaa\x1faa\x1fAda Lovelace\x1fada@example.com\x1f2024-05-01T10:00:00+02:00\x1fbbbb cccc\x1fMerge it\x1fLine one\n\nLine | two\n\n\
             \x1ebbbb\x1fbb\x1fBob\x1fbob@example.com\x1f2024-04-30T08:00:00Z\x1f\x1fRoot: first\x1f\n",
            json!([
                {"sha": "aaaa", "short_sha": "aa", "author_name": "Ada Lovelace", "author_email": "ada@example.com",
                 "date": "2024-05-01T10:00:00+02:00", "parents": ["bbbb", "cccc"], "subject": "Merge it",
                 "body": "Line one\n\nLine | two"},
                {"sha": "bbbb", "short_sha": "bb", "author_name": "Bob", "author_email": "bob@example.com",
                 "date": "2024-04-30T08:00:00Z", "parents": [], "subject": "Root: first"}
            ]),
        );
        check("\x1etoo\x1ffew\n", json!([]));
    }
}
