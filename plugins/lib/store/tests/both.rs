//! Every behaviour of the store layer, with the same assertions on both backends (see
//! `coremcp_store::testing`).

use std::sync::{Arc, Barrier};

use coremcp_store::query::Query;
use coremcp_store::search::{self, Index};
use coremcp_store::tally::Tally;
use coremcp_store::testing::Env;
use coremcp_store::{
    check_version, BackendKind, Migration, Param, Store, StoreError, StoreUrl, Tx, BUSY_ATTEMPTS,
};

coremcp_store::both!(
    migrations_are_applied_once_and_recorded,
    concurrent_opens_apply_each_migration_once,
    err_rolls_back,
    a_read_takes_no_write_lock_and_cannot_write_on_postgres,
    failed_statement_rolls_back,
    panic_rolls_back_and_the_store_stays_usable,
    version_conflict,
    params_round_trip,
    nulls_round_trip,
    placeholders_in_string_literals,
    rows_by_name_and_type_errors,
    query_one_and_opt,
    busy_is_retried_then_reported,
    foreign_keys_are_enforced,
    renamed_migration_is_refused,
    failing_migration_leaves_nothing,
    concurrent_writers_lose_nothing,
    full_text_search_ranks_the_same_on_both_backends,
    a_search_query_is_never_syntax,
    the_search_index_follows_every_write,
    a_tally_follows_every_write,
);

const LOG: Migration = Migration {
    version: 1,
    name: "log",
    sql: "CREATE TABLE applied (version BIGINT NOT NULL);
          INSERT INTO applied (version) VALUES (1);",
    search: &[],
    ranks: &[],
    tallies: &[],
};
const LOG2: Migration = Migration {
    version: 2,
    name: "log two",
    sql: "INSERT INTO applied (version) VALUES (2);",
    search: &[],
    ranks: &[],
    tallies: &[],
};
const LOG5: Migration = Migration {
    version: 5,
    name: "log five",
    sql: "INSERT INTO applied (version) VALUES (5);",
    search: &[],
    ranks: &[],
    tallies: &[],
};

const ITEMS: Migration = Migration {
    version: 1,
    name: "items",
    sql: "CREATE TABLE items (
              id TEXT PRIMARY KEY,
              body TEXT NOT NULL,
              version BIGINT NOT NULL
          );",
    search: &[],
    ranks: &[],
    tallies: &[],
};

const VALUES: Migration = Migration {
    version: 1,
    name: "vals",
    sql: "CREATE TABLE vals (
              id BIGINT PRIMARY KEY,
              i BIGINT,
              r DOUBLE PRECISION,
              t TEXT,
              b BOOLEAN
          );",
    search: &[],
    ranks: &[],
    tallies: &[],
};

fn count(tx: &mut Tx<'_>, sql: &str) -> i64 {
    tx.query_one(sql, &[])
        .expect("the count query runs")
        .get_i64(0)
        .expect("a count is an integer")
}

fn count_items(store: &Store) -> i64 {
    store
        .transaction(|tx| Ok(count(tx, "SELECT count(*) FROM items")))
        .expect("counting runs")
}

fn applied(store: &Store) -> Vec<i64> {
    store
        .transaction(|tx| {
            tx.query("SELECT version FROM applied ORDER BY version", &[])?
                .iter()
                .map(|r| r.get_i64(0))
                .collect()
        })
        .expect("reading the log runs")
}

fn recorded(store: &Store) -> Vec<(i64, String)> {
    store
        .transaction(|tx| {
            let rows = tx.query(
                "SELECT version, name, applied_at FROM schema_migrations ORDER BY version",
                &[],
            )?;
            rows.iter()
                .map(|r| {
                    let at = r.get_text("applied_at")?;
                    assert!(at.starts_with("20") && at.contains('T'), "applied_at {at}");
                    Ok((r.get_i64("version")?, r.get_text("name")?))
                })
                .collect()
        })
        .expect("reading schema_migrations runs")
}

fn migrations_are_applied_once_and_recorded(env: &Env) {
    let store = env.open(&[LOG, LOG2]);
    assert_eq!(store.kind(), env.kind());
    assert_eq!(store.service(), env.service);
    assert_eq!(applied(&store), [1, 2]);
    assert_eq!(
        recorded(&store),
        [(1, "log".to_owned()), (2, "log two".to_owned())]
    );
    drop(store);

    // Reopening applies nothing again; a new migration is applied once.
    let store = env.open(&[LOG, LOG2]);
    assert_eq!(applied(&store), [1, 2]);
    let store2 = env.open(&[LOG, LOG2, LOG5]);
    assert_eq!(applied(&store2), [1, 2, 5]);
    assert_eq!(recorded(&store2).len(), 3);
    // An older binary with fewer migrations still opens the newer store.
    let old = env.open(&[LOG]);
    assert_eq!(applied(&old), [1, 2, 5]);

    if let Some(dir) = &env.dir {
        let file = dir.join(format!("{}.sqlite3", env.service));
        assert!(file.is_file(), "one file per service: {}", file.display());
        let mode = store
            .transaction(|tx| tx.query_one("PRAGMA journal_mode", &[])?.get_text(0))
            .expect("journal mode");
        assert_eq!(mode, "wal");
    }
}

fn concurrent_opens_apply_each_migration_once(env: &Env) {
    const THREADS: usize = 6;
    let barrier = Arc::new(Barrier::new(THREADS));
    let results: Vec<Result<Store, StoreError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..THREADS)
            .map(|_| {
                let barrier = Arc::clone(&barrier);
                scope.spawn(move || {
                    barrier.wait();
                    Store::open(&env.url, &env.service, &[LOG, LOG2, LOG5])
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("an opener thread does not panic"))
            .collect()
    });
    for result in results {
        let store = result.expect("every concurrent open succeeds");
        assert_eq!(applied(&store), [1, 2, 5]);
        assert_eq!(recorded(&store).len(), 3);
    }
}

fn insert_item(tx: &mut Tx<'_>, id: &str, body: &str) -> Result<u64, StoreError> {
    tx.execute(
        "INSERT INTO items (id, body, version) VALUES ($1, $2, 1)",
        &[id.into(), body.into()],
    )
}

fn err_rolls_back(env: &Env) {
    let store = env.open(&[ITEMS]);
    let result: Result<(), StoreError> = store.transaction(|tx| {
        assert_eq!(insert_item(tx, "a", "first")?, 1);
        assert_eq!(count(tx, "SELECT count(*) FROM items"), 1);
        Err(StoreError::NotFound("something the closure needed".into()))
    });
    match result {
        Err(StoreError::NotFound(what)) => assert_eq!(what, "something the closure needed"),
        other => panic!("expected the closure's own error, got {other:?}"),
    }
    assert_eq!(count_items(&store), 0);

    // And Ok commits.
    store
        .transaction(|tx| insert_item(tx, "a", "first"))
        .expect("insert commits");
    assert_eq!(count_items(&store), 1);
}

fn a_read_takes_no_write_lock_and_cannot_write_on_postgres(env: &Env) {
    let store = env.open(&[ITEMS]);
    let writer = env.open(&[ITEMS]);
    store
        .transaction(|tx| insert_item(tx, "a", "first"))
        .expect("insert");
    // Another connection writes while the read is open: a write lock held by the read (as
    // `BEGIN IMMEDIATE` takes) would keep it waiting until its busy timeout.
    let started = std::time::Instant::now();
    let seen = store
        .read(|tx| {
            let before = count(tx, "SELECT count(*) FROM items");
            writer
                .transaction(|w| insert_item(w, "b", "second"))
                .expect("a writer is not blocked by a reader");
            Ok(before)
        })
        .expect("read");
    assert_eq!(seen, 1);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(2),
        "the writer waited {:?}",
        started.elapsed()
    );
    assert_eq!(count_items(&store), 2);
    let written = store.read(|tx| insert_item(tx, "c", "third"));
    match env.kind() {
        BackendKind::Postgres => match written {
            Err(StoreError::Backend(message)) => {
                assert!(message.contains("read-only"), "{message}")
            }
            other => panic!("a write in a read transaction: {other:?}"),
        },
        // SQLite does not refuse it: the deferred transaction takes the write lock.
        BackendKind::Sqlite => assert_eq!(written.expect("written"), 1),
    }
}

fn failed_statement_rolls_back(env: &Env) {
    let store = env.open(&[ITEMS]);
    let result = store.transaction(|tx| {
        insert_item(tx, "a", "first")?;
        insert_item(tx, "a", "duplicate")
    });
    match result {
        Err(StoreError::Backend(message)) => {
            let lower = message.to_lowercase();
            assert!(
                lower.contains("unique") || lower.contains("duplicate"),
                "{message}"
            );
            if env.kind() == BackendKind::Postgres {
                assert!(message.starts_with("PostgreSQL 23505:"), "{message}");
            } else {
                assert!(message.starts_with("SQLite:"), "{message}");
            }
        }
        other => panic!("expected a backend error, got {other:?}"),
    }
    assert_eq!(count_items(&store), 0);
}

fn panic_rolls_back_and_the_store_stays_usable(env: &Env) {
    let store = env.open(&[ITEMS]);
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _: Result<(), StoreError> = store.transaction(|tx| {
            insert_item(tx, "a", "first")?;
            panic!("the closure panics half-way");
        });
    }));
    assert!(caught.is_err(), "the panic continues to the caller");
    assert_eq!(count_items(&store), 0);
    store
        .transaction(|tx| insert_item(tx, "b", "after the panic"))
        .expect("the store is usable after a panic");
    assert_eq!(count_items(&store), 1);
}

/// The documented optimistic-concurrency pattern.
fn update_item(tx: &mut Tx<'_>, id: &str, body: &str, expected: i64) -> Result<i64, StoreError> {
    let n = tx.execute(
        "UPDATE items SET body = $2, version = version + 1 WHERE id = $1 AND version = $3",
        &[id.into(), body.into(), expected.into()],
    )?;
    if n == 0 {
        let row = tx
            .query_opt("SELECT version FROM items WHERE id = $1", &[id.into()])?
            .ok_or_else(|| StoreError::NotFound(format!("item {id}")))?;
        check_version(row.get_i64("version")?, Some(expected))?;
        unreachable!("0 rows updated although the version matched");
    }
    Ok(expected + 1)
}

fn version_conflict(env: &Env) {
    let store = env.open(&[ITEMS]);
    store
        .transaction(|tx| insert_item(tx, "a", "v1"))
        .expect("insert");
    let v = store
        .transaction(|tx| update_item(tx, "a", "v2", 1))
        .expect("update at the expected version");
    assert_eq!(v, 2);
    // A writer still holding version 1 loses.
    match store.transaction(|tx| update_item(tx, "a", "stale", 1)) {
        Err(StoreError::Conflict { current }) => assert_eq!(current, 2),
        other => panic!("expected a conflict, got {other:?}"),
    }
    match store.transaction(|tx| update_item(tx, "missing", "x", 1)) {
        Err(StoreError::NotFound(what)) => assert_eq!(what, "item missing"),
        other => panic!("expected not found, got {other:?}"),
    }
    let body = store
        .transaction(|tx| {
            tx.query_one("SELECT body FROM items WHERE id = $1", &["a".into()])?
                .get_text(0)
        })
        .expect("read back");
    assert_eq!(body, "v2");
}

fn params_round_trip(env: &Env) {
    let store = env.open(&[VALUES]);
    let cases: Vec<(i64, f64, &str, bool)> = vec![
        (0, 0.0, "", false),
        (i64::MAX, 0.1, "plain", true),
        (i64::MIN, -1.5e300, "it's \"quoted\" $1 ?1 -- no", false),
        (-42, f64::MIN_POSITIVE, "ünïcødé ✓ 日本", true),
        (7, 123_456.789_012_5, "line\nbreak\ttab\\", true),
    ];
    store
        .transaction(|tx| {
            for (id, (i, r, t, b)) in cases.iter().enumerate() {
                let n = tx.execute(
                    "INSERT INTO vals (id, i, r, t, b) VALUES ($1, $2, $3, $4, $5)",
                    &[
                        Param::Int(id as i64),
                        Param::Int(*i),
                        Param::Real(*r),
                        Param::Text((*t).to_owned()),
                        Param::Bool(*b),
                    ],
                )?;
                assert_eq!(n, 1);
            }
            Ok(())
        })
        .expect("inserts");
    let rows = store
        .transaction(|tx| tx.query("SELECT id, i, r, t, b FROM vals ORDER BY id", &[]))
        .expect("select");
    assert_eq!(rows.len(), cases.len());
    for (row, (i, r, t, b)) in rows.iter().zip(&cases) {
        assert_eq!(row.get_i64("i").expect("i"), *i);
        assert_eq!(row.get_f64("r").expect("r").to_bits(), r.to_bits(), "{r}");
        assert_eq!(row.get_text("t").expect("t"), *t);
        assert_eq!(row.get_bool("b").expect("b"), *b);
    }
    // Each parameter type also works in a WHERE clause.
    let ids = store
        .transaction(|tx| {
            let by_bool = tx.query(
                "SELECT id FROM vals WHERE b = $1 ORDER BY id",
                &[Param::Bool(true)],
            )?;
            let by_text = tx.query_one("SELECT id FROM vals WHERE t = $1", &["plain".into()])?;
            let by_int = tx.query_one("SELECT id FROM vals WHERE i = $1", &[i64::MIN.into()])?;
            let by_real = tx.query_one("SELECT id FROM vals WHERE r = $1", &[0.1.into()])?;
            Ok((
                by_bool
                    .iter()
                    .map(|r| r.get_i64(0))
                    .collect::<Result<Vec<_>, _>>()?,
                by_text.get_i64(0)?,
                by_int.get_i64(0)?,
                by_real.get_i64(0)?,
            ))
        })
        .expect("filters");
    assert_eq!(ids, (vec![1, 3, 4], 1, 2, 1));
    // Repeated and out-of-order placeholders.
    let row = store
        .transaction(|tx| {
            tx.query_one(
                "SELECT id FROM vals WHERE i = $2 AND (t = $1 OR t = $1)",
                &["plain".into(), i64::MAX.into()],
            )
        })
        .expect("repeated placeholders");
    assert_eq!(row.get_i64(0).expect("id"), 1);
}

fn nulls_round_trip(env: &Env) {
    let store = env.open(&[VALUES]);
    store
        .transaction(|tx| {
            tx.execute(
                "INSERT INTO vals (id, i, r, t, b) VALUES ($1, $2, $3, $4, $5)",
                &[
                    Param::Int(1),
                    Param::Null,
                    Param::from(None::<f64>),
                    Param::Null,
                    Param::Null,
                ],
            )
        })
        .expect("insert NULLs");
    let row = store
        .transaction(|tx| tx.query_one("SELECT i, r, t, b FROM vals WHERE id = $1", &[1.into()]))
        .expect("select");
    assert_eq!(row.get_opt_i64("i").expect("i"), None);
    assert_eq!(row.get_opt_f64("r").expect("r"), None);
    assert_eq!(row.get_opt_text("t").expect("t"), None);
    assert_eq!(row.get_opt_bool("b").expect("b"), None);
    assert_eq!(row.get("t").expect("t"), &Param::Null);
    let err = row.get_text("t").expect_err("NULL is not text");
    assert!(matches!(err, StoreError::Usage(_)), "{err:?}");
    assert!(err.to_string().contains("found NULL"), "{err}");
    // And the opt getters read present values.
    let row = store
        .transaction(|tx| {
            tx.execute(
                "UPDATE vals SET i = $1, r = $2, t = $3, b = $4 WHERE id = 1",
                &[
                    Some(5i64).into(),
                    Some(2.5).into(),
                    Some("x").into(),
                    Some(true).into(),
                ],
            )?;
            tx.query_one("SELECT i, r, t, b FROM vals WHERE id = 1", &[])
        })
        .expect("update");
    assert_eq!(row.get_opt_i64(0).expect("i"), Some(5));
    assert_eq!(row.get_opt_f64(1).expect("r"), Some(2.5));
    assert_eq!(row.get_opt_text(2).expect("t"), Some("x".to_owned()));
    assert_eq!(row.get_opt_bool(3).expect("b"), Some(true));
}

fn placeholders_in_string_literals(env: &Env) {
    let store = env.open(&[ITEMS]);
    store
        .transaction(|tx| {
            tx.execute(
                "INSERT INTO items (id, body, version) VALUES ($1, 'costs $2, it''s $1', $2)",
                &["a".into(), 3.into()],
            )
        })
        .expect("insert");
    let row = store
        .transaction(|tx| {
            tx.query_one(
                "SELECT body, version, '$1' AS lit FROM items /* $2 */ WHERE id = $1 -- $2",
                &["a".into()],
            )
        })
        .expect("select");
    assert_eq!(row.get_text("body").expect("body"), "costs $2, it's $1");
    assert_eq!(row.get_i64("version").expect("version"), 3);
    assert_eq!(row.get_text("lit").expect("lit"), "$1");
}

fn rows_by_name_and_type_errors(env: &Env) {
    let store = env.open(&[VALUES]);
    let row = store
        .transaction(|tx| {
            tx.execute(
                "INSERT INTO vals (id, i, r, t, b) VALUES (1, 2, 2.5, 'x', $1)",
                &[true.into()],
            )?;
            tx.query_one("SELECT id, i, r, t, b FROM vals", &[])
        })
        .expect("insert and select");
    assert_eq!(row.columns(), ["id", "i", "r", "t", "b"]);
    assert_eq!(
        row.get_i64(1).expect("by index"),
        row.get_i64("i").expect("by name")
    );
    // An integer reads as a real (widening).
    assert_eq!(row.get_f64("i").expect("widening"), 2.0);
    let err = row.get_i64("t").expect_err("text is not an integer");
    assert_eq!(
        err.to_string(),
        "column 3 (\"t\"): expected integer, found text"
    );
    let err = row.get_text("r").expect_err("real is not text");
    assert_eq!(
        err.to_string(),
        "column 2 (\"r\"): expected text, found real"
    );
    let err = row.get_bool("r").expect_err("real is not a boolean");
    assert!(err.to_string().contains("expected boolean"), "{err}");
    let err = row.get_i64("nope").expect_err("no such column");
    assert!(
        err.to_string().contains("no column named \"nope\""),
        "{err}"
    );
}

fn query_one_and_opt(env: &Env) {
    let store = env.open(&[ITEMS]);
    store
        .transaction(|tx| {
            insert_item(tx, "a", "x")?;
            insert_item(tx, "b", "y")
        })
        .expect("inserts");
    store
        .transaction(|tx| {
            assert!(tx
                .query_opt("SELECT id FROM items WHERE id = $1", &["zz".into()])?
                .is_none());
            match tx.query_one("SELECT id FROM items WHERE id = $1", &["zz".into()]) {
                Err(StoreError::NotFound(_)) => {}
                other => panic!("expected NotFound, got {other:?}"),
            }
            match tx.query_opt("SELECT id FROM items", &[]) {
                Err(StoreError::Usage(m)) => assert!(m.contains("returned 2"), "{m}"),
                other => panic!("expected a Usage error, got {other:?}"),
            }
            Ok(())
        })
        .expect("queries");
}

fn busy_is_retried_then_reported(env: &Env) {
    let store = env.open(&[ITEMS]);
    let mut attempts = 0;
    let result: Result<(), StoreError> = store.transaction(|tx| {
        attempts += 1;
        insert_item(tx, &format!("try{attempts}"), "x")?;
        Err(StoreError::Busy)
    });
    assert!(matches!(result, Err(StoreError::Busy)), "{result:?}");
    assert_eq!(attempts, BUSY_ATTEMPTS);
    assert_eq!(count_items(&store), 0, "every attempt was rolled back");

    // Busy once, then success: the second run commits, the first left nothing.
    let mut attempts = 0;
    store
        .transaction(|tx| {
            attempts += 1;
            insert_item(tx, &format!("try{attempts}"), "x")?;
            if attempts == 1 {
                Err(StoreError::Busy)
            } else {
                Ok(())
            }
        })
        .expect("the retry succeeds");
    assert_eq!(attempts, 2);
    let ids = store
        .transaction(|tx| {
            tx.query("SELECT id FROM items", &[])?
                .iter()
                .map(|r| r.get_text(0))
                .collect::<Result<Vec<_>, _>>()
        })
        .expect("ids");
    assert_eq!(ids, ["try2"]);
}

fn foreign_keys_are_enforced(env: &Env) {
    let store = env.open(&[Migration {
        version: 1,
        name: "parent child",
        sql: "CREATE TABLE parent (id TEXT PRIMARY KEY);
              CREATE TABLE child (id TEXT PRIMARY KEY, parent TEXT NOT NULL REFERENCES parent (id));",
        search: &[],
        ranks: &[],
        tallies: &[],
    }]);
    let result = store.transaction(|tx| {
        tx.execute(
            "INSERT INTO child (id, parent) VALUES ($1, $2)",
            &["c".into(), "nobody".into()],
        )
    });
    match result {
        Err(StoreError::Backend(m)) => {
            assert!(m.to_lowercase().contains("foreign key"), "{m}")
        }
        other => panic!("expected a foreign key error, got {other:?}"),
    }
}

fn renamed_migration_is_refused(env: &Env) {
    drop(env.open(&[LOG]));
    let renamed = Migration {
        name: "something else",
        ..LOG
    };
    match Store::open(&env.url, &env.service, &[renamed]) {
        Err(StoreError::Migration {
            version, message, ..
        }) => {
            assert_eq!(version, 1);
            assert!(message.contains("\"log\""), "{message}");
        }
        other => panic!("expected a migration error, got {other:?}"),
    }
}

fn failing_migration_leaves_nothing(env: &Env) {
    let broken = Migration {
        version: 2,
        name: "broken",
        sql: "CREATE TABLE half (id BIGINT); INSERT INTO no_such_table VALUES (1);",
        search: &[],
        ranks: &[],
        tallies: &[],
    };
    match Store::open(&env.url, &env.service, &[LOG, broken]) {
        Err(StoreError::Migration { version, name, .. }) => {
            assert_eq!((version, name.as_str()), (2, "broken"));
        }
        other => panic!("expected a migration error, got {other:?}"),
    }
    // Migration 1 stays applied; 2 left neither its table nor a record.
    let store = env.open(&[LOG]);
    assert_eq!(recorded(&store), [(1, "log".to_owned())]);
    let result = store.transaction(|tx| tx.query("SELECT id FROM half", &[]));
    assert!(matches!(result, Err(StoreError::Backend(_))), "{result:?}");
}

/// Several stores (connections) of one service writing at once: every transaction lands once.
fn concurrent_writers_lose_nothing(env: &Env) {
    const WRITERS: usize = 4;
    const EACH: usize = 25;
    let setup = env.open(&[Migration {
        version: 1,
        name: "counter",
        sql: "CREATE TABLE counter (id TEXT PRIMARY KEY, n BIGINT NOT NULL);
              INSERT INTO counter (id, n) VALUES ('c', 0);
              CREATE TABLE hits (writer BIGINT NOT NULL, k BIGINT NOT NULL);",
        search: &[],
        ranks: &[],
        tallies: &[],
    }]);
    let barrier = Barrier::new(WRITERS);
    std::thread::scope(|scope| {
        for writer in 0..WRITERS {
            let barrier = &barrier;
            scope.spawn(move || {
                let store = env.open(&[]);
                barrier.wait();
                for k in 0..EACH {
                    store
                        .transaction(|tx| {
                            tx.execute(
                                "UPDATE counter SET n = n + 1 WHERE id = $1",
                                &["c".into()],
                            )?;
                            tx.execute(
                                "INSERT INTO hits (writer, k) VALUES ($1, $2)",
                                &[(writer as i64).into(), (k as i64).into()],
                            )
                        })
                        .expect("a contended write commits");
                }
            });
        }
    });
    let (n, hits) = setup
        .transaction(|tx| {
            Ok((
                tx.query_one("SELECT n FROM counter WHERE id = 'c'", &[])?
                    .get_i64(0)?,
                count(tx, "SELECT count(*) FROM hits"),
            ))
        })
        .expect("read back");
    assert_eq!(n, (WRITERS * EACH) as i64);
    assert_eq!(hits, (WRITERS * EACH) as i64);
}

/// PostgreSQL only: a connection the server closed is reopened at the next transaction.
#[test]
fn postgres_reconnects_once_when_the_connection_is_closed() {
    let Some(env) = Env::postgres("reconnect") else {
        return;
    };
    let store = env.open(&[ITEMS]);
    let pid = store
        .transaction(|tx| {
            tx.query_one("SELECT pg_backend_pid()::bigint", &[])?
                .get_i64(0)
        })
        .expect("pid");
    let mut admin =
        ::postgres::Client::connect(env.pg_url.as_deref().expect("pg url"), ::postgres::NoTls)
            .expect("an admin connection");
    admin
        .execute("SELECT pg_terminate_backend($1::int)", &[&(pid as i32)])
        .expect("terminate the store's backend");
    // Give the server a moment to close it.
    std::thread::sleep(std::time::Duration::from_millis(200));
    store
        .transaction(|tx| insert_item(tx, "a", "after reconnect"))
        .expect("the store reconnects");
    assert_eq!(count_items(&store), 1);
    let new_pid = store
        .transaction(|tx| {
            tx.query_one("SELECT pg_backend_pid()::bigint", &[])?
                .get_i64(0)
        })
        .expect("pid");
    assert_ne!(new_pid, pid);
}

/// PostgreSQL only: types outside the portable set say how to read them.
#[test]
fn postgres_timestamps_and_unsupported_types() {
    let Some(env) = Env::postgres("types") else {
        return;
    };
    let store = env.open(&[]);
    let row = store
        .transaction(|tx| {
            tx.query_one(
                "SELECT $1::timestamptz AS at, '{\"a\": 1}'::jsonb AS doc",
                &["2026-01-02T03:04:05.5Z".into()],
            )
        })
        .expect("timestamptz and jsonb");
    assert_eq!(row.get_text("at").expect("at"), "2026-01-02T03:04:05.5Z");
    assert_eq!(row.get_text("doc").expect("doc"), "{\"a\": 1}");
    match store.transaction(|tx| tx.query("SELECT 1.5::numeric AS n", &[])) {
        Err(StoreError::Usage(m)) => assert!(m.contains("numeric") && m.contains("cast"), "{m}"),
        other => panic!("expected a Usage error, got {other:?}"),
    }
}

/// A store that cannot be reached is a clear error, without the password.
#[test]
fn unreachable_postgres_is_a_backend_error() {
    let url = StoreUrl::parse(
        "postgres://me:hunter2@127.0.0.1:1/db?connect_timeout=2",
        &std::env::temp_dir(),
    )
    .expect("valid URL");
    match Store::open(&url, "unreachable", &[]) {
        Err(StoreError::Backend(m)) => {
            assert!(m.contains("cannot connect"), "{m}");
            assert!(!m.contains("hunter2"), "{m}");
        }
        other => panic!("expected a backend error, got {other:?}"),
    }
}

#[test]
fn bad_urls_and_service_names_are_config_errors() {
    let err = StoreUrl::parse("mongodb://h/db", &std::env::temp_dir()).expect_err("bad URL");
    assert!(matches!(err, StoreError::Config(_)), "{err:?}");
    assert!(err.to_string().contains("\"mongodb://h/db\""), "{err}");
    let env = Env::sqlite("names");
    match Store::open(&env.url, "Bad-Name", &[]) {
        Err(StoreError::Config(m)) => assert!(m.contains("\"Bad-Name\""), "{m}"),
        other => panic!("expected a config error, got {other:?}"),
    }
}

// --- Full-text search -------------------------------------------------------------------------

const DOCS_INDEX: Index = Index {
    table: "docs",
    columns: &["title", "body"],
};

const DOCS: Migration = Migration {
    version: 1,
    name: "docs",
    sql: "CREATE TABLE docs (id TEXT PRIMARY KEY, title TEXT NOT NULL, body TEXT);",
    search: &[DOCS_INDEX],
    ranks: &[DOCS_INDEX],
    tallies: &[],
};

/// The test corpus: rows written before and after the index exists must both be found.
const CORPUS: [(&str, &str, Option<&str>); 7] = [
    (
        "d1",
        "Relay failover",
        Some("When the first relay dies the agent fails over to the next relay."),
    ),
    (
        "d2",
        "Relay configuration",
        Some("Relays are listed in order."),
    ),
    ("d3", "Notepad", Some("Short notes by scope and key.")),
    (
        "d4",
        "Failover drills",
        Some("Practise failover monthly; failover must be boring."),
    ),
    (
        "d5",
        "needle-word",
        Some("See ops@example.com and src/lib.rs for the needle-word."),
    ),
    ("d6", "Über café", None),
    (
        "d7",
        "Search quoting",
        Some("A \"quoted\" phrase, a * star and -minus NEAR(x y)."),
    ),
];

fn add_docs(store: &Store, docs: &[(&str, &str, Option<&str>)]) {
    store
        .transaction(|tx| {
            for (id, title, body) in docs {
                tx.execute(
                    "INSERT INTO docs (id, title, body) VALUES ($1, $2, $3)",
                    &[(*id).into(), (*title).into(), (*body).into()],
                )?;
            }
            Ok(())
        })
        .expect("docs written");
}

/// The ids of the rows matching `query`, best first (ties by id), the exact tier then the
/// forms tier.
fn search_ids(store: &Store, query: &str) -> Vec<String> {
    store
        .transaction(|tx| {
            let words = search::words(query);
            let kind = tx.kind();
            search::prefer_index(tx)?;
            search::tiered(0, 5, |tier, limit, offset| {
                let mut q = Query::new();
                let Some(m) = DOCS_INDEX.matching(kind, &mut q, &words, tier) else {
                    return Ok(Vec::new());
                };
                let sql = format!(
                    "SELECT docs.id, {} AS rank FROM docs{}{} ORDER BY rank DESC, docs.id \
                     LIMIT {limit} OFFSET {offset}",
                    m.rank,
                    m.join,
                    q.where_clause()
                );
                tx.query(&sql, q.params())?
                    .iter()
                    .map(|r| r.get_text("id"))
                    .collect::<Result<Vec<_>, _>>()
            })
        })
        .expect("a search never fails")
}

fn full_text_search_ranks_the_same_on_both_backends(env: &Env) {
    // Rows before the index: the migration indexes them; rows after: the index keeps up.
    let before = Migration {
        version: 1,
        name: "docs",
        sql: DOCS.sql,
        search: &[],
        ranks: &[],
        tallies: &[],
    };
    add_docs(&env.open(&[before]), &CORPUS[..3]);
    let with_index = Migration {
        version: 2,
        name: "docs search",
        sql: "",
        search: &[DOCS_INDEX],
        ranks: &[DOCS_INDEX],
        tallies: &[],
    };
    let store = env.open(&[before, with_index]);
    add_docs(&store, &CORPUS[3..]);
    let cases: [(&str, &[&str]); 15] = [
        ("relay", &["d1", "d2"]),
        // Word forms, both ways, and the last word as a prefix; as typed ranks first.
        ("relaying", &["d1", "d2"]),
        ("rel", &["d1", "d2"]),
        ("note", &["d3"]),
        ("relay fail", &["d1"]),
        ("drill", &["d4"]),
        ("failover", &["d4", "d1"]),
        ("RELAY failover", &["d1"]),
        ("needle word", &["d5"]),
        ("needle-word", &["d5"]),
        ("ops example com", &["d5"]),
        ("lib.rs", &["d5"]),
        ("ÜBER", &["d6"]),
        ("cafe", &[]),
        ("relays", &["d2", "d1"]),
    ];
    for (query, expected) in cases {
        assert_eq!(
            search_ids(&store, query),
            expected,
            "{:?}: {query:?}",
            env.kind()
        );
    }
    // A word past the part a rank reads (`search::RANK_HEAD`) still matches, in either tier,
    // and a match in a text's head ranks first on both backends.
    let far = format!(
        "{} zebrafish",
        "filler words here ".repeat(search::RANK_HEAD / 10)
    );
    let near = format!("zebrafish zebrafish {}", "filler words here ".repeat(20));
    add_docs(
        &store,
        &[
            ("far", "Long", Some(far.as_str())),
            ("near", "Short", Some(near.as_str())),
        ],
    );
    assert_eq!(
        search_ids(&store, "zebrafish"),
        ["near", "far"],
        "{:?}",
        env.kind()
    );
    assert_eq!(
        search_ids(&store, "zebrafishes"),
        ["far", "near"],
        "{:?}",
        env.kind()
    );
}

fn a_search_query_is_never_syntax(env: &Env) {
    let store = env.open(&[DOCS]);
    add_docs(&store, &CORPUS);
    // Searched as their words, whatever else they hold.
    let hostile: [(&str, &[&str]); 14] = [
        ("\"", &[]),
        ("\"quoted\"", &["d7"]),
        ("*", &[]),
        ("star*", &["d7"]),
        ("-minus", &["d7"]),
        ("NEAR(x y)", &["d7"]),
        ("x AND y", &["d7"]),
        ("x AND OR NOT y", &[]),
        ("'; DROP TABLE docs; --", &[]),
        ("a & b | !c", &[]),
        ("title:relay", &[]),
        ("^relay", &["d1", "d2"]),
        ("   ", &[]),
        ("\\", &[]),
    ];
    for (query, expected) in hostile {
        assert_eq!(
            search_ids(&store, query),
            expected,
            "{:?}: {query:?}",
            env.kind()
        );
    }
    // The table is still there.
    assert_eq!(search_ids(&store, "notepad"), ["d3"]);
}

fn the_search_index_follows_every_write(env: &Env) {
    let store = env.open(&[DOCS]);
    add_docs(&store, &CORPUS);
    store
        .transaction(|tx| {
            tx.execute(
                "UPDATE docs SET title = $1, body = NULL WHERE id = 'd3'",
                &["Scratchpad".into()],
            )?;
            tx.execute("DELETE FROM docs WHERE id = 'd4'", &[])
        })
        .expect("written");
    assert_eq!(search_ids(&store, "notepad"), Vec::<String>::new());
    assert_eq!(search_ids(&store, "scratchpad"), ["d3"]);
    assert_eq!(search_ids(&store, "failover"), ["d1"]);
    assert_eq!(
        search::snippet(
            "Relay failover in one place",
            &search::words("FAILOVER"),
            12
        ),
        "…failover in…"
    );
}

const TASKS_TALLY: Tally = Tally {
    table: "task",
    into: "task_tally",
    by: &["team", "state", "owner"],
    sum: &["hours"],
    when: "{row}.team IS NOT NULL",
};

const TASKS: Migration = Migration {
    version: 1,
    name: "tasks",
    sql:
        "CREATE TABLE person (id TEXT PRIMARY KEY);
          CREATE TABLE task (id TEXT PRIMARY KEY, team TEXT, state TEXT NOT NULL,
              owner TEXT REFERENCES person (id) ON DELETE SET NULL, hours DOUBLE PRECISION,
              parent TEXT REFERENCES task (id) ON DELETE CASCADE);
          INSERT INTO person (id) VALUES ('ada'), ('bob');
          INSERT INTO task (id, team, state, owner, hours) VALUES ('t0', 'core', 'open', 'ada', 1);",
    search: &[],
    ranks: &[],
    tallies: &[TASKS_TALLY],
};

/// The tally and a fresh `GROUP BY` of the rows it counts, both sorted.
fn tally_and_fresh(store: &Store) -> (Vec<String>, Vec<String>) {
    let rows = |sql: &str| -> Vec<String> {
        store
            .transaction(|tx| {
                tx.query(sql, &[])?
                    .iter()
                    .map(|r| {
                        Ok(format!(
                            "{}/{}/{} n={} h={}",
                            r.get_text("team")?,
                            r.get_text("state")?,
                            r.get_text("owner")?,
                            r.get_i64("n")?,
                            r.get_f64("hours")?
                        ))
                    })
                    .collect()
            })
            .expect(sql)
    };
    (
        rows("SELECT team, state, owner, n, hours FROM task_tally ORDER BY team, state, owner"),
        rows(
            "SELECT team, state, COALESCE(owner, '') AS owner, COUNT(*) AS n, \
             COALESCE(SUM(hours), 0) AS hours FROM task WHERE team IS NOT NULL \
             GROUP BY team, state, COALESCE(owner, '') ORDER BY team, state, owner",
        ),
    )
}

/// Inserts, updates of a counted column and of a sum, rows leaving and entering `when`, a
/// foreign key's `SET NULL`, a cascade and a rolled-back write: after each, the tally is what
/// a fresh count gives, with no row left at zero. Rows already there when the migration ran
/// are counted.
fn a_tally_follows_every_write(env: &Env) {
    let store = env.open(&[TASKS]);
    let (tally, fresh) = tally_and_fresh(&store);
    assert_eq!(
        (tally.len(), tally.clone()),
        (1, fresh),
        "counted on migrating"
    );
    let steps: &[&str] = &[
        "INSERT INTO task (id, team, state, owner, hours) VALUES \
         ('t1', 'core', 'open', NULL, 2), ('t2', 'core', 'open', 'bob', NULL), \
         ('t3', 'web', 'done', 'ada', 0.5), ('t4', NULL, 'open', 'ada', 8)",
        "INSERT INTO task (id, team, state, parent) VALUES ('c1', 'core', 'open', 't1'), \
         ('c2', 'core', 'done', 't1')",
        "UPDATE task SET state = 'done' WHERE id = 't1'",
        "UPDATE task SET hours = 3.25 WHERE id = 't2'",
        "UPDATE task SET team = NULL WHERE id = 't3'",
        "UPDATE task SET team = 'web' WHERE id = 't4'",
        "DELETE FROM person WHERE id = 'ada'",
        "DELETE FROM task WHERE id = 't1'",
        "UPDATE task SET state = 'open', owner = 'bob' WHERE team IS NOT NULL",
        "DELETE FROM task",
    ];
    for step in steps {
        store
            .transaction(|tx| tx.execute(step, &[]))
            .unwrap_or_else(|e| panic!("{step}: {e}"));
        let (tally, fresh) = tally_and_fresh(&store);
        assert_eq!(tally, fresh, "after {step} on {:?}", env.kind());
    }
    assert_eq!(tally_and_fresh(&store).0, Vec::<String>::new());
    store
        .transaction(|tx| {
            tx.execute(
                "INSERT INTO task (id, team, state) VALUES ('r1', 'core', 'open')",
                &[],
            )?;
            Err::<(), _>(StoreError::Usage("roll back".into()))
        })
        .expect_err("rolled back");
    assert_eq!(tally_and_fresh(&store).0, Vec::<String>::new());
}
