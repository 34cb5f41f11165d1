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

use coremcp_plugin_api::sdk::Group;

/// The group table, in catalog order.
pub static GROUP: Group = Group {
    id: "files",
    version: env!("CARGO_PKG_VERSION"),
    tools: &[
        tools::files_search::TOOL,
        tools::files_list::TOOL,
        tools::code_snapshot::TOOL,
        tools::sql_query::TOOL,
    ],
    init: None,
};

coremcp_plugin_api::export_plugin!(GROUP);

#[cfg(test)]
mod tests {
    use super::GROUP;

    #[test]
    fn the_table_follows_the_catalog_and_every_schema_is_a_closed_object() {
        let names: Vec<&str> = GROUP.tools.iter().map(|t| t.name).collect();
        assert_eq!(
            names,
            ["files_search", "files_list", "code_snapshot", "sql_query"]
        );
        for tool in GROUP.tools {
            let schema: serde_json::Value =
                serde_json::from_str(tool.input_schema).expect("schema is JSON");
            assert_eq!(schema["type"], "object", "{}", tool.name);
            assert_eq!(schema["additionalProperties"], false, "{}", tool.name);
            assert!(
                schema["properties"].get("remote_host").is_none(),
                "{}",
                tool.name
            );
            assert!(tool.remote_host, "{}", tool.name);
        }
    }
}
