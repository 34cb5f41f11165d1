//! The Ops group (docs/tools.md, Ops): `shell_run`, `bootstrap`, `repo_setup`,
//! `stale_containers_find`, `session_record` and `core_status` — the tools that look after the
//! machine the agent runs on. Every tool runs where the agent runs; only `session_record`'s
//! write leaves it, through the host (to the Session service).
//!
//! Invariants: every child starts through `coremcp-spawn` (scrubbed environment, bounded
//! output, its whole process group killed at its deadline or on cancel); every path argument
//! is confined to the roots.

pub mod clients;
pub mod tools;
pub mod transcript;

use coremcp_plugin_sdk::{catalog, Group};

/// The group table, in catalog order.
pub static GROUP: Group = Group::new(
    &catalog::OPS,
    env!("CARGO_PKG_VERSION"),
    &[
        tools::shell_run::TOOL,
        tools::bootstrap::TOOL,
        tools::repo_setup::TOOL,
        tools::stale_containers_find::TOOL,
        tools::session_record::TOOL,
        tools::core_status::TOOL,
    ],
);

coremcp_plugin_sdk::export_plugin!(GROUP);

#[cfg(test)]
mod tests {
    use coremcp_plugin_sdk::Hints;

    #[test]
    fn the_table_follows_the_catalog() {
        let (read, idem) = (Hints::READ, Hints::IDEMPOTENT);
        let hints = [Hints::DESTRUCTIVE, idem, idem, read, Hints::ADD, read];
        coremcp_plugin_sdk::testing::assert_hints(&super::GROUP, &hints);
    }
}
