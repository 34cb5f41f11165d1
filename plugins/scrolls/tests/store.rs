//! The item rules that need the store, with the same assertions on both backends: the level
//! rules on create, numbered keys under concurrent creates, dependencies without cycles.

use coremcp_plugin_sdk::ToolError;
use coremcp_scrolls::agents::{self, Profile, AGENT};
use coremcp_scrolls::items::{self, NewItem, Resolution};
use coremcp_scrolls::key::ItemKey;
use coremcp_scrolls::level::Level;
use coremcp_scrolls::schema::MIGRATIONS;
use coremcp_scrolls::views::{self, By, Subtree, Totals};
use coremcp_store::plugin::{run_on, TxError};
use coremcp_store::testing::Env;
use coremcp_store::Store;

coremcp_store::both!(
    items_sit_where_their_level_allows,
    numbers_are_one_sequence_per_project_without_gaps,
    concurrent_creates_get_distinct_numbers,
    a_dependency_cycle_is_refused_with_its_path,
    close_refuses_open_descendants_unless_cascade,
    a_cascade_reaches_a_large_deep_subtree_whole,
    delete_refuses_children_unless_cascade_and_leaves_tombstones,
    a_move_keeps_the_key_and_the_rules,
    of_two_agents_claiming_at_once_exactly_one_wins,
    the_ready_queue_is_open_unblocked_free_work_by_priority,
    progress_counts_a_subtree_in_the_database,
    progress_reaches_a_project_and_a_theme_through_the_index,
    the_tally_is_a_fresh_count_after_every_kind_of_write,
    search_ranks_items_by_their_text_and_comments,
    the_activity_feed_pages_newest_first_by_scope_actor_and_action,
    agents_register_once_and_give_back_their_work_when_deleted,
    comments_list_newest_first,
    a_project_lead_kept_as_its_assignee_becomes_its_lead,
);

/// Creates an item of `level` under `parent` (a key), as a tool would; its key.
fn create(
    store: &Store,
    level: Level,
    key: Option<&str>,
    parent: Option<&str>,
) -> Result<String, ToolError> {
    let parent = parent.map(|p| ItemKey::parse("parent", p).expect("a key"));
    run_on(store, |tx| {
        let item = NewItem {
            level,
            key,
            parent: parent.as_ref().map(|p| ("parent", p)),
            title: "a title",
            priority: "none",
        };
        Ok(items::create(tx, &item, Vec::new())?.get_text("key")?)
    })
}

fn ok(store: &Store, level: Level, key: Option<&str>, parent: Option<&str>) -> String {
    create(store, level, key, parent).unwrap_or_else(|e| panic!("{level:?} under {parent:?}: {e}"))
}

fn items_sit_where_their_level_allows(env: &Env) {
    let store = env.open(MIGRATIONS);
    ok(&store, Level::Theme, Some("reliability"), None);
    ok(&store, Level::Project, Some("CORE"), Some("reliability"));
    ok(&store, Level::Project, Some("WEB"), None);
    assert_eq!(ok(&store, Level::Epic, None, Some("CORE")), "CORE-1");
    assert_eq!(ok(&store, Level::Story, None, Some("CORE-1")), "CORE-2");
    assert_eq!(ok(&store, Level::Task, None, Some("CORE")), "CORE-3");
    assert_eq!(ok(&store, Level::Subtask, None, Some("CORE-3")), "CORE-4");
    let refused: [(Level, Option<&str>, Option<&str>, &str); 5] = [
        (
            Level::Epic,
            None,
            Some("reliability"),
            "an epic cannot sit under a theme: it goes under a project",
        ),
        (
            Level::Subtask,
            None,
            Some("CORE"),
            "it goes under a story or a task",
        ),
        (
            Level::Project,
            Some("OPS"),
            Some("CORE-1"),
            "a project cannot sit under an epic",
        ),
        (
            Level::Story,
            None,
            Some("CORE-4"),
            "a story cannot sit under a subtask",
        ),
        (
            Level::Theme,
            Some("ops"),
            Some("reliability"),
            "a theme cannot sit under a theme",
        ),
    ];
    for (level, key, parent, needle) in refused {
        let err = create(&store, level, key, parent).expect_err("refused");
        assert_eq!(err.code.as_str(), "invalid_arguments", "{err}");
        assert!(
            err.message.contains("\"parent\"") && err.message.contains(needle),
            "{err}"
        );
    }
    let missing = create(&store, Level::Epic, None, Some("NOPE")).expect_err("no such parent");
    assert_eq!(missing.code.as_str(), "not_found", "{missing}");
    let taken = create(&store, Level::Project, Some("CORE"), None).expect_err("taken");
    assert_eq!(taken.code.as_str(), "conflict", "{taken}");
    // A refused create took no number.
    assert_eq!(ok(&store, Level::Epic, None, Some("CORE")), "CORE-5");
}

fn numbers_are_one_sequence_per_project_without_gaps(env: &Env) {
    let store = env.open(MIGRATIONS);
    ok(&store, Level::Project, Some("CORE"), None);
    ok(&store, Level::Project, Some("WEB"), None);
    let mut keys = Vec::new();
    for project in ["CORE", "WEB", "CORE", "CORE", "WEB"] {
        keys.push(ok(&store, Level::Task, None, Some(project)));
    }
    assert_eq!(keys, ["CORE-1", "WEB-1", "CORE-2", "CORE-3", "WEB-2"]);
}

fn concurrent_creates_get_distinct_numbers(env: &Env) {
    const EACH: usize = 150;
    let setup = env.open(MIGRATIONS);
    ok(&setup, Level::Project, Some("CORE"), None);
    // Two stores: two connections, as two processes would have.
    let keys: Vec<String> = std::thread::scope(|scope| {
        let writers: Vec<_> = (0..2)
            .map(|_| {
                let store = env.open(MIGRATIONS);
                scope.spawn(move || {
                    (0..EACH)
                        .map(|_| ok(&store, Level::Task, None, Some("CORE")))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        writers
            .into_iter()
            .flat_map(|w| w.join().expect("a writer"))
            .collect()
    });
    let mut numbers: Vec<u64> = keys
        .iter()
        .map(|k| {
            k.strip_prefix("CORE-")
                .and_then(|n| n.parse().ok())
                .expect("CORE-n")
        })
        .collect();
    numbers.sort_unstable();
    assert_eq!(
        numbers,
        (1..=2 * EACH as u64).collect::<Vec<_>>(),
        "{:?}",
        env.kind()
    );
}

fn a_dependency_cycle_is_refused_with_its_path(env: &Env) {
    let store = env.open(MIGRATIONS);
    ok(&store, Level::Project, Some("CORE"), None);
    let ids: Vec<String> = (0..4)
        .map(|_| {
            let key = ok(&store, Level::Task, None, Some("CORE"));
            run_on(
                &store,
                |tx| Ok(items::find(tx, "id", &key)?.get_text("id")?),
            )
            .expect("id")
        })
        .collect();
    let depend = |from: usize, on: &[usize]| {
        let on: Vec<String> = on.iter().map(|i| ids[*i].clone()).collect();
        let key = format!("CORE-{}", from + 1);
        run_on(&store, |tx| {
            items::set_dependencies(tx, "depends_on", (&ids[from], &key), &on)
        })
    };
    // CORE-1 -> CORE-2 -> CORE-3, and a diamond CORE-1 -> CORE-4 -> CORE-3: no cycle.
    depend(0, &[1, 3]).expect("1 on 2 and 4");
    depend(1, &[2]).expect("2 on 3");
    depend(3, &[2]).expect("4 on 3");
    let err = depend(2, &[0]).expect_err("3 on 1 closes a cycle");
    assert_eq!(err.code.as_str(), "invalid_arguments", "{err}");
    assert!(
        err.message
            .contains("would close the cycle CORE-3 -> CORE-1 -> CORE-"),
        "{err}"
    );
    assert!(err.message.ends_with("-> CORE-3"), "{err}");
    let err = depend(2, &[2]).expect_err("itself");
    assert!(err.message.contains("cannot depend on itself"), "{err}");
    // The refused writes left the dependencies as they were.
    let count = run_on(&store, |tx| {
        Ok(tx
            .query("SELECT item_id FROM scrolls_dependency", &[])?
            .len())
    })
    .expect("count");
    assert_eq!(count, 4);
}

/// A project CORE with an epic CORE-1 holding a story CORE-2 with a subtask CORE-3, and a task
/// CORE-4 directly under the project.
fn tree(env: &Env) -> Store {
    let store = env.open(MIGRATIONS);
    ok(&store, Level::Project, Some("CORE"), None);
    ok(&store, Level::Epic, None, Some("CORE"));
    ok(&store, Level::Story, None, Some("CORE-1"));
    ok(&store, Level::Subtask, None, Some("CORE-2"));
    ok(&store, Level::Task, None, Some("CORE"));
    store
}

fn subtree(store: &Store, key: &str) -> Subtree {
    run_on(store, |tx| Ok(Subtree::of(&items::find(tx, "id", key)?)?)).expect("an item")
}

fn status(store: &Store, key: &str) -> String {
    run_on(store, |tx| {
        Ok(items::find(tx, "id", key)?.get_text("status")?)
    })
    .expect("an item")
}

fn actions(store: &Store) -> Vec<(String, String)> {
    let sql = "SELECT item_key, action FROM scrolls_activity ORDER BY id";
    run_on(store, |tx| {
        let rows = tx.query(sql, &[])?;
        Ok(rows
            .iter()
            .map(|r| Ok((r.get_text("item_key")?, r.get_text("action")?)))
            .collect::<Result<Vec<_>, coremcp_store::StoreError>>()?)
    })
    .expect("activity")
}

fn close_refuses_open_descendants_unless_cascade(env: &Env) {
    let store = tree(env);
    let close = |key: &str, cascade: bool| {
        run_on(&store, |tx| {
            items::close(tx, key, Resolution::WontDo, cascade, Some("ada"))
        })
    };
    let err = close("CORE-1", false).expect_err("open descendants");
    assert_eq!(err.code.as_str(), "conflict", "{err}");
    assert!(
        err.message.contains("2 open descendants (CORE-2, CORE-3)"),
        "{err}"
    );
    assert_eq!(status(&store, "CORE-2"), "open");
    assert_eq!(close("CORE-3", false).expect("a leaf"), ["CORE-3"]);
    assert_eq!(
        close("CORE-1", true).expect("cascade"),
        ["CORE-1", "CORE-2"]
    );
    for key in ["CORE-1", "CORE-2", "CORE-3"] {
        assert_eq!(status(&store, key), "cancelled", "{key}");
    }
    assert_eq!(status(&store, "CORE-4"), "open");
    assert_eq!(
        close("CORE-1", false).expect("closed already"),
        Vec::<String>::new()
    );
    // The log is in the order of the writes (its ids sort so).
    let closed: Vec<String> = actions(&store)
        .into_iter()
        .filter(|(_, a)| a == "closed")
        .map(|(k, _)| k)
        .collect();
    assert_eq!(closed, ["CORE-3", "CORE-1", "CORE-2"]);
}

/// A close and a delete with `cascade` over more items than one statement of the log takes:
/// the whole subtree, every level of it, and one log row each.
fn a_cascade_reaches_a_large_deep_subtree_whole(env: &Env) {
    let store = env.open(MIGRATIONS);
    ok(&store, Level::Project, Some("CORE"), None);
    let epic = ok(&store, Level::Epic, None, Some("CORE"));
    let epic_key = ItemKey::parse("parent", &epic).expect("a key");
    run_on(&store, |tx| {
        for _ in 0..400 {
            let story = NewItem {
                level: Level::Story,
                key: None,
                parent: Some(("parent", &epic_key)),
                title: "a story",
                priority: "none",
            };
            let story = items::create(tx, &story, Vec::new())?.get_text("key")?;
            let story = ItemKey::parse("parent", &story).expect("a key");
            for _ in 0..2 {
                let subtask = NewItem {
                    level: Level::Subtask,
                    key: None,
                    parent: Some(("parent", &story)),
                    title: "a subtask",
                    priority: "none",
                };
                items::create(tx, &subtask, Vec::new())?;
            }
        }
        Ok(())
    })
    .expect("a large subtree");
    let closed = run_on(&store, |tx| {
        items::close(tx, &epic, Resolution::Done, true, None)
    })
    .expect("closed");
    assert_eq!(closed.len(), 1201);
    let count =
        |sql: &str| run_on(&store, |tx| Ok(tx.query_one(sql, &[])?.get_i64("n")?)).expect(sql);
    assert_eq!(
        count("SELECT COUNT(*) AS n FROM scrolls_item WHERE status = 'done'"),
        1201
    );
    assert_eq!(
        count("SELECT COUNT(*) AS n FROM scrolls_activity WHERE action = 'closed'"),
        1201
    );
    let deleted = run_on(&store, |tx| items::delete(tx, &epic, true, None)).expect("deleted");
    assert_eq!(deleted.len(), 1201);
    assert_eq!(count("SELECT COUNT(*) AS n FROM scrolls_item"), 1);
    assert_eq!(
        count("SELECT COUNT(*) AS n FROM scrolls_activity WHERE action = 'deleted'"),
        1201
    );
}

fn delete_refuses_children_unless_cascade_and_leaves_tombstones(env: &Env) {
    let store = tree(env);
    let delete =
        |key: &str, cascade: bool| run_on(&store, |tx| items::delete(tx, key, cascade, None));
    let err = delete("CORE-1", false).expect_err("children");
    assert!(
        err.message.contains("2 items under it (CORE-2, CORE-3)"),
        "{err}"
    );
    assert_eq!(
        delete("CORE-1", true).expect("cascade"),
        ["CORE-1", "CORE-2", "CORE-3"]
    );
    let gone = run_on(&store, |tx| items::find(tx, "id", "CORE-2").map(|_| ())).expect_err("gone");
    assert_eq!(gone.code.as_str(), "not_found", "{gone}");
    let tombstones: Vec<String> = actions(&store)
        .into_iter()
        .filter(|(_, a)| a == "deleted")
        .map(|(k, _)| k)
        .collect();
    assert_eq!(tombstones, ["CORE-1", "CORE-2", "CORE-3"]);
    // Numbers are never given again.
    assert_eq!(ok(&store, Level::Task, None, Some("CORE")), "CORE-5");
}

fn a_move_keeps_the_key_and_the_rules(env: &Env) {
    let store = tree(env);
    ok(&store, Level::Project, Some("WEB"), None);
    let web_task = ok(&store, Level::Task, None, Some("WEB"));
    let move_to = |key: &str, parent: &str| {
        run_on(&store, |tx| {
            items::move_to(tx, key, "new_parent", parent, None)
        })
    };
    move_to("CORE-3", "CORE-4").expect("a subtask to a task of its project");
    let refused = [
        ("CORE-3", "CORE", "a subtask cannot sit under a project"),
        ("CORE-1", "CORE-2", "an epic cannot sit under a story"),
        ("CORE-2", "WEB", "in another project"),
        ("CORE-3", &web_task, "in another project"),
        ("CORE-4", "CORE-4", "a task cannot sit under a task"),
    ];
    for (key, parent, needle) in refused {
        let err = move_to(key, parent).expect_err(needle);
        assert!(
            err.message.contains("\"new_parent\"") && err.message.contains(needle),
            "{err}"
        );
    }
    let parent = run_on(&store, |tx| {
        let row = items::find(tx, "id", "CORE-3")?;
        let parent = row.get_opt_text("parent_id")?.expect("a parent");
        Ok(tx
            .query_one(
                "SELECT key FROM scrolls_item WHERE id = $1",
                &[parent.as_str().into()],
            )?
            .get_text("key")?)
    });
    assert_eq!(parent.expect("moved"), "CORE-4");
}

fn of_two_agents_claiming_at_once_exactly_one_wins(env: &Env) {
    const ITEMS: usize = 60;
    let setup = env.open(MIGRATIONS);
    ok(&setup, Level::Project, Some("CORE"), None);
    let keys: Vec<String> = (0..ITEMS)
        .map(|_| ok(&setup, Level::Task, None, Some("CORE")))
        .collect();
    run_on(&setup, |tx| {
        for name in ["ada", "bob"] {
            tx.execute(
                "INSERT INTO scrolls_agent (id, name, status, version, created_at, updated_at) \
                 VALUES ($1, $1, 'active', 1, $2, $2)",
                &[name.into(), coremcp_store::plugin::now().into()],
            )?;
        }
        Ok(())
    })
    .expect("agents");
    let results: Vec<Vec<Result<(), String>>> = std::thread::scope(|scope| {
        let claimers: Vec<_> = ["ada", "bob"]
            .map(|agent| {
                let (store, keys) = (env.open(MIGRATIONS), &keys);
                scope.spawn(move || {
                    keys.iter()
                        .map(|key| {
                            run_on(&store, |tx| items::claim(tx, key, agent, false))
                                .map_err(|e| e.message.to_string())
                        })
                        .collect()
                })
            })
            .into_iter()
            .collect();
        claimers
            .into_iter()
            .map(|c| c.join().expect("a claimer"))
            .collect()
    });
    for (i, key) in keys.iter().enumerate() {
        let won: Vec<bool> = results.iter().map(|r| r[i].is_ok()).collect();
        assert_eq!(
            won.iter().filter(|w| **w).count(),
            1,
            "{key}: {:?}",
            (&results[0][i], &results[1][i])
        );
        let lost = results
            .iter()
            .find_map(|r| r[i].as_ref().err())
            .expect("a loser");
        assert!(lost.contains("is held by"), "{lost}");
    }
    assert_eq!(status(&setup, &keys[0]), "in_progress");
    let forced = run_on(&setup, |tx| {
        let holder = tx.query_one(
            "SELECT a.name FROM scrolls_item i JOIN scrolls_agent a ON a.id = i.assignee_id \
             WHERE i.key = $1",
            &[keys[0].as_str().into()],
        )?;
        let other = if holder.get_text("name")? == "ada" {
            "bob"
        } else {
            "ada"
        };
        items::claim(tx, &keys[0], other, true)
    });
    forced.expect("force takes it over");
    let unknown = run_on(&setup, |tx| items::claim(tx, &keys[1], "eve", false)).expect_err("eve");
    assert!(
        unknown.message.contains("scrolls_agent_register"),
        "{unknown}"
    );
}

/// Runs `sql` with `params` (a test's shortcut for what the update tools will write).
fn exec(store: &Store, sql: &str, params: &[&str]) {
    let params: Vec<coremcp_store::Param> = params.iter().map(|p| (*p).into()).collect();
    run_on(store, |tx| Ok(tx.execute(sql, &params)?)).expect(sql);
}

fn keys_of(rows: &[coremcp_store::Row]) -> Vec<String> {
    rows.iter()
        .map(|r| r.get_text("key").expect("key"))
        .collect()
}

fn the_ready_queue_is_open_unblocked_free_work_by_priority(env: &Env) {
    let store = env.open(MIGRATIONS);
    ok(&store, Level::Project, Some("CORE"), None);
    for _ in 0..6 {
        ok(&store, Level::Task, None, Some("CORE"));
    }
    exec(
        &store,
        "INSERT INTO scrolls_agent (id, name, status, version, created_at, updated_at) \
        VALUES ('a1', 'ada', 'active', 1, '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')",
        &[],
    );
    exec(
        &store,
        "UPDATE scrolls_item SET priority = 'urgent' WHERE key = 'CORE-5'",
        &[],
    );
    exec(
        &store,
        "UPDATE scrolls_item SET priority = 'high', due_date = '2026-02-01' WHERE key = 'CORE-3'",
        &[],
    );
    exec(
        &store,
        "UPDATE scrolls_item SET priority = 'high', due_date = '2026-01-15' WHERE key = 'CORE-4'",
        &[],
    );
    exec(
        &store,
        "UPDATE scrolls_item SET priority = 'high' WHERE key = 'CORE-6'",
        &[],
    );
    // CORE-1 waits on the open CORE-2; CORE-2 is ada's.
    run_on(&store, |tx| {
        let id = |tx: &mut coremcp_store::Tx<'_>, key: &str| -> Result<String, TxError> {
            Ok(items::find(tx, "id", key)?.get_text("id")?)
        };
        let (one, two) = (id(tx, "CORE-1")?, id(tx, "CORE-2")?);
        items::set_dependencies(tx, "depends_on", (&one, "CORE-1"), &[two])
    })
    .expect("depends");
    exec(
        &store,
        "UPDATE scrolls_item SET assignee_id = 'a1' WHERE key = 'CORE-2'",
        &[],
    );
    let ready = |agent: Option<&str>| {
        run_on(&store, |tx| {
            Ok(views::ready(tx, agent, None, &[Level::Task], None, 10)?)
        })
        .map(|r| keys_of(&r))
    };
    assert_eq!(
        ready(None).expect("ready"),
        ["CORE-5", "CORE-4", "CORE-3", "CORE-6"]
    );
    assert_eq!(
        ready(Some("ada")).expect("ready"),
        ["CORE-5", "CORE-4", "CORE-3", "CORE-6", "CORE-2"]
    );
    run_on(&store, |tx| {
        items::close(tx, "CORE-2", Resolution::Done, false, None)
    })
    .expect("closed");
    assert_eq!(
        ready(None).expect("ready"),
        ["CORE-5", "CORE-4", "CORE-3", "CORE-6", "CORE-1"]
    );
}

fn progress_counts_a_subtree_in_the_database(env: &Env) {
    let store = tree(env);
    exec(
        &store,
        "UPDATE scrolls_item SET estimate = 3 WHERE key = 'CORE-2'",
        &[],
    );
    exec(
        &store,
        "UPDATE scrolls_item SET estimate = 2.5 WHERE key = 'CORE-3'",
        &[],
    );
    run_on(&store, |tx| {
        items::close(tx, "CORE-3", Resolution::Done, false, None)
    })
    .expect("closed");
    let epic = subtree(&store, "CORE-1");
    let counts = |by| {
        run_on(&store, |tx| {
            let rollup = views::rollup(tx, &epic, "2026-01-01", None)?;
            Ok(views::counts(tx, &epic, &rollup, by)?)
        })
        .expect("counts")
    };
    let status = counts(By::Status);
    assert_eq!(
        status,
        [
            (Some("done".to_owned()), 1, 2.5),
            (Some("open".to_owned()), 1, 3.0)
        ],
        "{:?}",
        env.kind()
    );
    let levels: Vec<(Option<String>, i64)> = counts(By::Level)
        .into_iter()
        .map(|(v, n, _)| (v, n))
        .collect();
    let level = |l: &str| Some(l.to_owned());
    assert_eq!(
        levels,
        [(level("story"), 1), (level("subtask"), 1)],
        "the epic is not one of its own items"
    );
    assert_eq!(counts(By::Assignee), [(None, 2, 5.5)]);
    exec(
        &store,
        "UPDATE scrolls_item SET labels = $1 WHERE key = 'CORE-2'",
        &[r#"["api","docs"]"#],
    );
    exec(
        &store,
        "UPDATE scrolls_item SET labels = $1 WHERE key = 'CORE-3'",
        &[r#"["api"]"#],
    );
    let label = |l: &str| Some(l.to_owned());
    assert_eq!(
        counts(By::Label),
        [(label("api"), 2, 5.5), (label("docs"), 1, 3.0)],
        "{:?}",
        env.kind()
    );
}

/// Progress of a project and of a theme, whose subtrees the index reaches by `project_id`, the
/// lower items' by a walk: the same items either way.
fn progress_reaches_a_project_and_a_theme_through_the_index(env: &Env) {
    let store = env.open(MIGRATIONS);
    ok(&store, Level::Theme, Some("reliability"), None);
    ok(&store, Level::Project, Some("CORE"), Some("reliability"));
    ok(&store, Level::Project, Some("WEB"), Some("reliability"));
    ok(&store, Level::Project, Some("APART"), None);
    ok(&store, Level::Epic, None, Some("CORE"));
    ok(&store, Level::Story, None, Some("CORE-1"));
    ok(&store, Level::Task, None, Some("WEB"));
    ok(&store, Level::Task, None, Some("APART"));
    exec(
        &store,
        "UPDATE scrolls_item SET due_date = '2026-01-01', estimate = 2 WHERE key = 'CORE-2'",
        &[],
    );
    run_on(&store, |tx| {
        items::close(tx, "WEB-1", Resolution::Done, false, None)
    })
    .expect("closed");
    let totals = |key: &str, since: Option<&str>| {
        let tree = subtree(&store, key);
        run_on(&store, |tx| {
            Ok(Totals::of(&views::rollup(tx, &tree, "2026-06-01", since)?))
        })
        .expect("totals")
    };
    let core = totals("CORE", None);
    assert_eq!(
        (core.total, core.done, core.overdue, core.estimate),
        (2, 0, 1, 2.0),
        "{:?}",
        env.kind()
    );
    let theme = totals("reliability", Some("2000-01-01T00:00:00.000Z"));
    assert_eq!(
        (theme.total, theme.done, theme.overdue, theme.closed_since),
        (5, 1, 1, 1)
    );
    assert_eq!(totals("CORE-1", None).total, 1);
    assert_eq!(totals("APART", None).total, 1);
    // A moved project takes its whole subtree with it.
    run_on(&store, |tx| {
        items::move_to(tx, "APART", "theme", "reliability", None)
    })
    .expect("moved");
    assert_eq!(totals("reliability", None).total, 7);
}

/// The tally progress reads for a project, and the same counts made afresh from the items.
fn tally_and_fresh(store: &Store) -> (Vec<String>, Vec<String>) {
    let rows = |sql: &str| -> Vec<String> {
        run_on(store, |tx| {
            Ok(tx
                .query(sql, &[])?
                .iter()
                .map(|r| {
                    Ok(format!(
                        "{} {} {} {}: {} / {}",
                        r.get_text("project_id")?,
                        r.get_text("status")?,
                        r.get_text("level")?,
                        r.get_text("assignee_id")?,
                        r.get_i64("n")?,
                        r.get_f64("estimate")?
                    ))
                })
                .collect::<Result<Vec<_>, coremcp_store::StoreError>>()?)
        })
        .expect(sql)
    };
    (
        rows(
            "SELECT project_id, status, level, assignee_id, n, estimate FROM scrolls_tally \
             ORDER BY project_id, status, level, assignee_id",
        ),
        rows(
            "SELECT project_id, status, level, COALESCE(assignee_id, '') AS assignee_id, \
             COUNT(*) AS n, COALESCE(SUM(estimate), 0) AS estimate FROM scrolls_item \
             WHERE project_id IS NOT NULL GROUP BY project_id, status, level, \
             COALESCE(assignee_id, '') ORDER BY project_id, status, level, assignee_id",
        ),
    )
}

/// Creates, claims, estimates, a cascading close, a reopen, moves (of an item and of a
/// project), a cascading delete and an agent's delete: the tally stays a fresh count.
fn the_tally_is_a_fresh_count_after_every_kind_of_write(env: &Env) {
    let store = tree(env);
    ok(&store, Level::Theme, Some("reliability"), None);
    ok(&store, Level::Project, Some("WEB"), Some("reliability"));
    ok(&store, Level::Task, None, Some("WEB"));
    run_on(&store, |tx| {
        agents::register(tx, "ada", &Profile::default())?;
        Ok(())
    })
    .expect("ada");
    type Step<'a> = (
        &'a str,
        Box<dyn Fn(&mut coremcp_store::Tx<'_>) -> Result<(), TxError>>,
    );
    let steps: Vec<Step<'_>> = vec![
        ("created", Box::new(|_| Ok(()))),
        (
            "claimed",
            Box::new(|tx| items::claim(tx, "CORE-3", "ada", false)),
        ),
        (
            "estimated",
            Box::new(|tx| {
                tx.execute(
                    "UPDATE scrolls_item SET estimate = 1.5 WHERE key = 'CORE-2'",
                    &[],
                )?;
                Ok(())
            }),
        ),
        (
            "closed",
            Box::new(|tx| items::close(tx, "CORE-1", Resolution::Done, true, None).map(drop)),
        ),
        (
            "reopened",
            Box::new(|tx| {
                tx.execute(
                    "UPDATE scrolls_item SET status = 'open' WHERE key = 'CORE-2'",
                    &[],
                )?;
                Ok(())
            }),
        ),
        (
            "moved",
            Box::new(|tx| items::move_to(tx, "CORE-3", "parent", "CORE-4", None)),
        ),
        (
            "project moved",
            Box::new(|tx| items::move_to(tx, "CORE", "theme", "reliability", None)),
        ),
        (
            "agent deleted",
            Box::new(|tx| agents::delete(tx, "ada", None).map(drop)),
        ),
        (
            "deleted",
            Box::new(|tx| items::delete(tx, "CORE-1", true, None).map(drop)),
        ),
        (
            "project deleted",
            Box::new(|tx| items::delete(tx, "WEB", true, None).map(drop)),
        ),
    ];
    for (step, write) in &steps {
        run_on(&store, |tx| write(tx)).unwrap_or_else(|e| panic!("{step}: {e}"));
        let (tally, fresh) = tally_and_fresh(&store);
        assert_eq!(tally, fresh, "after {step} on {:?}", env.kind());
    }
}

fn search_ranks_items_by_their_text_and_comments(env: &Env) {
    let store = tree(env);
    exec(
        &store,
        "UPDATE scrolls_item SET title = 'Relay failover', description = $1 WHERE key = 'CORE-2'",
        &["failover failover when the relay dies"],
    );
    exec(
        &store,
        "UPDATE scrolls_item SET title = 'Failover drill' WHERE key = 'CORE-4'",
        &[],
    );
    exec(
        &store,
        "INSERT INTO scrolls_comment (id, item_id, author, body, created_at) \
         SELECT 'c1', id, 'ada', 'the quokka test passed', '2026-01-01T00:00:00.000Z' \
         FROM scrolls_item WHERE key = 'CORE-3'",
        &[],
    );
    let search = |query: &str| {
        run_on(&store, |tx| {
            Ok(views::search(
                tx,
                query,
                &views::Within::default(),
                10,
                views::LISTED,
            )?)
        })
        .map(|r| keys_of(&r))
    };
    assert_eq!(
        search("failover").expect("search"),
        ["CORE-2", "CORE-4"],
        "{:?}",
        env.kind()
    );
    assert_eq!(search("QUOKKA").expect("search"), ["CORE-3"]);
    assert_eq!(
        search("\" * NEAR -").expect("no words"),
        Vec::<String>::new()
    );
    assert_eq!(search("relay dies").expect("search"), ["CORE-2"]);
}

fn the_activity_feed_pages_newest_first_by_scope_actor_and_action(env: &Env) {
    let store = tree(env);
    run_on(&store, |tx| {
        let open = |tx: &mut coremcp_store::Tx<'_>, key: &str| -> Result<String, TxError> {
            Ok(items::find(tx, "id", key)?.get_text("id")?)
        };
        for key in ["CORE", "CORE-1", "CORE-2", "CORE-3", "CORE-4"] {
            let id = open(tx, key)?;
            items::log(tx, "created", (Some(&id), key), Some("ada"), None)?;
        }
        Ok(())
    })
    .expect("created");
    run_on(&store, |tx| {
        items::close(tx, "CORE-1", Resolution::Done, true, Some("bob"))
    })
    .expect("closed");
    let epic = subtree(&store, "CORE-1");
    let feed = |scope: Option<&Subtree>,
                actor: Option<&str>,
                actions: &[&str],
                limit: usize,
                cursor: Option<String>| {
        let actions: Vec<String> = actions.iter().map(|a| (*a).to_owned()).collect();
        let page = coremcp_plugin_sdk::page::Paging { limit, cursor };
        run_on(&store, |tx| {
            views::activity(tx, scope, actor, None, &actions, &page)
        })
        .expect("feed")
    };
    let entries = |v: &serde_json::Value| -> Vec<(String, String)> {
        v["items"]
            .as_array()
            .expect("items")
            .iter()
            .map(|i| {
                (
                    i["item"].as_str().unwrap_or("").to_owned(),
                    i["action"].as_str().unwrap_or("").to_owned(),
                )
            })
            .collect()
    };
    let pair = |k: &str, a: &str| (k.to_owned(), a.to_owned());
    // The epic's subtree, newest first: the cascade's closes, then the creates.
    let all = feed(Some(&epic), None, &[], 50, None);
    assert_eq!(
        entries(&all),
        [
            pair("CORE-3", "closed"),
            pair("CORE-2", "closed"),
            pair("CORE-1", "closed"),
            pair("CORE-3", "created"),
            pair("CORE-2", "created"),
            pair("CORE-1", "created"),
        ]
    );
    assert_eq!(
        entries(&feed(None, Some("bob"), &["closed"], 50, None)).len(),
        3
    );
    assert_eq!(entries(&feed(None, None, &["created"], 50, None)).len(), 5);
    // Pages of two, in order, none repeated or skipped.
    let mut paged = Vec::new();
    let mut cursor = None;
    loop {
        let page = feed(Some(&epic), None, &[], 2, cursor);
        paged.extend(entries(&page));
        match page.get("next_cursor").and_then(|c| c.as_str()) {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    assert_eq!(paged, entries(&all));
}

fn agents_register_once_and_give_back_their_work_when_deleted(env: &Env) {
    let store = tree(env);
    let register = |name: &str, profile: Profile<'_>| {
        run_on(&store, |tx| {
            let (row, created) = agents::register(tx, name, &profile)?;
            Ok((AGENT.json(&row)?, created))
        })
        .expect("registered")
    };
    let caps = ["rust".to_owned()];
    let (ada, created) = register(
        "ada",
        Profile {
            kind: Some("claude_code"),
            capabilities: Some(&caps),
            ..Profile::default()
        },
    );
    assert!(created);
    assert_eq!(
        (ada["version"].clone(), ada["capabilities"].clone()),
        (1.into(), serde_json::json!(["rust"]))
    );
    // Seen again with nothing new: the same version; a new host: the next one.
    let (again, created) = register("ada", Profile::default());
    assert!(!created);
    assert_eq!(
        (again["version"].clone(), again["kind"].clone()),
        (1.into(), "claude_code".into())
    );
    assert!(again["last_seen_at"].as_str() >= ada["last_seen_at"].as_str());
    let (moved, _) = register(
        "ada",
        Profile {
            host: Some("devbox-1"),
            ..Profile::default()
        },
    );
    assert_eq!(moved["version"], 2);
    register("bob", Profile::default());
    for key in ["CORE-2", "CORE-4"] {
        run_on(&store, |tx| items::claim(tx, key, "ada", false)).expect("claimed");
    }
    run_on(&store, |tx| {
        items::close(tx, "CORE-4", Resolution::Done, false, None)
    })
    .expect("closed");
    let open = run_on(&store, |tx| {
        Ok(AGENT.json(&AGENT.find(tx, "name", &["ada"])?)?)
    })
    .expect("ada");
    assert_eq!(open["open_items"], 1);
    let err = run_on(&store, |tx| agents::delete(tx, "ada", Some("ada"))).expect_err("itself");
    assert!(err.message.contains("\"reassign_to\""), "{err}");
    let given = run_on(&store, |tx| agents::delete(tx, "ada", Some("bob"))).expect("deleted");
    assert_eq!(given, 1);
    let bob = run_on(&store, |tx| {
        Ok(AGENT.json(&AGENT.find(tx, "name", &["bob"])?)?)
    })
    .expect("bob");
    assert_eq!(bob["open_items"], 1);
    let gone = run_on(&store, |tx| AGENT.find(tx, "name", &["ada"]).map(|_| ())).expect_err("gone");
    assert_eq!(gone.code.as_str(), "not_found", "{gone}");
    assert!(
        agents::check_name("name", "Ada").is_err()
            && agents::check_name("name", "ada.2_x-y").is_ok()
    );
}

fn comments_list_newest_first(env: &Env) {
    let store = tree(env);
    for body in ["first", "second", "third"] {
        run_on(&store, |tx| items::comment(tx, "CORE-2", Some("ada"), body)).expect("commented");
    }
    let item = run_on(&store, |tx| {
        Ok(items::find(tx, "id", "CORE-2")?.get_text("id")?)
    })
    .expect("id");
    let page = |cursor: Option<String>| {
        let page = coremcp_plugin_sdk::page::Paging { limit: 2, cursor };
        run_on(&store, |tx| views::comments(tx, &item, &page)).expect("comments")
    };
    let first = page(None);
    let bodies = |v: &serde_json::Value| -> Vec<String> {
        v["items"]
            .as_array()
            .expect("items")
            .iter()
            .map(|c| c["body"].as_str().unwrap_or("").to_owned())
            .collect()
    };
    assert_eq!(bodies(&first), ["third", "second"]);
    let next = first["next_cursor"].as_str().map(str::to_owned);
    assert_eq!(bodies(&page(next)), ["first"]);
    let err = run_on(&store, |tx| items::comment(tx, "CORE-99", None, "x")).expect_err("no item");
    assert_eq!(err.code.as_str(), "not_found", "{err}");
    let commented = actions(&store)
        .into_iter()
        .filter(|(_, a)| a == "commented")
        .count();
    assert_eq!(commented, 3);
}

/// Before migration 3 a project's lead was its assignee: the migration moves it to `lead_id`.
fn a_project_lead_kept_as_its_assignee_becomes_its_lead(env: &Env) {
    let old = env.open(&MIGRATIONS[..2]);
    let at = "2026-01-01T00:00:00.000Z";
    exec(
        &old,
        "INSERT INTO scrolls_agent (id, name, status, version, created_at, updated_at) \
         VALUES ('a1', 'ada', 'active', 1, $1, $1)",
        &[at],
    );
    exec(
        &old,
        "INSERT INTO scrolls_item (id, level, key, project_id, title, status, priority, \
         assignee_id, created_at, updated_at, version) \
         VALUES ('p1', 'project', 'CORE', 'p1', 'Core', 'open', 'none', 'a1', $1, $1, 1)",
        &[at],
    );
    drop(old);
    let store = env.open(MIGRATIONS);
    let project = run_on(&store, |tx| {
        Ok(items::json(&items::find(tx, "id", "CORE")?)?)
    })
    .expect("the project");
    assert_eq!(project["lead"], "ada", "{:?}", env.kind());
    assert!(project.get("assignee").is_none(), "{project}");
}
