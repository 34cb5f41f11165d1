//! The Notepad group through the real `coremcp` binary, every test on both stores (a fresh
//! SQLite and a fresh PostgreSQL database): versions and `expected_version`, expiry that hides
//! notes before cleanup, listing and paging, bulk writes that are all or nothing, validation
//! that names the argument, and notes that outlive the process.

use std::time::{Duration, Instant};

use coremcp_tests::stores::{on_both, pg_query, Backend, StoreEnv};
use coremcp_tests::{hints, plugins, text, Server};
use serde_json::{json, Value};

/// Runs SQL on the test's NervHQ store directly (what the tools must not be the only witness
/// of); the rows as text.
fn sql(env: &StoreEnv, statement: &str) -> Vec<Vec<Option<String>>> {
    match env.backend {
        Backend::Postgres => pg_query(
            &env.store,
            &format!("SET search_path TO nervhq; {statement}"),
        ),
        Backend::Sqlite => {
            let conn = rusqlite::Connection::open(env.data.path().join("nervhq.sqlite3"))
                .expect("open nervhq.sqlite3");
            let mut stmt = conn.prepare(statement).expect("prepare");
            let width = stmt.column_count();
            let rows = stmt
                .query_map([], |row| {
                    (0..width)
                        .map(|i| {
                            Ok(match row.get_ref(i)? {
                                rusqlite::types::ValueRef::Null => None,
                                rusqlite::types::ValueRef::Integer(v) => Some(v.to_string()),
                                other => Some(String::from_utf8_lossy(other.as_bytes()?).into()),
                            })
                        })
                        .collect::<Result<Vec<_>, rusqlite::Error>>()
                })
                .expect("query");
            rows.map(|r| r.expect("row")).collect()
        }
    }
}

fn rows_in(env: &StoreEnv, scope: &str) -> usize {
    let rows = sql(
        env,
        &format!("SELECT COUNT(*) FROM notepad_entry WHERE scope = '{scope}'"),
    );
    rows[0][0]
        .as_deref()
        .expect("count")
        .parse()
        .expect("number")
}

/// Every (scope, key) of a listing, following next_cursor to the end.
fn list_all(server: &mut Server, mut args: Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    loop {
        let page = server.ok("notepad_list", args.clone());
        for item in page["items"].as_array().expect("items") {
            out.push((
                item["scope"].as_str().expect("scope").to_owned(),
                item["key"].as_str().expect("key").to_owned(),
            ));
        }
        match page.get("next_cursor") {
            Some(cursor) => args["cursor"] = cursor.clone(),
            None => return out,
        }
    }
}

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|(s, k)| ((*s).to_owned(), (*k).to_owned()))
        .collect()
}

#[test]
fn set_get_delete_with_versions_and_expected_version() {
    let dir = plugins(&["notepad"]);
    on_both("notepad-crud", |env| {
        let mut s = env.start(dir.path(), &[]);
        let missing = s.refused("notepad_get", json!({"scope": "global", "key": "todo"}));
        assert!(missing.contains("not_found"), "{missing}");
        assert!(missing.contains("global/todo"), "{missing}");

        let set = s.ok(
            "notepad_set",
            json!({"scope": "global", "key": "todo", "value": "one"}),
        );
        assert_eq!(set["version"], 1);
        assert_eq!(set["created"], true);
        assert_eq!(set["scope"], "global");
        assert_eq!(set["key"], "todo");
        assert_eq!(set["updated_at"].as_str().expect("updated_at").len(), 24);
        assert!(set.get("expires_at").is_none(), "{set}");

        let got = s.ok("notepad_get", json!({"scope": "global", "key": "todo"}));
        assert_eq!(got["value"], "one");
        assert_eq!(got["version"], 1);
        assert_eq!(got["updated_at"], set["updated_at"]);
        assert_eq!(got["updated_by"], "coremcp-tests 0");
        assert!(got.get("expires_at").is_none(), "{got}");

        let again = s.ok(
            "notepad_set",
            json!({"scope": "global", "key": "todo", "value": "two"}),
        );
        assert_eq!(
            (again["version"].clone(), again["created"].clone()),
            (json!(2), json!(false))
        );

        // expected_version 0 means "must not exist"; a stale version names the current one.
        let exists = s.refused(
            "notepad_set",
            json!({"scope": "global", "key": "todo", "value": "x", "expected_version": 0}),
        );
        assert!(exists.contains("conflict"), "{exists}");
        assert!(exists.contains("is at version 2"), "{exists}");
        let stale = s.refused(
            "notepad_set",
            json!({"scope": "global", "key": "todo", "value": "x", "expected_version": 1}),
        );
        assert!(stale.contains("is at version 2"), "{stale}");
        assert!(stale.contains("note global/todo"), "{stale}");
        let got = s.ok("notepad_get", json!({"scope": "global", "key": "todo"}));
        assert_eq!(
            (got["value"].clone(), got["version"].clone()),
            (json!("two"), json!(2))
        );

        let cas = s.ok(
            "notepad_set",
            json!({"scope": "global", "key": "todo", "value": "three", "expected_version": 2}),
        );
        assert_eq!(
            (cas["version"].clone(), cas["created"].clone()),
            (json!(3), json!(false))
        );
        let fresh = s.ok(
            "notepad_set",
            json!({"scope": "global", "key": "new", "value": "n", "expected_version": 0}),
        );
        assert_eq!(
            (fresh["version"].clone(), fresh["created"].clone()),
            (json!(1), json!(true))
        );
        let absent = s.refused(
            "notepad_set",
            json!({"scope": "global", "key": "ghost", "value": "g", "expected_version": 4}),
        );
        assert!(absent.contains("at version 0"), "{absent}");
        assert!(s
            .refused("notepad_get", json!({"scope": "global", "key": "ghost"}))
            .contains("not_found"));

        // The same key in every kind of scope is a different note.
        for scope in [
            "project:CORE",
            "agent:claude-code",
            "session:01JD8X3Q4TR5ZK7B9V2N6M1PQA",
            "host:devbox-1",
        ] {
            let set = s.ok(
                "notepad_set",
                json!({"scope": scope, "key": "todo", "value": scope}),
            );
            assert_eq!(set["version"], 1, "{scope}");
            let got = s.ok("notepad_get", json!({"scope": scope, "key": "todo"}));
            assert_eq!(got["value"], scope);
        }
        let got = s.ok("notepad_get", json!({"scope": "global", "key": "todo"}));
        assert_eq!(got["value"], "three");

        let deleted = s.ok("notepad_delete", json!({"scope": "global", "key": "todo"}));
        assert_eq!(
            deleted,
            json!({"scope": "global", "key": "todo", "deleted": true})
        );
        let twice = s.ok("notepad_delete", json!({"scope": "global", "key": "todo"}));
        assert_eq!(twice["deleted"], false);
        assert!(s
            .refused("notepad_get", json!({"scope": "global", "key": "todo"}))
            .contains("not_found"));
        // A deleted note starts again at version 1.
        let reborn = s.ok(
            "notepad_set",
            json!({"scope": "global", "key": "todo", "value": "again"}),
        );
        assert_eq!(
            (reborn["version"].clone(), reborn["created"].clone()),
            (json!(1), json!(true))
        );
        assert_eq!(rows_in(env, "project:CORE"), 1);
    });
}

#[test]
fn refusals_name_the_argument() {
    let dir = plugins(&["notepad"]);
    on_both("notepad-invalid", |env| {
        let mut s = env.start(dir.path(), &[]);
        for scope in ["", "Global", "team:x", "project:", "agent:two words"] {
            let text = s.refused(
                "notepad_set",
                json!({"scope": scope, "key": "k", "value": "v"}),
            );
            assert!(text.contains("invalid_arguments"), "{text}");
            assert!(text.contains("\"scope\""), "{text}");
            assert!(text.contains("project:<KEY>"), "{text}");
        }
        for key in ["", "a b", "ü", &"k".repeat(201)] {
            let text = s.refused("notepad_get", json!({"scope": "global", "key": key}));
            assert!(text.contains("\"key\""), "{text}");
        }
        let max = "v".repeat(16 * 1024);
        s.ok(
            "notepad_set",
            json!({"scope": "global", "key": "max", "value": max}),
        );
        let over = s.refused(
            "notepad_set",
            json!({"scope": "global", "key": "big", "value": "v".repeat(16 * 1024 + 1)}),
        );
        assert!(
            over.contains("\"value\"") && over.contains("16385 bytes"),
            "{over}"
        );
        // The limit is in bytes: 8193 two-byte characters are over it.
        let wide = s.refused(
            "notepad_set",
            json!({"scope": "global", "key": "wide", "value": "é".repeat(8193)}),
        );
        assert!(wide.contains("\"value\""), "{wide}");
        for (args, field) in [
            (
                json!({"scope": "global", "key": "k", "value": "v", "ttl_s": 0}),
                "ttl_s",
            ),
            (
                json!({"scope": "global", "key": "k", "value": "v", "expected_version": -1}),
                "expected_version",
            ),
            (
                json!({"scope": "global", "key": "k", "value": "v", "remote": "x"}),
                "remote",
            ),
            (json!({"scope": "global", "key": "k"}), "value"),
        ] {
            let text = s.refused("notepad_set", args);
            assert!(
                text.contains("invalid_arguments") && text.contains(field),
                "{field}: {text}"
            );
        }
        for (args, field) in [
            (json!({"cursor": "nonsense"}), "\"cursor\""),
            (json!({"limit": 0}), "\"limit\""),
            (json!({"limit": 201}), "\"limit\""),
            (json!({"scope": "nope"}), "\"scope\""),
        ] {
            let text = s.refused("notepad_list", args);
            assert!(text.contains(field), "{field}: {text}");
        }
        let both = s.refused(
            "notepad_cleanup",
            json!({"expired_only": true, "older_than_s": 5}),
        );
        assert!(both.contains("\"expired_only\""), "{both}");
        let neither = s.refused("notepad_cleanup", json!({"expired_only": false}));
        assert!(neither.contains("\"older_than_s\""), "{neither}");
        // Nothing of the refused calls was written.
        let all = list_all(&mut s, json!({}));
        assert_eq!(all, pairs(&[("global", "max")]));
    });
}

#[test]
fn expired_notes_are_absent_before_cleanup_removes_them() {
    let dir = plugins(&["notepad"]);
    on_both("notepad-ttl", |env| {
        let mut s = env.start(dir.path(), &[]);
        let short = s.ok(
            "notepad_set",
            json!({"scope": "global", "key": "short", "value": "s", "ttl_s": 1}),
        );
        assert!(short["expires_at"].is_string(), "{short}");
        s.ok(
            "notepad_set",
            json!({"scope": "global", "key": "gone", "value": "g", "ttl_s": 1}),
        );
        s.ok(
            "notepad_set",
            json!({"scope": "global", "key": "again", "value": "a1", "ttl_s": 1}),
        );
        s.ok(
            "notepad_set",
            json!({"scope": "global", "key": "again", "value": "a2", "ttl_s": 1}),
        );
        let long = s.ok(
            "notepad_set",
            json!({"scope": "global", "key": "long", "value": "l", "ttl_s": 3600}),
        );
        s.ok(
            "notepad_set",
            json!({"scope": "project:X", "key": "short", "value": "x", "ttl_s": 1}),
        );
        s.ok(
            "notepad_set",
            json!({"scope": "global", "key": "forever", "value": "f"}),
        );
        let got = s.ok("notepad_get", json!({"scope": "global", "key": "short"}));
        assert_eq!(got["expires_at"], short["expires_at"]);
        assert_eq!(got["version"], 1);
        std::thread::sleep(Duration::from_millis(1300));

        // Invisible to every tool, though the rows are still there.
        let text = s.refused("notepad_get", json!({"scope": "global", "key": "short"}));
        assert!(text.contains("not_found"), "{text}");
        assert_eq!(rows_in(env, "global"), 5);
        assert_eq!(
            list_all(&mut s, json!({})),
            pairs(&[("global", "forever"), ("global", "long")])
        );
        let listed = s.ok("notepad_list", json!({"scope": "global"}));
        let long_item = &listed["items"][1];
        assert_eq!(long_item["expires_at"], long["expires_at"]);
        let cas = s.refused(
            "notepad_set",
            json!({"scope": "global", "key": "short", "value": "n", "expected_version": 1}),
        );
        assert!(cas.contains("at version 0"), "{cas}");
        let deleted = s.ok("notepad_delete", json!({"scope": "global", "key": "gone"}));
        assert_eq!(deleted["deleted"], false);
        // A write over an expired note starts again at version 1, without expiry now.
        let reborn = s.ok(
            "notepad_set",
            json!({"scope": "global", "key": "again", "value": "a3"}),
        );
        assert_eq!(
            (reborn["version"].clone(), reborn["created"].clone()),
            (json!(1), json!(true))
        );
        assert!(reborn.get("expires_at").is_none());

        let dry = s.ok("notepad_cleanup", json!({"dry_run": true}));
        assert_eq!(dry["dry_run"], true);
        assert_eq!(dry["deleted"], 2);
        assert_eq!(
            dry["items"],
            json!([
                {"scope": "global", "key": "short", "reason": "expired"},
                {"scope": "project:X", "key": "short", "reason": "expired"}
            ])
        );
        assert_eq!(rows_in(env, "global"), 4);
        let scoped = s.ok("notepad_cleanup", json!({"scope": "project:X"}));
        assert_eq!(scoped["deleted"], 1);
        assert_eq!(scoped["dry_run"], false);
        assert_eq!(rows_in(env, "project:X"), 0);
        let done = s.ok("notepad_cleanup", json!({}));
        assert_eq!(done["deleted"], 1);
        assert_eq!(
            done["items"],
            json!([{"scope": "global", "key": "short", "reason": "expired"}])
        );
        assert_eq!(rows_in(env, "global"), 3);
        let nothing = s.ok("notepad_cleanup", json!({}));
        assert_eq!(
            (nothing["deleted"].clone(), nothing["items"].clone()),
            (json!(0), json!([]))
        );

        // older_than_s: notes not updated for that long, expired or not.
        s.ok(
            "notepad_set",
            json!({"scope": "agent:a", "key": "old", "value": "o"}),
        );
        s.ok(
            "notepad_set",
            json!({"scope": "agent:b", "key": "old", "value": "o"}),
        );
        std::thread::sleep(Duration::from_millis(1100));
        s.ok(
            "notepad_set",
            json!({"scope": "agent:a", "key": "new", "value": "n"}),
        );
        let aged = s.ok(
            "notepad_cleanup",
            json!({"older_than_s": 1, "scope_prefix": "agent:", "dry_run": true}),
        );
        assert_eq!(
            aged["items"],
            json!([
                {"scope": "agent:a", "key": "old", "reason": "older_than"},
                {"scope": "agent:b", "key": "old", "reason": "older_than"}
            ])
        );
        let aged = s.ok(
            "notepad_cleanup",
            json!({"older_than_s": 1, "scope": "agent:a", "expired_only": false}),
        );
        assert_eq!(aged["deleted"], 1);
        assert_eq!(
            list_all(&mut s, json!({"scope_prefix": "agent:"})),
            pairs(&[("agent:a", "new"), ("agent:b", "old")])
        );
    });
}

#[test]
fn listing_filters_orders_byte_wise_and_pages() {
    let dir = plugins(&["notepad"]);
    on_both("notepad-list", |env| {
        let mut s = env.start(dir.path(), &[]);
        let keys = ["ab", "a.b", "B", "a-b", "a", "a.c"];
        for scope in ["project:WEB", "global", "project:CORE", "agent:bot"] {
            let entries: Vec<Value> = keys
                .iter()
                .map(|k| json!({"key": k, "value": format!("{scope} {k}")}))
                .collect();
            s.ok(
                "notepad_bulk_set",
                json!({"scope": scope, "entries": entries}),
            );
        }
        let sorted_keys = ["B", "a", "a-b", "a.b", "a.c", "ab"];
        let mut expected = Vec::new();
        for scope in ["agent:bot", "global", "project:CORE", "project:WEB"] {
            for key in sorted_keys {
                expected.push((scope.to_owned(), key.to_owned()));
            }
        }
        assert_eq!(list_all(&mut s, json!({})), expected);
        for limit in [1, 5, 24] {
            assert_eq!(
                list_all(&mut s, json!({"limit": limit})),
                expected,
                "limit {limit}"
            );
        }
        let exact = s.ok("notepad_list", json!({"limit": 24}));
        assert_eq!(exact["items"].as_array().expect("items").len(), 24);
        assert!(exact.get("next_cursor").is_none(), "{exact}");
        let first = s.ok("notepad_list", json!({"limit": 23}));
        assert!(first["next_cursor"].is_string());

        let item = &first["items"][0];
        assert!(item.get("value").is_none(), "{item}");
        assert_eq!(item["version"], 1);
        assert!(item["updated_at"].is_string());
        let with = s.ok(
            "notepad_list",
            json!({"scope": "global", "key_prefix": "a.", "include_values": true}),
        );
        assert_eq!(
            with["items"],
            json!([
                {"scope": "global", "key": "a.b", "version": 1, "updated_at": with["items"][0]["updated_at"], "value": "global a.b"},
                {"scope": "global", "key": "a.c", "version": 1, "updated_at": with["items"][1]["updated_at"], "value": "global a.c"}
            ])
        );
        assert_eq!(
            list_all(
                &mut s,
                json!({"scope_prefix": "project:", "key_prefix": "a-"})
            ),
            pairs(&[("project:CORE", "a-b"), ("project:WEB", "a-b")])
        );
        // Prefixes are case-sensitive on both backends.
        assert_eq!(
            list_all(
                &mut s,
                json!({"scope_prefix": "project:C", "key_prefix": "b"})
            ),
            Vec::<(String, String)>::new()
        );
        assert_eq!(
            list_all(
                &mut s,
                json!({"scope_prefix": "project:C", "key_prefix": "B"})
            ),
            pairs(&[("project:CORE", "B")])
        );
        assert_eq!(
            list_all(&mut s, json!({"scope_prefix": "PROJECT:"})),
            Vec::<(String, String)>::new()
        );
        assert_eq!(
            list_all(&mut s, json!({"scope": "agent:bot", "limit": 2})).len(),
            6
        );

        // Values fill a page before limit does: it is cut so the result keeps its structure.
        let big: Vec<Value> = (0..30)
            .map(|i| json!({"key": format!("big{i:02}"), "value": "x".repeat(15 * 1024)}))
            .collect();
        s.ok(
            "notepad_bulk_set",
            json!({"scope": "host:big", "entries": big}),
        );
        let page = s.call(
            "notepad_list",
            json!({"scope": "host:big", "include_values": true, "limit": 30}),
        );
        assert!(text(&page).chars().count() <= 20_000);
        let items = page["structuredContent"]["items"]
            .as_array()
            .expect("structured page");
        assert!(!items.is_empty() && items.len() < 30, "{}", items.len());
        let all = list_all(
            &mut s,
            json!({"scope": "host:big", "include_values": true, "limit": 30}),
        );
        assert_eq!(all.len(), 30);
        assert_eq!(all[29].1, "big29");
    });
}

#[test]
fn bulk_set_is_one_transaction_and_replace_scope_removes_the_rest() {
    let dir = plugins(&["notepad"]);
    on_both("notepad-bulk", |env| {
        let mut s = env.start(dir.path(), &[]);
        s.ok(
            "notepad_set",
            json!({"scope": "project:CORE", "key": "keep", "value": "k"}),
        );
        let first = s.ok(
            "notepad_bulk_set",
            json!({"scope": "project:CORE", "entries": [
                {"key": "a", "value": "1"}, {"key": "b", "value": "2"}, {"key": "c", "value": "3", "ttl_s": 60}
            ]}),
        );
        assert_eq!(
            first,
            json!({"scope": "project:CORE", "set": 3, "created": 3, "updated": 0, "deleted": 0})
        );
        let c = s.ok("notepad_get", json!({"scope": "project:CORE", "key": "c"}));
        assert!(c["expires_at"].is_string(), "{c}");
        assert_eq!(c["updated_by"], "coremcp-tests 0");
        let second = s.ok(
            "notepad_bulk_set",
            json!({"scope": "project:CORE", "entries": [
                {"key": "a", "value": "1b"}, {"key": "c", "value": "3b"}, {"key": "d", "value": "4"}
            ]}),
        );
        assert_eq!(
            (second["created"].clone(), second["updated"].clone()),
            (json!(1), json!(2))
        );
        let a = s.ok("notepad_get", json!({"scope": "project:CORE", "key": "a"}));
        assert_eq!(
            (a["value"].clone(), a["version"].clone()),
            (json!("1b"), json!(2))
        );
        let c = s.ok("notepad_get", json!({"scope": "project:CORE", "key": "c"}));
        assert!(
            c.get("expires_at").is_none(),
            "a bulk entry without ttl_s clears the expiry"
        );

        // One bad entry (a 20 KiB value at index 57) and nothing of the call is written.
        s.ok(
            "notepad_set",
            json!({"scope": "project:WEB", "key": "k010", "value": "before"}),
        );
        let mut entries: Vec<Value> = (0..100)
            .map(|i| json!({"key": format!("k{i:03}"), "value": format!("v{i}")}))
            .collect();
        entries[57]["value"] = json!("x".repeat(20 * 1024));
        let text = s.refused(
            "notepad_bulk_set",
            json!({"scope": "project:WEB", "entries": entries, "replace_scope": true}),
        );
        assert!(text.contains("entries[57].value"), "{text}");
        assert!(text.contains("k057"), "{text}");
        let web = s.ok(
            "notepad_get",
            json!({"scope": "project:WEB", "key": "k010"}),
        );
        assert_eq!(
            (web["value"].clone(), web["version"].clone()),
            (json!("before"), json!(1))
        );
        assert_eq!(rows_in(env, "project:WEB"), 1);
        let dup = s.refused(
            "notepad_bulk_set",
            json!({"scope": "project:WEB", "entries": [
                {"key": "x", "value": "1"}, {"key": "y", "value": "2"}, {"key": "x", "value": "3"}
            ]}),
        );
        assert!(
            dup.contains("entries[2].key") && dup.contains("\"x\""),
            "{dup}"
        );
        for (entries, field) in [
            (json!([{"key": "bad key", "value": "v"}]), "entries[0].key"),
            (json!([{"key": "k", "value": "v", "ttl_s": 0}]), "ttl_s"),
            (json!([{"key": "k"}]), "value"),
        ] {
            let text = s.refused(
                "notepad_bulk_set",
                json!({"scope": "project:WEB", "entries": entries}),
            );
            assert!(
                text.contains("invalid_arguments") && text.contains(field),
                "{field}: {text}"
            );
        }
        assert_eq!(rows_in(env, "project:WEB"), 1);
        let scope = s.refused("notepad_bulk_set", json!({"scope": "nope", "entries": []}));
        assert!(scope.contains("\"scope\""), "{scope}");

        // replace_scope: the scope ends up holding exactly the entries; other scopes keep theirs.
        let replaced = s.ok(
            "notepad_bulk_set",
            json!({"scope": "project:CORE", "entries": [{"key": "a", "value": "1c"}, {"key": "e", "value": "5"}], "replace_scope": true}),
        );
        assert_eq!(
            replaced,
            json!({"scope": "project:CORE", "set": 2, "created": 1, "updated": 1, "deleted": 4})
        );
        assert_eq!(
            list_all(&mut s, json!({"scope_prefix": "project:"})),
            pairs(&[
                ("project:CORE", "a"),
                ("project:CORE", "e"),
                ("project:WEB", "k010")
            ])
        );
        let emptied = s.ok(
            "notepad_bulk_set",
            json!({"scope": "project:CORE", "entries": [], "replace_scope": true}),
        );
        assert_eq!(
            (emptied["set"].clone(), emptied["deleted"].clone()),
            (json!(0), json!(2))
        );
        assert_eq!(rows_in(env, "project:CORE"), 0);

        // 10 000 notes in one call, one transaction, in well under a few seconds.
        let pad = "v".repeat(100);
        let entries: Vec<Value> = (0..10_000)
            .map(|i| json!({"key": format!("k{i:05}"), "value": format!("{i}-{pad}")}))
            .collect();
        let started = Instant::now();
        let bulk = s.ok(
            "notepad_bulk_set",
            json!({"scope": "project:BENCH", "entries": entries}),
        );
        let took = started.elapsed();
        eprintln!(
            "notepad_bulk_set of 10 000 new notes on {:?}: {took:?}",
            env.backend
        );
        assert_eq!(
            (bulk["set"].clone(), bulk["created"].clone()),
            (json!(10_000), json!(10_000))
        );
        assert!(took < Duration::from_secs(10), "{took:?}");
        assert_eq!(rows_in(env, "project:BENCH"), 10_000);
        let mut entries: Vec<Value> = (0..10_000)
            .map(|i| json!({"key": format!("k{i:05}"), "value": format!("second {i}")}))
            .collect();
        entries.push(json!({"key": "k10000", "value": "one too many"}));
        let over = s.refused(
            "notepad_bulk_set",
            json!({"scope": "project:BENCH", "entries": entries}),
        );
        assert!(over.contains("entries") && over.contains("10000"), "{over}");
        entries.pop();
        let started = Instant::now();
        let again = s.ok(
            "notepad_bulk_set",
            json!({"scope": "project:BENCH", "entries": entries, "replace_scope": true}),
        );
        eprintln!(
            "notepad_bulk_set of 10 000 updates on {:?}: {:?}",
            env.backend,
            started.elapsed()
        );
        assert_eq!(
            again,
            json!({"scope": "project:BENCH", "set": 10_000, "created": 0, "updated": 10_000, "deleted": 0})
        );
        let last = s.ok(
            "notepad_get",
            json!({"scope": "project:BENCH", "key": "k09999"}),
        );
        assert_eq!(
            (last["value"].clone(), last["version"].clone()),
            (json!("second 9999"), json!(2))
        );
    });
}

#[test]
fn notes_outlive_the_process() {
    let dir = plugins(&["notepad"]);
    on_both("notepad-restart", |env| {
        let mut s = env.start(dir.path(), &[]);
        s.ok(
            "notepad_set",
            json!({"scope": "project:CORE", "key": "plan", "value": "v1"}),
        );
        s.ok(
            "notepad_set",
            json!({"scope": "project:CORE", "key": "plan", "value": "v2"}),
        );
        s.ok(
            "notepad_set",
            json!({"scope": "global", "key": "ttl", "value": "t", "ttl_s": 3600}),
        );
        assert_eq!(s.finish(Duration::from_secs(10)), Some(0));

        let mut s = env.start(dir.path(), &[]);
        let got = s.ok(
            "notepad_get",
            json!({"scope": "project:CORE", "key": "plan"}),
        );
        assert_eq!(
            (got["value"].clone(), got["version"].clone()),
            (json!("v2"), json!(2))
        );
        let ttl = s.ok("notepad_get", json!({"scope": "global", "key": "ttl"}));
        assert!(ttl["expires_at"].is_string());
        let next = s.ok(
            "notepad_set",
            json!({"scope": "project:CORE", "key": "plan", "value": "v3", "expected_version": 2}),
        );
        assert_eq!(next["version"], 3);
    });
}

#[test]
fn the_group_lists_six_tools_with_their_hints() {
    let dir = plugins(&["notepad"]);
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
                .is_some_and(|n| n.starts_with("notepad_"))
        })
        .collect();
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(
        names,
        [
            "notepad_get",
            "notepad_set",
            "notepad_delete",
            "notepad_list",
            "notepad_bulk_set",
            "notepad_cleanup"
        ]
    );
    let hint = |i: usize, name: &str| hints(tools[i])[name].clone();
    assert_eq!(hint(0, "readOnlyHint"), true);
    assert_eq!(hint(1, "idempotentHint"), true);
    assert_eq!(hint(2, "destructiveHint"), true);
    assert_eq!(hint(4, "destructiveHint"), true);
    assert_eq!(hint(5, "destructiveHint"), true);
    for tool in &tools {
        assert_eq!(hints(tool)["openWorldHint"], false, "{}", tool["name"]);
        assert!(
            tool["inputSchema"]["properties"].is_object(),
            "{}",
            tool["name"]
        );
    }
}

/// What a client calls itself reaches "who did what" without line breaks, terminal escapes or
/// bidirectional overrides, and no longer than a peer accepts: a name cannot forge a record
/// line or repaint an operator's terminal. Both eras: `initialize` and a modern
/// `server/discover`.
#[test]
fn a_client_name_reaches_the_records_without_lines_escapes_or_overrides() {
    let dir = plugins(&["notepad"]);
    let data = coremcp_tests::TempDir::new("client-name");
    let data = data.path().to_str().expect("utf-8 temp path").to_owned();
    let start = || Server::start(dir.path(), &[], &[("COREMCP_DATA", data.as_str())]);
    let hostile = "evil\n2026-12-07 updated_by: alice\r\u{1b}[2J\u{1b}]0;x\u{7}";
    let expected = "evil 2026-12-07 updated_by: alice [2J ]0;x 1gpj";
    let check = |server: &mut Server, key: &str| {
        server.ok(
            "notepad_set",
            json!({"scope": "global", "key": key, "value": "v"}),
        );
        let got = server.ok("notepad_get", json!({"scope": "global", "key": key}));
        assert_eq!(got["updated_by"], expected, "{got}");
    };

    let mut old = start();
    let init = old.request(
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": hostile, "version": "1\u{202E}gpj"}}),
    );
    assert!(init.get("result").is_some(), "{init}");
    old.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    check(&mut old, "old");

    let mut long = start();
    let name = "n".repeat(100_000);
    long.request(
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": name, "version": "0"}}),
    );
    long.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    long.ok(
        "notepad_set",
        json!({"scope": "global", "key": "long", "value": "v"}),
    );
    let got = long.ok("notepad_get", json!({"scope": "global", "key": "long"}));
    assert_eq!(
        got["updated_by"],
        "n".repeat(200),
        "cut to what a peer accepts"
    );

    let mut modern = start();
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": hostile, "version": "1\u{202E}gpj"}
    });
    let discover = modern.request("server/discover", json!({"_meta": meta}));
    assert!(discover.get("result").is_some(), "{discover}");
    for (tool, args) in [
        (
            "notepad_set",
            json!({"scope": "global", "key": "new", "value": "v"}),
        ),
        ("notepad_get", json!({"scope": "global", "key": "new"})),
    ] {
        let answer = modern.request(
            "tools/call",
            json!({"name": tool, "arguments": args, "_meta": meta}),
        );
        let result = &answer["result"];
        assert!(result["isError"] != true, "{answer}");
        if tool == "notepad_get" {
            assert_eq!(
                result["structuredContent"]["updated_by"], expected,
                "{answer}"
            );
        }
    }
}

/// A clean-up of thousands of notes with the longest names the grammar allows answers what it
/// did — the count, a sample that fits, how many more — never an error for a change that was
/// made (ten times the 200 a list may hold).
#[test]
fn a_cleanup_of_thousands_of_long_notes_answers_a_count_and_a_sample_on_both_stores() {
    let dir = plugins(&["notepad"]);
    on_both("notepad-sweep", |env| {
        let mut s = env.start(dir.path(), &[]);
        let scope = format!("project:{}", "P".repeat(200));
        let entries: Vec<Value> = (0..2_000)
            .map(|i| json!({"key": format!("{i:04}-{}", "k".repeat(195)), "value": "v"}))
            .collect();
        let set = s.ok(
            "notepad_bulk_set",
            json!({"scope": scope, "entries": entries}),
        );
        assert_eq!(set["created"], 2_000);
        for dry_run in [true, false] {
            let swept = s.ok(
                "notepad_cleanup",
                json!({"scope": scope, "older_than_s": 0, "dry_run": dry_run}),
            );
            assert_eq!(swept["deleted"], 2_000, "{dry_run}");
            let shown = swept["items"].as_array().expect("items").len();
            assert!(shown > 0 && shown < 200, "{shown}");
            assert_eq!(swept["more"], 2_000 - shown);
            assert_eq!(
                swept["items"][0]["key"],
                format!("0000-{}", "k".repeat(195))
            );
            assert_eq!(swept["items"][0]["reason"], "older_than");
        }
        assert_eq!(rows_in(env, &scope), 0, "the change was made");
    });
}
