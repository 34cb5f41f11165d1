//! Which daemon a call talks to: the Registry host it names (its `docker_endpoint`, read
//! through the host's `registry.hosts` operation), else this machine's daemon.

use coremcp_plugin_sdk::{codes, host_call, Ctx, ToolError};
use serde_json::{json, Value};

use crate::Endpoint;

/// A daemon a call reaches: the endpoint, and the Registry host it belongs to (when named).
#[derive(Debug, Clone)]
pub struct Target {
    pub host: Option<String>,
    pub endpoint: Endpoint,
}

/// The daemon of Registry host `host`, or the local one when `host` is `None`.
pub fn resolve(ctx: &Ctx<'_>, host: Option<&str>) -> Result<Target, ToolError> {
    let Some(name) = host else {
        return Ok(Target {
            host: None,
            endpoint: Endpoint::local()?,
        });
    };
    let hosts = registry_hosts(ctx, json!({"name": name, "status": "all"}))?;
    let Some(found) = hosts.first() else {
        return Err(ToolError::new(
            codes::NOT_FOUND,
            format!(
                "host: no Registry host is named \"{name}\" (registry_host_list shows them; leave \
                 host out for this machine's daemon)"
            ),
        ));
    };
    target_of(found)
}

/// A Registry host with a `docker_endpoint`: its name, and the endpoint or why it cannot be
/// used.
pub type DockerHost = (String, Result<Endpoint, ToolError>);

/// Every Registry host with a `docker_endpoint` (only the enabled ones when `enabled_only`).
pub fn docker_hosts(ctx: &Ctx<'_>, enabled_only: bool) -> Result<Vec<DockerHost>, ToolError> {
    let status = if enabled_only { "enabled" } else { "all" };
    let hosts = registry_hosts(ctx, json!({"has_docker": true, "status": status}))?;
    Ok(hosts
        .iter()
        .map(|h| {
            let name = h["name"].as_str().unwrap_or_default().to_owned();
            (name, target_of(h).map(|t| t.endpoint))
        })
        .collect())
}

/// One listed host as a target.
fn target_of(host: &Value) -> Result<Target, ToolError> {
    let name = host["name"].as_str().unwrap_or_default();
    let Some(endpoint) = host["docker_endpoint"].as_str() else {
        return Err(ToolError::new(
            codes::NOT_CONFIGURED,
            format!(
                "host: Registry host \"{name}\" has no docker_endpoint (set one with \
                 registry_host_update)"
            ),
        ));
    };
    Ok(Target {
        host: Some(name.to_owned()),
        endpoint: Endpoint::parse(endpoint)?,
    })
}

fn registry_hosts(ctx: &Ctx<'_>, filter: Value) -> Result<Vec<Value>, ToolError> {
    let timeout_ms = ctx.remaining().as_millis().min(10_000) as u64;
    let answer = host_call(
        "registry.hosts",
        &json!({"filter": filter, "timeout_ms": timeout_ms}),
    )
    .map_err(|e| {
        ToolError::new(
            e.code.as_str(),
            format!(
                "host: the Registry's hosts could not be read: {}",
                e.message
            ),
        )
    })?;
    match answer.get("hosts") {
        Some(Value::Array(hosts)) => Ok(hosts.clone()),
        _ => Err(ToolError::new(
            codes::INTERNAL,
            "host: the host's registry.hosts answer has no \"hosts\" array",
        )),
    }
}
