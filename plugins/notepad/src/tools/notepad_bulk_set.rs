//! `notepad_bulk_set`: set up to 10 000 notes of one scope in one transaction, optionally
//! removing the scope's other notes.
//!
//! Invariants:
//! - All or nothing: every entry is checked (key grammar, value size, ttl, duplicate keys)
//!   before anything is written, and the writes share one transaction.
//! - Each note is written as `notepad_set` without `expected_version` writes it (the same
//!   upsert, an expired note starting again at version 1), in multi-row statements of
//!   [`ROWS_PER_STATEMENT`] notes, so 10 000 notes are 20 round trips, not 10 000.
//! - `replace_scope` removes the scope's notes that are not in `entries`; `deleted` counts the
//!   live ones among them (expired notes were absent already).

use std::collections::HashMap;

use coremcp_nervhq::grammar::check_value;
use coremcp_nervhq::{Query, SERVICE};
use coremcp_plugin_sdk::args::invalid;
use coremcp_plugin_sdk::prelude::*;
use coremcp_store::plugin::{now_ms, timestamp};

use super::{expired, expiry, updated_by, Key, Scope, INSERT, MAX_TTL_S, UPSERT};

/// The most entries one call takes.
pub const MAX_ENTRIES: usize = 10_000;
/// Notes per INSERT: 3 parameters each (and 3 per statement), far below either backend's
/// parameter limit, and large enough that statement overhead does not dominate.
const ROWS_PER_STATEMENT: usize = 500;
// The largest statement stays below SQLite's 32766 parameters (PostgreSQL allows 65535).
const _: () = assert!(3 + ROWS_PER_STATEMENT * 3 < 32_766);
// `replace_scope` names every key in one DELETE.
const _: () = assert!(2 + MAX_ENTRIES < 32_766);

pub const TOOL: Tool = Tool::typed("notepad_bulk_set", &typed(handler))
    // Destructive with replace_scope, which is the reading a client must be warned about.
    .hints(Hints::DESTRUCTIVE_IDEMPOTENT);

/// Set many notes of one scope in one transaction (up to 10000; one invalid entry writes none).
/// replace_scope deletes the scope's other notes.
#[derive(Debug, Args)]
pub struct BulkSet {
    /// global, project:KEY, agent:NAME, session:ID, host:NAME
    scope: Scope,
    /// each key once
    #[arg(required, max_items = MAX_ENTRIES)]
    entries: Vec<NewNote>,
    /// delete the scope's other notes
    #[arg(default)]
    replace_scope: bool,
}

#[derive(Debug, Args)]
pub struct NewNote {
    /// 1-200 of A-Z a-z 0-9 . _ : / -
    key: Key,
    /// at most 16 KiB
    value: String,
    /// expires after (absent: never)
    #[arg(min = 1, max = MAX_TTL_S)]
    ttl_s: Option<u64>,
}

/// The entries with their expiry, checked (value size, each key once) before anything is
/// written.
fn entries(items: &[NewNote], at: i64) -> Result<Vec<(&NewNote, Option<String>)>, ToolError> {
    let mut seen: HashMap<&str, usize> = HashMap::with_capacity(items.len());
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let key = item.key.as_str();
        let of_key = format!(" of key \"{key}\"");
        check_value(&format!("entries[{i}].value"), &item.value, &of_key)?;
        let expires_at = expiry(at, item.ttl_s);
        if let Some(first) = seen.insert(key, i) {
            let problem = format!(
                "key \"{key}\" is also entries[{first}]: each key may appear once per call"
            );
            return Err(invalid(&format!("entries[{i}].key"), problem));
        }
        out.push((item, expires_at));
    }
    Ok(out)
}

fn handler(_: &Ctx<'_>, args: BulkSet) -> Result<Value, ToolError> {
    let scope = args.scope.as_str();
    let replace = args.replace_scope;
    let at = now_ms();
    let mut entries = entries(&args.entries, at)?;
    let now = timestamp(at);
    let by = updated_by();
    // Rows are written in key order, so two calls on one scope lock their rows in the same
    // order and cannot deadlock on PostgreSQL.
    entries.sort_unstable_by_key(|(e, _)| e.key.as_str());
    // Statements and parameters are built once: a busy retry reruns only the execution.
    let batches: Vec<(String, Query)> = entries
        .chunks(ROWS_PER_STATEMENT)
        .map(|chunk| {
            let mut q = Query::new();
            let (s, n, b) = (q.bind(scope), q.bind(now.as_str()), q.bind(by.clone()));
            let rows: Vec<String> = chunk
                .iter()
                .map(|(e, expires)| {
                    let (k, v) = (q.bind(e.key.as_str()), q.bind(e.value.as_str()));
                    format!(
                        "({s}, {k}, {v}, 1, {n}, {n}, {b}, {})",
                        q.bind(expires.clone())
                    )
                })
                .collect();
            (format!("{INSERT} VALUES {}{UPSERT}", rows.join(", ")), q)
        })
        .collect();
    let keys: Vec<String> = entries.iter().map(|(e, _)| e.key.0.clone()).collect();
    let (created, deleted) = SERVICE.run(|tx| {
        let mut created = 0_u64;
        for (sql, q) in &batches {
            for row in tx.query(sql, q.params())? {
                if row.get_i64("version")? == 1 {
                    created += 1;
                }
            }
        }
        let mut deleted = 0_u64;
        if replace {
            // One statement: at most MAX_ENTRIES keys, within either backend's parameter limit.
            let mut q = Query::new();
            q.eq("scope", scope);
            if !keys.is_empty() {
                let list = q.in_list(&keys);
                q.and(format!("key NOT IN {list}"));
            }
            let sql = format!(
                "DELETE FROM notepad_entry{} RETURNING expires_at",
                q.where_clause()
            );
            for row in tx.query(&sql, q.params())? {
                // Expired notes were absent already.
                if !expired(row.get_opt_text("expires_at")?.as_deref(), at) {
                    deleted += 1;
                }
            }
        }
        Ok((created, deleted))
    })?;
    let set = entries.len() as u64;
    Ok(json!({
        "scope": scope,
        "set": set,
        "created": created,
        "updated": set - created,
        "deleted": deleted,
    }))
}
