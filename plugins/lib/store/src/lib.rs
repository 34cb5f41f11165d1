//! The store layer shared by the store-backed plugins (Registry, Notepad, Session, Seele,
//! Scrolls): embedded SQLite by default, or a shared PostgreSQL.
//!
//! ```text
//! let url = StoreUrl::parse(&configured, &data_dir)?;
//! let store = Store::open(&url, "notepad", MIGRATIONS)?;
//! let n = store.transaction(|tx| {
//!     tx.execute("INSERT INTO notes (id, body, version) VALUES ($1, $2, 1)", &[id.into(), body.into()])
//! })?;
//! ```
//!
//! Invariants:
//! - One `Store` = one service = one SQLite file (`<dir>/<service>.sqlite3`, WAL, `busy_timeout`
//!   5 s, foreign keys on) or one PostgreSQL schema named after the service (`search_path` set
//!   on the connection). Service names are `[a-z_][a-z0-9_]*`, at most 63 bytes.
//! - Migrations are applied in version order, each in its own transaction under a lock
//!   (PostgreSQL `pg_advisory_xact_lock` keyed on the service, SQLite `BEGIN IMMEDIATE`) and
//!   re-checked inside it, so processes that start at once apply each exactly once. Each is
//!   recorded in `schema_migrations(version, name, applied_at)`. Migration SQL must not contain
//!   transaction control.
//! - SQL is written once with `$1…$n`; it is translated for SQLite (see `sql.rs`). Write the
//!   portable subset listed in `sql.rs`; declare booleans `BOOLEAN` (SQLite stores 0/1). The
//!   one exception, full-text search, is [`search`]: a migration declares its indexes and each
//!   backend gets its own DDL and query.
//! - `transaction` commits only when the closure returns `Ok`; an `Err` or a panic rolls back.
//!   A [`Store::read`] transaction takes no write lock (SQLite's deferred `BEGIN`: half the file
//!   locks of `BEGIN IMMEDIATE`) and cannot write on PostgreSQL (`BEGIN READ ONLY`).
//!   `StoreError::Busy` (SQLITE_BUSY/LOCKED, SQLSTATE 40001/40P01) reruns the whole closure, at
//!   most [`BUSY_ATTEMPTS`] times in all, so closures must be safe to rerun (no side effects
//!   outside the transaction). On PostgreSQL a failed statement aborts the transaction: return
//!   the error rather than continuing.
//! - One connection per `Store`, behind a mutex; a panicking closure does not leave it in a
//!   transaction. A closed PostgreSQL connection is reopened once, at the start of a transaction.
//!
//! # Optimistic concurrency
//!
//! Every mutable row has `version BIGINT NOT NULL`. An update that the caller bases on a version
//! it has read (`expected_version` in the tools) is written as
//!
//! ```text
//! let n = tx.execute(
//!     "UPDATE notes SET body = $2, version = version + 1 WHERE id = $1 AND version = $3",
//!     &[id.into(), body.into(), expected.into()],
//! )?;
//! if n == 0 {
//!     // Either the row is gone or someone else moved it on: re-read to tell which.
//!     match tx.query_opt("SELECT version FROM notes WHERE id = $1", &[id.into()])? {
//!         None => return Err(StoreError::NotFound(format!("note {id}"))),
//!         Some(row) => check_version(row.get_i64(0)?, Some(expected))?,
//!     }
//! }
//! ```
//!
//! and [`check_version`] gives `StoreError::Conflict { current }` for the caller to report.

pub mod pg_wire;
#[cfg(feature = "plugin")]
pub mod plugin;
mod postgres;
pub mod query;
#[cfg(feature = "plugin")]
pub mod records;
mod row;
pub mod search;
mod sql;
mod sqlite;
pub mod tally;
#[cfg(feature = "testing")]
pub mod testing;
mod url;
#[cfg(feature = "plugin")]
pub mod walk;

use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

pub use row::{ColumnIndex, Param, Row};
pub use url::StoreUrl;

/// How many times in all `Store::transaction` runs a closure that keeps meeting `Busy`.
pub const BUSY_ATTEMPTS: u32 = 5;

/// Everything that can go wrong in the store layer.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The row was changed by someone else: it is now at `current`.
    #[error("version conflict: the row is now at version {current}")]
    Conflict { current: i64 },
    /// A row (or anything else the caller names) does not exist.
    #[error("not found: {0}")]
    NotFound(String),
    /// The database stayed locked, or kept failing serialization, after `BUSY_ATTEMPTS` tries.
    #[error("the store is busy (locked, serialization failure or deadlock); try again")]
    Busy,
    /// A migration failed; nothing of it was applied.
    #[error("migration {version} ({name}) failed: {message}")]
    Migration {
        version: u32,
        name: String,
        message: String,
    },
    /// The backend's own error (`PostgreSQL <SQLSTATE>: …` or `SQLite: …`).
    #[error("{0}")]
    Backend(String),
    /// A bad store URL, service name or migration list.
    #[error("store configuration: {0}")]
    Config(String),
    /// The caller asked a result for something it does not have: a column of another type or
    /// NULL, an unknown column, one row where there were several.
    #[error("{0}")]
    Usage(String),
}

/// Which database a store runs on (for the few dialect differences, such as full-text search).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendKind {
    Sqlite,
    Postgres,
}

/// One versioned schema change of a service.
#[derive(Debug, Clone, Copy)]
pub struct Migration {
    /// Strictly increasing within a service; never reused.
    pub version: u32,
    /// Recorded with the version; reopening with another name for a version is an error.
    pub name: &'static str,
    /// One or more statements, without transaction control.
    pub sql: &'static str,
    /// Full-text indexes this migration creates after `sql`, each in its backend's own DDL.
    pub search: &'static [search::Index],
    /// Full-text indexes whose rank column (PostgreSQL's `rank_tsv`, see
    /// [`search::Index::rank_ddl`]) this migration adds after `search`; every index a search
    /// runs on needs one before it is searched on PostgreSQL.
    pub ranks: &'static [search::Index],
    /// Tallies this migration creates after `sql` and `search`, kept by triggers.
    pub tallies: &'static [tally::Tally],
}

/// Optimistic concurrency: `expected` (if the caller gave one) must equal `current`.
pub fn check_version(current: i64, expected: Option<i64>) -> Result<(), StoreError> {
    match expected {
        Some(expected) if expected != current => Err(StoreError::Conflict { current }),
        _ => Ok(()),
    }
}

/// An open store of one service.
pub struct Store {
    service: String,
    kind: BackendKind,
    conn: Mutex<Conn>,
}

enum Conn {
    Sqlite(sqlite::Conn),
    Postgres(Box<postgres::Conn>),
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("service", &self.service)
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

impl Store {
    /// Opens (creating if needed) the store of `service` and applies the migrations it lacks.
    pub fn open(
        url: &StoreUrl,
        service: &str,
        migrations: &[Migration],
    ) -> Result<Store, StoreError> {
        check_service(service)?;
        check_migrations(migrations)?;
        let conn = match url {
            StoreUrl::Sqlite { dir } => Conn::Sqlite(sqlite::Conn::open(dir, service, migrations)?),
            StoreUrl::Postgres { url } => {
                Conn::Postgres(Box::new(postgres::Conn::open(url, service, migrations)?))
            }
        };
        Ok(Store {
            service: service.to_owned(),
            kind: url.kind(),
            conn: Mutex::new(conn),
        })
    }

    /// The service this store belongs to.
    pub fn service(&self) -> &str {
        &self.service
    }

    /// The backend in use.
    pub fn kind(&self) -> BackendKind {
        self.kind
    }

    /// Runs `f` in a transaction: commit on `Ok`, roll back on `Err` or panic (the panic then
    /// continues). On `StoreError::Busy` the whole closure runs again, at most `BUSY_ATTEMPTS`
    /// times in all.
    pub fn transaction<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        F: FnMut(&mut Tx<'_>) -> Result<T, StoreError>,
    {
        self.run(Access::Write, f)
    }

    /// Runs `f` in a transaction that only reads, as [`Store::transaction`] runs one that may
    /// write. On PostgreSQL a write inside it fails; on SQLite it would take the write lock
    /// mid-way, so a closure that writes must use [`Store::transaction`].
    pub fn read<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        F: FnMut(&mut Tx<'_>) -> Result<T, StoreError>,
    {
        self.run(Access::Read, f)
    }

    /// Runs `f` in a transaction of `access`.
    pub fn run<T, F>(&self, access: Access, mut f: F) -> Result<T, StoreError>
    where
        F: FnMut(&mut Tx<'_>) -> Result<T, StoreError>,
    {
        // A panic in an earlier closure poisons the mutex after the transaction was rolled
        // back, so the connection itself is in a clean state.
        let mut conn = self.conn.lock().unwrap_or_else(PoisonError::into_inner);
        let mut attempt = 1;
        loop {
            let outcome = match &mut *conn {
                Conn::Sqlite(c) => c.transaction(access, &mut f),
                Conn::Postgres(c) => c.transaction(access, &mut f),
            };
            match outcome {
                Err(StoreError::Busy) if attempt < BUSY_ATTEMPTS => {
                    std::thread::sleep(backoff(attempt));
                    attempt += 1;
                }
                other => return other,
            }
        }
    }
}

/// What a transaction may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Reads only.
    Read,
    /// Reads and writes; holds the write lock from the start on SQLite.
    Write,
}

/// 10 ms, 20 ms, 40 ms, … plus up to 10 ms of jitter so that rivals do not retry in step.
pub(crate) fn backoff(attempt: u32) -> Duration {
    let jitter = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos() % 10_000_000);
    Duration::from_millis(10 << attempt.min(6)) + Duration::from_nanos(u64::from(jitter))
}

/// Runs the closure; rolls back (through `rollback`) on `Err` or panic and commits on `Ok`.
pub(crate) fn run_in_tx<T>(
    body: impl FnOnce() -> Result<T, StoreError>,
    commit: impl FnOnce() -> Result<(), StoreError>,
    rollback: impl FnOnce(),
) -> Result<T, StoreError> {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(value)) => match commit() {
            Ok(()) => Ok(value),
            Err(e) => {
                rollback();
                Err(e)
            }
        },
        Ok(Err(e)) => {
            rollback();
            Err(e)
        }
        Err(panic) => {
            rollback();
            resume_unwind(panic)
        }
    }
}

/// An open transaction, handed to the closure of `Store::transaction`.
pub struct Tx<'a> {
    inner: TxInner<'a>,
}

enum TxInner<'a> {
    Sqlite(sqlite::Statements<'a>),
    Postgres(&'a mut postgres::Session),
}

impl std::fmt::Debug for Tx<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tx").field("kind", &self.kind()).finish()
    }
}

impl<'a> Tx<'a> {
    /// The backend in use.
    pub fn kind(&self) -> BackendKind {
        match self.inner {
            TxInner::Sqlite(_) => BackendKind::Sqlite,
            TxInner::Postgres(_) => BackendKind::Postgres,
        }
    }

    /// Runs one statement that returns no rows; the number of rows it changed.
    pub fn execute(&mut self, sql: &str, params: &[Param]) -> Result<u64, StoreError> {
        match &mut self.inner {
            TxInner::Sqlite(c) => sqlite::execute(c, sql, params),
            TxInner::Postgres(c) => postgres::execute(c, sql, params),
        }
    }

    /// Runs one query (or statement with `RETURNING`); all its rows.
    pub fn query(&mut self, sql: &str, params: &[Param]) -> Result<Vec<Row>, StoreError> {
        match &mut self.inner {
            TxInner::Sqlite(c) => sqlite::query(c, sql, params),
            TxInner::Postgres(c) => postgres::query(c, sql, params),
        }
    }

    /// Exactly one row: none is `NotFound`, several is a `Usage` error.
    pub fn query_one(&mut self, sql: &str, params: &[Param]) -> Result<Row, StoreError> {
        self.query_opt(sql, params)?
            .ok_or_else(|| StoreError::NotFound("the query returned no row".into()))
    }

    /// At most one row: several is a `Usage` error.
    pub fn query_opt(&mut self, sql: &str, params: &[Param]) -> Result<Option<Row>, StoreError> {
        let mut rows = self.query(sql, params)?;
        if rows.len() > 1 {
            return Err(StoreError::Usage(format!(
                "expected at most one row, the query returned {}",
                rows.len()
            )));
        }
        Ok(rows.pop())
    }
}

fn check_service(service: &str) -> Result<(), StoreError> {
    let mut chars = service.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_');
    if first_ok
        && service.len() <= 63
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
    {
        Ok(())
    } else {
        Err(StoreError::Config(format!(
            "service name \"{service}\" is not valid: use [a-z_][a-z0-9_]*, at most 63 characters"
        )))
    }
}

fn check_migrations(migrations: &[Migration]) -> Result<(), StoreError> {
    for pair in migrations.windows(2) {
        if pair[1].version <= pair[0].version {
            return Err(StoreError::Config(format!(
                "migrations must be in strictly increasing version order: {} ({}) comes after {} ({})",
                pair[1].version, pair[1].name, pair[0].version, pair[0].name
            )));
        }
    }
    Ok(())
}

/// The error for a version already recorded under another name.
pub(crate) fn renamed(m: &Migration, recorded: &str) -> StoreError {
    StoreError::Migration {
        version: m.version,
        name: m.name.to_owned(),
        message: format!(
            "version {} is already applied as \"{recorded}\"; a version is never reused",
            m.version
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_version_gives_the_current_version() {
        assert!(check_version(3, None).is_ok());
        assert!(check_version(3, Some(3)).is_ok());
        match check_version(4, Some(3)) {
            Err(StoreError::Conflict { current }) => assert_eq!(current, 4),
            other => panic!("expected a conflict, got {other:?}"),
        }
    }

    #[test]
    fn service_names() {
        for ok in ["registry", "nervhq", "_t1", "a_b_2"] {
            assert!(check_service(ok).is_ok(), "{ok}");
        }
        for bad in ["", "Registry", "1abc", "a-b", "a;drop", &"x".repeat(64)] {
            let err = check_service(bad).expect_err(bad);
            assert!(matches!(err, StoreError::Config(_)), "{err:?}");
        }
    }

    #[test]
    fn migrations_must_increase() {
        let m = |version, name| Migration {
            version,
            name,
            sql: "",
            search: &[],
            ranks: &[],
            tallies: &[],
        };
        assert!(check_migrations(&[m(1, "a"), m(2, "b")]).is_ok());
        let err = check_migrations(&[m(2, "b"), m(1, "a")]).expect_err("decreasing");
        assert!(err.to_string().contains("1 (a) comes after 2 (b)"), "{err}");
        assert!(check_migrations(&[m(1, "a"), m(1, "b")]).is_err());
    }

    #[test]
    fn backoff_grows() {
        assert!(backoff(1) >= Duration::from_millis(20));
        assert!(backoff(3) >= Duration::from_millis(80));
        assert!(backoff(40) < Duration::from_secs(1));
    }
}
