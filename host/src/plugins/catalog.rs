//! The product's catalog of groups and tool names (TOOLS.md), built into the host.
//!
//! It lets the host route a call to the right library without loading every plugin, name the
//! group of a tool whose plugin is missing or broken, and describe the groups in the server's
//! instructions. The plugins' own manifests stay the source of descriptions and schemas; a test
//! checks that every loaded manifest agrees with this table.

/// One group of the catalog.
#[derive(Debug)]
pub struct CatalogGroup {
    /// The group id; its library is `libcoremcp_<id>.so`.
    pub id: &'static str,
    pub title: &'static str,
    /// What the group is for, in the words the server's instructions use.
    pub purpose: &'static str,
    /// Where the group's tools run, which decides forwarding and service mode without
    /// loading the plugin.
    pub runs: GroupRuns,
    /// Tool names, in catalog order.
    pub tools: &'static [&'static str],
}

/// Where a catalog group runs (TOOLS.md §0.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupRuns {
    /// In the Core MCP the agent talks to (files, git, shell, Docker…); never in service mode.
    Local,
    /// Over the relay list when one is configured, else in-process on the store; served in
    /// service mode.
    Forwarded,
    /// Against the Registry store of the Core MCP that has it; served in service mode too.
    Registry,
}

impl GroupRuns {
    /// Whether a service-mode Core MCP (`serve --service`) serves the group.
    pub fn served_in_service_mode(self) -> bool {
        matches!(self, Self::Forwarded | Self::Registry)
    }
}

/// Tools that run only where the agent runs: they never take `remote_host` (TOOLS.md §0.3: the
/// Registry resolves it, `bootstrap` sets up the agent's own machine).
pub fn takes_remote_host(group: &CatalogGroup, tool: &str) -> bool {
    group.runs != GroupRuns::Registry && tool != "bootstrap"
}

/// The catalog group of `tool`.
pub fn group_of(tool: &str) -> Option<&'static CatalogGroup> {
    GROUPS.iter().find(|g| g.tools.contains(&tool))
}

/// A tool built behind a cargo feature. It stays listed even where its plugin is missing, and
/// calling it then names the feature.
#[derive(Debug)]
pub struct FeatureGated {
    pub tool: &'static str,
    pub feature: &'static str,
    /// What the tool does, for its listing where the plugin is missing.
    pub description: &'static str,
}

pub const FEATURE_GATES: &[FeatureGated] = &[
    FeatureGated {
        tool: "docs_read",
        feature: "docs-read",
        description: "Read one document (front matter as an object, plus the body), or list a \
            docs folder with each entry's front matter.",
    },
    FeatureGated {
        tool: "docs_write",
        feature: "docs-write",
        description: "Create or replace a document. Front matter is merged and kept current. It \
            does not commit: use git_add/git_commit.",
    },
];

/// The 11 groups of 107 tools, in catalog order.
pub const GROUPS: &[CatalogGroup] = &[
    CatalogGroup {
        id: "registry",
        title: "Registry",
        purpose: "project directory: themes, projects, sources, hosts and snapshots",
        runs: GroupRuns::Registry,
        tools: &[
            "registry_theme_list", "registry_theme_add", "registry_theme_update",
            "registry_project_list", "registry_project_add", "registry_project_update",
            "registry_source_list", "registry_source_add", "registry_source_update",
            "registry_host_list", "registry_host_add", "registry_host_update",
            "registry_snapshot_save", "registry_snapshot_get",
        ],
    },
    CatalogGroup {
        id: "docs",
        title: "Global docs",
        purpose: "read and write documents in the documentation repositories",
        runs: GroupRuns::Local,
        tools: &[
            "docs_read", "docs_write",
        ],
    },
    CatalogGroup {
        id: "seele",
        title: "Seele",
        purpose: "search, read, write and import documentation nodes",
        runs: GroupRuns::Forwarded,
        tools: &[
            "seele_search", "seele_read", "seele_write", "seele_import",
        ],
    },
    CatalogGroup {
        id: "scrolls",
        title: "Scrolls",
        purpose: "work items (themes to subtasks), agents and progress views",
        runs: GroupRuns::Forwarded,
        tools: &[
            "scrolls_theme_list", "scrolls_theme_get", "scrolls_theme_create",
            "scrolls_theme_update", "scrolls_theme_close", "scrolls_theme_delete",
            "scrolls_project_list", "scrolls_project_get", "scrolls_project_create",
            "scrolls_project_update", "scrolls_project_close", "scrolls_project_delete",
            "scrolls_epic_list", "scrolls_epic_get", "scrolls_epic_create", "scrolls_epic_update",
            "scrolls_epic_close", "scrolls_epic_delete", "scrolls_story_list",
            "scrolls_story_get", "scrolls_story_create", "scrolls_story_update",
            "scrolls_story_close", "scrolls_story_delete", "scrolls_task_list",
            "scrolls_task_get", "scrolls_task_create", "scrolls_task_update",
            "scrolls_task_close", "scrolls_task_delete", "scrolls_subtask_list",
            "scrolls_subtask_get", "scrolls_subtask_create", "scrolls_subtask_update",
            "scrolls_subtask_close", "scrolls_subtask_delete", "scrolls_search",
            "scrolls_item_move", "scrolls_item_claim", "scrolls_comment_add",
            "scrolls_comment_list", "scrolls_agent_register", "scrolls_agent_list",
            "scrolls_agent_get", "scrolls_agent_update", "scrolls_agent_delete",
            "scrolls_progress_get", "scrolls_board_get", "scrolls_ready_list",
            "scrolls_activity_list",
        ],
    },
    CatalogGroup {
        id: "notepad",
        title: "Notepad",
        purpose: "short notes by scope and key",
        runs: GroupRuns::Forwarded,
        tools: &[
            "notepad_get", "notepad_set", "notepad_delete", "notepad_list", "notepad_bulk_set",
            "notepad_cleanup",
        ],
    },
    CatalogGroup {
        id: "session",
        title: "Session",
        purpose: "active and recorded agent sessions",
        runs: GroupRuns::Forwarded,
        tools: &[
            "session_register", "session_heartbeat", "session_close", "session_close_stale",
            "session_list_active", "session_get", "session_list_recorded",
        ],
    },
    CatalogGroup {
        id: "git",
        title: "Git",
        purpose: "status, diff, log, show, branches, stage, commit and push in local repositories",
        runs: GroupRuns::Local,
        tools: &[
            "git_status", "git_diff", "git_log", "git_show", "git_branch_list", "git_add",
            "git_commit", "git_push",
        ],
    },
    CatalogGroup {
        id: "files",
        title: "Code and files",
        purpose: "search and list files, snapshot code, and run read-only SQL",
        runs: GroupRuns::Local,
        tools: &[
            "files_search", "files_list", "code_snapshot", "sql_query",
        ],
    },
    CatalogGroup {
        id: "ops",
        title: "Ops",
        purpose: "run shell scripts, bootstrap this machine, set up repositories, find stale containers, record sessions, diagnostics",
        runs: GroupRuns::Local,
        tools: &[
            "shell_run", "bootstrap", "repo_setup", "stale_containers_find", "session_record",
            "core_status",
        ],
    },
    CatalogGroup {
        id: "publishing",
        title: "Publishing",
        purpose: "pass arguments unchanged to the publishing CLI",
        runs: GroupRuns::Local,
        tools: &[
            "publishing",
        ],
    },
    CatalogGroup {
        id: "docker",
        title: "Docker",
        purpose: "list, inspect, tail and act on containers, and run Compose",
        runs: GroupRuns::Local,
        tools: &[
            "docker_container_list", "docker_container_inspect", "docker_container_logs",
            "docker_container_action", "docker_compose",
        ],
    },
];

/// The catalog group with this id.
pub fn group(id: &str) -> Option<&'static CatalogGroup> {
    GROUPS.iter().find(|g| g.id == id)
}

/// The feature a catalog tool is built behind, if any.
pub fn feature_of(tool: &str) -> Option<&'static str> {
    gate_of(tool).map(|g| g.feature)
}

/// The feature gate of a catalog tool, if any.
pub fn gate_of(tool: &str) -> Option<&'static FeatureGated> {
    FEATURE_GATES.iter().find(|g| g.tool == tool)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn catalog_has_107_unique_well_formed_names() {
        let names: Vec<&str> = GROUPS
            .iter()
            .flat_map(|g| g.tools.iter().copied())
            .collect();
        assert_eq!(GROUPS.len(), 11);
        assert_eq!(names.len(), 107);
        assert_eq!(
            names.iter().collect::<HashSet<_>>().len(),
            107,
            "duplicate tool name"
        );
        for name in names {
            assert!(
                name.len() <= 32
                    && name.starts_with(|c: char| c.is_ascii_lowercase())
                    && name
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
                "bad tool name {name}"
            );
            assert!(
                !name.starts_with("mcp__"),
                "{name} uses the upstream prefix"
            );
        }
        let counts: Vec<(&str, usize)> = GROUPS.iter().map(|g| (g.id, g.tools.len())).collect();
        assert_eq!(
            counts,
            [
                ("registry", 14),
                ("docs", 2),
                ("seele", 4),
                ("scrolls", 50),
                ("notepad", 6),
                ("session", 7),
                ("git", 8),
                ("files", 4),
                ("ops", 6),
                ("publishing", 1),
                ("docker", 5)
            ]
        );
    }
}
