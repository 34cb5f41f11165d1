//! One result contract for every tool (ARCHITECTURE.md, "One result contract"), through the
//! real binary with the largest realistic data each group holds: every answer parses, fits
//! the 20 000 characters with its `structuredContent` (the harness checks each call), the
//! continuation each tool offers — `next_cursor`, an `offset`, a comment's `body_cursor`, the
//! query's own `OFFSET`, `save_to` — reaches all of the data exactly once, and the host's
//! guard never fires (`coremcp_oversized_results_total` stays absent from `/metrics`). The
//! store groups run on SQLite and on PostgreSQL. A session on SQLite is Codex's, whose budget
//! is 10 000 characters, and one on PostgreSQL another client's, with the full 20 000: a run
//! with PostgreSQL holds every tool to both budgets, and one without to the tighter.

use std::net::SocketAddr;
use std::path::Path;

use coremcp_tests::http::request;
use coremcp_tests::stores::{on_both, Backend, StoreEnv};
use coremcp_tests::{plugins, Server, TempDir};
use serde_json::{json, Value};

/// A text of `n` characters that costs more than `n` in JSON (quotes, backslashes and line
/// breaks are escaped), with a position mark every 100 characters so a piece out of place
/// shows.
fn escaped_text(n: usize) -> String {
    let mut out = String::with_capacity(n);
    let mut i = 0;
    while out.chars().count() < n {
        let chunk = format!("[{i:06}] \"quoted\" back\\slash\nrelay é ");
        out.push_str(&chunk);
        i += 1;
    }
    out.chars().take(n).collect()
}

/// A server on `env`'s store with a status listener, and that listener's address; its client
/// is Codex on SQLite.
fn start(env: &StoreEnv, dir: &Path, extra: &[&str]) -> (Server, SocketAddr) {
    let mut server = env.with_args(|store| {
        let mut args = store.to_vec();
        args.extend_from_slice(&["--status-listen", "127.0.0.1:0"]);
        args.extend_from_slice(extra);
        Server::start(dir, &args, &[])
    });
    match env.backend {
        Backend::Sqlite => server.initialize_as("2025-06-18", "codex-mcp-client"),
        Backend::Postgres => server.initialize(),
    };
    let addr = crate::status::address_of(env.data.path(), server.pid());
    (server, addr)
}

/// The host's guard never fired in the process behind `addr`.
fn no_defects(addr: SocketAddr) {
    let metrics = request(addr, "GET", "/metrics", &[], b"").text();
    assert!(
        !metrics.contains("coremcp_oversized_results_total{"),
        "a built-in tool answered more than a result may hold:\n{}",
        metrics
            .lines()
            .filter(|l| l.contains("oversized"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// Every item of `list` over all pages of `tool`, following `next_cursor`; each page is
/// non-empty while more remain.
fn follow(s: &mut Server, tool: &str, mut args: Value, list: &str) -> Vec<Value> {
    let mut all = Vec::new();
    for _ in 0..10_000 {
        let page = s.ok(tool, args.clone());
        let items = page[list].as_array().cloned().unwrap_or_default();
        match page.get("next_cursor") {
            Some(cursor) => {
                assert!(!items.is_empty(), "{tool}: an empty page with a cursor");
                all.extend(items);
                args["cursor"] = cursor.clone();
            }
            None => {
                all.extend(items);
                return all;
            }
        }
    }
    panic!("{tool}: the cursors never ended");
}

/// The whole of text `field` of the record `tool` answers, read on with `offset` from each
/// answer's `<field>_next_offset`; checks `<field>_total_chars` on the way.
fn read_whole(s: &mut Server, tool: &str, args: Value, field: &str) -> String {
    let mut whole = String::new();
    let mut args = args;
    for _ in 0..1_000 {
        let answer = s.ok(tool, args.clone());
        whole.push_str(answer[field].as_str().expect("text field"));
        match answer[format!("{field}_next_offset")].as_u64() {
            Some(next) => {
                assert_eq!(answer[format!("{field}_truncated")], true);
                assert_eq!(
                    next as usize,
                    whole.chars().count(),
                    "{tool}: offsets line up"
                );
                args["offset"] = next.into();
            }
            None => return whole,
        }
    }
    panic!("{tool}: the offsets never ended");
}

fn keys(items: &[Value]) -> Vec<String> {
    let mut keys: Vec<String> = items
        .iter()
        .map(|i| i["key"].as_str().expect("key").to_owned())
        .collect();
    keys.sort();
    keys
}

#[test]
fn scrolls_answers_fit_and_reach_everything_on_both_stores() {
    let dir = plugins(&["scrolls"]);
    on_both("contract-scrolls", |env| {
        let (mut s, addr) = start(env, dir.path(), &[]);
        s.ok(
            "scrolls_project_create",
            json!({"key": "CONTRACTS", "title": "Contracts"}),
        );
        let epic = s.ok(
            "scrolls_epic_create",
            json!({"project": "CONTRACTS", "title": "Failover"}),
        );
        let epic = epic["key"].as_str().expect("key").to_owned();

        // A story with every long text at its limit: create, list, update and claim answer
        // whole documents, and get reads the description whole with offset.
        let description = escaped_text(20_000);
        let criteria: Vec<String> = (0..8)
            .map(|i| format!("{i}: {}", "c".repeat(990)))
            .collect();
        let story = s.ok(
            "scrolls_story_create",
            json!({"parent": epic, "title": "t".repeat(200), "description": description,
                   "acceptance_criteria": criteria}),
        );
        let key = story["key"].as_str().expect("key").to_owned();
        assert_eq!(story["description_truncated"], true);
        assert_eq!(story["description_total_chars"], 20_000);
        // Whole, or — in a Codex session, where eight criteria of 1 000 characters leave the
        // description too little — the first of them, the rest counted.
        let shown = story["acceptance_criteria"].as_array().expect("criteria");
        assert_eq!(
            shown[..],
            criteria.iter().map(|c| json!(c)).collect::<Vec<_>>()[..shown.len()]
        );
        let omitted = story["acceptance_criteria_omitted"].as_u64().unwrap_or(0) as usize;
        assert_eq!(shown.len() + omitted, criteria.len());
        assert!(omitted == 0 || s.budget < coremcp_tests::MAX_RESULT_CHARS);
        let whole = read_whole(
            &mut s,
            "scrolls_story_get",
            json!({"id": key, "include_comments": true}),
            "description",
        );
        assert_eq!(whole, description);
        let refused = s.refused(
            "scrolls_story_update",
            json!({"id": key, "acceptance_criteria": ["x".repeat(9000)]}),
        );
        assert!(refused.contains("\"acceptance_criteria\""), "{refused}");
        let listed = s.ok("scrolls_story_list", json!({"epic": epic, "limit": 1}));
        assert_eq!(listed["items"][0]["description_truncated"], true);
        assert_eq!(listed["items"][0]["description_total_chars"], 20_000);
        s.ok(
            "scrolls_story_update",
            json!({"id": key, "title": "Fail over"}),
        );

        // Comments at their limit: a list shows each body's start, and its body_cursor reads
        // the rest of that body.
        let bodies: Vec<String> = (0..3)
            .map(|i| format!("{i}{}", escaped_text(19_999)))
            .collect();
        for body in &bodies {
            s.ok("scrolls_comment_add", json!({"id": key, "body": body}));
        }
        let comments = s.ok("scrolls_comment_list", json!({"id": key}));
        let listed = comments["items"].as_array().expect("items");
        assert_eq!(listed.len(), 3);
        for comment in listed {
            assert_eq!(comment["body_truncated"], true);
            let mut body = comment["body"].as_str().expect("body").to_owned();
            let mut cursor = comment["body_cursor"].clone();
            while cursor.is_string() {
                let piece = s.ok("scrolls_comment_list", json!({"id": key, "cursor": cursor}));
                body.push_str(piece["items"][0]["body"].as_str().expect("piece"));
                cursor = piece["items"][0]["body_cursor"].clone();
            }
            assert!(
                bodies.contains(&body),
                "a body read whole equals what was written"
            );
        }
        s.ok(
            "scrolls_story_get",
            json!({"id": key, "include_comments": true}),
        );

        // An agent with a long description and 150 open items; 150 stories that say relay.
        s.ok(
            "scrolls_agent_register",
            json!({"name": "ada", "description": escaped_text(20_000)}),
        );
        for i in 0..150 {
            s.ok(
                "scrolls_story_create",
                json!({"parent": epic, "assignee": "ada",
                       "title": format!("relay {i} {}", "w".repeat(180))}),
            );
        }
        let agent = s.ok("scrolls_agent_get", json!({"name": "ada"}));
        assert_eq!(agent["work_total"], 150);
        let shown = agent["work"].as_array().map_or(0, Vec::len);
        assert_eq!(agent["work_omitted"], 150 - shown);
        let whole = read_whole(
            &mut s,
            "scrolls_agent_get",
            json!({"name": "ada"}),
            "description",
        );
        assert_eq!(whole, escaped_text(20_000));
        s.ok("scrolls_agent_list", json!({"limit": 200}));
        s.ok(
            "scrolls_agent_update",
            json!({"name": "ada", "description": escaped_text(20_000)}),
        );

        let found = follow(
            &mut s,
            "scrolls_search",
            json!({"query": "relay", "limit": 100}),
            "items",
        );
        assert_eq!(
            found.len(),
            151,
            "every match once (the long story says relay too)"
        );
        let mut unique = keys(&found);
        unique.dedup();
        assert_eq!(unique.len(), 151);
        let ready = follow(
            &mut s,
            "scrolls_ready_list",
            json!({"agent": "ada", "limit": 100}),
            "items",
        );
        assert_eq!(ready.len(), 151);
        let stories = follow(
            &mut s,
            "scrolls_story_list",
            json!({"epic": epic, "limit": 200}),
            "items",
        );
        assert_eq!(stories.len(), 151);
        let board = s.ok(
            "scrolls_board_get",
            json!({"scope": "CONTRACTS", "limit_per_column": 200}),
        );
        assert_eq!(board["truncated"], true);
        let open = board["columns"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["status"] == "open"))
            .expect("the open column");
        assert_eq!(open["count"], 151);
        assert!(open["shown"].as_u64().is_some_and(|n| n < 151));
        s.ok("scrolls_progress_get", json!({"id": "CONTRACTS"}));
        s.ok(
            "scrolls_epic_get",
            json!({"id": epic, "include_children": true, "depth": 3}),
        );

        // Every level's six tools with the longest description each takes, a move, and an
        // agent's delete.
        level_walk(&mut s);

        // A cascade over 1 300 items answers a count and a sample; the activity log holds the
        // rest.
        let big = s.ok(
            "scrolls_epic_create",
            json!({"project": "CONTRACTS", "title": "Big"}),
        );
        let big = big["key"].as_str().expect("key").to_owned();
        for _ in 0..1_299 {
            s.ok(
                "scrolls_story_create",
                json!({"parent": big, "title": "small"}),
            );
        }
        let closed = s.ok("scrolls_epic_close", json!({"id": big, "cascade": true}));
        assert_eq!(closed["closed_count"], 1_300);
        assert_eq!(closed["closed"].as_array().map(Vec::len), Some(200));
        assert_eq!(closed["more"], 1_100);
        let log = follow(
            &mut s,
            "scrolls_activity_list",
            json!({"scope": big, "actions": ["closed"], "limit": 200}),
            "items",
        );
        assert_eq!(log.len(), 1_300, "the log holds every close");
        let deleted = s.ok("scrolls_epic_delete", json!({"id": big, "cascade": true}));
        assert_eq!(deleted["deleted_count"], 1_300);
        assert_eq!(deleted["more"], 1_100);
        no_defects(addr);
    });
}

/// Creates, lists, reads whole, updates, closes and deletes an item of each level, each with a
/// description at its limit.
fn level_walk(s: &mut Server) {
    let long = escaped_text(20_000);
    let key = |v: &Value| v["key"].as_str().expect("key").to_owned();
    s.ok(
        "scrolls_theme_create",
        json!({"key": "walk", "title": "Walk", "description": long}),
    );
    s.ok(
        "scrolls_project_create",
        json!({"key": "WALK", "theme": "walk", "title": "Walk", "description": long}),
    );
    let epic = key(&s.ok(
        "scrolls_epic_create",
        json!({"project": "WALK", "title": "e", "description": long}),
    ));
    let story = key(&s.ok(
        "scrolls_story_create",
        json!({"parent": epic, "title": "s", "description": long}),
    ));
    let task = key(&s.ok(
        "scrolls_task_create",
        json!({"parent": epic, "title": "t", "description": long}),
    ));
    let subtask = key(&s.ok(
        "scrolls_subtask_create",
        json!({"parent": story, "title": "u", "description": long}),
    ));
    let moved = s.ok(
        "scrolls_item_move",
        json!({"id": subtask, "new_parent": task}),
    );
    assert_eq!(moved["description_truncated"], true);
    let levels = [
        ("theme", "walk".to_owned(), json!({})),
        ("project", "WALK".to_owned(), json!({})),
        ("epic", epic, json!({"project": "WALK"})),
        ("story", story, json!({"project": "WALK"})),
        ("task", task.clone(), json!({"project": "WALK"})),
        ("subtask", subtask, json!({"parent": task})),
    ];
    // Lowest level first, so each close and delete finds nothing open under it.
    for (level, id, filter) in levels.iter().rev() {
        let whole = read_whole(
            s,
            &format!("scrolls_{level}_get"),
            json!({"id": id, "include_children": true, "depth": 3, "include_comments": true}),
            "description",
        );
        assert_eq!(whole, long, "{level}");
        let mut list = filter.clone();
        list["limit"] = 200.into();
        let listed = follow(s, &format!("scrolls_{level}_list"), list, "items");
        assert!(listed.iter().any(|i| i["key"] == *id), "{level}");
        let updated = s.ok(
            &format!("scrolls_{level}_update"),
            json!({"id": id, "description": escaped_text(19_999)}),
        );
        assert_eq!(updated["description_total_chars"], 19_999, "{level}");
        let closed = s.ok(&format!("scrolls_{level}_close"), json!({"id": id}));
        assert_eq!(closed["closed_count"], 1, "{level}");
        let deleted = s.ok(&format!("scrolls_{level}_delete"), json!({"id": id}));
        assert_eq!(deleted["deleted_count"], 1, "{level}");
    }
    s.ok(
        "scrolls_agent_register",
        json!({"name": "gone", "description": long}),
    );
    s.ok("scrolls_agent_delete", json!({"name": "gone"}));
}

#[test]
fn seele_answers_fit_and_reach_everything_on_both_stores() {
    let dir = plugins(&["seele"]);
    on_both("contract-seele", |env| {
        let (mut s, addr) = start(env, dir.path(), &[]);
        let body = escaped_text(200_000);
        let root = s.ok(
            "seele_write",
            json!({"path": "ops", "title": "Ops handbook", "body": body}),
        );
        for a in 0..15 {
            s.ok(
                "seele_write",
                json!({"path": format!("ops/area-{a:02}"), "title": format!("Area {a} {}", "t".repeat(150)), "body": "relay"}),
            );
            for b in 0..15 {
                s.ok(
                    "seele_write",
                    json!({"path": format!("ops/area-{a:02}/page-{b:02}"),
                           "title": format!("Page {b} {}", "t".repeat(150)), "body": "relay"}),
                );
            }
        }
        let read = s.ok(
            "seele_read",
            json!({"id": root["id"], "include_children": true, "depth": 2}),
        );
        assert_eq!(read["children_truncated"], true);
        assert_eq!(read["body_truncated"], true);
        let whole = read_whole(&mut s, "seele_read", json!({"path": "ops"}), "body");
        assert_eq!(whole, body);
        let found = follow(
            &mut s,
            "seele_search",
            json!({"query": "relay", "limit": 50}),
            "items",
        );
        assert_eq!(found.len(), 1 + 15 + 15 * 15, "every match once");
        let mut paths: Vec<&str> = found.iter().filter_map(|f| f["path"].as_str()).collect();
        paths.sort_unstable();
        paths.dedup();
        assert_eq!(paths.len(), found.len());
        no_defects(addr);
    });
}

/// A tree of 480 source files under `root`.
fn source_tree(root: &Path) {
    for d in 0..12 {
        for f in 0..40 {
            let path = root.join(format!("crate_{d:02}/src/module_{f:02}.rs"));
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            let mut text = String::new();
            for n in 0..6 {
                text.push_str(&format!(
                    "/// Item {n}.\npub fn item_{n}() -> u32 {{ {n} }}\n"
                ));
            }
            std::fs::write(path, text).expect("write");
        }
    }
}

#[test]
fn files_answers_fit_and_reach_everything() {
    let top = TempDir::new("contract-files");
    source_tree(top.path());
    let dir = plugins(&["files"]);
    let root = top.path().to_string_lossy().into_owned();
    let env = StoreEnv::new(coremcp_tests::stores::Backend::Sqlite, "contract-files");
    let (mut s, addr) = start(&env, dir.path(), &["--root", &root]);
    let matches = follow(
        &mut s,
        "files_search",
        json!({"pattern": "fn ", "max_results": 2000, "context_lines": 2}),
        "matches",
    );
    assert_eq!(matches.len(), 12 * 40 * 6, "every match once");
    let entries = follow(
        &mut s,
        "files_list",
        json!({"depth": 6, "max_entries": 10000}),
        "entries",
    );
    assert_eq!(entries.len(), 12 * 2 + 12 * 40, "every entry once");
    let snapshot = s.ok(
        "code_snapshot",
        json!({"max_files": 20000, "detail": "full"}),
    );
    assert_eq!(snapshot["counts"]["files"], 480);
    assert_eq!(snapshot["truncated"], true);
    assert!(snapshot["files_omitted"].as_u64().is_some_and(|n| n > 0));
    no_defects(addr);
}

#[test]
fn code_snapshot_saves_this_repository_to_the_registry_which_serves_it() {
    let dir = plugins(&["files", "registry"]);
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace")
        .to_string_lossy()
        .into_owned();
    let env = StoreEnv::new(coremcp_tests::stores::Backend::Sqlite, "contract-snapshot");
    let (mut s, addr) = start(&env, dir.path(), &["--root", &repo]);
    s.ok("registry_theme_add", json!({"key": "core", "name": "Core"}));
    s.ok(
        "registry_project_add",
        json!({"key": "CORE", "name": "Core", "theme": "core"}),
    );
    s.ok(
        "registry_source_add",
        json!({"project": "CORE", "name": "core-mcp", "kind": "git", "url": "https://example.invalid/core-mcp.git"}),
    );
    let inline = s.ok("code_snapshot", json!({"max_files": 20000}));
    assert_eq!(
        inline["truncated"], true,
        "this repository is larger than an answer"
    );
    let saved = s.ok(
        "code_snapshot",
        json!({"max_files": 20000, "save_to": "CORE/core-mcp"}),
    );
    let commit = saved["saved"]["commit"]
        .as_str()
        .expect("commit")
        .to_owned();
    assert_eq!(commit.len(), 40);
    assert_eq!(saved["counts"], inline["counts"]);
    let summary = s.ok(
        "registry_snapshot_get",
        json!({"source": "CORE/core-mcp", "commit": commit, "detail": "summary"}),
    );
    assert_eq!(summary["counts"]["files"], saved["counts"]["files"]);
    let one = s.ok(
        "registry_snapshot_get",
        json!({"source": "CORE/core-mcp", "paths": ["host/lib/wire/src/render.rs"], "detail": "full"}),
    );
    let files = one["files"].as_array().expect("files");
    assert_eq!(files.len(), 1);
    assert!(
        files[0]["symbols"]
            .as_array()
            .is_some_and(|s| s.iter().any(|s| s["name"] == "plugin_success")),
        "the stored snapshot holds this repository's symbols"
    );
    // Every file of the snapshot is reached once by the cursor, in path order.
    let total = saved["counts"]["files"].as_u64().expect("files") as usize;
    let mut walked: Vec<String> = Vec::new();
    let mut args = json!({"source": "CORE/core-mcp", "commit": commit});
    let mut first: Option<Value> = None;
    for asks in 0.. {
        assert!(asks < 200, "the walk goes on: {} of {total}", walked.len());
        let view = s.ok("registry_snapshot_get", args.clone());
        walked.extend(
            view["files"]
                .as_array()
                .expect("files")
                .iter()
                .map(|f| f["path"].as_str().expect("path").to_owned()),
        );
        let next = view.get("next_cursor").cloned();
        first.get_or_insert(view);
        match next {
            Some(cursor) => args["cursor"] = cursor,
            None => break,
        }
    }
    let mut sorted = walked.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted, walked, "each file once, in path order");
    // The folders the first answer names hold exactly the files it left out, and `paths`
    // with the cursor reaches each of them.
    let first = first.expect("a first answer");
    let by_folder = first["omitted_by_folder"].as_object().expect("folders");
    let mut named: std::collections::BTreeSet<String> = walked
        .iter()
        .take(first["files"].as_array().map_or(0, Vec::len))
        .cloned()
        .collect();
    for (folder, count) in by_folder {
        let mut args = json!({"source": "CORE/core-mcp", "commit": commit, "paths": [folder]});
        let mut inside = 0;
        loop {
            let view = s.ok("registry_snapshot_get", args.clone());
            for file in view["files"].as_array().expect("files") {
                named.insert(file["path"].as_str().expect("path").to_owned());
                inside += 1;
            }
            match view.get("next_cursor") {
                Some(cursor) => args["cursor"] = cursor.clone(),
                None => break,
            }
        }
        assert!(inside as u64 >= count.as_u64().unwrap_or(0), "{folder}");
    }
    if first.get("omitted_folders_more").is_none() {
        assert_eq!(named.len(), total, "the folders reach every file left out");
    }
    let named = walked;
    assert_eq!(named.len(), total, "every file of the snapshot named");
    no_defects(addr);
}

#[test]
fn sql_query_answers_the_rows_that_fit_and_pages_with_the_query() {
    let Some(url) =
        coremcp_tests::external("COREMCP_TEST_PG_SQL_URL", "it needs a PostgreSQL server")
    else {
        return;
    };
    let dir = plugins(&["files"]);
    let default = format!("default={url}");
    let env = StoreEnv::new(coremcp_tests::stores::Backend::Sqlite, "contract-sql");
    let (mut s, addr) = start(&env, dir.path(), &["--sql", &default]);
    let query = |offset: usize| {
        format!(
            "SELECT n, repeat('x', 50) AS pad FROM generate_series(1, 5000) n ORDER BY n \
             LIMIT 5000 OFFSET {offset}"
        )
    };
    let mut seen = Vec::new();
    let mut offset = 0;
    loop {
        let page = s.ok("sql_query", json!({"sql": query(offset), "max_rows": 5000}));
        let rows = page["rows"].as_array().expect("rows");
        assert_eq!(page["row_count"], rows.len());
        seen.extend(rows.iter().map(|r| r["n"].as_i64().expect("n")));
        if page["truncated"] != true {
            break;
        }
        assert!(page["hint"].as_str().is_some_and(|h| h.contains("OFFSET")));
        offset += rows.len();
    }
    assert_eq!(seen, (1..=5000).collect::<Vec<i64>>(), "every row once");
    let long = s.ok(
        "sql_query",
        json!({"sql": "SELECT repeat('é', 100000) AS v, 1 AS k"}),
    );
    assert_eq!(long["cells_truncated"][0]["total_chars"], 100_000);
    assert_eq!(long["truncated"], false);
    no_defects(addr);
}

#[test]
fn publishing_output_too_large_is_cut_as_text_and_says_so() {
    let top = TempDir::new("contract-publish");
    let cli = top.path().join("cli.sh");
    std::fs::write(
        &cli,
        concat!(
            "#!/bin/sh\n",
            "printf '{\"packages\":['\n",
            "i=0\n",
            "while [ $i -lt 2000 ]; do\n",
            "  printf '{\"id\":%d,\"name\":\"package number %d\"},' $i $i\n",
            "  i=$((i+1))\n",
            "done\n",
            "printf '{\"id\":-1}]}'\n",
        ),
    )
    .expect("write the CLI");
    std::fs::set_permissions(&cli, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let dir = plugins(&["publishing"]);
    let root = top.path().to_string_lossy().into_owned();
    let cmd = cli.to_string_lossy().into_owned();
    let env = StoreEnv::new(coremcp_tests::stores::Backend::Sqlite, "contract-publish");
    let mut server = Server::start(
        dir.path(),
        &[
            "--root",
            &root,
            "--data",
            &env.data.path().to_string_lossy(),
            "--status-listen",
            "127.0.0.1:0",
        ],
        &[("COREMCP_PUBLISH_CMD", &cmd)],
    );
    server.initialize();
    let addr = crate::status::address_of(env.data.path(), server.pid());
    let answer = server.ok("publishing", json!({"args": ["list"]}));
    assert_eq!(answer["truncated"], true);
    assert!(answer["total_chars"].as_u64().is_some_and(|n| n > 50_000));
    assert!(answer["text"]
        .as_str()
        .is_some_and(|t| t.starts_with("{\"packages\":[") && t.contains("…[truncated at ")));
    no_defects(addr);
}

#[test]
fn notepad_and_session_answers_fit_on_both_stores() {
    let dir = plugins(&["notepad", "session"]);
    on_both("contract-notes", |env| {
        let (mut s, addr) = start(env, dir.path(), &[]);
        // A value at its 16 KiB limit that escapes to more than an answer holds (stored JSON).
        let value: String = (0..4096).map(|_| "\"a\":").collect();
        assert_eq!(value.len(), 16 * 1024);
        s.ok(
            "notepad_set",
            json!({"scope": "global", "key": "state", "value": value}),
        );
        let whole = read_whole(
            &mut s,
            "notepad_get",
            json!({"scope": "global", "key": "state"}),
            "value",
        );
        assert_eq!(whole, value);
        let entries: Vec<Value> = (0..200)
            .map(|i| json!({"key": format!("k{i:03}"), "value": value}))
            .collect();
        s.ok(
            "notepad_bulk_set",
            json!({"scope": "global", "entries": entries}),
        );
        let listed = follow(
            &mut s,
            "notepad_list",
            json!({"scope": "global", "include_values": true, "limit": 200}),
            "items",
        );
        assert_eq!(listed.len(), 201);
        s.ok(
            "notepad_cleanup",
            json!({"scope": "global", "dry_run": true}),
        );
        s.ok("notepad_delete", json!({"scope": "global", "key": "state"}));

        let metadata: serde_json::Map<String, Value> = (0..50)
            .map(|i| (format!("m{i:03}"), Value::String("\"".repeat(150))))
            .collect();
        let mut ids = Vec::new();
        for i in 0..30 {
            let session = s.ok(
                "session_register",
                json!({"agent": format!("agent-{i}"), "cwd": "c".repeat(4096),
                       "repo": "r".repeat(1000), "metadata": metadata}),
            );
            ids.push(session["session_id"].as_str().expect("id").to_owned());
        }
        let active = follow(
            &mut s,
            "session_list_active",
            json!({"limit": 200}),
            "items",
        );
        assert_eq!(active.len(), 30);
        s.ok(
            "session_heartbeat",
            json!({"session_id": ids[0], "note": "n".repeat(200)}),
        );
        s.ok(
            "session_close",
            json!({"session_id": ids[0], "summary": escaped_text(20_000)}),
        );
        let got = s.ok("session_get", json!({"session_id": ids[0]}));
        assert_eq!(got["session_id"], ids[0].as_str());
        assert_eq!(got["summary_truncated"], true);
        let whole = read_whole(
            &mut s,
            "session_get",
            json!({"session_id": ids[0]}),
            "summary",
        );
        assert_eq!(whole, escaped_text(20_000));
        s.ok(
            "session_close_stale",
            json!({"older_than_s": 0, "dry_run": true}),
        );
        s.ok("session_list_recorded", json!({"limit": 200}));
        no_defects(addr);
    });
}

/// Runs `git ARGS` in `dir`, which must succeed.
fn git(dir: &Path, args: &[&str]) {
    #[allow(clippy::disallowed_methods)] // Test set-up runs git directly.
    let out = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn local_tools_answer_escape_heavy_output_whole() {
    let top = TempDir::new("contract-local");
    let root = top.path().join("root");
    let docs = top.path().join("handbook");
    std::fs::create_dir_all(&root).expect("mkdir");
    std::fs::create_dir_all(&docs).expect("mkdir");
    // Quotes, backslashes and control characters cost two to six characters each in JSON.
    let nasty: String = (0..20_000)
        .map(|i| ['"', '\\', '\u{1}', '\n'][i % 4])
        .collect();
    std::fs::write(docs.join("big.md"), format!("# Big\n\n{nasty}")).expect("write doc");
    git(&root, &["init", "-q", "-b", "main"]);
    for i in 0..3 {
        std::fs::write(root.join(format!("f{i}.txt")), &nasty).expect("write");
    }
    git(&root, &["add", "."]);
    git(
        &root,
        &[
            "commit",
            "-q",
            "-m",
            &format!("big \"{}\"", "q\"".repeat(2000)),
        ],
    );
    for i in 0..3 {
        std::fs::write(root.join(format!("f{i}.txt")), nasty.replace('"', "'")).expect("write");
    }
    let dir = plugins(&["docs", "ops", "git"]);
    let env = StoreEnv::new(coremcp_tests::stores::Backend::Sqlite, "contract-local");
    let (root_arg, docs_arg) = (
        root.to_string_lossy().into_owned(),
        docs.to_string_lossy().into_owned(),
    );
    let (mut s, addr) = start(
        &env,
        dir.path(),
        &["--root", &root_arg, "--docs", &docs_arg],
    );
    s.ok("docs_read", json!({"path": "big.md"}));
    s.ok(
        "shell_run",
        json!({"script": "cat f0.txt f1.txt f2.txt; cat f0.txt >&2"}),
    );
    s.ok("git_diff", json!({}));
    s.ok("git_status", json!({}));
    s.ok("git_log", json!({"max_count": 50}));
    s.ok("git_show", json!({"revision": "HEAD"}));
    s.ok("core_status", json!({}));
    no_defects(addr);
}

#[test]
fn docker_answers_fit_with_escape_heavy_logs_and_labels() {
    let Some(d) = coremcp_tests::docker::daemon() else {
        return;
    };
    let name = format!("cm-contract-{}", std::process::id());
    let _cleanup = coremcp_tests::docker::Cleanup::new(&d, &[&name]);
    // Quotes, backslashes and control characters in every line, and labels at length.
    let labels: Vec<String> = (0..40)
        .map(|i| format!("--label=l{i}={}", "\"".repeat(200)))
        .collect();
    let labels: Vec<&str> = labels.iter().map(String::as_str).collect();
    d.run(
        &name,
        &labels,
        "i=0; while [ $i -lt 4000 ]; do printf '\"q\" \\\\ \\001\\002 %d\\n' $i; printf 'e\"\\001 %d\\n' $i >&2; i=$((i+1)); done; sleep 600",
    );
    d.wait_state(&name, "running");
    let dir = plugins(&["docker"]);
    let env = StoreEnv::new(coremcp_tests::stores::Backend::Sqlite, "contract-docker");
    let (mut s, addr) = {
        let mut args = env.args();
        args.extend(["--status-listen".to_owned(), "127.0.0.1:0".to_owned()]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut server = Server::start(dir.path(), &args, &[("DOCKER_HOST", d.host.as_str())]);
        server.initialize();
        let addr = crate::status::address_of(env.data.path(), server.pid());
        (server, addr)
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let logs = s.ok(
            "docker_container_logs",
            json!({"container": name, "tail": 5000}),
        );
        let lines = |stream: &str| logs[stream].as_u64().unwrap_or(0);
        if lines("stdout_lines") + lines("stderr_lines") >= 5000 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the logs never reached 5000 lines"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    s.ok("docker_container_inspect", json!({"container": name}));
    s.ok("docker_container_list", json!({"all": true}));
    no_defects(addr);
}

#[test]
fn registry_answers_fit_with_every_field_at_its_limit_on_both_stores() {
    let dir = plugins(&["registry"]);
    on_both("contract-registry", |env| {
        let (mut s, addr) = start(env, dir.path(), &[]);
        // Every character of it escapes to two.
        let description = "\"".repeat(4_000);
        s.ok(
            "registry_theme_add",
            json!({"key": "core", "name": "n".repeat(200), "description": description}),
        );
        s.ok(
            "registry_project_add",
            json!({"key": "CORE", "name": "n".repeat(200), "theme": "core", "description": description}),
        );
        // Metadata at its 8 000 characters of JSON, escapes included.
        let metadata: serde_json::Map<String, Value> = (0..25)
            .map(|i| (format!("k{i:02}"), Value::String("\"".repeat(150))))
            .collect();
        for i in 0..30 {
            s.ok(
                "registry_source_add",
                json!({"project": "CORE", "name": format!("source-{i:02}"), "kind": "git",
                       "url": format!("https://example.invalid/{}", "u".repeat(1_900)),
                       "default_branch": "b".repeat(255), "description": description,
                       "metadata": metadata}),
            );
            s.ok(
                "registry_host_add",
                json!({"name": format!("host-{i:02}"), "address": "10.0.0.1",
                       "core_mcp_url": format!("https://h.example.invalid/{}", "p".repeat(1_900)),
                       "docker_endpoint": format!("tcp://d.example.invalid:2376/{}", "d".repeat(1_900)),
                       "description": description}),
            );
        }
        // One source checked out on every host, each path at its limit.
        for i in 0..30 {
            s.ok(
                "registry_source_update",
                json!({"source": "CORE/source-00", "checkout_host": format!("host-{i:02}"),
                       "checkout_path": format!("/{i:02}{}", "c".repeat(4_000)),
                       "description": description}),
            );
        }
        let sources = follow(
            &mut s,
            "registry_source_list",
            json!({"include_checkouts": true, "limit": 200}),
            "items",
        );
        assert_eq!(sources.len(), 30);
        let first = sources
            .iter()
            .find(|s| s["name"] == "source-00")
            .expect("source-00");
        let shown = first["checkouts"].as_array().map_or(0, Vec::len);
        // In a Codex session the source's metadata and URL alone take most of the 10 000
        // characters: its checkouts are all counted as omitted there.
        assert!(
            shown > 0 || s.budget < coremcp_tests::MAX_RESULT_CHARS,
            "the description yields to the checkouts asked for"
        );
        assert_eq!(first["description_truncated"], true);
        assert_eq!(first["checkouts_omitted"], 30 - shown);
        let plain = s.ok(
            "registry_source_list",
            json!({"project": "CORE", "limit": 1}),
        );
        // Whole without them — unless a Codex session's 10 000 characters cannot hold its
        // 8 000 characters of metadata beside it.
        if s.budget == coremcp_tests::MAX_RESULT_CHARS {
            assert_eq!(
                plain["items"][0]["description"], description,
                "shown whole without them"
            );
        }
        let projects = follow(
            &mut s,
            "registry_project_list",
            json!({"include_sources": true, "limit": 200}),
            "items",
        );
        assert_eq!(projects.len(), 1);
        let hosts = follow(&mut s, "registry_host_list", json!({"limit": 200}), "items");
        assert_eq!(hosts.len(), 30);
        s.ok("registry_theme_list", json!({}));
        s.ok(
            "registry_theme_update",
            json!({"key": "core", "description": description}),
        );
        s.ok(
            "registry_project_update",
            json!({"key": "CORE", "description": description}),
        );
        s.ok(
            "registry_host_update",
            json!({"name": "host-00", "description": description}),
        );
        no_defects(addr);
    });
}

#[test]
fn save_to_is_no_way_around_a_rule_that_takes_the_registry_write_away() {
    let dir = plugins(&["files", "registry"]);
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace")
        .to_string_lossy()
        .into_owned();
    let env = StoreEnv::new(
        coremcp_tests::stores::Backend::Sqlite,
        "contract-save-denied",
    );
    let (mut s, _) = start(
        &env,
        dir.path(),
        &["--root", &repo, "--grants", "stdio=!registry_snapshot_save"],
    );
    s.ok("registry_theme_add", json!({"key": "core", "name": "Core"}));
    s.ok(
        "registry_project_add",
        json!({"key": "CORE", "name": "Core", "theme": "core"}),
    );
    s.ok(
        "registry_source_add",
        json!({"project": "CORE", "name": "core-mcp", "kind": "git", "url": "https://example.invalid/core-mcp.git"}),
    );
    // The tool itself is refused, and so is reaching it through code_snapshot's save_to.
    let direct = s.refused(
        "registry_snapshot_save",
        json!({"source": "CORE/core-mcp", "commit": "0".repeat(40), "snapshot": {"files": []}}),
    );
    assert!(direct.contains("registry_snapshot_save"), "{direct}");
    let through = s.refused(
        "code_snapshot",
        json!({"path": "host/src", "save_to": "CORE/core-mcp"}),
    );
    assert!(
        through.contains("registry_snapshot_save is not granted"),
        "{through}"
    );
    let stored = s.refused("registry_snapshot_get", json!({"source": "CORE/core-mcp"}));
    assert!(
        stored.contains("not_found") || stored.contains("no snapshot"),
        "{stored}"
    );
}
