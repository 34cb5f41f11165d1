//! `files_list`: a folder's entries, or a tree down to `depth`, with type, size and mtime.
//!
//! Invariants:
//! - The listed path resolves inside the roots; the walk follows no symlink (a symlink is listed
//!   as `symlink` with its target text, never entered), skips hidden entries unless
//!   `include_hidden`, and honours `.gitignore`.
//! - Entries are sorted component by component (a folder's entries follow it), so the first
//!   `max_entries` are always the same ones; `truncated` is true exactly when more exist.
//! - A page holds whole entries and fits the result budget; `next_cursor` (its last path)
//!   resumes after it, so following the cursors lists every entry once.
//! - With `include` globs, a file is listed when it (or a parent folder) matches, and a folder
//!   when it matches or holds a listed entry.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::UNIX_EPOCH;

use coremcp_plugin_kit::Roots;
use coremcp_plugin_sdk::{codes, typed, Args, Ctx, Hints, Tool, ToolError};
use serde::Serialize;
use serde_json::Value;

use crate::walk::{self, Globs};

const DEFAULT_DEPTH: usize = 1;
const MAX_DEPTH: usize = 6;
const DEFAULT_MAX_ENTRIES: usize = 500;
/// Walk errors (unreadable folders) reported at most.
const MAX_ERRORS: usize = 10;

pub const TOOL: Tool = Tool::typed("files_list", &typed(handler)).hints(Hints::READ);

fn handler(ctx: &Ctx<'_>, params: Params) -> Result<Value, ToolError> {
    let roots = Roots::from_host()?;
    let listing = list(&roots, &params, ctx.raw().cancelled)?;
    coremcp_plugin_sdk::to_json(&listing)
}

/// List a directory, or a tree to depth: type, size, mtime. .gitignore-aware; symlinks listed,
/// never followed. Sorted by path.
#[derive(Debug, Clone, Args)]
pub struct Params {
    /// folder in the roots (default the first)
    pub path: Option<String>,
    /// levels (default 1)
    #[arg(min = 1, max = MAX_DEPTH, default = DEFAULT_DEPTH)]
    pub depth: usize,
    /// globs, e.g. *.rs, src/**
    pub include: Vec<String>,
    /// hidden too
    #[arg(default)]
    pub include_hidden: bool,
    /// default 500
    #[arg(min = 1, max = 10000, default = DEFAULT_MAX_ENTRIES)]
    pub max_entries: usize,
    /// next_cursor
    pub cursor: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct Listing {
    /// The listed folder or file, canonical.
    pub root: String,
    pub entries: Vec<Entry>,
    pub truncated: bool,
    /// Where the next page starts (the same arguments and this `cursor`), when more exist.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Entry {
    /// Relative to the listed folder, `/`-separated.
    pub path: String,
    /// `file`, `dir`, `symlink` or `other` (socket, fifo, device).
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Bytes, for files and symlinks (the link itself).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// RFC 3339 UTC, to the second.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mtime: Option<String>,
    /// What a symlink points to, as written (never followed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

/// Lists `params.path`; `cancelled` stops the walk with a `cancelled` error.
pub fn list(roots: &Roots, params: &Params, cancelled: &AtomicBool) -> Result<Listing, ToolError> {
    let root = roots.resolve("path", params.path.as_deref(), None)?;
    let after = match params.cursor.as_deref() {
        Some(cursor) => Some(coremcp_plugin_sdk::page::decode_cursor(cursor, 1)?.remove(0)),
        None => None,
    };
    let include = Globs::new("include", &params.include)?;
    let mut builder = walk::builder(
        &root,
        params.include_hidden,
        Arc::new(Globs::new("exclude", &[] as &[&str])?),
    );
    builder
        .max_depth(Some(params.depth))
        .threads(1)
        .sort_by_file_name(|a, b| a.cmp(b));
    let root_is_dir = root.is_dir();
    let mut entries: Vec<Entry> = Vec::new();
    // Folders seen but not listed yet (with include globs): listed once something inside is.
    let mut pending: Vec<(usize, Entry)> = Vec::new();
    let mut errors = Vec::new();
    let mut truncated = false;
    for item in builder.build() {
        if cancelled.load(Ordering::Relaxed) {
            return Err(ToolError::new(
                codes::CANCELLED,
                "files_list stopped: the call was cancelled or ran out of time",
            ));
        }
        let dent = match item {
            Ok(dent) => dent,
            Err(err) => {
                if errors.len() < MAX_ERRORS {
                    errors.push(err.to_string());
                }
                continue;
            }
        };
        if dent.depth() == 0 && root_is_dir {
            continue;
        }
        let entry = describe(&root, &dent);
        let depth = dent.depth();
        let is_dir = entry.kind == "dir";
        let mut listed = Vec::new();
        if include.is_empty() {
            listed.push(entry);
        } else {
            pending.retain(|(d, _)| *d < depth);
            if include.matches(&entry.path) {
                listed.extend(pending.drain(..).map(|(_, e)| e));
                listed.push(entry);
            } else if is_dir {
                pending.push((depth, entry));
            }
        }
        for entry in listed {
            // A page after a cursor starts after the cursor's path (the walk's own order).
            if after
                .as_deref()
                .is_some_and(|after| walk::path_order(&entry.path, after).is_le())
            {
                continue;
            }
            if entries.len() == params.max_entries {
                truncated = true;
                break;
            }
            entries.push(entry);
        }
        if truncated {
            break;
        }
    }
    entries.sort_by(|a, b| walk::path_order(&a.path, &b.path));
    let root = root.display().to_string();
    // The page is cut to the answer's room too, whole entries only; room is kept for the
    // cursor (a path's hex costs four times its length).
    let base = serde_json::json!({"root": root, "entries": [], "truncated": true,
        "errors": errors, "next_cursor": "c".repeat(1_200)});
    let fits = coremcp_plugin_sdk::budget::fitting(&entries, &base);
    if fits < entries.len() {
        entries.truncate(fits);
        truncated = true;
    }
    let next_cursor = truncated
        .then(|| entries.last())
        .flatten()
        .map(|e| coremcp_plugin_sdk::page::encode_cursor(&[&e.path]));
    Ok(Listing {
        root,
        entries,
        truncated,
        next_cursor,
        errors,
    })
}

fn describe(root: &std::path::Path, dent: &ignore::DirEntry) -> Entry {
    let path = walk::relative(root, dent.path());
    let meta = dent.metadata().ok();
    let file_type = dent.file_type();
    let kind = match file_type {
        Some(t) if t.is_symlink() => "symlink",
        Some(t) if t.is_dir() => "dir",
        Some(t) if t.is_file() => "file",
        _ => "other",
    };
    let mtime = meta
        .as_ref()
        .and_then(|m| m.modified().ok())
        .map(|t| match t.duration_since(UNIX_EPOCH) {
            Ok(d) => d.as_secs() as i64,
            Err(e) => -(e.duration().as_secs() as i64) - i64::from(e.duration().subsec_nanos() > 0),
        })
        .map(coremcp_plugin_kit::time::rfc3339);
    let size = match kind {
        "file" | "symlink" => meta.as_ref().map(std::fs::Metadata::len),
        _ => None,
    };
    let target = (kind == "symlink")
        .then(|| std::fs::read_link(dent.path()).ok())
        .flatten()
        .map(|t| t.to_string_lossy().into_owned());
    Entry {
        path,
        kind,
        size,
        mtime,
        target,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Tree;
    use serde_json::json;

    fn run(tree: &Tree, args: Value) -> Result<Listing, ToolError> {
        list(
            &tree.roots(),
            &coremcp_plugin_sdk::testing::parse::<Params>(args)?,
            &AtomicBool::new(false),
        )
    }

    /// Entries as `path type`.
    fn shown(listing: &Listing) -> Vec<String> {
        listing
            .entries
            .iter()
            .map(|e| format!("{} {}", e.path, e.kind))
            .collect()
    }

    fn sample() -> Tree {
        let tree = Tree::new("list");
        tree.write("b.txt", "bb")
            .write("a/x.rs", "fn x() {}")
            .write("a/deep/er/z.rs", "")
            .write("a-b/y.txt", "y")
            .write("Cap.md", "#")
            .write(".gitignore", "target/\n")
            .write("target/out.bin", "0")
            .write(".hidden/h.txt", "h")
            .symlink(&tree.outside(), "link");
        tree
    }

    #[test]
    fn pages_fit_the_budget_and_the_cursors_list_every_entry_once() {
        let tree = Tree::new("pages");
        for a in 0..6 {
            for b in 0..6 {
                for f in 0..30 {
                    tree.write(&format!("a{a}/b-{b}/c/file_{f}.txt"), "x");
                }
            }
        }
        let whole = run(&tree, json!({"depth": 6, "max_entries": 10000})).expect("list");
        let (mut seen, mut cursor) = (Vec::new(), None::<String>);
        loop {
            let mut args = json!({"depth": 6, "max_entries": 10000});
            if let Some(c) = &cursor {
                args["cursor"] = c.clone().into();
            }
            let page = run(&tree, args).expect("list");
            let size =
                coremcp_plugin_sdk::budget::chars(&serde_json::to_value(&page).expect("json"));
            assert!(
                size <= coremcp_plugin_sdk::budget::result_budget(),
                "{size}"
            );
            assert_eq!(page.truncated, page.next_cursor.is_some());
            seen.extend(shown(&page));
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        // 6 + 36 + 36 folders and 1080 files (plus .gitignore-free root: nothing else).
        assert_eq!(seen.len(), 6 + 36 + 36 + 1080);
        let mut unique = seen.clone();
        unique.dedup();
        assert_eq!(unique.len(), seen.len(), "every entry exactly once");
        assert!(whole.truncated, "one page cannot hold them all");
        let mut sorted = seen.clone();
        let path = |e: &String| {
            e.rsplit_once(' ')
                .map(|(p, _)| p.to_owned())
                .unwrap_or_default()
        };
        sorted.sort_by(|a, b| walk::path_order(&path(a), &path(b)));
        assert_eq!(sorted, seen, "in path order across pages");
    }

    #[test]
    fn depth_sorting_globs_and_hidden() {
        let tree = sample();
        let cases = [
            (
                json!({}),
                vec![
                    "Cap.md file",
                    "a dir",
                    "a-b dir",
                    "b.txt file",
                    "link symlink",
                ],
            ),
            (
                json!({"depth": 2}),
                vec![
                    "Cap.md file",
                    "a dir",
                    "a/deep dir",
                    "a/x.rs file",
                    "a-b dir",
                    "a-b/y.txt file",
                    "b.txt file",
                    "link symlink",
                ],
            ),
            (
                json!({"depth": 6, "include": ["*.rs"]}),
                vec![
                    "a dir",
                    "a/deep dir",
                    "a/deep/er dir",
                    "a/deep/er/z.rs file",
                    "a/x.rs file",
                ],
            ),
            (
                json!({"depth": 3, "include": ["a-b"]}),
                vec!["a-b dir", "a-b/y.txt file"],
            ),
            (
                json!({"include_hidden": true}),
                vec![
                    ".gitignore file",
                    ".hidden dir",
                    "Cap.md file",
                    "a dir",
                    "a-b dir",
                    "b.txt file",
                    "link symlink",
                ],
            ),
            (
                json!({"path": "a", "depth": 2}),
                vec!["deep dir", "deep/er dir", "x.rs file"],
            ),
            (json!({"path": "a/x.rs"}), vec!["x.rs file"]),
        ];
        for (args, expected) in cases {
            let listing = run(&tree, args.clone()).unwrap_or_else(|e| panic!("{args}: {e}"));
            assert_eq!(shown(&listing), expected, "{args}");
            assert!(!listing.truncated, "{args}");
        }
    }

    #[test]
    fn entries_carry_size_mtime_and_link_target() {
        let tree = sample();
        let listing = run(&tree, json!({})).expect("list");
        let find = |path: &str| {
            listing
                .entries
                .iter()
                .find(|e| e.path == path)
                .unwrap_or_else(|| panic!("{path} listed"))
        };
        assert_eq!(find("b.txt").size, Some(2));
        assert_eq!(find("a").size, None);
        let link = find("link");
        assert_eq!(
            link.target.as_deref(),
            Some(tree.outside().to_str().expect("utf-8"))
        );
        for entry in &listing.entries {
            let mtime = entry.mtime.as_deref().expect("mtime");
            assert!(
                mtime.len() == 20 && mtime.ends_with('Z') && mtime.as_bytes()[10] == b'T',
                "{mtime}"
            );
            assert!(mtime >= "2020-01-01T00:00:00Z", "{mtime}");
        }
    }

    #[test]
    fn max_entries_truncates_deterministically() {
        let tree = sample();
        let listing = run(&tree, json!({"depth": 6, "max_entries": 3})).expect("list");
        assert_eq!(shown(&listing), ["Cap.md file", "a dir", "a/deep dir"]);
        assert!(listing.truncated);
        let listing = run(&tree, json!({"depth": 6, "max_entries": 11})).expect("list");
        assert_eq!(listing.entries.len(), 10);
        assert!(!listing.truncated);
    }

    #[test]
    fn paths_stay_inside_the_roots() {
        let tree = sample();
        tree.symlink(&tree.root().join("loop2"), "loop1")
            .symlink(&tree.root().join("loop1"), "loop2");
        let outside = tree.outside().display().to_string();
        let cases = [
            (json!({"path": "../outside"}), "\"..\" is not allowed"),
            (json!({"path": "a/../../outside"}), "\"..\" is not allowed"),
            (
                json!({"path": outside}),
                "an absolute path outside the roots",
            ),
            (json!({"path": "link"}), "leads outside the roots"),
            (json!({"path": "loop1"}), "a symlink loop"),
            (json!({"path": "missing"}), "no such file or directory"),
        ];
        for (args, needle) in cases {
            let err = run(&tree, args.clone()).expect_err("refused");
            assert!(err.message.contains(needle), "{args}: {err}");
        }
        // The symlink is listed, never entered.
        let listing = run(&tree, json!({"depth": 6, "include_hidden": true})).expect("list");
        assert!(listing.entries.iter().all(|e| !e.path.starts_with("link/")));
        assert!(listing.entries.iter().all(|e| !e.path.contains("secret")));
    }
}
