//! The Ops group (docs/tools.md, Ops), in progress: `shell_run`, `bootstrap`, `repo_setup`,
//! `stale_containers_find` and `core_status` are here; `session_record` is still to come, and the library is installed only once the whole table is (a plugin serves
//! its whole catalog group).
//!
//! Invariants: every child starts through `coremcp-spawn` (scrubbed environment, bounded
//! output, its whole process group killed at its deadline or on cancel); every path argument
//! is confined to the roots.

pub mod clients;
pub mod tools;
pub mod transcript;

use coremcp_plugin_sdk::{catalog, Group, Tool};

/// The tools written so far, in catalog order (for the crate's tests).
pub static PARTIAL: Group = Group::new(&catalog::OPS, env!("CARGO_PKG_VERSION"), &TABLE);

static TABLE: [Tool; 5] = [
    tools::shell_run::TOOL,
    tools::bootstrap::TOOL,
    tools::repo_setup::TOOL,
    tools::stale_containers_find::TOOL,
    tools::core_status::TOOL,
];
