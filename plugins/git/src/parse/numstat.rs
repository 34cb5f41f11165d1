//! `git diff --numstat -z` (and `git show --numstat -z`): per-file added and deleted lines.
//!
//! Invariants: a binary file has no line counts and `binary: true`; a rename carries
//! `old_path`; totals count text files only.

use serde::Serialize;

/// One changed file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileStat {
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub additions: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deletions: Option<u64>,
    #[serde(skip_serializing_if = "super::is_false")]
    pub binary: bool,
}

/// Parses the NUL-separated output. Each entry is `ADDED\tDELETED\tPATH\0`, or for a rename
/// `ADDED\tDELETED\t\0OLD\0NEW\0`.
pub fn parse(output: &str) -> Vec<FileStat> {
    let mut files = Vec::new();
    let mut records = output.split('\0');
    while let Some(record) = records.next() {
        // `git show --format=` may leave line breaks before the first entry.
        let record = record.trim_start_matches('\n');
        let mut fields = record.splitn(3, '\t');
        let (Some(added), Some(deleted), Some(path)) =
            (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let (path, old_path) = if path.is_empty() {
            let (Some(old), Some(new)) = (records.next(), records.next()) else {
                break;
            };
            (new.to_owned(), Some(old.to_owned()))
        } else {
            (path.to_owned(), None)
        };
        let binary = added == "-" && deleted == "-";
        files.push(FileStat {
            path,
            old_path,
            additions: added.parse().ok(),
            deletions: deleted.parse().ok(),
            binary,
        });
    }
    files
}

/// Total added and deleted lines.
pub fn totals(files: &[FileStat]) -> (u64, u64) {
    files.iter().fold((0, 0), |(a, d), f| {
        (a + f.additions.unwrap_or(0), d + f.deletions.unwrap_or(0))
    })
}

/// A `--stat`-like text summary: one line per file, then the totals.
pub fn summary(files: &[FileStat]) -> String {
    let mut out = String::new();
    for f in files {
        let name = match &f.old_path {
            Some(old) => format!("{old} => {}", f.path),
            None => f.path.clone(),
        };
        if f.binary {
            out.push_str(&format!("{name} | binary\n"));
        } else {
            out.push_str(&format!(
                "{name} | +{} -{}\n",
                f.additions.unwrap_or(0),
                f.deletions.unwrap_or(0)
            ));
        }
    }
    let (added, deleted) = totals(files);
    out.push_str(&format!(
        "{} file{} changed, {added} insertion{}(+), {deleted} deletion{}(-)",
        files.len(),
        if files.len() == 1 { "" } else { "s" },
        if added == 1 { "" } else { "s" },
        if deleted == 1 { "" } else { "s" },
    ));
    out
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
    fn entries() {
        check("", json!([]));
        check(
            "3\t1\tsrc/a b.rs\0-\t-\timg.png\0\
             0\t0\t\0old/name.rs\0new/name.rs\0",
            json!([
                {"path": "src/a b.rs", "additions": 3, "deletions": 1},
                {"path": "img.png", "binary": true},
                {"path": "new/name.rs", "old_path": "old/name.rs", "additions": 0, "deletions": 0}
            ]),
        );
        check(
            "\n\n12\t0\tREADME\0",
            json!([{"path": "README", "additions": 12, "deletions": 0}]),
        );
    }

    #[test]
    fn summaries() {
        let files = parse("3\t1\ta.rs\0-\t-\timg.png\0");
        assert_eq!(totals(&files), (3, 1));
        assert_eq!(
            summary(&files),
            "a.rs | +3 -1\nimg.png | binary\n2 files changed, 3 insertions(+), 1 deletion(-)"
        );
    }
}
