//! The Session group (docs/tools.md): active agent sessions (register, heartbeat, close, close
//! the stale ones, list) and recorded sessions (get one with its transcript, list them), in the
//! NervHQ store.
//!
//! Lifecycle: `session_register` → `session_heartbeat` every 60 s → `session_close`. A session
//! without a heartbeat for 900 s may be closed by `session_close_stale` (reason `stale`); its
//! next heartbeat answers `closed: true` and the client registers again under the same id,
//! which re-activates it.
//!
//! Invariants:
//! - Session ids are ULIDs or UUIDs, kept as given; the server makes a ULID when none is given.
//! - Heartbeats update the session row in place (no history), with one atomic increment each.
//! - `version` moves on register and close, not on heartbeats, which change only liveness.
//! - Recordings are written by Ops `session_record`, through this group's one internal entry
//!   (also `session_record`, never listed): the host calls it with the transcript packed.

mod tools;

use coremcp_plugin_sdk::catalog;
use coremcp_plugin_sdk::prelude::*;

/// The group table, in catalog order.
pub static GROUP: Group = Group::new(
    &catalog::SESSION,
    env!("CARGO_PKG_VERSION"),
    &[
        tools::session_register::TOOL,
        tools::session_heartbeat::TOOL,
        tools::session_close::TOOL,
        tools::session_close_stale::TOOL,
        tools::session_list_active::TOOL,
        tools::session_get::TOOL,
        tools::session_list_recorded::TOOL,
    ],
)
.internal(&[tools::session_record::TOOL]);

coremcp_plugin_sdk::export_plugin!(GROUP);

#[cfg(test)]
mod tests {
    use coremcp_plugin_sdk::Hints;

    #[test]
    fn the_table_follows_the_catalog() {
        let (write, read) = (Hints::IDEMPOTENT, Hints::READ);
        let hints = [write, write, write, write, read, read, read];
        coremcp_plugin_sdk::testing::assert_hints(&super::GROUP, &hints);
    }
}
