//! The directory walk the tools share: ripgrep's `ignore` walker started at a root that
//! [`coremcp_plugin_kit::Roots::resolve`] already confined, plus include/exclude globs and the
//! helpers for relative paths and their order.
//!
//! Invariants: symlinks are never followed (a walk cannot leave its root); `.gitignore`,
//! `.ignore` and `.git/info/exclude` are honoured even outside a git repository; `.git`
//! folders are never entered; an excluded directory is pruned, not walked; relative paths use
//! `/` and sort component by component, so a folder's entries follow it directly.

use std::cmp::Ordering;
use std::path::{Component, Path};
use std::sync::Arc;

use coremcp_plugin_sdk::codes;
use coremcp_plugin_sdk::ToolError;
use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use ignore::WalkBuilder;

/// A list of gitignore-style globs: a glob without `/` matches a name at any depth (`*.rs`,
/// `target`), one with `/` matches the path from the walk's root (`src/**/*.rs`, `/docs`). A
/// path matches when it or one of its parent folders does, so `tests` covers `tests/a/b.rs`.
#[derive(Debug)]
pub struct Globs {
    names: GlobSet,
    paths: GlobSet,
    empty: bool,
}

impl Globs {
    /// Compiles `patterns`; a bad glob is an `invalid_arguments` error naming `argument`.
    pub fn new(argument: &str, patterns: &[impl AsRef<str>]) -> Result<Self, ToolError> {
        let mut names = GlobSetBuilder::new();
        let mut paths = GlobSetBuilder::new();
        for pattern in patterns.iter().map(AsRef::as_ref) {
            let bad = |why: &dyn std::fmt::Display| {
                ToolError::new(
                    codes::INVALID_ARGUMENTS,
                    format!("argument \"{argument}\": glob {pattern:?}: {why}"),
                )
            };
            if pattern.is_empty() {
                return Err(bad(&"an empty glob"));
            }
            if pattern.starts_with('!') {
                return Err(bad(&"negation is not supported; use \"exclude\""));
            }
            let trimmed = pattern.trim_end_matches('/');
            let (set, text) = if trimmed.contains('/') {
                let text = trimmed.trim_start_matches("./").trim_start_matches('/');
                (&mut paths, text)
            } else {
                (&mut names, trimmed)
            };
            let glob = GlobBuilder::new(text)
                .literal_separator(true)
                .backslash_escape(true)
                .build()
                .map_err(|e| bad(&e.kind()))?;
            set.add(glob);
        }
        let build = |b: GlobSetBuilder| {
            b.build().map_err(|e| {
                ToolError::new(
                    codes::INVALID_ARGUMENTS,
                    format!("argument \"{argument}\": {e}"),
                )
            })
        };
        Ok(Self {
            names: build(names)?,
            paths: build(paths)?,
            empty: patterns.is_empty(),
        })
    }

    /// Whether no glob was given.
    pub fn is_empty(&self) -> bool {
        self.empty
    }

    /// Whether `rel` (relative to the walk's root, `/`-separated) itself matches.
    pub fn matches_itself(&self, rel: &str) -> bool {
        let name = rel.rsplit('/').next().unwrap_or(rel);
        self.names.is_match(name) || self.paths.is_match(rel)
    }

    /// Whether `rel` or one of its parent folders matches.
    pub fn matches(&self, rel: &str) -> bool {
        if self.empty || rel.is_empty() {
            return false;
        }
        rel.match_indices('/')
            .map(|(i, _)| &rel[..i])
            .chain(std::iter::once(rel))
            .any(|prefix| self.matches_itself(prefix))
    }
}

/// A walker over `root` with the shared rules: hidden entries skipped unless `include_hidden`,
/// ignore files honoured, symlinks not followed, `.git` and `exclude`d entries pruned.
pub fn builder(root: &Path, include_hidden: bool, exclude: Arc<Globs>) -> WalkBuilder {
    let mut builder = WalkBuilder::new(root);
    builder
        .hidden(!include_hidden)
        .follow_links(false)
        .require_git(false)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(true)
        .ignore(true)
        .parents(true);
    let top = root.to_owned();
    builder.filter_entry(move |entry| {
        if entry.depth() == 0 {
            return true;
        }
        if entry.file_name() == ".git" {
            return false;
        }
        exclude.is_empty() || !exclude.matches(&relative(&top, entry.path()))
    });
    builder
}

/// `path` relative to `root`, `/`-separated; a root that is a file gives its own name.
pub fn relative(root: &Path, path: &Path) -> String {
    let rel = match path.strip_prefix(root) {
        Ok(rel) if !rel.as_os_str().is_empty() => rel,
        _ => {
            return path
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
        }
    };
    let mut out = String::with_capacity(rel.as_os_str().len());
    for component in rel.components() {
        if let Component::Normal(part) = component {
            if !out.is_empty() {
                out.push('/');
            }
            out.push_str(&part.to_string_lossy());
        }
    }
    out
}

/// The order of relative paths: component by component (`a`, `a/b`, `a-b`), so a tree lists
/// each folder's entries right after it.
pub fn path_order(a: &str, b: &str) -> Ordering {
    a.split('/').cmp(b.split('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_names_anywhere_and_paths_from_the_root() {
        let cases: &[(&[&str], &str, bool)] = &[
            (&["*.rs"], "src/lib.rs", true),
            (&["*.rs"], "src/lib.py", false),
            (&["target"], "target/debug/x", true),
            (&["target"], "src/target.rs", false),
            (&["src/*.rs"], "src/lib.rs", true),
            (&["src/*.rs"], "src/a/lib.rs", false),
            (&["src/**/*.rs"], "src/a/lib.rs", true),
            (&["/docs"], "docs/a.md", true),
            (&["./docs/"], "docs/a.md", true),
            (&["docs/"], "other/docs/a.md", true),
            (&["*.md", "*.txt"], "a/b.txt", true),
            (&[], "a/b.txt", false),
        ];
        for (patterns, path, expected) in cases {
            let globs = Globs::new("include", patterns).expect("globs compile");
            assert_eq!(globs.matches(path), *expected, "{patterns:?} vs {path}");
        }
    }

    #[test]
    fn bad_globs_are_invalid_arguments() {
        for pattern in ["a[", "", "!x"] {
            let err = Globs::new("exclude", &[pattern]).expect_err("refused");
            assert_eq!(err.code.as_str(), codes::INVALID_ARGUMENTS);
            assert!(err.message.contains("argument \"exclude\""), "{err}");
        }
    }

    #[test]
    fn paths_sort_by_component() {
        let mut paths = vec!["a-b", "a/c", "a", "b", "a/b/c", "A"];
        paths.sort_by(|a, b| path_order(a, b));
        assert_eq!(paths, ["A", "a", "a/b/c", "a/c", "a-b", "b"]);
        assert_eq!(relative(Path::new("/r"), Path::new("/r/x/y.rs")), "x/y.rs");
        assert_eq!(relative(Path::new("/r/f.rs"), Path::new("/r/f.rs")), "f.rs");
    }
}
