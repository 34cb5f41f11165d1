//! The Scrolls tools besides the level matrix, called as the host calls them on a throwaway
//! store of each backend, with the same assertions on both: agents, claims, comments, search,
//! the ready queue, progress, the board, moves and the activity feed.

use std::sync::Arc;

use coremcp_plugin_sdk::testing::call;
use coremcp_plugin_sdk::ToolError;
use coremcp_scrolls::schema::MIGRATIONS;
use coremcp_scrolls::GROUP;
use coremcp_store::plugin::serve_on_this_thread;
use coremcp_store::testing::Env;
use serde_json::{json, Value};

coremcp_store::both!(a_day_of_work, views_of_a_project);

fn ok(tool: &str, args: Value) -> Value {
    call(&GROUP, tool, args.clone()).unwrap_or_else(|e| panic!("{tool} {args}: {e}"))
}

fn refused(tool: &str, args: Value) -> ToolError {
    call(&GROUP, tool, args.clone()).expect_err(&format!("{tool} {args} is refused"))
}

fn keys(v: &Value) -> Vec<String> {
    let items = v["items"].as_array().expect("items");
    items
        .iter()
        .map(|i| i["key"].as_str().unwrap_or("").to_owned())
        .collect()
}

/// A project CORE with an epic CORE-1 and two stories under it, CORE-2 (high) and CORE-3.
fn project(env: &Env) {
    serve_on_this_thread(Arc::new(env.open(MIGRATIONS)));
    ok(
        "scrolls_project_create",
        json!({"key": "CORE", "title": "Core MCP"}),
    );
    ok(
        "scrolls_epic_create",
        json!({"project": "CORE", "title": "Relays"}),
    );
    ok(
        "scrolls_story_create",
        json!({"parent": "CORE-1", "title": "Relay failover", "priority": "high", "estimate": 5}),
    );
    ok(
        "scrolls_story_create",
        json!({"parent": "CORE-1", "title": "Relay metrics", "estimate": 3}),
    );
}

fn a_day_of_work(env: &Env) {
    project(env);
    let ada = ok(
        "scrolls_agent_register",
        json!({"name": "ada", "kind": "claude_code", "capabilities": ["rust"]}),
    );
    assert_eq!(
        (ada["created"].clone(), ada["open_items"].clone()),
        (json!(true), json!(0))
    );
    ok("scrolls_agent_register", json!({"name": "bob"}));
    let again = ok("scrolls_agent_register", json!({"name": "ada"}));
    assert_eq!(
        (again["created"].clone(), again["version"].clone()),
        (json!(false), json!(1))
    );

    let claimed = ok(
        "scrolls_item_claim",
        json!({"id": "CORE-2", "agent": "ada"}),
    );
    assert_eq!(
        (claimed["status"].clone(), claimed["assignee"].clone()),
        (json!("in_progress"), json!("ada"))
    );
    let held = refused(
        "scrolls_item_claim",
        json!({"id": "CORE-2", "agent": "bob"}),
    );
    assert!(held.message.contains("held by ada"), "{held}");

    ok(
        "scrolls_comment_add",
        json!({"id": "CORE-2", "body": "the quokka drill passed", "author": "ada"}),
    );
    ok(
        "scrolls_comment_add",
        json!({"id": "CORE-2", "body": "second note"}),
    );
    let comments = ok("scrolls_comment_list", json!({"id": "CORE-2", "limit": 1}));
    assert_eq!(comments["items"][0]["body"], "second note");
    assert!(comments.get("next_cursor").is_some());

    assert_eq!(
        keys(&ok("scrolls_search", json!({"query": "quokka"}))),
        ["CORE-2"]
    );
    assert_eq!(
        keys(&ok(
            "scrolls_search",
            json!({"query": "relay", "levels": ["story"]})
        )),
        ["CORE-2", "CORE-3"]
    );
    assert_eq!(
        keys(&ok(
            "scrolls_search",
            json!({"query": "\"relay\" * -metrics"})
        )),
        ["CORE-3"]
    );

    let ada = ok("scrolls_agent_get", json!({"name": "ada"}));
    assert_eq!(keys(&json!({"items": ada["work"]})), ["CORE-2"]);
    let listed = ok("scrolls_agent_list", json!({"capability": "rust"}));
    assert_eq!(listed["items"].as_array().map(Vec::len), Some(1));
    let paused = ok(
        "scrolls_agent_update",
        json!({"name": "bob", "status": "paused", "expected_version": 1}),
    );
    assert_eq!(paused["status"], "paused");
    assert_eq!(
        ok("scrolls_agent_list", json!({}))["items"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );

    let deleted = ok("scrolls_agent_delete", json!({"name": "ada"}));
    assert_eq!(deleted["reassigned"], 1);
    assert!(deleted.get("to").is_none(), "{deleted}");
    let freed = ok("scrolls_story_get", json!({"id": "CORE-2"}));
    assert!(freed.get("assignee").is_none(), "{freed}");

    let feed = ok("scrolls_activity_list", json!({"scope": "CORE-2"}));
    let actions: Vec<&str> = feed["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| i["action"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(actions, ["commented", "commented", "claimed", "created"]);
}

fn views_of_a_project(env: &Env) {
    project(env);
    ok(
        "scrolls_task_create",
        json!({"parent": "CORE", "title": "Docs", "depends_on": ["CORE-3"], "priority": "urgent"}),
    );
    ok("scrolls_story_close", json!({"id": "CORE-2"}));
    // CORE-4 waits on the open CORE-3.
    assert_eq!(
        keys(&ok("scrolls_ready_list", json!({"project": "CORE"}))),
        ["CORE-3"]
    );
    ok(
        "scrolls_story_close",
        json!({"id": "CORE-3", "resolution": "cancelled"}),
    );
    assert_eq!(keys(&ok("scrolls_ready_list", json!({}))), ["CORE-4"]);

    let progress = ok(
        "scrolls_progress_get",
        json!({"id": "CORE-1", "since": "2000-01-01T00:00:00Z"}),
    );
    assert_eq!(
        progress["total"], 2,
        "the epic is not one of its own items: {progress}"
    );
    assert_eq!(progress["done"], 1);
    assert_eq!(
        progress["percent_done"], 100.0,
        "the cancelled story is left out: {progress}"
    );
    assert_eq!(progress["percent_done_by_estimate"], 100.0, "{progress}");
    assert_eq!(progress["closed_since"], 2);
    let by_level = ok("scrolls_progress_get", json!({"id": "CORE", "by": "level"}));
    let groups: Vec<(String, i64)> = by_level["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .map(|g| {
            (
                g["value"].as_str().unwrap_or("").to_owned(),
                g["count"].as_i64().unwrap_or(0),
            )
        })
        .collect();
    assert_eq!(
        groups,
        [
            ("epic".to_owned(), 1),
            ("story".to_owned(), 2),
            ("task".to_owned(), 1)
        ],
        "the project is not one of its own items"
    );

    let board = ok(
        "scrolls_board_get",
        json!({"scope": "CORE", "limit_per_column": 1}),
    );
    let column = |status: &str| {
        board["columns"]
            .as_array()
            .expect("columns")
            .iter()
            .find(|c| c["status"] == status)
            .cloned()
            .expect(status)
    };
    assert_eq!(
        (column("open")["count"].clone(), keys(&column("open"))),
        (json!(1), vec!["CORE-4".to_owned()])
    );
    assert_eq!(column("done")["count"], 1);
    let not_a_scope = refused("scrolls_board_get", json!({"scope": "CORE-4"}));
    assert!(
        not_a_scope.message.contains("not a project or an epic"),
        "{not_a_scope}"
    );

    ok(
        "scrolls_epic_create",
        json!({"project": "CORE", "title": "Second"}),
    );
    let moved = ok(
        "scrolls_item_move",
        json!({"id": "CORE-4", "new_parent": "CORE-5"}),
    );
    assert_eq!(
        (moved["key"].clone(), moved["parent"].clone()),
        (json!("CORE-4"), json!("CORE-5"))
    );
    let wrong = refused(
        "scrolls_item_move",
        json!({"id": "CORE-4", "new_parent": "CORE-2"}),
    );
    assert!(
        wrong.message.contains("a task cannot sit under a story"),
        "{wrong}"
    );
}
