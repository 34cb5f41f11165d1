//! The Scrolls group through the real `coremcp` binary, on both stores (a fresh SQLite and a
//! fresh PostgreSQL database): a walk from theme to subtask with a claim, a comment, the
//! ready queue, progress and a cascading close; two processes creating items in one project
//! at once, which get distinct numbers without a gap, and claiming the same items at once,
//! where each item has one winner; and a process killed in the middle of cascading closes,
//! which leave each subtree all closed or all open.

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
            (json!(3), json!(3)),
            "the project is not one of its own items"
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
    const EACH: usize = 500;
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

/// Two processes, each with its own agent, claim the same 200 items at once in the same order:
/// every item has exactly one winner, the loser is told who holds it, and the store agrees.
#[test]
fn two_processes_claiming_the_same_items_get_one_winner_each() {
    const ITEMS: usize = 200;
    let dir = plugins(&["scrolls"]);
    on_both("scrolls-claims", |env| {
        let mut setup = env.start(dir.path(), &[]);
        setup.ok(
            "scrolls_project_create",
            json!({"key": "CORE", "title": "Core"}),
        );
        for i in 0..ITEMS {
            setup.ok(
                "scrolls_task_create",
                json!({"parent": "CORE", "title": format!("t{i}")}),
            );
        }
        let outcomes: Vec<Vec<Result<(), String>>> = std::thread::scope(|scope| {
            let claimers: Vec<_> = ["ada", "bob"]
                .into_iter()
                .map(|agent| {
                    let mut server = env.start(dir.path(), &[]);
                    server.ok("scrolls_agent_register", json!({"name": agent}));
                    scope.spawn(move || {
                        (1..=ITEMS)
                            .map(|n| {
                                let args = json!({"id": format!("CORE-{n}"), "agent": agent});
                                let result = server.call("scrolls_item_claim", args);
                                match coremcp_tests::is_error(&result) {
                                    false => Ok(()),
                                    true => Err(coremcp_tests::text(&result).to_owned()),
                                }
                            })
                            .collect()
                    })
                })
                .collect();
            claimers
                .into_iter()
                .map(|c| c.join().expect("a claimer"))
                .collect()
        });
        let (mut ada_won, mut bob_won) = (0, 0);
        for n in 1..=ITEMS {
            let key = format!("CORE-{n}");
            let (ada, bob) = (&outcomes[0][n - 1], &outcomes[1][n - 1]);
            let (winner, refusal) = match (ada, bob) {
                (Ok(()), Err(refusal)) => ("ada", refusal),
                (Err(refusal), Ok(())) => ("bob", refusal),
                both => panic!("{key}: not exactly one winner: {both:?}"),
            };
            if winner == "ada" {
                ada_won += 1;
            } else {
                bob_won += 1;
            }
            assert!(
                refusal.contains(&format!("{key} is held by {winner}")),
                "{key}: {refusal}"
            );
            let item = setup.ok("scrolls_task_get", json!({"id": key}));
            assert_eq!(item["assignee"], winner, "{key}");
        }
        assert_eq!(ada_won + bob_won, ITEMS);
    });
}

/// A process killed while it closes a large subtree with `cascade` leaves the subtree all
/// closed or all open, its activity rows with it. The kills land at spread fractions of the
/// time a whole close took, so some fall inside the transaction.
#[test]
fn a_kill_during_a_cascading_close_leaves_all_or_none_closed() {
    use std::time::Instant;
    const EPICS: usize = 5;
    const STORIES: usize = 300;
    let dir = plugins(&["scrolls"]);
    on_both("scrolls-kill", |env| {
        let mut setup = env.start(dir.path(), &[]);
        setup.ok(
            "scrolls_project_create",
            json!({"key": "CORE", "title": "Core"}),
        );
        let mut epics = Vec::new();
        for e in 0..EPICS {
            let epic = setup.ok(
                "scrolls_epic_create",
                json!({"project": "CORE", "title": format!("e{e}")}),
            );
            let epic = epic["key"].as_str().expect("key").to_owned();
            for s in 0..STORIES {
                setup.ok(
                    "scrolls_story_create",
                    json!({"parent": epic, "title": format!("e{e} s{s}")}),
                );
            }
            epics.push(epic);
        }
        // How long one whole close takes, on the first epic.
        let started = Instant::now();
        let closed = setup.ok(
            "scrolls_epic_close",
            json!({"id": epics[0], "cascade": true}),
        );
        let whole = started.elapsed();
        assert_eq!(closed["closed_count"], STORIES + 1);
        assert_eq!(closed["closed"].as_array().map(Vec::len), Some(200));
        assert_eq!(closed["more"], STORIES + 1 - 200);
        drop(setup);
        for (i, epic) in epics.iter().enumerate().skip(1) {
            let mut victim = env.start(dir.path(), &[]);
            // Warm: the plugin loaded and the store open, so the close starts at once.
            victim.ok(
                "scrolls_epic_get",
                json!({"id": epic, "include_children": false}),
            );
            victim.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "scrolls_epic_close",
                           "arguments": {"id": epic, "cascade": true}}}));
            std::thread::sleep(whole.mul_f64(i as f64 / EPICS as f64));
            victim.signal(libc::SIGKILL);
            drop(victim);
        }
        let mut after = env.start(dir.path(), &[]);
        let mut all_closed = 0;
        for epic in &epics {
            let progress = after.ok("scrolls_progress_get", json!({"id": epic}));
            let (total, done) = (&progress["total"], &progress["done"]);
            assert_eq!(total, &json!(STORIES), "{epic}");
            assert!(
                done == &json!(0) || done == total,
                "{epic}: {done} of {total} closed after the kill"
            );
            if done == total {
                all_closed += 1;
            }
            let logged = env.query(
                "scrolls",
                &format!(
                    "SELECT COUNT(*) FROM scrolls_activity WHERE action = 'closed' AND \
                     (item_key = '{epic}' OR item_id IN (SELECT s.id FROM scrolls_item s \
                     JOIN scrolls_item e ON e.id = s.parent_id WHERE e.key = '{epic}'))"
                ),
            );
            let logged = logged[0][0].as_deref().unwrap_or("");
            let expected = if done == total { STORIES + 1 } else { 0 };
            assert_eq!(logged, expected.to_string(), "{epic}: its close log");
        }
        eprintln!(
            "scrolls-kill: {all_closed} of {EPICS} epics closed whole (one close took {:?})",
            whole
        );
        // The killed processes left the store writable.
        after.ok(
            "scrolls_epic_close",
            json!({"id": epics[EPICS - 1], "cascade": true}),
        );
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

#[test]
fn search_finds_word_forms_and_the_last_word_as_a_prefix_on_both_stores() {
    let dir = plugins(&["scrolls"]);
    on_both("scrolls-forms", |env| {
        let mut s = env.start(dir.path(), &[]);
        s.ok(
            "scrolls_project_create",
            json!({"key": "CORE", "title": "Core MCP"}),
        );
        for (title, description) in [
            ("Relay failover", "The first relay dies."),
            ("Relaying tokens", "Only to peers."),
            ("Handbook", "Write the team's handbook."),
        ] {
            s.ok(
                "scrolls_story_create",
                json!({"parent": "CORE", "title": title, "description": description}),
            );
        }
        let found = |s: &mut coremcp_tests::Server, query: &str| {
            keys(&s.ok("scrolls_search", json!({"query": query})))
        };
        // As typed first (CORE-1 holds "relay"), then the other forms by key.
        assert_eq!(found(&mut s, "relay"), ["CORE-1", "CORE-2"]);
        assert_eq!(found(&mut s, "relays"), ["CORE-1", "CORE-2"]);
        assert_eq!(found(&mut s, "rel"), ["CORE-1", "CORE-2"]);
        assert_eq!(found(&mut s, "hand"), ["CORE-3"]);
        assert_eq!(found(&mut s, "relaying peer"), ["CORE-2"]);
        // The list tools' query stays a substring of the title.
        let listed = s.ok(
            "scrolls_story_list",
            json!({"project": "CORE", "query": "lay"}),
        );
        assert_eq!(keys(&listed), ["CORE-1", "CORE-2"]);
    });
}

/// Project CORE with a task of each title (CORE-1, CORE-2, …).
fn core_with_tasks(s: &mut coremcp_tests::Server, titles: &[&str]) {
    s.ok(
        "scrolls_project_create",
        json!({"key": "CORE", "title": "Core"}),
    );
    for title in titles {
        s.ok(
            "scrolls_task_create",
            json!({"parent": "CORE", "title": title}),
        );
    }
}

#[test]
fn a_claim_is_released_by_clearing_the_assignee_or_deleting_the_agent_on_both_stores() {
    let dir = plugins(&["scrolls"]);
    on_both("scrolls-release", |env| {
        let mut s = env.start(dir.path(), &[]);
        core_with_tasks(&mut s, &["one", "two", "three"]);
        s.ok("scrolls_agent_register", json!({"name": "ada"}));
        for key in ["CORE-1", "CORE-2"] {
            let claimed = s.ok("scrolls_item_claim", json!({"id": key, "agent": "ada"}));
            assert_eq!(claimed["status"], "in_progress");
        }
        let ready = |s: &mut coremcp_tests::Server| keys(&s.ok("scrolls_ready_list", json!({})));
        assert_eq!(ready(&mut s), ["CORE-3"]);
        // Clearing the assignee without a status releases the claim.
        let released = s.ok(
            "scrolls_task_update",
            json!({"id": "CORE-1", "assignee": ""}),
        );
        assert_eq!(released["status"], "open");
        assert!(released.get("assignee").is_none(), "{released}");
        assert_eq!(ready(&mut s), ["CORE-1", "CORE-3"]);
        // With a status named, that status stands.
        s.ok(
            "scrolls_item_claim",
            json!({"id": "CORE-1", "agent": "ada"}),
        );
        let blocked = s.ok(
            "scrolls_task_update",
            json!({"id": "CORE-1", "assignee": "", "status": "blocked"}),
        );
        assert_eq!(blocked["status"], "blocked");
        // Deleting the agent gives its claims back to the queue.
        let deleted = s.ok("scrolls_agent_delete", json!({"name": "ada"}));
        assert_eq!(deleted["reassigned"], 1);
        let two = s.ok("scrolls_task_get", json!({"id": "CORE-2"}));
        assert_eq!(two["status"], "open");
        assert_eq!(ready(&mut s), ["CORE-2", "CORE-3"]);
    });
}

#[test]
fn progress_counts_what_is_under_an_item_and_lists_what_closed_on_both_stores() {
    let dir = plugins(&["scrolls"]);
    on_both("scrolls-progress", |env| {
        let mut s = env.start(dir.path(), &[]);
        core_with_tasks(&mut s, &["one", "two", "three"]);
        s.ok("scrolls_task_close", json!({"id": "CORE-2"}));
        let progress = s.ok(
            "scrolls_progress_get",
            json!({"id": "CORE", "since": "2026-01-01"}),
        );
        assert_eq!(
            progress["total"], 3,
            "the project is not one of its own items"
        );
        assert_eq!(progress["done"], 1);
        assert_eq!(progress["percent_done"], 33.3);
        assert_eq!(progress["closed_since"], 1);
        let recent = progress["recently_closed"].as_array().expect("listed");
        assert_eq!(recent.len(), 1);
        assert_eq!(
            (recent[0]["key"].as_str(), recent[0]["title"].as_str()),
            (Some("CORE-2"), Some("two"))
        );
        let groups = progress["groups"].as_array().expect("groups");
        let open = groups.iter().find(|g| g["value"] == "open").expect("open");
        assert_eq!(open["count"], 2);
        let leaf = s.ok("scrolls_progress_get", json!({"id": "CORE-1"}));
        assert_eq!(
            (leaf["total"].clone(), leaf["percent_done"].clone()),
            (json!(0), json!(0.0))
        );
        let bad = s.refused(
            "scrolls_progress_get",
            json!({"id": "CORE", "since": "2026-02-30"}),
        );
        assert!(
            bad.contains("\"since\"") && bad.contains("a date such as"),
            "{bad}"
        );
    });
}

#[test]
fn the_activity_log_says_who_did_what_and_keeps_what_was_deleted_on_both_stores() {
    let dir = plugins(&["scrolls"]);
    on_both("scrolls-actors", |env| {
        let mut s = env.start(dir.path(), &[]);
        s.ok(
            "scrolls_project_create",
            json!({"key": "CORE", "title": "Core"}),
        );
        s.ok(
            "scrolls_epic_create",
            json!({"project": "CORE", "title": "Doomed"}),
        );
        s.ok(
            "scrolls_story_create",
            json!({"parent": "CORE-1", "title": "s1"}),
        );
        s.ok(
            "scrolls_story_create",
            json!({"parent": "CORE", "title": "s2"}),
        );
        s.ok(
            "scrolls_story_update",
            json!({"id": "CORE-3", "priority": "high"}),
        );
        s.ok(
            "scrolls_item_move",
            json!({"id": "CORE-3", "new_parent": "CORE-1"}),
        );
        s.ok("scrolls_agent_register", json!({"name": "ada"}));
        s.ok(
            "scrolls_item_claim",
            json!({"id": "CORE-2", "agent": "ada"}),
        );
        // No author: the caller (this client, which registered no agent of its name).
        let comment = s.ok("scrolls_comment_add", json!({"id": "CORE-2", "body": "hi"}));
        assert!(comment.get("id").is_some());
        s.ok(
            "scrolls_epic_delete",
            json!({"id": "CORE-1", "cascade": true}),
        );

        let feed = |s: &mut coremcp_tests::Server, args: Value| -> Vec<(String, String, String)> {
            s.ok("scrolls_activity_list", args)["items"]
                .as_array()
                .expect("items")
                .iter()
                .map(|a| {
                    let text = |k: &str| a[k].as_str().unwrap_or("-").to_owned();
                    (text("action"), text("item"), text("actor"))
                })
                .collect()
        };
        let mine = feed(&mut s, json!({"agent": "coremcp-tests", "limit": 200}));
        let actions: Vec<&str> = mine.iter().map(|(a, _, _)| a.as_str()).collect();
        for action in ["created", "updated", "moved", "commented", "deleted"] {
            assert!(
                actions.contains(&action),
                "{action} by the caller: {mine:?}"
            );
        }
        let ada = feed(&mut s, json!({"agent": "ada"}));
        assert_eq!(
            ada,
            [("claimed".to_owned(), "CORE-2".to_owned(), "ada".to_owned())]
        );
        // The project's feed keeps the deleted epic's and stories' history and tombstones.
        let project = feed(&mut s, json!({"scope": "CORE", "limit": 200}));
        for key in ["CORE-1", "CORE-2", "CORE-3"] {
            for action in ["created", "deleted"] {
                assert!(
                    project.iter().any(|(a, k, _)| a == action && k == key),
                    "{action} {key} in the project's feed: {project:?}"
                );
            }
        }
        assert!(
            project.iter().all(|(_, _, actor)| actor != "-"),
            "every row has an actor: {project:?}"
        );
    });
}

#[test]
fn a_paused_or_retired_agent_takes_no_work_and_an_unknown_one_is_named_on_both_stores() {
    let dir = plugins(&["scrolls"]);
    on_both("scrolls-agent-states", |env| {
        let mut s = env.start(dir.path(), &[]);
        s.ok(
            "scrolls_project_create",
            json!({"key": "CORE", "title": "Core"}),
        );
        s.ok(
            "scrolls_task_create",
            json!({"parent": "CORE", "title": "t"}),
        );
        for (name, status) in [("resting", "paused"), ("gone", "retired")] {
            s.ok("scrolls_agent_register", json!({"name": name}));
            s.ok(
                "scrolls_agent_update",
                json!({"name": name, "status": status}),
            );
            let claim = s.refused("scrolls_item_claim", json!({"id": "CORE-1", "agent": name}));
            assert!(
                claim.contains("\"agent\"") && claim.contains(&format!("agent {name} is {status}")),
                "{claim}"
            );
            let assign = s.refused(
                "scrolls_task_update",
                json!({"id": "CORE-1", "assignee": name}),
            );
            assert!(
                assign.contains("\"assignee\"") && assign.contains(status),
                "{assign}"
            );
        }
        let task = s.ok("scrolls_task_get", json!({"id": "CORE-1"}));
        assert_eq!(task["status"], "open", "nothing was taken");
        // A title is one line.
        let two_lines = s.refused(
            "scrolls_task_create",
            json!({"parent": "CORE", "title": "first\nsecond"}),
        );
        assert!(
            two_lines.contains("\"title\"") && two_lines.contains("one line"),
            "{two_lines}"
        );
        for (tool, args, field) in [
            (
                "scrolls_task_list",
                json!({"assignee": "ghost"}),
                "assignee",
            ),
            ("scrolls_ready_list", json!({"agent": "ghost"}), "agent"),
        ] {
            let err = s.refused(tool, args);
            assert!(
                err.contains(&format!("\"{field}\"")) && err.contains("ghost"),
                "{tool}: {err}"
            );
        }
    });
}

#[test]
fn keys_show_their_form_in_the_schemas_and_in_refusals() {
    let dir = plugins(&["scrolls"]);
    let mut s = coremcp_tests::Server::start(dir.path(), &[], &[]);
    s.initialize();
    let list = s.request("tools/list", json!({}));
    let tools = list["result"]["tools"].as_array().expect("tools").clone();
    let described = |tool: &str, arg: &str| -> String {
        let entry = tools.iter().find(|t| t["name"] == tool).expect("listed");
        entry["inputSchema"]["properties"][arg]["description"]
            .as_str()
            .unwrap_or("")
            .to_owned()
    };
    assert_eq!(described("scrolls_story_get", "id"), "e.g. CORE-42");
    assert_eq!(described("scrolls_project_get", "id"), "e.g. CORE");
    assert_eq!(described("scrolls_theme_get", "id"), "e.g. reliability");
    assert!(described("scrolls_item_claim", "id").contains("CORE-42"));
    assert!(described("scrolls_story_create", "parent").contains("CORE-1"));
    drop(s);
    on_both("scrolls-keys", |env| {
        let mut s = env.start(dir.path(), &[]);
        // Without the Registry in this build, a named Registry theme is recorded unchecked.
        let unchecked = s.ok(
            "scrolls_theme_create",
            json!({"key": "ops", "title": "Ops", "registry_theme": "elsewhere"}),
        );
        assert_eq!(unchecked["registry_theme"], "elsewhere");
        let theme = s.refused(
            "scrolls_theme_create",
            json!({"key": "Reliability!", "title": "R"}),
        );
        assert!(
            theme.contains("\"key\"") && theme.contains("theme key"),
            "{theme}"
        );
        let project = s.refused(
            "scrolls_project_create",
            json!({"key": "core", "title": "C"}),
        );
        assert!(
            project.contains("\"key\"") && project.contains("project key"),
            "{project}"
        );
        s.ok(
            "scrolls_project_create",
            json!({"key": "CORE", "title": "Core"}),
        );
        s.ok(
            "scrolls_epic_create",
            json!({"project": "CORE", "title": "e"}),
        );
        let lower = s.refused(
            "scrolls_story_create",
            json!({"parent": "core-1", "title": "s"}),
        );
        assert!(lower.contains("did you mean CORE-1?"), "{lower}");
        let missing = s.refused("scrolls_story_get", json!({"id": "CORE-9"}));
        assert!(missing.contains("PROJECT-n such as CORE-42"), "{missing}");
    });
}

#[test]
fn what_tools_md_lists_is_there_on_both_stores() {
    let dir = plugins(&["scrolls", "registry"]);
    on_both("scrolls-parity", |env| {
        let mut s = env.start(dir.path(), &[]);
        // registry_theme is checked against the Registry, which is here.
        s.ok("registry_theme_add", json!({"key": "core", "name": "Core"}));
        let refused = s.refused(
            "scrolls_theme_create",
            json!({"key": "reliability", "title": "R", "registry_theme": "nope"}),
        );
        assert!(
            refused.contains("\"registry_theme\"") && refused.contains("no theme nope"),
            "{refused}"
        );
        let mapped = s.ok(
            "scrolls_theme_create",
            json!({"key": "reliability", "title": "R", "registry_theme": "core"}),
        );
        assert_eq!(mapped["registry_theme"], "core");
        let own = s.ok(
            "scrolls_theme_create",
            json!({"key": "core", "title": "Core"}),
        );
        assert_eq!(
            own["registry_theme"], "core",
            "its own key, which the Registry has"
        );
        let unknown = s.ok(
            "scrolls_theme_create",
            json!({"key": "solo", "title": "Solo"}),
        );
        assert!(unknown.get("registry_theme").is_none(), "{unknown}");
        // A project's lead is its own field.
        s.ok("scrolls_agent_register", json!({"name": "ada"}));
        let project = s.ok(
            "scrolls_project_create",
            json!({"key": "CORE", "title": "Core", "theme": "reliability", "lead": "ada"}),
        );
        assert_eq!(project["lead"], "ada");
        assert!(project.get("assignee").is_none(), "{project}");
        s.ok(
            "scrolls_project_create",
            json!({"key": "OLD", "title": "Old", "theme": "reliability"}),
        );
        s.ok("scrolls_project_close", json!({"id": "OLD"}));
        // Themes count their open and closed projects.
        let themes = s.ok("scrolls_theme_list", json!({}));
        let reliability = themes["items"]
            .as_array()
            .expect("items")
            .iter()
            .find(|t| t["key"] == "reliability")
            .expect("listed")
            .clone();
        assert_eq!(
            (
                reliability["projects_open"].clone(),
                reliability["projects_closed"].clone()
            ),
            (json!(1), json!(1))
        );
        // A move's position orders the children.
        s.ok(
            "scrolls_epic_create",
            json!({"project": "CORE", "title": "e"}),
        );
        for title in ["s1", "s2", "s3"] {
            s.ok(
                "scrolls_story_create",
                json!({"parent": "CORE-1", "title": title}),
            );
        }
        s.ok(
            "scrolls_item_move",
            json!({"id": "CORE-4", "new_parent": "CORE-1", "position": 0}),
        );
        let epic = s.ok("scrolls_epic_get", json!({"id": "CORE-1"}));
        let children: Vec<&str> = epic["children"]
            .as_array()
            .expect("children")
            .iter()
            .filter_map(|c| c["key"].as_str())
            .collect();
        assert_eq!(children, ["CORE-4", "CORE-2", "CORE-3"]);
        // Ready rows show the assignee.
        s.ok(
            "scrolls_story_update",
            json!({"id": "CORE-2", "assignee": "ada"}),
        );
        let ready = s.ok("scrolls_ready_list", json!({"agent": "ada"}));
        let two = ready["items"]
            .as_array()
            .expect("items")
            .iter()
            .find(|i| i["key"] == "CORE-2")
            .expect("ready")
            .clone();
        assert_eq!(two["assignee"], "ada");
    });
}

/// A task with a 20 000-character description, 70 dependencies and 250 comments is read whole:
/// its dependencies all shown, its description read on by offset, and its comments counted,
/// with a cursor from which `scrolls_comment_list` reaches every one not shown, exactly once.
#[test]
fn a_heavy_item_is_read_whole_with_its_dependencies_and_every_comment_on_both_stores() {
    let dir = plugins(&["scrolls"]);
    on_both("scrolls-heavy", |env| {
        let mut s = env.start(dir.path(), &[]);
        s.ok(
            "scrolls_project_create",
            json!({"key": "CORE", "title": "Core"}),
        );
        let mut deps = Vec::new();
        for i in 0..70 {
            let task = s.ok(
                "scrolls_task_create",
                json!({"parent": "CORE", "title": format!("dependency {i}")}),
            );
            deps.push(task["key"].as_str().expect("key").to_owned());
        }
        let description = "d".repeat(20_000);
        let heavy = s.ok(
            "scrolls_task_create",
            json!({"parent": "CORE", "title": "heavy", "description": description,
                   "depends_on": deps}),
        );
        let key = heavy["key"].as_str().expect("key").to_owned();
        for i in 0..250 {
            s.ok(
                "scrolls_comment_add",
                json!({"id": key, "body": format!("comment {i:03} {}", "c".repeat(180))}),
            );
        }
        let got = s.ok(
            "scrolls_task_get",
            json!({"id": key, "include_comments": true}),
        );
        assert_eq!(
            got["depends_on"].as_array().map(Vec::len),
            Some(70),
            "all dependencies"
        );
        assert!(
            got.get("depends_on_omitted").is_none(),
            "{}",
            got["depends_on_omitted"]
        );
        assert_eq!(got["comments_total"], 250);
        let shown: Vec<String> = got["comments"]
            .as_array()
            .expect("comments")
            .iter()
            .map(|c| c["id"].as_str().expect("id").to_owned())
            .collect();
        assert!(!shown.is_empty() && shown.len() < 250, "{}", shown.len());
        // The rest of the description reads on from where this answer stopped.
        let next = got["description_next_offset"]
            .as_u64()
            .expect("next offset");
        let rest = s.ok("scrolls_task_get", json!({"id": key, "offset": next}));
        let read = got["description"].as_str().expect("d").len()
            + rest["description"].as_str().expect("d").len();
        assert_eq!(read, 20_000, "the description read whole in two answers");
        // Every comment not shown, from the cursor on, exactly once.
        let mut seen = shown.clone();
        let mut args = json!({"id": key, "cursor": got["comments_next_cursor"], "limit": 200});
        loop {
            let page = s.ok("scrolls_comment_list", args.clone());
            seen.extend(
                page["items"]
                    .as_array()
                    .expect("items")
                    .iter()
                    .map(|c| c["id"].as_str().expect("id").to_owned()),
            );
            match page.get("next_cursor") {
                Some(cursor) => args["cursor"] = cursor.clone(),
                None => break,
            }
        }
        let mut unique = seen.clone();
        unique.sort();
        unique.dedup();
        assert_eq!((seen.len(), unique.len()), (250, 250), "each comment once");
    });
}

/// A walk of the ready queue goes on from the place of the last item it showed: items claimed,
/// closed and created between its pages never make it skip or repeat one that stays ready.
#[test]
fn a_ready_queue_walk_sees_every_item_that_stays_ready_exactly_once_on_both_stores() {
    let dir = plugins(&["scrolls"]);
    on_both("scrolls-ready-walk", |env| {
        let mut s = env.start(dir.path(), &[]);
        s.ok(
            "scrolls_project_create",
            json!({"key": "CORE", "title": "Core"}),
        );
        let priorities = ["urgent", "high", "medium", "low"];
        for i in 0..60 {
            let mut task = json!({"parent": "CORE", "title": format!("t{i}"),
                                  "priority": priorities[i % 4]});
            if i % 3 == 0 {
                task["due_date"] = json!(format!("2027-01-{:02}", 1 + i % 28));
            }
            s.ok("scrolls_task_create", task);
        }
        s.ok("scrolls_agent_register", json!({"name": "ada"}));
        let queue = |s: &mut coremcp_tests::Server| {
            keys(&s.ok("scrolls_ready_list", json!({"limit": 100})))
        };
        let before = queue(&mut s);
        assert_eq!(before.len(), 60);
        let mut seen: Vec<String> = Vec::new();
        let mut left: Vec<String> = Vec::new();
        let mut args = json!({"limit": 10});
        let mut round = 0;
        loop {
            let page = s.ok("scrolls_ready_list", args.clone());
            let shown = keys(&page);
            seen.extend(shown.iter().cloned());
            // Between pages: five items claimed, from those not seen yet as well as seen.
            let claim: Vec<String> = before
                .iter()
                .filter(|k| !left.contains(k))
                .skip(round * 7)
                .take(5)
                .cloned()
                .collect();
            for key in claim {
                s.ok("scrolls_item_claim", json!({"id": key, "agent": "ada"}));
                left.push(key);
            }
            s.ok(
                "scrolls_task_create",
                json!({"parent": "CORE", "title": format!("new {round}"), "priority": "urgent"}),
            );
            round += 1;
            match page.get("next_cursor") {
                Some(cursor) => args["cursor"] = cursor.clone(),
                None => break,
            }
        }
        let stayed: Vec<&String> = before.iter().filter(|k| !left.contains(k)).collect();
        for key in &stayed {
            let times = seen.iter().filter(|s| s == key).count();
            assert_eq!(
                times, 1,
                "{key} stayed ready and was seen {times} times: {seen:?}"
            );
        }
        let mut unique = seen.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), seen.len(), "nothing repeated: {seen:?}");
        assert!(
            !stayed.is_empty() && left.len() >= 10,
            "{} claimed",
            left.len()
        );
    });
}
