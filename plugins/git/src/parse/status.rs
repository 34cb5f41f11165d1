//! `git status --porcelain=v2 --branch -z`: branch headers and per-file entries.
//!
//! Invariants: an ordinary or renamed entry lands in `staged` when its index column (X) is not
//! `.` and in `unstaged` when its work-tree column (Y) is not `.` (a file can be in both);
//! unmerged entries land only in `conflicted`; fields are split by count, so paths with spaces
//! survive, and with `-z` no path is quoted.

use serde::Serialize;

/// The state of a work tree.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize)]
pub struct Status {
    /// The current branch; absent when HEAD is detached.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    #[serde(skip_serializing_if = "super::is_false")]
    pub detached: bool,
    /// The commit HEAD points at; absent before the first commit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub head: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upstream: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ahead: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub behind: Option<u64>,
    pub staged: Vec<Change>,
    pub unstaged: Vec<Change>,
    pub untracked: Vec<String>,
    pub conflicted: Vec<Conflict>,
}

/// One changed file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    pub path: String,
    /// modified, added, deleted, renamed, copied, type_changed.
    pub status: &'static str,
    /// The path before a rename or copy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub orig_path: Option<String>,
}

/// One unmerged file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Conflict {
    pub path: String,
    /// both_modified, both_added, both_deleted, added_by_us, added_by_them, deleted_by_us,
    /// deleted_by_them.
    pub status: &'static str,
}

fn change_kind(c: u8) -> Option<&'static str> {
    Some(match c {
        b'M' => "modified",
        b'A' => "added",
        b'D' => "deleted",
        b'R' => "renamed",
        b'C' => "copied",
        b'T' => "type_changed",
        _ => return None,
    })
}

fn conflict_kind(xy: &str) -> &'static str {
    match xy {
        "UU" => "both_modified",
        "AA" => "both_added",
        "DD" => "both_deleted",
        "AU" => "added_by_us",
        "UA" => "added_by_them",
        "DU" => "deleted_by_us",
        "UD" => "deleted_by_them",
        _ => "unmerged",
    }
}

impl Status {
    fn push_change(&mut self, xy: &[u8], path: &str, orig_path: Option<&str>) {
        let (Some(&x), Some(&y)) = (xy.first(), xy.get(1)) else {
            return;
        };
        let entry = |c: u8| {
            change_kind(c).map(|status| Change {
                path: path.to_owned(),
                status,
                orig_path: orig_path.map(str::to_owned),
            })
        };
        if let Some(change) = entry(x) {
            self.staged.push(change);
        }
        if let Some(mut change) = entry(y) {
            if y != b'R' && y != b'C' {
                change.orig_path = None;
            }
            self.unstaged.push(change);
        }
    }

    /// Whether nothing is staged, changed, untracked or conflicted.
    pub fn is_clean(&self) -> bool {
        self.staged.is_empty()
            && self.unstaged.is_empty()
            && self.untracked.is_empty()
            && self.conflicted.is_empty()
    }
}

/// Parses the NUL-separated records of `git status --porcelain=v2 --branch -z`.
pub fn parse(output: &str) -> Status {
    let mut status = Status::default();
    let mut records = output.split('\0');
    while let Some(record) = records.next() {
        if let Some(header) = record.strip_prefix("# ") {
            let (key, value) = header.split_once(' ').unwrap_or((header, ""));
            match key {
                "branch.oid" if value != "(initial)" => status.head = Some(value.to_owned()),
                "branch.head" if value == "(detached)" => status.detached = true,
                "branch.head" => status.branch = Some(value.to_owned()),
                "branch.upstream" => status.upstream = Some(value.to_owned()),
                "branch.ab" => {
                    let mut parts = value.split(' ');
                    let ahead = parts.next().and_then(|a| a.strip_prefix('+'));
                    let behind = parts.next().and_then(|b| b.strip_prefix('-'));
                    status.ahead = ahead.and_then(|a| a.parse().ok());
                    status.behind = behind.and_then(|b| b.parse().ok());
                }
                _ => {}
            }
            continue;
        }
        let kind = record.as_bytes().first().copied();
        match kind {
            // 1 XY sub mH mI mW hH hI path
            Some(b'1') => {
                let fields: Vec<&str> = record.splitn(9, ' ').collect();
                if let [_, xy, .., path] = fields[..] {
                    if fields.len() == 9 {
                        status.push_change(xy.as_bytes(), path, None);
                    }
                }
            }
            // 2 XY sub mH mI mW hH hI Xscore path NUL origPath
            Some(b'2') => {
                let fields: Vec<&str> = record.splitn(10, ' ').collect();
                let orig = records.next();
                if let ([_, xy, .., path], 10) = (&fields[..], fields.len()) {
                    status.push_change(xy.as_bytes(), path, orig);
                }
            }
            // u XY sub m1 m2 m3 mW h1 h2 h3 path
            Some(b'u') => {
                let fields: Vec<&str> = record.splitn(11, ' ').collect();
                if let ([_, xy, .., path], 11) = (&fields[..], fields.len()) {
                    status.conflicted.push(Conflict {
                        path: (*path).to_owned(),
                        status: conflict_kind(xy),
                    });
                }
            }
            Some(b'?') => {
                if let Some(path) = record.strip_prefix("? ") {
                    status.untracked.push(path.to_owned());
                }
            }
            _ => {}
        }
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn check(input: &str, expected: Value) {
        let got = serde_json::to_value(parse(input)).expect("serialises");
        assert_eq!(got, expected, "{input:?}");
    }

    const OID: &str = "0123456789abcdef0123456789abcdef01234567";

    #[test]
    fn porcelain_v2() {
        check(
            "# branch.oid (initial)\0# branch.head main\0? new file.txt\0",
            json!({"branch": "main", "staged": [], "unstaged": [], "untracked": ["new file.txt"], "conflicted": []}),
        );
        check(
            &format!(
                "# branch.oid {OID}\0# branch.head feature\0# branch.upstream origin/feature\0\
                 # branch.ab +2 -1\0\
                 1 M. N... 100644 100644 100644 {OID} {OID} staged.rs\0\
                 1 .M N... 100644 100644 100644 {OID} {OID} dir/with space.rs\0\
                 1 MD N... 100644 100644 000000 {OID} {OID} both.rs\0\
                 1 A. N... 000000 100644 100644 {OID} {OID} added.rs\0\
                 2 R. N... 100644 100644 100644 {OID} {OID} R100 new name.rs\0old name.rs\0\
                 u UU N... 100644 100644 100644 100644 {OID} {OID} {OID} conflict.rs\0\
                 u DU N... 100644 000000 100644 100644 {OID} {OID} {OID} gone.rs\0\
                 ? untracked/\0! ignored.log\0"
            ),
            json!({
                "branch": "feature", "head": OID, "upstream": "origin/feature", "ahead": 2, "behind": 1,
                "staged": [
                    {"path": "staged.rs", "status": "modified"},
                    {"path": "both.rs", "status": "modified"},
                    {"path": "added.rs", "status": "added"},
                    {"path": "new name.rs", "status": "renamed", "orig_path": "old name.rs"}
                ],
                "unstaged": [
                    {"path": "dir/with space.rs", "status": "modified"},
                    {"path": "both.rs", "status": "deleted"}
                ],
                "untracked": ["untracked/"],
                "conflicted": [
                    {"path": "conflict.rs", "status": "both_modified"},
                    {"path": "gone.rs", "status": "deleted_by_us"}
                ]
            }),
        );
        check(
            &format!("# branch.oid {OID}\0# branch.head (detached)\0"),
            json!({"detached": true, "head": OID, "staged": [], "unstaged": [], "untracked": [], "conflicted": []}),
        );
        // An upstream that is gone has no branch.ab line; a malformed entry is skipped.
        check(
            "# branch.oid (initial)\0# branch.head main\0# branch.upstream origin/main\0\
             1 M. too few fields\0",
            json!({"branch": "main", "upstream": "origin/main", "staged": [], "unstaged": [], "untracked": [], "conflicted": []}),
        );
    }
}
