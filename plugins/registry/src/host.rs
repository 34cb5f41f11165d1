//! Hosts, and with them the directory `remote_host` resolves against: the record, its JSON,
//! its roles.
//!
//! Invariants:
//! - The forwarding targets are exactly the enabled hosts with a `core_mcp_url`; the host
//!   binary reads them with `registry_host_list {"has_core_mcp": true, "status": "enabled"}`,
//!   so every listed host carries `name`, and `core_mcp_url` whenever it has one.
//! - `core_mcp_url` is an absolute http(s) URL without credentials; `docker_endpoint` is a
//!   `unix://`, `npipe://`, `ssh://` or `tcp://` endpoint. Both are cleared with `""`.
//! - `roles` (a JSON array, in the caller's order, without duplicates) and the rows of
//!   `registry_host_role` always hold the same set; only [`write_roles`] writes either.
//! - A host is never deleted, only disabled (`enabled: false`).

use coremcp_plugin_sdk::ToolError;
use coremcp_store::plugin::{invalid, json_value, ts_opt};
use coremcp_store::{Row, StoreError, Tx};
use serde_json::Value;

use crate::args::Role;
use crate::common::Record;

pub const MAX_ROLES: usize = 32;
pub const MAX_ROLE: usize = 64;

pub const FIELDS: &str = "id, name, address, core_mcp_url, docker_endpoint, os, roles, \
    enabled, description, last_seen_at, version, created_at, updated_at";

pub fn json(row: &Row) -> Result<Value, StoreError> {
    let roles = match json_value(row.get_opt_text("roles")?) {
        Value::Array(items) => Value::Array(items),
        _ => Value::Array(Vec::new()),
    };
    Ok(Record::default()
        .set("name", row.get_text("name")?)
        .set("address", row.get_text("address")?)
        .opt("core_mcp_url", row.get_opt_text("core_mcp_url")?)
        .opt("docker_endpoint", row.get_opt_text("docker_endpoint")?)
        .opt("os", row.get_opt_text("os")?)
        .set("roles", roles)
        .set("enabled", row.get_bool("enabled")?)
        .opt("description", row.get_opt_text("description")?)
        .opt("last_seen_at", ts_opt(row, "last_seen_at")?)
        .stamps(row)?
        .done())
}

pub fn by_name(tx: &mut Tx<'_>, name: &str) -> Result<Option<Row>, StoreError> {
    tx.query_opt(
        &format!("SELECT {FIELDS} FROM registry_host WHERE name = $1"),
        &[name.into()],
    )
}

/// The `roles` argument with duplicates dropped, order kept.
pub fn roles(given: Vec<Role>) -> Result<Vec<String>, ToolError> {
    let mut roles: Vec<String> = Vec::new();
    for Role(role) in given {
        if !roles.contains(&role) {
            roles.push(role);
        }
    }
    if roles.len() > MAX_ROLES {
        return Err(invalid(
            "roles",
            format!("at most {MAX_ROLES} roles are allowed"),
        ));
    }
    Ok(roles)
}

/// Makes `registry_host_role` hold exactly `roles` for host `id`.
pub fn write_roles(tx: &mut Tx<'_>, id: &str, roles: &[String]) -> Result<(), StoreError> {
    tx.execute(
        "DELETE FROM registry_host_role WHERE host_id = $1",
        &[id.into()],
    )?;
    for role in roles {
        tx.execute(
            "INSERT INTO registry_host_role (host_id, role) VALUES ($1, $2)",
            &[id.into(), role.as_str().into()],
        )?;
    }
    Ok(())
}
