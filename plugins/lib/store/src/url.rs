//! Where a store lives: `sqlite:` (the default, under the data dir), `sqlite:/abs/dir`, or a
//! shared PostgreSQL (`postgres://…` / `postgresql://…`).
//!
//! Invariants:
//! - A SQLite directory is always absolute (`sqlite:` takes the caller's data dir as given).
//! - A password in a PostgreSQL URL never appears in `Debug`, `Display` or an error message.
//! - Anything else is a `StoreError::Config` that names the (redacted) value and the accepted
//!   forms.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::StoreError;

/// A parsed store address.
#[derive(Clone, PartialEq, Eq)]
pub enum StoreUrl {
    /// Embedded SQLite: one file `<dir>/<service>.sqlite3` per service.
    Sqlite { dir: PathBuf },
    /// A shared PostgreSQL database: one schema per service.
    Postgres { url: String },
}

impl StoreUrl {
    /// Parses a store address. The empty text and `sqlite:` mean SQLite under `data_dir`.
    pub fn parse(text: &str, data_dir: &Path) -> Result<Self, StoreError> {
        let text = text.trim();
        if text.is_empty() || text == "sqlite:" || text == "sqlite" {
            return Ok(Self::Sqlite {
                dir: data_dir.to_path_buf(),
            });
        }
        if let Some(rest) = text.strip_prefix("sqlite:") {
            // `sqlite:/abs/dir` and `sqlite:///abs/dir` both name /abs/dir.
            let rest = rest.strip_prefix("//").unwrap_or(rest);
            let dir = Path::new(rest);
            if !dir.is_absolute() {
                return Err(StoreError::Config(format!(
                    "store URL \"{text}\": the SQLite directory must be an absolute path \
                     (sqlite:/absolute/dir), or use plain sqlite: for the data dir"
                )));
            }
            return Ok(Self::Sqlite {
                dir: dir.to_path_buf(),
            });
        }
        if text.starts_with("postgres://") || text.starts_with("postgresql://") {
            if let Err(e) = ::postgres::Config::from_str(text) {
                return Err(StoreError::Config(format!(
                    "store URL \"{}\" is not a valid PostgreSQL URL: {e}",
                    redact(text)
                )));
            }
            return Ok(Self::Postgres {
                url: text.to_owned(),
            });
        }
        Err(StoreError::Config(format!(
            "store URL \"{}\" is not supported: use sqlite: (the default, under the data dir), \
             sqlite:/absolute/dir, or postgres://user@host:port/database",
            redact(text)
        )))
    }

    /// Which backend this address selects.
    pub fn kind(&self) -> crate::BackendKind {
        match self {
            Self::Sqlite { .. } => crate::BackendKind::Sqlite,
            Self::Postgres { .. } => crate::BackendKind::Postgres,
        }
    }
}

impl fmt::Display for StoreUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Sqlite { dir } => write!(f, "sqlite:{}", dir.display()),
            Self::Postgres { url } => f.write_str(&redact(url)),
        }
    }
}

impl fmt::Debug for StoreUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StoreUrl({self})")
    }
}

/// `scheme://user:secret@host/db` → `scheme://user:***@host/db`; other text unchanged.
pub(crate) fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _secret)) => format!("{scheme}://{user}:***@{host}{tail}"),
            None => url.to_owned(),
        },
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data() -> PathBuf {
        std::env::temp_dir().join("coremcp-data")
    }

    #[test]
    fn sqlite_is_the_default() {
        for text in ["", "  ", "sqlite:", "sqlite"] {
            assert_eq!(
                StoreUrl::parse(text, &data()).expect("default"),
                StoreUrl::Sqlite { dir: data() },
                "{text:?}"
            );
        }
    }

    #[test]
    fn sqlite_with_an_absolute_directory() {
        let dir = std::env::temp_dir().join("stores");
        let text = format!("sqlite:{}", dir.display());
        assert_eq!(
            StoreUrl::parse(&text, &data()).expect("absolute dir"),
            StoreUrl::Sqlite { dir: dir.clone() }
        );
        let text = format!("sqlite://{}", dir.display());
        assert_eq!(
            StoreUrl::parse(&text, &data()).expect("absolute dir with //"),
            StoreUrl::Sqlite { dir }
        );
    }

    #[test]
    fn sqlite_with_a_relative_directory_is_refused() {
        let err = StoreUrl::parse("sqlite:rel/dir", &data()).expect_err("relative");
        assert!(matches!(err, StoreError::Config(_)), "{err:?}");
        let message = err.to_string();
        assert!(message.contains("sqlite:rel/dir"), "{message}");
        assert!(message.contains("absolute"), "{message}");
    }

    #[test]
    fn postgres_urls() {
        for text in [
            "postgres://u@127.0.0.1:5432/db",
            "postgresql://u:pw@db.example/db?sslmode=disable",
        ] {
            assert_eq!(
                StoreUrl::parse(text, &data()).expect("postgres"),
                StoreUrl::Postgres { url: text.into() }
            );
        }
    }

    #[test]
    fn a_bad_url_names_the_value_and_the_accepted_forms() {
        let err = StoreUrl::parse("mysql://u@h/db", &data()).expect_err("unsupported");
        assert!(matches!(err, StoreError::Config(_)), "{err:?}");
        let message = err.to_string();
        assert!(message.contains("\"mysql://u@h/db\""), "{message}");
        assert!(message.contains("sqlite:"), "{message}");
        assert!(message.contains("postgres://"), "{message}");

        let err = StoreUrl::parse("postgres://u@h:notaport/db", &data()).expect_err("bad port");
        assert!(matches!(err, StoreError::Config(_)), "{err:?}");
        assert!(
            err.to_string().contains("postgres://u@h:notaport/db"),
            "{err}"
        );
    }

    #[test]
    fn passwords_are_never_shown() {
        let url = StoreUrl::parse("postgres://me:hunter2@h/db", &data()).expect("valid");
        assert_eq!(url.to_string(), "postgres://me:***@h/db");
        assert!(!format!("{url:?}").contains("hunter2"));
        let err = StoreUrl::parse("postgres://me:hunter2@h:x/db", &data()).expect_err("bad");
        assert!(!err.to_string().contains("hunter2"), "{err}");
        let err = StoreUrl::parse("redis://me:hunter2@h/db", &data()).expect_err("bad");
        assert!(!err.to_string().contains("hunter2"), "{err}");
    }
}
