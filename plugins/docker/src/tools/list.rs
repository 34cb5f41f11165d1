//! `docker_container_list`: a daemon's containers, running ones unless `all`, filtered by name,
//! labels or Compose project, each as [`coremcp_docker_api::summary::summary`] shows it, in
//! name order and paged by name (`cursor`), so a walk returns every container once.

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
    /// next_cursor
    cursor: Option<String>,
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
    let after = coremcp_plugin_sdk::page::cursor_key(args.cursor.as_deref())?;
    // Only what an answer can show is kept of the daemon's list, in name order after the
    // cursor; the rest is counted.
    let found = summary::list_by_name(
        ctx,
        &target.endpoint,
        args.all,
        filters,
        (KEPT, after.as_deref()),
        |_| true,
    )?;
    let names: Vec<&str> = found.kept.iter().map(summary::name_of).collect();
    let containers: Vec<Value> = found.kept.iter().map(summary::summary).collect();
    let mut out = answer(&target, json!({"count": found.matched}));
    out["containers"] = Value::Array(containers);
    // Room for the cursor and the counts beside the containers.
    let room = names.iter().map(|n| n.len()).max().unwrap_or(0) * 2 + 300;
    fit_array(&mut out, "containers", result_budget().saturating_sub(room));
    if out["containers"].as_array().is_some_and(Vec::is_empty) {
        // Never an empty page while containers remain: the first stays, and yields its own
        // largest parts if it must.
        if let Some(first) = found.kept.first() {
            out["containers"] = json!([summary::summary(first)]);
        }
    }
    let shown = out["containers"].as_array().map_or(0, Vec::len);
    let left = found.remaining - shown;
    if left > 0 {
        out["more"] = left.into();
        if let Some(last) = shown.checked_sub(1).and_then(|i| names.get(i)) {
            out["next_cursor"] = coremcp_plugin_sdk::page::encode_cursor(&[last]).into();
        }
        out["hint"] = "pass next_cursor as cursor for the next containers; narrow with name, \
                       label (com.docker.compose.service=NAME for one service) or \
                       compose_project"
            .into();
    }
    Ok(out)
}
