//! Hosts, and with them the directory `remote_host` resolves against: `registry_host_list`,
//! `_add`, `_update`.
//!
//! Invariants:
//! - The forwarding targets are exactly the enabled hosts with a `core_mcp_url`; the host
//!   binary reads them with `registry_host_list {"has_core_mcp": true, "status": "enabled"}`,
//!   so every listed host carries `name`, and `core_mcp_url` whenever it has one.
//! - `core_mcp_url` is an absolute http(s) URL without credentials; `docker_endpoint` is a
//!   `unix://`, `npipe://`, `ssh://` or `tcp://` endpoint. Both are cleared with `""`.
//! - `roles` (a JSON array, in the caller's order, without duplicates) and the rows of
//!   `registry_host_role` always hold the same set; only this module writes either.
//! - A host is never deleted, only disabled (`enabled: false`).

use coremcp_plugin_sdk::legacy::{Args, Untyped};
use coremcp_plugin_sdk::{Annotations, ToolError};
use coremcp_plugin_sdk::{Ctx, Hints, Tool};
use coremcp_store::plugin::{json_text, json_value, limit, new_id, now, timestamp_out, TxError};
use coremcp_store::{Row, StoreError, Tx};
use serde_json::Value;

use crate::common::{
    check_expected, clearable, cursor, duplicate, expected_version, guarded_update, list_result,
    not_found, opt_text, page, Query, Record, ADDS, MAX_DESCRIPTION, PATCHES, SERVICE,
};
use crate::validate;

const MAX_ROLES: usize = 32;
const MAX_ROLE: usize = 64;

pub const LIST: Tool = Tool::new(
    "registry_host_list",
    "List hosts by name. Enabled hosts with a core_mcp_url are the forwarding \
        targets that remote_host names (has_core_mcp: true lists exactly those). Default: \
        enabled hosts only. Paged: pass next_cursor back as cursor.",
    &Untyped::new(
        r#"{
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "only the host with exactly this name"},
            "role": {"type": "string", "minLength": 1, "description": "only hosts that have this role"},
            "has_core_mcp": {"type": "boolean", "description": "true: only hosts with a core_mcp_url; false: only hosts without one"},
            "has_docker": {"type": "boolean", "description": "true: only hosts with a docker_endpoint; false: only hosts without one"},
            "status": {"type": "string", "enum": ["enabled", "disabled", "all"], "description": "which hosts (default enabled)"},
            "query": {"type": "string", "minLength": 1, "maxLength": 200, "description": "case-insensitive substring of the name or address"},
            "limit": {"type": "integer", "minimum": 1, "maximum": 200, "description": "items per page (default 50)"},
            "cursor": {"type": "string", "description": "next_cursor of the previous page"}
        },
        "required": [],
        "additionalProperties": false
    }"#,
        list,
    ),
)
.hints(Hints::of(Annotations::READ_ONLY));

pub const ADD: Tool = Tool::new(
    "registry_host_add",
    "Add a host with its Core MCP address. A host with core_mcp_url becomes a \
        remote_host and forwarding target at the next host refresh; docker_endpoint lets the \
        Docker tools reach it. An existing name is a conflict. Returns the host (enabled).",
    &Untyped::new(
        r#"{
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1, "description": "^[a-z0-9][a-z0-9-]{0,62}$, e.g. devbox-1"},
            "address": {"type": "string", "minLength": 1, "maxLength": 253, "description": "DNS name or IP address (no scheme or port)"},
            "core_mcp_url": {"type": "string", "maxLength": 2000, "description": "absolute http(s) URL of its Core MCP, e.g. http://devbox-1:7070/mcp (no credentials)"},
            "docker_endpoint": {"type": "string", "maxLength": 2000, "description": "unix://, npipe://, ssh:// or tcp:// endpoint of its Docker daemon"},
            "os": {"type": "string", "enum": ["linux", "windows", "macos"], "description": "operating system"},
            "roles": {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 64}, "maxItems": 32, "description": "free-form roles, e.g. [\"build\", \"gpu\"]"},
            "description": {"type": "string", "maxLength": 4000, "description": "what the host is for"}
        },
        "required": ["name", "address"],
        "additionalProperties": false
    }"#,
        add,
    ),
)
.hints(Hints::of(ADDS));

pub const UPDATE: Tool = Tool::new(
    "registry_host_update",
    "Patch a host: only the fields you pass change. Clearing core_mcp_url (\"\") \
        or disabling the host (enabled: false) removes it from the forwarding targets. roles \
        replaces the whole list. With expected_version, a host that changed since you read it \
        is a conflict naming its current version. A patch that changes nothing is a no-op. \
        Returns the host.",
    &Untyped::new(
        r#"{
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1, "description": "the host's name"},
            "address": {"type": "string", "minLength": 1, "maxLength": 253, "description": "new DNS name or IP address"},
            "core_mcp_url": {"type": "string", "maxLength": 2000, "description": "new http(s) URL of its Core MCP (\"\" clears it)"},
            "docker_endpoint": {"type": "string", "maxLength": 2000, "description": "new unix://, npipe://, ssh:// or tcp:// endpoint (\"\" clears it)"},
            "os": {"type": "string", "enum": ["linux", "windows", "macos"], "description": "operating system"},
            "roles": {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 64}, "maxItems": 32, "description": "the new list of roles (replaces the old one; [] clears it)"},
            "enabled": {"type": "boolean", "description": "false disables the host (and stops forwarding to it)"},
            "description": {"type": "string", "maxLength": 4000, "description": "new description (\"\" clears it)"},
            "expected_version": {"type": "integer", "minimum": 1, "description": "the version you read; refused with conflict if the host is at another"}
        },
        "required": ["name"],
        "additionalProperties": false
    }"#,
        update,
    ),
)
.hints(Hints::of(PATCHES));

const FIELDS: &str = "id, name, address, core_mcp_url, docker_endpoint, os, roles, enabled, \
    description, last_seen_at, version, created_at, updated_at";

fn host_json(row: &Row) -> Result<Value, StoreError> {
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
        .opt(
            "last_seen_at",
            row.get_opt_text("last_seen_at")?.map(|t| timestamp_out(&t)),
        )
        .stamps(row)?
        .done())
}

fn by_name(tx: &mut Tx<'_>, name: &str) -> Result<Option<Row>, StoreError> {
    tx.query_opt(
        &format!("SELECT {FIELDS} FROM registry_host WHERE name = $1"),
        &[name.into()],
    )
}

/// The `roles` argument: each a token, duplicates dropped, order kept.
fn roles_arg(args: &Args) -> Result<Option<Vec<String>>, ToolError> {
    if args.0.get("roles").is_none_or(Value::is_null) {
        return Ok(None);
    }
    let mut roles: Vec<String> = Vec::new();
    for role in args.str_list("roles")? {
        validate::token("roles", role, MAX_ROLE)?;
        if !roles.iter().any(|r| r == role) {
            roles.push(role.to_owned());
        }
    }
    if roles.len() > MAX_ROLES {
        return Err(coremcp_store::plugin::invalid(
            "roles",
            format!("at most {MAX_ROLES} roles are allowed"),
        ));
    }
    Ok(Some(roles))
}

/// Makes `registry_host_role` hold exactly `roles` for host `id`.
fn write_roles(tx: &mut Tx<'_>, id: &str, roles: &[String]) -> Result<(), StoreError> {
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

fn list(_: &Ctx<'_>, args: Args) -> Result<Value, ToolError> {
    let limit = limit(&args)?;
    let mut q = Query::default();
    if let Some(name) = args.opt_str("name")? {
        validate::host_name("name", name)?;
        q.eq("h.name", name);
    }
    if let Some(role) = args.opt_str("role")? {
        let p = q.bind(role);
        q.and(format!(
            "EXISTS (SELECT 1 FROM registry_host_role r WHERE r.host_id = h.id AND r.role = {p})"
        ));
    }
    for (arg, column) in [
        ("has_core_mcp", "h.core_mcp_url"),
        ("has_docker", "h.docker_endpoint"),
    ] {
        match args.opt_bool(arg)? {
            Some(true) => q.and(format!("{column} IS NOT NULL")),
            Some(false) => q.and(format!("{column} IS NULL")),
            None => {}
        }
    }
    match args.opt_str("status")?.unwrap_or("enabled") {
        "enabled" => q.eq("h.enabled", true),
        "disabled" => q.eq("h.enabled", false),
        _ => {}
    }
    if let Some(text) = args.opt_str("query")? {
        q.contains(&["h.name", "h.address"], text);
    }
    if let Some(after) = cursor(&args, "host", 1)? {
        q.gt("h.name", after[0].as_str());
    }
    let sql = format!(
        "SELECT {} FROM registry_host h{} ORDER BY h.name LIMIT {}",
        FIELDS
            .split(", ")
            .map(|f| format!("h.{f}"))
            .collect::<Vec<_>>()
            .join(", "),
        q.where_sql(),
        limit + 1
    );
    SERVICE.run(|tx| {
        let rows = tx.query(&sql, &q.params)?;
        let (rows, next) = page(rows, limit, "host", |r| Ok(vec![r.get_text("name")?]))?;
        let items = rows.iter().map(host_json).collect::<Result<_, _>>()?;
        Ok(list_result(items, next))
    })
}

fn add(_: &Ctx<'_>, args: Args) -> Result<Value, ToolError> {
    let name = args.str("name")?;
    validate::host_name("name", name)?;
    let address = args.str("address")?;
    validate::address("address", address)?;
    // An empty optional URL is the same as leaving it out.
    let core_mcp_url = args.opt_str("core_mcp_url")?.filter(|v| !v.is_empty());
    if let Some(url) = core_mcp_url {
        validate::http_url("core_mcp_url", url)?;
    }
    let docker_endpoint = args.opt_str("docker_endpoint")?.filter(|v| !v.is_empty());
    if let Some(endpoint) = docker_endpoint {
        validate::docker_endpoint("docker_endpoint", endpoint)?;
    }
    let os = args.opt_str("os")?;
    let roles = roles_arg(&args)?.unwrap_or_default();
    let description = opt_text(&args, "description", MAX_DESCRIPTION)?;
    SERVICE.run(|tx| {
        let id = new_id();
        let now = now();
        let inserted = tx.execute(
            "INSERT INTO registry_host (id, name, address, core_mcp_url, docker_endpoint, os, \
             roles, enabled, description, last_seen_at, version, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, NULL, 1, $10, $10) \
             ON CONFLICT (name) DO NOTHING",
            &[
                id.as_str().into(),
                name.into(),
                address.into(),
                core_mcp_url.into(),
                docker_endpoint.into(),
                os.into(),
                json_text(&Value::from(roles.clone())).into(),
                true.into(),
                description.into(),
                now.into(),
            ],
        )?;
        if inserted == 0 {
            let version = by_name(tx, name)?.map_or(Ok(0), |r| r.get_i64("version"))?;
            return Err(duplicate(
                &format!("host \"{name}\""),
                version,
                "change it with registry_host_update",
            )
            .into());
        }
        write_roles(tx, &id, &roles)?;
        let row = by_name(tx, name)?.ok_or_else(|| StoreError::NotFound(name.to_owned()))?;
        Ok(host_json(&row)?)
    })
}

fn update(_: &Ctx<'_>, args: Args) -> Result<Value, ToolError> {
    let name = args.str("name")?;
    validate::host_name("name", name)?;
    let address = args.opt_str("address")?;
    if let Some(address) = address {
        validate::address("address", address)?;
    }
    let core_mcp_url = clearable(&args, "core_mcp_url", |v| {
        validate::http_url("core_mcp_url", v)
    })?;
    let docker_endpoint = clearable(&args, "docker_endpoint", |v| {
        validate::docker_endpoint("docker_endpoint", v)
    })?;
    let os = args.opt_str("os")?;
    let roles = roles_arg(&args)?;
    let enabled = args.opt_bool("enabled")?;
    let description = clearable(&args, "description", |v| {
        validate::text("description", v, MAX_DESCRIPTION)
    })?;
    let expected = expected_version(&args)?;
    let what = format!("host \"{name}\"");
    SERVICE.run(|tx| -> Result<Value, TxError> {
        let row = by_name(tx, name)?.ok_or_else(|| {
            not_found(
                "name",
                format!("there is no host \"{name}\" (see registry_host_list status all)"),
            )
        })?;
        let version = row.get_i64("version")?;
        check_expected(&what, version, expected)?;
        let old = (
            row.get_text("address")?,
            row.get_opt_text("core_mcp_url")?,
            row.get_opt_text("docker_endpoint")?,
            row.get_opt_text("os")?,
            json_value(row.get_opt_text("roles")?),
            row.get_bool("enabled")?,
            row.get_opt_text("description")?,
        );
        let new_roles = roles
            .as_ref()
            .map_or_else(|| old.4.clone(), |r| Value::from(r.clone()));
        let new = (
            address.map_or_else(|| old.0.clone(), str::to_owned),
            core_mcp_url.map_or_else(|| old.1.clone(), |v| v.map(str::to_owned)),
            docker_endpoint.map_or_else(|| old.2.clone(), |v| v.map(str::to_owned)),
            os.map_or_else(|| old.3.clone(), |v| Some(v.to_owned())),
            new_roles,
            enabled.unwrap_or(old.5),
            description.map_or_else(|| old.6.clone(), |v| v.map(str::to_owned)),
        );
        if new == old {
            return Ok(host_json(&row)?);
        }
        let id = row.get_text("id")?;
        guarded_update(
            tx,
            "UPDATE registry_host SET address = $1, core_mcp_url = $2, docker_endpoint = $3, \
             os = $4, roles = $5, enabled = $6, description = $7, version = version + 1, \
             updated_at = $8 WHERE id = $9 AND version = $10",
            &[
                new.0.as_str().into(),
                new.1.clone().into(),
                new.2.clone().into(),
                new.3.clone().into(),
                json_text(&new.4).into(),
                new.5.into(),
                new.6.clone().into(),
                now().into(),
                id.as_str().into(),
                version.into(),
            ],
            "registry_host",
            &id,
            &what,
            expected,
        )?;
        if let Some(roles) = &roles {
            write_roles(tx, &id, roles)?;
        }
        let row = by_name(tx, name)?.ok_or_else(|| StoreError::NotFound(name.to_owned()))?;
        Ok(host_json(&row)?)
    })
}
