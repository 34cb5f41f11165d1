//! The Scrolls group through the real `coremcp` binary, on both stores (a fresh SQLite and a
//! fresh PostgreSQL database): a walk from theme to subtask with a claim, a comment, the
//! ready queue, progress and a cascading close; and two processes creating items in one
//! project at once, which get distinct numbers without a gap.

use coremcp_tests::plugins;
use coremcp_tests::stores::on_both;
use serde_json::{json, Value};

fn keys(v: &Value) -> Vec<String> {
    let items = v["items"].as_array().expect("items");
    items
        .iter()
        .map(|i| i["key"].as_str().unwrap_or("").to_owned())
        .collect()
}

#[test]
fn a_walk_from_theme_to_subtask() {
    let dir = plugins(&["scrolls"]);
    on_both("scrolls-walk", |env| {
        let mut s = env.start(dir.path(), &[]);
        s.ok(
            "scrolls_theme_create",
            json!({"key": "reliability", "title": "Reliability"}),
        );
        s.ok(
            "scrolls_project_create",
            json!({"key": "CORE", "title": "Core MCP", "theme": "reliability"}),
        );
        let epic = s.ok(
            "scrolls_epic_create",
            json!({"project": "CORE", "title": "Relays"}),
        );
        assert_eq!(epic["key"], "CORE-1");
        let story = s.ok(
            "scrolls_story_create",
            json!({"parent": "CORE-1", "title": "Fail over", "priority": "high"}),
        );
        assert_eq!(story["key"], "CORE-2");
        let subtask = s.ok(
            "scrolls_subtask_create",
            json!({"parent": "CORE-2", "title": "Kill a relay"}),
        );
        assert_eq!(subtask["key"], "CORE-3");

        s.ok(
            "scrolls_agent_register",
            json!({"name": "ada", "kind": "claude_code"}),
        );
        let claimed = s.ok(
            "scrolls_item_claim",
            json!({"id": "CORE-3", "agent": "ada"}),
        );
        assert_eq!(claimed["status"], "in_progress");
        s.ok(
            "scrolls_comment_add",
            json!({"id": "CORE-3", "body": "the relay died on cue"}),
        );
        assert_eq!(
            keys(&s.ok("scrolls_search", json!({"query": "died"}))),
            ["CORE-3"]
        );
        assert_eq!(keys(&s.ok("scrolls_ready_list", json!({}))), ["CORE-2"]);

        let refused = s.refused("scrolls_epic_close", json!({"id": "CORE-1"}));
        assert!(refused.contains("open descendants"), "{refused}");
        let closed = s.ok(
            "scrolls_epic_close",
            json!({"id": "CORE-1", "cascade": true}),
        );
        assert_eq!(closed["closed"], json!(["CORE-1", "CORE-2", "CORE-3"]));
        let progress = s.ok("scrolls_progress_get", json!({"id": "CORE"}));
        assert_eq!(
            (progress["total"].clone(), progress["done"].clone()),
            (json!(4), json!(3))
        );

        // What the service wrote survives the process.
        drop(s);
        let mut again = env.start(dir.path(), &[]);
        let story = again.ok("scrolls_story_get", json!({"id": "CORE-2"}));
        assert_eq!(story["status"], "done");
    });
}

#[test]
fn two_processes_creating_at_once_get_distinct_numbers_without_a_gap() {
    const EACH: usize = 100;
    let dir = plugins(&["scrolls"]);
    on_both("scrolls-seq", |env| {
        let mut setup = env.start(dir.path(), &[]);
        setup.ok(
            "scrolls_project_create",
            json!({"key": "CORE", "title": "Core"}),
        );
        let mut keys: Vec<u64> = std::thread::scope(|scope| {
            let writers: Vec<_> = (0..2)
                .map(|w| {
                    let mut server = env.start(dir.path(), &[]);
                    scope.spawn(move || {
                        (0..EACH)
                            .map(|i| {
                                let task = server.ok(
                                    "scrolls_task_create",
                                    json!({"parent": "CORE", "title": format!("w{w} t{i}")}),
                                );
                                let key = task["key"].as_str().expect("key");
                                key.strip_prefix("CORE-")
                                    .and_then(|n| n.parse().ok())
                                    .expect("CORE-n")
                            })
                            .collect::<Vec<u64>>()
                    })
                })
                .collect();
            writers
                .into_iter()
                .flat_map(|w| w.join().expect("a writer"))
                .collect()
        });
        keys.sort_unstable();
        assert_eq!(keys, (1..=2 * EACH as u64).collect::<Vec<_>>());
    });
}

/// Through relays: an agent's `coremcp stdio --relay` sends Scrolls calls to a `coremcp serve
/// --service` on PostgreSQL, and a second agent through another relay on the same store sees
/// the first one's items.
#[test]
fn through_relays_a_second_agent_sees_the_first_ones_items() {
    use coremcp_tests::http::Serve;
    use coremcp_tests::stores::StoreEnv;
    use coremcp_tests::{Server, TempDir};

    let dir = plugins(&["scrolls"]);
    let Some(store) = StoreEnv::postgres("scrolls-relays") else {
        return;
    };
    let relay = |ip: &str| {
        let addr = std::net::TcpListener::bind((ip, 0))
            .expect("bind")
            .local_addr()
            .expect("addr");
        let args = store.args();
        let mut all: Vec<&str> = vec!["--service"];
        all.extend(args.iter().map(String::as_str));
        Serve::start_on(dir.path(), &addr.to_string(), &all, &[])
    };
    let agent = |relay: &Serve| {
        let data = TempDir::new("scrolls-agent");
        let data = data.path().to_string_lossy().into_owned();
        let url = format!("http://{}/mcp", relay.addr);
        let mut server = Server::start(dir.path(), &["--data", &data, "--relay", &url], &[]);
        server.initialize();
        server
    };
    let (first, second) = (relay("127.0.0.2"), relay("127.0.0.3"));
    let mut one = agent(&first);
    one.ok(
        "scrolls_project_create",
        json!({"key": "CORE", "title": "Core"}),
    );
    one.ok(
        "scrolls_task_create",
        json!({"parent": "CORE", "title": "Seen from afar"}),
    );
    let mut two = agent(&second);
    let task = two.ok("scrolls_task_get", json!({"id": "CORE-1"}));
    assert_eq!(task["title"], "Seen from afar");
    two.ok("scrolls_agent_register", json!({"name": "bob"}));
    two.ok(
        "scrolls_item_claim",
        json!({"id": "CORE-1", "agent": "bob"}),
    );
    let claimed = one.ok("scrolls_task_get", json!({"id": "CORE-1"}));
    assert_eq!(claimed["assignee"], "bob");
}
