//! `registry_host_add`: a new host; with a `core_mcp_url` it becomes a `remote_host` target.

use coremcp_plugin_sdk::prelude::*;
use coremcp_store::plugin::json_text;

use crate::args::{Address, CoreMcpUrl, Description, DockerEndpoint, HostName, Os, Role};
use crate::common::SERVICE;
use crate::host::{self, HOST};

pub const TOOL: Tool = Tool::typed("registry_host_add", &typed(handler)).hints(Hints::ADD);

/// Add a host. With core_mcp_url it becomes a remote_host target; docker_endpoint lets the Docker
/// tools reach it.
#[derive(Debug, Args)]
pub struct Add {
    /// ^[a-z0-9][a-z0-9-]{0,62}$, e.g. devbox-1
    #[arg(min_len = 1)]
    name: HostName,
    /// DNS name or IP
    #[arg(min_len = 1, max_len = 253)]
    address: Address,
    /// its Core MCP, e.g. http://devbox-1:7070/mcp
    #[arg(max_len = 2000)]
    core_mcp_url: Option<Clearable<CoreMcpUrl>>,
    /// Docker endpoint, unix:// or tcp://
    #[arg(max_len = 2000)]
    docker_endpoint: Option<Clearable<DockerEndpoint>>,
    /// operating system
    os: Option<Os>,
    /// e.g. ["gpu"]
    #[arg(max_items = 32)]
    roles: Vec<Role>,
    /// what the host is for
    #[arg(max_len = 4000)]
    description: Option<Description>,
}

fn handler(_: &Ctx<'_>, args: Add) -> Result<Value, ToolError> {
    let roles = host::roles(args.roles)?;
    // An empty optional URL is the same as leaving it out.
    let columns = [
        ("name", (&args.name).into()),
        ("address", (&args.address).into()),
        (
            "core_mcp_url",
            args.core_mcp_url.as_ref().and_then(Clearable::value).into(),
        ),
        (
            "docker_endpoint",
            args.docker_endpoint
                .as_ref()
                .and_then(Clearable::value)
                .into(),
        ),
        ("os", args.os.into()),
        ("roles", json_text(&Value::from(roles.clone())).into()),
        ("enabled", true.into()),
        ("description", args.description.as_ref().into()),
    ];
    SERVICE.run(|tx| {
        let row = HOST.add(tx, &[args.name.as_str()], &columns)?;
        host::write_roles(tx, &row.get_text("id")?, &roles)?;
        Ok(HOST.json(&row)?)
    })
}
