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
}
