//! The Git group: eight tools (TOOLS.md §7) that run the real `git` CLI on repositories inside
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

use coremcp_plugin_api::sdk::{Group, Tool};
use coremcp_plugin_api::{Annotations, Runs};

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
    id: "git",
    version: env!("CARGO_PKG_VERSION"),
    tools: &[
        Tool {
            name: "git_status",
            description: "Working-tree state: branch, upstream, ahead/behind, and staged, \
                unstaged, untracked and conflicted files.",
            input_schema: concat!(
                r#"{"type": "object", "properties": {"#,
                repo_path!(),
                r#"}, "required": [], "additionalProperties": false}"#
            ),
            annotations: Annotations::READ_ONLY,
            runs: Runs::Local,
            remote_host: true,
            feature: None,
            handler: tools::status::run,
        },
        Tool {
            name: "git_diff",
            description: "Diff of the working tree, the index, or between revisions.",
            input_schema: concat!(
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
            annotations: Annotations::READ_ONLY,
            runs: Runs::Local,
            remote_host: true,
            feature: None,
            handler: tools::diff::run,
        },
        Tool {
            name: "git_log",
            description: "Commit history.",
            input_schema: concat!(
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
            annotations: Annotations::READ_ONLY,
            runs: Runs::Local,
            remote_host: true,
            feature: None,
            handler: tools::log::run,
        },
        Tool {
            name: "git_show",
            description: "Show one commit (message plus diff or stat), or a file's content at \
                a revision.",
            input_schema: concat!(
                r#"{"type": "object", "properties": {"#,
                repo_path!(),
                r#",
                "revision": {"type": "string", "description": "the commit (sha, branch, tag, HEAD~2, …)"},
                "path": {"type": "string", "description": "show this file's content at the revision instead of the commit (relative to repo_path)"},
                "stat_only": {"type": "boolean", "description": "the changed files with line counts instead of the patch"},
                "max_chars": {"type": "integer", "minimum": 200, "maximum": 19000, "description": "cut the patch or file text at this many characters (default 12000)"}
                }, "required": ["revision"], "additionalProperties": false}"#
            ),
            annotations: Annotations::READ_ONLY,
            runs: Runs::Local,
            remote_host: true,
            feature: None,
            handler: tools::show::run,
        },
        Tool {
            name: "git_branch_list",
            description: "Branches with upstream, ahead/behind and last commit.",
            input_schema: concat!(
                r#"{"type": "object", "properties": {"#,
                repo_path!(),
                r#",
                "scope": {"type": "string", "enum": ["local", "remote", "all"], "description": "local branches, remote-tracking branches, or both (default local)"},
                "contains": {"type": "string", "description": "only branches that contain this commit"}
                }, "required": [], "additionalProperties": false}"#
            ),
            annotations: Annotations::READ_ONLY,
            runs: Runs::Local,
            remote_host: true,
            feature: None,
            handler: tools::branch_list::run,
        },
        Tool {
            name: "git_add",
            description: "Stage paths ([\".\"] for all changes).",
            input_schema: concat!(
                r#"{"type": "object", "properties": {"#,
                repo_path!(),
                r#",
                "paths": {"type": "array", "items": {"type": "string"}, "description": "files or folders to stage, relative to repo_path; deleted files stage their deletion"}
                }, "required": ["paths"], "additionalProperties": false}"#
            ),
            annotations: writes(true),
            runs: Runs::Local,
            remote_host: true,
            feature: None,
            handler: tools::add::run,
        },
        Tool {
            name: "git_commit",
            description: "Commit staged changes. Returns the new SHA.",
            input_schema: concat!(
                r#"{"type": "object", "properties": {"#,
                repo_path!(),
                r#",
                "message": {"type": "string", "description": "the commit message"},
                "all": {"type": "boolean", "description": "stage tracked modifications first, like -a (default false)"},
                "allow_empty": {"type": "boolean", "description": "commit even when nothing changed (default false)"}
                }, "required": ["message"], "additionalProperties": false}"#
            ),
            annotations: writes(false),
            runs: Runs::Local,
            remote_host: true,
            feature: None,
            handler: tools::commit::run,
        },
        Tool {
            name: "git_push",
            description: "Push the current (or a named) branch.",
            input_schema: concat!(
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
            annotations: Annotations::OPEN_WORLD_DESTRUCTIVE,
            runs: Runs::Local,
            remote_host: true,
            feature: None,
            handler: tools::push::run,
        },
    ],
    init: None,
};

coremcp_plugin_api::export_plugin!(GROUP);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn the_table_has_the_eight_catalog_tools_with_closed_object_schemas() {
        let names: Vec<&str> = GROUP.tools.iter().map(|t| t.name).collect();
        assert_eq!(
            names,
            [
                "git_status",
                "git_diff",
                "git_log",
                "git_show",
                "git_branch_list",
                "git_add",
                "git_commit",
                "git_push"
            ]
        );
        for tool in GROUP.tools {
            let schema: Value = serde_json::from_str(tool.input_schema)
                .unwrap_or_else(|e| panic!("{}: schema is not JSON: {e}", tool.name));
            assert_eq!(schema["type"], "object", "{}", tool.name);
            assert_eq!(schema["additionalProperties"], false, "{}", tool.name);
            assert!(
                schema["properties"]["repo_path"].is_object(),
                "{}",
                tool.name
            );
            assert!(schema["properties"].get("remote_host").is_none());
            assert!(tool.remote_host && tool.runs == Runs::Local);
        }
        let push = &GROUP.tools[7];
        assert_eq!(push.annotations.open_world_hint, Some(true));
        assert_eq!(push.annotations.destructive_hint, Some(true));
        assert_eq!(GROUP.tools[5].annotations.idempotent_hint, Some(true));
        assert_eq!(GROUP.tools[6].annotations.read_only_hint, Some(false));
    }
}
