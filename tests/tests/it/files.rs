//! The Code and files group through the real `coremcp` binary: `files_search`, `files_list` and
//! `code_snapshot` on a temporary tree passed with `--root`, including every way a path argument
//! could try to leave the root.

use std::os::unix::fs::symlink;
use std::path::Path;

use coremcp_tests::{hints, is_error, plugins, text, Server, TempDir};
use serde_json::{json, Value};

/// `top/root/…` (the configured root) and `top/outside/secret.txt`.
fn tree() -> TempDir {
    let top = TempDir::new("files-tree");
    let root = top.path().join("root");
    let write = |rel: &str, content: &str| {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, content).expect("write");
    };
    write("README.md", "# Demo\nneedle in the readme\n");
    write(
        "src/lib.rs",
        "/// Adds.\npub fn add(a: u32, b: u32) -> u32 {\n    a + b // needle\n}\n\npub struct Point;\n\nimpl Point {\n    pub fn new() -> Self {\n        Point\n    }\n}\n",
    );
    write(
        "src/util.py",
        "class Tool:\n    def run(self):\n        return 'needle'\n",
    );
    write(
        "web/app.ts",
        "export interface Props { id: string }\nexport function render(p: Props) {}\n",
    );
    write(".gitignore", "build/\n");
    write("build/out.txt", "needle in a build product\n");
    write(".hidden/notes.txt", "needle hidden\n");
    let outside = top.path().join("outside");
    std::fs::create_dir_all(&outside).expect("mkdir outside");
    std::fs::write(outside.join("secret.txt"), "needle secret outside\n").expect("write");
    std::fs::write(outside.join("evil.rs"), "fn evil() {}\n").expect("write");
    symlink(&outside, root.join("out")).expect("symlink out");
    symlink(root.join("loop2"), root.join("loop1")).expect("symlink loop1");
    symlink(root.join("loop1"), root.join("loop2")).expect("symlink loop2");
    top
}

fn root_of(top: &TempDir) -> String {
    top.path().join("root").to_string_lossy().into_owned()
}

fn server(top: &TempDir) -> (TempDir, Server) {
    let dir = plugins(&["files"]);
    let root = root_of(top);
    let mut server = Server::start(dir.path(), &["--root", &root], &[]);
    server.initialize();
    (dir, server)
}

/// Calls a tool that must succeed and returns its structured content.
fn ok(server: &mut Server, tool: &str, args: Value) -> Value {
    let result = server.call(tool, args.clone());
    assert!(!is_error(&result), "{tool} {args}: {result}");
    result["structuredContent"].clone()
}

fn places(found: &Value) -> Vec<String> {
    found["matches"]
        .as_array()
        .expect("matches")
        .iter()
        .map(|m| format!("{}:{}", m["path"].as_str().expect("path"), m["line"]))
        .collect()
}

#[test]
fn the_group_lists_its_tools_read_only_in_catalog_order() {
    let top = tree();
    let (_dir, mut server) = server(&top);
    let listed = server.request("tools/list", json!({}));
    let tools = listed["result"]["tools"].as_array().expect("tools");
    let ours: Vec<&Value> = tools
        .iter()
        .filter(|t| {
            ["files_search", "files_list", "code_snapshot", "sql_query"]
                .contains(&t["name"].as_str().unwrap_or(""))
        })
        .collect();
    let names: Vec<&str> = ours.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(
        names,
        ["files_search", "files_list", "code_snapshot", "sql_query"]
    );
    for tool in &ours[..3] {
        assert_eq!(hints(tool)["readOnlyHint"], true, "{tool}");
        assert_eq!(tool["inputSchema"]["additionalProperties"], false, "{tool}");
    }
}

#[test]
fn files_search_finds_sorted_matches_and_honours_ignores() {
    let top = tree();
    let (_dir, mut server) = server(&top);
    let found = ok(
        &mut server,
        "files_search",
        json!({"pattern": "needle", "literal": true}),
    );
    // Not the ignored build/, the hidden folder or the symlinked outside folder.
    assert_eq!(
        places(&found),
        ["README.md:2", "src/lib.rs:3", "src/util.py:3"]
    );
    assert_eq!(found["truncated"], false);
    assert_eq!(found["counts"]["matches"], 3);
    assert_eq!(found["matches"][1]["text"], "    a + b // needle");

    let found = ok(
        &mut server,
        "files_search",
        json!({"pattern": "fn \\w+\\(", "include": ["*.rs"], "context_lines": 1}),
    );
    assert_eq!(places(&found), ["src/lib.rs:2", "src/lib.rs:9"]);
    assert_eq!(found["matches"][0]["before"], json!(["/// Adds."]));
    assert_eq!(found["matches"][0]["after"], json!(["    a + b // needle"]));

    let found = ok(
        &mut server,
        "files_search",
        json!({"pattern": "NEEDLE", "include_hidden": true, "max_results": 2}),
    );
    assert_eq!(
        found["matches"].as_array().map(Vec::len),
        Some(0),
        "smart case: exact"
    );
    let found = ok(
        &mut server,
        "files_search",
        json!({"pattern": "needle", "include_hidden": true, "max_results": 2}),
    );
    assert_eq!(places(&found), [".hidden/notes.txt:1", "README.md:2"]);
    assert_eq!(found["truncated"], true);

    let result = server.call("files_search", json!({"pattern": "a(b"}));
    assert!(is_error(&result), "{result}");
    assert!(text(&result).contains("not a valid regex"), "{result}");
    let result = server.call("files_search", json!({"pattern": "x", "max_results": 5000}));
    assert!(text(&result).contains("above the maximum 2000"), "{result}");
}

#[test]
fn files_list_lists_a_sorted_tree() {
    let top = tree();
    let (_dir, mut server) = server(&top);
    let listing = ok(&mut server, "files_list", json!({"depth": 2}));
    let entries: Vec<String> = listing["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| {
            format!(
                "{} {}",
                e["path"].as_str().expect("path"),
                e["type"].as_str().expect("type")
            )
        })
        .collect();
    assert_eq!(
        entries,
        [
            "README.md file",
            "loop1 symlink",
            "loop2 symlink",
            "out symlink",
            "src dir",
            "src/lib.rs file",
            "src/util.py file",
            "web dir",
            "web/app.ts file",
        ]
    );
    let readme = &listing["entries"][0];
    assert_eq!(readme["size"], 28);
    assert!(
        readme["mtime"].as_str().is_some_and(|t| t.ends_with('Z')),
        "{readme}"
    );
    let listing = ok(
        &mut server,
        "files_list",
        json!({"path": "src", "max_entries": 1}),
    );
    assert_eq!(listing["entries"][0]["path"], "lib.rs");
    assert_eq!(listing["truncated"], true);
}

#[test]
fn code_snapshot_outlines_each_language_the_same_way_twice() {
    let top = tree();
    let (_dir, mut server) = server(&top);
    let snapshot = ok(&mut server, "code_snapshot", json!({}));
    let files: Vec<String> = snapshot["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|f| {
            format!(
                "{} {}",
                f["path"].as_str().expect("path"),
                f["language"].as_str().unwrap_or("-")
            )
        })
        .collect();
    assert_eq!(
        files,
        [
            "README.md -",
            "src/lib.rs rust",
            "src/util.py python",
            "web/app.ts typescript"
        ]
    );
    let rust = &snapshot["files"][1]["symbols"];
    assert_eq!(
        rust,
        &json!([
            {"kind": "function", "name": "add", "signature": "pub fn add(a: u32, b: u32) -> u32", "start_line": 2, "end_line": 4},
            {"kind": "struct", "name": "Point", "signature": "pub struct Point", "start_line": 6, "end_line": 6},
            {"kind": "impl", "name": "Point", "signature": "impl Point", "start_line": 8, "end_line": 12},
            {"kind": "method", "name": "new", "parent": "Point", "signature": "pub fn new() -> Self", "start_line": 9, "end_line": 11}
        ])
    );
    let python = &snapshot["files"][2]["symbols"];
    assert_eq!(python[1]["kind"], "method");
    assert_eq!(python[1]["parent"], "Tool");
    assert_eq!(snapshot["counts"]["symbols"], 8);

    let again = ok(&mut server, "code_snapshot", json!({}));
    assert_eq!(snapshot, again, "two snapshots of one tree are equal");

    let full = ok(
        &mut server,
        "code_snapshot",
        json!({"detail": "full", "languages": ["rust"]}),
    );
    assert_eq!(full["files"][0]["symbols"][0]["doc"], "Adds.");

    // save_to stores at a commit: a tree that is no checkout is refused, naming the argument.
    let result = server.call("code_snapshot", json!({"save_to": "CORE/core-mcp"}));
    assert!(is_error(&result), "{result}");
    assert!(
        text(&result).contains("argument \"save_to\"")
            && text(&result).contains("not inside a git checkout"),
        "{result}"
    );
}

#[test]
fn path_arguments_cannot_leave_the_root() {
    let top = tree();
    let (_dir, mut server) = server(&top);
    let outside = top.path().join("outside");
    let absolute = outside.to_string_lossy().into_owned();
    let escapes = [
        ("../outside", "\"..\" is not allowed"),
        ("src/../../outside", "\"..\" is not allowed"),
        (absolute.as_str(), "an absolute path outside the roots"),
        ("out", "leads outside the roots"),
        ("out/secret.txt", "leads outside the roots"),
        ("loop1", "a symlink loop"),
    ];
    for tool in ["files_search", "files_list", "code_snapshot"] {
        for (path, needle) in escapes {
            let mut args = json!({"path": path});
            if tool == "files_search" {
                args["pattern"] = json!("needle");
            }
            let result = server.call(tool, args);
            assert!(is_error(&result), "{tool} {path}: {result}");
            assert!(text(&result).contains(needle), "{tool} {path}: {result}");
            assert!(!text(&result).contains("secret outside"), "{tool} {path}");
        }
    }
    // Walks from inside never follow the symlinks out.
    let found = ok(
        &mut server,
        "files_search",
        json!({"pattern": "secret", "include_hidden": true}),
    );
    assert_eq!(found["matches"], json!([]));
    let listing = ok(
        &mut server,
        "files_list",
        json!({"depth": 6, "include_hidden": true}),
    );
    assert!(
        listing["entries"]
            .as_array()
            .expect("entries")
            .iter()
            .all(|e| !e["path"].as_str().unwrap_or("").starts_with("out/")),
        "{listing}"
    );
    let snapshot = ok(&mut server, "code_snapshot", json!({}));
    assert!(!snapshot.to_string().contains("evil"), "{snapshot}");
    assert!(Path::new(&root_of(&top)).join("out").exists());
}

#[test]
fn a_huge_pattern_is_refused_at_once_with_bounded_memory() {
    let top = tree();
    let (_dir, mut server) = server(&top);
    let huge = "needle ".repeat(8_000_000 / 7);
    let started = std::time::Instant::now();
    for literal in [true, true, false, false] {
        let result = server.call("files_search", json!({"pattern": huge, "literal": literal}));
        assert!(
            is_error(&result),
            "{}",
            &text(&result)[..200.min(text(&result).len())]
        );
        let kind = if literal { "literal text" } else { "regex" };
        assert!(
            text(&result).contains(&format!(
                "argument \"pattern\" ({kind}) is {} characters; the most searched is 10000",
                huge.len()
            )),
            "{}",
            text(&result)
        );
    }
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    let peak_mb = server.memory_kb("VmHWM") / 1024;
    assert!(peak_mb < 400, "peak RSS {peak_mb} MB");

    // A short regex that would compile into a huge automaton is refused by the size limit.
    let result = server.call(
        "files_search",
        json!({"pattern": "\\w{200}\\w{200}\\w{200}"}),
    );
    assert!(is_error(&result), "{result}");
    assert!(
        text(&result).contains("argument \"pattern\" (regex) is too large to search"),
        "{result}"
    );
    // A literal is never called a regex.
    let long_literal = "x(".repeat(4_000);
    let found = ok(
        &mut server,
        "files_search",
        json!({"pattern": long_literal, "literal": true}),
    );
    assert_eq!(found["counts"]["matches"], 0);
    let bad = server.call("files_search", json!({"pattern": "x("}));
    assert!(text(&bad).contains("is not a valid regex"), "{bad}");
}
