//! The Notepad group (TOOLS.md §5): short notes by scope and key in the NervHQ store, with
//! versions (`expected_version`), expiry (`ttl_s`) and bulk writes.
//!
//! Invariants:
//! - An expired note is absent to every tool before any cleanup runs: reads skip it, a write
//!   over it starts again at version 1, and `expected_version` sees version 0.
//! - Scopes and keys follow the grammar of `coremcp_nervhq::grammar`; values are at most 16 KiB.
//! - Every write is one transaction; a refused call writes nothing.

mod tools;

use coremcp_plugin_api::sdk::Group;

/// The group table, in catalog order.
pub static GROUP: Group = Group {
    id: "notepad",
    version: env!("CARGO_PKG_VERSION"),
    tools: &[
        tools::notepad_get::TOOL,
        tools::notepad_set::TOOL,
        tools::notepad_delete::TOOL,
        tools::notepad_list::TOOL,
        tools::notepad_bulk_set::TOOL,
        tools::notepad_cleanup::TOOL,
    ],
    init: None,
};

coremcp_plugin_api::export_plugin!(GROUP);

#[cfg(test)]
mod tests {
    use super::GROUP;
    use coremcp_plugin_api::Runs;

    #[test]
    fn the_table_follows_the_catalog_and_every_schema_is_a_closed_object() {
        let names: Vec<&str> = GROUP.tools.iter().map(|t| t.name).collect();
        assert_eq!(
            names,
            [
                "notepad_get",
                "notepad_set",
                "notepad_delete",
                "notepad_list",
                "notepad_bulk_set",
                "notepad_cleanup"
            ]
        );
        coremcp_plugin_api::sdk::check_table(&GROUP).expect("a well-formed table");
        for tool in GROUP.tools {
            assert!(tool.remote_host, "{}", tool.name);
            assert_eq!(tool.runs, Runs::Forwarded, "{}", tool.name);
            assert_eq!(
                tool.annotations.open_world_hint,
                Some(false),
                "{}",
                tool.name
            );
        }
        let hints = |i: usize| {
            let a = GROUP.tools[i].annotations;
            (a.read_only_hint, a.destructive_hint, a.idempotent_hint)
        };
        assert_eq!(hints(0), (Some(true), Some(false), Some(true)));
        assert_eq!(hints(1), (Some(false), Some(false), Some(true)));
        assert_eq!(hints(2), (Some(false), Some(true), Some(true)));
        assert_eq!(hints(3), (Some(true), Some(false), Some(true)));
        assert_eq!(hints(4), (Some(false), Some(true), Some(true)));
        assert_eq!(hints(5), (Some(false), Some(true), Some(false)));
    }
}
