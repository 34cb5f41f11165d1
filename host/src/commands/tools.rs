//! `coremcp tools [--json]`: the tool list a session would see, with each tool's group, route
//! and availability, and where each routed group (`--route`) goes, Consul services looked up
//! now; upstream tools (after each server's first connection attempt) with who
//! may call them.

use std::process::ExitCode;

use serde_json::json;

use super::Failure;
use crate::config::Config;
use coremcp_engine::loader::LoadError;
use coremcp_engine::PluginSet;
use coremcp_upstream::hub::Upstreams;
use coremcp_wire::policy::Caller;

/// How long `coremcp tools` waits for the upstream servers' first connections (the handshake
/// limit, plus listing).
const SETTLE: std::time::Duration = std::time::Duration::from_secs(40);

struct Row {
    name: String,
    group: String,
    route: &'static str,
    /// `None` when the tool can be called.
    unavailable: Option<String>,
    /// For an upstream tool: who may call it (empty: nobody yet).
    granted_to: Option<Vec<String>>,
}

pub fn run(config: Config, as_json: bool) -> Result<ExitCode, Failure> {
    let plugins =
        std::sync::Arc::new(PluginSet::discover(&config.engine()).map_err(Failure::usage)?);
    plugins.load_installed();
    let mut rows = plugin_rows(&config, &plugins);
    rows.extend(upstream_rows(&config));
    let routes = routes(&config);
    let text = match as_json {
        true => json_text(&rows, &routes),
        false => table_text(&rows, &routes),
    };
    super::print(&text).map_err(|e| Failure::runtime(format!("stdout: {e}")))?;
    Ok(ExitCode::SUCCESS)
}

/// A row per tool of every group: routed by its plugin when it loaded, else each catalog
/// tool of the group with why it cannot be called.
fn plugin_rows(config: &Config, plugins: &std::sync::Arc<PluginSet>) -> Vec<Row> {
    let mut rows = Vec::new();
    for (index, slot) in plugins.slots().iter().enumerate() {
        match slot.state() {
            Some(Ok(loaded)) => {
                for spec in loaded.tools() {
                    if plugins.route(&spec.name) != Some(index) {
                        continue;
                    }
                    rows.push(Row {
                        name: spec.name.clone(),
                        group: slot.id.clone(),
                        route: spec.runs.as_str(),
                        unavailable: spec
                            .feature
                            .as_ref()
                            .filter(|f| !f.enabled)
                            .map(|f| format!("not in this build: needs the \"{}\" feature", f.name))
                            .or_else(|| {
                                config
                                    .grants
                                    .takes_away(&Caller::Stdio, &slot.id, &spec.name)
                                    .then(|| "taken away from stdio by a ! grant".to_owned())
                            }),
                        granted_to: None,
                    });
                }
                for tool in loaded.missing_catalog_tools(slot.catalog) {
                    rows.push(Row {
                        name: tool.to_owned(),
                        group: slot.id.clone(),
                        route: "-",
                        unavailable: Some(format!(
                            "not provided by the installed plugin (version {})",
                            loaded.library.manifest.plugin_version
                        )),
                        granted_to: None,
                    });
                }
            }
            other => {
                let reason = match other {
                    Some(Err(LoadError::NotInstalled { .. })) | None if !slot.installed() => {
                        format!(
                            "not installed (no {})",
                            coremcp_engine::library_file(&slot.id)
                        )
                    }
                    Some(Err(e)) => format!("plugin failed to load: {e}"),
                    _ => "not loaded".to_owned(),
                };
                for tool in slot.catalog.into_iter().flat_map(|g| g.names()) {
                    let reason = match coremcp_catalog::feature_of(tool) {
                        Some(f) if !slot.installed() => {
                            format!("not in this build: needs the \"{f}\" feature")
                        }
                        _ => reason.clone(),
                    };
                    rows.push(Row {
                        name: (*tool).to_owned(),
                        group: slot.id.clone(),
                        route: "-",
                        unavailable: Some(reason),
                        granted_to: None,
                    });
                }
            }
        }
    }
    rows
}

/// The rows as one JSON array (`--json`).
fn json_text(rows: &[Row], routes: &[(String, Vec<String>)]) -> String {
    let list: Vec<_> = rows
        .iter()
        .map(|r| {
            let mut v = json!({"name": r.name, "group": r.group, "route": r.route,
                               "available": r.unavailable.is_none()});
            if let Some(reason) = &r.unavailable {
                v["reason"] = json!(reason);
            }
            if let Some(who) = &r.granted_to {
                v["granted_to"] = json!(who);
            }
            if let Some((_, targets)) = routes.iter().find(|(g, _)| *g == r.group) {
                v["routed_to"] = json!(targets);
            }
            v
        })
        .collect();
    format!("{}\n", serde_json::Value::from(list))
}

/// The rows as a table, with the count available and each route.
fn table_text(rows: &[Row], routes: &[(String, Vec<String>)]) -> String {
    let mut text = format!(
        "{:<26} {:<12} {:<10} {}\n",
        "TOOL", "GROUP", "ROUTE", "AVAILABILITY"
    );
    for r in rows {
        let availability = match (&r.unavailable, &r.granted_to) {
            (Some(reason), _) => reason.clone(),
            (None, Some(who)) if who.is_empty() => {
                "not granted: nobody may call it yet (COREMCP_MCP_GRANTS)".to_owned()
            }
            (None, Some(who)) => format!("available to {}", who.join(", ")),
            (None, None) => "available".to_owned(),
        };
        text.push_str(&format!(
            "{:<26} {:<12} {:<10} {availability}\n",
            r.name, r.group, r.route,
        ));
    }
    let available = rows.iter().filter(|r| r.unavailable.is_none()).count();
    text.push_str(&format!("{available} of {} tools available", rows.len()));
    let ungranted = rows
        .iter()
        .filter(|r| r.unavailable.is_none() && r.granted_to.as_ref().is_some_and(Vec::is_empty))
        .count();
    if ungranted > 0 {
        text.push_str(&format!(
            "; {ungranted} upstream tool(s) nobody may call yet (default deny: grant them \
             with COREMCP_MCP_GRANTS)"
        ));
    }
    text.push('\n');
    for (group, targets) in routes {
        text.push_str(&format!("route {group}: {}\n", targets.join("; then ")));
    }
    text
}

/// The routed groups (`--route`), each with its targets in words, Consul services looked up
/// now.
fn routes(config: &Config) -> Vec<(String, Vec<String>)> {
    config
        .relay
        .routes
        .iter()
        .filter_map(|(group, _)| {
            let list = coremcp_relay::route_of(&config.relay, group)?;
            Some((
                group.clone(),
                list.describe(coremcp_relay::consul::LOOKUP_TIMEOUT),
            ))
        })
        .collect()
}

/// The upstream servers' tools, after each server's first connection attempt: who may call
/// each, or why a server has none.
fn upstream_rows(config: &Config) -> Vec<Row> {
    let settings = &config.upstream;
    if !settings.enabled || settings.servers.is_empty() {
        return Vec::new();
    }
    let hub = Upstreams::start(settings);
    hub.settle(SETTLE);
    let mut rows = Vec::new();
    for server in hub.servers() {
        let group = format!("mcp:{}", server.id());
        let tools = server.tools();
        if tools.published.is_empty() {
            let state = server.status();
            let reason = state["reason"].as_str().unwrap_or("no tools published");
            rows.push(Row {
                name: format!("mcp__{}__*", server.id()),
                group,
                route: "upstream",
                unavailable: Some(format!(
                    "{}: {reason}",
                    state["state"].as_str().unwrap_or("?")
                )),
                granted_to: None,
            });
            continue;
        }
        for definition in &tools.published {
            let Some(full) = definition["name"].as_str() else {
                continue;
            };
            let who = tools
                .names
                .get(full)
                .map(|tool| hub.grants().granted_to(server.id(), tool))
                .unwrap_or_default();
            rows.push(Row {
                name: full.to_owned(),
                group: group.clone(),
                route: "upstream",
                unavailable: None,
                granted_to: Some(who),
            });
        }
    }
    rows
}
