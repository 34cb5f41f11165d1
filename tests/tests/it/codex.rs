//! A Codex session: Codex keeps only the start and the end of an answer longer than about
//! 12 000 characters, so Core MCP gives a client that introduces itself as `codex-mcp-client`
//! a result budget of 10 000. These tests drive each group the way its agent would, with data
//! ten times a page, and hold every answer to that budget (the harness checks each one,
//! `Server::budget`) while every continuation still reaches every item and every character.

use coremcp_tests::stores::on_both;
use coremcp_tests::{plugins, text, Server, TempDir, CODEX_RESULT_CHARS};
use serde_json::{json, Value};

/// Text that costs more as JSON than it counts (quotes, backslashes, newlines) and holds
/// characters of more than one byte, `n` characters long.
fn awkward(seed: &str, n: usize) -> String {
    let unit = format!("{seed} \"quoted\" back\\slash é — ✓ 🦀\n");
    unit.chars().cycle().take(n).collect()
}

/// Every item of `field` over the pages of `tool`, following `next_cursor` to the end.
fn walk(s: &mut Server, tool: &str, mut args: Value, field: &str) -> Vec<Value> {
    let mut items = Vec::new();
    for _ in 0..1_000 {
        let page = s.ok(tool, args.clone());
        items.extend(page[field].as_array().expect(field).iter().cloned());
        match page.get("next_cursor") {
            Some(cursor) => args["cursor"] = cursor.clone(),
            None => return items,
        }
    }
    panic!("{tool}: no last page after 1 000");
}

/// The whole text `field` of a record, read from offset 0 by `<field>_next_offset`.
fn read_whole(s: &mut Server, tool: &str, mut args: Value, field: &str) -> (String, usize) {
    let mut whole = String::new();
    let next = format!("{field}_next_offset");
    for reads in 1..=1_000 {
        let record = s.ok(tool, args.clone());
        whole.push_str(record[field].as_str().expect(field));
        match record.get(&next) {
            Some(offset) => args["offset"] = offset.clone(),
            None => return (whole, reads),
        }
    }
    panic!("{tool}: {field} did not end after 1 000 reads");
}

/// A `coremcp stdio` on `env`'s store with `groups`, initialised as Codex.
fn codex(env: &coremcp_tests::stores::StoreEnv, plugins: &std::path::Path) -> Server {
    let mut s = env.with_args(|args| Server::start(plugins, args, &[]));
    let init = s.initialize_as("2025-06-18", "codex-mcp-client");
    assert_eq!(s.budget, CODEX_RESULT_CHARS);
    let instructions = init["instructions"].as_str().unwrap_or_default();
    assert!(
        instructions.contains("A result holds at most 10000 characters"),
        "{instructions}"
    );
    s
}

#[test]
fn a_codex_session_reads_every_note_node_and_item_whole_within_its_budget() {
    let groups = plugins(&["notepad", "seele", "scrolls"]);
    on_both("codex-stores", |env| {
        let mut s = codex(env, groups.path());

        // Notepad: 300 notes of 3 000 characters, listed with their values.
        let notes: Vec<Value> = (0..300)
            .map(|i| json!({"key": format!("n{i:03}"), "value": awkward(&format!("note {i}"), 3_000)}))
            .collect();
        for chunk in notes.chunks(100) {
            s.ok(
                "notepad_bulk_set",
                json!({"scope": "global", "entries": chunk}),
            );
        }
        let listed = walk(
            &mut s,
            "notepad_list",
            json!({"scope": "global", "include_values": true, "limit": 200}),
            "items",
        );
        let keys: Vec<&str> = listed.iter().filter_map(|n| n["key"].as_str()).collect();
        let expected: Vec<String> = (0..300).map(|i| format!("n{i:03}")).collect();
        assert_eq!(keys, expected, "every note once, in key order");
        // A value of the largest size a note may hold (16 KiB) reads back whole by offset.
        let mut long = awkward("long note", 16_384);
        while long.len() > 16_384 {
            long.pop();
        }
        s.ok(
            "notepad_set",
            json!({"scope": "global", "key": "long", "value": long}),
        );
        let (value, reads) = read_whole(
            &mut s,
            "notepad_get",
            json!({"scope": "global", "key": "long"}),
            "value",
        );
        assert_eq!(value, long);
        assert!(reads >= 2, "{reads} reads");
        // A bulk change answers a count and a sample that fit.
        let cleaned = s.ok(
            "notepad_cleanup",
            json!({"scope": "global", "older_than_s": 0, "dry_run": true}),
        );
        assert_eq!(cleaned["deleted"], 301, "{cleaned}");

        // Seele: a node of 150 000 characters reads whole.
        let body = awkward("seele body", 150_000);
        let node = s.ok(
            "seele_write",
            json!({"path": "handbook/big", "title": "Big", "body": body}),
        );
        let id = node["id"].as_str().expect("id").to_owned();
        let (read, reads) = read_whole(&mut s, "seele_read", json!({"id": id}), "body");
        assert_eq!(read, body);
        assert!(reads >= 16, "{reads} reads");

        // Scrolls: a task with the longest description and 70 blockers.
        s.ok(
            "scrolls_project_create",
            json!({"key": "CORE", "title": "Core"}),
        );
        let mut blockers = Vec::new();
        for i in 0..70 {
            let task = s.ok(
                "scrolls_task_create",
                json!({"parent": "CORE", "title": format!("blocker {i}")}),
            );
            blockers.push(task["key"].as_str().expect("key").to_owned());
        }
        let description = awkward("task", 20_000);
        let task = s.ok(
            "scrolls_task_create",
            json!({"parent": "CORE", "title": "the one", "description": description,
                   "depends_on": blockers}),
        );
        let key = task["key"].as_str().expect("key").to_owned();
        let first = s.ok("scrolls_task_get", json!({"id": key}));
        let deps = first["depends_on"].as_array().expect("depends_on");
        assert_eq!(deps.len(), 70, "the blockers whole beside the description");
        let (read, reads) = read_whole(
            &mut s,
            "scrolls_task_get",
            json!({"id": key}),
            "description",
        );
        assert_eq!(read, description);
        assert!(reads >= 3, "{reads} reads");
        let listed = walk(
            &mut s,
            "scrolls_task_list",
            json!({"project": "CORE", "limit": 200}),
            "items",
        );
        assert_eq!(listed.len(), 71, "every task once");
    });
}

/// A Codex session's files and git answers: a tree and a search of 1 500 entries walked by
/// cursor, and a commit whose patch is five pages read whole by offset.
#[test]
fn a_codex_session_walks_files_and_reads_a_large_commit_within_its_budget() {
    let work = TempDir::new("codex-files");
    let root = work.path().join("root");
    let tree = root.join("tree");
    for i in 0..1_500 {
        let dir = tree.join(format!("folder-{:02}", i % 30));
        std::fs::create_dir_all(&dir).expect("mkdir");
        std::fs::write(
            dir.join(format!("file-{i:04}-{}.txt", "n".repeat(40))),
            format!("needle {i}\n"),
        )
        .expect("write");
    }
    let repo = root.join("repo");
    std::fs::create_dir_all(&repo).expect("mkdir repo");
    let config = work.path().join("gitconfig");
    std::fs::write(
        &config,
        "[init]\n\tdefaultBranch = main\n[user]\n\tname = T\n\temail = t@example.com\n",
    )
    .expect("gitconfig");
    let config = config.to_str().expect("utf-8").to_owned();
    let git = |args: &[&str]| {
        #[allow(clippy::disallowed_methods)] // Tests start the real tools directly.
        let out = std::process::Command::new("git")
            .current_dir(&repo)
            .args(args)
            .env("GIT_CONFIG_GLOBAL", &config)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .expect("git");
        assert!(out.status.success(), "git {args:?}");
        String::from_utf8(out.stdout).expect("utf-8")
    };
    git(&["init", "-q"]);
    std::fs::write(repo.join("a.txt"), "start\n").expect("write");
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "start"]);
    let lines: String = (0..1_500)
        .map(|i| format!("line {i:04} {}\n", awkward("patch", 40).replace('\n', " ")))
        .collect();
    std::fs::write(repo.join("a.txt"), &lines).expect("write");
    git(&["commit", "-q", "-am", "large"]);

    let groups = plugins(&["files", "git"]);
    let mut s = Server::start(
        groups.path(),
        &["--root", root.to_str().expect("utf-8")],
        &[("GIT_CONFIG_GLOBAL", &config), ("GIT_CONFIG_NOSYSTEM", "1")],
    );
    s.initialize_as("2025-06-18", "codex-mcp-client");

    let files = walk(
        &mut s,
        "files_list",
        json!({"path": tree.to_str().expect("utf-8"), "depth": 2, "max_entries": 10_000}),
        "entries",
    );
    assert_eq!(files.len(), 1_530, "30 folders and 1 500 files, each once");
    let found = walk(
        &mut s,
        "files_search",
        json!({"pattern": "needle", "path": tree.to_str().expect("utf-8"), "max_results": 2_000}),
        "matches",
    );
    assert_eq!(found.len(), 1_500, "every match once");

    let (patch, reads) = read_whole(
        &mut s,
        "git_show",
        json!({"repo_path": "repo", "revision": "HEAD"}),
        "text",
    );
    let first = s.call("git_show", json!({"repo_path": "repo", "revision": "HEAD"}));
    let shown = text(&first).chars().count();
    assert!(shown > 8_000, "a page uses the budget: {shown}");
    assert!(
        reads >= 8,
        "{reads} reads of {} characters",
        patch.chars().count()
    );
    for i in [0, 777, 1_499] {
        assert!(patch.contains(&format!("+line {i:04} ")), "line {i} read");
    }
}

/// Claude Code is told how long each tool's results may be (`anthropic/maxResultSizeChars`,
/// the session's budget), no other client carries the key, and an operator's budget
/// (`--result-budget`, `COREMCP_RESULT_BUDGET`) is every session's.
#[test]
fn claude_code_is_told_each_tools_result_size_and_an_operator_sets_the_budget() {
    const KEY: &str = "anthropic/maxResultSizeChars";
    let groups = plugins(&["notepad", "seele"]);
    let sizes = |s: &mut Server| -> Vec<Value> {
        let list = s.request("tools/list", json!({}));
        let tools = list["result"]["tools"].as_array().expect("tools").clone();
        assert!(tools.len() >= 10, "{}", tools.len());
        tools.iter().map(|t| t["_meta"][KEY].clone()).collect()
    };
    let mut claude = Server::start(groups.path(), &[], &[]);
    claude.initialize_as("2025-06-18", "claude-code");
    assert!(sizes(&mut claude).iter().all(|v| *v == 20_000));
    let mut codex = Server::start(groups.path(), &[], &[]);
    codex.initialize_as("2025-06-18", "codex-mcp-client");
    assert!(
        sizes(&mut codex).iter().all(Value::is_null),
        "only Claude Code reads it"
    );

    // The operator's budget wins for every client, and the answers keep to it.
    let data = TempDir::new("codex-flagged");
    let data = data.path().to_str().expect("utf-8").to_owned();
    let mut flagged = Server::start(
        groups.path(),
        &["--data", &data, "--result-budget", "8000"],
        &[],
    );
    let init = flagged.initialize_as("2025-06-18", "claude-code");
    flagged.budget = 8_000;
    assert!(init["instructions"]
        .as_str()
        .unwrap_or_default()
        .contains("at most 8000 characters"));
    assert!(sizes(&mut flagged).iter().all(|v| *v == 8_000));
    let body = awkward("flagged", 30_000);
    let node = flagged.ok(
        "seele_write",
        json!({"path": "a/b", "title": "B", "body": body}),
    );
    let (read, reads) = read_whole(
        &mut flagged,
        "seele_read",
        json!({"id": node["id"]}),
        "body",
    );
    assert_eq!(read, body);
    assert!(reads >= 4, "{reads}");
    let mut by_env = Server::start(groups.path(), &[], &[("COREMCP_RESULT_BUDGET", "12000")]);
    let init = by_env.initialize_as("2025-06-18", "codex-mcp-client");
    assert!(init["instructions"]
        .as_str()
        .unwrap_or_default()
        .contains("at most 12000 characters"));

    // A budget outside its bounds is refused at start, naming the flag and the bounds.
    for bad in ["100", "25000", "lots"] {
        let (code, _, stderr) = coremcp_tests::run(&["--result-budget", bad, "stdio"], &[]);
        assert_eq!(code, 2, "{bad}: {stderr}");
        assert!(
            stderr.contains("--result-budget") && stderr.contains("from 4000 to 20000"),
            "{stderr}"
        );
    }
}
