//! The store as a plugin sees it (feature `plugin`): a [`Service`] opened from the host's
//! configuration on first use, transactions whose closures may refuse with a tool error, and the
//! small conventions every store-backed group shares (ids, timestamps, cursors, conflicts).
//!
//! Invariants:
//! - The store address comes from the host's `store.url` (empty or `sqlite:` = SQLite under
//!   `data.dir`); nothing is opened before the first call that needs it, and a failed open is
//!   not cached, so a database that comes back is used on the next call.
//! - A closure that returns [`TxError::Tool`] rolls the transaction back and that error reaches
//!   the caller unchanged; store errors become tool errors with a stable code ([`tool_error`]).
//! - Timestamps written by the groups are fixed-width UTC RFC 3339 with milliseconds
//!   (`2026-12-02T14:04:06.123Z`), so SQLite's text comparison orders them, and every timestamp
//!   read back is normalised to the same form ([`timestamp_out`]) whichever backend stored it.
//! - Conflict messages always read "… is at version N …" with the current version, so clients
//!   (and tests) can pick it out.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

pub use coremcp_plugin_sdk::args::invalid;
pub use coremcp_plugin_sdk::page::{decode_cursor, encode_cursor};
pub use coremcp_plugin_sdk::time::{now, now_ms, parse_timestamp, timestamp, timestamp_out};
use coremcp_plugin_sdk::{self as sdk, codes, ToolError};
use serde_json::Value;

use crate::{Access, Migration, Row, Store, StoreError, StoreUrl, Tx};

/// A timestamp column, normalised to the fixed-width form whichever backend stored it.
pub fn ts(row: &Row, column: &str) -> Result<String, StoreError> {
    row.get_text(column).map(|t| timestamp_out(&t))
}

/// A nullable timestamp column, normalised.
pub fn ts_opt(row: &Row, column: &str) -> Result<Option<String>, StoreError> {
    Ok(row.get_opt_text(column)?.map(|t| timestamp_out(&t)))
}

/// One store-backed service of a plugin (`registry`, `nervhq`, …), opened lazily.
pub struct Service {
    name: &'static str,
    migrations: &'static [Migration],
    store: Mutex<Option<Arc<Store>>>,
}

impl std::fmt::Debug for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Service").field("name", &self.name).finish()
    }
}

/// Why a transaction closure stopped: a store failure, or a refusal the tool words itself.
#[derive(Debug)]
pub enum TxError {
    Store(StoreError),
    Tool(ToolError),
}

impl From<StoreError> for TxError {
    fn from(e: StoreError) -> Self {
        Self::Store(e)
    }
}

impl From<ToolError> for TxError {
    fn from(e: ToolError) -> Self {
        Self::Tool(e)
    }
}

impl Service {
    pub const fn new(name: &'static str, migrations: &'static [Migration]) -> Self {
        Self {
            name,
            migrations,
            store: Mutex::new(None),
        }
    }

    /// The open store, opening it (and applying migrations) on first use. On a test thread
    /// that called [`serve_on_this_thread`] (feature `testing`), that store instead.
    pub fn store(&self) -> Result<Arc<Store>, ToolError> {
        #[cfg(feature = "testing")]
        if let Some(store) = TEST_STORE.with(|s| s.borrow().clone()) {
            return Ok(store);
        }
        let mut slot = self.store.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(store) = &*slot {
            return Ok(store.clone());
        }
        let url = configured_url()?;
        let store = Arc::new(Store::open(&url, self.name, self.migrations).map_err(|e| {
            let code = match e {
                StoreError::Config(_) => codes::NOT_CONFIGURED,
                _ => codes::FAILED,
            };
            ToolError::new(
                code,
                format!("the {} store could not be opened: {e}", self.name),
            )
        })?);
        *slot = Some(store.clone());
        Ok(store)
    }

    /// Runs `f` in one transaction of this service's store (see [`run_on`]).
    pub fn run<T>(&self, f: impl FnMut(&mut Tx<'_>) -> Result<T, TxError>) -> Result<T, ToolError> {
        run_on(&*self.store()?, f)
    }

    /// Runs `f`, which only reads, in one read transaction of this service's store (see
    /// [`Store::read`]): what the tools that change nothing use.
    pub fn read<T>(
        &self,
        f: impl FnMut(&mut Tx<'_>) -> Result<T, TxError>,
    ) -> Result<T, ToolError> {
        run_with(&*self.store()?, Access::Read, f)
    }
}

#[cfg(feature = "testing")]
thread_local! {
    static TEST_STORE: std::cell::RefCell<Option<Arc<Store>>> =
        const { std::cell::RefCell::new(None) };
}

/// Makes every [`Service`] called from this thread use `store` (feature `testing`), so a
/// group's own tests run its tools on a throwaway store of either backend
/// (`coremcp_store::testing`), each test thread on its own.
#[cfg(feature = "testing")]
pub fn serve_on_this_thread(store: Arc<Store>) {
    TEST_STORE.with(|s| *s.borrow_mut() = Some(store));
}

/// Runs `f` in one transaction (see [`Store::transaction`]): commit on `Ok`, roll back on any
/// error. A [`TxError::Tool`] comes back as it is.
pub fn run_on<T>(
    store: &Store,
    f: impl FnMut(&mut Tx<'_>) -> Result<T, TxError>,
) -> Result<T, ToolError> {
    run_with(store, Access::Write, f)
}

/// Runs `f` in one transaction of `access` (see [`run_on`]).
pub fn run_with<T>(
    store: &Store,
    access: Access,
    mut f: impl FnMut(&mut Tx<'_>) -> Result<T, TxError>,
) -> Result<T, ToolError> {
    let mut refused: Option<ToolError> = None;
    let outcome = store.run(access, |tx| match f(tx) {
        Ok(value) => Ok(value),
        Err(TxError::Store(e)) => Err(e),
        Err(TxError::Tool(e)) => {
            refused = Some(e);
            Err(StoreError::Usage("refused by the tool".into()))
        }
    });
    outcome.map_err(|e| refused.take().unwrap_or_else(|| tool_error(e)))
}

/// The store address from the host's configuration.
fn configured_url() -> Result<StoreUrl, ToolError> {
    let text = sdk::config("store.url").unwrap_or_default();
    let data_dir = sdk::config("data.dir").filter(|d| !d.is_empty());
    let data_dir = match data_dir {
        Some(dir) => std::path::PathBuf::from(dir),
        None if text.trim().starts_with("postgres") => std::path::PathBuf::new(),
        None => {
            return Err(ToolError::new(
                codes::NOT_CONFIGURED,
                "no data directory is configured for the embedded store: run under coremcp \
                 (--data DIR / COREMCP_DATA) or give --store postgres://…",
            ))
        }
    };
    StoreUrl::parse(&text, &data_dir)
        .map_err(|e| ToolError::new(codes::NOT_CONFIGURED, e.to_string()))
}

/// A store error as the tool error a client sees.
pub fn tool_error(e: StoreError) -> ToolError {
    let code = match &e {
        StoreError::Conflict { .. } => codes::CONFLICT,
        StoreError::NotFound(_) => codes::NOT_FOUND,
        StoreError::Config(_) => codes::NOT_CONFIGURED,
        StoreError::Usage(_) => codes::INTERNAL,
        StoreError::Busy | StoreError::Migration { .. } | StoreError::Backend(_) => codes::FAILED,
    };
    ToolError::new(code, e.to_string())
}

/// The `conflict` error for `what` (e.g. `note global/todo`), which is at version `current`.
pub fn conflict(what: &str, current: i64, expected: i64) -> ToolError {
    let state = if current == 0 {
        format!("{what} does not exist (it is at version 0)")
    } else {
        format!("{what} is at version {current}")
    };
    ToolError::new(
        codes::CONFLICT,
        format!(
            "{state}, not expected_version {expected}: it changed since you read it; \
             read it again and retry with expected_version {current}"
        ),
    )
}

/// A new id: a ULID (48-bit millisecond time, 80 random bits, Crockford base32), so ids sort by
/// creation time; within one process each id sorts after the one before (an id made in the same
/// millisecond, or after the clock stepped back, is the previous one plus one), so a feed paged
/// by id lists one process's writes in the order they were made.
pub fn new_id() -> String {
    static LAST: Mutex<u128> = Mutex::new(0);
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let ms = u128::try_from(now_ms()).unwrap_or(0) & ((1 << 48) - 1);
    // Not for secrets: std's per-process random hash keys, the process id, the time and a
    // counter make ids unique across processes and calls.
    let mix = |salt: u64| {
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(salt);
        h.write_u32(std::process::id());
        h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
        h.write_u128(
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        h.finish()
    };
    let random = (u128::from(mix(1)) << 16 | u128::from(mix(2) & 0xffff)) & ((1 << 80) - 1);
    let value = {
        let mut last = LAST.lock().unwrap_or_else(PoisonError::into_inner);
        *last = (ms << 80 | random).max(*last + 1);
        *last
    };
    const ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
    (0..26)
        .rev()
        .map(|i| ALPHABET[((value >> (i * 5)) & 31) as usize] as char)
        .collect()
}

/// A JSON value as text for a `JSONB` column.
pub fn json_text(value: &Value) -> String {
    value.to_string()
}

/// A `JSONB` column read back: PostgreSQL and SQLite both hand over the JSON text.
pub fn json_value(stored: Option<String>) -> Value {
    stored
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_ulids_that_sort_by_time_and_differ() {
        let a = new_id();
        let b = new_id();
        assert_eq!(a.len(), 26);
        assert_ne!(a, b);
        assert!(a
            .chars()
            .all(|c| c.is_ascii_digit() || c.is_ascii_uppercase()));
        // The first 10 characters are the time: equal or increasing.
        assert!(a[..10] <= b[..10]);
        // Within a process every id sorts after the one before, in the same millisecond too.
        let ids: Vec<String> = (0..1000).map(|_| new_id()).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "ids out of order");
    }

    #[test]
    fn conflicts_name_the_current_version() {
        let err = conflict("note global/x", 7, 5);
        assert_eq!(err.code.as_str(), codes::CONFLICT);
        assert!(err.message.contains("is at version 7"), "{err}");
        let err = conflict("note global/x", 0, 5);
        assert!(err.message.contains("at version 0"), "{err}");
    }
}
