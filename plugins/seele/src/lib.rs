//! The Seele group (docs/tools.md): a versioned tree of documentation nodes with ranked
//! full-text search, on the `seele` store service.
//!
//! Layout: `lib.rs` is the table; the four tools are `tools/<tool>.rs`. Beside them: node
//! paths (`path.rs`), links parsed from Markdown (`links.rs`), the tables and the search index
//! (`schema.rs`) and the node rules that need the store (`nodes.rs`: ancestors created as
//! folders, revisions under `expected_version`, the side tables).
//!
//! Invariants: every write of a node — its row, its revision, its tags and links, the folders
//! above it — is one transaction; search runs in the database, on the store layer's index.

pub mod links;
pub mod nodes;
pub mod path;
pub mod schema;
pub mod tools;

use coremcp_plugin_sdk::{catalog, Group, Tool};
use coremcp_store::plugin::Service;

/// The Seele store: `seele.sqlite3` under the data dir, or schema `seele`.
pub static SERVICE: Service = Service::new("seele", schema::MIGRATIONS);

/// The group table, in catalog order.
pub static GROUP: Group = Group::new(&catalog::SEELE, env!("CARGO_PKG_VERSION"), &TABLE);

static TABLE: [Tool; 4] = [
    tools::seele_search::TOOL,
    tools::seele_read::TOOL,
    tools::seele_write::TOOL,
    tools::seele_import::TOOL,
];

coremcp_plugin_sdk::export_plugin!(GROUP);

#[cfg(test)]
mod tests {
    #[test]
    fn the_table_follows_the_catalog() {
        coremcp_plugin_sdk::testing::assert_group(&super::GROUP);
    }
}
