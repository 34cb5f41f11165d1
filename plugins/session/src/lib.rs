//! The Session group (TOOLS.md §6): active agent sessions (register, heartbeat, close, close
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
//! - Recordings are written by Ops `session_record`; this group only reads them.

mod tools;

use coremcp_plugin_api::sdk::Group;

/// The group table, in catalog order.
pub static GROUP: Group = Group {
    id: "session",
    version: env!("CARGO_PKG_VERSION"),
    tools: &[
        tools::session_register::TOOL,
        tools::session_heartbeat::TOOL,
        tools::session_close::TOOL,
        tools::session_close_stale::TOOL,
        tools::session_list_active::TOOL,
        tools::session_get::TOOL,
        tools::session_list_recorded::TOOL,
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
                "session_register",
                "session_heartbeat",
                "session_close",
                "session_close_stale",
                "session_list_active",
                "session_get",
                "session_list_recorded"
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
        for (i, read_only) in [false, false, false, false, true, true, true]
            .into_iter()
            .enumerate()
        {
            let a = GROUP.tools[i].annotations;
            assert_eq!(a.read_only_hint, Some(read_only), "{}", GROUP.tools[i].name);
            assert_eq!(a.destructive_hint, Some(false), "{}", GROUP.tools[i].name);
            assert_eq!(a.idempotent_hint, Some(true), "{}", GROUP.tools[i].name);
        }
    }
}
