//! The store under stress, on both backends: two `coremcp` processes racing on the same rows
//! (a note's value, an item's dependencies), and a process killed with SIGKILL in the middle of a `notepad_bulk_set`.

use std::thread;
use std::time::{Duration, Instant};

use coremcp_tests::stores::{on_both, pg_query, pg_url, Backend, StoreEnv};
use coremcp_tests::{is_error, plugins, text, Server};
use serde_json::{json, Value};

const ROUNDS: usize = 1000;
const SESSION: &str = "01JRACE0000000000000000000";

/// A counter value that shows a torn write: the number, then a check derived from it.
fn counter_value(n: u64) -> String {
    format!("{n}:{}", n.wrapping_mul(2_654_435_761) % 1_000_003)
}

fn parse_counter(value: &str) -> u64 {
    let n: u64 = value
        .split(':')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("torn counter value {value:?}"));
    assert_eq!(value, counter_value(n), "torn counter value");
    n
}

/// One process's share of the race: read-modify-write with expected_version, and heartbeats.
/// Returns (successful sets, conflicts).
fn race(mut server: Server) -> (Server, u64, u64) {
    let (mut won, mut lost) = (0, 0);
    for _ in 0..ROUNDS {
        let note = server.ok(
            "notepad_get",
            json!({"scope": "global", "key": "race/counter"}),
        );
        let n = parse_counter(note["value"].as_str().expect("value"));
        let set = server.call(
            "notepad_set",
            json!({"scope": "global", "key": "race/counter", "value": counter_value(n + 1),
                   "expected_version": note["version"]}),
        );
        if is_error(&set) {
            let message = text(&set);
            assert!(
                message.contains("(conflict)") && message.contains("is at version"),
                "a lost race must be reported as a conflict with the current version: {message}"
            );
            lost += 1;
        } else {
            assert_eq!(
                set["structuredContent"]["version"],
                note["version"].as_i64().expect("v") + 1
            );
            won += 1;
        }
        let beat = server.ok("session_heartbeat", json!({"session_id": SESSION}));
        assert_eq!(beat["closed"], false);
    }
    (server, won, lost)
}

#[test]
fn two_processes_racing_lose_no_update_on_either_backend() {
    let dir = plugins(&["notepad", "session"]);
    on_both("race", |env| {
        let mut first = env.start(dir.path(), &[]);
        let second = env.start(dir.path(), &[]);
        first.ok(
            "notepad_set",
            json!({"scope": "global", "key": "race/counter", "value": counter_value(0)}),
        );
        first.ok(
            "session_register",
            json!({"agent": "racer", "session_id": SESSION}),
        );
        let other = thread::spawn(move || race(second));
        let (mut first, won_a, lost_a) = race(first);
        let (_second, won_b, lost_b) = other.join().expect("second racer");
        let note = first.ok(
            "notepad_get",
            json!({"scope": "global", "key": "race/counter"}),
        );
        let won = won_a + won_b;
        assert_eq!(won + lost_a + lost_b, 2 * ROUNDS as u64);
        assert_eq!(
            parse_counter(note["value"].as_str().expect("value")),
            won,
            "lost updates"
        );
        assert_eq!(note["version"], json!(1 + won));
        let session = first.ok("session_get", json!({"session_id": SESSION}));
        assert_eq!(
            session["heartbeat_count"],
            json!(2 * ROUNDS),
            "lost heartbeats"
        );
        eprintln!(
            "{:?}: {won} sets won, {} conflicts reported, 2000 heartbeats counted",
            env.backend,
            lost_a + lost_b
        );
    });
}

const DEPENDENCY_ROUNDS: usize = 150;

/// One process's share of the dependency race: read CORE-3, point it at the other of CORE-1 and
/// CORE-2 with `expected_version`. Returns (updates won, conflicts).
fn relink(mut server: Server) -> (Server, u64, u64) {
    let (mut won, mut lost) = (0, 0);
    for _ in 0..DEPENDENCY_ROUNDS {
        let item = server.ok("scrolls_task_get", json!({"id": "CORE-3"}));
        let other = match item["depends_on"].get(0).and_then(Value::as_str) {
            Some("CORE-1") => "CORE-2",
            _ => "CORE-1",
        };
        let update = server.call(
            "scrolls_task_update",
            json!({"id": "CORE-3", "depends_on": [other], "expected_version": item["version"]}),
        );
        if is_error(&update) {
            let message = text(&update);
            assert!(message.contains("(conflict)"), "{message}");
            lost += 1;
        } else {
            assert_eq!(
                update["structuredContent"]["version"],
                item["version"].as_i64().expect("v") + 1,
                "a change of the dependencies alone moves the version"
            );
            won += 1;
        }
    }
    (server, won, lost)
}

/// An update that changes only an item's dependencies is guarded by its version like any
/// other: two processes at one `expected_version`, exactly one wins (no update is lost).
#[test]
fn a_dependency_change_alone_moves_the_version_and_loses_no_update_on_either_backend() {
    let dir = plugins(&["scrolls"]);
    on_both("relink", |env| {
        let mut first = env.start(dir.path(), &[]);
        let second = env.start(dir.path(), &[]);
        first.ok(
            "scrolls_project_create",
            json!({"key": "CORE", "title": "Core"}),
        );
        for title in ["one", "two", "three"] {
            first.ok(
                "scrolls_task_create",
                json!({"parent": "CORE", "title": title}),
            );
        }
        let start = first.ok("scrolls_task_get", json!({"id": "CORE-3"}))["version"]
            .as_i64()
            .expect("version");
        // The same dependencies again change nothing, and move nothing.
        first.ok(
            "scrolls_task_update",
            json!({"id": "CORE-3", "depends_on": []}),
        );
        let same = first.ok("scrolls_task_get", json!({"id": "CORE-3"}));
        assert_eq!(same["version"], start);
        let other = thread::spawn(move || relink(second));
        let (mut first, won_a, lost_a) = relink(first);
        let (_second, won_b, lost_b) = other.join().expect("second writer");
        let won = won_a + won_b;
        assert_eq!(won + lost_a + lost_b, 2 * DEPENDENCY_ROUNDS as u64);
        let item = first.ok("scrolls_task_get", json!({"id": "CORE-3"}));
        assert_eq!(item["version"], json!(start + won as i64), "lost updates");
        // Each win flipped the dependency: the count of wins says which one is left.
        let expected = if won % 2 == 1 { "CORE-1" } else { "CORE-2" };
        assert_eq!(item["depends_on"], json!([expected]), "{item}");
        eprintln!(
            "{:?}: {won} dependency updates won, {} conflicts reported",
            env.backend,
            lost_a + lost_b
        );
    });
}

/// Bytes this process has written so far (`wchar` of /proc/PID/io).
fn written(pid: u32) -> u64 {
    let io = std::fs::read_to_string(format!("/proc/{pid}/io")).unwrap_or_default();
    io.lines()
        .find_map(|l| l.strip_prefix("wchar: "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// Whether the store has a transaction of the test database that has written but not
/// committed (PostgreSQL), or the process has written part of the batch (SQLite).
fn mid_transaction(env: &StoreEnv, pid: u32, baseline: u64) -> bool {
    match env.backend {
        Backend::Postgres => {
            let db = env.database().expect("database");
            let rows = pg_query(
                &pg_url(),
                &format!(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = '{db}' \
                     AND backend_xid IS NOT NULL AND query LIKE '%notepad_entry%'"
                ),
            );
            rows[0][0].as_deref() != Some("0")
        }
        // Past SQLite's page cache, uncommitted pages spill into the WAL before the commit.
        Backend::Sqlite => written(pid) > baseline + 512 * 1024,
    }
}

fn batch(tag: &str) -> Value {
    let pad = "x".repeat(560);
    let entries: Vec<Value> = (0..10_000)
        .map(|i| json!({"key": format!("k{i:05}"), "value": format!("{tag}-{i}-{pad}")}))
        .collect();
    json!({"scope": "project:CRASH", "entries": entries, "replace_scope": true})
}

/// (rows in the scope, rows whose value carries `tag`).
fn census(env: &StoreEnv, tag: &str) -> (u64, u64) {
    let rows = env.query(
        "nervhq",
        &format!(
            "SELECT count(*), COALESCE(SUM(CASE WHEN substr(value, 1, {}) = '{tag}-' THEN 1 ELSE 0 END), 0) \
             FROM notepad_entry WHERE scope = 'project:CRASH'",
            tag.len() + 1
        ),
    );
    let number = |cell: &Option<String>| -> u64 {
        cell.as_deref().expect("count").parse().expect("a number")
    };
    (number(&rows[0][0]), number(&rows[0][1]))
}

#[test]
fn sigkill_in_the_middle_of_a_bulk_set_leaves_all_or_none_of_it() {
    let dir = plugins(&["notepad"]);
    on_both("crash", |env| {
        let mut server = env.start(dir.path(), &["--call-timeout", "300"]);
        server.ok("notepad_bulk_set", batch("old"));
        assert_eq!(census(env, "old"), (10_000, 10_000));
        let mut interrupted = 0;
        for attempt in 0..3 {
            let tag = format!("new{attempt}");
            let pid = server.pid();
            let baseline = written(pid);
            let request = json!({"jsonrpc": "2.0", "id": 77, "method": "tools/call",
                                 "params": {"name": "notepad_bulk_set", "arguments": batch(&tag)}});
            server.send(&request);
            let deadline = Instant::now() + Duration::from_secs(60);
            // Until the transaction is seen open — or the call answers, having committed
            // between two looks (a loaded machine makes that window easy to miss).
            let mut answered = false;
            while !mid_transaction(env, pid, baseline) {
                assert!(
                    Instant::now() < deadline,
                    "the bulk set never started writing"
                );
                if server
                    .recv(Duration::from_millis(1))
                    .is_some_and(|m| m["id"] == 77)
                {
                    answered = true;
                    break;
                }
            }
            server.signal(libc::SIGKILL);
            answered |= server
                .recv(Duration::from_millis(200))
                .is_some_and(|m| m["id"] == 77);
            drop(server);
            if env.backend == Backend::Postgres {
                // The server side rolls back once it sees the connection gone.
                let db = env.database().expect("database");
                let deadline = Instant::now() + Duration::from_secs(30);
                while pg_query(
                    &pg_url(),
                    &format!("SELECT count(*) FROM pg_stat_activity WHERE datname = '{db}'"),
                )[0][0]
                    .as_deref()
                    != Some("0")
                {
                    assert!(
                        Instant::now() < deadline,
                        "the killed connection's backend stayed"
                    );
                    thread::sleep(Duration::from_millis(20));
                }
            }
            let (rows, new) = census(env, &tag);
            let (_, old) = census(env, "old");
            assert_eq!(rows, 10_000, "attempt {attempt}: the scope has {rows} rows");
            assert!(
                (new == 10_000 && old == 0) || (new == 0 && old == 10_000),
                "attempt {attempt}: a torn batch: {new} new and {old} old rows"
            );
            if new == 0 {
                interrupted += 1;
            } else {
                assert!(!answered || new == 10_000);
                // It committed before the kill: put the old batch back for the next attempt.
                env.start(dir.path(), &[])
                    .ok("notepad_bulk_set", batch("old"));
            }
            if let Some(path) = env.sqlite_file("nervhq") {
                let check = env.query("nervhq", "PRAGMA integrity_check");
                assert_eq!(check[0][0].as_deref(), Some("ok"), "{}", path.display());
            }
            server = env.start(dir.path(), &[]);
        }
        assert!(interrupted > 0, "no attempt was killed before its commit");
        eprintln!(
            "{:?}: {interrupted} of 3 kills landed mid-transaction; each left all or none",
            env.backend
        );
    });
}
