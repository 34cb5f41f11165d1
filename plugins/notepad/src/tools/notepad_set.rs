//! `notepad_set`: create or overwrite one note, optionally only if it is at the version read.
//!
//! Invariants:
//! - Each way of writing is one statement, so two processes doing read-modify-write with
//!   `expected_version` never both win, on either backend: an upsert (`INSERT … ON CONFLICT DO
//!   UPDATE`), an insert that may only replace an expired row (`expected_version: 0`), or an
//!   `UPDATE … WHERE version = N` on a live row (`expected_version: N`).
//! - An expired note is absent: writing over it starts again at version 1 (`created: true`),
//!   and `expected_version` compares against 0 for it.
//! - A set replaces the whole note, its expiry included: without `ttl_s` it no longer expires.

use coremcp_nervhq::grammar::check_value;
use coremcp_nervhq::SERVICE;
use coremcp_plugin_sdk::prelude::*;
use coremcp_store::plugin::{conflict, now_ms, timestamp};
use coremcp_store::records::Record;
use coremcp_store::Param;

use super::{expiry, live, updated_by, what, Key, Scope, INSERT, UPSERT};

pub const TOOL: Tool = Tool::typed("notepad_set", &typed(handler)).hints(Hints::IDEMPOTENT);

/// Create or overwrite one note (without ttl_s it never expires). Returns its version.
/// expected_version guards the write (0: only if absent).
#[derive(Debug, Args)]
pub struct Set {
    /// global, project:KEY, agent:NAME, session:ID, host:NAME
    scope: Scope,
    /// 1-200 of A-Z a-z 0-9 . _ : / -
    key: Key,
    /// text, at most 16 KiB
    value: String,
    /// expires after (absent: never)
    #[arg(min = 1, max = super::MAX_TTL_S)]
    ttl_s: Option<u64>,
    /// conflict unless at it (0: absent)
    expected_version: Option<u64>,
}

/// The values of [`INSERT`]: `$1 scope, $2 key, $3 value, $4 now, $5 updated_by, $6 expires_at`.
const VALUES: &str = " VALUES ($1, $2, $3, 1, $4, $4, $5, $6)";

/// Creates the note, or replaces it only if it has expired (`expected_version: 0`).
const CREATE: &str = "
    ON CONFLICT (scope, key) DO UPDATE SET
        value = excluded.value,
        version = 1,
        created_at = excluded.created_at,
        updated_at = excluded.updated_at,
        updated_by = excluded.updated_by,
        expires_at = excluded.expires_at
    WHERE notepad_entry.expires_at <= excluded.updated_at
    RETURNING version";

fn handler(_: &Ctx<'_>, args: Set) -> Result<Value, ToolError> {
    let (scope, key) = (args.scope.as_str(), args.key.as_str());
    let value = args.value.as_str();
    check_value("value", value, "")?;
    let at = now_ms();
    let now = timestamp(at);
    let expires_at = expiry(at, args.ttl_s);
    let expected = args
        .expected_version
        .map(|v| i64::try_from(v).unwrap_or(i64::MAX));
    let params: Vec<Param> = vec![
        scope.into(),
        key.into(),
        value.into(),
        now.as_str().into(),
        updated_by().into(),
        expires_at.clone().into(),
    ];
    let version = SERVICE.run(|tx| {
        let written = match expected {
            None => tx.query_opt(&format!("{INSERT}{VALUES}{UPSERT}"), &params)?,
            Some(0) => tx.query_opt(&format!("{INSERT}{VALUES}{CREATE}"), &params)?,
            Some(n) => {
                let mut update = params.clone();
                update.push(n.into());
                tx.query_opt(
                    &format!(
                        "UPDATE notepad_entry SET value = $3, version = version + 1,
                             updated_at = $4, updated_by = $5, expires_at = $6
                         WHERE scope = $1 AND key = $2 AND version = $7 AND {}
                         RETURNING version",
                        live("$4")
                    ),
                    &update,
                )?
            }
        };
        match written {
            Some(row) => Ok(row.get_i64("version")?),
            None => {
                let current = tx
                    .query_opt(
                        &format!(
                            "SELECT version FROM notepad_entry
                             WHERE scope = $1 AND key = $2 AND {}",
                            live("$3")
                        ),
                        &[scope.into(), key.into(), now.as_str().into()],
                    )?
                    .map(|row| row.get_i64("version"))
                    .transpose()?
                    .unwrap_or(0);
                Err(conflict(&what(scope, key), current, expected.unwrap_or(0)).into())
            }
        }
    })?;
    let note = Record::default().set("scope", scope).set("key", key);
    let note = note.set("version", version).set("created", version == 1);
    Ok(note
        .set("updated_at", now)
        .opt("expires_at", expires_at)
        .done())
}
