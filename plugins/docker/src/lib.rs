//! The Docker group (docs/tools.md, Docker): containers listed, inspected, tailed and acted on
//! through the Docker Engine API (bollard, the API version negotiated with each daemon), and
//! Compose projects through the Compose command (`COREMCP_COMPOSE`).
//!
//! Invariants:
//! - `host` names a Registry host and the call talks to its `docker_endpoint`; without it, to
//!   this machine's daemon (`DOCKER_HOST`, else the default socket). Every error names the
//!   endpoint, and a daemon that does not answer costs the call its deadline, never a hang.
//! - Nothing here shells out to the `docker` CLI; only `docker_compose` runs a child (Compose
//!   has no Engine API), through `coremcp-spawn`, with `project_dir` and `files` in the roots.
//! - Environment values whose names the credential rule matches are shown as `<redacted>` in
//!   every inspect answer, `raw` included.
//! - Every answer fits the result budget: lists drop their tail with a count, logs keep their
//!   end.

pub mod tools;

use coremcp_plugin_sdk::catalog;
use coremcp_plugin_sdk::prelude::*;

/// The group table, in catalog order.
pub static GROUP: Group = Group::new(
    &catalog::DOCKER,
    env!("CARGO_PKG_VERSION"),
    &[
        tools::list::TOOL,
        tools::inspect::TOOL,
        tools::logs::TOOL,
        tools::action::TOOL,
        tools::compose::TOOL,
    ],
);

coremcp_plugin_sdk::export_plugin!(GROUP);

#[cfg(test)]
mod tests {
    use coremcp_plugin_sdk::Hints;

    #[test]
    fn the_table_follows_the_catalog() {
        let hints = [
            Hints::READ,
            Hints::READ,
            Hints::READ,
            Hints::DESTRUCTIVE,
            Hints::DESTRUCTIVE,
        ];
        coremcp_plugin_sdk::testing::assert_hints(&super::GROUP, &hints);
    }
}
