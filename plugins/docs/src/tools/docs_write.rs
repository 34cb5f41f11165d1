//! `docs_write`: create or replace one Markdown document, merging its front matter and keeping
//! it current.
//!
//! Invariants:
//! - Only `.md` paths inside the selected repository are written; missing parent folders are
//!   created inside it.
//! - Every write sets `updated` (RFC 3339 UTC), `updated_by` (the client's name, else
//!   `coremcp`) and `revision` (the previous one + 1, starting at 1); `title` defaults to the
//!   body's first `# ` heading when absent. Callers cannot set or remove these three keys
//!   themselves: such keys in `front_matter` or `remove_keys` are ignored and reported in
//!   `ignored_keys`.
//! - Keys not named in `front_matter` or `remove_keys` keep their place and their text.
//! - A refused write (mode, `expected_revision`, malformed front matter, bad path) and a failed
//!   one change nothing: the document is replaced whole and atomically, or not at all.
//! - Writes through this plugin are serialised, so `expected_revision` is checked and the new
//!   revision written without another call of this process in between.

use coremcp_plugin_sdk::{typed, ArgEnum, Args, Ctx, Hints, Tool, ToolError};
use serde_json::{Map, Value};

pub const TOOL: Tool = Tool::typed("docs_write", &typed(handler))
    .hints(Hints::DESTRUCTIVE)
    .built(cfg!(feature = "docs-write"));

/// Whether the document may, or must, exist already.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ArgEnum)]
pub enum Mode {
    Create,
    Replace,
    Upsert,
}

/// Create or replace a Markdown document, atomically; front matter merges, and updated,
/// updated_by and revision are kept current. Does not commit.
#[derive(Debug, Args)]
#[cfg_attr(not(feature = "docs-write"), allow(dead_code))]
pub struct Write {
    /// repo-relative .md file
    path: String,
    /// Markdown, no front matter
    body: String,
    #[arg(flatten)]
    repo: super::Choice,
    /// keys merged into the existing front matter
    front_matter: Option<Map<String, Value>>,
    /// front-matter keys to drop
    remove_keys: Vec<String>,
    /// create: must not exist; replace: must; upsert (default)
    #[arg(default = Mode::Upsert)]
    mode: Mode,
    /// revision you read (0: none); else conflict
    #[arg(min = 0)]
    expected_revision: Option<u64>,
}

#[cfg(not(feature = "docs-write"))]
fn handler(_: &Ctx<'_>, _: Write) -> Result<Value, ToolError> {
    // Never called: the SDK refuses a tool whose feature is off before running its handler.
    Err(ToolError::new(
        coremcp_plugin_sdk::codes::UNAVAILABLE,
        "docs_write is not in this build: it needs the \"docs-write\" feature",
    ))
}

#[cfg(feature = "docs-write")]
fn handler(_: &Ctx<'_>, args: Write) -> Result<Value, ToolError> {
    let repo = args.repo.open()?;
    let request = imp::Request {
        path: args.path,
        body: args.body,
        front_matter: args.front_matter.unwrap_or_default(),
        remove_keys: args.remove_keys,
        mode: args.mode,
        expected_revision: args.expected_revision,
    };
    // The caller as the host knows it, through relays and remote_host too.
    let client = coremcp_plugin_sdk::caller::who()
        .map(|c| c.trim().to_owned())
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| imp::DEFAULT_CLIENT.to_owned());
    let now = coremcp_plugin_kit::time::now_rfc3339();
    imp::write(&repo, &request, &client, &now)
}

#[cfg(feature = "docs-write")]
pub(crate) mod imp {
    use std::fs;
    use std::io;
    use std::sync::{Mutex, PoisonError};

    use coremcp_plugin_sdk::codes;
    use coremcp_plugin_sdk::ToolError;
    use serde_json::{json, Map, Value};
    use serde_norway::Value as Yaml;

    use crate::front_matter::{self, FrontMatter};
    use crate::repo::Repo;
    use crate::tools::{is_markdown, read_text};

    /// `updated_by` when the host names no client.
    pub const DEFAULT_CLIENT: &str = "coremcp";
    /// Front-matter keys only the tool sets.
    const MANAGED: [&str; 3] = ["updated", "updated_by", "revision"];

    /// One write at a time in this process: check and replace must not interleave.
    static WRITES: Mutex<()> = Mutex::new(());

    pub use super::Mode;

    #[derive(Debug, Clone)]
    pub struct Request {
        pub path: String,
        pub body: String,
        pub front_matter: Map<String, Value>,
        pub remove_keys: Vec<String>,
        pub mode: Mode,
        pub expected_revision: Option<u64>,
    }

    /// Writes the document `request` describes; `client` and `now` fill `updated_by` and
    /// `updated`.
    pub fn write(
        repo: &Repo,
        request: &Request,
        client: &str,
        now: &str,
    ) -> Result<Value, ToolError> {
        let shown = request.path.as_str();
        if !is_markdown(std::path::Path::new(shown)) {
            return Err(refusal(shown, "docs_write writes .md documents only"));
        }
        let _one_at_a_time = WRITES.lock().unwrap_or_else(PoisonError::into_inner);
        let target = repo.roots.resolve_new("path", shown, None)?;
        repo.outside_git(shown, &target)?;
        // The path may be a symlink to another file inside the repository: that file is written.
        if !is_markdown(&target) {
            return Err(refusal(
                shown,
                "it leads to a file that is not a .md document",
            ));
        }
        let existing = match fs::symlink_metadata(&target) {
            Ok(meta) if meta.is_dir() => return Err(refusal(shown, "it is a folder")),
            Ok(_) => Some(read_text(&target, shown)?),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(failed(shown, &e)),
        };
        let rel = repo.relative(&target);
        let mut front = match &existing {
            Some(text) => front_matter::parse(text)
                .map_err(|m| {
                    ToolError::new(
                        codes::FAILED,
                        format!(
                            "{rel}: {m}; the document was not changed (docs_write does not \
                             rewrite front matter it cannot read: fix it by hand)"
                        ),
                    )
                })?
                .front
                .unwrap_or_default(),
            None => FrontMatter::default(),
        };
        let current = revision(&front, &rel)?;
        match (request.mode, &existing) {
            (Mode::Create, Some(_)) => {
                return Err(ToolError::new(
                    codes::CONFLICT,
                    format!(
                        "{rel} already exists (revision {current}); use mode replace or upsert \
                         to change it"
                    ),
                ))
            }
            (Mode::Replace, None) => {
                return Err(ToolError::new(
                    codes::NOT_FOUND,
                    format!("{rel} does not exist; use mode create or upsert to create it"),
                ))
            }
            _ => {}
        }
        if let Some(expected) = request.expected_revision {
            if expected != current {
                let state = if existing.is_some() {
                    format!("is at revision {current}")
                } else {
                    "does not exist yet (revision 0)".to_owned()
                };
                return Err(ToolError::new(
                    codes::CONFLICT,
                    format!(
                        "{rel} {state}, not the expected revision {expected}: it changed since \
                         it was read; read it again (current revision {current}) and retry"
                    ),
                ));
            }
        }

        let mut ignored = Vec::new();
        for key in &request.remove_keys {
            if MANAGED.contains(&key.as_str()) {
                ignored.push(key.clone());
            } else {
                front.remove(key);
            }
        }
        for (key, value) in &request.front_matter {
            if MANAGED.contains(&key.as_str()) {
                ignored.push(key.clone());
            } else {
                front.set(key, front_matter::json_to_yaml(value));
            }
        }
        match front.get("title") {
            Some(Yaml::Null) | None => {
                if let Some(title) = front_matter::first_h1(&request.body) {
                    if front.get("title").is_some() {
                        front.set("title", Yaml::String(title));
                    } else {
                        front.set_first("title", Yaml::String(title));
                    }
                }
            }
            Some(_) => {}
        }
        let revision = current + 1;
        front.set("updated", Yaml::String(now.to_owned()));
        front.set("updated_by", Yaml::String(client.to_owned()));
        front.set("revision", Yaml::from(revision));

        let mut body = request.body.clone();
        if !body.is_empty() && !body.ends_with('\n') {
            body.push('\n');
        }
        let text = front_matter::compose(&front, &body).map_err(|e| {
            ToolError::new(
                codes::INTERNAL,
                format!("{rel}: {e}; the document was not changed"),
            )
        })?;
        if let Some(parent) = target.parent() {
            fs::create_dir_all(parent).map_err(|e| failed(shown, &e))?;
        }
        coremcp_plugin_kit::atomic::write(&target, text.as_bytes())
            .map_err(|e| failed(shown, &e))?;

        let mut result = json!({
            "repo": repo.name,
            "path": rel,
            "created": existing.is_none(),
            "revision": revision,
            "updated": now,
            "updated_by": client,
            "front_matter": front.to_json(),
            "bytes": text.len(),
        });
        if !ignored.is_empty() {
            result["ignored_keys"] = json!(ignored);
        }
        Ok(result)
    }

    /// The document's revision: 0 without one; anything but a whole number is refused.
    fn revision(front: &FrontMatter, rel: &str) -> Result<u64, ToolError> {
        match front.get("revision") {
            None | Some(Yaml::Null) => Ok(0),
            Some(value) => value.as_u64().ok_or_else(|| {
                ToolError::new(
                    codes::FAILED,
                    format!(
                        "{rel}: the front-matter revision ({}) is not a whole number; the \
                         document was not changed (fix it by hand)",
                        front_matter::yaml_to_json(value)
                    ),
                )
            }),
        }
    }

    fn refusal(path: &str, why: &str) -> ToolError {
        ToolError::new(
            codes::INVALID_ARGUMENTS,
            format!("argument \"path\" ({path}): {why}"),
        )
    }

    fn failed(path: &str, err: &io::Error) -> ToolError {
        ToolError::new(codes::FAILED, format!("{path}: {err}"))
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use crate::testing::Tree;

        const NOW: &str = "2024-05-01T12:00:00Z";

        fn request(path: &str, body: &str) -> Request {
            Request {
                path: path.to_owned(),
                body: body.to_owned(),
                front_matter: Map::new(),
                remove_keys: Vec::new(),
                mode: Mode::Upsert,
                expected_revision: None,
            }
        }

        fn with_front(mut r: Request, front: Value) -> Request {
            r.front_matter = front.as_object().cloned().expect("object");
            r
        }

        #[test]
        fn a_new_document_gets_title_updated_and_revision_one() {
            let tree = Tree::new("write-new");
            let repo = tree.open();
            let req = with_front(
                request("guide/new/page.md", "# Getting started\n\nText."),
                json!({"tags": ["intro"], "revision": 99}),
            );
            let out = write(&repo, &req, "claude-code", NOW).expect("writes");
            assert_eq!(out["created"], true);
            assert_eq!(out["revision"], 1);
            assert_eq!(out["path"], "guide/new/page.md");
            assert_eq!(out["ignored_keys"], json!(["revision"]));
            assert_eq!(
                tree.read("guide/new/page.md"),
                "---\ntitle: Getting started\ntags:\n- intro\nupdated: 2024-05-01T12:00:00Z\nupdated_by: claude-code\nrevision: 1\n---\n\n# Getting started\n\nText.\n"
            );
            assert_eq!(
                out["front_matter"],
                json!({"title": "Getting started", "tags": ["intro"], "updated": NOW,
                       "updated_by": "claude-code", "revision": 1})
            );
            assert_eq!(tree.names("guide/new"), ["page.md"]);
        }

        #[test]
        fn merging_keeps_unknown_keys_their_order_and_their_text() {
            let tree = Tree::new("write-merge");
            tree.write(
                "doc.md",
                "---\n# maintained by the docs team\nzeta: 'z'   # why\ntitle: Kept Title\nowner: ana\nrevision: 4\nalpha:\n  - 1\nupdated: 2020-01-01T00:00:00Z\nobsolete: true\n---\n\nold body\n",
            );
            let repo = tree.open();
            let mut req = with_front(
                request("doc.md", "# Other heading\nnew body\n"),
                json!({"owner": "bo", "status": "draft"}),
            );
            req.remove_keys = vec!["obsolete".into(), "revision".into()];
            req.expected_revision = Some(4);
            let out = write(&repo, &req, "agent", NOW).expect("writes");
            assert_eq!(out["created"], false);
            assert_eq!(out["revision"], 5);
            assert_eq!(out["ignored_keys"], json!(["revision"]));
            assert_eq!(
                tree.read("doc.md"),
                "---\n# maintained by the docs team\nzeta: 'z'   # why\ntitle: Kept Title\nowner: bo\nrevision: 5\nalpha:\n  - 1\nupdated: 2024-05-01T12:00:00Z\nstatus: draft\nupdated_by: agent\n---\n\n# Other heading\nnew body\n"
            );
            // The revision keeps counting.
            let out = write(&repo, &request("doc.md", "x"), "agent", NOW).expect("writes");
            assert_eq!(out["revision"], 6);
            assert!(tree.read("doc.md").ends_with("---\n\nx\n"));
        }

        #[test]
        fn title_defaults_only_when_absent() {
            let tree = Tree::new("write-title");
            tree.write("null.md", "---\ntitle:\nx: 1\n---\n");
            let repo = tree.open();
            let out = write(&repo, &request("null.md", "# From Body\n"), "a", NOW).expect("ok");
            assert_eq!(out["front_matter"]["title"], "From Body");
            assert!(tree
                .read("null.md")
                .starts_with("---\ntitle: From Body\nx: 1\n"));
            let req = with_front(
                request("given.md", "# Heading\n"),
                json!({"title": "Given"}),
            );
            let out = write(&repo, &req, "a", NOW).expect("ok");
            assert_eq!(out["front_matter"]["title"], "Given");
            let out = write(&repo, &request("none.md", "no heading\n"), "a", NOW).expect("ok");
            assert!(out["front_matter"].get("title").is_none(), "{out}");
        }

        #[test]
        fn modes_and_expected_revision_conflicts_leave_the_file_untouched() {
            let tree = Tree::new("write-modes");
            let original = "---\ntitle: T\nrevision: 2\n---\n\nbody\n";
            tree.write("doc.md", original);
            let repo = tree.open();
            let mut req = request("doc.md", "new");
            req.mode = Mode::Create;
            let err = write(&repo, &req, "a", NOW).expect_err("exists");
            assert_eq!(err.code.as_str(), codes::CONFLICT);
            assert!(err.message.contains("already exists (revision 2)"), "{err}");

            let mut req = request("missing.md", "new");
            req.mode = Mode::Replace;
            let err = write(&repo, &req, "a", NOW).expect_err("missing");
            assert_eq!(err.code.as_str(), codes::NOT_FOUND);

            let mut req = request("doc.md", "new");
            req.expected_revision = Some(1);
            let err = write(&repo, &req, "a", NOW).expect_err("stale");
            assert_eq!(err.code.as_str(), codes::CONFLICT);
            assert!(err.message.contains("is at revision 2"), "{err}");
            assert!(err.message.contains("current revision 2"), "{err}");

            let mut req = request("fresh.md", "new");
            req.expected_revision = Some(3);
            let err = write(&repo, &req, "a", NOW).expect_err("no document yet");
            assert!(err.message.contains("revision 0"), "{err}");

            assert_eq!(tree.read("doc.md"), original);
            assert_eq!(tree.names(""), ["doc.md"]);

            let mut req = request("doc.md", "new");
            req.mode = Mode::Replace;
            req.expected_revision = Some(2);
            assert_eq!(write(&repo, &req, "a", NOW).expect("ok")["revision"], 3);
            let mut req = request("fresh.md", "new");
            req.mode = Mode::Create;
            req.expected_revision = Some(0);
            assert_eq!(write(&repo, &req, "a", NOW).expect("ok")["revision"], 1);
            assert_eq!(tree.names(""), ["doc.md", "fresh.md"]);
        }

        #[test]
        fn malformed_front_matter_is_never_rewritten() {
            let tree = Tree::new("write-malformed");
            let cases = [
                ("open.md", "---\ntitle: x\nno close\n", "line 1"),
                (
                    "yaml.md",
                    "---\ntitle: ok\nlist: [1, 2\n---\nbody\n",
                    "line 4",
                ),
                ("rev.md", "---\nrevision: two\n---\n", "not a whole number"),
            ];
            for (path, text, _) in cases {
                tree.write(path, text);
            }
            let repo = tree.open();
            for (path, text, needle) in cases {
                let err = write(&repo, &request(path, "new"), "a", NOW).expect_err(path);
                assert_eq!(err.code.as_str(), codes::FAILED, "{path}: {err}");
                assert!(err.message.contains(needle), "{path}: {err}");
                assert!(err.message.contains("was not changed"), "{path}: {err}");
                assert_eq!(tree.read(path), text, "{path} untouched");
            }
            assert_eq!(tree.names(""), ["open.md", "rev.md", "yaml.md"]);
        }

        #[test]
        fn paths_stay_inside_the_repository_and_name_markdown_files() {
            let tree = Tree::new("write-paths");
            tree.write("folder.md/x.md", "x")
                .write("notes.txt", "x")
                .symlink(&tree.outside(), "out")
                .symlink(&tree.outside().join("secret.md"), "secret.md")
                .symlink(&tree.repo().join("notes.txt"), "alias.md")
                .symlink(&tree.repo().join("loop2.md"), "loop1.md")
                .symlink(&tree.repo().join("loop1.md"), "loop2.md")
                .write(".git/HEAD", "ref: refs/heads/main\n")
                .symlink(&tree.repo().join(".git"), "to-git");
            let repo = tree.open();
            let outside = tree.outside().join("new.md");
            let outside = outside.to_string_lossy();
            let cases = [
                ("../outside/new.md", "\"..\" is not allowed"),
                ("sub/../../x.md", "\"..\" is not allowed"),
                (&*outside, "absolute path outside"),
                ("out/new.md", "leads outside"),
                ("out/deeper/new.md", "leads outside"),
                ("secret.md", "leads outside"),
                ("loop1.md", "symlink loop"),
                ("notes.txt", ".md documents only"),
                ("alias.md", "not a .md document"),
                ("folder.md", "it is a folder"),
                (".git/hooks/x.md", "inside a .git folder"),
                ("sub/.GIT/config.md", "inside a .git folder"),
                ("to-git/x.md", "inside a .git folder"),
            ];
            for (path, needle) in cases {
                let err = write(&repo, &request(path, "x"), "a", NOW).expect_err(path);
                assert_eq!(err.code.as_str(), codes::INVALID_ARGUMENTS, "{path}: {err}");
                assert!(err.message.contains(needle), "{path}: {err}");
            }
            assert_eq!(
                fs::read_to_string(tree.outside().join("secret.md")).expect("read"),
                "---\nsecret: 1\n---\nsecret\n"
            );
            assert!(!tree.outside().join("new.md").exists());
            assert!(!tree.outside().join("deeper").exists());
            assert_eq!(tree.read("notes.txt"), "x");
            assert!(
                !tree.repo().join(".git/hooks").exists(),
                "nothing under .git"
            );
            // An absolute path inside the repository is fine.
            let inside = tree.repo().join("abs.md");
            let out =
                write(&repo, &request(&inside.to_string_lossy(), "x"), "a", NOW).expect("inside");
            assert_eq!(out["path"], "abs.md");
        }

        #[test]
        fn a_failed_write_leaves_no_temp_file_and_the_old_document() {
            let tree = Tree::new("write-fail");
            // The parent "folder" is a file: creating it fails before anything is written.
            tree.write("file", "plain");
            let repo = tree.open();
            let err = write(&repo, &request("file/doc.md", "x"), "a", NOW).expect_err("fails");
            assert_eq!(err.code.as_str(), codes::FAILED, "{err}");
            assert_eq!(tree.names(""), ["file"]);
            assert_eq!(tree.read("file"), "plain");
        }
    }
}
