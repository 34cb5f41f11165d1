//! `docs_read`: one document (front matter as a JSON object, plus the body), or a folder's
//! entries with each document's front matter.
//!
//! Invariants:
//! - The path resolves inside the selected repository; only `.md` files and folders are read.
//! - A body is shown from `offset`, cut at `max_chars` (and further, if needed, so the whole
//!   result stays under the host's result limit and keeps its structured content), with
//!   `body_truncated`, `body_total_chars` and `body_next_offset` (the `offset` that reads on).
//! - The front matter takes at most half the answer beside a body, its keys in order with
//!   whole values; the rest reads on with `front_matter_only` and `offset` (a key's index,
//!   `front_matter_next_offset`), so a front matter of any size is reached.
//! - A listing is sorted by name, skips hidden entries and non-Markdown files (counted in
//!   `skipped`), reports a document whose front matter cannot be read with an `error` instead of
//!   failing, and is cut to the result limit with `truncated`, `omitted` (of this page) and
//!   `next_cursor`, which lists the rest.
//! - A single document with malformed front matter is an error naming the line.

use coremcp_plugin_sdk::{typed, Args, Ctx, Hints, Tool, ToolError};
use serde_json::Value;

pub const TOOL: Tool = Tool::typed("docs_read", &typed(handler))
    .hints(Hints::READ)
    .built(cfg!(feature = "docs-read"));

/// The default cut of a body, in characters.
pub const DEFAULT_MAX_CHARS: usize = 20_000;

/// Read a Markdown document of a docs repository (front matter and body), or list a folder.
#[derive(Debug, Args)]
#[cfg_attr(not(feature = "docs-read"), allow(dead_code))]
pub struct Read {
    /// .md file or folder (".": the top)
    path: String,
    #[arg(flatten)]
    repo: super::Choice,
    /// without the body
    #[arg(default)]
    front_matter_only: bool,
    /// cut at (default 20000)
    #[arg(min = 100, default = DEFAULT_MAX_CHARS)]
    max_chars: usize,
    /// body from this char (front_matter_only: key)
    #[arg(min = 0, default = 0)]
    offset: usize,
    /// a folder's next_cursor
    cursor: Option<String>,
}

#[cfg(not(feature = "docs-read"))]
fn handler(_: &Ctx<'_>, _: Read) -> Result<Value, ToolError> {
    // Never called: the SDK refuses a tool whose feature is off before running its handler.
    Err(ToolError::new(
        coremcp_plugin_sdk::codes::UNAVAILABLE,
        "docs_read is not in this build: it needs the \"docs-read\" feature",
    ))
}

#[cfg(feature = "docs-read")]
fn handler(ctx: &Ctx<'_>, args: Read) -> Result<Value, ToolError> {
    let repo = args.repo.open()?;
    let params = imp::Params {
        path: args.path,
        front_matter_only: args.front_matter_only,
        max_chars: args.max_chars,
        offset: args.offset,
        cursor: args.cursor,
    };
    imp::read(&repo, &params, &|| ctx.is_cancelled())
}

#[cfg(feature = "docs-read")]
pub(crate) mod imp {
    use std::fs;
    use std::path::Path;

    use coremcp_plugin_sdk::codes;
    use coremcp_plugin_sdk::ToolError;
    use serde_json::{json, Map, Value};

    use crate::front_matter;
    use crate::repo::Repo;
    use crate::tools::{io_error, is_markdown, read_text};

    use coremcp_plugin_sdk::budget;
    pub use coremcp_plugin_sdk::budget::result_budget;

    #[derive(Debug, Clone)]
    pub struct Params {
        pub path: String,
        pub front_matter_only: bool,
        pub max_chars: usize,
        pub offset: usize,
        pub cursor: Option<String>,
    }

    pub fn read(
        repo: &Repo,
        params: &Params,
        cancelled: &dyn Fn() -> bool,
    ) -> Result<Value, ToolError> {
        let target = repo.roots.resolve("path", Some(&params.path), None)?;
        repo.outside_git(&params.path, &target)?;
        let meta = fs::metadata(&target).map_err(|e| io_error(&params.path, &e))?;
        if meta.is_dir() {
            return list(repo, &target, params.cursor.as_deref(), cancelled);
        }
        if !is_markdown(&target) {
            return Err(ToolError::new(
                codes::INVALID_ARGUMENTS,
                format!(
                    "argument \"path\" ({}): docs_read reads .md documents and folders",
                    params.path
                ),
            ));
        }
        let text = read_text(&target, &params.path)?;
        let doc = front_matter::parse(&text).map_err(|m| {
            ToolError::new(codes::FAILED, format!("{}: {m}", repo.relative(&target)))
        })?;
        let front = doc.front.map(|f| f.to_json()).unwrap_or_default();
        let keys = front.len();
        // The front matter takes half the answer beside a body, all of it alone; with
        // `front_matter_only`, `offset` skips that many of its keys.
        let (from, room) = match params.front_matter_only {
            true => (params.offset, result_budget().saturating_sub(600)),
            false => (0, result_budget() / 2),
        };
        let (kept, next) = budget::object_page(front, from, room);
        let mut result = json!({
            "repo": repo.name,
            "path": repo.relative(&target),
            "kind": "file",
            "front_matter": kept,
        });
        if from > 0 {
            result["front_matter_offset"] = from.into();
        }
        if let Some(next) = next {
            result["front_matter_keys"] = keys.into();
            result["front_matter_next_offset"] = next.into();
            result["hint"] = "the front matter is larger than it may take of an answer: pass \
                              front_matter_only: true and offset: front_matter_next_offset to \
                              read its other keys"
                .into();
        }
        if !params.front_matter_only {
            fit_body(&mut result, doc.body, params.offset, params.max_chars);
        }
        Ok(result)
    }

    /// Adds the body from `offset`, cut at `max_chars` and to [`result_budget`], with
    /// `body_truncated`, `body_total_chars` and `body_next_offset` when it was cut.
    fn fit_body(result: &mut Value, body: &str, offset: usize, max_chars: usize) {
        result["body"] = Value::String(body.to_owned());
        budget::fit_windows(result, &[("body", offset, max_chars)], result_budget());
    }

    /// A folder's entries: sub-folders and `.md` documents with their front matter.
    fn list(
        repo: &Repo,
        dir: &Path,
        cursor: Option<&str>,
        cancelled: &dyn Fn() -> bool,
    ) -> Result<Value, ToolError> {
        let after = match cursor {
            Some(cursor) => Some(coremcp_plugin_sdk::page::decode_cursor(cursor, 1)?.remove(0)),
            None => None,
        };
        let rel_dir = repo.relative(dir);
        let mut names: Vec<String> = fs::read_dir(dir)
            .map_err(|e| io_error(&rel_dir, &e))?
            .filter_map(|entry| entry.ok())
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .filter(|name| !name.starts_with('.'))
            .collect();
        names.sort();
        // A page after a cursor starts after the name it carries.
        names.retain(|name| after.as_deref().is_none_or(|after| name.as_str() > after));
        let mut result = json!({
            "repo": repo.name,
            "path": rel_dir,
            "kind": "folder",
            "entries": [],
            "skipped": 0,
            "truncated": false,
        });
        // Room for the counts, `omitted` and the cursor (a long name's hex is four times it).
        let mut size = budget::chars(&result) + 1_200;
        let mut entries = Vec::new();
        let mut skipped = 0;
        let mut omitted = 0;
        for name in names {
            if cancelled() {
                return Err(ToolError::new(codes::CANCELLED, "docs_read was cancelled"));
            }
            if omitted > 0 {
                omitted += 1;
                continue;
            }
            let Some(entry) = describe(repo, dir, &name) else {
                skipped += 1;
                continue;
            };
            let entry_size = budget::chars(&entry) + 1;
            if !entries.is_empty() && size + entry_size > result_budget() {
                omitted = 1;
                continue;
            }
            size += entry_size;
            entries.push(entry);
        }
        result["skipped"] = json!(skipped);
        if omitted > 0 {
            result["truncated"] = Value::Bool(true);
            result["omitted"] = json!(omitted);
            let last = entries
                .last()
                .and_then(|e| e["name"].as_str())
                .unwrap_or_default();
            result["next_cursor"] = coremcp_plugin_sdk::page::encode_cursor(&[last]).into();
        }
        result["entries"] = Value::Array(entries);
        Ok(result)
    }

    /// One listing entry, or `None` for what a docs listing skips (non-Markdown files).
    fn describe(repo: &Repo, dir: &Path, name: &str) -> Option<Value> {
        let path = dir.join(name);
        let rel = repo.relative(&path);
        let mut entry = Map::new();
        entry.insert("name".into(), name.into());
        entry.insert("path".into(), rel.clone().into());
        // A symlink counts as what it leads to, when that is inside the repository.
        let target = match repo.roots.resolve("path", Some(&rel), None) {
            Ok(target) => target,
            Err(e) => {
                entry.insert("kind".into(), "symlink".into());
                entry.insert("error".into(), e.message.as_str().into());
                return Some(Value::Object(entry));
            }
        };
        if target.is_dir() {
            entry.insert("kind".into(), "folder".into());
            return Some(Value::Object(entry));
        }
        if !is_markdown(&path) || !is_markdown(&target) {
            return None;
        }
        entry.insert("kind".into(), "file".into());
        let parsed = read_text(&target, &rel).and_then(|text| {
            front_matter::parse(&text)
                .map(|doc| doc.front.map(|f| f.to_json()).unwrap_or_default())
                .map_err(|m| ToolError::new(codes::FAILED, m.to_string()))
        });
        match parsed {
            Ok(front) => {
                let (kept, left) = listed_front_matter(front);
                entry.insert("front_matter".into(), Value::Object(kept));
                if left > 0 {
                    // How many keys were left out; docs_read of the document reads them.
                    entry.insert("front_matter_omitted".into(), left.into());
                }
            }
            Err(e) => {
                entry.insert("error".into(), e.message.as_str().into());
            }
        }
        Some(Value::Object(entry))
    }

    /// The most characters of front matter one listing entry shows.
    const LISTED_FRONT_MATTER: usize = 2_000;

    /// A document's front matter as a listing shows it: its keys in order while they fit
    /// [`LISTED_FRONT_MATTER`], whole values only, and how many keys were left out, so one
    /// document with a huge front matter never keeps its folder from being listed.
    fn listed_front_matter(front: Map<String, Value>) -> (Map<String, Value>, usize) {
        let total = front.len();
        let (kept, next) = budget::object_page(front, 0, LISTED_FRONT_MATTER);
        (kept, next.map_or(0, |n| total - n))
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use crate::testing::Tree;

        fn params(path: &str) -> Params {
            Params {
                path: path.to_owned(),
                front_matter_only: false,
                max_chars: super::super::DEFAULT_MAX_CHARS,
                offset: 0,
                cursor: None,
            }
        }

        fn chars(value: &Value) -> usize {
            coremcp_plugin_sdk::budget::chars(value)
        }

        fn never() -> bool {
            false
        }

        #[test]
        fn a_document_is_its_front_matter_and_body() {
            let tree = Tree::new("read-file");
            tree.write(
                "guide/intro.md",
                "---\ntitle: Intro\nrevision: 3\ntags: [a]\n---\n\n# Intro\n\nHello.\n",
            );
            tree.write("plain.md", "# Plain\n");
            let repo = tree.open();
            let out = read(&repo, &params("guide/intro.md"), &never).expect("reads");
            assert_eq!(
                out,
                json!({"repo": "docs", "path": "guide/intro.md", "kind": "file",
                       "front_matter": {"title": "Intro", "revision": 3, "tags": ["a"]},
                       "body": "# Intro\n\nHello.\n"})
            );
            let out = read(&repo, &params("plain.md"), &never).expect("reads");
            assert_eq!(out["front_matter"], json!({}));
            assert_eq!(out["body"], "# Plain\n");

            let mut only = params("guide/intro.md");
            only.front_matter_only = true;
            let out = read(&repo, &only, &never).expect("reads");
            assert!(
                out.get("body").is_none() && out.get("truncated").is_none(),
                "{out}"
            );
            assert_eq!(out["front_matter"]["title"], "Intro");
        }

        #[test]
        fn a_folder_with_a_huge_front_matter_is_listed_within_the_budget() {
            let tree = Tree::new("read-huge-front");
            let keys: String = (0..900)
                .map(|i| format!("key{i:03}: {}\n", "v".repeat(40)))
                .collect();
            tree.write(
                "big/huge.md",
                format!("---\ntitle: Huge\n{keys}---\n# Huge\n"),
            );
            tree.write("big/small.md", "---\ntitle: Small\n---\n# Small\n");
            let repo = tree.open();
            let out = read(&repo, &params("big"), &never).expect("lists");
            assert!(chars(&out) <= result_budget(), "{}", chars(&out));
            let entries = out["entries"].as_array().expect("entries");
            assert_eq!(entries.len(), 2, "both listed: {out}");
            let huge = &entries[0];
            assert_eq!(huge["front_matter"]["title"], "Huge");
            let left = huge["front_matter_omitted"].as_u64().expect("omitted keys");
            assert!(left > 800, "{left}");
            assert_eq!(entries[1]["front_matter"]["title"], "Small");
            assert!(entries[1].get("front_matter_omitted").is_none());
        }

        #[test]
        fn a_documents_huge_front_matter_reads_whole_by_key_offsets() {
            let tree = Tree::new("read-huge-doc");
            let keys: String = (0..900)
                .map(|i| format!("key{i:03}: \"{}\"\n", "v\\\"".repeat(20)))
                .collect();
            tree.write("huge.md", format!("---\ntitle: Huge\n{keys}---\n# Huge\n"));
            let repo = tree.open();
            let first = read(&repo, &params("huge.md"), &never).expect("reads");
            assert!(chars(&first) <= result_budget(), "{}", chars(&first));
            assert_eq!(
                first["body"], "# Huge\n",
                "the body beside half the front matter"
            );
            assert_eq!(first["front_matter_keys"], 901);
            let mut seen: Vec<String> = Vec::new();
            let mut p = params("huge.md");
            p.front_matter_only = true;
            let mut next = Some(0);
            while let Some(offset) = next {
                p.offset = offset;
                let page = read(&repo, &p, &never).expect("reads");
                assert!(chars(&page) <= result_budget(), "{}", chars(&page));
                seen.extend(
                    page["front_matter"]
                        .as_object()
                        .expect("keys")
                        .keys()
                        .cloned(),
                );
                next = page["front_matter_next_offset"]
                    .as_u64()
                    .map(|n| n as usize);
            }
            let mut expected = vec!["title".to_owned()];
            expected.extend((0..900).map(|i| format!("key{i:03}")));
            assert_eq!(seen, expected, "every key once, in order");
        }

        #[test]
        fn long_bodies_are_cut_and_read_on_from_an_offset() {
            let tree = Tree::new("read-cut");
            let body = "é".repeat(500);
            tree.write("long.md", format!("---\na: 1\n---\n{body}"));
            let repo = tree.open();
            let mut p = params("long.md");
            p.max_chars = 120;
            let out = read(&repo, &p, &never).expect("reads");
            assert_eq!(out["body"], "é".repeat(120));
            assert_eq!(out["body_truncated"], true);
            assert_eq!(out["body_total_chars"], 500);
            assert_eq!(out["body_next_offset"], 120);
            p.offset = 480;
            let out = read(&repo, &p, &never).expect("reads");
            assert_eq!(out["body"], "é".repeat(20));
            assert_eq!(out["body_truncated"], false);
            assert_eq!(out["body_offset"], 480);

            // The default cut, and the host's result limit: JSON escapes make quotes count twice.
            let big = "\"".repeat(30_000);
            tree.write("big.md", &big);
            let out = read(&repo, &params("big.md"), &never).expect("reads");
            assert_eq!(out["body_truncated"], true);
            assert!(chars(&out) <= result_budget(), "{}", chars(&out));
            assert!(chars(&out) > result_budget() - 200, "{}", chars(&out));
        }

        #[test]
        fn a_folder_lists_documents_with_front_matter_and_sub_folders() {
            let tree = Tree::new("read-folder");
            tree.write("b.md", "---\ntitle: B\n---\nbody b\n")
                .write("a.md", "no front matter\n")
                .write("c.md", "---\ntitle: [broken\n---\n")
                .write("notes.txt", "skipped\n")
                .write(".hidden.md", "---\nx: 1\n---\n")
                .write("sub/deep.md", "# deep\n");
            tree.symlink(&tree.outside(), "escape");
            tree.symlink(&tree.repo().join("b.md"), "link.md");
            let repo = tree.open();
            let out = read(&repo, &params("."), &never).expect("lists");
            assert_eq!(out["kind"], "folder");
            assert_eq!(out["path"], ".");
            assert_eq!(out["skipped"], 1);
            assert_eq!(out["truncated"], false);
            let entries = out["entries"].as_array().expect("entries");
            let names: Vec<&str> = entries.iter().filter_map(|e| e["name"].as_str()).collect();
            assert_eq!(names, ["a.md", "b.md", "c.md", "escape", "link.md", "sub"]);
            assert_eq!(
                entries[0],
                json!({"name": "a.md", "path": "a.md", "kind": "file", "front_matter": {}})
            );
            assert_eq!(entries[1]["front_matter"], json!({"title": "B"}));
            assert!(entries[1].get("body").is_none());
            let broken = entries[2]["error"].as_str().expect("error");
            // libyaml notices the unclosed list at the end of the front matter (line 3) and says
            // where it started (line 2).
            assert!(
                broken.contains("malformed front matter at line 3"),
                "{broken}"
            );
            assert!(broken.contains("flow sequence at line 2"), "{broken}");
            assert_eq!(entries[3]["kind"], "symlink");
            assert!(
                entries[3]["error"]
                    .as_str()
                    .is_some_and(|e| e.contains("outside the roots")),
                "{}",
                entries[3]
            );
            assert_eq!(entries[4]["front_matter"], json!({"title": "B"}));
            assert_eq!(
                entries[5],
                json!({"name": "sub", "path": "sub", "kind": "folder"})
            );
            let out = read(&repo, &params("sub"), &never).expect("lists");
            assert_eq!(out["entries"][0]["path"], "sub/deep.md");
        }

        #[test]
        fn big_folders_are_cut_to_the_result_limit() {
            let tree = Tree::new("read-many");
            for i in 0..400 {
                tree.write(
                    &format!("doc-{i:03}.md"),
                    format!(
                        "---\ntitle: Document number {i}\nsummary: {}\n---\n",
                        "x".repeat(40)
                    ),
                );
            }
            let out = read(&tree.open(), &params("."), &never).expect("lists");
            let shown = out["entries"].as_array().expect("entries").len();
            assert!(shown > 50 && shown < 400, "{shown}");
            assert_eq!(out["truncated"], true);
            assert_eq!(out["omitted"], json!(400 - shown));
            assert!(chars(&out) <= result_budget());
            assert_eq!(out["entries"][0]["name"], "doc-000.md");
            // The cursors list every document exactly once.
            let mut names: Vec<String> = Vec::new();
            let mut p = params(".");
            loop {
                let page = read(&tree.open(), &p, &never).expect("lists");
                assert!(chars(&page) <= result_budget());
                for entry in page["entries"].as_array().expect("entries") {
                    names.push(entry["name"].as_str().expect("name").to_owned());
                }
                match page["next_cursor"].as_str() {
                    Some(next) => p.cursor = Some(next.to_owned()),
                    None => break,
                }
            }
            let expected: Vec<String> = (0..400).map(|i| format!("doc-{i:03}.md")).collect();
            assert_eq!(names, expected);
        }

        #[test]
        fn malformed_documents_and_bad_paths_are_refused() {
            let tree = Tree::new("read-refuse");
            tree.write("bad.md", "---\ntitle: x\n")
                .write("notes.txt", "x")
                .symlink(&tree.outside().join("secret.md"), "secret.md");
            let repo = tree.open();
            let outside = tree.outside().join("secret.md");
            let outside = outside.to_string_lossy();
            let cases = [
                (
                    "bad.md",
                    codes::FAILED,
                    "bad.md: malformed front matter at line 1",
                ),
                (
                    "notes.txt",
                    codes::INVALID_ARGUMENTS,
                    "reads .md documents and folders",
                ),
                ("missing.md", codes::NOT_FOUND, "no such file"),
                (
                    "../outside/secret.md",
                    codes::INVALID_ARGUMENTS,
                    "\"..\" is not allowed",
                ),
                (&*outside, codes::INVALID_ARGUMENTS, "absolute path outside"),
                ("secret.md", codes::INVALID_ARGUMENTS, "leads outside"),
            ];
            for (path, code, needle) in cases {
                let err = read(&repo, &params(path), &never).expect_err(path);
                assert_eq!(err.code.as_str(), code, "{path}: {err}");
                assert!(err.message.contains(needle), "{path}: {err}");
            }
            let err = read(&repo, &params("."), &|| true).expect_err("cancelled");
            assert_eq!(err.code.as_str(), codes::CANCELLED);
        }
    }
}
