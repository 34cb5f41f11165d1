//! The shared PostgreSQL backend.
//!
//! Invariants:
//! - One schema per service, named after it (`CREATE SCHEMA IF NOT EXISTS`, under the advisory
//!   lock); `search_path` is set to it on every connection, so SQL names tables unqualified.
//! - Schema creation and every migration run in their own transaction holding
//!   `pg_advisory_xact_lock(<key of the service>)` and re-check `schema_migrations` inside it,
//!   so processes that start at once apply each migration exactly once.
//! - Parameters are sent in text format and PostgreSQL parses them as the type it infers for
//!   each `$n` (so RFC 3339 text fills a `timestamptz`, 0/1 or true/false a `boolean`).
//! - Results are decoded to `Param`: booleans, integers, floats, text-like types, JSON (as text),
//!   UUID (as text) and timestamps (RFC 3339, `Z` for `timestamptz`); any other column type is a
//!   `Usage` error that says to cast it in SQL.
//! - SQLSTATE 40001 and 40P01 become `StoreError::Busy`; other errors
//!   `Backend("PostgreSQL <SQLSTATE>: …")`. Connection URLs never appear in errors.
//! - A closed connection is reopened once, at the start of a transaction.
//! - Each statement is prepared once per connection and cached (a reconnect starts a new
//!   cache); a cached plan made stale by another process's migration is dropped and the
//!   transaction rerun.

use std::collections::HashMap;
use std::error::Error as StdError;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use ::postgres::error::SqlState;
use ::postgres::types::{FromSql, ToSql, Type};
use ::postgres::{Client, NoTls, Statement};

use crate::pg_wire::{describe_db_error, error_chain, fixed, timestamp, uuid, TextParam};
use crate::{run_in_tx, Access, Migration, Param, Row, StoreError, Tx, TxInner};

const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

pub(crate) struct Conn {
    config: ::postgres::Config,
    schema: String,
    session: Session,
}

/// Statements prepared on this connection, at most this many (then the cache starts over).
const MAX_STATEMENTS: usize = 256;

/// A connection and the statements prepared on it: a statement is parsed once per connection,
/// so a query costs one round trip instead of two.
pub(crate) struct Session {
    client: Client,
    statements: HashMap<String, Statement>,
}

impl Session {
    fn new(client: Client) -> Self {
        Self {
            client,
            statements: HashMap::new(),
        }
    }

    /// The prepared statement for `sql`, preparing it on first use.
    fn statement(&mut self, sql: &str) -> Result<Statement, StoreError> {
        if let Some(stmt) = self.statements.get(sql) {
            return Ok(stmt.clone());
        }
        let stmt = self.client.prepare(sql).map_err(error)?;
        if self.statements.len() >= MAX_STATEMENTS {
            self.statements.clear();
        }
        self.statements.insert(sql.to_owned(), stmt.clone());
        Ok(stmt)
    }

    /// A failed statement: a cached plan that no longer fits the table (another process
    /// migrated it) is dropped and the transaction retried (`Busy`).
    fn failed(&mut self, sql: &str, e: ::postgres::Error) -> StoreError {
        let stale = e.as_db_error().is_some_and(|db| {
            *db.code() == SqlState::FEATURE_NOT_SUPPORTED && db.message().contains("cached plan")
        });
        if stale {
            self.statements.remove(sql);
            return StoreError::Busy;
        }
        error(e)
    }
}

impl Conn {
    pub(crate) fn open(
        url: &str,
        service: &str,
        migrations: &[Migration],
    ) -> Result<Self, StoreError> {
        let mut config = ::postgres::Config::from_str(url).map_err(|e| {
            StoreError::Config(format!(
                "store URL \"{}\" is not a valid PostgreSQL URL: {e}",
                crate::url::redact(url)
            ))
        })?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        // The service name is checked to be [a-z_][a-z0-9_]*, so quoting it is enough.
        let schema = format!("\"{service}\"");
        let mut client = connect(&config)?;
        migrate(&mut client, service, &schema, migrations)?;
        Ok(Self {
            config,
            schema,
            session: Session::new(client),
        })
    }

    fn reconnect(&mut self) -> Result<(), StoreError> {
        let mut client = connect(&self.config)?;
        set_search_path(&mut client, &self.schema)?;
        self.session = Session::new(client);
        Ok(())
    }

    fn begin(&mut self, access: Access) -> Result<(), StoreError> {
        let begin = match access {
            Access::Read => "BEGIN READ ONLY",
            Access::Write => "BEGIN",
        };
        if self.session.client.is_closed() {
            self.reconnect()?;
            return self.session.client.batch_execute(begin).map_err(error);
        }
        match self.session.client.batch_execute(begin) {
            Ok(()) => Ok(()),
            // Nothing ran yet, so a dead connection can be replaced and BEGIN sent again.
            Err(e) if connection_lost(&e) || self.session.client.is_closed() => {
                self.reconnect()?;
                self.session.client.batch_execute(begin).map_err(error)
            }
            Err(e) => Err(error(e)),
        }
    }

    pub(crate) fn transaction<T>(
        &mut self,
        access: Access,
        f: &mut impl FnMut(&mut Tx<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.begin(access)?;
        let session = std::cell::RefCell::new(&mut self.session);
        run_in_tx(
            || {
                let mut guard = session.borrow_mut();
                let mut tx = Tx {
                    inner: TxInner::Postgres(&mut guard),
                };
                f(&mut tx)
            },
            || {
                session
                    .borrow_mut()
                    .client
                    .batch_execute("COMMIT")
                    .map_err(error)
            },
            || {
                // After a failed COMMIT PostgreSQL has already ended the transaction; a
                // ROLLBACK then only warns. On a dead connection it fails, and the next
                // transaction reconnects.
                let _ = session.borrow_mut().client.batch_execute("ROLLBACK");
            },
        )
    }
}

/// The server ended the session (`57P01` admin shutdown and friends, class `08` connection
/// exceptions) or the socket closed.
fn connection_lost(e: &::postgres::Error) -> bool {
    e.is_closed()
        || e.as_db_error().is_some_and(|db| {
            let code = db.code().code();
            code.starts_with("08") || code.starts_with("57P")
        })
}

fn connect(config: &::postgres::Config) -> Result<Client, StoreError> {
    config.connect(NoTls).map_err(|e| {
        StoreError::Backend(format!("PostgreSQL: cannot connect: {}", error_chain(&e)))
    })
}

fn set_search_path(client: &mut Client, schema: &str) -> Result<(), StoreError> {
    client
        .batch_execute(&format!("SET search_path TO {schema}"))
        .map_err(error)
}

/// The advisory-lock key of a service: FNV-1a of `coremcp-store/<service>`.
fn lock_key(service: &str) -> i64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in "coremcp-store/".bytes().chain(service.bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash as i64
}

fn migrate(
    client: &mut Client,
    service: &str,
    schema: &str,
    migrations: &[Migration],
) -> Result<(), StoreError> {
    let key = lock_key(service);
    {
        let mut tx = client.transaction().map_err(error)?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&key])
            .map_err(error)?;
        tx.batch_execute(&format!(
            "CREATE SCHEMA IF NOT EXISTS {schema};
             CREATE TABLE IF NOT EXISTS {schema}.schema_migrations (
                 version BIGINT PRIMARY KEY,
                 name TEXT NOT NULL,
                 applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
             )"
        ))
        .map_err(error)?;
        tx.commit().map_err(error)?;
    }
    set_search_path(client, schema)?;
    for m in migrations {
        // Dropping `tx` without commit rolls back.
        let mut tx = client.transaction().map_err(error)?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&key])
            .map_err(error)?;
        let recorded = tx
            .query_opt(
                "SELECT name FROM schema_migrations WHERE version = $1",
                &[&i64::from(m.version)],
            )
            .map_err(error)?;
        if let Some(row) = recorded {
            let name: String = row.try_get(0).map_err(error)?;
            if name != m.name {
                return Err(crate::renamed(m, &name));
            }
            continue;
        }
        let search = m
            .search
            .iter()
            .map(|index| index.ddl(crate::BackendKind::Postgres))
            .chain(
                m.ranks
                    .iter()
                    .map(|index| index.rank_ddl(crate::BackendKind::Postgres)),
            )
            .chain(
                m.tallies
                    .iter()
                    .map(|tally| tally.ddl(crate::BackendKind::Postgres)),
            );
        let ddl = std::iter::once(m.sql.to_owned()).chain(search);
        tx.batch_execute(&ddl.collect::<Vec<_>>().join(";\n"))
            .map_err(|e| StoreError::Migration {
                version: m.version,
                name: m.name.to_owned(),
                message: describe(&e),
            })?;
        tx.execute(
            "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)",
            &[&i64::from(m.version), &m.name],
        )
        .map_err(error)?;
        tx.commit().map_err(error)?;
    }
    Ok(())
}

fn error(e: ::postgres::Error) -> StoreError {
    if let Some(db) = e.as_db_error() {
        let code = db.code();
        if *code == SqlState::T_R_SERIALIZATION_FAILURE || *code == SqlState::T_R_DEADLOCK_DETECTED
        {
            return StoreError::Busy;
        }
    }
    StoreError::Backend(describe(&e))
}

/// `PostgreSQL 23505: duplicate key value …; detail: …` (or the client-side error chain).
fn describe(e: &::postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("PostgreSQL {}", describe_db_error(db)),
        None => format!("PostgreSQL: {}", error_chain(e)),
    }
}

/// A store parameter as text: PostgreSQL parses it as the type it infers for its `$n`.
fn text_of(param: &Param) -> TextParam {
    TextParam(match param {
        Param::Null => None,
        Param::Int(v) => Some(v.to_string()),
        // `{:e}` is the shortest text that reads back as the same f64 (NaN, inf, -inf
        // included, which PostgreSQL accepts).
        Param::Real(v) => Some(format!("{v:e}")),
        Param::Text(v) => Some(v.clone()),
        Param::Bool(v) => Some(v.to_string()),
    })
}

fn bind(params: &[Param]) -> Vec<TextParam> {
    params.iter().map(text_of).collect()
}

pub(crate) fn execute(
    session: &mut Session,
    sql: &str,
    params: &[Param],
) -> Result<u64, StoreError> {
    let texts = bind(params);
    let refs: Vec<&(dyn ToSql + Sync)> = texts.iter().map(|t| t as _).collect();
    let stmt = session.statement(sql)?;
    match session.client.execute(&stmt, &refs) {
        Ok(n) => Ok(n),
        Err(e) => Err(session.failed(sql, e)),
    }
}

pub(crate) fn query(
    session: &mut Session,
    sql: &str,
    params: &[Param],
) -> Result<Vec<Row>, StoreError> {
    let texts = bind(params);
    let refs: Vec<&(dyn ToSql + Sync)> = texts.iter().map(|t| t as _).collect();
    let stmt = session.statement(sql)?;
    let columns: Arc<[String]> = stmt.columns().iter().map(|c| c.name().to_owned()).collect();
    for (i, column) in stmt.columns().iter().enumerate() {
        if !decodable(column.type_()) {
            return Err(StoreError::Usage(format!(
                "column {i} (\"{}\") has type {}, which the store does not decode: cast it in \
                 SQL (::bigint, ::double precision or ::text)",
                column.name(),
                column.type_().name()
            )));
        }
    }
    let rows = match session.client.query(&stmt, &refs) {
        Ok(rows) => rows,
        Err(e) => return Err(session.failed(sql, e)),
    };
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let mut values = Vec::with_capacity(columns.len());
        for i in 0..columns.len() {
            let Cell(value) = row.try_get(i).map_err(|e| {
                StoreError::Usage(format!(
                    "column {i} (\"{}\") could not be decoded: {}",
                    columns[i],
                    error_chain(&e)
                ))
            })?;
            values.push(value);
        }
        out.push(Row::new(columns.clone(), values));
    }
    Ok(out)
}

fn decodable(ty: &Type) -> bool {
    matches!(
        *ty,
        Type::BOOL
            | Type::INT2
            | Type::INT4
            | Type::INT8
            | Type::FLOAT4
            | Type::FLOAT8
            | Type::TEXT
            | Type::VARCHAR
            | Type::BPCHAR
            | Type::NAME
            | Type::UNKNOWN
            | Type::JSON
            | Type::JSONB
            | Type::UUID
            | Type::TIMESTAMP
            | Type::TIMESTAMPTZ
    )
}

/// One result value, decoded from PostgreSQL's binary format.
struct Cell(Param);

impl<'a> FromSql<'a> for Cell {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn StdError + Sync + Send>> {
        Ok(Cell(match *ty {
            Type::BOOL => Param::Bool(bool::from_sql(ty, raw)?),
            Type::INT2 => Param::Int(i64::from(i16::from_sql(ty, raw)?)),
            Type::INT4 => Param::Int(i64::from(i32::from_sql(ty, raw)?)),
            Type::INT8 => Param::Int(i64::from_sql(ty, raw)?),
            Type::FLOAT4 => Param::Real(f64::from(f32::from_sql(ty, raw)?)),
            Type::FLOAT8 => Param::Real(f64::from_sql(ty, raw)?),
            Type::JSON => Param::Text(std::str::from_utf8(raw)?.to_owned()),
            // jsonb's binary form is a version byte (1) and the JSON text.
            Type::JSONB => match raw.split_first() {
                Some((1, text)) => Param::Text(std::str::from_utf8(text)?.to_owned()),
                _ => return Err("unsupported jsonb format version".into()),
            },
            Type::UUID => Param::Text(uuid(raw)?),
            Type::TIMESTAMP => Param::Text(timestamp(i64::from_be_bytes(fixed(raw)?), false)),
            Type::TIMESTAMPTZ => Param::Text(timestamp(i64::from_be_bytes(fixed(raw)?), true)),
            _ => Param::Text(String::from_sql(ty, raw)?),
        }))
    }

    fn from_sql_null(_: &Type) -> Result<Self, Box<dyn StdError + Sync + Send>> {
        Ok(Cell(Param::Null))
    }

    fn accepts(ty: &Type) -> bool {
        decodable(ty)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_keys_are_stable_and_distinct() {
        assert_eq!(lock_key("registry"), lock_key("registry"));
        assert_ne!(lock_key("registry"), lock_key("notepad"));
    }
}
