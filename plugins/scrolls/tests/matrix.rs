//! The 36 level tools, called as the host calls them (schema check, then the handler) on a
//! throwaway store of each backend, with the same assertions on both.

use std::sync::Arc;

use coremcp_plugin_sdk::catalog;
use coremcp_plugin_sdk::testing::call;
use coremcp_plugin_sdk::{Group, ToolError};
use coremcp_scrolls::matrix::TOOLS;
use coremcp_scrolls::schema::MIGRATIONS;
use coremcp_store::plugin::serve_on_this_thread;
use coremcp_store::testing::Env;
use serde_json::{json, Value};

static LEVEL_TOOLS: Group = Group::new(&catalog::SCROLLS, "test", TOOLS);

coremcp_store::both!(
    a_walk_through_every_level,
    refusals_name_what_was_wrong,
    lists_filter_and_page
);

fn open(env: &Env) {
    serve_on_this_thread(Arc::new(env.open(MIGRATIONS)));
}

fn ok(tool: &str, args: Value) -> Value {
    call(&LEVEL_TOOLS, tool, args.clone()).unwrap_or_else(|e| panic!("{tool} {args}: {e}"))
}

fn refused(tool: &str, args: Value) -> ToolError {
    call(&LEVEL_TOOLS, tool, args.clone()).expect_err(&format!("{tool} {args} is refused"))
}

#[test]
fn the_table_is_the_catalogs_first_36_with_checked_schemas() {
    let names: Vec<&str> = TOOLS.iter().map(|t| t.name).collect();
    let catalog: Vec<&str> = catalog::SCROLLS.names().take(36).collect();
    assert_eq!(names, catalog);
    for tool in TOOLS {
        let schema = tool.handler.schema();
        coremcp_plugin_sdk::schema::check_schema(&schema)
            .unwrap_or_else(|e| panic!("{}: {e}", tool.name));
        assert!(!tool.description.is_empty(), "{}", tool.name);
    }
    let create = TOOLS[20].handler.schema();
    assert_eq!(
        create["required"],
        json!(["parent", "title"]),
        "story create"
    );
    assert!(create["properties"]["acceptance_criteria"].is_object());
    assert!(
        TOOLS[14].handler.schema()["properties"]
            .get("acceptance_criteria")
            .is_none(),
        "epic create"
    );
}

fn a_walk_through_every_level(env: &Env) {
    open(env);
    ok(
        "scrolls_theme_create",
        json!({"key": "reliability", "title": "Reliability"}),
    );
    let project = ok(
        "scrolls_project_create",
        json!({"key": "CORE", "title": "Core MCP", "theme": "reliability"}),
    );
    assert_eq!(
        (project["key"].clone(), project["parent"].clone()),
        (json!("CORE"), json!("reliability"))
    );
    let epic = ok(
        "scrolls_epic_create",
        json!({"project": "CORE", "title": "Relays", "priority": "high"}),
    );
    assert_eq!(
        (
            epic["key"].clone(),
            epic["project"].clone(),
            epic["priority"].clone()
        ),
        (json!("CORE-1"), json!("CORE"), json!("high"))
    );
    let story = ok(
        "scrolls_story_create",
        json!({"parent": "CORE-1", "title": "Fail over", "labels": ["relay"], "estimate": 3,
            "acceptance_criteria": ["the next relay answers"]}),
    );
    assert_eq!(story["key"], "CORE-2");
    assert_eq!(
        story["acceptance_criteria"],
        json!(["the next relay answers"])
    );
    assert_eq!(
        (story["labels"].clone(), story["estimate"].clone()),
        (json!(["relay"]), json!(3.0))
    );
    let task = ok(
        "scrolls_task_create",
        json!({"parent": "CORE", "title": "Write the drill", "depends_on": ["CORE-2"],
            "due_date": "2026-12-31"}),
    );
    assert_eq!(
        (task["key"].clone(), task["version"].clone()),
        (json!("CORE-3"), json!(1))
    );
    let subtask = ok(
        "scrolls_subtask_create",
        json!({"parent": "CORE-2", "title": "Kill the first relay"}),
    );
    // What a create answers is the item as a get reads it, besides what only a get adds.
    for (level, created) in [
        ("project", &project),
        ("epic", &epic),
        ("story", &story),
        ("task", &task),
        ("subtask", &subtask),
    ] {
        let mut got = ok(
            &format!("scrolls_{level}_get"),
            json!({"id": created["key"], "include_children": false}),
        );
        got.as_object_mut()
            .expect("an item")
            .retain(|k, _| k != "depends_on");
        assert_eq!(&got, created, "{level}");
    }

    let got = ok("scrolls_task_get", json!({"id": "CORE-3"}));
    assert_eq!(
        (got["depends_on"].clone(), got["due_date"].clone()),
        (json!(["CORE-2"]), json!("2026-12-31"))
    );
    let tree = ok("scrolls_project_get", json!({"id": "CORE", "depth": 3}));
    let children: Vec<&str> = tree["children"]
        .as_array()
        .expect("children")
        .iter()
        .map(|c| c["key"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(children, ["CORE-1", "CORE-3"]);
    assert_eq!(
        tree["children"][0]["children"][0]["children"][0]["key"],
        "CORE-4"
    );

    let updated = ok(
        "scrolls_story_update",
        json!({"id": "CORE-2", "status": "in_progress", "labels": ["relay", "ops"],
            "expected_version": 1}),
    );
    assert_eq!(
        (updated["version"].clone(), updated["status"].clone()),
        (json!(2), json!("in_progress"))
    );
    let same = ok(
        "scrolls_story_update",
        json!({"id": "CORE-2", "labels": ["relay", "ops"]}),
    );
    assert_eq!(same["version"], 2, "a patch that changes nothing");
    let conflict = refused(
        "scrolls_story_update",
        json!({"id": "CORE-2", "title": "x", "expected_version": 1}),
    );
    assert!(conflict.message.contains("is at version 2"), "{conflict}");

    let closing = refused("scrolls_epic_close", json!({"id": "CORE-1"}));
    assert!(closing.message.contains("open descendants"), "{closing}");
    let closed = ok(
        "scrolls_epic_close",
        json!({"id": "CORE-1", "cascade": true, "resolution": "wont_do", "comment": "not now"}),
    );
    assert_eq!(closed["closed"], json!(["CORE-1", "CORE-2", "CORE-4"]));
    assert_eq!(
        (
            closed["item"]["status"].clone(),
            closed["item"]["resolution"].clone()
        ),
        (json!("cancelled"), json!("wont_do"))
    );
    let reopened = ok(
        "scrolls_epic_update",
        json!({"id": "CORE-1", "status": "open"}),
    );
    assert!(
        reopened.get("resolution").is_none() && reopened.get("closed_at").is_none(),
        "{reopened}"
    );
    let deleted = ok(
        "scrolls_theme_delete",
        json!({"id": "reliability", "cascade": true}),
    );
    assert_eq!(deleted["deleted"].as_array().map(Vec::len), Some(6));
}

fn refusals_name_what_was_wrong(env: &Env) {
    open(env);
    ok(
        "scrolls_project_create",
        json!({"key": "CORE", "title": "Core"}),
    );
    ok(
        "scrolls_epic_create",
        json!({"project": "CORE", "title": "E"}),
    );
    let cases = [
        (
            "scrolls_story_get",
            json!({"id": "CORE-1"}),
            "CORE-1 is an epic, not a story: use scrolls_epic_get",
        ),
        (
            "scrolls_subtask_create",
            json!({"parent": "CORE-1", "title": "s"}),
            "a subtask cannot sit under an epic",
        ),
        (
            "scrolls_epic_create",
            json!({"project": "CORE-9", "title": "e"}),
            "there is no item CORE-9",
        ),
        (
            "scrolls_task_update",
            json!({"id": "CORE-1", "status": "done"}),
            "use scrolls_task_close",
        ),
        (
            "scrolls_task_create",
            json!({"parent": "CORE", "title": "t", "due_date": "2026-02-30"}),
            "\"due_date\"",
        ),
        (
            "scrolls_task_create",
            json!({"parent": "CORE", "title": "t", "assignee": "nobody"}),
            "register it with scrolls_agent_register",
        ),
        (
            "scrolls_theme_create",
            json!({"key": "CORE", "title": "t"}),
            "not a theme key",
        ),
        (
            "scrolls_project_create",
            json!({"key": "CORE", "title": "again"}),
            "already exists",
        ),
        (
            "scrolls_task_create",
            json!({"parent": "CORE", "title": "t", "depends_on": ["CORE-77"]}),
            "depends_on[0]",
        ),
    ];
    for (tool, args, needle) in cases {
        let err = refused(tool, args.clone());
        assert!(
            err.message.contains(needle),
            "{:?} {tool} {args}: {err}",
            env.kind()
        );
    }
}

fn lists_filter_and_page(env: &Env) {
    open(env);
    ok(
        "scrolls_project_create",
        json!({"key": "CORE", "title": "Core"}),
    );
    ok(
        "scrolls_project_create",
        json!({"key": "WEB", "title": "Web"}),
    );
    for (project, title, labels) in [
        ("CORE", "relay one", ["a"]),
        ("WEB", "page", ["b"]),
        ("CORE", "relay two", ["b"]),
        ("CORE", "docs", ["a"]),
    ] {
        ok(
            "scrolls_task_create",
            json!({"parent": project, "title": title, "labels": labels}),
        );
    }
    ok("scrolls_task_close", json!({"id": "CORE-2"}));
    let keys = |v: &Value| -> Vec<String> {
        let items = v["items"].as_array().expect("items");
        items
            .iter()
            .map(|i| i["key"].as_str().unwrap_or("").to_owned())
            .collect()
    };
    let list = |args: Value| keys(&ok("scrolls_task_list", args));
    assert_eq!(list(json!({"project": "CORE"})), ["CORE-1", "CORE-3"]);
    assert_eq!(
        list(json!({"project": "CORE", "include_closed": true})),
        ["CORE-1", "CORE-2", "CORE-3"]
    );
    assert_eq!(list(json!({"label": "a"})), ["CORE-1", "CORE-3"]);
    assert_eq!(list(json!({"query": "RELAY"})), ["CORE-1"]);
    assert_eq!(list(json!({"status": ["done"]})), ["CORE-2"]);
    let first = ok("scrolls_task_list", json!({"limit": 1}));
    let next = ok(
        "scrolls_task_list",
        json!({"limit": 1, "cursor": first["next_cursor"]}),
    );
    assert_eq!(
        (keys(&first), keys(&next)),
        (vec!["CORE-1".to_owned()], vec!["WEB-1".to_owned()])
    );
    let last = ok(
        "scrolls_task_list",
        json!({"limit": 1, "cursor": next["next_cursor"]}),
    );
    assert_eq!(keys(&last), ["CORE-3"]);
    assert!(last.get("next_cursor").is_none(), "{last}");
    let other = refused("scrolls_epic_list", json!({"cursor": first["next_cursor"]}));
    assert!(other.message.contains("another list"), "{other}");
}
