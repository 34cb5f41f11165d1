//! The Registry group: the directory of themes, projects, sources and hosts, plus stored code
//! snapshots (TOOLS.md §1). Its hosts with a Core MCP address are what `remote_host` resolves
//! against, so the host binary reads them through `registry_host_list`.
//!
//! The data lives in the store layer ([`coremcp_store`]): embedded SQLite under the data dir by
//! default, or schema `registry` of a shared PostgreSQL; the same SQL serves both.
//!
//! Invariants:
//! - No Registry tool takes `remote_host`: the Registry is the directory that resolves it, and
//!   letting its writes go to another host's Core MCP would invite a split brain.
//! - Nothing is ever deleted but old snapshots (retention): records are archived or disabled,
//!   because Scrolls, Seele and Session refer to Registry keys.
//! - Keys are permanent; every patch is optimistic (`expected_version`) and bumps `version`
//!   only when something changed.
//! - Records and lists never carry a `null`: absent optional fields are left out.

mod common;
mod schema;
mod snapshot;
mod tools;
mod validate;

use coremcp_plugin_api::sdk::Group;

use tools::{host, project, snapshot as snapshots, source, theme};

/// The group table, in catalog order.
pub static GROUP: Group = Group {
    id: "registry",
    version: env!("CARGO_PKG_VERSION"),
    tools: &[
        theme::LIST,
        theme::ADD,
        theme::UPDATE,
        project::LIST,
        project::ADD,
        project::UPDATE,
        source::LIST,
        source::ADD,
        source::UPDATE,
        host::LIST,
        host::ADD,
        host::UPDATE,
        snapshots::SAVE,
        snapshots::GET,
    ],
    init: None,
};

coremcp_plugin_api::export_plugin!(GROUP);

#[cfg(test)]
mod tests {
    use super::GROUP;
    use coremcp_plugin_api::{Annotations, Runs};
    use serde_json::Value;

    #[test]
    fn the_table_follows_the_catalog() {
        let names: Vec<&str> = GROUP.tools.iter().map(|t| t.name).collect();
        assert_eq!(
            names,
            [
                "registry_theme_list",
                "registry_theme_add",
                "registry_theme_update",
                "registry_project_list",
                "registry_project_add",
                "registry_project_update",
                "registry_source_list",
                "registry_source_add",
                "registry_source_update",
                "registry_host_list",
                "registry_host_add",
                "registry_host_update",
                "registry_snapshot_save",
                "registry_snapshot_get",
            ]
        );
        assert_eq!(GROUP.id, "registry");
    }

    #[test]
    fn every_tool_runs_on_the_registry_without_remote_host_and_with_a_closed_schema() {
        coremcp_plugin_api::sdk::check_table(&GROUP).expect("a well-formed table");
        for tool in GROUP.tools {
            let name = tool.name;
            assert_eq!(tool.runs, Runs::Registry, "{name}");
            assert!(!tool.remote_host, "{name}");
            assert!(tool.feature.is_none(), "{name}");
            let schema: Value = serde_json::from_str(tool.input_schema).expect(name);
            let properties = schema["properties"].as_object().expect(name);
            let annotations = tool.annotations;
            assert_eq!(annotations.open_world_hint, Some(false), "{name}");
            if name.ends_with("_list") || name.ends_with("_get") {
                assert_eq!(annotations, Annotations::READ_ONLY, "{name}");
            } else {
                assert_eq!(annotations.read_only_hint, Some(false), "{name}");
                assert_eq!(
                    annotations.idempotent_hint,
                    Some(name.ends_with("_update")),
                    "{name}"
                );
                assert_eq!(
                    annotations.destructive_hint,
                    Some(name == "registry_snapshot_save"),
                    "{name}"
                );
            }
            if name.ends_with("_list") {
                for arg in ["query", "limit", "cursor"] {
                    assert!(properties.contains_key(arg), "{name} takes {arg}");
                }
            }
            if name.ends_with("_update") {
                assert!(properties.contains_key("expected_version"), "{name}");
            }
        }
    }
}
