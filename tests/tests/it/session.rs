//! The Session group through the real `coremcp` binary, every test on both stores (a fresh
//! SQLite and a fresh PostgreSQL database): the lifecycle (register, heartbeat, close,
//! register again), closing stale sessions and what their heartbeat then says, listing active
//! sessions, recordings (rows written straight into the store, as Ops `session_record` will),
//! and sessions that outlive the process and share the store with the Notepad group.

use std::time::Duration;

use coremcp_tests::stores::{on_both, pg_query, Backend, StoreEnv};
use coremcp_tests::{hints, plugins, text, Server};
use serde_json::{json, Value};

/// Runs statements on the test's NervHQ store directly.
fn execute(env: &StoreEnv, statements: &str) {
    match env.backend {
        Backend::Postgres => {
            pg_query(
                &env.store,
                &format!("SET search_path TO nervhq; {statements}"),
            );
        }
        Backend::Sqlite => {
            let conn = rusqlite::Connection::open(env.data.path().join("nervhq.sqlite3"))
                .expect("open nervhq.sqlite3");
            conn.execute_batch(statements).expect(statements);
        }
    }
}

/// A recording row, as Ops `session_record` will write one.
fn record(
    env: &StoreEnv,
    id: &str,
    session: &str,
    at: &str,
    title: &str,
    summary: &str,
    transcript: &str,
) {
    execute(
        env,
        &format!(
            "INSERT INTO session_recording (id, session_id, recorded_at, title, summary, tags, \
             format, transcript, size_bytes, content_hash, stats) VALUES ('{id}', '{session}', \
             '{at}', '{title}', '{summary}', '[\"{id}\"]', 'jsonl', '{transcript}', {}, 'hash-{id}', \
             '{{\"turns\": 3}}')",
            transcript.len()
        ),
    );
}

fn ids(page: &Value, field: &str) -> Vec<String> {
    page["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| i[field].as_str().expect(field).to_owned())
        .collect()
}

fn this_host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .expect("hostname")
        .trim()
        .to_owned()
}

#[test]
fn register_heartbeat_close_and_register_again() {
    let dir = plugins(&["session"]);
    on_both("session-life", |env| {
        let mut s = env.start(dir.path(), &[]);
        let reg = s.ok(
            "session_register",
            json!({"agent": "codex", "project": "CORE", "cwd": "/home/dev/a", "repo": "CORE/core-mcp",
                   "branch": "main", "model": "m1", "groups": ["notepad", "session"],
                   "metadata": {"pid": 42, "tags": ["x"]}}),
        );
        let id = reg["session_id"].as_str().expect("id").to_owned();
        assert_eq!(id.len(), 26, "a server-made ULID: {id}");
        assert_eq!(reg["created"], true);
        assert_eq!(reg["status"], "active");
        assert_eq!(reg["heartbeat_interval_s"], 60);
        assert_eq!(reg["stale_after_s"], 900);

        let got = s.ok("session_get", json!({"session_id": id}));
        assert_eq!(got["session_id"], id.as_str());
        assert_eq!(got["agent"], "codex");
        assert_eq!(
            got["host"],
            this_host().as_str(),
            "host defaults to this machine's name"
        );
        assert_eq!(got["project"], "CORE");
        assert_eq!(got["cwd"], "/home/dev/a");
        assert_eq!(got["repo"], "CORE/core-mcp");
        assert_eq!(got["branch"], "main");
        assert_eq!(got["model"], "m1");
        assert_eq!(got["groups"], json!(["notepad", "session"]));
        assert_eq!(got["metadata"], json!({"pid": 42, "tags": ["x"]}));
        assert_eq!(got["status"], "active");
        assert_eq!(got["heartbeat_count"], 0);
        assert_eq!(got["version"], 1);
        assert_eq!(got["started_at"], got["last_heartbeat_at"]);
        for absent in [
            "closed_at",
            "close_reason",
            "summary",
            "note",
            "current_item",
            "recording",
        ] {
            assert!(got.get(absent).is_none(), "{absent}: {got}");
        }
        let started_at = got["started_at"].clone();

        let beat = s.ok(
            "session_heartbeat",
            json!({"session_id": id, "note": "tests", "current_item": "CORE-42"}),
        );
        assert_eq!(beat["closed"], false);
        assert_eq!(beat["heartbeat_count"], 1);
        assert_eq!(beat["session_id"], id.as_str());
        let beat = s.ok("session_heartbeat", json!({"session_id": id}));
        assert_eq!(beat["heartbeat_count"], 2);
        let got = s.ok("session_get", json!({"session_id": id}));
        assert_eq!(
            (got["note"].clone(), got["current_item"].clone()),
            (json!("tests"), json!("CORE-42"))
        );
        assert_eq!(got["last_heartbeat_at"], beat["last_heartbeat_at"]);
        assert_eq!(got["version"], 1, "heartbeats do not move the version");
        s.ok("session_heartbeat", json!({"session_id": id, "note": ""}));
        let got = s.ok("session_get", json!({"session_id": id}));
        assert!(got.get("note").is_none(), "an empty note clears it: {got}");
        assert_eq!(got["current_item"], "CORE-42");

        // Registering again: same session, started_at and count kept, given fields replaced.
        let again = s.ok(
            "session_register",
            json!({"agent": "codex", "session_id": id, "cwd": "/home/dev/b", "host": "devbox-9"}),
        );
        assert_eq!(
            (again["created"].clone(), again["session_id"].clone()),
            (json!(false), json!(id))
        );
        let got = s.ok("session_get", json!({"session_id": id}));
        assert_eq!(got["started_at"], started_at);
        assert_eq!(got["cwd"], "/home/dev/b");
        assert_eq!(got["repo"], "CORE/core-mcp");
        assert_eq!(got["host"], "devbox-9");
        assert_eq!(got["heartbeat_count"], 3);
        assert_eq!(got["version"], 2);
        // Registering again without host keeps the host it has (here, from wherever the call
        // is served: a relay's own name would move it).
        s.ok(
            "session_register",
            json!({"agent": "codex", "session_id": id}),
        );
        let got = s.ok("session_get", json!({"session_id": id}));
        assert_eq!(got["host"], "devbox-9", "{got}");

        let closed = s.ok(
            "session_close",
            json!({"session_id": id, "reason": "aborted", "summary": "stopped early"}),
        );
        assert_eq!(closed["status"], "closed");
        assert_eq!(closed["close_reason"], "aborted");
        assert_eq!(closed["summary"], "stopped early");
        assert_eq!(closed["closed_at"].as_str().expect("closed_at").len(), 24);
        let twice = s.ok(
            "session_close",
            json!({"session_id": id, "reason": "error", "summary": "other"}),
        );
        assert_eq!(twice, closed, "closing a closed session changes nothing");
        let beat = s.ok("session_heartbeat", json!({"session_id": id}));
        assert_eq!(
            beat,
            json!({"session_id": id, "closed": true, "close_reason": "aborted"})
        );
        let got = s.ok("session_get", json!({"session_id": id}));
        assert_eq!(
            (got["status"].clone(), got["heartbeat_count"].clone()),
            (json!("closed"), json!(3))
        );
        assert_eq!(got["closed_at"], closed["closed_at"]);
        let active = s.ok("session_list_active", json!({}));
        assert_eq!(active["items"], json!([]));

        // The client comes back under the same id: the session is active again.
        let back = s.ok(
            "session_register",
            json!({"agent": "codex", "session_id": id}),
        );
        assert_eq!(
            (back["created"].clone(), back["status"].clone()),
            (json!(false), json!("active"))
        );
        let got = s.ok("session_get", json!({"session_id": id}));
        assert_eq!(got["status"], "active");
        assert_eq!(got["started_at"], started_at);
        for absent in ["closed_at", "close_reason", "summary"] {
            assert!(got.get(absent).is_none(), "{absent}: {got}");
        }
        let beat = s.ok("session_heartbeat", json!({"session_id": id}));
        assert_eq!(beat["closed"], false);
        assert_eq!(
            ids(&s.ok("session_list_active", json!({})), "session_id"),
            [id.as_str()]
        );

        // Client ids: a UUID and a lowercase ULID are kept as given; closing defaults to done.
        for given in [
            "123e4567-e89b-12d3-a456-426614174000",
            "01jd8x3q4tr5zk7b9v2n6m1pqa",
        ] {
            let reg = s.ok(
                "session_register",
                json!({"agent": "claude", "session_id": given, "host": "h"}),
            );
            assert_eq!(
                (reg["session_id"].clone(), reg["created"].clone()),
                (json!(given), json!(true))
            );
            let closed = s.ok("session_close", json!({"session_id": given}));
            assert_eq!(closed["close_reason"], "done");
            assert!(closed.get("summary").is_none());
        }
    });
}

#[test]
fn refusals_and_unknown_sessions() {
    let dir = plugins(&["session"]);
    on_both("session-invalid", |env| {
        let mut s = env.start(dir.path(), &[]);
        for tool in ["session_heartbeat", "session_close", "session_get"] {
            let text = s.refused(tool, json!({"session_id": "01JD8X3Q4TR5ZK7B9V2N6M1PQA"}));
            assert!(
                text.contains("not_found") && text.contains("01JD8X3Q4TR5ZK7B9V2N6M1PQA"),
                "{tool}: {text}"
            );
            let text = s.refused(tool, json!({"session_id": "session-1"}));
            assert!(
                text.contains("invalid_arguments") && text.contains("\"session_id\""),
                "{tool}: {text}"
            );
        }
        for (args, field) in [
            (
                json!({"agent": "a", "session_id": "not-an-id"}),
                "session_id",
            ),
            (json!({"agent": ""}), "agent"),
            (json!({}), "agent"),
            (json!({"agent": "a", "groups": "notepad"}), "groups"),
            (
                json!({"agent": "a", "metadata": {"blob": "x".repeat(17 * 1024)}}),
                "metadata",
            ),
        ] {
            let text = s.refused("session_register", args);
            assert!(
                text.contains("invalid_arguments") && text.contains(field),
                "{field}: {text}"
            );
        }
        let reg = s.ok("session_register", json!({"agent": "a"}));
        let id = reg["session_id"].clone();
        let long = s.refused(
            "session_heartbeat",
            json!({"session_id": id, "note": "n".repeat(201)}),
        );
        assert!(long.contains("\"note\""), "{long}");
        let reason = s.refused(
            "session_close",
            json!({"session_id": id, "reason": "stale"}),
        );
        assert!(reason.contains("\"reason\""), "{reason}");
        for (args, field) in [
            (json!({"since": "yesterday"}), "\"since\""),
            (json!({"until": "2026-13-01T00:00:00Z"}), "\"until\""),
            (json!({"cursor": "zz"}), "\"cursor\""),
            (json!({"limit": 500}), "\"limit\""),
        ] {
            let text = s.refused("session_list_recorded", args);
            assert!(text.contains(field), "{field}: {text}");
        }
        let text = s.refused("session_close_stale", json!({"older_than_s": -1}));
        assert!(text.contains("older_than_s"), "{text}");
        // The refused register calls wrote nothing.
        let active = s.ok("session_list_active", json!({}));
        assert_eq!(ids(&active, "session_id"), [id.as_str().expect("id")]);
    });
}

#[test]
fn stale_sessions_are_closed_and_told_so_on_their_next_heartbeat() {
    let dir = plugins(&["session"]);
    on_both("session-stale", |env| {
        let mut s = env.start(dir.path(), &[]);
        let mut register = |agent: &str, host: &str, project: Option<&str>| {
            let mut args = json!({"agent": agent, "host": host});
            if let Some(p) = project {
                args["project"] = json!(p);
            }
            s.ok("session_register", args)["session_id"]
                .as_str()
                .expect("id")
                .to_owned()
        };
        let s1 = register("alpha", "h1", None);
        std::thread::sleep(Duration::from_millis(20));
        let s2 = register("beta", "h2", None);
        std::thread::sleep(Duration::from_millis(20));
        let s3 = register("alpha", "h2", Some("CORE"));
        std::thread::sleep(Duration::from_millis(1200));
        s.ok(
            "session_heartbeat",
            json!({"session_id": s3, "current_item": "CORE-7"}),
        );

        // Most recent heartbeat first; filters combine.
        let all = s.ok("session_list_active", json!({}));
        assert_eq!(
            ids(&all, "session_id"),
            [s3.as_str(), s2.as_str(), s1.as_str()]
        );
        let first = &all["items"][0];
        assert_eq!(first["agent"], "alpha");
        assert_eq!(first["host"], "h2");
        assert_eq!(first["project"], "CORE");
        assert_eq!(first["current_item"], "CORE-7");
        assert_eq!(first["heartbeat_count"], 1);
        assert_eq!(first["stale"], false);
        assert!(all.get("next_cursor").is_none());
        assert_eq!(
            ids(
                &s.ok("session_list_active", json!({"host": "h2"})),
                "session_id"
            ),
            [s3.as_str(), s2.as_str()]
        );
        assert_eq!(
            ids(
                &s.ok("session_list_active", json!({"agent": "alpha"})),
                "session_id"
            ),
            [s3.as_str(), s1.as_str()]
        );
        assert_eq!(
            ids(
                &s.ok("session_list_active", json!({"project": "CORE"})),
                "session_id"
            ),
            [s3.as_str()]
        );
        assert_eq!(
            ids(
                &s.ok(
                    "session_list_active",
                    json!({"agent": "alpha", "host": "h1"})
                ),
                "session_id"
            ),
            [s1.as_str()]
        );
        let mut paged = Vec::new();
        let mut args = json!({"limit": 1});
        loop {
            let page = s.ok("session_list_active", args.clone());
            paged.extend(ids(&page, "session_id"));
            match page.get("next_cursor") {
                Some(c) => args["cursor"] = c.clone(),
                None => break,
            }
        }
        assert_eq!(paged, [s3.as_str(), s2.as_str(), s1.as_str()]);

        // A dry run lists, oldest heartbeat first, and closes nothing.
        let dry = s.ok(
            "session_close_stale",
            json!({"older_than_s": 1, "dry_run": true}),
        );
        assert_eq!(
            (dry["closed"].clone(), dry["dry_run"].clone()),
            (json!(2), json!(true))
        );
        assert_eq!(ids(&dry, "session_id"), [s1.as_str(), s2.as_str()]);
        assert_eq!(dry["items"][0]["agent"], "alpha");
        assert_eq!(dry["items"][0]["host"], "h1");
        assert_eq!(
            dry["items"][0]["last_heartbeat_at"],
            all["items"][2]["last_heartbeat_at"]
        );
        assert_eq!(
            ids(&s.ok("session_list_active", json!({})), "session_id").len(),
            3
        );
        let none = s.ok("session_close_stale", json!({}));
        assert_eq!(
            (none["closed"].clone(), none["items"].clone()),
            (json!(0), json!([]))
        );

        let h1 = s.ok(
            "session_close_stale",
            json!({"older_than_s": 1, "host": "h1"}),
        );
        assert_eq!(
            (h1["closed"].clone(), h1["dry_run"].clone()),
            (json!(1), json!(false))
        );
        assert_eq!(ids(&h1, "session_id"), [s1.as_str()]);
        let by_agent = s.ok(
            "session_close_stale",
            json!({"older_than_s": 1, "agent": "alpha"}),
        );
        assert_eq!(by_agent["closed"], 0, "s3 heartbeat recently");
        let rest = s.ok("session_close_stale", json!({"older_than_s": 1}));
        assert_eq!(ids(&rest, "session_id"), [s2.as_str()]);
        assert_eq!(
            ids(&s.ok("session_list_active", json!({})), "session_id"),
            [s3.as_str()]
        );

        let beat = s.ok("session_heartbeat", json!({"session_id": s1}));
        assert_eq!(
            beat,
            json!({"session_id": s1, "closed": true, "close_reason": "stale"})
        );
        let got = s.ok("session_get", json!({"session_id": s2}));
        assert_eq!(
            (got["status"].clone(), got["close_reason"].clone()),
            (json!("closed"), json!("stale"))
        );
        assert!(got["closed_at"].is_string());

        let back = s.ok(
            "session_register",
            json!({"agent": "alpha", "session_id": s1, "host": "h1"}),
        );
        assert_eq!(back["created"], false);
        let beat = s.ok("session_heartbeat", json!({"session_id": s1}));
        assert_eq!(beat["closed"], false);
        assert_eq!(
            ids(&s.ok("session_list_active", json!({})), "session_id"),
            [s1.as_str(), s3.as_str()]
        );
    });
}

#[test]
fn recordings_are_listed_newest_first_and_read_with_their_session() {
    let dir = plugins(&["session"]);
    on_both("session-recorded", |env| {
        let mut s = env.start(dir.path(), &[]);
        let s1 = s.ok(
            "session_register",
            json!({"agent": "alpha", "host": "h1", "project": "CORE"}),
        )["session_id"]
            .as_str()
            .expect("id")
            .to_owned();
        let s2 = s.ok("session_register", json!({"agent": "beta", "host": "h2"}))["session_id"]
            .as_str()
            .expect("id")
            .to_owned();
        let s3 = s.ok("session_register", json!({"agent": "gamma", "host": "h3"}))["session_id"]
            .as_str()
            .expect("id")
            .to_owned();
        record(
            env,
            "r1",
            s1.as_str(),
            "2026-01-01T10:00:00.000Z",
            "Fix LOGIN bug",
            "patched the session cookie",
            "{\"turn\": 1}",
        );
        record(
            env,
            "r2",
            s1.as_str(),
            "2026-01-02T10:00:00.000Z",
            "Refactor",
            "100% of the store moved",
            "{\"turn\": 2}\n{\"turn\": 3}",
        );
        let long = "{\"say\": \"hi\"}\n".repeat(2500); // 37 500 characters, quotes doubling in JSON
        record(
            env,
            "r3",
            s2.as_str(),
            "2026-01-03T10:00:00.000Z",
            "Long one",
            "a long session",
            &long,
        );

        let all = s.ok("session_list_recorded", json!({}));
        assert_eq!(ids(&all, "recording_id"), ["r3", "r2", "r1"]);
        let r1 = &all["items"][2];
        assert_eq!(r1["session_id"], s1.as_str());
        assert_eq!(r1["agent"], "alpha");
        assert_eq!(r1["host"], "h1");
        assert_eq!(r1["project"], "CORE");
        assert_eq!(r1["title"], "Fix LOGIN bug");
        assert_eq!(r1["summary"], "patched the session cookie");
        assert_eq!(r1["recorded_at"], "2026-01-01T10:00:00.000Z");
        assert_eq!(r1["format"], "jsonl");
        assert_eq!(r1["tags"], json!(["r1"]));
        assert_eq!(r1["stats"], json!({"turns": 3}));
        assert_eq!(r1["size_bytes"], 11);
        assert!(r1.get("transcript").is_none());
        assert!(all["items"][0].get("project").is_none());

        for (args, expected) in [
            (json!({"project": "CORE"}), vec!["r2", "r1"]),
            (json!({"agent": "beta"}), vec!["r3"]),
            (json!({"host": "h1"}), vec!["r2", "r1"]),
            (json!({"since": "2026-01-02T10:00:00Z"}), vec!["r3", "r2"]),
            (json!({"until": "2026-01-02T10:00:00Z"}), vec!["r1"]),
            (
                json!({"since": "2026-01-02T00:00:00+02:00", "until": "2026-01-03T00:00:00Z"}),
                vec!["r2"],
            ),
            (json!({"query": "login"}), vec!["r1"]),
            (json!({"query": "SESSION"}), vec!["r3", "r1"]),
            (json!({"query": "100%"}), vec!["r2"]),
            (json!({"query": "0%"}), vec!["r2"]),
            (json!({"query": "_"}), vec![]),
            (json!({"agent": "gamma"}), vec![]),
        ] {
            let page = s.ok("session_list_recorded", args.clone());
            assert_eq!(ids(&page, "recording_id"), expected, "{args}");
        }
        let first = s.ok("session_list_recorded", json!({"limit": 2}));
        assert_eq!(ids(&first, "recording_id"), ["r3", "r2"]);
        let rest = s.ok(
            "session_list_recorded",
            json!({"limit": 2, "cursor": first["next_cursor"]}),
        );
        assert_eq!(ids(&rest, "recording_id"), ["r1"]);
        assert!(rest.get("next_cursor").is_none());

        // session_get: the most recent recording, cut at max_chars and to the result limit.
        let got = s.ok(
            "session_get",
            json!({"session_id": s1, "include_recording": true}),
        );
        let rec = &got["recording"];
        assert_eq!(rec["recording_id"], "r2");
        assert_eq!(rec["transcript"], "{\"turn\": 2}\n{\"turn\": 3}");
        assert!(
            rec.get("transcript_truncated").is_none(),
            "shown whole: {rec}"
        );
        assert_eq!(rec["content_hash"], "hash-r2");
        assert_eq!(rec["summary"], "100% of the store moved");
        let cut = s.ok(
            "session_get",
            json!({"session_id": s1, "include_recording": true, "max_chars": 5}),
        );
        assert_eq!(cut["recording"]["transcript"], "{\"tur");
        assert_eq!(cut["recording"]["transcript_truncated"], true);
        assert_eq!(cut["recording"]["transcript_total_chars"], 23);
        assert_eq!(cut["recording"]["transcript_next_offset"], 5);
        let on = s.ok(
            "session_get",
            json!({"session_id": s1, "include_recording": true, "max_chars": 5, "offset": 5}),
        );
        assert_eq!(on["recording"]["transcript"], "n\": 2");
        assert_eq!(on["recording"]["transcript_offset"], 5);
        let result = s.call(
            "session_get",
            json!({"session_id": s2, "include_recording": true}),
        );
        assert!(text(&result).chars().count() <= 20_000);
        let rec = &result["structuredContent"]["recording"];
        assert_eq!(rec["transcript_truncated"], true, "{result}");
        let shown = rec["transcript"].as_str().expect("transcript");
        assert!(
            shown.len() > 5000 && long.starts_with(shown),
            "{}",
            shown.len()
        );
        let plain = s.ok("session_get", json!({"session_id": s1}));
        assert!(plain.get("recording").is_none());
        let none = s.ok(
            "session_get",
            json!({"session_id": s3, "include_recording": true}),
        );
        assert!(none.get("recording").is_none());
        assert_eq!(none["agent"], "gamma");
    });
}

#[test]
fn sessions_outlive_the_process_and_share_the_store_with_notes() {
    let dir = plugins(&["notepad", "session"]);
    on_both("session-restart", |env| {
        let mut s = env.start(dir.path(), &[]);
        let id = s.ok("session_register", json!({"agent": "alpha", "host": "h1"}))["session_id"]
            .as_str()
            .expect("id")
            .to_owned();
        s.ok("session_heartbeat", json!({"session_id": id}));
        let scope = format!("session:{id}");
        s.ok(
            "notepad_set",
            json!({"scope": scope, "key": "scratch", "value": "half done"}),
        );
        assert_eq!(s.finish(Duration::from_secs(10)), Some(0));

        let mut s = env.start(dir.path(), &[]);
        let beat = s.ok("session_heartbeat", json!({"session_id": id}));
        assert_eq!(beat["heartbeat_count"], 2);
        let note = s.ok("notepad_get", json!({"scope": scope, "key": "scratch"}));
        assert_eq!(note["value"], "half done");
        // Both groups keep one migration list: applied once, recorded once.
        let versions = match env.backend {
            Backend::Postgres => pg_query(
                &env.store,
                "SELECT version FROM nervhq.schema_migrations ORDER BY version",
            )
            .into_iter()
            .map(|r| r[0].clone().expect("version"))
            .collect::<Vec<_>>(),
            Backend::Sqlite => {
                let conn = rusqlite::Connection::open(env.data.path().join("nervhq.sqlite3"))
                    .expect("open");
                let mut stmt = conn
                    .prepare("SELECT version FROM schema_migrations ORDER BY version")
                    .expect("prepare");
                stmt.query_map([], |r| r.get::<_, i64>(0))
                    .expect("query")
                    .map(|v| v.expect("row").to_string())
                    .collect()
            }
        };
        assert_eq!(versions, ["1", "2", "3", "4"]);
        let closed = s.ok("session_close", json!({"session_id": id}));
        assert_eq!(closed["status"], "closed");
    });
}

#[test]
fn the_group_lists_seven_tools_with_their_hints() {
    let dir = plugins(&["session"]);
    let mut s = Server::start(dir.path(), &[], &[]);
    s.initialize();
    let answer = s.request("tools/list", json!({}));
    let tools: Vec<&Value> = answer["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter(|t| {
            t["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("session_"))
        })
        .collect();
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(
        names,
        [
            "session_register",
            "session_heartbeat",
            "session_close",
            "session_close_stale",
            "session_list_active",
            "session_get",
            "session_list_recorded"
        ]
    );
    for (tool, read_only) in tools
        .iter()
        .zip([false, false, false, false, true, true, true])
    {
        let a = &hints(tool);
        assert_eq!(a["readOnlyHint"], read_only, "{}", tool["name"]);
        assert_eq!(a["idempotentHint"], true, "{}", tool["name"]);
        assert_eq!(a["destructiveHint"], false, "{}", tool["name"]);
        assert_eq!(a["openWorldHint"], false, "{}", tool["name"]);
    }
}

/// Closing thousands of stale sessions answers the count and a sample that fits, never an error
/// for a change that was made (ten times the 200 a list may hold).
#[test]
fn closing_thousands_of_stale_sessions_answers_a_count_and_a_sample_on_both_stores() {
    let dir = plugins(&["session"]);
    on_both("session-sweep", |env| {
        let mut s = env.start(dir.path(), &[]);
        let (agent, host) = ("a".repeat(120), "h".repeat(120));
        for _ in 0..2_000 {
            s.ok("session_register", json!({"agent": agent, "host": host}));
        }
        for dry_run in [true, false] {
            let closed = s.ok(
                "session_close_stale",
                json!({"older_than_s": 0, "dry_run": dry_run}),
            );
            assert_eq!(closed["closed"], 2_000, "{dry_run}");
            let shown = closed["items"].as_array().expect("items").len();
            assert!(shown > 0 && shown < 200, "{shown}");
            assert_eq!(closed["more"], 2_000 - shown);
            assert_eq!(closed["items"][0]["agent"], agent);
        }
        let active = s.ok("session_list_active", json!({}));
        assert_eq!(active["items"], json!([]), "the change was made");
    });
}
