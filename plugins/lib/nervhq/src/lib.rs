//! The NervHQ store shared by the Notepad and Session groups (docs/tools.md): the one
//! migration list of the `nervhq` service, and the helpers both groups use (argument grammar,
//! filtered SQL, the result budget, annotations).
//!
//! Each plugin library links its own copy of [`SERVICE`], so a host with both groups loaded holds
//! two connections to the same store. Both open it with this identical list, so whichever opens
//! it first applies every migration and the other finds them recorded.
//!
//! Invariants:
//! - A migration, once released, never changes: new columns or tables get a new version.
//! - Every timestamp column is written with `coremcp_store::plugin::timestamp` (fixed-width UTC),
//!   so SQLite's text comparison and PostgreSQL's `timestamptz` order rows the same way.
//! - Text sort keys are compared byte-wise on both backends ([`bytewise`]), so pages and their
//!   cursors list the same rows in the same order whichever database holds them.

pub mod grammar;
pub mod result;

use coremcp_store::plugin::Service;
use coremcp_store::Migration;

pub use coremcp_store::query::{bytewise, Query};

/// The schema of the `nervhq` service, in version order.
pub static MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "notepad_entry",
        sql: "CREATE TABLE notepad_entry (
                  scope TEXT NOT NULL,
                  key TEXT NOT NULL,
                  value TEXT NOT NULL,
                  version BIGINT NOT NULL,
                  created_at TIMESTAMPTZ NOT NULL,
                  updated_at TIMESTAMPTZ NOT NULL,
                  updated_by TEXT,
                  expires_at TIMESTAMPTZ,
                  PRIMARY KEY (scope, key)
              );
              CREATE INDEX notepad_entry_expires ON notepad_entry (expires_at)
                  WHERE expires_at IS NOT NULL;
              CREATE INDEX notepad_entry_scope_updated ON notepad_entry (scope, updated_at);",
        search: &[],
        ranks: &[],
        tallies: &[],
    },
    Migration {
        version: 2,
        name: "session",
        sql: "CREATE TABLE session (
                  id TEXT PRIMARY KEY,
                  agent TEXT NOT NULL,
                  host TEXT NOT NULL,
                  project_key TEXT,
                  cwd TEXT,
                  repo TEXT,
                  branch TEXT,
                  model TEXT,
                  groups JSONB,
                  metadata JSONB,
                  status TEXT NOT NULL CHECK (status IN ('active', 'closed')),
                  started_at TIMESTAMPTZ NOT NULL,
                  last_heartbeat_at TIMESTAMPTZ NOT NULL,
                  heartbeat_count BIGINT NOT NULL DEFAULT 0,
                  note TEXT,
                  current_item TEXT,
                  closed_at TIMESTAMPTZ,
                  close_reason TEXT CHECK (close_reason IN ('done', 'aborted', 'error', 'stale')),
                  summary TEXT,
                  version BIGINT NOT NULL
              );
              CREATE INDEX session_status_heartbeat ON session (status, last_heartbeat_at);
              CREATE INDEX session_project_started ON session (project_key, started_at);",
        search: &[],
        ranks: &[],
        tallies: &[],
    },
    Migration {
        version: 3,
        name: "session_recording",
        // The transcript is a text column: the store layer has no byte columns (version 4
        // says how the text is packed).
        sql: "CREATE TABLE session_recording (
                  id TEXT PRIMARY KEY,
                  session_id TEXT NOT NULL REFERENCES session (id),
                  recorded_at TIMESTAMPTZ NOT NULL,
                  title TEXT,
                  summary TEXT,
                  tags JSONB,
                  format TEXT NOT NULL CHECK (format IN ('jsonl', 'markdown', 'text')),
                  transcript TEXT NOT NULL,
                  size_bytes BIGINT NOT NULL,
                  content_hash TEXT NOT NULL UNIQUE,
                  stats JSONB
              );
              CREATE INDEX session_recording_recorded ON session_recording (recorded_at);
              CREATE INDEX session_recording_session ON session_recording (session_id);",
        search: &[],
        ranks: &[],
        tallies: &[],
    },
    Migration {
        version: 4,
        name: "session_recording_encoding",
        // How `transcript` holds the text: as it is, or packed by coremcp-recording (gzip,
        // then base64), which is how Ops `session_record` writes every recording.
        sql: "ALTER TABLE session_recording ADD COLUMN encoding TEXT NOT NULL DEFAULT 'text'
                  CHECK (encoding IN ('text', 'gzip+base64'));",
        search: &[],
        ranks: &[],
        tallies: &[],
    },
];

/// The `nervhq` service: opened on the first call that needs it.
pub static SERVICE: Service = Service::new("nervhq", MIGRATIONS);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_increase_and_use_only_portable_types() {
        for pair in MIGRATIONS.windows(2) {
            assert!(pair[0].version < pair[1].version);
        }
        for m in MIGRATIONS {
            for banned in ["SERIAL", "AUTOINCREMENT", "BYTEA", "BLOB", "::", "COLLATE"] {
                assert!(!m.sql.contains(banned), "{}: {banned}", m.name);
            }
        }
    }
}
