//! `registry_host_list`: hosts by name, filtered, keyset-paged; the host binary reads its
//! forwarding targets with it.

use crate::args::{HostName, HostsShown};
use crate::common::{Query, SERVICE};
use crate::host::HOST;
use coremcp_plugin_sdk::prelude::*;

pub const TOOL: Tool = Tool::typed("registry_host_list", &typed(handler)).hints(Hints::READ);

/// List hosts by name. has_core_mcp: true lists the remote_host targets. Default: enabled.
#[derive(Debug, Args)]
pub struct List {
    /// exact name
    name: Option<HostName>,
    /// with this role
    #[arg(min_len = 1)]
    role: Option<String>,
    /// with (true) or without a core_mcp_url
    has_core_mcp: Option<bool>,
    /// with (true) or without a docker_endpoint
    has_docker: Option<bool>,
    /// default enabled
    #[arg(default = HostsShown::Enabled)]
    status: HostsShown,
    /// substring of name or address
    #[arg(min_len = 1, max_len = 200)]
    query: Option<String>,
    #[arg(flatten)]
    page: Paging,
}

fn handler(_: &Ctx<'_>, args: List) -> Result<Value, ToolError> {
    let mut q = Query::new();
    q.eq_opt("h.name", args.name.as_ref().map(HostName::as_str));
    if let Some(role) = &args.role {
        let p = q.bind(role.as_str());
        q.and(format!(
            "EXISTS (SELECT 1 FROM registry_host_role r WHERE r.host_id = h.id AND r.role = {p})"
        ));
    }
    for (wanted, column) in [
        (args.has_core_mcp, "h.core_mcp_url"),
        (args.has_docker, "h.docker_endpoint"),
    ] {
        match wanted {
            Some(true) => q.and(format!("{column} IS NOT NULL")),
            Some(false) => q.and(format!("{column} IS NULL")),
            None => {}
        }
    }
    match args.status {
        HostsShown::Enabled => q.eq("h.enabled", true),
        HostsShown::Disabled => q.eq("h.enabled", false),
        HostsShown::All => {}
    }
    q.contains(&["h.name", "h.address"], args.query.as_deref());
    SERVICE.read(|tx| HOST.list(tx, &q, &args.page, None))
}
