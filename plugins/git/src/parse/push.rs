//! `git push --porcelain` (stdout): one line per ref, `FLAG\tFROM:TO\tSUMMARY (REASON)`.
//!
//! Invariants: every ref line is reported whatever the exit code; a `!` flag is a rejection
//! and carries git's reason (`non-fast-forward`, `fetch first`, `stale info`, …), which git
//! prints untranslated.

use serde::Serialize;

/// What happened to one ref.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RefUpdate {
    /// new, fast_forward, forced, deleted, up_to_date or rejected.
    pub status: &'static str,
    pub local_ref: String,
    pub remote_ref: String,
    /// git's summary: `[new branch]`, `abc..def`, `[rejected]`, …
    pub summary: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl RefUpdate {
    pub fn rejected(&self) -> bool {
        self.status == "rejected"
    }

    /// Whether the rejection means the remote moved on (a conflict the caller can resolve by
    /// integrating the remote's commits).
    pub fn is_conflict(&self) -> bool {
        matches!(
            self.reason.as_deref(),
            Some(
                "non-fast-forward"
                    | "fetch first"
                    | "stale info"
                    | "needs force"
                    | "already exists"
            )
        )
    }
}

/// The destination (`To …`) and the ref lines.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Push {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    pub refs: Vec<RefUpdate>,
}

fn status_of(flag: char) -> Option<&'static str> {
    Some(match flag {
        ' ' => "fast_forward",
        '+' => "forced",
        '-' => "deleted",
        '*' => "new",
        '!' => "rejected",
        '=' => "up_to_date",
        _ => return None,
    })
}

/// Parses porcelain push output.
pub fn parse(output: &str) -> Push {
    let mut push = Push::default();
    for line in output.lines() {
        if let Some(to) = line.strip_prefix("To ") {
            push.to = Some(to.to_owned());
            continue;
        }
        let mut chars = line.chars();
        let (Some(flag), Some('\t')) = (chars.next(), chars.next()) else {
            continue;
        };
        let Some(status) = status_of(flag) else {
            continue;
        };
        let Some((refs, summary)) = line[2..].split_once('\t') else {
            continue;
        };
        let (local_ref, remote_ref) = refs.split_once(':').unwrap_or(("", refs));
        let (summary, reason) = match summary.rsplit_once(" (") {
            Some((head, tail)) if tail.ends_with(')') => {
                (head.to_owned(), Some(tail.trim_end_matches(')').to_owned()))
            }
            _ => (summary.to_owned(), None),
        };
        push.refs.push(RefUpdate {
            status,
            local_ref: local_ref.to_owned(),
            remote_ref: remote_ref.to_owned(),
            summary,
            reason,
        });
    }
    push
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
    fn lines() {
        check("", json!({"refs": []}));
        check(
            "To /tmp/remote.git\n\
             *\trefs/heads/feature:refs/heads/feature\t[new branch]\n\
             \x20\trefs/heads/main:refs/heads/main\t1111111..2222222\n\
             +\trefs/heads/topic:refs/heads/topic\t3333333...4444444 (forced update)\n\
             =\trefs/tags/v1:refs/tags/v1\t[up to date]\n\
             -\t:refs/heads/old\t[deleted]\n\
             Done\n",
            json!({"to": "/tmp/remote.git", "refs": [
                {"status": "new", "local_ref": "refs/heads/feature", "remote_ref": "refs/heads/feature", "summary": "[new branch]"},
                {"status": "fast_forward", "local_ref": "refs/heads/main", "remote_ref": "refs/heads/main", "summary": "1111111..2222222"},
                {"status": "forced", "local_ref": "refs/heads/topic", "remote_ref": "refs/heads/topic", "summary": "3333333...4444444", "reason": "forced update"},
                {"status": "up_to_date", "local_ref": "refs/tags/v1", "remote_ref": "refs/tags/v1", "summary": "[up to date]"},
                {"status": "deleted", "local_ref": "", "remote_ref": "refs/heads/old", "summary": "[deleted]"}
            ]}),
        );
        let push = parse(
            "To git@example.com:x.git\n\
             !\trefs/heads/main:refs/heads/main\t[rejected] (non-fast-forward)\n\
             !\trefs/heads/a:refs/heads/a\t[rejected] (stale info)\n\
             !\trefs/heads/b:refs/heads/b\t[remote rejected] (pre-receive hook declined)\n\
             Done\n",
        );
        let reasons: Vec<(bool, bool, Option<&str>)> = push
            .refs
            .iter()
            .map(|r| (r.rejected(), r.is_conflict(), r.reason.as_deref()))
            .collect();
        assert_eq!(
            reasons,
            [
                (true, true, Some("non-fast-forward")),
                (true, true, Some("stale info")),
                (true, false, Some("pre-receive hook declined")),
            ]
        );
    }
}
