//! The embedded SQLite backend.
//!
//! Invariants:
//! - SQLite is the system's shared library, so one copy serves every store plugin of a process;
//!   a library older than [`MIN_VERSION`] (no JSON functions or `RETURNING`) is refused at open
//!   with its version named, before any file is touched.
//! - One file per service, `<dir>/<service>.sqlite3` (the directory is created), in WAL mode,
//!   with `busy_timeout` 5 s and `foreign_keys` on for the connection.
//! - Every write transaction starts with `BEGIN IMMEDIATE`, so it holds the write lock from the
//!   start and a lock conflict shows at `BEGIN` (as `Busy`), not half-way through. A read
//!   transaction starts with a deferred `BEGIN`: WAL readers take no write lock.
//! - Each migration runs in its own `BEGIN IMMEDIATE` transaction and first re-checks
//!   `schema_migrations`, so concurrent openers apply it exactly once.
//! - Migrations are written for PostgreSQL; `TIMESTAMPTZ`, `JSONB` and `BYTEA` are stored as
//!   `TEXT`, `TEXT` and `BLOB` (see `sql::ddl_to_sqlite`).
//! - SQLITE_BUSY and SQLITE_LOCKED become `StoreError::Busy`; other errors `Backend("SQLite: …")`.
//! - The connection is never left inside a transaction when a call returns or unwinds.
//! - A statement's SQLite text and column names are worked out once per SQL text (at most
//!   [`TEXTS_KEPT`] texts; the set is cleared past that), and SQLite keeps it prepared, so a
//!   repeated query costs no translation, parse or column-name copy.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rusqlite::types::{ToSqlOutput, Value, ValueRef};
use rusqlite::{Connection, ErrorCode, ToSql};

use crate::{run_in_tx, Access, Migration, Param, Row, StoreError, Tx, TxInner};

pub(crate) struct Conn {
    conn: Connection,
    texts: RefCell<HashMap<Box<str>, Arc<Text>>>,
}

/// What a SQL text becomes for SQLite.
struct Text {
    sqlite: Box<str>,
    /// Its result columns, once a query has run.
    columns: std::sync::OnceLock<Arc<[String]>>,
}

/// How many SQL texts a connection remembers (they are the plugins' own statements, so the
/// bound is only against a caller that builds text per call).
const TEXTS_KEPT: usize = 512;
/// How many prepared statements SQLite keeps (rusqlite's default is 16, fewer than the
/// statements of one busy plugin).
const PREPARED_KEPT: usize = 128;

const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The oldest SQLite the stores run on: 3.38 made the JSON functions built in (`json_each`);
/// `RETURNING` came in 3.35. (Full-text search needs FTS5, which a migration reports if absent.)
pub(crate) const MIN_VERSION: (i32, &str) = (3_038_000, "3.38.0");

/// Refuses a SQLite library older than [`MIN_VERSION`], naming both versions.
fn check_version(number: i32, text: &str) -> Result<(), StoreError> {
    if number >= MIN_VERSION.0 {
        return Ok(());
    }
    Err(StoreError::Config(format!(
        "the system SQLite is {text}; the stores need {} or newer (upgrade libsqlite3)",
        MIN_VERSION.1
    )))
}

impl Conn {
    pub(crate) fn open(
        dir: &Path,
        service: &str,
        migrations: &[Migration],
    ) -> Result<Self, StoreError> {
        check_version(rusqlite::version_number(), rusqlite::version())?;
        std::fs::create_dir_all(dir).map_err(|e| {
            StoreError::Config(format!(
                "cannot create the store directory {}: {e}",
                dir.display()
            ))
        })?;
        let path = dir.join(format!("{service}.sqlite3"));
        let conn = Connection::open(&path).map_err(|e| {
            StoreError::Backend(format!("SQLite: cannot open {}: {e}", path.display()))
        })?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(error)?;
        conn.set_prepared_statement_cache_capacity(PREPARED_KEPT);
        conn.execute_batch("PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL;")
            .map_err(error)?;
        let mut this = Self {
            conn,
            texts: RefCell::default(),
        };
        // While a new file is switched to WAL, SQLite answers some lock requests with BUSY at
        // once instead of waiting; every step here is idempotent, so it is simply retried.
        let mut attempt = 1;
        loop {
            match this.set_up(&path, migrations) {
                Err(StoreError::Busy) if attempt < crate::BUSY_ATTEMPTS => {
                    std::thread::sleep(crate::backoff(attempt));
                    attempt += 1;
                }
                Err(e) => return Err(e),
                Ok(()) => return Ok(this),
            }
        }
    }

    fn set_up(&mut self, path: &Path, migrations: &[Migration]) -> Result<(), StoreError> {
        let mode: String = self
            .conn
            .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
            .map_err(error)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::Backend(format!(
                "SQLite: {} could not be switched to WAL (journal mode is {mode})",
                path.display()
            )));
        }
        self.migrate(migrations)
    }

    fn migrate(&mut self, migrations: &[Migration]) -> Result<(), StoreError> {
        self.locked(|c| {
            c.execute_batch(
                "CREATE TABLE IF NOT EXISTS schema_migrations (
                     version INTEGER PRIMARY KEY,
                     name TEXT NOT NULL,
                     applied_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
                 )",
            )
            .map_err(error)
        })?;
        for m in migrations {
            self.locked(|c| {
                let recorded: Option<String> = match c.query_row(
                    "SELECT name FROM schema_migrations WHERE version = ?1",
                    [i64::from(m.version)],
                    |r| r.get(0),
                ) {
                    Ok(name) => Some(name),
                    Err(rusqlite::Error::QueryReturnedNoRows) => None,
                    Err(e) => return Err(error(e)),
                };
                if let Some(name) = recorded {
                    return if name == m.name {
                        Ok(())
                    } else {
                        Err(crate::renamed(m, &name))
                    };
                }
                let search = m
                    .search
                    .iter()
                    .map(|index| index.ddl(crate::BackendKind::Sqlite))
                    .chain(
                        m.ranks
                            .iter()
                            .map(|index| index.rank_ddl(crate::BackendKind::Sqlite)),
                    )
                    .chain(
                        m.tallies
                            .iter()
                            .map(|tally| tally.ddl(crate::BackendKind::Sqlite)),
                    );
                let ddl = std::iter::once(crate::sql::ddl_to_sqlite(m.sql)).chain(search);
                c.execute_batch(&ddl.collect::<Vec<_>>().join(";\n"))
                    .map_err(|e| StoreError::Migration {
                        version: m.version,
                        name: m.name.to_owned(),
                        message: format!("SQLite: {e}"),
                    })?;
                c.execute(
                    "INSERT INTO schema_migrations (version, name) VALUES (?1, ?2)",
                    rusqlite::params![i64::from(m.version), m.name],
                )
                .map_err(error)?;
                Ok(())
            })?;
        }
        Ok(())
    }

    /// `BEGIN IMMEDIATE` … `COMMIT` around `body`, rolled back on error or panic.
    fn locked<T>(
        &self,
        body: impl FnOnce(&Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.within(Access::Write, body)
    }

    /// `BEGIN` (deferred for [`Access::Read`], `IMMEDIATE` otherwise) … `COMMIT` around `body`,
    /// rolled back on error or panic.
    fn within<T>(
        &self,
        access: Access,
        body: impl FnOnce(&Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let conn = &self.conn;
        // Prepared once and kept: BEGIN and COMMIT are on every call's path.
        let run = |sql: &str| {
            conn.prepare_cached(sql)
                .and_then(|mut s| s.execute([]))
                .map_err(error)
        };
        run(match access {
            Access::Read => "BEGIN",
            Access::Write => "BEGIN IMMEDIATE",
        })?;
        run_in_tx(
            || body(conn),
            || run("COMMIT").map(drop),
            || {
                if !conn.is_autocommit() {
                    // Failing to roll back leaves the transaction open; the next BEGIN then
                    // reports it.
                    let _ = conn.execute_batch("ROLLBACK");
                }
            },
        )
    }

    pub(crate) fn transaction<T>(
        &mut self,
        access: Access,
        f: &mut impl FnMut(&mut Tx<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let texts = &self.texts;
        self.within(access, |conn| {
            let mut tx = Tx {
                inner: TxInner::Sqlite(Statements { conn, texts }),
            };
            f(&mut tx)
        })
    }
}

/// A connection inside a transaction, with what its SQL texts become.
pub(crate) struct Statements<'a> {
    conn: &'a Connection,
    texts: &'a RefCell<HashMap<Box<str>, Arc<Text>>>,
}

impl Statements<'_> {
    fn text(&self, sql: &str) -> Arc<Text> {
        if let Some(text) = self.texts.borrow().get(sql) {
            return Arc::clone(text);
        }
        let text = Arc::new(Text {
            sqlite: crate::sql::to_sqlite(sql).into(),
            columns: std::sync::OnceLock::new(),
        });
        let mut texts = self.texts.borrow_mut();
        if texts.len() >= TEXTS_KEPT {
            texts.clear();
        }
        texts.insert(sql.into(), Arc::clone(&text));
        text
    }
}

fn error(e: rusqlite::Error) -> StoreError {
    if let rusqlite::Error::SqliteFailure(failure, _) = &e {
        if matches!(
            failure.code,
            ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked
        ) {
            return StoreError::Busy;
        }
    }
    StoreError::Backend(format!("SQLite: {e}"))
}

impl ToSql for Param {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            Param::Null => ToSqlOutput::Owned(Value::Null),
            Param::Int(v) => ToSqlOutput::Owned(Value::Integer(*v)),
            Param::Real(v) => ToSqlOutput::Owned(Value::Real(*v)),
            Param::Text(v) => ToSqlOutput::Borrowed(ValueRef::Text(v.as_bytes())),
            Param::Bool(v) => ToSqlOutput::Owned(Value::Integer(i64::from(*v))),
        })
    }
}

pub(crate) fn execute(on: &Statements<'_>, sql: &str, params: &[Param]) -> Result<u64, StoreError> {
    let text = on.text(sql);
    let mut stmt = on.conn.prepare_cached(&text.sqlite).map_err(error)?;
    let n = stmt
        .execute(rusqlite::params_from_iter(params))
        .map_err(error)?;
    Ok(n as u64)
}

pub(crate) fn query(
    on: &Statements<'_>,
    sql: &str,
    params: &[Param],
) -> Result<Vec<Row>, StoreError> {
    let text = on.text(sql);
    let mut stmt = on.conn.prepare_cached(&text.sqlite).map_err(error)?;
    let columns = text
        .columns
        .get_or_init(|| stmt.column_names().into_iter().map(str::to_owned).collect())
        .clone();
    let width = columns.len();
    let mut rows = stmt
        .query(rusqlite::params_from_iter(params))
        .map_err(error)?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().map_err(error)? {
        let mut values = Vec::with_capacity(width);
        for (i, name) in columns.iter().enumerate() {
            values.push(match row.get_ref(i).map_err(error)? {
                ValueRef::Null => Param::Null,
                ValueRef::Integer(v) => Param::Int(v),
                ValueRef::Real(v) => Param::Real(v),
                ValueRef::Text(bytes) => {
                    Param::Text(String::from_utf8(bytes.to_vec()).map_err(|_| {
                        StoreError::Usage(format!("column {i} (\"{name}\") is not valid UTF-8"))
                    })?)
                }
                ValueRef::Blob(_) => {
                    return Err(StoreError::Usage(format!(
                        "column {i} (\"{name}\") is a BLOB, which the store does not read: \
                         store text (hex or base64) instead"
                    )))
                }
            });
        }
        out.push(Row::new(columns.clone(), values));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sqlite_older_than_the_minimum_is_refused_naming_both_versions() {
        let err = check_version(3_037_002, "3.37.2").expect_err("3.37.2 is too old");
        assert!(matches!(err, StoreError::Config(_)), "{err:?}");
        let text = err.to_string();
        assert!(text.contains("3.37.2") && text.contains("3.38.0"), "{text}");
        check_version(MIN_VERSION.0, MIN_VERSION.1).expect("the minimum itself is accepted");
    }

    #[test]
    fn the_linked_sqlite_is_new_enough_and_has_full_text_search() {
        check_version(rusqlite::version_number(), rusqlite::version()).expect("new enough");
        let conn = Connection::open_in_memory().expect("an in-memory database");
        conn.execute_batch("CREATE VIRTUAL TABLE t USING fts5(body)")
            .expect("FTS5 is built in");
    }
}
