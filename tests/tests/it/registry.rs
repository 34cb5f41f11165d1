//! The Registry group through the real `coremcp` binary, on SQLite and on PostgreSQL alike:
//! every one of its 14 tools, with paging, filters, optimistic concurrency, duplicate keys,
//! every validation error naming its field, stored snapshots of real `code_snapshot` output,
//! and data that outlives the process.

use coremcp_tests::stores::on_both;
use coremcp_tests::{hints, is_error, plugins, text, Server, TempDir, WAIT};
use serde_json::{json, Value};

const TOOLS: [&str; 14] = [
    "registry_theme_list",
    "registry_theme_add",
    "registry_theme_update",
    "registry_project_list",
    "registry_project_add",
    "registry_project_update",
    "registry_source_list",
    "registry_source_add",
    "registry_source_update",
    "registry_host_list",
    "registry_host_add",
    "registry_host_update",
    "registry_snapshot_save",
    "registry_snapshot_get",
];

/// Calls a tool that must fail with `code`; returns the error text, which contains `needles`.
fn fails(server: &mut Server, tool: &str, args: Value, code: &str, needles: &[&str]) -> String {
    let result = server.call(tool, args.clone());
    assert!(is_error(&result), "{tool} {args} should fail: {result}");
    let message = text(&result).to_owned();
    assert!(
        message.contains(&format!("{tool} failed ({code})")),
        "{tool} {args}: expected {code}: {message}"
    );
    for needle in needles {
        assert!(
            message.contains(needle),
            "{tool} {args}: {needle:?} not in {message}"
        );
    }
    message
}

/// Every item of a list, following `next_cursor` with pages of `limit`; checks that no page
/// is larger than the limit and that a last page has no cursor.
fn all_pages(server: &mut Server, tool: &str, args: Value, limit: u64) -> (Vec<Value>, usize) {
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let mut call = args.clone();
        call["limit"] = json!(limit);
        if let Some(c) = &cursor {
            call["cursor"] = json!(c);
        }
        let page = server.ok(tool, call);
        pages += 1;
        let got = page["items"].as_array().expect("items").clone();
        assert!(got.len() as u64 <= limit, "{tool}: page larger than limit");
        items.extend(got);
        match page.get("next_cursor") {
            Some(next) => cursor = Some(next.as_str().expect("cursor text").to_owned()),
            None => return (items, pages),
        }
        assert!(pages < 100, "{tool}: endless paging");
    }
}

fn field<'a>(items: &'a [Value], name: &str) -> Vec<&'a str> {
    items
        .iter()
        .map(|i| i[name].as_str().unwrap_or_else(|| panic!("{name} in {i}")))
        .collect()
}

fn sorted_unique(names: &[&str]) -> bool {
    names.windows(2).all(|w| w[0] < w[1])
}

#[test]
fn the_fourteen_tools_are_listed_without_remote_host_and_with_their_annotations() {
    let dir = plugins(&["registry"]);
    let mut server = Server::start(dir.path(), &[], &[]);
    server.initialize();
    let listed = server.request("tools/list", json!({}))["result"]["tools"].clone();
    let ours: Vec<&Value> = listed
        .as_array()
        .expect("tools")
        .iter()
        .filter(|t| {
            t["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("registry_"))
        })
        .collect();
    let names: Vec<&str> = ours.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, TOOLS);
    for tool in ours {
        let name = tool["name"].as_str().expect("name");
        let schema = &tool["inputSchema"];
        assert_eq!(schema["type"], "object", "{name}");
        assert_eq!(schema["additionalProperties"], false, "{name}");
        assert!(schema["properties"].get("remote_host").is_none(), "{name}");
        let a = &hints(tool);
        assert_eq!(a["openWorldHint"], false, "{name}");
        let read_only = name.ends_with("_list") || name.ends_with("_get");
        assert_eq!(a["readOnlyHint"], read_only, "{name}");
        assert_eq!(
            a["idempotentHint"],
            read_only || name.ends_with("_update"),
            "{name}"
        );
        assert_eq!(
            a["destructiveHint"],
            name == "registry_snapshot_save",
            "{name}"
        );
    }
}

#[test]
fn themes_page_filter_patch_and_refuse_conflicts() {
    on_both("reg-themes", |env| {
        let dir = plugins(&["registry"]);
        let mut s = env.start(dir.path(), &[]);
        let names = [
            "Alpha Ops",
            "Beta",
            "Gamma Ops",
            "Delta",
            "Epsilon",
            "Zeta 50%",
            "Eta",
        ];
        for (i, name) in names.iter().enumerate() {
            let theme = s.ok(
                "registry_theme_add",
                json!({"key": format!("t{i:02}"), "name": name}),
            );
            assert_eq!(theme["version"], 1);
            assert_eq!(theme["status"], "active");
            assert!(
                theme.get("description").is_none(),
                "absent, not null: {theme}"
            );
        }
        let added = s.ok(
            "registry_theme_add",
            json!({"key": "reliability", "name": "Reliability", "description": "keeping it up"}),
        );
        assert_eq!(added["description"], "keeping it up");
        assert_eq!(added["created_at"], added["updated_at"]);

        // Paging: 8 themes in pages of 3, in key order, each once.
        let (items, pages) = all_pages(&mut s, "registry_theme_list", json!({}), 3);
        let keys = field(&items, "key");
        assert_eq!(pages, 3);
        assert_eq!(keys.len(), 8);
        assert!(sorted_unique(&keys), "{keys:?}");

        // Duplicate key.
        fails(
            &mut s,
            "registry_theme_add",
            json!({"key": "t01", "name": "Again"}),
            "conflict",
            &["theme \"t01\" already exists", "at version 1"],
        );

        // Patches: version bumps, expected_version, no-op, clearing.
        let v2 = s.ok(
            "registry_theme_update",
            json!({"key": "t01", "name": "Beta Two", "expected_version": 1}),
        );
        assert_eq!(
            (v2["version"].clone(), v2["name"].clone()),
            (json!(2), json!("Beta Two"))
        );
        assert_ne!(v2["updated_at"], v2["created_at"]);
        fails(
            &mut s,
            "registry_theme_update",
            json!({"key": "t01", "name": "Stale", "expected_version": 1}),
            "conflict",
            &["is at version 2", "expected_version 1"],
        );
        let same = s.ok(
            "registry_theme_update",
            json!({"key": "t01", "name": "Beta Two", "expected_version": 2}),
        );
        assert_eq!(same, v2, "a patch that changes nothing is a no-op");
        let cleared = s.ok(
            "registry_theme_update",
            json!({"key": "reliability", "description": ""}),
        );
        assert!(cleared.get("description").is_none(), "{cleared}");
        assert_eq!(cleared["version"], 2);

        // Archive, then the status filter.
        s.ok(
            "registry_theme_update",
            json!({"key": "t03", "status": "archived"}),
        );
        let active = s.ok("registry_theme_list", json!({}));
        assert!(!field(active["items"].as_array().expect("items"), "key").contains(&"t03"));
        assert_eq!(active["items"].as_array().expect("items").len(), 7);
        assert!(active.get("next_cursor").is_none());
        let archived = s.ok("registry_theme_list", json!({"status": "archived"}));
        assert_eq!(
            field(archived["items"].as_array().expect("items"), "key"),
            ["t03"]
        );
        let every = s.ok("registry_theme_list", json!({"status": "all"}));
        assert_eq!(every["items"].as_array().expect("items").len(), 8);

        // Query: a case-insensitive substring of key or name; wildcards are literal.
        let ops = s.ok(
            "registry_theme_list",
            json!({"query": "OPS", "status": "all"}),
        );
        assert_eq!(
            field(ops["items"].as_array().expect("items"), "key"),
            ["t00", "t02"]
        );
        let percent = s.ok("registry_theme_list", json!({"query": "0%"}));
        assert_eq!(
            field(percent["items"].as_array().expect("items"), "key"),
            ["t05"]
        );
        let underscore = s.ok("registry_theme_list", json!({"query": "t_0"}));
        assert_eq!(underscore["items"], json!([]));
        let by_key = s.ok("registry_theme_list", json!({"key": "reliability"}));
        assert_eq!(by_key["items"][0]["name"], "Reliability");

        // Validation names the field.
        for bad in ["Reliability", "-x", "a_b", "x".repeat(41).as_str()] {
            fails(
                &mut s,
                "registry_theme_add",
                json!({"key": bad, "name": "X"}),
                "invalid_arguments",
                &["argument \"key\"", "theme key"],
            );
        }
        fails(
            &mut s,
            "registry_theme_add",
            json!({"key": "blank", "name": "   "}),
            "invalid_arguments",
            &["argument \"name\"", "blank"],
        );
        fails(
            &mut s,
            "registry_theme_update",
            json!({"key": "nope", "name": "X"}),
            "not_found",
            &["argument \"key\"", "no theme \"nope\""],
        );
        fails(
            &mut s,
            "registry_theme_list",
            json!({"cursor": "not-a-cursor"}),
            "invalid_arguments",
            &["argument \"cursor\""],
        );
        // A cursor of another list is refused, not misread.
        s.ok(
            "registry_host_add",
            json!({"name": "h1", "address": "h1.lan"}),
        );
        s.ok(
            "registry_host_add",
            json!({"name": "h2", "address": "h2.lan"}),
        );
        let hosts = s.ok("registry_host_list", json!({"limit": 1}));
        fails(
            &mut s,
            "registry_theme_list",
            json!({"cursor": hosts["next_cursor"]}),
            "invalid_arguments",
            &["argument \"cursor\"", "another list"],
        );
    });
}

#[test]
fn projects_carry_theme_docs_source_and_source_counts() {
    on_both("reg-projects", |env| {
        let dir = plugins(&["registry"]);
        let mut s = env.start(dir.path(), &[]);
        s.ok(
            "registry_theme_add",
            json!({"key": "platform", "name": "Platform"}),
        );
        s.ok("registry_theme_add", json!({"key": "old", "name": "Old"}));
        fails(
            &mut s,
            "registry_project_add",
            json!({"key": "CORE", "name": "Core", "theme": "nosuch"}),
            "not_found",
            &["argument \"theme\"", "no theme \"nosuch\""],
        );
        for bad in ["core", "C", "1AB", "CORE-1", "ABCDEFGHIJK"] {
            fails(
                &mut s,
                "registry_project_add",
                json!({"key": bad, "name": "X"}),
                "invalid_arguments",
                &["argument \"key\"", "project key"],
            );
        }
        let core = s.ok(
            "registry_project_add",
            json!({"key": "CORE", "name": "Core MCP", "theme": "platform", "description": "the server"}),
        );
        assert_eq!(core["theme"], "platform");
        assert_eq!(core["source_count"], 0);
        assert!(core.get("docs_source").is_none());
        for i in 0..6 {
            let theme = if i % 2 == 0 {
                json!("platform")
            } else {
                json!("old")
            };
            s.ok(
                "registry_project_add",
                json!({"key": format!("P{i:02}"), "name": format!("Project {i}"), "theme": theme}),
            );
        }
        s.ok(
            "registry_project_add",
            json!({"key": "OTHER", "name": "Other"}),
        );
        fails(
            &mut s,
            "registry_project_add",
            json!({"key": "CORE", "name": "Again"}),
            "conflict",
            &["project \"CORE\" already exists", "at version 1"],
        );

        // Paging over 8 projects.
        let (items, _) = all_pages(&mut s, "registry_project_list", json!({}), 3);
        let keys = field(&items, "key");
        assert_eq!(keys.len(), 8);
        assert!(sorted_unique(&keys), "{keys:?}");
        // Theme filter, and an unknown theme there.
        let (platform, _) = all_pages(
            &mut s,
            "registry_project_list",
            json!({"theme": "platform"}),
            2,
        );
        assert_eq!(field(&platform, "key"), ["CORE", "P00", "P02", "P04"]);
        fails(
            &mut s,
            "registry_project_list",
            json!({"theme": "nosuch"}),
            "not_found",
            &["argument \"theme\"", "nosuch"],
        );
        let found = s.ok("registry_project_list", json!({"query": "mcp"}));
        assert_eq!(
            field(found["items"].as_array().expect("items"), "key"),
            ["CORE"]
        );

        // Sources, counts and include_sources.
        s.ok(
            "registry_source_add",
            json!({"project": "CORE", "name": "core-mcp", "kind": "git", "url": "https://git.example/core-mcp.git"}),
        );
        s.ok(
            "registry_source_add",
            json!({"project": "CORE", "name": "handbook", "kind": "docs", "url": "https://git.example/handbook.git"}),
        );
        s.ok(
            "registry_source_add",
            json!({"project": "OTHER", "name": "handbook", "kind": "docs", "url": "https://git.example/other.git"}),
        );
        let listed = s.ok(
            "registry_project_list",
            json!({"key": "CORE", "include_sources": true}),
        );
        let item = &listed["items"][0];
        assert_eq!(item["source_count"], 2);
        assert_eq!(
            field(item["sources"].as_array().expect("sources"), "ref"),
            ["CORE/core-mcp", "CORE/handbook"]
        );
        let plain = s.ok("registry_project_list", json!({"key": "CORE"}));
        assert!(plain["items"][0].get("sources").is_none());

        // docs_source: a docs-kind source of the same project.
        fails(
            &mut s,
            "registry_project_update",
            json!({"key": "CORE", "docs_source": "CORE/core-mcp"}),
            "invalid_arguments",
            &[
                "argument \"docs_source\"",
                "CORE/core-mcp",
                "git source",
                "kind docs",
            ],
        );
        fails(
            &mut s,
            "registry_project_update",
            json!({"key": "CORE", "docs_source": "OTHER/handbook"}),
            "invalid_arguments",
            &["argument \"docs_source\"", "belongs to project OTHER"],
        );
        fails(
            &mut s,
            "registry_project_update",
            json!({"key": "CORE", "docs_source": "CORE/nope"}),
            "not_found",
            &["argument \"docs_source\"", "CORE/nope"],
        );
        fails(
            &mut s,
            "registry_project_update",
            json!({"key": "CORE", "docs_source": "handbook"}),
            "invalid_arguments",
            &["argument \"docs_source\"", "PROJECT/name"],
        );
        let with_docs = s.ok(
            "registry_project_update",
            json!({"key": "CORE", "docs_source": "CORE/handbook", "expected_version": 1}),
        );
        assert_eq!(with_docs["docs_source"], "CORE/handbook");
        assert_eq!(with_docs["version"], 2);
        fails(
            &mut s,
            "registry_project_update",
            json!({"key": "CORE", "name": "Stale", "expected_version": 1}),
            "conflict",
            &["project \"CORE\" is at version 2"],
        );
        let again = s.ok(
            "registry_project_update",
            json!({"key": "CORE", "docs_source": "CORE/handbook", "theme": "platform"}),
        );
        assert_eq!(again["version"], 2, "no change, no new version");

        // Clearing theme and docs source; moving to another theme.
        let cleared = s.ok(
            "registry_project_update",
            json!({"key": "CORE", "docs_source": "", "theme": ""}),
        );
        assert!(cleared.get("docs_source").is_none() && cleared.get("theme").is_none());
        assert_eq!(cleared["version"], 3);
        fails(
            &mut s,
            "registry_project_update",
            json!({"key": "CORE", "theme": "nosuch"}),
            "not_found",
            &["argument \"theme\"", "nosuch"],
        );
        // An archived theme takes no new projects.
        s.ok(
            "registry_theme_update",
            json!({"key": "old", "status": "archived"}),
        );
        fails(
            &mut s,
            "registry_project_add",
            json!({"key": "NEW", "name": "New", "theme": "old"}),
            "invalid_arguments",
            &["argument \"theme\"", "archived"],
        );

        // Archive a project: gone from the default list, there with status archived.
        s.ok(
            "registry_project_update",
            json!({"key": "P05", "status": "archived"}),
        );
        let active = s.ok("registry_project_list", json!({"limit": 200}));
        assert!(!field(active["items"].as_array().expect("items"), "key").contains(&"P05"));
        let archived = s.ok("registry_project_list", json!({"status": "archived"}));
        assert_eq!(
            field(archived["items"].as_array().expect("items"), "key"),
            ["P05"]
        );
        fails(
            &mut s,
            "registry_source_add",
            json!({"project": "P05", "name": "x", "kind": "git", "url": "u"}),
            "invalid_arguments",
            &["argument \"project\"", "archived"],
        );
        fails(
            &mut s,
            "registry_project_update",
            json!({"key": "NOPE", "name": "x"}),
            "not_found",
            &["argument \"key\"", "NOPE"],
        );
    });
}

#[test]
fn sources_page_filter_merge_metadata_and_show_checkouts() {
    on_both("reg-sources", |env| {
        let dir = plugins(&["registry"]);
        let mut s = env.start(dir.path(), &[]);
        s.ok(
            "registry_project_add",
            json!({"key": "CORE", "name": "Core"}),
        );
        s.ok("registry_project_add", json!({"key": "WEB", "name": "Web"}));
        fails(
            &mut s,
            "registry_source_add",
            json!({"project": "NOPE", "name": "x", "kind": "git", "url": "u"}),
            "not_found",
            &["argument \"project\"", "no project \"NOPE\""],
        );
        for bad in ["Core", ".x", "a/b", "a b", ""] {
            fails(
                &mut s,
                "registry_source_add",
                json!({"project": "CORE", "name": bad, "kind": "git", "url": "u"}),
                "invalid_arguments",
                &["argument \"name\""],
            );
        }
        fails(
            &mut s,
            "registry_source_add",
            json!({"project": "CORE", "name": "x", "kind": "git", "url": "has space"}),
            "invalid_arguments",
            &["argument \"url\""],
        );
        fails(
            &mut s,
            "registry_source_add",
            json!({"project": "CORE", "name": "x", "kind": "git", "url": "u", "default_branch": "-x"}),
            "invalid_arguments",
            &["argument \"default_branch\""],
        );
        fails(
            &mut s,
            "registry_source_add",
            json!({"project": "CORE", "name": "x", "kind": "svn", "url": "u"}),
            "invalid_arguments",
            &["kind"],
        );
        let kinds = ["git", "docs", "package", "service", "url"];
        for (i, kind) in kinds.iter().enumerate() {
            let added = s.ok(
                "registry_source_add",
                json!({"project": "CORE", "name": format!("s{i}"), "kind": kind,
                       "url": format!("https://git.example/core/s{i}.git")}),
            );
            assert_eq!(added["ref"], format!("CORE/s{i}"));
            assert_eq!(added["default_branch"], "main");
            assert!(added.get("metadata").is_none(), "{added}");
        }
        let web = s.ok(
            "registry_source_add",
            json!({"project": "WEB", "name": "site", "kind": "git", "url": "ssh://git@git.example/web/site.git",
                   "default_branch": "trunk", "metadata": {"team": "web", "tier": {"level": 2}}}),
        );
        assert_eq!(
            web["metadata"],
            json!({"team": "web", "tier": {"level": 2}})
        );
        fails(
            &mut s,
            "registry_source_add",
            json!({"project": "CORE", "name": "s1", "kind": "git", "url": "u"}),
            "conflict",
            &["source \"CORE/s1\" already exists", "at version 1"],
        );

        // Paging across projects, in ref order.
        let (items, _) = all_pages(&mut s, "registry_source_list", json!({}), 2);
        assert_eq!(
            field(&items, "ref"),
            ["CORE/s0", "CORE/s1", "CORE/s2", "CORE/s3", "CORE/s4", "WEB/site"]
        );
        let (core, _) = all_pages(
            &mut s,
            "registry_source_list",
            json!({"project": "CORE"}),
            4,
        );
        assert_eq!(core.len(), 5);
        let docs = s.ok("registry_source_list", json!({"kind": "docs"}));
        assert_eq!(
            field(docs["items"].as_array().expect("items"), "ref"),
            ["CORE/s1"]
        );
        let by_url = s.ok("registry_source_list", json!({"query": "WEB/SITE.git"}));
        assert_eq!(
            field(by_url["items"].as_array().expect("items"), "ref"),
            ["WEB/site"]
        );
        fails(
            &mut s,
            "registry_source_list",
            json!({"project": "NOPE"}),
            "not_found",
            &["argument \"project\"", "NOPE"],
        );

        // Patches: metadata merges, expected_version, no-op, archive.
        let merged = s.ok(
            "registry_source_update",
            json!({"source": "WEB/site", "metadata": {"team": null, "tier": {"zone": "eu"}, "x": 1},
                   "expected_version": 1}),
        );
        assert_eq!(
            merged["metadata"],
            json!({"tier": {"level": 2, "zone": "eu"}, "x": 1})
        );
        assert_eq!(merged["version"], 2);
        fails(
            &mut s,
            "registry_source_update",
            json!({"source": "WEB/site", "url": "https://x", "expected_version": 1}),
            "conflict",
            &["source \"WEB/site\" is at version 2"],
        );
        let same = s.ok(
            "registry_source_update",
            json!({"source": "WEB/site", "default_branch": "trunk", "metadata": {"x": 1}}),
        );
        assert_eq!(same, merged, "no change, no new version");
        let described = s.ok(
            "registry_source_update",
            json!({"source": "CORE/s0", "description": "the main repo", "default_branch": "dev"}),
        );
        assert_eq!(
            (
                described["description"].clone(),
                described["default_branch"].clone()
            ),
            (json!("the main repo"), json!("dev"))
        );
        s.ok(
            "registry_source_update",
            json!({"source": "CORE/s4", "status": "archived"}),
        );
        let active = s.ok("registry_source_list", json!({"project": "CORE"}));
        assert_eq!(active["items"].as_array().expect("items").len(), 4);
        let archived = s.ok(
            "registry_source_list",
            json!({"project": "CORE", "status": "archived"}),
        );
        assert_eq!(
            field(archived["items"].as_array().expect("items"), "ref"),
            ["CORE/s4"]
        );
        let projects = s.ok("registry_project_list", json!({"key": "CORE"}));
        assert_eq!(
            projects["items"][0]["source_count"], 4,
            "archived ones are not counted"
        );
        fails(
            &mut s,
            "registry_source_update",
            json!({"source": "CORE/nope", "url": "x"}),
            "not_found",
            &["argument \"source\"", "CORE/nope"],
        );
        fails(
            &mut s,
            "registry_source_update",
            json!({"source": "core-s0", "url": "x"}),
            "invalid_arguments",
            &["argument \"source\"", "PROJECT/name"],
        );

        // Checkouts, as repo_setup records them.
        s.ok(
            "registry_host_add",
            json!({"name": "devbox-2", "address": "10.0.0.2"}),
        );
        s.ok(
            "registry_host_add",
            json!({"name": "devbox-1", "address": "10.0.0.1"}),
        );
        for (host, path) in [
            ("devbox-2", "/srv/old/s0"),
            ("devbox-2", "/srv/checkouts/s0"),
            ("devbox-1", "/home/me/s0"),
        ] {
            s.ok(
                "registry_source_update",
                json!({"source": "CORE/s0", "checkout_host": host, "checkout_path": path,
                       "checkout_branch": "main"}),
            );
        }
        let with = s.ok(
            "registry_source_list",
            json!({"project": "CORE", "include_checkouts": true}),
        );
        let items = with["items"].as_array().expect("items");
        let checkouts: Vec<Value> = items[0]["checkouts"]
            .as_array()
            .expect("checkouts")
            .iter()
            .map(|c| {
                assert!(
                    c["updated_at"].as_str().is_some_and(|t| t.ends_with('Z')),
                    "{c}"
                );
                json!({"host": c["host"], "path": c["path"], "branch": c["branch"]})
            })
            .collect();
        assert_eq!(
            checkouts,
            [
                json!({"host": "devbox-1", "path": "/home/me/s0", "branch": "main"}),
                json!({"host": "devbox-2", "path": "/srv/checkouts/s0", "branch": "main"}),
            ]
        );
        for (args, code, says) in [
            (
                json!({"source": "CORE/s0", "checkout_host": "nowhere", "checkout_path": "/x"}),
                "not_found",
                "nowhere",
            ),
            (
                json!({"source": "CORE/s0", "checkout_host": "devbox-1", "checkout_path": "rel/x"}),
                "invalid_arguments",
                "absolute",
            ),
            (
                json!({"source": "CORE/s0", "checkout_path": "/x"}),
                "invalid_arguments",
                "checkout_host",
            ),
        ] {
            fails(&mut s, "registry_source_update", args, code, &[says]);
        }
        assert_eq!(items[1]["checkouts"], json!([]));
        let without = s.ok("registry_source_list", json!({"project": "CORE"}));
        assert!(without["items"][0].get("checkouts").is_none());
    });
}

#[test]
fn hosts_are_the_forwarding_directory() {
    on_both("reg-hosts", |env| {
        let dir = plugins(&["registry"]);
        let mut s = env.start(dir.path(), &[]);
        let cases = [
            (
                json!({"name": "Devbox", "address": "x"}),
                "name",
                "host name",
            ),
            (json!({"name": "-x", "address": "x"}), "name", "host name"),
            (json!({"name": "a.b", "address": "x"}), "name", "host name"),
            (
                json!({"name": "ok", "address": "http://x"}),
                "address",
                "DNS name or an IP",
            ),
            (
                json!({"name": "ok", "address": "x:22"}),
                "address",
                "DNS name or an IP",
            ),
            (
                json!({"name": "ok", "address": "x", "core_mcp_url": "ftp://x/mcp"}),
                "core_mcp_url",
                "http:// or https://",
            ),
            (
                json!({"name": "ok", "address": "x", "core_mcp_url": "devbox:7070"}),
                "core_mcp_url",
                "absolute http(s) URL",
            ),
            (
                json!({"name": "ok", "address": "x", "core_mcp_url": "http://u:pw@x/mcp"}),
                "core_mcp_url",
                "credentials",
            ),
            (
                json!({"name": "ok", "address": "x", "docker_endpoint": "http://x:2375"}),
                "docker_endpoint",
                "unix://",
            ),
            (
                json!({"name": "ok", "address": "x", "roles": ["has space"]}),
                "roles[0]",
                "whitespace",
            ),
        ];
        for (args, name, needle) in cases {
            fails(
                &mut s,
                "registry_host_add",
                args,
                "invalid_arguments",
                &[&format!("argument \"{name}\""), needle],
            );
        }

        // Seven hosts: four with a Core MCP address.
        let hosts = [
            (
                "alpha",
                Some("http://127.0.0.2:7070/mcp"),
                Some("unix:///var/run/docker.sock"),
                vec!["build", "gpu"],
            ),
            ("bravo", None, Some("ssh://deploy@bravo"), vec!["build"]),
            (
                "charlie",
                Some("https://charlie.example:7443/mcp"),
                None,
                vec![],
            ),
            (
                "delta",
                Some("http://[::1]:7070/mcp"),
                Some("tcp://10.0.0.4:2376"),
                vec!["gpu"],
            ),
            ("echo", None, None, vec![]),
            (
                "foxtrot",
                Some("http://10.0.0.6/mcp"),
                Some("npipe:////./pipe/docker_engine"),
                vec!["win"],
            ),
            ("golf", None, None, vec!["build"]),
        ];
        for (name, url, docker, roles) in &hosts {
            let mut args = json!({"name": name, "address": format!("{name}.lan"), "roles": roles,
                                   "os": "linux", "description": format!("host {name}")});
            if let Some(url) = url {
                args["core_mcp_url"] = json!(url);
            }
            if let Some(docker) = docker {
                args["docker_endpoint"] = json!(docker);
            }
            let host = s.ok("registry_host_add", args);
            assert_eq!(host["enabled"], true);
            assert_eq!(host["roles"], json!(roles));
            assert_eq!(host.get("core_mcp_url").is_some(), url.is_some(), "{host}");
        }
        fails(
            &mut s,
            "registry_host_add",
            json!({"name": "alpha", "address": "x"}),
            "conflict",
            &["host \"alpha\" already exists", "at version 1"],
        );

        // What the host binary asks for to resolve remote_host, page by page.
        let targets = json!({"has_core_mcp": true, "status": "enabled"});
        let (items, pages) = all_pages(&mut s, "registry_host_list", targets.clone(), 2);
        assert_eq!(pages, 2);
        assert_eq!(
            field(&items, "name"),
            ["alpha", "charlie", "delta", "foxtrot"]
        );
        assert_eq!(
            field(&items, "core_mcp_url"),
            [
                "http://127.0.0.2:7070/mcp",
                "https://charlie.example:7443/mcp",
                "http://[::1]:7070/mcp",
                "http://10.0.0.6/mcp"
            ]
        );
        let (every, _) = all_pages(&mut s, "registry_host_list", json!({}), 3);
        assert_eq!(every.len(), 7);
        let no_mcp = s.ok("registry_host_list", json!({"has_core_mcp": false}));
        assert_eq!(
            field(no_mcp["items"].as_array().expect("items"), "name"),
            ["bravo", "echo", "golf"]
        );
        for item in no_mcp["items"].as_array().expect("items") {
            assert!(
                item.get("core_mcp_url").is_none(),
                "absent, not null: {item}"
            );
        }
        let docker = s.ok("registry_host_list", json!({"has_docker": true}));
        assert_eq!(
            field(docker["items"].as_array().expect("items"), "name"),
            ["alpha", "bravo", "delta", "foxtrot"]
        );
        let build = s.ok("registry_host_list", json!({"role": "build"}));
        assert_eq!(
            field(build["items"].as_array().expect("items"), "name"),
            ["alpha", "bravo", "golf"]
        );
        let gpu_targets = s.ok(
            "registry_host_list",
            json!({"role": "gpu", "has_core_mcp": true, "has_docker": true}),
        );
        assert_eq!(
            field(gpu_targets["items"].as_array().expect("items"), "name"),
            ["alpha", "delta"]
        );
        let query = s.ok("registry_host_list", json!({"query": "LTA.L"}));
        assert_eq!(
            field(query["items"].as_array().expect("items"), "name"),
            ["delta"]
        );
        let one = s.ok("registry_host_list", json!({"name": "echo"}));
        assert_eq!(one["items"][0]["description"], "host echo");

        // Disabling, or clearing the address, takes a host out of the forwarding targets.
        let disabled = s.ok(
            "registry_host_update",
            json!({"name": "alpha", "enabled": false, "expected_version": 1}),
        );
        assert_eq!(
            (disabled["enabled"].clone(), disabled["version"].clone()),
            (json!(false), json!(2))
        );
        let cleared = s.ok(
            "registry_host_update",
            json!({"name": "charlie", "core_mcp_url": "", "docker_endpoint": "tcp://charlie:2376"}),
        );
        assert!(cleared.get("core_mcp_url").is_none(), "{cleared}");
        assert_eq!(cleared["docker_endpoint"], "tcp://charlie:2376");
        let (items, _) = all_pages(&mut s, "registry_host_list", targets.clone(), 200);
        assert_eq!(field(&items, "name"), ["delta", "foxtrot"]);
        // And back: echo gains an address.
        s.ok(
            "registry_host_update",
            json!({"name": "echo", "core_mcp_url": "http://echo.lan:7070/mcp", "roles": ["gpu", "gpu", "build"]}),
        );
        let (items, _) = all_pages(&mut s, "registry_host_list", targets, 200);
        assert_eq!(field(&items, "name"), ["delta", "echo", "foxtrot"]);
        let gpu = s.ok("registry_host_list", json!({"role": "gpu"}));
        assert_eq!(
            field(gpu["items"].as_array().expect("items"), "name"),
            ["delta", "echo"]
        );
        let echo = s.ok("registry_host_list", json!({"name": "echo"}));
        assert_eq!(echo["items"][0]["roles"], json!(["gpu", "build"]));

        // Status filter.
        let off = s.ok("registry_host_list", json!({"status": "disabled"}));
        assert_eq!(
            field(off["items"].as_array().expect("items"), "name"),
            ["alpha"]
        );
        let all = s.ok("registry_host_list", json!({"status": "all", "limit": 200}));
        assert_eq!(all["items"].as_array().expect("items").len(), 7);

        // Patches: conflicts, no-ops, validation, unknown host.
        fails(
            &mut s,
            "registry_host_update",
            json!({"name": "alpha", "enabled": true, "expected_version": 1}),
            "conflict",
            &["host \"alpha\" is at version 2"],
        );
        let same = s.ok(
            "registry_host_update",
            json!({"name": "alpha", "enabled": false, "os": "linux", "roles": ["build", "gpu"]}),
        );
        assert_eq!(same, disabled, "no change, no new version");
        let roles_cleared = s.ok(
            "registry_host_update",
            json!({"name": "alpha", "roles": []}),
        );
        assert_eq!(roles_cleared["roles"], json!([]));
        let build = s.ok(
            "registry_host_list",
            json!({"role": "build", "status": "all"}),
        );
        assert_eq!(
            field(build["items"].as_array().expect("items"), "name"),
            ["bravo", "echo", "golf"]
        );
        fails(
            &mut s,
            "registry_host_update",
            json!({"name": "bravo", "core_mcp_url": "mcp.example"}),
            "invalid_arguments",
            &["argument \"core_mcp_url\""],
        );
        fails(
            &mut s,
            "registry_host_update",
            json!({"name": "bravo", "docker_endpoint": "docker.example"}),
            "invalid_arguments",
            &["argument \"docker_endpoint\""],
        );
        fails(
            &mut s,
            "registry_host_update",
            json!({"name": "nosuch", "enabled": false}),
            "not_found",
            &["argument \"name\"", "no host \"nosuch\""],
        );
    });
}

/// A small code tree: a few real source files and many small ones, so a cut has files to
/// leave out.
fn code_tree() -> TempDir {
    let top = TempDir::new("reg-code");
    let write = |rel: &str, content: &str| {
        let path = top.path().join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, content).expect("write");
    };
    write(
        "src/lib.rs",
        "/// Adds.\npub fn add(a: u32, b: u32) -> u32 {\n    a + b\n}\n\npub struct Point;\n\nimpl Point {\n    pub fn new() -> Self {\n        Point\n    }\n}\n",
    );
    write(
        "src/util.py",
        "class Tool:\n    def run(self):\n        return 1\n",
    );
    write("README.md", "# Demo\n");
    for i in 0..40 {
        write(
            &format!("pkg/mod_{i:02}.py"),
            &format!("def handler_{i:02}(event, context):\n    return {i}\n"),
        );
    }
    top
}

fn sha(seed: u32) -> String {
    format!("{seed:08x}").repeat(5)
}

#[test]
fn snapshots_of_real_code_snapshot_output() {
    on_both("reg-snapshots", |env| {
        let tree = code_tree();
        let root = tree.path().to_string_lossy().into_owned();
        let dir = plugins(&["files", "registry"]);
        let mut s = env.start(dir.path(), &["--root", &root]);
        s.ok(
            "registry_project_add",
            json!({"key": "CORE", "name": "Core"}),
        );
        s.ok(
            "registry_source_add",
            json!({"project": "CORE", "name": "core-mcp", "kind": "git", "url": "https://git.example/core-mcp.git"}),
        );
        let snapshot = s.ok("code_snapshot", json!({}));
        let total = snapshot["files"].as_array().expect("files").len();
        assert_eq!(total, 43);

        let a = sha(0xa);
        let saved = s.ok(
            "registry_snapshot_save",
            json!({"source": "CORE/core-mcp", "commit": a, "branch": "main", "snapshot": snapshot}),
        );
        assert_eq!(saved["replaced"], false);
        assert_eq!(saved["commit"], a);
        assert_eq!(saved["format_version"], 1);
        assert_eq!(saved["stats"], snapshot["counts"]);
        // The MCP client that saved it, as it introduced itself (name and version).
        assert!(
            saved["created_by"]
                .as_str()
                .is_some_and(|c| c.starts_with("coremcp-tests")),
            "{saved}"
        );
        assert_eq!(saved["content_hash"].as_str().expect("hash").len(), 16);

        // Same commit again: a conflict unless replace.
        fails(
            &mut s,
            "registry_snapshot_save",
            json!({"source": "CORE/core-mcp", "commit": a, "snapshot": snapshot}),
            "conflict",
            &[&a, "already stored", "the same content", "replace: true"],
        );
        let outline_only = s.ok(
            "code_snapshot",
            json!({"detail": "outline", "include": ["src/**"]}),
        );
        fails(
            &mut s,
            "registry_snapshot_save",
            json!({"source": "CORE/core-mcp", "commit": a.to_uppercase(), "snapshot": outline_only}),
            "conflict",
            &["different content"],
        );
        let replaced = s.ok(
            "registry_snapshot_save",
            json!({"source": "CORE/core-mcp", "commit": a, "branch": "release", "snapshot": outline_only, "replace": true}),
        );
        assert_eq!(replaced["replaced"], true);
        assert_eq!(replaced["id"], saved["id"]);
        assert_ne!(replaced["content_hash"], saved["content_hash"]);
        let got = s.ok(
            "registry_snapshot_get",
            json!({"source": "CORE/core-mcp", "commit": a, "detail": "full"}),
        );
        assert_eq!(got["branch"], "release");
        assert_eq!(
            got["files"].as_array().expect("files").len(),
            2,
            "the replacement"
        );
        // Put the full snapshot back for the views below.
        s.ok(
            "registry_snapshot_save",
            json!({"source": "CORE/core-mcp", "commit": a, "branch": "main", "snapshot": snapshot, "replace": true}),
        );

        // A second commit: the latest, listed first.
        let b = sha(0xb);
        let smaller = s.ok("code_snapshot", json!({"exclude": ["pkg"]}));
        s.ok(
            "registry_snapshot_save",
            json!({"source": "CORE/core-mcp", "commit": b, "snapshot": smaller}),
        );
        let latest = s.ok("registry_snapshot_get", json!({"source": "CORE/core-mcp"}));
        assert_eq!(latest["commit"], b);
        assert_eq!(latest["detail"], "outline");
        assert_eq!(
            field(latest["commits"].as_array().expect("commits"), "commit"),
            [b.as_str(), a.as_str()]
        );
        assert_eq!(latest["commits"][1]["branch"], "main");
        assert!(latest["commits"][0].get("branch").is_none());
        assert_eq!(latest["truncated"], false);

        // Detail levels of commit a (abbreviated).
        let summary = s.ok(
            "registry_snapshot_get",
            json!({"source": "CORE/core-mcp", "commit": &a[..8], "detail": "summary"}),
        );
        assert_eq!(summary["commit"], a);
        assert!(summary.get("files").is_none());
        assert!(summary.get("commits").is_none(), "only without commit");
        assert_eq!(summary["counts"], snapshot["counts"]);
        assert_eq!(summary["counts"]["code_files"], 42);
        assert_eq!(summary["languages"], json!({"python": 41, "rust": 1}));
        assert_eq!(summary["stats"], snapshot["counts"]);

        let outline = s.ok(
            "registry_snapshot_get",
            json!({"source": "CORE/core-mcp", "commit": a, "detail": "outline", "paths": ["src"]}),
        );
        let files = outline["files"].as_array().expect("files");
        assert_eq!(field(files, "path"), ["src/lib.rs", "src/util.py"]);
        let lib = &files[0];
        assert_eq!(lib["language"], "rust");
        let symbols = lib["symbols"].as_array().expect("symbols");
        assert!(symbols
            .iter()
            .any(|s| s["kind"] == "function" && s["name"] == "add"));
        assert!(symbols
            .iter()
            .any(|s| s["kind"] == "method" && s["name"] == "new" && s["parent"] == "Point"));
        assert!(
            symbols.iter().all(|s| s.get("signature").is_none()),
            "no bodies in an outline"
        );
        assert_eq!(outline["counts"]["files"], 2);

        let full = s.ok(
            "registry_snapshot_get",
            json!({"source": "CORE/core-mcp", "commit": a, "detail": "full", "paths": ["src/lib.rs", "./README.md"]}),
        );
        let files = full["files"].as_array().expect("files");
        assert_eq!(field(files, "path"), ["README.md", "src/lib.rs"]);
        let add = files[1]["symbols"]
            .as_array()
            .expect("symbols")
            .iter()
            .find(|s| s["name"] == "add")
            .expect("add");
        assert_eq!(add["signature"], "pub fn add(a: u32, b: u32) -> u32");
        assert_eq!(full["header"]["root"], snapshot["root"]);
        assert_eq!(full["header"]["counts"], snapshot["counts"]);
        let none = s.ok(
            "registry_snapshot_get",
            json!({"source": "CORE/core-mcp", "commit": a, "paths": ["sr"]}),
        );
        assert_eq!(none["files"], json!([]), "whole path segments only");

        // max_chars: whole files left out, marked, still structured and within the limit.
        let result = s.call(
            "registry_snapshot_get",
            json!({"source": "CORE/core-mcp", "commit": a, "detail": "full", "max_chars": 3000}),
        );
        assert!(!is_error(&result), "{}", text(&result));
        assert!(
            text(&result).chars().count() <= 3000,
            "{} chars",
            text(&result).len()
        );
        let cut = &result["structuredContent"];
        let kept = cut["files"].as_array().expect("files").len();
        assert!(kept > 0 && kept < total, "kept {kept} of {total}");
        assert_eq!(cut["truncated"], true);
        assert_eq!(cut["omitted_files"], total - kept);
        assert!(cut["note"].as_str().expect("note").contains("max_chars"));
        assert_eq!(
            cut["files"][0]["path"], "README.md",
            "the first files, in order"
        );
        // The default fits the host's result limit, so the answer keeps its structure.
        let default = s.call(
            "registry_snapshot_get",
            json!({"source": "CORE/core-mcp", "commit": a, "detail": "full"}),
        );
        assert!(
            default.get("structuredContent").is_some(),
            "{}",
            text(&default)
        );
        assert!(text(&default).chars().count() <= 20_000);

        // Errors name their field.
        fails(
            &mut s,
            "registry_snapshot_save",
            json!({"source": "CORE/core-mcp", "commit": "abc123", "snapshot": snapshot}),
            "invalid_arguments",
            &["commit"],
        );
        fails(
            &mut s,
            "registry_snapshot_save",
            json!({"source": "CORE/core-mcp", "commit": "g".repeat(40), "snapshot": snapshot}),
            "invalid_arguments",
            &["argument \"commit\"", "40 hex"],
        );
        fails(
            &mut s,
            "registry_snapshot_save",
            json!({"source": "CORE/core-mcp", "commit": sha(1), "snapshot": {"format_version": 2, "files": []}}),
            "invalid_arguments",
            &["argument \"snapshot.format_version\"", "not supported"],
        );
        fails(
            &mut s,
            "registry_snapshot_save",
            json!({"source": "CORE/core-mcp", "commit": sha(1), "snapshot": {"files": "src/lib.rs"}}),
            "invalid_arguments",
            &["argument \"snapshot.files\"", "array"],
        );
        fails(
            &mut s,
            "registry_snapshot_save",
            json!({"source": "CORE/core-mcp", "commit": sha(1), "snapshot": {"counts": {}}}),
            "invalid_arguments",
            &["argument \"snapshot\"", "files"],
        );
        fails(
            &mut s,
            "registry_snapshot_save",
            json!({"source": "CORE/nope", "commit": sha(1), "snapshot": snapshot}),
            "not_found",
            &["argument \"source\"", "CORE/nope"],
        );
        fails(
            &mut s,
            "registry_snapshot_get",
            json!({"source": "CORE/core-mcp", "commit": sha(0xc)}),
            "not_found",
            &["argument \"commit\"", &a, &b],
        );
        fails(
            &mut s,
            "registry_snapshot_get",
            json!({"source": "CORE/core-mcp", "detail": "everything"}),
            "invalid_arguments",
            &["detail"],
        );
        s.ok(
            "registry_source_add",
            json!({"project": "CORE", "name": "empty", "kind": "git", "url": "u"}),
        );
        fails(
            &mut s,
            "registry_snapshot_get",
            json!({"source": "CORE/empty"}),
            "not_found",
            &["no snapshot of CORE/empty"],
        );

        // Retention: the 20 most recently saved per source.
        let tiny = json!({"files": [{"path": "a.rs", "language": "rust", "symbols": []}]});
        for i in 0..19 {
            s.ok(
                "registry_snapshot_save",
                json!({"source": "CORE/core-mcp", "commit": sha(0x100 + i), "snapshot": tiny}),
            );
        }
        let latest = s.ok(
            "registry_snapshot_get",
            json!({"source": "CORE/core-mcp", "detail": "summary"}),
        );
        let commits = latest["commits"].as_array().expect("commits");
        assert_eq!(commits.len(), 20);
        assert_eq!(commits[0]["commit"], sha(0x100 + 18));
        assert_eq!(
            commits[19]["commit"],
            sha(0xb),
            "a is the oldest, and pruned"
        );
        fails(
            &mut s,
            "registry_snapshot_get",
            json!({"source": "CORE/core-mcp", "commit": a}),
            "not_found",
            &["argument \"commit\""],
        );
    });
}

#[test]
fn registry_data_outlives_the_process() {
    on_both("reg-restart", |env| {
        let dir = plugins(&["registry"]);
        let mut first = env.start(dir.path(), &[]);
        first.ok(
            "registry_theme_add",
            json!({"key": "platform", "name": "Platform"}),
        );
        first.ok(
            "registry_project_add",
            json!({"key": "CORE", "name": "Core", "theme": "platform"}),
        );
        first.ok(
            "registry_source_add",
            json!({"project": "CORE", "name": "handbook", "kind": "docs", "url": "https://x/h.git", "metadata": {"a": [1, 2]}}),
        );
        let project = first.ok(
            "registry_project_update",
            json!({"key": "CORE", "docs_source": "CORE/handbook"}),
        );
        let host = first.ok(
            "registry_host_add",
            json!({"name": "devbox-1", "address": "10.0.0.1", "core_mcp_url": "http://10.0.0.1:7070/mcp", "roles": ["build"]}),
        );
        let saved = first.ok(
            "registry_snapshot_save",
            json!({"source": "CORE/handbook", "commit": sha(7), "snapshot": {"files": [{"path": "a.md"}]}}),
        );
        let before = [
            first.ok("registry_theme_list", json!({})),
            first.ok("registry_project_list", json!({"include_sources": true})),
            first.ok("registry_source_list", json!({})),
            first.ok("registry_host_list", json!({"has_core_mcp": true})),
            first.ok(
                "registry_snapshot_get",
                json!({"source": "CORE/handbook", "detail": "full"}),
            ),
        ];
        assert_eq!(first.finish(WAIT), Some(0));

        let mut second = env.start(dir.path(), &[]);
        let after = [
            second.ok("registry_theme_list", json!({})),
            second.ok("registry_project_list", json!({"include_sources": true})),
            second.ok("registry_source_list", json!({})),
            second.ok("registry_host_list", json!({"has_core_mcp": true})),
            second.ok(
                "registry_snapshot_get",
                json!({"source": "CORE/handbook", "detail": "full"}),
            ),
        ];
        assert_eq!(before, after);
        assert_eq!(after[1]["items"][0], {
            let mut p = project.clone();
            p["sources"] = after[2]["items"].clone();
            p
        });
        assert_eq!(after[3]["items"][0], host);
        assert_eq!(after[4]["content_hash"], saved["content_hash"]);
        // And it can still be written, with versions carried on.
        let moved = second.ok(
            "registry_project_update",
            json!({"key": "CORE", "name": "Core MCP", "expected_version": 2}),
        );
        assert_eq!(moved["version"], 3);
    });
}

/// One process's share of a race on theme `race`: `rounds` read-then-patch steps with
/// expected_version (a lost race must be a conflict naming the current version), then, once
/// both processes get there, `rounds` blind patches (which must all land). Returns (won, lost).
fn race_on_theme(
    server: &mut Server,
    who: &str,
    rounds: usize,
    both: &std::sync::Barrier,
) -> (u64, u64) {
    let (mut won, mut lost) = (0, 0);
    for i in 0..rounds {
        let listed = server.ok("registry_theme_list", json!({"key": "race"}));
        let version = listed["items"][0]["version"].as_i64().expect("version");
        let result = server.call(
            "registry_theme_update",
            json!({"key": "race", "name": format!("{who}-{i}"), "expected_version": version}),
        );
        if is_error(&result) {
            let message = text(&result);
            assert!(
                message.contains("(conflict)") && message.contains("is at version"),
                "a lost race is a conflict with the current version: {message}"
            );
            lost += 1;
        } else {
            assert_eq!(result["structuredContent"]["version"], version + 1);
            won += 1;
        }
    }
    both.wait();
    for i in 0..rounds {
        server.ok(
            "registry_theme_update",
            json!({"key": "race", "description": format!("{who} blind {i}")}),
        );
    }
    (won, lost)
}

#[test]
fn two_processes_patching_one_record_lose_no_update() {
    const ROUNDS: usize = 60;
    on_both("reg-race", |env| {
        let dir = plugins(&["registry"]);
        let mut setup = env.start(dir.path(), &[]);
        setup.ok("registry_theme_add", json!({"key": "race", "name": "Race"}));
        let both = std::sync::Arc::new(std::sync::Barrier::new(2));
        let racers: Vec<_> = ["a", "b"]
            .into_iter()
            .map(|who| {
                let mut server = env.start(dir.path(), &[]);
                let both = both.clone();
                std::thread::spawn(move || race_on_theme(&mut server, who, ROUNDS, &both))
            })
            .collect();
        let (mut won, mut lost) = (0, 0);
        for racer in racers {
            let (w, l) = racer.join().expect("racer");
            won += w;
            lost += l;
        }
        assert_eq!(won + lost, 2 * ROUNDS as u64);
        assert!(won > 0, "someone wins");
        eprintln!("reg-race on {:?}: {won} won, {lost} lost", env.backend);
        // Every win and every blind patch is one version: none was lost or doubled.
        let theme = setup.ok("registry_theme_list", json!({"key": "race"}));
        assert_eq!(
            theme["items"][0]["version"],
            1 + won + 2 * ROUNDS as u64,
            "{theme}"
        );
    });
}
