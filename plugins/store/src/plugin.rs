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

use coremcp_plugin_api::sdk::{self, codes, Args};
use coremcp_plugin_api::ToolError;
use serde_json::Value;

use crate::{Migration, Store, StoreError, StoreUrl, Tx};

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

    /// The open store, opening it (and applying migrations) on first use.
    pub fn store(&self) -> Result<Arc<Store>, ToolError> {
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

    /// Runs `f` in one transaction (see [`Store::transaction`]): commit on `Ok`, roll back on
    /// any error. A [`TxError::Tool`] comes back as it is.
    pub fn run<T>(
        &self,
        mut f: impl FnMut(&mut Tx<'_>) -> Result<T, TxError>,
    ) -> Result<T, ToolError> {
        let store = self.store()?;
        let mut refused: Option<ToolError> = None;
        let outcome = store.transaction(|tx| match f(tx) {
            Ok(value) => Ok(value),
            Err(TxError::Store(e)) => Err(e),
            Err(TxError::Tool(e)) => {
                refused = Some(e);
                Err(StoreError::Usage("refused by the tool".into()))
            }
        });
        outcome.map_err(|e| refused.take().unwrap_or_else(|| tool_error(e)))
    }
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

/// `invalid_arguments` naming the argument.
pub fn invalid(name: &str, problem: impl std::fmt::Display) -> ToolError {
    ToolError::new(
        codes::INVALID_ARGUMENTS,
        format!("argument \"{name}\": {problem}"),
    )
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Now as a fixed-width RFC 3339 UTC timestamp with milliseconds.
pub fn now() -> String {
    timestamp(now_ms())
}

/// Milliseconds since the epoch as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub fn timestamp(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let base = coremcp_plugin_kit::time::rfc3339(secs);
    // `rfc3339` ends in `Z`: put the milliseconds before it.
    format!("{}.{:03}Z", &base[..base.len() - 1], ms.rem_euclid(1000))
}

/// Parses an RFC 3339 timestamp (any offset, any fraction) into milliseconds since the epoch.
pub fn parse_timestamp(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let num = |from: usize, to: usize| -> Option<i64> {
        let s = text.get(from..to)?;
        if s.bytes().all(|c| c.is_ascii_digit()) {
            s.parse().ok()
        } else {
            None
        }
    };
    let (year, month, day) = (num(0, 4)?, num(5, 7)?, num(8, 10)?);
    let (hour, minute, second) = (num(11, 13)?, num(14, 16)?, num(17, 19)?);
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut rest = &text[19..];
    let mut millis = 0;
    if let Some(fraction) = rest.strip_prefix('.') {
        let digits = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        let padded = format!("{:0<3}", &fraction[..digits.min(3)]);
        millis = padded.parse::<i64>().ok()?;
        rest = &fraction[digits..];
    }
    let offset_s = match rest {
        "Z" | "z" => 0,
        _ => {
            let sign = match rest.as_bytes().first()? {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let rb = rest.as_bytes();
            if rest.len() != 6 || rb[3] != b':' {
                return None;
            }
            let h: i64 = rest[1..3].parse().ok()?;
            let m: i64 = rest[4..6].parse().ok()?;
            sign * (h * 3600 + m * 60)
        }
    };
    let days = days_from_civil(year, month, day);
    Some(((days * 86_400 + hour * 3600 + minute * 60 + second) - offset_s) * 1000 + millis)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (the inverse of `civil_from_days`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// A timestamp read from either backend, in the groups' fixed-width form.
pub fn timestamp_out(stored: &str) -> String {
    parse_timestamp(stored).map_or_else(|| stored.to_owned(), timestamp)
}

/// A new id: a ULID (48-bit millisecond time, 80 random bits, Crockford base32), so ids sort by
/// creation time.
pub fn new_id() -> String {
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
    let value = ms << 80 | random;
    const ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
    (0..26)
        .rev()
        .map(|i| ALPHABET[((value >> (i * 5)) & 31) as usize] as char)
        .collect()
}

/// The `limit` argument: default 50, at most 200 (the schema says so too).
pub fn limit(args: &Args) -> Result<usize, ToolError> {
    let limit = args.opt_u64("limit")?.unwrap_or(50);
    if !(1..=200).contains(&limit) {
        return Err(invalid(
            "limit",
            format!("{limit} is not between 1 and 200"),
        ));
    }
    Ok(limit as usize)
}

/// An opaque cursor carrying the sort key of the last row returned (keyset paging).
pub fn encode_cursor(parts: &[&str]) -> String {
    let json = Value::from(parts.to_vec()).to_string();
    json.bytes().map(|b| format!("{b:02x}")).collect()
}

/// The parts of a cursor this tool returned; anything else names the `cursor` argument.
pub fn decode_cursor(cursor: &str, parts: usize) -> Result<Vec<String>, ToolError> {
    let bad = || {
        invalid(
            "cursor",
            "is not a cursor this tool returned (pass next_cursor unchanged)",
        )
    };
    if cursor.len() % 2 != 0 {
        return Err(bad());
    }
    let bytes: Option<Vec<u8>> = (0..cursor.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(cursor.get(i..i + 2)?, 16).ok())
        .collect();
    let decoded: Vec<String> = bytes
        .and_then(|b| serde_json::from_slice(&b).ok())
        .ok_or_else(bad)?;
    if decoded.len() != parts {
        return Err(bad());
    }
    Ok(decoded)
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
    fn timestamps_are_fixed_width_and_round_trip() {
        assert_eq!(timestamp(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(timestamp(1_764_684_246_123), "2025-12-02T14:04:06.123Z");
        assert_eq!(now().len(), 24);
        for text in [
            "2025-12-02T14:04:06.123Z",
            "1999-12-31T23:59:59.999Z",
            "2000-02-29T00:00:00.000Z",
        ] {
            assert_eq!(timestamp(parse_timestamp(text).expect(text)), text);
        }
        // What PostgreSQL hands back (trimmed fractions), and offsets.
        assert_eq!(
            timestamp_out("2025-12-02T14:04:06.1Z"),
            "2025-12-02T14:04:06.100Z"
        );
        assert_eq!(
            timestamp_out("2025-12-02T14:04:06Z"),
            "2025-12-02T14:04:06.000Z"
        );
        assert_eq!(
            timestamp_out("2025-12-02T16:04:06.5+02:00"),
            "2025-12-02T14:04:06.500Z"
        );
        assert_eq!(
            timestamp_out("2025-12-02T14:04:06.123456Z"),
            "2025-12-02T14:04:06.123Z"
        );
        for bad in [
            "",
            "2025-12-02",
            "2025-13-02T00:00:00Z",
            "2025-12-02T14:04:06",
            "2025-12-02T14:04:06.Z",
            "x025-12-02T14:04:06Z",
        ] {
            assert_eq!(parse_timestamp(bad), None, "{bad}");
        }
    }

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
    }

    #[test]
    fn cursors_round_trip_and_refuse_anything_else() {
        let c = encode_cursor(&["global", "a/b"]);
        assert_eq!(decode_cursor(&c, 2).expect("round trip"), ["global", "a/b"]);
        for bad in ["", "zz", "abc", &encode_cursor(&["one"])] {
            let err = decode_cursor(bad, 2).expect_err(bad);
            assert_eq!(err.code.as_str(), codes::INVALID_ARGUMENTS);
            assert!(err.message.contains("\"cursor\""), "{err}");
        }
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
