//! One module per tool of the group, each exporting its table entry as `TOOL`, and what they
//! share: who wrote a note, when it expires, and the rule that an expired note is absent.

pub mod notepad_bulk_set;
pub mod notepad_cleanup;
pub mod notepad_delete;
pub mod notepad_get;
pub mod notepad_list;
pub mod notepad_set;

use coremcp_plugin_sdk as sdk;
use coremcp_plugin_sdk::prelude::*;

pub use coremcp_nervhq::grammar::{Key, Scope};
use coremcp_plugin_sdk::time::{parse_timestamp, timestamp};

/// The longest `ttl_s` (ten years): far enough for any note, near enough that the expiry time
/// stays a plain date.
pub const MAX_TTL_S: u64 = 10 * 365 * 24 * 3600;

/// The SQL condition "the note has not expired at `now`" (`now` is a placeholder such as `$3`).
/// Every read adds it, so an expired note is absent before any cleanup removed it.
pub fn live(now: &str) -> String {
    format!("(expires_at IS NULL OR expires_at > {now})")
}

/// Who writes: the caller as the host knows it (its principal and client), through relays
/// and `remote_host` too.
pub fn updated_by() -> Option<String> {
    sdk::caller::who()
}

/// The expiry of a note written at `now_ms` with `ttl_s`, as stored (the schema keeps `ttl_s`
/// within 1..=[`MAX_TTL_S`]).
pub fn expiry(now_ms: i64, ttl_s: Option<u64>) -> Option<String> {
    ttl_s.map(|ttl| timestamp(now_ms + ttl as i64 * 1000))
}

/// How an expected_version mismatch names a note.
pub fn what(scope: &str, key: &str) -> String {
    format!("note {scope}/{key}")
}

/// The arguments naming one note (`notepad_get`, `notepad_delete`).
#[derive(Debug, Args)]
pub struct NoteRef {
    /// global, project:KEY, agent:NAME, session:ID, host:NAME
    pub scope: Scope,
    /// 1-200 of A-Z a-z 0-9 . _ : / -
    pub key: Key,
}

/// Whether a stored expiry has passed at `now_ms` (no expiry never passes).
pub fn expired(expires_at: Option<&str>, now_ms: i64) -> bool {
    expires_at
        .and_then(parse_timestamp)
        .is_some_and(|at| at <= now_ms)
}

/// The columns every insert of a note fills, in this order.
pub const INSERT: &str = "INSERT INTO notepad_entry
    (scope, key, value, version, created_at, updated_at, updated_by, expires_at)";

/// After an insert of notes: overwrites any note, and an expired one starts again at version
/// 1 (`notepad_set`, `notepad_bulk_set`).
pub const UPSERT: &str = "
    ON CONFLICT (scope, key) DO UPDATE SET
        value = excluded.value,
        version = CASE WHEN notepad_entry.expires_at <= excluded.updated_at THEN 1
                       ELSE notepad_entry.version + 1 END,
        created_at = CASE WHEN notepad_entry.expires_at <= excluded.updated_at
                          THEN excluded.created_at ELSE notepad_entry.created_at END,
        updated_at = excluded.updated_at,
        updated_by = excluded.updated_by,
        expires_at = excluded.expires_at
    RETURNING version";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry_is_ttl_seconds_after_now() {
        assert_eq!(expiry(0, None), None);
        let at = expiry(1_000, Some(2));
        assert_eq!(at.as_deref(), Some("1970-01-01T00:00:03.000Z"));
    }

    #[test]
    fn expired_means_at_or_before_now() {
        let at = parse_timestamp("2026-01-01T00:00:00.000Z").expect("time");
        assert!(expired(Some("2026-01-01T00:00:00.000Z"), at));
        assert!(!expired(Some("2026-01-01T00:00:00.001Z"), at));
        assert!(!expired(None, at));
    }
}
