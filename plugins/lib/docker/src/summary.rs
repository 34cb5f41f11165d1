//! Listing containers, and the summary of one that `docker_container_list` and
//! `stale_containers_find` both answer with: the same fields, in the same order, from one
//! function.

use std::collections::{BTreeMap, HashMap};

use bollard::models::ContainerSummary;
use bollard::query_parameters::ListContainersOptions;
use coremcp_plugin_sdk::{time, Ctx};
use serde_json::{json, Value};

use crate::{exchange, DockerError, Endpoint};

/// The label Compose (v1 and v2) puts on a project's containers.
pub const COMPOSE_PROJECT: &str = "com.docker.compose.project";

/// The daemon's containers matching `filters` (Engine API filter names: `label`, `name`,
/// `status`, …), every state when `all`.
pub fn list(
    ctx: &Ctx<'_>,
    endpoint: &Endpoint,
    all: bool,
    filters: HashMap<String, Vec<String>>,
) -> Result<Vec<ContainerSummary>, DockerError> {
    let docker = crate::daemon(ctx, endpoint)?;
    let options = ListContainersOptions {
        all,
        filters: (!filters.is_empty()).then_some(filters),
        ..Default::default()
    };
    exchange(ctx, endpoint, "", async move {
        docker.list_containers(Some(options)).await
    })
}

/// The short id the `docker` CLI shows.
pub fn short_id(id: &str) -> &str {
    id.get(..12).unwrap_or(id)
}

/// One container as the tools show it. `created` is RFC 3339; labels are sorted by key.
pub fn summary(c: &ContainerSummary) -> Value {
    let labels: BTreeMap<&str, &str> = c
        .labels
        .iter()
        .flatten()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let name = c
        .names
        .iter()
        .flatten()
        .next()
        .map(|n| n.trim_start_matches('/'));
    let ports: Vec<Value> = c
        .ports
        .iter()
        .flatten()
        .map(|p| {
            let mut port = json!({
                "private": p.private_port,
                "type": p.typ.map(|t| t.to_string()).unwrap_or_else(|| "tcp".into()),
            });
            if let Some(public) = p.public_port {
                port["public"] = json!(public);
            }
            if let Some(ip) = p.ip.as_deref().filter(|ip| !ip.is_empty()) {
                port["ip"] = json!(ip);
            }
            port
        })
        .collect();
    let mut out = json!({
        "id": short_id(c.id.as_deref().unwrap_or_default()),
        "name": name.unwrap_or_default(),
        "image": c.image.as_deref().unwrap_or_default(),
        "state": state(c),
        "status": c.status.as_deref().unwrap_or_default(),
        "created": time::rfc3339(c.created.unwrap_or_default()),
        "ports": ports,
        "labels": labels,
    });
    if let Some(project) = labels.get(COMPOSE_PROJECT) {
        out["compose_project"] = json!(project);
    }
    out
}

/// The container's state word (`running`, `exited`, …).
pub fn state(c: &ContainerSummary) -> String {
    c.state.map(|s| s.to_string()).unwrap_or_default()
}
