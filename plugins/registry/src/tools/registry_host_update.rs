//! `registry_host_update`: patch a host; clearing `core_mcp_url` or disabling it removes it
//! from the forwarding targets.

use coremcp_plugin_sdk::{typed, Args, Ctx, Hints, Tool, ToolError};
use coremcp_store::plugin::{json_text, json_value, now, TxError};
use coremcp_store::StoreError;
use serde_json::Value;

use crate::args::{
    Address, Clearable, CoreMcpUrl, Description, DockerEndpoint, HostName, Os, Role,
};
use crate::common::{check_expected, expected, guarded_update, not_found, SERVICE};
use crate::host;

pub const TOOL: Tool = Tool::new(
    "registry_host_update",
    "Patch a host: only the fields you pass change. Clearing core_mcp_url (\"\") \
        or disabling the host (enabled: false) removes it from the forwarding targets. roles \
        replaces the whole list. With expected_version, a host that changed since you read it \
        is a conflict naming its current version. A patch that changes nothing is a no-op. \
        Returns the host.",
    &typed(handler),
)
.hints(Hints::IDEMPOTENT);

#[derive(Debug, Args)]
pub struct Update {
    /// the host's name
    #[arg(min_len = 1)]
    name: HostName,
    /// new DNS name or IP address
    #[arg(min_len = 1, max_len = 253)]
    address: Option<Address>,
    /// new http(s) URL of its Core MCP ("" clears it)
    #[arg(max_len = 2000)]
    core_mcp_url: Option<Clearable<CoreMcpUrl>>,
    /// new unix://, npipe://, ssh:// or tcp:// endpoint ("" clears it)
    #[arg(max_len = 2000)]
    docker_endpoint: Option<Clearable<DockerEndpoint>>,
    /// operating system
    os: Option<Os>,
    /// the new list of roles (replaces the old one; [] clears it)
    #[arg(max_items = 32)]
    roles: Option<Vec<Role>>,
    /// false disables the host (and stops forwarding to it)
    enabled: Option<bool>,
    /// new description ("" clears it)
    #[arg(max_len = 4000)]
    description: Option<Clearable<Description>>,
    /// the version you read; refused with conflict if the host is at another
    #[arg(min = 1)]
    expected_version: Option<u64>,
}

/// The new value of a clearable text field: the old one unless the patch names one.
fn patched<T>(
    old: &Option<String>,
    patch: &Option<Clearable<T>>,
    text: fn(&T) -> &str,
) -> Option<String> {
    match patch {
        None => old.clone(),
        Some(patch) => patch.value().map(|v| text(v).to_owned()),
    }
}

fn handler(_: &Ctx<'_>, args: Update) -> Result<Value, ToolError> {
    let name = args.name.as_str();
    let roles = args.roles.map(host::roles).transpose()?;
    let expected = expected(args.expected_version);
    let what = format!("host \"{name}\"");
    SERVICE.run(|tx| -> Result<Value, TxError> {
        let row = host::by_name(tx, name)?.ok_or_else(|| {
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
        let new = (
            args.address
                .as_ref()
                .map_or_else(|| old.0.clone(), |a| a.0.clone()),
            patched(&old.1, &args.core_mcp_url, CoreMcpUrl::as_str),
            patched(&old.2, &args.docker_endpoint, DockerEndpoint::as_str),
            args.os
                .map_or_else(|| old.3.clone(), |v| Some(v.as_str().to_owned())),
            roles
                .as_ref()
                .map_or_else(|| old.4.clone(), |r| Value::from(r.clone())),
            args.enabled.unwrap_or(old.5),
            patched(&old.6, &args.description, Description::as_str),
        );
        if new == old {
            return Ok(host::json(&row)?);
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
            host::write_roles(tx, &id, roles)?;
        }
        let row = host::by_name(tx, name)?.ok_or_else(|| StoreError::NotFound(name.to_owned()))?;
        Ok(host::json(&row)?)
    })
}
