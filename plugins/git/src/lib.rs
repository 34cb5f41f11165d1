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

pub mod git;
pub mod parse;
pub mod repo;
pub mod text;
pub mod tools;

use coremcp_plugin_sdk::legacy::Untyped;
use coremcp_plugin_sdk::Annotations;
use coremcp_plugin_sdk::{Group, Hints, Tool};

/// The `repo_path` property every tool shares.
macro_rules! repo_path {
    () => {
        r#""repo_path": {"type": "string", "description": "the repository (a work tree, or a folder inside one) inside the roots; default: the first root"}"#
    };
}

/// A tool that writes to the repository but is not destructive.
const fn writes(idempotent: bool) -> Annotations {
    Annotations {
        read_only_hint: Some(false),
        destructive_hint: Some(false),
        idempotent_hint: Some(idempotent),
        open_world_hint: Some(false),
    }
}

pub static GROUP: Group = Group {
    catalog: &coremcp_plugin_sdk::catalog::GIT,
    version: env!("CARGO_PKG_VERSION"),
    tools: &[
        Tool::new(
            "git_status",
            "Working-tree state: branch, upstream, ahead/behind, and staged, \
                unstaged, untracked and conflicted files.",
            &Untyped::new(
                concat!(
                r#"{"type": "object", "properties": {"#,
                repo_path!(),
                r#"}, "required": [], "additionalProperties": false}"#
            ),
                tools::status::run,
            ),
        )
        .hints(Hints::of(Annotations::READ_ONLY)),
        Tool::new(
            "git_diff",
            "Diff of the working tree, the index, or between revisions.",
            &Untyped::new(
                concat!(
                r#"{"type": "object", "properties": {"#,
                repo_path!(),
                r#",
                "staged": {"type": "boolean", "description": "diff the index against HEAD instead of the working tree against the index (default false)"},
                "target": {"type": "string", "description": "a revision (diff it against the working tree) or a range a..b; overrides staged"},
                "paths": {"type": "array", "items": {"type": "string"}, "description": "limit the diff to these paths (relative to repo_path)"},
                "context_lines": {"type": "integer", "minimum": 0, "maximum": 1000, "description": "context lines around each change (default 3)"},
                "stat_only": {"type": "boolean", "description": "only the changed files with added/deleted line counts, no patch text"},
                "max_chars": {"type": "integer", "minimum": 200, "maximum": 19000, "description": "cut the patch text at this many characters (default 12000)"}
                }, "required": [], "additionalProperties": false}"#
            ),
                tools::diff::run,
            ),
        )
        .hints(Hints::of(Annotations::READ_ONLY)),
        Tool::new(
            "git_log",
            "Commit history.",
            &Untyped::new(
                concat!(
                r#"{"type": "object", "properties": {"#,
                repo_path!(),
                r#",
                "max_count": {"type": "integer", "minimum": 1, "maximum": 200, "description": "at most this many commits (default 20)"},
                "rev": {"type": "string", "description": "a revision or range to list (default HEAD)"},
                "path": {"type": "string", "description": "only commits touching this path (relative to repo_path)"},
                "since": {"type": "string", "description": "only commits after this date (git date syntax, e.g. 2024-05-01 or \"2 weeks ago\")"},
                "until": {"type": "string", "description": "only commits before this date"},
                "author": {"type": "string", "description": "only commits whose author matches this pattern"},
                "grep": {"type": "string", "description": "only commits whose message matches this pattern"}
                }, "required": [], "additionalProperties": false}"#
            ),
                tools::log::run,
            ),
        )
        .hints(Hints::of(Annotations::READ_ONLY)),
        Tool::new(
            "git_show",
            "Show one commit (message plus diff or stat), or a file's content at \
                a revision.",
            &Untyped::new(
                concat!(
                r#"{"type": "object", "properties": {"#,
                repo_path!(),
                r#",
                "revision": {"type": "string", "description": "the commit (sha, branch, tag, HEAD~2, …)"},
                "path": {"type": "string", "description": "show this file's content at the revision instead of the commit (relative to repo_path)"},
                "stat_only": {"type": "boolean", "description": "the changed files with line counts instead of the patch"},
                "max_chars": {"type": "integer", "minimum": 200, "maximum": 19000, "description": "cut the patch or file text at this many characters (default 12000)"}
                }, "required": ["revision"], "additionalProperties": false}"#
            ),
                tools::show::run,
            ),
        )
        .hints(Hints::of(Annotations::READ_ONLY)),
        Tool::new(
            "git_branch_list",
            "Branches with upstream, ahead/behind and last commit.",
            &Untyped::new(
                concat!(
                r#"{"type": "object", "properties": {"#,
                repo_path!(),
                r#",
                "scope": {"type": "string", "enum": ["local", "remote", "all"], "description": "local branches, remote-tracking branches, or both (default local)"},
                "contains": {"type": "string", "description": "only branches that contain this commit"}
                }, "required": [], "additionalProperties": false}"#
            ),
                tools::branch_list::run,
            ),
        )
        .hints(Hints::of(Annotations::READ_ONLY)),
        Tool::new(
            "git_add",
            "Stage paths ([\".\"] for all changes).",
            &Untyped::new(
                concat!(
                r#"{"type": "object", "properties": {"#,
                repo_path!(),
                r#",
                "paths": {"type": "array", "items": {"type": "string"}, "description": "files or folders to stage, relative to repo_path; deleted files stage their deletion"}
                }, "required": ["paths"], "additionalProperties": false}"#
            ),
                tools::add::run,
            ),
        )
        .hints(Hints::of(writes(true))),
        Tool::new(
            "git_commit",
            "Commit staged changes. Returns the new SHA.",
            &Untyped::new(
                concat!(
                r#"{"type": "object", "properties": {"#,
                repo_path!(),
                r#",
                "message": {"type": "string", "description": "the commit message"},
                "all": {"type": "boolean", "description": "stage tracked modifications first, like -a (default false)"},
                "allow_empty": {"type": "boolean", "description": "commit even when nothing changed (default false)"}
                }, "required": ["message"], "additionalProperties": false}"#
            ),
                tools::commit::run,
            ),
        )
        .hints(Hints::of(writes(false))),
        Tool::new(
            "git_push",
            "Push the current (or a named) branch.",
            &Untyped::new(
                concat!(
                r#"{"type": "object", "properties": {"#,
                repo_path!(),
                r#",
                "remote": {"type": "string", "description": "a configured remote (default origin)"},
                "branch": {"type": "string", "description": "the local branch to push (default the current one)"},
                "set_upstream": {"type": "boolean", "description": "record the pushed branch as upstream (default: true when the branch has none)"},
                "force_with_lease": {"type": "boolean", "description": "overwrite the remote branch only if it is still where this repository last saw it (default false); there is no plain force"},
                "tags": {"type": "boolean", "description": "push all tags too (default false)"}
                }, "required": [], "additionalProperties": false}"#
            ),
                tools::push::run,
            ),
        )
        .hints(Hints::of(Annotations::OPEN_WORLD_DESTRUCTIVE)),
    ],
    init: None,
};

coremcp_plugin_sdk::export_plugin!(GROUP);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_follows_the_catalog() {
        coremcp_plugin_sdk::testing::assert_group(&GROUP);
        for tool in GROUP.tools {
            let schema = tool.handler.schema();
            assert!(
                schema["properties"]["repo_path"].is_object(),
                "{}",
                tool.name
            );
        }
        let push = &GROUP.tools[7];
        assert!(push.hints.destructive);
        assert!(GROUP.tools[5].hints.idempotent);
        assert!(!GROUP.tools[6].hints.read_only);
    }
}
