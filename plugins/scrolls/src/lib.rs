//! The Scrolls group (docs/tools.md): work tracking from themes down to subtasks, with claims,
//! a ready queue and progress views, on the `scrolls` store service.
//!
//! Layout: `lib.rs` is the table. The 36 level tools (list, get, create, update, close and
//! delete of each level) are `matrix.rs`, one handler per level and operation reading the
//! level table (`level.rs`), so no level has a copy of another's tool; the other 14 are
//! `tools/<tool>.rs`. Beside them: item keys (`key.rs`), the shared argument types (`args.rs`),
//! the tables and search indexes (`schema.rs`), the item rules that need the store
//! (`items.rs`: create under the level rules with numbered keys, dependencies without cycles,
//! close and delete with `cascade`, moves that keep the key, the atomic claim, comments and
//! the append-only activity log), agents (`agents.rs`) and the views computed in the database
//! (`views.rs`: ready queue, subtree counts and totals, board, ranked search, activity feed).
//!
//! Invariants: every rule about items is checked in the transaction that writes it; views
//! are computed by the database, never by loading a tree into the plugin.

pub mod actor;
pub mod agents;
pub mod args;
pub mod items;
pub mod key;
pub mod level;
pub mod matrix;
pub mod schema;
pub mod tools;
pub mod views;

use coremcp_plugin_sdk::{catalog, Group, Tool};
use coremcp_store::plugin::Service;

/// The Scrolls store: `scrolls.sqlite3` under the data dir, or schema `scrolls`.
pub static SERVICE: Service = Service::new("scrolls", schema::MIGRATIONS);

/// The group table, in catalog order: the 36 level tools, then the rest.
pub static GROUP: Group = Group::new(&catalog::SCROLLS, env!("CARGO_PKG_VERSION"), &TABLE);

static TABLE: [Tool; 50] = table();

const fn table() -> [Tool; 50] {
    let rest = [
        tools::scrolls_search::TOOL,
        tools::scrolls_item_move::TOOL,
        tools::scrolls_item_claim::TOOL,
        tools::scrolls_comment_add::TOOL,
        tools::scrolls_comment_list::TOOL,
        tools::scrolls_agent_register::TOOL,
        tools::scrolls_agent_list::TOOL,
        tools::scrolls_agent_get::TOOL,
        tools::scrolls_agent_update::TOOL,
        tools::scrolls_agent_delete::TOOL,
        tools::scrolls_progress_get::TOOL,
        tools::scrolls_board_get::TOOL,
        tools::scrolls_ready_list::TOOL,
        tools::scrolls_activity_list::TOOL,
    ];
    let mut out = [rest[0]; 50];
    let mut i = 0;
    while i < 50 {
        out[i] = if i < matrix::TOOLS.len() {
            matrix::TOOLS[i]
        } else {
            rest[i - matrix::TOOLS.len()]
        };
        i += 1;
    }
    out
}

coremcp_plugin_sdk::export_plugin!(GROUP);

#[cfg(test)]
mod tests {
    #[test]
    fn the_table_follows_the_catalog() {
        coremcp_plugin_sdk::testing::assert_group(&super::GROUP);
    }
}
