//! Hosts, and with them the directory `remote_host` resolves against: the record and its
//! roles.
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
use coremcp_store::plugin::invalid;
use coremcp_store::records::{replace_links, Entity, Key};
use coremcp_store::{StoreError, Tx};

use crate::args::Role;

pub const MAX_ROLES: usize = 32;
pub const MAX_ROLE: usize = 64;

pub static HOST: Entity = Entity {
    noun: "host",
    tools: "registry_host",
    table: "registry_host",
    unique: "name",
    select: "SELECT h.id, h.name, h.address, h.core_mcp_url, h.docker_endpoint, h.os, h.roles, \
        h.enabled, h.description, h.last_seen_at, h.version, h.created_at, h.updated_at \
        FROM registry_host h",
    fields: "name address core_mcp_url? docker_endpoint? os? roles:json enabled:bool \
        description? last_seen_at?:ts",
    key: &[Key::text("h.name", "name")],
};

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
    replace_links(tx, ("registry_host_role", "host_id", "role"), id, roles)
}
