//! Ranked searches walked while others work: `seele_search` and `scrolls_search` keep the order
//! their first page found (`coremcp_store::walk`), so an item that stays in the list
//! throughout a walk is seen exactly once, whatever is created, changed, claimed or closed
//! between its pages — on SQLite, whose bm25 rank moves with every change to the index, and
//! on PostgreSQL.

use std::collections::{BTreeMap, BTreeSet};

use coremcp_tests::plugins;
use coremcp_tests::stores::on_both;
use coremcp_tests::Server;
use serde_json::{json, Value};

/// The items of every page of `tool` from `args`, calling `between(page)` after each page that
/// has a next one; each item by `key`.
fn walk(
    s: &mut Server,
    tool: &str,
    mut args: Value,
    key: &str,
    mut between: impl FnMut(&mut Server, usize),
) -> Vec<String> {
    let mut seen = Vec::new();
    for page in 0..200 {
        let answer = s.ok(tool, args.clone());
        seen.extend(
            answer["items"]
                .as_array()
                .expect("items")
                .iter()
                .map(|i| i[key].as_str().expect(key).to_owned()),
        );
        match answer.get("next_cursor") {
            Some(cursor) => {
                args["cursor"] = cursor.clone();
                between(s, page);
            }
            None => return seen,
        }
    }
    panic!("{tool}: no last page");
}

/// Each of `items` exactly once in `seen`, and nothing twice.
fn once_each(seen: &[String], items: &BTreeSet<String>) {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for s in seen {
        *counts.entry(s.as_str()).or_default() += 1;
    }
    let twice: Vec<_> = counts.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "seen twice: {twice:?}");
    let missed: Vec<_> = items
        .iter()
        .filter(|i| !counts.contains_key(i.as_str()))
        .collect();
    assert!(missed.is_empty(), "never seen: {missed:?}");
}

#[test]
fn a_seele_search_walk_sees_each_node_once_while_nodes_are_written() {
    let dir = plugins(&["seele"]);
    on_both("walk-seele", |env| {
        let mut s = env.start(dir.path(), &[]);
        // 120 nodes whose rank differs: node i says "quorum" i % 7 + 1 times.
        let nodes: Vec<Value> = (0..120)
            .map(|i| {
                json!({"path": format!("walk/n{i:03}"), "title": format!("Node {i}"),
                       "body": format!("{} and other words", "quorum ".repeat(i % 7 + 1))})
            })
            .collect();
        s.ok("seele_import", json!({"nodes": nodes}));
        let all: BTreeSet<String> = (0..120).map(|i| format!("walk/n{i:03}")).collect();
        let mut made = 0;
        let seen = walk(
            &mut s,
            "seele_search",
            json!({"query": "quorum", "limit": 10}),
            "path",
            |s, page| {
                // New nodes that outrank every other, and old ones rewritten to rank higher:
                // the rank of every match moves.
                for _ in 0..3 {
                    s.ok(
                        "seele_write",
                        json!({"path": format!("walk/new{made:03}"), "title": "New",
                               "body": "quorum ".repeat(40)}),
                    );
                    made += 1;
                }
                let node = s.ok(
                    "seele_read",
                    json!({"path": format!("walk/n{:03}", 119 - page)}),
                );
                s.ok(
                    "seele_write",
                    json!({"id": node["id"], "body": "quorum ".repeat(30)}),
                );
            },
        );
        let old: Vec<String> = seen.iter().filter(|p| all.contains(*p)).cloned().collect();
        once_each(&seen, &all);
        assert_eq!(old.len(), 120);
        assert!(made >= 30, "{made} nodes written during the walk");
        // A cursor of a walk that is not kept is refused, naming the cursor.
        // (Cursors are the hex of a JSON array of their parts.)
        let gone: String = r#"["01NOSUCHWALK","10"]"#.bytes().map(|b| format!("{b:02x}")).collect();
        let err = s.refused("seele_search", json!({"query": "quorum", "cursor": gone}));
        assert!(
            err.contains("cursor") && err.contains("search again"),
            "{err}"
        );
        // One page that holds them all keeps no walk and has no cursor.
        let few = s.ok(
            "seele_search",
            json!({"query": "quorum", "path_prefix": "walk/n000"}),
        );
        assert!(few.get("next_cursor").is_none());
    });
}

#[test]
fn a_scrolls_search_walk_sees_each_open_item_once_while_items_are_claimed_closed_and_made() {
    let dir = plugins(&["scrolls"]);
    on_both("walk-scrolls", |env| {
        let mut s = env.start(dir.path(), &[]);
        s.ok(
            "scrolls_project_create",
            json!({"key": "WALK", "title": "Walks"}),
        );
        s.ok("scrolls_agent_register", json!({"name": "claimer"}));
        let mut keys = Vec::new();
        for i in 0..100 {
            let task = s.ok(
                "scrolls_task_create",
                json!({"parent": "WALK", "title": format!("quorum task {i}"),
                       "description": "quorum ".repeat(i % 5 + 1)}),
            );
            keys.push(task["key"].as_str().expect("key").to_owned());
        }
        let mut closed = BTreeSet::new();
        let seen = walk(
            &mut s,
            "scrolls_search",
            json!({"query": "quorum", "limit": 10}),
            "key",
            |s, page| {
                // Claimed items stay open (in the list); closed ones leave it; new ones come.
                let claim = &keys[99 - page];
                s.ok(
                    "scrolls_item_claim",
                    json!({"id": claim, "agent": "claimer"}),
                );
                let close = &keys[50 + page];
                s.ok("scrolls_task_close", json!({"id": close}));
                closed.insert(close.clone());
                s.ok(
                    "scrolls_task_create",
                    json!({"parent": "WALK", "title": "quorum quorum quorum new"}),
                );
            },
        );
        let stayed: BTreeSet<String> = keys
            .iter()
            .filter(|k| !closed.contains(*k))
            .cloned()
            .collect();
        once_each(&seen, &stayed);
        assert!(closed.len() >= 9, "{} closed during the walk", closed.len());
    });
}
