//! `registry_host_add`: a new host; with a `core_mcp_url` it becomes a `remote_host` target.

use coremcp_plugin_sdk::{typed, Args, Ctx, Hints, Tool, ToolError};
use coremcp_store::plugin::{json_text, new_id, now};
use coremcp_store::StoreError;
use serde_json::Value;

use crate::args::{
    Address, Clearable, CoreMcpUrl, Description, DockerEndpoint, HostName, Os, Role,
};
use crate::common::{duplicate, SERVICE};
use crate::host;

pub const TOOL: Tool = Tool::new(
    "registry_host_add",
    "Add a host with its Core MCP address. A host with core_mcp_url becomes a \
        remote_host and forwarding target at the next host refresh; docker_endpoint lets the \
        Docker tools reach it. An existing name is a conflict. Returns the host (enabled).",
    &typed(handler),
)
.hints(Hints::ADD);

#[derive(Debug, Args)]
pub struct Add {
    /// ^[a-z0-9][a-z0-9-]{0,62}$, e.g. devbox-1
    #[arg(min_len = 1)]
    name: HostName,
    /// DNS name or IP address (no scheme or port)
    #[arg(min_len = 1, max_len = 253)]
    address: Address,
    /// absolute http(s) URL of its Core MCP, e.g. http://devbox-1:7070/mcp (no credentials)
    #[arg(max_len = 2000)]
    core_mcp_url: Option<Clearable<CoreMcpUrl>>,
    /// unix://, npipe://, ssh:// or tcp:// endpoint of its Docker daemon
    #[arg(max_len = 2000)]
    docker_endpoint: Option<Clearable<DockerEndpoint>>,
    /// operating system
    os: Option<Os>,
    /// free-form roles, e.g. ["build", "gpu"]
    #[arg(max_items = 32)]
    roles: Vec<Role>,
    /// what the host is for
    #[arg(max_len = 4000)]
    description: Option<Description>,
}

fn handler(_: &Ctx<'_>, args: Add) -> Result<Value, ToolError> {
    let name = args.name.as_str();
    // An empty optional URL is the same as leaving it out.
    let core_mcp_url = args.core_mcp_url.as_ref().and_then(Clearable::value);
    let docker_endpoint = args.docker_endpoint.as_ref().and_then(Clearable::value);
    let roles = host::roles(args.roles)?;
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
                args.address.as_str().into(),
                core_mcp_url.map(CoreMcpUrl::as_str).into(),
                docker_endpoint.map(DockerEndpoint::as_str).into(),
                args.os.map(Os::as_str).into(),
                json_text(&Value::from(roles.clone())).into(),
                true.into(),
                args.description.as_ref().map(Description::as_str).into(),
                now.into(),
            ],
        )?;
        if inserted == 0 {
            let version = host::by_name(tx, name)?.map_or(Ok(0), |r| r.get_i64("version"))?;
            return Err(duplicate(
                &format!("host \"{name}\""),
                version,
                "change it with registry_host_update",
            )
            .into());
        }
        host::write_roles(tx, &id, &roles)?;
        let row = host::by_name(tx, name)?.ok_or_else(|| StoreError::NotFound(name.to_owned()))?;
        Ok(host::json(&row)?)
    })
}
