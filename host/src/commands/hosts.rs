//! `coremcp hosts [--json]`: the Registry hosts that accept forwarded calls (`remote_host`
//! targets), as the host resolves them, and whether each is a peer the operator configured
//! (`--peer`, a relay or a route: it is sent the relay token) or not (called without one).

use std::process::ExitCode;
use std::sync::Arc;

use serde_json::json;

use super::Failure;
use crate::config::Config;
use crate::registry;
use coremcp_engine::PluginSet;

pub fn run(config: Config, as_json: bool) -> Result<ExitCode, Failure> {
    let timeout = config.call_timeout;
    let plugins = Arc::new(PluginSet::discover(&config.engine()).map_err(Failure::usage)?);
    let hosts = registry::forwarding_targets(&plugins, timeout).map_err(|e| match e {
        registry::LookupError::NotSelected => Failure::usage(e.to_string()),
        _ => Failure::runtime(e.to_string()),
    })?;
    let peers = coremcp_relay::trusted(&config.relay);
    let text = if as_json {
        let items: Vec<_> = hosts
            .iter()
            .map(|h| json!({"name": h.name, "core_mcp_url": h.url, "peer": peers.allows(&h.url)}))
            .collect();
        format!("{}\n", json!({ "hosts": items }))
    } else if hosts.is_empty() {
        "no Registry host accepts forwarded calls (registry_host_add with a core_mcp_url)\n"
            .to_owned()
    } else {
        let width = hosts.iter().map(|h| h.name.len()).max().unwrap_or(0);
        hosts
            .iter()
            .map(|h| {
                let how = match peers.allows(&h.url) {
                    true => "peer: sent the relay token",
                    false => "no token (not a --peer)",
                };
                format!("{:width$}  {}  ({how})\n", h.name, h.url)
            })
            .collect()
    };
    super::print(&text).map_err(|e| Failure::runtime(format!("stdout: {e}")))?;
    Ok(ExitCode::SUCCESS)
}
