//! The item rules that need the store, with the same assertions on both backends: the level
//! rules on create, numbered keys under concurrent creates, dependencies without cycles.

use coremcp_plugin_sdk::ToolError;
use coremcp_scrolls::items::{self, NewItem};
use coremcp_scrolls::key::ItemKey;
use coremcp_scrolls::level::Level;
use coremcp_scrolls::schema::MIGRATIONS;
use coremcp_store::plugin::run_on;
use coremcp_store::testing::Env;
use coremcp_store::Store;

coremcp_store::both!(
    items_sit_where_their_level_allows,
    numbers_are_one_sequence_per_project_without_gaps,
    concurrent_creates_get_distinct_numbers,
    a_dependency_cycle_is_refused_with_its_path,
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
        Ok(items::create(tx, &item)?.get_text("key")?)
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
