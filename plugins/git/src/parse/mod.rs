//! Parsers for git's machine formats, each into serialisable structs. Pure functions of
//! git's output: no I/O here, so each is tested on captured text.
//!
//! Invariants: optional values are omitted from the JSON, never `null`; a record that does not
//! fit its format is skipped rather than guessed at.

pub mod log;
pub mod numstat;
pub mod push;
pub mod refs;
pub mod status;

/// `#[serde(skip_serializing_if = "is_false")]` for flags that matter only when set.
pub fn is_false(value: &bool) -> bool {
    !*value
}
