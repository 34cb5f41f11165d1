//! Agents, the identities that hold and do work: registered by name, listed with their open
//! work, patched, paused or retired, and deleted with their open items given back or to
//! another agent.
//!
//! Invariants:
//! - An agent's name matches `^[a-z0-9][a-z0-9._-]{0,63}$` and never changes.
//! - Registering is an upsert by name: it always sets `last_seen_at`, and moves `version` only
//!   when a field it sets differs (being seen is not a change of the record).
//! - Deleting an agent leaves no item assigned to it: its open items go to `reassign_to` or to
//!   nobody in the same transaction, and closed ones keep no assignee (the foreign key sets it
//!   so); who did what stays in the activity log by name.

use coremcp_plugin_sdk::{rules, ToolError};
use coremcp_store::plugin::{json_text, new_id, now, TxError};
use coremcp_store::records::{Entity, Key};
use coremcp_store::{Row, Tx};
use serde_json::Value;

use crate::items::CLOSED;

/// The longest agent name.
pub const MAX_NAME: usize = 64;

/// An agent with its count of open assigned items.
pub static AGENT: Entity = Entity {
    noun: "agent",
    tools: "scrolls_agent",
    table: "scrolls_agent",
    unique: "name",
    select: "SELECT a.id, a.name, a.kind, a.capabilities, a.host, a.description, a.status, \
        a.last_seen_at, a.version, a.created_at, a.updated_at, \
        (SELECT COUNT(*) FROM scrolls_item i WHERE i.assignee_id = a.id \
         AND i.status NOT IN ('done', 'cancelled')) AS open_items \
        FROM scrolls_agent a",
    fields: "name kind? capabilities?:json host? description? status last_seen_at?:ts \
        open_items:int",
    key: &[Key::text("a.name", "name")],
};

/// An agent name (argument `field`).
pub fn check_name(field: &str, name: &str) -> Result<(), ToolError> {
    rules::slug(field, name, "agent name", MAX_NAME, "._-", "claude-code-1")
}

/// What `register` sets; `None` keeps what a registered agent has.
#[derive(Debug, Default)]
pub struct Profile<'a> {
    pub kind: Option<&'a str>,
    pub capabilities: Option<&'a [String]>,
    pub host: Option<&'a str>,
    pub description: Option<&'a str>,
}

/// Registers agent `name` or refreshes it; returns its row and whether it is new.
pub fn register(
    tx: &mut Tx<'_>,
    name: &str,
    profile: &Profile<'_>,
) -> Result<(Row, bool), TxError> {
    let capabilities = profile
        .capabilities
        .map(|c| json_text(&Value::from(c.to_vec())));
    // A field moves `version` only when it is given and differs; JSON is compared as text,
    // as this function alone writes it.
    let changed = ["kind", "capabilities", "host", "description"]
        .map(|c| {
            format!(
                "(excluded.{c} IS NOT NULL AND excluded.{c} IS DISTINCT FROM scrolls_agent.{c})"
            )
        })
        .join(" OR ");
    let sql = format!(
        "INSERT INTO scrolls_agent (id, name, kind, capabilities, host, description, status, \
         last_seen_at, version, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, 'active', $7, 1, $7, $7) \
         ON CONFLICT (name) DO UPDATE SET \
             kind = COALESCE(excluded.kind, scrolls_agent.kind), \
             capabilities = COALESCE(excluded.capabilities, scrolls_agent.capabilities), \
             host = COALESCE(excluded.host, scrolls_agent.host), \
             description = COALESCE(excluded.description, scrolls_agent.description), \
             last_seen_at = excluded.last_seen_at, \
             updated_at = CASE WHEN {changed} THEN excluded.updated_at \
                 ELSE scrolls_agent.updated_at END, \
             version = scrolls_agent.version + CASE WHEN {changed} THEN 1 ELSE 0 END \
         RETURNING id"
    );
    let id = new_id();
    let written = tx.query_one(
        &sql,
        &[
            id.as_str().into(),
            name.into(),
            profile.kind.into(),
            capabilities.into(),
            profile.host.into(),
            profile.description.into(),
            now().into(),
        ],
    )?;
    // The id is ours only when the row was inserted.
    let created = written.get_text("id")? == id;
    Ok((AGENT.find(tx, "name", &[name])?, created))
}

/// Deletes agent `name`, giving its open items to `reassign_to` (an active agent) or to
/// nobody; returns how many items it gave.
pub fn delete(tx: &mut Tx<'_>, name: &str, reassign_to: Option<&str>) -> Result<u64, TxError> {
    let id = AGENT.id(tx, "name", &[name], false)?;
    let to = match reassign_to {
        Some(other) if other == name => {
            let problem = format!("{name} is the agent being deleted; name another one");
            return Err(coremcp_plugin_sdk::args::invalid("reassign_to", problem).into());
        }
        Some(other) => Some(AGENT.id(tx, "reassign_to", &[other], true)?),
        None => None,
    };
    // Given back to nobody, a claimed item is released: open again, in the ready queue.
    let status = match to {
        Some(_) => "status",
        None => "CASE WHEN status = 'in_progress' THEN 'open' ELSE status END",
    };
    let given = tx.execute(
        &format!(
            "UPDATE scrolls_item SET assignee_id = $1, status = {status}, updated_at = $2, \
             version = version + 1 WHERE assignee_id = $3 AND status NOT IN {CLOSED}"
        ),
        &[to.into(), now().into(), id.as_str().into()],
    )?;
    tx.execute(
        "DELETE FROM scrolls_agent WHERE id = $1",
        &[id.as_str().into()],
    )?;
    Ok(given)
}

/// An agent as a tool answers it alone: whole, but for a description longer than the answer
/// may hold, shown from character `offset` and cut with `description_truncated`,
/// `description_total_chars` and `description_next_offset` (`scrolls_agent_get`'s `offset`).
pub fn answer(mut agent: serde_json::Value, offset: usize) -> serde_json::Value {
    let room = coremcp_plugin_sdk::budget::result_budget() - 200;
    coremcp_plugin_sdk::budget::fit_fields(&mut agent, &[("description", offset)], room);
    agent
}

/// A page of agents with each description cut to the listed length.
pub fn listed(mut page: serde_json::Value) -> serde_json::Value {
    let shown = coremcp_plugin_sdk::budget::LISTED_TEXT;
    for agent in page["items"].as_array_mut().into_iter().flatten() {
        coremcp_plugin_sdk::budget::cut_field(agent, "description", shown);
    }
    page
}

/// The id of agent `name` (argument `field`) when it may take work: a missing agent is
/// `not_found`, a paused or retired one is refused with its state named.
pub fn assignable(tx: &mut Tx<'_>, field: &str, name: &str) -> Result<String, TxError> {
    let row = AGENT.get(tx, &[name])?.ok_or_else(|| {
        coremcp_plugin_sdk::ToolError::new(
            coremcp_plugin_sdk::codes::NOT_FOUND,
            format!(
                "argument \"{field}\": no agent {name} (register it with \
                 scrolls_agent_register)"
            ),
        )
    })?;
    let status = row.get_text("status")?;
    if status != "active" {
        return Err(coremcp_plugin_sdk::args::invalid(
            field,
            format!(
                "agent {name} is {status}: only an active agent claims or is assigned work \
                 (scrolls_agent_update status active brings it back)"
            ),
        )
        .into());
    }
    Ok(row.get_text("id")?)
}
