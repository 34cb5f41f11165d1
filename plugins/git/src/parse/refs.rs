//! Branches from `git for-each-ref --format=FORMAT`, with `%(upstream:track,nobracket)`
//! parsed into ahead/behind (read in the C locale, where it is `ahead N, behind M` or `gone`).
//!
//! Invariants: symbolic refs (`origin/HEAD`) are left out; ahead/behind are present exactly
//! when the branch has an upstream that still exists.

use serde::Serialize;

/// The `--format` value the parser reads.
pub const FORMAT: &str = "--format=%1e%(refname)%1f%(objectname)%1f%(objectname:short)%1f\
%(upstream:short)%1f%(upstream:track,nobracket)%1f%(HEAD)%1f%(symref)%1f\
%(committerdate:iso-strict)%1f%(subject)";

/// One branch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Branch {
    /// `main` for a local branch, `origin/main` for a remote-tracking one.
    pub name: String,
    #[serde(skip_serializing_if = "super::is_false")]
    pub remote: bool,
    #[serde(skip_serializing_if = "super::is_false")]
    pub current: bool,
    pub sha: String,
    pub short_sha: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upstream: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ahead: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub behind: Option<u64>,
    /// The upstream is configured but no longer exists.
    #[serde(skip_serializing_if = "super::is_false")]
    pub upstream_gone: bool,
    /// The last commit's committer date, ISO 8601 strict.
    pub date: String,
    pub subject: String,
}

/// Parses `ahead N, behind M` / `ahead N` / `behind M` / `gone` / empty into
/// (ahead, behind, gone).
pub fn parse_track(track: &str) -> (u64, u64, bool) {
    let mut ahead = 0;
    let mut behind = 0;
    let mut gone = false;
    for part in track.split(',').map(str::trim) {
        if let Some(n) = part.strip_prefix("ahead ") {
            ahead = n.trim().parse().unwrap_or(0);
        } else if let Some(n) = part.strip_prefix("behind ") {
            behind = n.trim().parse().unwrap_or(0);
        } else if part == "gone" {
            gone = true;
        }
    }
    (ahead, behind, gone)
}

/// Parses the records `git for-each-ref FORMAT` printed.
pub fn parse(output: &str) -> Vec<Branch> {
    output
        .split('\x1e')
        .filter_map(|record| {
            let record = record.strip_suffix('\n').unwrap_or(record);
            let fields: Vec<&str> = record.splitn(9, '\x1f').collect();
            let [refname, sha, short, upstream, track, head, symref, date, subject] = fields[..]
            else {
                return None;
            };
            if !symref.is_empty() {
                return None;
            }
            let (name, remote) = if let Some(name) = refname.strip_prefix("refs/heads/") {
                (name, false)
            } else if let Some(name) = refname.strip_prefix("refs/remotes/") {
                (name, true)
            } else {
                (refname, false)
            };
            let (ahead, behind, gone) = parse_track(track);
            let tracked = !upstream.is_empty() && !gone;
            Some(Branch {
                name: name.to_owned(),
                remote,
                current: head == "*",
                sha: sha.to_owned(),
                short_sha: short.to_owned(),
                upstream: (!upstream.is_empty()).then(|| upstream.to_owned()),
                ahead: tracked.then_some(ahead),
                behind: tracked.then_some(behind),
                upstream_gone: gone,
                date: date.to_owned(),
                subject: subject.to_owned(),
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
    fn tracks() {
        assert_eq!(parse_track(""), (0, 0, false));
        assert_eq!(parse_track("ahead 3"), (3, 0, false));
        assert_eq!(parse_track("behind 2"), (0, 2, false));
        assert_eq!(parse_track("ahead 1, behind 12"), (1, 12, false));
        assert_eq!(parse_track("gone"), (0, 0, true));
    }

    #[test]
    fn branches() {
        check(
            "\x1erefs/heads/main\x1faaaa\x1faa\x1forigin/main\x1fahead 1, behind 2\x1f*\x1f\x1f2024-05-01T10:00:00+00:00\x1fFix: it | works\n\
             \x1erefs/heads/topic/x\x1fbbbb\x1fbb\x1f\x1f\x1f \x1f\x1f2024-05-02T10:00:00+00:00\x1fWIP\n\
             \x1erefs/heads/old\x1fcccc\x1fcc\x1forigin/old\x1fgone\x1f \x1f\x1f2024-05-03T10:00:00+00:00\x1fOld\n\
             \x1erefs/heads/synced\x1fdddd\x1fdd\x1forigin/synced\x1f\x1f \x1f\x1f2024-05-04T10:00:00+00:00\x1fSynced\n\
             \x1erefs/remotes/origin/HEAD\x1faaaa\x1faa\x1f\x1f\x1f \x1frefs/remotes/origin/main\x1f2024-05-01T10:00:00+00:00\x1fFix\n\
             \x1erefs/remotes/origin/main\x1faaaa\x1faa\x1f\x1f\x1f \x1f\x1f2024-05-01T10:00:00+00:00\x1fFix\n",
            json!([
                {"name": "main", "current": true, "sha": "aaaa", "short_sha": "aa", "upstream": "origin/main",
                 "ahead": 1, "behind": 2, "date": "2024-05-01T10:00:00+00:00", "subject": "Fix: it | works"},
                {"name": "topic/x", "sha": "bbbb", "short_sha": "bb", "date": "2024-05-02T10:00:00+00:00", "subject": "WIP"},
                {"name": "old", "sha": "cccc", "short_sha": "cc", "upstream": "origin/old", "upstream_gone": true,
                 "date": "2024-05-03T10:00:00+00:00", "subject": "Old"},
                {"name": "synced", "sha": "dddd", "short_sha": "dd", "upstream": "origin/synced", "ahead": 0, "behind": 0,
                 "date": "2024-05-04T10:00:00+00:00", "subject": "Synced"},
                {"name": "origin/main", "remote": true, "sha": "aaaa", "short_sha": "aa",
                 "date": "2024-05-01T10:00:00+00:00", "subject": "Fix"}
            ]),
        );
    }
}
