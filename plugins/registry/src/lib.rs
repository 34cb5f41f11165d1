//! The Registry group: the directory of themes, projects, sources and hosts, plus stored code
//! snapshots in the format of [`coremcp_snapshot`] (docs/tools.md). Its hosts with a Core MCP
//! address are what `remote_host` resolves against, so the host binary reads them through
//! `registry_host_list`.
//!
//! Layout: `lib.rs` is the table, `tools/<tool>.rs` one tool each, and beside them what the
//! tools of one record type share (`theme.rs`, `project.rs`, `source.rs`, `host.rs`), the
//! argument types and their rules (`args.rs`) and what every tool shares (`common.rs`). Record
//! modules never import each other; only tools combine them.
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

mod args;
mod common;
mod host;
mod project;
mod schema;
mod source;
mod theme;
mod tools;

use coremcp_plugin_sdk::catalog;
use coremcp_plugin_sdk::prelude::*;

/// The group table, in catalog order.
pub static GROUP: Group = Group::new(
    &catalog::REGISTRY,
    env!("CARGO_PKG_VERSION"),
    &[
        tools::registry_theme_list::TOOL,
        tools::registry_theme_add::TOOL,
        tools::registry_theme_update::TOOL,
        tools::registry_project_list::TOOL,
        tools::registry_project_add::TOOL,
        tools::registry_project_update::TOOL,
        tools::registry_source_list::TOOL,
        tools::registry_source_add::TOOL,
        tools::registry_source_update::TOOL,
        tools::registry_host_list::TOOL,
        tools::registry_host_add::TOOL,
        tools::registry_host_update::TOOL,
        tools::registry_snapshot_save::TOOL,
        tools::registry_snapshot_get::TOOL,
    ],
);

coremcp_plugin_sdk::export_plugin!(GROUP);

#[cfg(test)]
mod tests {
    use coremcp_plugin_sdk::Hints;

    /// Lists and gets only read; adds create (not idempotent); updates patch (idempotent); a
    /// snapshot save may overwrite one (destructive). The schemas are pinned by the golden list.
    #[test]
    fn the_table_follows_the_catalog_with_honest_hints() {
        let record = [Hints::READ, Hints::ADD, Hints::IDEMPOTENT];
        let mut hints: Vec<Hints> = record.iter().copied().cycle().take(12).collect();
        hints.extend([Hints::DESTRUCTIVE, Hints::READ]);
        coremcp_plugin_sdk::testing::assert_hints(&super::GROUP, &hints);
    }

    /// The fields of the Registry's tools that write nothing that steers. Every other field
    /// is one that decides where code, credentials or calls go, and must be in its tool's
    /// catalog guard (`catalog::steering`), which over HTTP needs a grant naming the
    /// tool. A new field fails this test until it is put on one side or the other.
    const PLAIN: &[(&str, &[&str])] = &[
        (
            "registry_theme_list",
            &["key", "status", "query", "limit", "cursor"],
        ),
        ("registry_theme_add", &["key", "name", "description"]),
        (
            "registry_theme_update",
            &["key", "name", "description", "status", "expected_version"],
        ),
        (
            "registry_project_list",
            &[
                "key",
                "theme",
                "status",
                "include_sources",
                "query",
                "limit",
                "cursor",
            ],
        ),
        (
            "registry_project_add",
            &["key", "name", "theme", "description"],
        ),
        (
            "registry_project_update",
            &[
                "key",
                "name",
                "theme",
                "description",
                "status",
                "expected_version",
            ],
        ),
        (
            "registry_source_list",
            &[
                "project",
                "kind",
                "status",
                "include_checkouts",
                "query",
                "limit",
                "cursor",
            ],
        ),
        (
            "registry_source_add",
            &[
                "project",
                "name",
                "kind",
                "default_branch",
                "description",
                "metadata",
            ],
        ),
        (
            "registry_source_update",
            &[
                "source",
                "default_branch",
                "description",
                "metadata",
                "status",
                "expected_version",
                "checkout_branch",
            ],
        ),
        (
            "registry_host_list",
            &[
                "name",
                "role",
                "has_core_mcp",
                "has_docker",
                "status",
                "query",
                "limit",
                "cursor",
            ],
        ),
        (
            "registry_host_add",
            &["name", "address", "os", "roles", "description"],
        ),
        (
            "registry_host_update",
            &[
                "name",
                "address",
                "os",
                "roles",
                "enabled",
                "description",
                "expected_version",
            ],
        ),
        (
            "registry_snapshot_save",
            &["source", "commit", "branch", "snapshot", "replace"],
        ),
        (
            "registry_snapshot_get",
            &["source", "commit", "paths", "cursor", "detail", "max_chars"],
        ),
    ];

    #[test]
    fn every_field_that_steers_is_guarded_by_its_tool() {
        for tool in super::GROUP.tools {
            let schema = tool.handler.schema();
            let fields: Vec<&str> = schema["properties"]
                .as_object()
                .expect("properties")
                .keys()
                .map(String::as_str)
                .collect();
            let plain = PLAIN
                .iter()
                .find(|(name, _)| *name == tool.name)
                .map_or(&[][..], |(_, fields)| fields);
            let steering = coremcp_plugin_sdk::catalog::steering(tool.name);
            for field in &fields {
                assert!(
                    plain.contains(field) != steering.contains(field),
                    "{}.{field}: put it in PLAIN, or — when it decides where code, credentials \
                     or calls go — in the tool's WhenGiven guard in the catalog",
                    tool.name
                );
            }
            for field in plain.iter().chain(steering) {
                assert!(
                    fields.contains(field),
                    "{}.{field} is not a field",
                    tool.name
                );
            }
        }
    }
}
