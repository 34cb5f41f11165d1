//! The Git group: eight tools (docs/tools.md) that run the real `git` CLI on repositories inside
//! the configured roots and answer structured JSON parsed from git's machine formats.
//!
//! Invariants:
//! - git runs only through `coremcp_spawn` ([`git`]), with null stdin, no terminal prompt,
//!   literal pathspecs and the call's deadline and stop flag; hooks, the user's config and
//!   credential helpers apply as they would on the command line.
//! - Every repository and path argument is confined to the roots before git sees it
//!   ([`repo`]); a user-supplied value never reaches git where it could be read as an option.
//! - There is no plain force push: only `--force-with-lease`.

pub use coremcp_git_cli as git;
pub mod date;
pub mod parse;
pub mod patch;
pub mod repo;
pub mod text;
pub mod tools;

use coremcp_plugin_sdk::{catalog, Group};

/// The group table, in catalog order.
pub static GROUP: Group = Group::new(
    &catalog::GIT,
    env!("CARGO_PKG_VERSION"),
    &[
        tools::git_status::TOOL,
        tools::git_diff::TOOL,
        tools::git_log::TOOL,
        tools::git_show::TOOL,
        tools::git_branch_list::TOOL,
        tools::git_add::TOOL,
        tools::git_commit::TOOL,
        tools::git_push::TOOL,
    ],
);

coremcp_plugin_sdk::export_plugin!(GROUP);

#[cfg(test)]
mod tests {
    use coremcp_plugin_sdk::Hints;

    #[test]
    fn the_table_follows_the_catalog() {
        let read = Hints::READ;
        let hints = [
            read,
            read,
            read,
            read,
            read,
            Hints::IDEMPOTENT,
            Hints::ADD,
            Hints::DESTRUCTIVE,
        ];
        coremcp_plugin_sdk::testing::assert_hints(&super::GROUP, &hints);
        for tool in super::GROUP.tools {
            let schema = tool.handler.schema();
            assert!(
                schema["properties"]["repo_path"].is_object(),
                "{}",
                tool.name
            );
        }
    }
}
