//! The Global docs group through the real `coremcp` binary: `docs_read` and `docs_write` on
//! temporary documentation repositories passed with `--docs`, including front-matter merging,
//! revisions, refusals that leave documents untouched, and every way a path could leave the
//! repository.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use coremcp_tests::{hints, is_error, plugins, text, Server, TempDir};
use serde_json::{json, Value};

/// `top/handbook/` (the docs repository), `top/notes/` (a second one) and `top/outside/`.
struct Repos {
    top: TempDir,
}

impl Repos {
    fn new() -> Self {
        let top = TempDir::new("docs");
        for dir in ["handbook", "notes", "outside"] {
            std::fs::create_dir_all(top.path().join(dir)).expect("mkdir");
        }
        let repos = Self { top };
        repos.write(
            "outside/secret.md",
            "---\nsecret: true\n---\n\nnot for the tools\n",
        );
        repos
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.top.path().join(rel)
    }

    fn handbook(&self) -> String {
        self.path("handbook").to_string_lossy().into_owned()
    }

    fn write(&self, rel: &str, content: &str) {
        let path = self.path(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, content).expect("write");
    }

    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).expect("read")
    }

    /// Every file and folder under `rel`, relative to it, sorted (hidden ones included).
    fn tree(&self, rel: &str) -> Vec<String> {
        fn walk(dir: &Path, prefix: &str, out: &mut Vec<String>) {
            for entry in std::fs::read_dir(dir).expect("read dir") {
                let entry = entry.expect("entry");
                let name = format!("{prefix}{}", entry.file_name().to_string_lossy());
                let kind = entry.file_type().expect("type");
                out.push(name.clone());
                if kind.is_dir() && !kind.is_symlink() {
                    walk(&entry.path(), &format!("{name}/"), out);
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.path(rel), "", &mut out);
        out.sort();
        out
    }
}

/// A server with the docs plugin and `--docs` for the handbook (bare DIR: named by its folder)
/// and the notes (NAME=DIR).
fn server(repos: &Repos) -> (TempDir, Server) {
    let dir = plugins(&["docs"]);
    let notes = format!("team-notes={}", repos.path("notes").display());
    let handbook = repos.handbook();
    let mut server = Server::start(dir.path(), &["--docs", &handbook, "--docs", &notes], &[]);
    server.initialize();
    (dir, server)
}

/// Calls a tool that must succeed and returns its structured content.
fn ok(server: &mut Server, tool: &str, args: Value) -> Value {
    let result = server.call(tool, args.clone());
    assert!(!is_error(&result), "{tool} {args}: {result}");
    result["structuredContent"].clone()
}

/// Calls a tool that must fail and returns its error text.
fn refused(server: &mut Server, tool: &str, args: Value) -> String {
    let result = server.call(tool, args.clone());
    assert!(is_error(&result), "{tool} {args} should fail: {result}");
    text(&result).to_owned()
}

#[test]
fn the_tools_are_listed_with_their_schemas_and_annotations() {
    let repos = Repos::new();
    let (_dir, mut server) = server(&repos);
    let listed = server.request("tools/list", json!({}));
    let tools = listed["result"]["tools"].as_array().expect("tools");
    let find = |name: &str| {
        tools
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("{name} listed: {listed}"))
            .clone()
    };
    let read = find("docs_read");
    assert_eq!(hints(&read)["readOnlyHint"], true, "{read}");
    assert_eq!(read["inputSchema"]["additionalProperties"], false);
    assert_eq!(read["inputSchema"]["required"], json!(["path"]));
    let write = find("docs_write");
    assert_eq!(hints(&write)["readOnlyHint"], false, "{write}");
    assert_eq!(hints(&write)["destructiveHint"], true, "{write}");
    assert_eq!(hints(&write)["idempotentHint"], false, "{write}");
    assert_eq!(hints(&write)["openWorldHint"], false, "{write}");
    assert_eq!(write["inputSchema"]["required"], json!(["path", "body"]));
    for tool in [&read, &write] {
        // The host publishes remote_host for every tool that takes it.
        assert_eq!(
            tool["inputSchema"]["properties"]["remote_host"]["type"], "string",
            "{tool}"
        );
    }
}

#[test]
fn docs_read_returns_a_document_or_a_folder_listing() {
    let repos = Repos::new();
    repos.write(
        "handbook/guide/intro.md",
        "---\ntitle: Intro\nowner: ana\nrevision: 2\n---\n\n# Intro\n\nWelcome.\n",
    );
    repos.write("handbook/guide/plain.md", "# Plain\n");
    repos.write("handbook/guide/image.png", "png");
    repos.write("handbook/guide/deeper/more.md", "more\n");
    repos.write("notes/today.md", "---\ntitle: Today\n---\n\nnotes body\n");
    let (_dir, mut server) = server(&repos);

    let doc = ok(&mut server, "docs_read", json!({"path": "guide/intro.md"}));
    assert_eq!(
        doc,
        json!({"repo": "handbook", "path": "guide/intro.md", "kind": "file",
               "front_matter": {"title": "Intro", "owner": "ana", "revision": 2},
               "body": "# Intro\n\nWelcome.\n"})
    );
    let only = ok(
        &mut server,
        "docs_read",
        json!({"path": "guide/intro.md", "front_matter_only": true}),
    );
    assert_eq!(only["front_matter"]["title"], "Intro");
    assert!(only.get("body").is_none(), "{only}");

    let cut = ok(
        &mut server,
        "docs_read",
        json!({"path": "guide/intro.md", "max_chars": 100}),
    );
    assert!(cut.get("body_truncated").is_none(), "{cut}");
    repos.write("handbook/long.md", &"word ".repeat(100));
    let cut = ok(
        &mut server,
        "docs_read",
        json!({"path": "long.md", "max_chars": 100}),
    );
    assert_eq!(cut["body_truncated"], true);
    assert_eq!(cut["body_total_chars"], 500);
    let rest = ok(
        &mut server,
        "docs_read",
        json!({"path": "long.md", "offset": cut["body_next_offset"]}),
    );
    assert_eq!(
        format!(
            "{}{}",
            cut["body"].as_str().unwrap_or(""),
            rest["body"].as_str().unwrap_or("")
        ),
        "word ".repeat(100),
        "the pieces make the whole body"
    );

    let folder = ok(&mut server, "docs_read", json!({"path": "guide"}));
    assert_eq!(folder["kind"], "folder");
    assert_eq!(folder["skipped"], 1, "image.png: {folder}");
    assert_eq!(
        folder["entries"],
        json!([
            {"name": "deeper", "path": "guide/deeper", "kind": "folder"},
            {"name": "intro.md", "path": "guide/intro.md", "kind": "file",
             "front_matter": {"title": "Intro", "owner": "ana", "revision": 2}},
            {"name": "plain.md", "path": "guide/plain.md", "kind": "file", "front_matter": {}}
        ])
    );
    let top = ok(&mut server, "docs_read", json!({"path": "."}));
    let names: Vec<&str> = top["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .filter_map(|e| e["name"].as_str())
        .collect();
    assert_eq!(names, ["guide", "long.md"]);

    // The second repository by name.
    let note = ok(
        &mut server,
        "docs_read",
        json!({"path": "today.md", "repo": "team-notes"}),
    );
    assert_eq!(note["repo"], "team-notes");
    assert_eq!(note["body"], "notes body\n");
}

#[test]
fn docs_write_creates_merges_and_keeps_front_matter_current() {
    let repos = Repos::new();
    let (_dir, mut server) = server(&repos);

    // create: a new document in new folders, title from the first heading.
    let made = ok(
        &mut server,
        "docs_write",
        json!({"path": "adr/0001-choice.md", "body": "# Use YAML front matter\n\nBecause.\n",
               "front_matter": {"status": "proposed"}, "mode": "create"}),
    );
    assert_eq!(made["created"], true);
    assert_eq!(made["revision"], 1);
    assert_eq!(made["path"], "adr/0001-choice.md");
    let client = made["updated_by"].as_str().expect("updated_by").to_owned();
    assert!(
        client.starts_with("coremcp-tests"),
        "the client's name: {made}"
    );
    let updated = made["updated"].as_str().expect("updated");
    assert!(
        updated.len() == 20 && updated.ends_with('Z') && updated.as_bytes()[10] == b'T',
        "RFC 3339 UTC: {updated}"
    );
    let written = repos.read("handbook/adr/0001-choice.md");
    assert!(
        written.starts_with("---\ntitle: Use YAML front matter\nstatus: proposed\nupdated: "),
        "{written}"
    );
    assert!(
        written.ends_with(&format!(
            "updated_by: {client}\nrevision: 1\n---\n\n# Use YAML front matter\n\nBecause.\n"
        )),
        "{written}"
    );
    // create again: conflict, nothing changes.
    let err = refused(
        &mut server,
        "docs_write",
        json!({"path": "adr/0001-choice.md", "body": "x", "mode": "create"}),
    );
    assert!(
        err.contains("(conflict)") && err.contains("already exists"),
        "{err}"
    );
    assert_eq!(repos.read("handbook/adr/0001-choice.md"), written);

    // replace of a missing document: not_found, nothing created.
    let err = refused(
        &mut server,
        "docs_write",
        json!({"path": "adr/0002-missing.md", "body": "x", "mode": "replace"}),
    );
    assert!(err.contains("(not_found)"), "{err}");
    assert_eq!(repos.tree("handbook"), ["adr", "adr/0001-choice.md"]);

    // An existing document with keys the tool does not know, in a deliberate order.
    repos.write(
        "handbook/policy.md",
        "---\n# Owned by the platform team\nzeta: 'last letter'   # keep me\nowner: ana\nreviewers:\n  - bo\n  - cy\ntitle: Policy\nrevision: 7\ndraft: true\n---\n\nOld text.\n",
    );
    let replaced = ok(
        &mut server,
        "docs_write",
        json!({"path": "policy.md", "body": "# Policy v2\n\nNew text.\n",
               "front_matter": {"owner": "dee", "audience": ["eng"]},
               "remove_keys": ["draft"], "mode": "replace", "expected_revision": 7}),
    );
    assert_eq!(replaced["created"], false);
    assert_eq!(replaced["revision"], 8);
    assert_eq!(
        replaced["front_matter"]["reviewers"],
        json!(["bo", "cy"]),
        "{replaced}"
    );
    let text = repos.read("handbook/policy.md");
    let (front, body) = text
        .strip_prefix("---\n")
        .and_then(|t| t.split_once("---\n\n"))
        .expect("front matter then body");
    assert_eq!(body, "# Policy v2\n\nNew text.\n");
    let lines: Vec<&str> = front.lines().collect();
    assert_eq!(
        lines[..8],
        [
            "# Owned by the platform team",
            "zeta: 'last letter'   # keep me",
            "owner: dee",
            "reviewers:",
            "  - bo",
            "  - cy",
            "title: Policy",
            "revision: 8",
        ],
        "{text}"
    );
    assert_eq!(lines[8], "audience:");
    assert_eq!(lines[9], "- eng");
    assert!(lines[10].starts_with("updated: "), "{text}");
    assert_eq!(lines[11], format!("updated_by: {client}"));
    assert_eq!(lines.len(), 12, "draft removed: {text}");

    // upsert (the default) keeps counting; a stale expected_revision is a conflict naming the
    // current one, and leaves the document byte for byte.
    let again = ok(
        &mut server,
        "docs_write",
        json!({"path": "policy.md", "body": "# Policy v3\n", "expected_revision": 8}),
    );
    assert_eq!(again["revision"], 9);
    let before = repos.read("handbook/policy.md");
    let err = refused(
        &mut server,
        "docs_write",
        json!({"path": "policy.md", "body": "lost update", "expected_revision": 8}),
    );
    assert!(err.contains("(conflict)"), "{err}");
    assert!(err.contains("current revision 9"), "{err}");
    assert_eq!(repos.read("handbook/policy.md"), before);

    // upsert of a new document; the write is visible to docs_read.
    ok(
        &mut server,
        "docs_write",
        json!({"path": "fresh.md", "body": "no heading", "repo": "team-notes"}),
    );
    let read = ok(
        &mut server,
        "docs_read",
        json!({"path": "fresh.md", "repo": "team-notes"}),
    );
    assert_eq!(read["body"], "no heading\n");
    assert_eq!(read["front_matter"]["revision"], 1);
    assert!(read["front_matter"].get("title").is_none(), "{read}");
    // No temporary files anywhere.
    assert_eq!(
        repos.tree("handbook"),
        ["adr", "adr/0001-choice.md", "policy.md"]
    );
    assert_eq!(repos.tree("notes"), ["fresh.md"]);
}

#[test]
fn malformed_front_matter_is_reported_with_its_line_and_never_rewritten() {
    let repos = Repos::new();
    let cases = [
        (
            "handbook/unclosed.md",
            "---\ntitle: x\n\n# Body\n",
            "line 1",
        ),
        (
            "handbook/bad-yaml.md",
            "---\ntitle: ok\nowner: ana\n  nested: wrong\n---\n\nbody\n",
            "line 4",
        ),
    ];
    for (path, content, _) in cases {
        repos.write(path, content);
    }
    let (_dir, mut server) = server(&repos);
    for (path, content, line) in cases {
        let rel = path.trim_start_matches("handbook/");
        let err = refused(&mut server, "docs_read", json!({"path": rel}));
        assert!(
            err.contains(&format!("malformed front matter at {line}")),
            "{err}"
        );
        let err = refused(
            &mut server,
            "docs_write",
            json!({"path": rel, "body": "replacement", "front_matter": {"title": "t"}}),
        );
        assert!(
            err.contains(&format!("malformed front matter at {line}")),
            "{err}"
        );
        assert!(err.contains("was not changed"), "{err}");
        assert_eq!(repos.read(path), content, "{path} untouched");
    }
    // A listing reports the broken document instead of failing.
    let listing = ok(&mut server, "docs_read", json!({"path": "."}));
    let entries = listing["entries"].as_array().expect("entries");
    assert_eq!(entries.len(), 2, "{listing}");
    assert!(
        entries.iter().all(|e| e["error"]
            .as_str()
            .is_some_and(|m| m.contains("malformed front matter"))),
        "{listing}"
    );
    assert_eq!(repos.tree("handbook"), ["bad-yaml.md", "unclosed.md"]);
}

#[test]
fn paths_cannot_leave_the_repository() {
    let repos = Repos::new();
    repos.write("handbook/ok.md", "# ok\n");
    let outside = repos.path("outside");
    symlink(&outside, repos.path("handbook/out")).expect("symlink out");
    symlink(outside.join("secret.md"), repos.path("handbook/secret.md")).expect("symlink");
    symlink(
        repos.path("handbook/loop2.md"),
        repos.path("handbook/loop1.md"),
    )
    .expect("loop1");
    symlink(
        repos.path("handbook/loop1.md"),
        repos.path("handbook/loop2.md"),
    )
    .expect("loop2");
    let (_dir, mut server) = server(&repos);
    let secret_abs = outside.join("secret.md").to_string_lossy().into_owned();
    let new_abs = outside.join("new.md").to_string_lossy().into_owned();
    let cases = [
        ("../outside/secret.md", "\"..\" is not allowed"),
        ("guide/../../outside/secret.md", "\"..\" is not allowed"),
        (secret_abs.as_str(), "absolute path outside"),
        (new_abs.as_str(), "absolute path outside"),
        ("out/secret.md", "leads outside"),
        ("out/new.md", "leads outside"),
        ("out/deeper/new.md", "leads outside"),
        ("secret.md", "leads outside"),
        ("loop1.md", "symlink loop"),
    ];
    for (path, needle) in cases {
        for tool in ["docs_read", "docs_write"] {
            let args = if tool == "docs_read" {
                json!({"path": path})
            } else {
                json!({"path": path, "body": "overwritten", "front_matter": {"x": 1}})
            };
            let err = refused(&mut server, tool, args);
            // docs_read of a missing file behind the `out` symlink may only say it is not
            // found; it never reads outside.
            let fine = err.contains(needle)
                || (tool == "docs_read" && err.contains("(not_found)") && path.contains("new"));
            assert!(fine, "{tool} {path}: {err}");
        }
    }
    // docs_write writes .md documents only.
    let err = refused(
        &mut server,
        "docs_write",
        json!({"path": "script.sh", "body": "echo hi"}),
    );
    assert!(err.contains(".md documents only"), "{err}");
    assert_eq!(
        repos.read("outside/secret.md"),
        "---\nsecret: true\n---\n\nnot for the tools\n"
    );
    assert_eq!(repos.tree("outside"), ["secret.md"]);
    assert_eq!(
        repos.tree("handbook"),
        ["loop1.md", "loop2.md", "ok.md", "out", "secret.md"]
    );
}

#[test]
fn repository_selection_and_configuration_errors() {
    let repos = Repos::new();
    let (_dir, mut server) = server(&repos);
    let err = refused(
        &mut server,
        "docs_read",
        json!({"path": ".", "repo": "nope"}),
    );
    assert!(err.contains("(invalid_arguments)"), "{err}");
    assert!(err.contains("configured: handbook, team-notes"), "{err}");
    let err = refused(
        &mut server,
        "docs_write",
        json!({"path": "a.md", "body": "x", "project": "CORE"}),
    );
    // Without the Registry's plugin a project cannot be looked up, and the error says so.
    assert!(
        err.contains("the Registry could not be asked") && err.contains("not installed"),
        "{err}"
    );
    assert_eq!(repos.tree("handbook"), Vec::<String>::new());

    // Without --docs: a clear not_configured error.
    let dir = plugins(&["docs"]);
    let mut bare = Server::start(dir.path(), &[], &[]);
    bare.initialize();
    let err = refused(&mut bare, "docs_read", json!({"path": "."}));
    assert!(
        err.contains("(not_configured)") && err.contains("--docs DIR"),
        "{err}"
    );
}
