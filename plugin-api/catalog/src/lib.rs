//! The catalog of Core MCP's groups and tools (the product's tool list, as data; `docs/tools.md` is
//! generated from it and the tables): the one place the 107 names, their groups, where each runs
//! and whether it takes `remote_host` are written.
//!
//! The host routes with it without loading a plugin, names the group of a tool whose plugin is
//! missing, and describes the groups in the server's instructions; the plugin SDK builds each
//! tool's manifest entry from it, and `assert_group` checks a group's table against it. Plugins
//! keep the descriptions and schemas (they live beside the code that honours them).
//!
//! It also says which tools change the machine they run on, or write a record that steers —
//! decides where code, credentials or calls go ([`Guard::WhenGiven`]: every such Registry
//! field, listed once, in its tool's guard): over HTTP the host refuses those to a principal
//! not granted them, and a steering write only to a grant that names the tool itself (the
//! policy lives in the host).
//!
//! Invariants: names are unique across groups and match `^[a-z][a-z0-9_]{0,31}$`; a tool's
//! settings are its group's defaults unless its entry overrides them; a tool that takes
//! `remote_host` never runs against the Registry (the Registry resolves `remote_host`).

use coremcp_plugin_api::Runs;

/// One group of the catalog: its defaults and its tools, in listing order.
#[derive(Debug)]
pub struct Group {
    /// The group id; its library is `libcoremcp_<id>.so`.
    pub id: &'static str,
    pub title: &'static str,
    /// What the group is for, in the words the server's instructions use.
    pub purpose: &'static str,
    /// Where the group's tools run unless an entry says otherwise.
    pub runs: Runs,
    /// Whether the group's tools take `remote_host` unless an entry says otherwise.
    pub remote_host: bool,
    /// The default `openWorldHint`: whether the tools reach the network or other machines.
    pub open_world: bool,
    pub tools: &'static [Entry],
}

/// One tool of a group, with the settings where it differs from its group.
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    pub name: &'static str,
    runs: Option<Runs>,
    remote_host: Option<bool>,
    open_world: Option<bool>,
    /// The cargo feature the tool is built behind, and its description for the listing where
    /// the plugin is missing.
    pub feature: Option<(&'static str, &'static str)>,
    /// Whether a call changes the machine it runs on.
    pub guard: Guard,
    /// The boolean argument that, given `true`, lets the call hand over much more than the
    /// tool's guard says (the whole host to a container, the repository's own programs to
    /// every later commit), and what it hands over: over HTTP only a grant that names the tool
    /// itself allows it.
    pub escalation: Option<Escalation>,
    /// When a call may run long, so that a client that takes tasks (MCP's tasks extension) is
    /// answered with a task at once: the condition on the call's arguments, written as a
    /// guard's ([`Guard::guarded`] is `Some` when it holds). `None`: never a task.
    pub task: Option<Guard>,
    /// The tool runs only as a task: a request that does not take tasks is refused.
    pub task_required: bool,
}

/// Whether a call of a tool needs a grant when it comes over HTTP: it changes the machine it
/// runs on (files, commits, pushes, databases, processes, containers), or it writes a record
/// that steers where code, credentials or other calls go (a source's URL or checkout, a
/// Registry host's Core MCP or Docker address, a project's docs source).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Guard {
    /// Never: it reads, or it writes only to a store the group owns.
    Reads,
    /// Every call changes the machine.
    Always,
    /// The call changes the machine when the boolean argument is given as `false` (its
    /// default is `true`).
    WhenFalse(&'static str),
    /// The call changes the machine unless the string argument is one of these values.
    UnlessOneOf(&'static str, &'static [&'static str]),
    /// The call steers where code, credentials or other calls go when it gives any of these
    /// arguments (not `null`): the fields of a record that steer.
    WhenGiven(&'static [&'static str]),
    /// The call changes the machine when the boolean argument is given as `true`.
    WhenTrue(&'static str),
    /// The call is guarded when any of these guards says so (the first that does).
    AnyOf(&'static [Guard]),
}

/// An argument that hands over more than the tool's guard says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Escalation {
    /// The boolean argument, which escalates when given `true`.
    pub argument: &'static str,
    /// What the call then hands over, in words ("it may hand a container the whole host").
    pub hands_over: &'static str,
}

/// What a guarded call does that needs a grant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Guarded {
    /// It changes the machine it runs on.
    ChangesMachine,
    /// It writes a record that steers where code, credentials or calls go (the arguments
    /// named): only a grant that names the tool itself allows it over HTTP, never one of its
    /// group.
    Steers(&'static [&'static str]),
    /// It hands over more than the guard says (its escalation, given `true`): only a grant
    /// that names the tool itself allows it over HTTP, never one of its group.
    Escalates(Escalation),
}

impl Guard {
    /// What a call with `args` (a JSON object) does that needs a grant, if anything. An
    /// argument of the wrong type counts as guarded: the plugin will refuse it anyway, and the
    /// policy fails closed.
    pub fn guarded(&self, args: &serde_json::Map<String, serde_json::Value>) -> Option<Guarded> {
        let changes = match self {
            Guard::Reads => false,
            Guard::Always => true,
            Guard::WhenFalse(name) => match args.get(*name) {
                None | Some(serde_json::Value::Null) | Some(serde_json::Value::Bool(true)) => false,
                Some(_) => true,
            },
            Guard::UnlessOneOf(name, values) => !args
                .get(*name)
                .and_then(serde_json::Value::as_str)
                .is_some_and(|v| values.contains(&v)),
            Guard::WhenGiven(names) => {
                let given = names
                    .iter()
                    .any(|n| args.get(*n).is_some_and(|v| !v.is_null()));
                return given.then_some(Guarded::Steers(names));
            }
            Guard::WhenTrue(name) => match args.get(*name) {
                None | Some(serde_json::Value::Null) | Some(serde_json::Value::Bool(false)) => {
                    false
                }
                Some(_) => true,
            },
            Guard::AnyOf(guards) => return guards.iter().find_map(|g| g.guarded(args)),
        };
        changes.then_some(Guarded::ChangesMachine)
    }

    /// What a call of this guard needs a grant for when it needs one.
    pub fn kind(&self) -> Guarded {
        match self {
            Guard::WhenGiven(names) => Guarded::Steers(names),
            Guard::AnyOf(guards) => guards.first().map_or(Guarded::ChangesMachine, Guard::kind),
            Guard::Reads
            | Guard::Always
            | Guard::WhenFalse(_)
            | Guard::UnlessOneOf(..)
            | Guard::WhenTrue(_) => Guarded::ChangesMachine,
        }
    }
}

impl Entry {
    /// What a call of this tool with `args` needs a grant for over HTTP, if anything: its
    /// escalation when the call asks for it, else its guard.
    pub fn guarded(&self, args: &serde_json::Map<String, serde_json::Value>) -> Option<Guarded> {
        match self.escalation {
            Some(escalation)
                if args.get(escalation.argument) == Some(&serde_json::Value::Bool(true)) =>
            {
                Some(Guarded::Escalates(escalation))
            }
            Some(_) | None => self.guard.guarded(args),
        }
    }
}

/// The arguments of a Registry host that decide where calls go: writing them over HTTP needs
/// a grant naming the tool.
pub const HOST_ADDRESSES: &[&str] = &["core_mcp_url", "docker_endpoint"];
/// The arguments of a new Registry source that decide where code goes: its clone URL.
pub const SOURCE_URL: &[&str] = &["url"];
/// The arguments of a Registry source's update that decide where code goes: its clone URL,
/// and a checkout's place and the URL it was made from (`repo_setup` and the docs tools work
/// in the recorded checkout).
pub const SOURCE_STEERING: &[&str] = &["url", "checkout_host", "checkout_path", "checkout_url"];
/// The arguments of a project's update that decide where its docs are written.
pub const PROJECT_STEERING: &[&str] = &["docs_source"];

/// The fields of `tool` that steer (its guard's [`Guard::WhenGiven`] list; none for a tool
/// that writes no such field).
pub fn steering(tool: &str) -> &'static [&'static str] {
    fn of(guard: &Guard) -> &'static [&'static str] {
        match guard {
            Guard::WhenGiven(names) => names,
            Guard::AnyOf(guards) => guards.iter().map(of).find(|n| !n.is_empty()).unwrap_or(&[]),
            Guard::Reads
            | Guard::Always
            | Guard::WhenFalse(_)
            | Guard::UnlessOneOf(..)
            | Guard::WhenTrue(_) => &[],
        }
    }
    find(tool).map_or(&[], |(_, entry)| of(&entry.guard))
}

/// The manifest's form of a guard: how a group outside the catalog tells the host its tools'
/// guards.
impl From<&Guard> for coremcp_plugin_api::GuardSpec {
    fn from(guard: &Guard) -> Self {
        use coremcp_plugin_api::GuardSpec as S;
        let owned = |names: &[&str]| names.iter().map(|n| (*n).to_owned()).collect();
        match guard {
            Guard::Reads => S::Reads,
            Guard::Always => S::Always,
            Guard::WhenFalse(a) => S::WhenFalse {
                argument: (*a).to_owned(),
            },
            Guard::WhenTrue(a) => S::WhenTrue {
                argument: (*a).to_owned(),
            },
            Guard::UnlessOneOf(a, values) => S::UnlessOneOf {
                argument: (*a).to_owned(),
                values: owned(values),
            },
            Guard::WhenGiven(names) => S::WhenGiven {
                arguments: owned(names),
            },
            Guard::AnyOf(guards) => S::AnyOf {
                guards: guards.iter().map(Self::from).collect(),
            },
        }
    }
}

/// The entry of a tool of a group outside the catalog, from what its manifest declares: its
/// guard, escalation and when it runs as a task, judged as the catalog's are. Its strings are
/// leaked: entries are made once per loaded library, which is never unloaded either.
pub fn entry_from_manifest(spec: &coremcp_plugin_api::ToolSpec) -> &'static Entry {
    let (name, guard, escalation) = (&spec.name, spec.guard.as_ref(), spec.escalation.as_ref());
    fn leak(text: &str) -> &'static str {
        Box::leak(text.to_owned().into_boxed_str())
    }
    fn leak_all(texts: &[String]) -> &'static [&'static str] {
        Box::leak(
            texts
                .iter()
                .map(|t| leak(t))
                .collect::<Vec<_>>()
                .into_boxed_slice(),
        )
    }
    fn guard_of(spec: &coremcp_plugin_api::GuardSpec) -> Guard {
        use coremcp_plugin_api::GuardSpec as S;
        match spec {
            S::Reads => Guard::Reads,
            S::Always => Guard::Always,
            S::WhenFalse { argument } => Guard::WhenFalse(leak(argument)),
            S::WhenTrue { argument } => Guard::WhenTrue(leak(argument)),
            S::UnlessOneOf { argument, values } => {
                Guard::UnlessOneOf(leak(argument), leak_all(values))
            }
            S::WhenGiven { arguments } => Guard::WhenGiven(leak_all(arguments)),
            S::AnyOf { guards } => Guard::AnyOf(Box::leak(
                guards
                    .iter()
                    .map(guard_of)
                    .collect::<Vec<_>>()
                    .into_boxed_slice(),
            )),
        }
    }
    let mut entry = tool(leak(name)).guard(guard.map_or(Guard::Reads, guard_of));
    if let Some(escalation) = escalation {
        entry = entry.escalates_with(leak(&escalation.argument), leak(&escalation.hands_over));
    }
    if let Some(task) = &spec.task {
        entry = entry.task(guard_of(&task.when));
        entry.task_required = task.required;
    }
    Box::leak(Box::new(entry))
}

/// An entry that says only when tool `name` runs as a task, as a manifest declares it (leaked,
/// as [`entry_from_manifest`]'s).
pub fn task_entry(name: &str, task: &coremcp_plugin_api::TaskSpec) -> &'static Entry {
    let spec = coremcp_plugin_api::ToolSpec {
        name: name.to_owned(),
        description: String::new(),
        input_schema: serde_json::Value::Null,
        annotations: Default::default(),
        runs: Runs::Local,
        remote_host: false,
        feature: None,
        guard: None,
        escalation: None,
        task: Some(task.clone()),
    };
    entry_from_manifest(&spec)
}

/// A catalog entry with its group's defaults filled in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    pub runs: Runs,
    pub remote_host: bool,
    pub open_world: bool,
}

/// An entry that follows its group's defaults.
pub const fn tool(name: &'static str) -> Entry {
    Entry {
        name,
        runs: None,
        remote_host: None,
        open_world: None,
        feature: None,
        guard: Guard::Reads,
        escalation: None,
        task: None,
        task_required: false,
    }
}

impl Entry {
    pub const fn runs(mut self, runs: Runs) -> Self {
        self.runs = Some(runs);
        self
    }

    pub const fn remote_host(mut self, takes: bool) -> Self {
        self.remote_host = Some(takes);
        self
    }

    pub const fn open_world(mut self, open: bool) -> Self {
        self.open_world = Some(open);
        self
    }

    /// Marks the tool as changing the machine it runs on, as `guard` says.
    pub const fn guard(mut self, guard: Guard) -> Self {
        self.guard = guard;
        self
    }

    /// Names the boolean argument with which a call hands over more than its guard says, and
    /// what it hands over.
    pub const fn escalates_with(
        mut self,
        argument: &'static str,
        hands_over: &'static str,
    ) -> Self {
        self.escalation = Some(Escalation {
            argument,
            hands_over,
        });
        self
    }

    /// Runs a call as a task, for a client that takes tasks, when `when` holds of its
    /// arguments ([`Guard::Always`]: every call).
    pub const fn task(mut self, when: Guard) -> Self {
        self.task = Some(when);
        self
    }

    /// Runs every call as a task only: a request that does not take tasks is refused.
    pub const fn task_required(mut self) -> Self {
        self.task = Some(Guard::Always);
        self.task_required = true;
        self
    }

    /// Whether a call with `args` runs as a task for a client that takes tasks.
    pub fn runs_as_task(&self, args: &serde_json::Map<String, serde_json::Value>) -> bool {
        self.task
            .as_ref()
            .is_some_and(|when| when.guarded(args).is_some())
    }

    pub const fn feature(mut self, feature: &'static str, description: &'static str) -> Self {
        self.feature = Some((feature, description));
        self
    }
}

impl Group {
    /// A group outside the product's catalog (a fixture, a third party's group): its tools run
    /// where the agent runs and take no `remote_host`; `tools` lists them in table order.
    pub const fn local(
        id: &'static str,
        title: &'static str,
        purpose: &'static str,
        tools: &'static [Entry],
    ) -> Self {
        Self {
            id,
            title,
            purpose,
            runs: Runs::Local,
            remote_host: false,
            open_world: false,
            tools,
        }
    }

    /// The entry of `name` in this group.
    pub fn entry(&self, name: &str) -> Option<&'static Entry> {
        let tools: &'static [Entry] = self.tools;
        tools.iter().find(|t| t.name == name)
    }

    /// The settings of `entry`, a tool of this group.
    pub fn settings(&self, entry: &Entry) -> Settings {
        Settings {
            runs: entry.runs.unwrap_or(self.runs),
            remote_host: entry.remote_host.unwrap_or(self.remote_host),
            open_world: entry.open_world.unwrap_or(self.open_world),
        }
    }

    /// The settings of the tool `name`, if it is in this group.
    pub fn settings_of(&self, name: &str) -> Option<Settings> {
        self.tools
            .iter()
            .find(|t| t.name == name)
            .map(|t| self.settings(t))
    }

    /// Tool names, in catalog order.
    pub fn names(&self) -> impl Iterator<Item = &'static str> {
        let tools: &'static [Entry] = self.tools;
        tools.iter().map(|t| t.name)
    }
}

/// Whether a group run this way is served by a service-mode Core MCP (`serve --service`).
pub fn served_in_service_mode(runs: Runs) -> bool {
    match runs {
        Runs::Forwarded | Runs::Registry => true,
        Runs::Local => false,
    }
}

/// The group of `tool`, and its entry there.
pub fn find(tool: &str) -> Option<(&'static Group, &'static Entry)> {
    GROUPS.iter().find_map(|g| g.entry(tool).map(|t| (*g, t)))
}

/// The group of `tool`.
pub fn group_of(tool: &str) -> Option<&'static Group> {
    find(tool).map(|(g, _)| g)
}

/// The catalog group with this id.
pub fn group(id: &str) -> Option<&'static Group> {
    GROUPS.iter().copied().find(|g| g.id == id)
}

/// The feature a catalog tool is built behind, if any.
pub fn feature_of(tool: &str) -> Option<&'static str> {
    find(tool).and_then(|(_, e)| e.feature).map(|(f, _)| f)
}

/// The 11 groups of 107 tools, in catalog order.
pub static GROUPS: &[&Group] = &[
    &REGISTRY,
    &DOCS,
    &SEELE,
    &SCROLLS,
    &NOTEPAD,
    &SESSION,
    &GIT,
    &FILES,
    &OPS,
    &PUBLISHING,
    &DOCKER,
];

/// Registry: project directory: themes, projects, sources, hosts and snapshots.
pub static REGISTRY: Group = Group {
    id: "registry",
    title: "Registry",
    purpose: "project directory: themes, projects, sources, hosts and snapshots",
    runs: Runs::Registry,
    remote_host: false,
    open_world: false,
    tools: &[
        tool("registry_theme_list"),
        tool("registry_theme_add"),
        tool("registry_theme_update"),
        tool("registry_project_list"),
        tool("registry_project_add"),
        tool("registry_project_update").guard(Guard::WhenGiven(PROJECT_STEERING)),
        tool("registry_source_list"),
        tool("registry_source_add").guard(Guard::WhenGiven(SOURCE_URL)),
        tool("registry_source_update").guard(Guard::WhenGiven(SOURCE_STEERING)),
        tool("registry_host_list"),
        tool("registry_host_add").guard(Guard::WhenGiven(HOST_ADDRESSES)),
        tool("registry_host_update").guard(Guard::WhenGiven(HOST_ADDRESSES)),
        tool("registry_snapshot_save"),
        tool("registry_snapshot_get"),
    ],
};

/// Global docs: read and write documents in the documentation repositories.
pub static DOCS: Group = Group {
    id: "docs",
    title: "Global docs",
    purpose: "read and write documents in the documentation repositories",
    runs: Runs::Local,
    remote_host: true,
    open_world: false,
    tools: &[
        tool("docs_read").feature(
            "docs-read",
            "Read one document (front matter as an object, plus the body), or list a docs \
                folder with each entry's front matter.",
        ),
        tool("docs_write").guard(Guard::Always).feature(
            "docs-write",
            "Create or replace a document. Front matter is merged and kept current. It does \
                not commit: use git_add/git_commit.",
        ),
    ],
};

/// Seele: search, read, write and import documentation nodes.
pub static SEELE: Group = Group {
    id: "seele",
    title: "Seele",
    purpose: "search, read, write and import documentation nodes",
    runs: Runs::Forwarded,
    remote_host: true,
    open_world: false,
    tools: &[
        tool("seele_search"),
        tool("seele_read"),
        tool("seele_write"),
        tool("seele_import").task(Guard::Always),
    ],
};

/// Scrolls: work items (themes to subtasks), agents and progress views.
pub static SCROLLS: Group = Group {
    id: "scrolls",
    title: "Scrolls",
    purpose: "work items (themes to subtasks), agents and progress views",
    runs: Runs::Forwarded,
    remote_host: true,
    open_world: false,
    tools: &[
        tool("scrolls_theme_list"),
        tool("scrolls_theme_get"),
        tool("scrolls_theme_create"),
        tool("scrolls_theme_update"),
        tool("scrolls_theme_close"),
        tool("scrolls_theme_delete"),
        tool("scrolls_project_list"),
        tool("scrolls_project_get"),
        tool("scrolls_project_create"),
        tool("scrolls_project_update"),
        tool("scrolls_project_close"),
        tool("scrolls_project_delete"),
        tool("scrolls_epic_list"),
        tool("scrolls_epic_get"),
        tool("scrolls_epic_create"),
        tool("scrolls_epic_update"),
        tool("scrolls_epic_close"),
        tool("scrolls_epic_delete"),
        tool("scrolls_story_list"),
        tool("scrolls_story_get"),
        tool("scrolls_story_create"),
        tool("scrolls_story_update"),
        tool("scrolls_story_close"),
        tool("scrolls_story_delete"),
        tool("scrolls_task_list"),
        tool("scrolls_task_get"),
        tool("scrolls_task_create"),
        tool("scrolls_task_update"),
        tool("scrolls_task_close"),
        tool("scrolls_task_delete"),
        tool("scrolls_subtask_list"),
        tool("scrolls_subtask_get"),
        tool("scrolls_subtask_create"),
        tool("scrolls_subtask_update"),
        tool("scrolls_subtask_close"),
        tool("scrolls_subtask_delete"),
        tool("scrolls_search"),
        tool("scrolls_item_move"),
        tool("scrolls_item_claim"),
        tool("scrolls_comment_add"),
        tool("scrolls_comment_list"),
        tool("scrolls_agent_register"),
        tool("scrolls_agent_list"),
        tool("scrolls_agent_get"),
        tool("scrolls_agent_update"),
        tool("scrolls_agent_delete"),
        tool("scrolls_progress_get"),
        tool("scrolls_board_get"),
        tool("scrolls_ready_list"),
        tool("scrolls_activity_list"),
    ],
};

/// Notepad: short notes by scope and key.
pub static NOTEPAD: Group = Group {
    id: "notepad",
    title: "Notepad",
    purpose: "short notes by scope and key",
    runs: Runs::Forwarded,
    remote_host: true,
    open_world: false,
    tools: &[
        tool("notepad_get"),
        tool("notepad_set"),
        tool("notepad_delete"),
        tool("notepad_list"),
        tool("notepad_bulk_set"),
        tool("notepad_cleanup"),
    ],
};

/// Session: active and recorded agent sessions.
pub static SESSION: Group = Group {
    id: "session",
    title: "Session",
    purpose: "active and recorded agent sessions",
    runs: Runs::Forwarded,
    remote_host: true,
    open_world: false,
    tools: &[
        tool("session_register"),
        tool("session_heartbeat"),
        tool("session_close"),
        tool("session_close_stale"),
        tool("session_list_active"),
        tool("session_get"),
        tool("session_list_recorded"),
    ],
};

/// Git: status, diff, log, show, branches, stage, commit and push in local repositories.
pub static GIT: Group = Group {
    id: "git",
    title: "Git",
    purpose: "status, diff, log, show, branches, stage, commit and push in local repositories",
    runs: Runs::Local,
    remote_host: true,
    open_world: false,
    tools: &[
        tool("git_status"),
        tool("git_diff"),
        tool("git_log"),
        tool("git_show"),
        tool("git_branch_list"),
        tool("git_add").guard(Guard::Always),
        tool("git_commit").guard(Guard::Always),
        tool("git_push").open_world(true).guard(Guard::Always),
    ],
};

/// Code and files: search and list files, snapshot code, and run read-only SQL.
pub static FILES: Group = Group {
    id: "files",
    title: "Code and files",
    purpose: "search and list files, snapshot code, and run read-only SQL",
    runs: Runs::Local,
    remote_host: true,
    open_world: false,
    tools: &[
        tool("files_search"),
        tool("files_list"),
        tool("code_snapshot").task(Guard::WhenGiven(&["save_to"])),
        tool("sql_query")
            .open_world(true)
            .guard(Guard::WhenFalse("read_only")),
    ],
};

/// Ops: run shell scripts, bootstrap this machine, set up repositories, find stale containers, record sessions, diagnostics.
pub static OPS: Group = Group {
    id: "ops",
    title: "Ops",
    purpose: "run shell scripts, bootstrap this machine, set up repositories, find stale containers, record sessions, diagnostics",
    runs: Runs::Local,
    remote_host: true,
    open_world: false,
    tools: &[
        tool("shell_run")
            .open_world(true)
            .guard(Guard::Always)
            .task(Guard::Always),
        tool("bootstrap")
            .open_world(true)
            .remote_host(false)
            .guard(Guard::Always),
        tool("repo_setup")
            .open_world(true)
            .guard(Guard::Always)
            .task(Guard::Always)
            .escalates_with(
                "hooks",
                "it makes the repository's own hook programs run on every later commit",
            ),
        tool("stale_containers_find").open_world(true),
        tool("session_record"),
        tool("core_status"),
    ],
};

/// Publishing: pass arguments unchanged to the publishing CLI.
pub static PUBLISHING: Group = Group {
    id: "publishing",
    title: "Publishing",
    purpose: "pass arguments unchanged to the publishing CLI",
    runs: Runs::Local,
    remote_host: true,
    open_world: true,
    tools: &[tool("publishing").task(Guard::Always)],
};

/// Docker: list, inspect, tail and act on containers, and run Compose.
pub static DOCKER: Group = Group {
    id: "docker",
    title: "Docker",
    purpose: "list, inspect, tail and act on containers, and run Compose",
    runs: Runs::Local,
    remote_host: true,
    open_world: true,
    tools: &[
        tool("docker_container_list"),
        tool("docker_container_inspect"),
        tool("docker_container_logs"),
        tool("docker_container_action").guard(Guard::Always),
        tool("docker_compose")
            .task(Guard::UnlessOneOf("action", &["ps", "config", "logs"]))
            .guard(Guard::AnyOf(&[
                Guard::UnlessOneOf("action", &["ps", "config", "logs"]),
                Guard::WhenTrue("reach_outside_roots"),
            ]))
            .escalates_with(
                "allow_host_access",
                "it may hand a container the whole host (/, the Docker socket or the kernel's \
                 trees mounted, privileged, added capabilities, host namespaces or devices)",
            ),
    ],
};

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn the_long_tools_run_as_tasks_and_only_when_they_run_long() {
        let args = |v: serde_json::Value| v.as_object().cloned().expect("object");
        let tasked: Vec<&str> = GROUPS
            .iter()
            .flat_map(|g| g.tools.iter())
            .filter(|e| e.task.is_some())
            .map(|e| e.name)
            .collect();
        assert_eq!(
            tasked,
            [
                "seele_import",
                "code_snapshot",
                "shell_run",
                "repo_setup",
                "publishing",
                "docker_compose"
            ]
        );
        let entry = |name: &str| find(name).expect(name).1;
        assert!(entry("shell_run").runs_as_task(&args(serde_json::json!({"script": "x"}))));
        let snapshot = entry("code_snapshot");
        assert!(!snapshot.runs_as_task(&args(serde_json::json!({"path": "."}))));
        assert!(snapshot.runs_as_task(&args(serde_json::json!({"save_to": "a/b"}))));
        let compose = entry("docker_compose");
        assert!(compose.runs_as_task(&args(serde_json::json!({"action": "up"}))));
        assert!(!compose.runs_as_task(&args(serde_json::json!({"action": "ps"}))));
        assert!(!entry("notepad_get").runs_as_task(&args(serde_json::json!({}))));
    }

    #[test]
    fn catalog_has_107_unique_well_formed_names() {
        let names: Vec<&str> = GROUPS.iter().flat_map(|g| g.names()).collect();
        assert_eq!(GROUPS.len(), 11);
        assert_eq!(names.len(), 107);
        assert_eq!(
            names.iter().collect::<HashSet<_>>().len(),
            107,
            "duplicate tool name"
        );
        for name in &names {
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

    #[test]
    fn settings_follow_the_group_unless_the_entry_overrides_them() {
        let all: Vec<(&str, Settings)> = GROUPS
            .iter()
            .flat_map(|g| g.tools.iter().map(|t| (t.name, g.settings(t))))
            .collect();
        let takes = all.iter().filter(|(_, s)| s.remote_host).count();
        // Every tool but the 14 Registry tools and bootstrap (it sets up the agent's own
        // machine) takes remote_host.
        assert_eq!(takes, 92);
        for (name, s) in &all {
            assert!(!(s.remote_host && s.runs == Runs::Registry), "{name}");
        }
        let open: Vec<&str> = all
            .iter()
            .filter(|(_, s)| s.open_world)
            .map(|(n, _)| *n)
            .collect();
        assert_eq!(
            open,
            [
                "git_push",
                "sql_query",
                "shell_run",
                "bootstrap",
                "repo_setup",
                "stale_containers_find",
                "publishing",
                "docker_container_list",
                "docker_container_inspect",
                "docker_container_logs",
                "docker_container_action",
                "docker_compose"
            ]
        );
        assert_eq!(feature_of("docs_write"), Some("docs-write"));
        assert_eq!(group_of("notepad_get").map(|g| g.id), Some("notepad"));
        assert!(find("nope").is_none());
    }

    #[test]
    fn the_machine_changing_tools_are_the_local_ones_that_write() {
        let guarded: Vec<(&str, Guard)> = GROUPS
            .iter()
            .flat_map(|g| g.tools.iter())
            .filter(|t| t.guard != Guard::Reads)
            .map(|t| (t.name, t.guard))
            .collect();
        let names: Vec<&str> = guarded.iter().map(|(n, _)| *n).collect();
        assert_eq!(
            names,
            [
                "registry_project_update",
                "registry_source_add",
                "registry_source_update",
                "registry_host_add",
                "registry_host_update",
                "docs_write",
                "git_add",
                "git_commit",
                "git_push",
                "sql_query",
                "shell_run",
                "bootstrap",
                "repo_setup",
                "docker_container_action",
                "docker_compose"
            ]
        );
        for (name, guard) in &guarded {
            let (group, entry) = find(name).expect("listed");
            match guard.kind() {
                Guarded::ChangesMachine => {
                    assert_eq!(group.settings(entry).runs, Runs::Local, "{name}")
                }
                Guarded::Steers(_) => assert_eq!(group.id, "registry", "{name}"),
                Guarded::Escalates(_) => panic!("{name}: a guard's kind is never an escalation"),
            }
        }
        let args = |text: &str| -> serde_json::Map<String, serde_json::Value> {
            serde_json::from_str(text).expect("object")
        };
        let machine = Some(Guarded::ChangesMachine);
        let sql = find("sql_query").expect("sql").1.guard;
        assert_eq!(sql.guarded(&args("{}")), None);
        assert_eq!(sql.guarded(&args(r#"{"read_only":true}"#)), None);
        assert_eq!(sql.guarded(&args(r#"{"read_only":false}"#)), machine);
        assert_eq!(sql.guarded(&args(r#"{"read_only":"no"}"#)), machine);
        let compose = find("docker_compose").expect("compose").1;
        assert_eq!(compose.guarded(&args(r#"{"action":"ps"}"#)), None);
        assert_eq!(compose.guarded(&args(r#"{"action":"up"}"#)), machine);
        assert_eq!(compose.guarded(&args("{}")), machine);
        assert_eq!(
            compose.guarded(&args(r#"{"action":"config","reach_outside_roots":true}"#)),
            machine
        );
        assert_eq!(
            compose.guarded(&args(r#"{"action":"config","reach_outside_roots":false}"#)),
            None
        );
        assert!(matches!(
            compose.guarded(&args(r#"{"action":"up","allow_host_access":true}"#)),
            Some(Guarded::Escalates(Escalation {
                argument: "allow_host_access",
                ..
            }))
        ));
        assert_eq!(
            compose.guarded(&args(r#"{"action":"up","allow_host_access":false}"#)),
            machine
        );
        let host = find("registry_host_update").expect("host").1.guard;
        let redirects = Some(Guarded::Steers(HOST_ADDRESSES));
        let source = find("registry_source_update").expect("source").1.guard;
        assert_eq!(
            source.guarded(&args(r#"{"source":"A/b","description":"x"}"#)),
            None
        );
        for field in SOURCE_STEERING {
            let one = format!(r#"{{"source":"A/b","{field}":"x"}}"#);
            assert_eq!(
                source.guarded(&args(&one)),
                Some(Guarded::Steers(SOURCE_STEERING)),
                "{field}"
            );
        }
        assert_eq!(steering("registry_source_add"), SOURCE_URL);
        assert_eq!(steering("registry_host_update"), HOST_ADDRESSES);
        assert!(steering("git_push").is_empty());
        assert_eq!(
            host.guarded(&args(r#"{"name":"a","status":"disabled"}"#)),
            None
        );
        assert_eq!(
            host.guarded(&args(r#"{"name":"a","core_mcp_url":null}"#)),
            None
        );
        assert_eq!(
            host.guarded(&args(r#"{"core_mcp_url":"http://x/mcp"}"#)),
            redirects
        );
        assert_eq!(
            host.guarded(&args(r#"{"docker_endpoint":"tcp://x:1"}"#)),
            redirects
        );
    }
}
