//! `docker_container_list`: a daemon's containers, running ones unless `all`, filtered by name,
//! labels or Compose project, each as [`coremcp_docker_api::summary::summary`] shows it.

use std::collections::HashMap;

use coremcp_docker_api::resolve;
use coremcp_docker_api::summary::{self, COMPOSE_PROJECT};
use coremcp_plugin_sdk::args::invalid;
use coremcp_plugin_sdk::budget::{fit_array, result_budget};
use coremcp_plugin_sdk::prelude::*;

use super::common::answer;

/// Containers kept of a daemon's list: more than one answer can show.
const KEPT: usize = 500;

pub const TOOL: Tool = Tool::typed("docker_container_list", &typed(handler)).hints(Hints::READ);

/// List containers (running unless all): id, name, image, state, status, ports, labels, Compose
/// project.
#[derive(Debug, Args)]
pub struct List {
    /// Registry host (default: here)
    #[arg(min_len = 1, max_len = 200)]
    host: Option<String>,
    /// stopped too
    #[arg(default)]
    all: bool,
    /// name substring
    #[arg(min_len = 1, max_len = 256)]
    name: Option<String>,
    /// key or key=value, all must match
    #[arg(max_items = 20)]
    label: Vec<String>,
    /// Compose project
    #[arg(min_len = 1, max_len = 256)]
    compose_project: Option<String>,
}

fn handler(ctx: &Ctx<'_>, args: List) -> Result<Value, ToolError> {
    let target = resolve(ctx, args.host.as_deref())?;
    let mut filters: HashMap<String, Vec<String>> = HashMap::new();
    if let Some(name) = &args.name {
        filters.insert("name".into(), vec![name.clone()]);
    }
    for (i, label) in args.label.iter().enumerate() {
        if label.is_empty() || label.len() > 512 || label.starts_with('=') {
            return Err(invalid(
                &format!("label[{i}]"),
                "a label filter is `key` or `key=value`",
            ));
        }
        filters
            .entry("label".into())
            .or_default()
            .push(label.clone());
    }
    if let Some(project) = &args.compose_project {
        filters
            .entry("label".into())
            .or_default()
            .push(format!("{COMPOSE_PROJECT}={project}"));
    }
    // Only what an answer can show is kept of the daemon's list; the rest is counted.
    let found = summary::list(ctx, &target.endpoint, args.all, filters, KEPT, |_| true)?;
    let containers: Vec<Value> = found.kept.iter().map(summary::summary).collect();
    let mut out = answer(&target, json!({"count": found.matched}));
    out["containers"] = Value::Array(containers);
    let dropped =
        fit_array(&mut out, "containers", result_budget()) + found.matched - found.kept.len();
    if dropped > 0 {
        out["more"] = dropped.into();
        out["hint"] =
            "the list was cut to fit; narrow it with name, label or compose_project".into();
    }
    Ok(out)
}
