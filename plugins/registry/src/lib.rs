//! The Registry group: the directory of themes, projects, sources and hosts, plus stored code
//! snapshots (docs/tools.md). Its hosts with a Core MCP address are what `remote_host` resolves
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

use coremcp_plugin_sdk::Group;

use tools::{host, project, snapshot as snapshots, source, theme};

/// The group table, in catalog order.
pub static GROUP: Group = Group {
    catalog: &coremcp_plugin_sdk::catalog::REGISTRY,
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

coremcp_plugin_sdk::export_plugin!(GROUP);

#[cfg(test)]
mod tests {
    use super::GROUP;
    use coremcp_plugin_sdk::Hints;

    #[test]
    fn every_tool_follows_the_catalog_with_honest_hints() {
        coremcp_plugin_sdk::testing::assert_group(&GROUP);
        for tool in GROUP.tools {
            let name = tool.name;
            let schema = tool.handler.schema();
            let properties = schema["properties"].as_object().expect(name);
            let h = tool.hints;
            if name.ends_with("_list") || name.ends_with("_get") {
                assert_eq!(h, Hints::READ, "{name}");
            } else {
                assert!(!h.read_only, "{name}");
                assert_eq!(h.idempotent, name.ends_with("_update"), "{name}");
                assert_eq!(h.destructive, name == "registry_snapshot_save", "{name}");
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
