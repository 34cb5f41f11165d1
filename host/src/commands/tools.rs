//! `coremcp tools [--json]`: the tool list a session would see, with each tool's group, route
//! and availability.

use std::process::ExitCode;

use serde_json::json;

use crate::cli::Failure;
use crate::config::Config;
use crate::plugins::loader::LoadError;
use crate::plugins::{catalog, PluginSet};

struct Row {
    name: String,
    group: String,
    route: &'static str,
    /// `None` when the tool can be called.
    unavailable: Option<String>,
}

pub fn run(config: Config, as_json: bool) -> Result<ExitCode, Failure> {
    let plugins = std::sync::Arc::new(PluginSet::discover(&config).map_err(Failure::usage)?);
    plugins.load_installed();
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
                        unavailable: spec.feature.as_ref().filter(|f| !f.enabled).map(|f| {
                            format!("not in this build: needs the \"{}\" feature", f.name)
                        }),
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
                    });
                }
            }
            other => {
                let reason = match other {
                    Some(Err(LoadError::NotInstalled { .. })) | None if !slot.installed() => {
                        format!(
                            "not installed (no {})",
                            crate::plugins::library_file(&slot.id)
                        )
                    }
                    Some(Err(e)) => format!("plugin failed to load: {e}"),
                    _ => "not loaded".to_owned(),
                };
                for tool in slot.catalog.map_or(&[][..], |g| g.tools) {
                    let reason = match catalog::feature_of(tool) {
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
                    });
                }
            }
        }
    }
    let text = if as_json {
        let list: Vec<_> = rows
            .iter()
            .map(|r| {
                let mut v = json!({"name": r.name, "group": r.group, "route": r.route,
                                   "available": r.unavailable.is_none()});
                if let Some(reason) = &r.unavailable {
                    v["reason"] = json!(reason);
                }
                v
            })
            .collect();
        format!("{}\n", serde_json::Value::from(list))
    } else {
        let mut text = format!(
            "{:<26} {:<12} {:<10} {}\n",
            "TOOL", "GROUP", "ROUTE", "AVAILABILITY"
        );
        for r in &rows {
            text.push_str(&format!(
                "{:<26} {:<12} {:<10} {}\n",
                r.name,
                r.group,
                r.route,
                r.unavailable.as_deref().unwrap_or("available")
            ));
        }
        let available = rows.iter().filter(|r| r.unavailable.is_none()).count();
        text.push_str(&format!("{available} of {} tools available\n", rows.len()));
        text
    };
    super::print(&text).map_err(|e| Failure::runtime(format!("stdout: {e}")))?;
    Ok(ExitCode::SUCCESS)
}
