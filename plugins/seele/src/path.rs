//! Node paths: `segment/segment/…`, the materialised path a node is found by.
//!
//! Invariants: a valid path has 1–[`MAX_DEPTH`] segments, each 1–100 of `A-Z a-z 0-9 . _ -`
//! starting with a letter or digit (so never `.` or `..`), at most [`MAX_PATH`] bytes in all;
//! a trailing `.md` of the last segment is dropped, so `architecture/relays.md` and
//! `architecture/relays` are one node. Every path is checked here before it reaches SQL.

use coremcp_plugin_sdk::args::invalid;
use coremcp_plugin_sdk::ToolError;

/// The most segments a path has.
pub const MAX_DEPTH: usize = 16;
/// The longest path, in bytes.
pub const MAX_PATH: usize = 500;

coremcp_plugin_sdk::checked_string! {
    /// A node path, e.g. `core/architecture/relays`.
    NodePath => |at, v| normal(at, v).map(|_| ());
}

impl NodePath {
    /// The path in its normal form (see [`normal`]).
    pub fn normal(&self) -> String {
        // Checked while the arguments were read.
        normal("path", &self.0).unwrap_or_else(|_| self.0.clone())
    }
}

/// `text` in its normal form: slashes at either end dropped, a trailing `.md` dropped; or
/// an error naming `field` and the rule broken.
pub fn normal(field: &str, text: &str) -> Result<String, ToolError> {
    let trimmed = text.trim_matches('/');
    let trimmed = trimmed.strip_suffix(".md").unwrap_or(trimmed);
    let segments: Vec<&str> = trimmed.split('/').collect();
    if trimmed.is_empty() {
        return Err(invalid(
            field,
            "must not be empty: write a path such as core/architecture",
        ));
    }
    if segments.len() > MAX_DEPTH {
        return Err(invalid(
            field,
            format!(
                "{text:?} has {} segments; at most {MAX_DEPTH} are allowed",
                segments.len()
            ),
        ));
    }
    if trimmed.len() > MAX_PATH {
        return Err(invalid(
            field,
            format!(
                "is {} bytes long; at most {MAX_PATH} are allowed",
                trimmed.len()
            ),
        ));
    }
    for segment in &segments {
        let ok = segment.len() <= 100
            && segment
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphanumeric())
            && segment
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
        if !ok {
            return Err(invalid(
                field,
                format!(
                    "{text:?} has the segment {segment:?}: a segment is 1–100 of A-Z, a-z, 0-9, \
                     '.', '_' and '-', starting with a letter or digit (e.g. \
                     core/architecture/relays)"
                ),
            ));
        }
    }
    Ok(trimmed.to_owned())
}

/// `root` and `path` joined (both already normal), checked again as one path.
pub fn join(root: Option<&str>, path: &str) -> Result<String, ToolError> {
    match root {
        Some(root) => normal("nodes[].path", &format!("{root}/{path}")),
        None => Ok(path.to_owned()),
    }
}

/// The parent path of `path`, if it has one.
pub fn parent(path: &str) -> Option<&str> {
    path.rsplit_once('/').map(|(p, _)| p)
}

/// The last segment of `path`.
pub fn slug(path: &str) -> &str {
    path.rsplit_once('/').map_or(path, |(_, s)| s)
}

/// The ancestors of `path`, the root first (`a/b/c` → `a`, `a/b`).
pub fn ancestors(path: &str) -> Vec<&str> {
    path.match_indices('/').map(|(i, _)| &path[..i]).collect()
}

/// How many segments `path` has.
pub fn depth(path: &str) -> usize {
    path.split('/').count()
}

/// A Markdown link `target` written in the node at `from`, as the path of the node it points
/// to: `/x` from the root, `./x` and `../x` (and a bare `x`) from `from`'s parent; an anchor
/// or query is dropped. `None` for a link out of the tree (a scheme such as `https:`, a pure
/// `#anchor`, a `..` above the root) or one that is not a valid path.
pub fn resolve_link(from: &str, target: &str) -> Option<String> {
    let target = target.split(['#', '?']).next().unwrap_or("").trim();
    if target.is_empty() || target.contains(':') || target.starts_with("//") {
        return None;
    }
    let mut parts: Vec<&str> = match target.strip_prefix('/') {
        Some(_) => Vec::new(),
        None => parent(from).map_or_else(Vec::new, |p| p.split('/').collect()),
    };
    for segment in target.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            s => parts.push(s),
        }
    }
    normal("link", &parts.join("/")).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_checked_and_made_normal() {
        assert_eq!(normal("p", "/core/relays.md/").expect("ok"), "core/relays");
        assert_eq!(
            normal("p", "Core/ADR-0001_x.v2").expect("ok"),
            "Core/ADR-0001_x.v2"
        );
        for bad in ["", "/", "a//b", "a/../b", "a/.hidden", "a b", "a/b\n", "é"] {
            let e = normal("path", bad).expect_err(bad).to_string();
            assert!(e.contains("path"), "{bad}: {e}");
        }
        assert!(normal("p", &"a/".repeat(17)).is_err());
        assert!(normal("p", &"a".repeat(101)).is_err());
        assert_eq!(ancestors("a/b/c"), ["a", "a/b"]);
        assert_eq!(
            (parent("a/b"), parent("a"), slug("a/b")),
            (Some("a"), None, "b")
        );
    }

    #[test]
    fn links_resolve_inside_the_tree() {
        let from = "core/architecture/relays";
        let cases = [
            ("failover.md", Some("core/architecture/failover")),
            ("./failover#why", Some("core/architecture/failover")),
            ("../runbooks/restart.md", Some("core/runbooks/restart")),
            ("/ops/oncall", Some("ops/oncall")),
            ("https://example.com/x", None),
            ("mailto:a@b.c", None),
            ("#section", None),
            ("../../../../up", None),
            ("a b", None),
        ];
        for (target, expected) in cases {
            assert_eq!(resolve_link(from, target).as_deref(), expected, "{target}");
        }
    }
}
