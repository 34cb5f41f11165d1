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
