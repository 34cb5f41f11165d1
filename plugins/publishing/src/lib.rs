//! The Publishing group: one tool, `publishing`, that passes its `args` unchanged (argv, no
//! shell) to the publishing CLI named by `COREMCP_PUBLISH_CMD` and returns the CLI's JSON
//! output as structured content.

mod tools;

use coremcp_plugin_sdk::{catalog, Group};

/// The group table, in catalog order.
pub static GROUP: Group = Group::new(
    &catalog::PUBLISHING,
    env!("CARGO_PKG_VERSION"),
    &[tools::publishing::TOOL],
);

coremcp_plugin_sdk::export_plugin!(GROUP);

#[cfg(test)]
mod tests {
    #[test]
    fn the_table_follows_the_catalog() {
        coremcp_plugin_sdk::testing::assert_group(&super::GROUP);
    }
}
