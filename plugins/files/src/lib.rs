//! The Code and files group: `files_search` (ripgrep-style content search), `files_list`
//! (directory listing and trees), `code_snapshot` (tree-sitter structural outline) and
//! `sql_query` (PostgreSQL, read-only by default).
//!
//! Invariants: every path argument resolves inside the configured roots
//! ([`coremcp_plugin_kit::Roots`]); walks never follow symlinks, so they never leave the root they
//! start from; `.gitignore` rules are honoured everywhere; output order is deterministic (paths
//! sorted component by component, then by position).

#[cfg(test)]
mod testing;
mod tools;
mod walk;

use coremcp_plugin_sdk::{catalog, Group};

/// The group table, in catalog order.
pub static GROUP: Group = Group::new(
    &catalog::FILES,
    env!("CARGO_PKG_VERSION"),
    &[
        tools::files_search::TOOL,
        tools::files_list::TOOL,
        tools::code_snapshot::TOOL,
        tools::sql_query::TOOL,
    ],
);

coremcp_plugin_sdk::export_plugin!(GROUP);

#[cfg(test)]
mod tests {
    #[test]
    fn the_table_follows_the_catalog() {
        coremcp_plugin_sdk::testing::assert_group(&super::GROUP);
    }
}
