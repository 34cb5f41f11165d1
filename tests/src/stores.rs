//! Stores for tests: every store test runs on both backends, an embedded SQLite in a fresh
//! temporary folder and a fresh database of the throwaway PostgreSQL that `scripts/test` starts
//! (`COREMCP_TEST_PG_URL`). Each [`StoreEnv`] is private to one test, so tests run in parallel
//! and never see each other's rows; a PostgreSQL database is dropped with its `StoreEnv`.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::TempDir;

/// Which database a test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// Both backends, in the order tests run them.
pub const BACKENDS: [Backend; 2] = [Backend::Sqlite, Backend::Postgres];

/// The server URL of the throwaway PostgreSQL (its `postgres` database). Only called on the
/// PostgreSQL backend, which [`StoreEnv::postgres`] and [`on_both`] reach only when it is set.
pub fn pg_url() -> String {
    std::env::var("COREMCP_TEST_PG_URL").expect("COREMCP_TEST_PG_URL (checked by StoreEnv)")
}

/// Runs SQL on the test PostgreSQL (`url`) and returns every row as text (NULL as `None`).
pub fn pg_query(url: &str, sql: &str) -> Vec<Vec<Option<String>>> {
    let mut client = postgres::Client::connect(url, postgres::NoTls)
        .unwrap_or_else(|e| panic!("connect to the test PostgreSQL: {e}"));
    let messages = client
        .simple_query(sql)
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    messages
        .into_iter()
        .filter_map(|m| match m {
            postgres::SimpleQueryMessage::Row(row) => Some(
                (0..row.len())
                    .map(|i| row.get(i).map(str::to_owned))
                    .collect(),
            ),
            _ => None,
        })
        .collect()
}

/// One test's store: `--data` and `--store` for the `coremcp` processes of that test.
pub struct StoreEnv {
    pub backend: Backend,
    /// The data folder (always given, so a test never touches the user's data dir).
    pub data: TempDir,
    /// `sqlite:` or the URL of this test's own PostgreSQL database.
    pub store: String,
    database: Option<String>,
}

impl StoreEnv {
    /// A fresh, empty store on `backend`.
    pub fn new(backend: Backend, label: &str) -> Self {
        let data = TempDir::new(&format!("data-{label}"));
        match backend {
            Backend::Sqlite => Self {
                backend,
                data,
                store: "sqlite:".to_owned(),
                database: None,
            },
            Backend::Postgres => {
                static NEXT: AtomicU64 = AtomicU64::new(0);
                let name = format!(
                    "t_{}_{}_{}",
                    label
                        .chars()
                        .map(|c| if c.is_ascii_alphanumeric() {
                            c.to_ascii_lowercase()
                        } else {
                            '_'
                        })
                        .take(30)
                        .collect::<String>(),
                    std::process::id(),
                    NEXT.fetch_add(1, Ordering::Relaxed)
                );
                let admin = pg_url();
                pg_query(&admin, &format!("CREATE DATABASE {name}"));
                Self {
                    backend,
                    data,
                    store: database_url(&admin, &name),
                    database: Some(name),
                }
            }
        }
    }

    /// A fresh store on PostgreSQL, or `None` (the test is skipped) without a server.
    pub fn postgres(label: &str) -> Option<Self> {
        crate::postgres().map(|_| Self::new(Backend::Postgres, label))
    }

    /// This test's PostgreSQL database, on that backend.
    pub fn database(&self) -> Option<&str> {
        self.database.as_deref()
    }

    /// The embedded SQLite file of `service`, on that backend.
    pub fn sqlite_file(&self, service: &str) -> Option<std::path::PathBuf> {
        (self.backend == Backend::Sqlite)
            .then(|| self.data.path().join(format!("{service}.sqlite3")))
    }

    /// Runs one query on this test's store (either backend) and returns its rows as text.
    pub fn query(&self, service: &str, sql: &str) -> Vec<Vec<Option<String>>> {
        match self.backend {
            Backend::Postgres => {
                pg_query(&self.store, &format!("SET search_path TO {service}; {sql}"))
            }
            Backend::Sqlite => {
                let path = self.sqlite_file(service).expect("sqlite");
                let conn = rusqlite::Connection::open(&path)
                    .unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
                let mut stmt = conn.prepare(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
                let width = stmt.column_count();
                let rows = stmt
                    .query_map([], |row| {
                        (0..width)
                            .map(|i| {
                                Ok(match row.get_ref(i)? {
                                    rusqlite::types::ValueRef::Null => None,
                                    rusqlite::types::ValueRef::Integer(v) => Some(v.to_string()),
                                    rusqlite::types::ValueRef::Real(v) => Some(v.to_string()),
                                    rusqlite::types::ValueRef::Text(t) => {
                                        Some(String::from_utf8_lossy(t).into_owned())
                                    }
                                    rusqlite::types::ValueRef::Blob(b) => {
                                        Some(format!("<{} bytes>", b.len()))
                                    }
                                })
                            })
                            .collect::<Result<Vec<_>, rusqlite::Error>>()
                    })
                    .unwrap_or_else(|e| panic!("{sql}: {e}"));
                rows.map(|r| r.unwrap_or_else(|e| panic!("{sql}: {e}")))
                    .collect()
            }
        }
    }

    /// The flags that point a `coremcp` at this store.
    pub fn args(&self) -> Vec<String> {
        vec![
            "--data".to_owned(),
            self.data.path().to_string_lossy().into_owned(),
            "--store".to_owned(),
            self.store.clone(),
        ]
    }

    /// A `coremcp stdio` with the plugins in `plugins` on this store (plus `extra` flags),
    /// initialised.
    pub fn start(&self, plugins: &std::path::Path, extra: &[&str]) -> crate::Server {
        let mut server = self.with_args(|args| {
            let mut all = args.to_vec();
            all.extend_from_slice(extra);
            crate::Server::start(plugins, &all, &[])
        });
        server.initialize();
        server
    }

    /// Runs `body` with this store's flags as `&str`s (for `Server::start`).
    pub fn with_args<T>(&self, body: impl FnOnce(&[&str]) -> T) -> T {
        let owned = self.args();
        let args: Vec<&str> = owned.iter().map(String::as_str).collect();
        body(&args)
    }
}

impl Drop for StoreEnv {
    fn drop(&mut self) {
        if let Some(name) = &self.database {
            if let Ok(admin) = std::env::var("COREMCP_TEST_PG_URL") {
                if let Ok(mut client) = postgres::Client::connect(&admin, postgres::NoTls) {
                    let _ = client
                        .simple_query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"));
                }
            }
        }
    }
}

/// `url` with its database replaced by `database`.
fn database_url(url: &str, database: &str) -> String {
    let (scheme, rest) = url.split_once("://").expect("a postgres:// URL");
    let (authority, tail) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, ""),
    };
    let query = tail.find('?').map_or("", |i| &tail[i..]);
    format!("{scheme}://{authority}/{database}{query}")
}

/// Runs `test` once per backend, each time on a fresh store; a failure names the backend.
/// Without a PostgreSQL server (plain `cargo test`) only the SQLite half runs.
pub fn on_both(label: &str, test: impl Fn(&StoreEnv)) {
    for backend in BACKENDS {
        if backend == Backend::Postgres && crate::postgres_half().is_none() {
            continue;
        }
        let env = StoreEnv::new(backend, label);
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| test(&env)));
        if let Err(panic) = outcome {
            eprintln!("{label}: failed on {backend:?}");
            std::panic::resume_unwind(panic);
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn database_urls() {
        assert_eq!(
            super::database_url("postgres://postgres@127.0.0.1:5432/postgres", "t_1"),
            "postgres://postgres@127.0.0.1:5432/t_1"
        );
        assert_eq!(
            super::database_url("postgres://u:p@h/db?sslmode=disable", "x"),
            "postgres://u:p@h/x?sslmode=disable"
        );
        assert_eq!(super::database_url("postgres://h", "x"), "postgres://h/x");
    }
}
