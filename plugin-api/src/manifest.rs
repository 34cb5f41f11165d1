//! The manifest a plugin describes its group with, sent to the host as JSON text.

use serde::{Deserialize, Serialize};

/// A group: its id, versions and tools, in the order they are listed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub group: String,
    pub plugin_version: String,
    pub api_version: String,
    pub tools: Vec<ToolSpec>,
}

/// One tool as the host lists and routes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// A JSON Schema object (`"type": "object"`).
    pub input_schema: serde_json::Value,
    #[serde(default)]
    pub annotations: Annotations,
    pub runs: Runs,
    /// Whether the tool accepts `remote_host` (forwarded to another host's Core MCP).
    #[serde(default)]
    pub remote_host: bool,
    /// The cargo feature this tool needs, and whether this build has it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feature: Option<FeatureGate>,
    /// When a call needs a grant over HTTP (it changes the machine, or steers where calls go),
    /// for a tool outside Core MCP's catalog: the host judges it as it judges its own tools'
    /// catalog guards. Absent: it only reads (a catalog tool's guard is always the catalog's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guard: Option<GuardSpec>,
    /// The boolean argument that, given `true`, hands over more than the guard says (only a
    /// grant naming the tool allows it over HTTP), and what it hands over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalation: Option<EscalationSpec>,
    /// When a call runs as a task for a client that takes tasks (MCP's tasks extension), for a
    /// tool outside Core MCP's catalog (a catalog tool's is the catalog's). Absent: never.
    /// Added in 1.0 without a version change: a manifest without it reads as before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskSpec>,
}

/// When a tool's call runs as a task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskSpec {
    /// The condition on the call's arguments, written as a guard's.
    pub when: GuardSpec,
    /// Only as a task: a request that does not take tasks is refused.
    #[serde(default)]
    pub required: bool,
}

/// A tool's guard as the manifest carries it (the catalog's `Guard`, as data).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum GuardSpec {
    /// Never: it reads.
    Reads,
    /// Every call changes the machine.
    Always,
    /// When the boolean argument is given as `false`.
    WhenFalse { argument: String },
    /// When the boolean argument is given as `true`.
    WhenTrue { argument: String },
    /// Unless the string argument is one of these values.
    UnlessOneOf {
        argument: String,
        values: Vec<String>,
    },
    /// When any of these arguments is given: they steer where calls go.
    WhenGiven { arguments: Vec<String> },
    /// When any of these says so.
    AnyOf { guards: Vec<GuardSpec> },
}

/// An escalation as the manifest carries it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EscalationSpec {
    pub argument: String,
    pub hands_over: String,
}

/// MCP tool annotations. Unset hints are omitted on the wire, never sent as `null`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

impl Annotations {
    /// A read-only tool.
    pub const READ_ONLY: Self = Self {
        read_only_hint: Some(true),
        destructive_hint: Some(false),
        idempotent_hint: Some(true),
        open_world_hint: Some(false),
    };

    /// A tool that reaches other systems and may change or remove data there (a push, a CLI,
    /// SQL with writes allowed).
    pub const OPEN_WORLD_DESTRUCTIVE: Self = Self {
        read_only_hint: Some(false),
        destructive_hint: Some(true),
        idempotent_hint: Some(false),
        open_world_hint: Some(true),
    };

    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// Where a tool runs (docs/tools.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Runs {
    /// In the Core MCP that receives the call.
    Local,
    /// Over the relay list, or in-process on the store when no relay is configured.
    Forwarded,
    /// Against the Registry store.
    Registry,
}

impl Runs {
    pub fn as_str(self) -> &'static str {
        match self {
            Runs::Local => "local",
            Runs::Forwarded => "forwarded",
            Runs::Registry => "registry",
        }
    }
}

/// A cargo feature a tool is built behind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FeatureGate {
    pub name: String,
    pub enabled: bool,
}
