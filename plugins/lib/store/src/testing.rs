//! One store per test on either backend, for the store layer's own tests and for every
//! store-backed group's (feature `testing`): SQLite in a fresh temporary directory, PostgreSQL
//! from `COREMCP_TEST_PG_URL` (scripts/test starts one and exports it, and sets
//! `COREMCP_TEST_ALL`: there a missing server fails the PostgreSQL tests; under plain `cargo
//! test` they are skipped with one line saying why). Each test uses its own service name (and
//! so its own file or schema), removed when it ends. [`both!`](crate::both) defines a test once
//! per backend with the same assertions.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::{BackendKind, Migration, Store, StoreUrl};

const PG_ENV: &str = "COREMCP_TEST_PG_URL";

/// One test's backend: a unique service on SQLite (own temp dir) or PostgreSQL (own schema).
pub struct Env {
    pub url: StoreUrl,
    pub service: String,
    pub dir: Option<PathBuf>,
    pub pg_url: Option<String>,
}

fn unique(test: &str) -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    // At most 63 bytes: the name is a PostgreSQL schema.
    let test: String = test.chars().take(24).collect();
    format!(
        "t_{test}_{}_{}_{nanos}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

impl Env {
    pub fn sqlite(test: &str) -> Env {
        let service = unique(test);
        let dir = std::env::temp_dir().join(format!("coremcp-store-{service}"));
        let url = StoreUrl::parse(&format!("sqlite:{}", dir.display()), &dir)
            .expect("a temp dir is a valid sqlite: URL");
        Env {
            url,
            service,
            dir: Some(dir),
            pg_url: None,
        }
    }

    /// `None` (the test is skipped, or fails under scripts/test) without a server.
    pub fn postgres(test: &str) -> Option<Env> {
        let Some(pg_url) = std::env::var(PG_ENV).ok().filter(|v| !v.is_empty()) else {
            assert!(
                std::env::var_os("COREMCP_TEST_ALL").is_none(),
                "{PG_ENV} is not set: the PostgreSQL half of the store tests needs a server; \
                 scripts/test starts a throwaway one and exports {PG_ENV}"
            );
            // Past the harness's capture, so the line shows although the test passes.
            let _ = std::io::Write::write_all(
                &mut std::io::stderr(),
                format!(
                    "skipped postgres::{test}: {PG_ENV} is not set (it needs a PostgreSQL \
                     server; scripts/test provides it)\n"
                )
                .as_bytes(),
            );
            return None;
        };
        let url = StoreUrl::parse(&pg_url, &std::env::temp_dir())
            .expect("COREMCP_TEST_PG_URL is a valid PostgreSQL URL");
        Some(Env {
            url,
            service: unique(test),
            dir: None,
            pg_url: Some(pg_url),
        })
    }

    pub fn kind(&self) -> BackendKind {
        self.url.kind()
    }

    pub fn open(&self, migrations: &[Migration]) -> Store {
        Store::open(&self.url, &self.service, migrations).expect("the store opens")
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        if let Some(dir) = &self.dir {
            let _ = std::fs::remove_dir_all(dir);
        }
        if let Some(url) = &self.pg_url {
            if let Ok(mut client) = ::postgres::Client::connect(url, ::postgres::NoTls) {
                let _ = client.batch_execute(&format!(
                    "DROP SCHEMA IF EXISTS \"{}\" CASCADE",
                    self.service
                ));
            }
        }
    }
}

/// Defines each test function (`fn name(env: &Env)`) twice: `sqlite::name` and
/// `postgres::name`.
#[macro_export]
macro_rules! both {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $( #[test] fn $name() {
                super::$name(&$crate::testing::Env::sqlite(stringify!($name)))
            } )*
        }
        mod postgres {
            $( #[test] fn $name() {
                if let Some(env) = $crate::testing::Env::postgres(stringify!($name)) {
                    super::$name(&env);
                }
            } )*
        }
    };
}
