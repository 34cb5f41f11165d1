//! The Notepad group (docs/tools.md): short notes by scope and key in the NervHQ store, with
//! versions (`expected_version`), expiry (`ttl_s`) and bulk writes.
//!
//! Invariants:
//! - An expired note is absent to every tool before any cleanup runs: reads skip it, a write
//!   over it starts again at version 1, and `expected_version` sees version 0.
//! - Scopes and keys follow the grammar of `coremcp_nervhq::grammar`; values are at most 16 KiB.
//! - Every write is one transaction; a refused call writes nothing.

mod tools;

use coremcp_plugin_sdk::catalog;
use coremcp_plugin_sdk::prelude::*;

/// The group table, in catalog order.
pub static GROUP: Group = Group::new(
    &catalog::NOTEPAD,
    env!("CARGO_PKG_VERSION"),
    &[
        tools::notepad_get::TOOL,
        tools::notepad_set::TOOL,
        tools::notepad_delete::TOOL,
        tools::notepad_list::TOOL,
        tools::notepad_bulk_set::TOOL,
        tools::notepad_cleanup::TOOL,
    ],
);

coremcp_plugin_sdk::export_plugin!(GROUP);

#[cfg(test)]
mod tests {
    use coremcp_plugin_sdk::Hints;

    #[test]
    fn the_table_follows_the_catalog() {
        let delete = Hints::DESTRUCTIVE_IDEMPOTENT;
        let hints = [
            Hints::READ,
            Hints::IDEMPOTENT,
            delete,
            Hints::READ,
            delete,
            Hints::DESTRUCTIVE,
        ];
        coremcp_plugin_sdk::testing::assert_hints(&super::GROUP, &hints);
    }
}
