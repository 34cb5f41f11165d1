//! The Seele tools called as the host calls them, on a throwaway store of each backend, with
//! the same assertions on both: writes and revisions, ancestors made folders, front matter
//! order, links, moves, imports (unchanged, skip, replace, version, dry run), outlines, cuts
//! and ranked search with its filters.

use std::sync::Arc;

use coremcp_plugin_sdk::testing::call;
use coremcp_plugin_sdk::ToolError;
use coremcp_seele::schema::MIGRATIONS;
use coremcp_seele::GROUP;
use coremcp_store::plugin::serve_on_this_thread;
use coremcp_store::testing::Env;
use serde_json::{json, Value};

coremcp_store::both!(
    writes_make_revisions,
    imports_match_by_path,
    search_ranks_and_filters
);

fn ok(tool: &str, args: Value) -> Value {
    call(&GROUP, tool, args.clone()).unwrap_or_else(|e| panic!("{tool} {args}: {e}"))
}

fn refused(tool: &str, args: Value) -> ToolError {
    call(&GROUP, tool, args.clone()).expect_err(&format!("{tool} {args} is refused"))
}

fn paths(v: &Value, list: &str) -> Vec<String> {
    v[list]
        .as_array()
        .expect("list")
        .iter()
        .map(|i| i["path"].as_str().unwrap_or("").to_owned())
        .collect()
}

fn writes_make_revisions(env: &Env) {
    serve_on_this_thread(Arc::new(env.open(MIGRATIONS)));
    let node = ok(
        "seele_write",
        json!({
            "path": "core/architecture/relays.md", "title": "Relays",
            "body": "# Relays\nSee [failover](failover.md) and [the site](https://example.com).",
            "front_matter": {"zeta": 1, "owner": "ops", "alpha": [1, 2]},
            "tags": ["relay", "ha"], "project": "CORE", "kind": "adr"
        }),
    );
    assert_eq!(
        (
            node["path"].clone(),
            node["version"].clone(),
            node["created"].clone()
        ),
        (json!("core/architecture/relays"), json!(1), json!(true))
    );
    assert_eq!(
        node["folders_created"],
        json!(["core", "core/architecture"])
    );
    let id = node["id"].as_str().expect("id").to_owned();
    let taken = refused(
        "seele_write",
        json!({"path": "core/architecture/relays", "title": "x", "body": "y"}),
    );
    assert!(
        taken.message.contains(&id) && taken.message.contains("version 1"),
        "{taken}"
    );

    // Front matter keeps the writer's key order; a merge keeps old keys in place.
    let read = ok("seele_read", json!({"path": "core/architecture/relays"}));
    let keys: Vec<&String> = read["front_matter"]
        .as_object()
        .expect("fm")
        .keys()
        .collect();
    assert_eq!(keys, ["zeta", "owner", "alpha"]);
    assert_eq!(
        read["links"],
        json!([{"path": "core/architecture/failover", "rel": "references"}])
    );
    assert_eq!(read["kind"], "adr");

    let v2 = ok(
        "seele_write",
        json!({"id": id, "body": "# Relays\nRewritten.", "front_matter": {"owner": "core", "zeta": null, "new": true}, "expected_version": 1}),
    );
    assert_eq!(
        (v2["version"].clone(), v2["changed"].clone()),
        (json!(2), json!(true))
    );
    let stale = refused(
        "seele_write",
        json!({"id": id, "body": "late", "expected_version": 1}),
    );
    assert!(stale.message.contains("is at version 2"), "{stale}");
    let same = ok(
        "seele_write",
        json!({"id": id, "body": "# Relays\nRewritten."}),
    );
    assert_eq!(
        (same["version"].clone(), same["changed"].clone()),
        (json!(2), json!(false))
    );

    let now = ok("seele_read", json!({"id": id}));
    let keys: Vec<&String> = now["front_matter"]
        .as_object()
        .expect("fm")
        .keys()
        .collect();
    assert_eq!(keys, ["owner", "alpha", "new"]);
    assert_eq!(now["links"], json!([]));
    let old = ok("seele_read", json!({"id": id, "version": 1}));
    assert!(
        old["body"].as_str().expect("body").contains("failover"),
        "{old}"
    );
    assert_eq!(
        (old["version"].clone(), old["current_version"].clone()),
        (json!(1), json!(2))
    );
    let missing = refused("seele_read", json!({"id": id, "version": 9}));
    assert!(missing.message.contains("is at version 2"), "{missing}");
    let both = refused("seele_read", json!({"id": id, "path": "core"}));
    assert!(both.message.contains("exactly one"), "{both}");

    // The outline, by depth; a move takes the subtree along.
    ok(
        "seele_write",
        json!({"path": "core/architecture/relays/failover", "title": "Failover", "body": "b"}),
    );
    let folder = ok(
        "seele_read",
        json!({"path": "core", "include_children": true, "depth": 1}),
    );
    assert_eq!(paths(&folder, "children"), ["core/architecture"]);
    assert_eq!(folder["kind"], "folder");
    let deep = ok(
        "seele_read",
        json!({"path": "core", "include_children": true, "depth": 3}),
    );
    assert_eq!(
        paths(&deep, "children"),
        [
            "core/architecture",
            "core/architecture/relays",
            "core/architecture/relays/failover"
        ]
    );
    let moved = ok(
        "seele_write",
        json!({"id": id, "path": "ops/relays", "body": "# Relays\nRewritten."}),
    );
    assert_eq!(
        (moved["path"].clone(), moved["changed"].clone()),
        (json!("ops/relays"), json!(true))
    );
    let child = ok("seele_read", json!({"path": "ops/relays/failover"}));
    assert_eq!(child["title"], "Failover");
    let into_itself = refused(
        "seele_write",
        json!({"id": id, "path": "ops/relays/failover/x", "body": "b"}),
    );
    assert!(
        into_itself.message.contains("under itself"),
        "{into_itself}"
    );

    // A long body is cut at max_chars, says so, and reads on from its next offset: every
    // character exactly once.
    let long: String = (0..50_000)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    let big = ok(
        "seele_write",
        json!({"path": "big", "title": "Big", "body": long}),
    );
    let cut = ok("seele_read", json!({"id": big["id"], "max_chars": 1000}));
    assert_eq!(
        (
            cut["body_truncated"].clone(),
            cut["body_total_chars"].clone(),
            cut["body_next_offset"].clone()
        ),
        (json!(true), json!(50_000), json!(1000))
    );
    let (mut read, mut offset) = (String::new(), 0);
    loop {
        let piece = ok("seele_read", json!({"id": big["id"], "offset": offset}));
        assert!(
            serde_json::to_string(&piece).expect("json").chars().count()
                <= coremcp_plugin_sdk::budget::result_budget()
        );
        read.push_str(piece["body"].as_str().expect("body"));
        match piece["body_next_offset"].as_u64() {
            Some(next) => offset = next as usize,
            None => break,
        }
    }
    assert_eq!(read, long);
    let bad = refused(
        "seele_write",
        json!({"path": "a/../b", "title": "t", "body": "b"}),
    );
    assert!(bad.message.contains("\"path\""), "{bad}");
}

fn import_args(n: usize, body: &str) -> Value {
    let nodes: Vec<Value> = (0..n)
        .map(|i| json!({"path": format!("guide/part-{}/page-{i}.md", i % 4), "body": format!("# Page {i}\n{body} {i}"), "tags": ["guide"]}))
        .collect();
    json!({"nodes": nodes, "root_path": "docs", "project": "CORE", "source_ref": "CORE/docs@abc123"})
}

fn imports_match_by_path(env: &Env) {
    serve_on_this_thread(Arc::new(env.open(MIGRATIONS)));
    let dry = ok(
        "seele_import",
        json!({"dry_run": true, "nodes": import_args(200, "text")["nodes"], "root_path": "docs"}),
    );
    assert_eq!(
        (dry["created"].clone(), dry["dry_run"].clone()),
        (json!(200), json!(true))
    );
    refused("seele_read", json!({"path": "docs/guide/part-0/page-0"}));

    let first = ok("seele_import", import_args(200, "text"));
    assert_eq!(first["created"], 200);
    assert_eq!(
        first["folders_created"],
        json!([
            "docs",
            "docs/guide",
            "docs/guide/part-0",
            "docs/guide/part-1",
            "docs/guide/part-2",
            "docs/guide/part-3"
        ])
    );
    let listed = first["nodes"].as_array().expect("nodes").len()
        + first["more"].as_u64().unwrap_or(0) as usize;
    assert_eq!(listed, 200);
    let page = ok("seele_read", json!({"path": "docs/guide/part-1/page-5"}));
    assert_eq!(
        (
            page["title"].clone(),
            page["source_ref"].clone(),
            page["project"].clone()
        ),
        (
            json!("Page 5"),
            json!("CORE/docs@abc123:docs/guide/part-1/page-5"),
            json!("CORE")
        )
    );

    let again = ok("seele_import", import_args(200, "text"));
    assert_eq!(
        (
            again["created"].clone(),
            again["updated"].clone(),
            again["unchanged"].clone()
        ),
        (json!(0), json!(0), json!(200))
    );
    assert_eq!(
        ok("seele_read", json!({"path": "docs/guide/part-1/page-5"}))["version"],
        1
    );

    // A changed node: skip leaves it, version adds a revision, replace drops the history.
    let mut changed = import_args(2, "changed");
    changed["on_conflict"] = json!("skip");
    let skipped = ok("seele_import", changed.clone());
    assert_eq!(skipped["skipped"], 2);
    changed["on_conflict"] = json!("version");
    let versioned = ok("seele_import", changed.clone());
    assert_eq!(versioned["updated"], 2);
    let page = ok(
        "seele_read",
        json!({"path": "docs/guide/part-0/page-0", "version": 1}),
    );
    assert!(
        page["body"].as_str().expect("body").contains("text"),
        "{page}"
    );
    changed["on_conflict"] = json!("replace");
    changed["nodes"][0]["body"] = json!("replaced");
    ok("seele_import", changed.clone());
    let gone = refused(
        "seele_read",
        json!({"path": "docs/guide/part-0/page-0", "version": 1}),
    );
    assert!(gone.message.contains("not kept"), "{gone}");
    assert_eq!(
        ok("seele_read", json!({"path": "docs/guide/part-0/page-0"}))["version"],
        3
    );

    let twice = refused(
        "seele_import",
        json!({"nodes": [{"path": "a", "body": "x"}, {"path": "a.md", "body": "y"}]}),
    );
    assert!(twice.message.contains("nodes[1].path"), "{twice}");
    let too_many = refused("seele_import", import_args(201, "x"));
    assert!(too_many.message.contains("nodes"), "{too_many}");
}

fn search_ranks_and_filters(env: &Env) {
    serve_on_this_thread(Arc::new(env.open(MIGRATIONS)));
    let filler = "The quick brown fox jumps over the lazy dog. ".repeat(20);
    let write = |path: &str, title: &str, body: String, extra: Value| {
        let mut args = json!({"path": path, "title": title, "body": body});
        for (k, v) in extra.as_object().expect("extra") {
            args[k] = v.clone();
        }
        ok("seele_write", args)
    };
    write(
        "core/failover",
        "Relay failover",
        format!("failover failover failover. {filler}"),
        json!({"project": "CORE", "tags": ["relay"], "kind": "runbook"}),
    );
    write(
        "core/relays",
        "Relays",
        format!("A relay may failover once. {filler}"),
        json!({"project": "CORE", "tags": ["relay"]}),
    );
    write(
        "ops/failover",
        "Ops notes",
        format!("{filler} failover at the very end"),
        json!({"front_matter": {"theme": "reliability"}, "kind": "note"}),
    );
    write("ops/other", "Other", filler.clone(), json!({}));

    let found = ok("seele_search", json!({"query": "failover"}));
    assert_eq!(
        paths(&found, "items"),
        ["core/failover", "core/relays", "ops/failover"]
    );
    let snippet = found["items"][2]["snippet"].as_str().expect("snippet");
    assert!(
        snippet.starts_with('…') && snippet.contains("failover"),
        "{snippet}"
    );
    assert_eq!(
        paths(
            &ok(
                "seele_search",
                json!({"query": "failover", "project": "CORE"})
            ),
            "items"
        ),
        ["core/failover", "core/relays"]
    );
    assert_eq!(
        paths(
            &ok(
                "seele_search",
                json!({"query": "failover", "theme": "reliability"})
            ),
            "items"
        ),
        ["ops/failover"]
    );
    assert_eq!(
        paths(
            &ok(
                "seele_search",
                json!({"query": "failover", "kinds": ["runbook", "note"]})
            ),
            "items"
        ),
        ["core/failover", "ops/failover"]
    );
    assert_eq!(
        paths(
            &ok(
                "seele_search",
                json!({"query": "failover", "tags": ["relay"], "limit": 1})
            ),
            "items"
        ),
        ["core/failover"]
    );
    assert_eq!(
        paths(
            &ok(
                "seele_search",
                json!({"query": "failover", "path_prefix": "ops"})
            ),
            "items"
        ),
        ["ops/failover"]
    );
    assert_eq!(
        paths(
            &ok(
                "seele_search",
                json!({"query": "relay", "path_prefix": "core/failover"})
            ),
            "items"
        ),
        ["core/failover"]
    );
    // A tag is searched as a word; a hostile query is words, not syntax.
    assert_eq!(
        paths(
            &ok("seele_search", json!({"query": "relay failover"})),
            "items"
        ),
        ["core/failover", "core/relays"]
    );
    let hostile = ok(
        "seele_search",
        json!({"query": "\"failover\" OR * -x NEAR(' ; DROP TABLE seele_node; --"}),
    );
    assert_eq!(hostile["items"], json!([]));
    let none = refused("seele_search", json!({"query": "*** --"}));
    assert!(none.message.contains("no words"), "{none}");
    assert_eq!(
        ok("seele_search", json!({"query": "fox"}))["items"]
            .as_array()
            .expect("items")
            .len(),
        4
    );
}
