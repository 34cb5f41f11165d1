//! `registry_host_update`: patch a host; clearing `core_mcp_url` or disabling it removes it
//! from the forwarding targets.

use coremcp_plugin_sdk::prelude::*;
use coremcp_store::plugin::{json_text, json_value};

use crate::args::{Address, CoreMcpUrl, Description, DockerEndpoint, HostName, Os, Role};
use crate::common::SERVICE;
use crate::host::{self, HOST};

pub const TOOL: Tool =
    Tool::typed("registry_host_update", &typed(handler)).hints(Hints::IDEMPOTENT);

/// Patch a host: only given fields change. Clearing core_mcp_url or enabled: false stops forwarding
/// to it.
#[derive(Debug, Args)]
pub struct Update {
    /// the host's name
    #[arg(min_len = 1)]
    name: HostName,
    /// new DNS name or IP address
    #[arg(min_len = 1, max_len = 253)]
    address: Option<Address>,
    /// Core MCP URL ("" clears)
    #[arg(max_len = 2000)]
    core_mcp_url: Option<Clearable<CoreMcpUrl>>,
    /// Docker endpoint ("" clears)
    #[arg(max_len = 2000)]
    docker_endpoint: Option<Clearable<DockerEndpoint>>,
    /// operating system
    os: Option<Os>,
    /// replaces all
    #[arg(max_items = 32)]
    roles: Option<Vec<Role>>,
    /// false disables it
    enabled: Option<bool>,
    /// "" clears it
    #[arg(max_len = 4000)]
    description: Option<Clearable<Description>>,
    /// version read
    #[arg(min = 1)]
    expected_version: Option<u64>,
}

fn handler(_: &Ctx<'_>, args: Update) -> Result<Value, ToolError> {
    let roles = args.roles.map(host::roles).transpose()?;
    SERVICE.run(|tx| {
        HOST.update(
            tx,
            "name",
            &[args.name.as_str()],
            args.expected_version,
            |tx, row| {
                // Compared as JSON: the store may keep another spelling of the same list.
                let old = json_value(row.get_opt_text("roles")?);
                let new_roles = roles
                    .as_ref()
                    .map(|r| Value::from(r.clone()))
                    .filter(|r| *r != old);
                if let Some(roles) = roles.as_ref().filter(|_| new_roles.is_some()) {
                    // Within the patch's transaction: a patch that fails writes no roles either.
                    host::write_roles(tx, &row.get_text("id")?, roles)?;
                }
                Ok(vec![
                    ("address", args.address.as_ref().map(Into::into)),
                    (
                        "core_mcp_url",
                        args.core_mcp_url.as_ref().map(|c| c.value().into()),
                    ),
                    (
                        "docker_endpoint",
                        args.docker_endpoint.as_ref().map(|c| c.value().into()),
                    ),
                    ("os", args.os.map(Into::into)),
                    ("roles", new_roles.map(|r| json_text(&r).into())),
                    ("enabled", args.enabled.map(Into::into)),
                    (
                        "description",
                        args.description.as_ref().map(|c| c.value().into()),
                    ),
                ])
            },
        )
    })
}
