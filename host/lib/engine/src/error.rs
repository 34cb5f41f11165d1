//! Why a plugin library could not be loaded: one type for the loader, the vetting and the
//! callers that report it.

use std::path::PathBuf;

use coremcp_plugin_api::{ApiVersion, ToolError};

/// Why a plugin could not be loaded.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LoadError {
    #[error("the {group} group is not installed: no plugin file {file} in {dir}")]
    NotInstalled {
        group: String,
        file: String,
        dir: PathBuf,
    },
    #[error("{path}: cannot be loaded: {reason}")]
    Open { path: PathBuf, reason: String },
    #[error("{path}: not a whole plugin library, so it was not loaded: {reason}")]
    Malformed { path: PathBuf, reason: String },
    #[error("{path}: changed since it was installed (its bytes are not the ones whose SHA-256 was recorded beside it), so it was not loaded: install it again with `coremcp plugins install FILE`, or, if this file is the one you mean, record it with `coremcp plugins index`")]
    Changed { path: PathBuf },
    #[error("{path}: not installed (no install record beside it: copied in by hand, or its sidecar manifest removed), so it was not loaded: install it with `coremcp plugins install FILE`, or, if this file is the one you mean, record it with `coremcp plugins index`")]
    NotRecorded { path: PathBuf },
    #[error("{path}: opening it in a probe process failed ({how}), so it was not loaded: the file is damaged or not a Core MCP plugin")]
    Crashed { path: PathBuf, how: String },
    #[error("{path}: built against plugin API {plugin}; this host speaks plugin API {host} (the major versions must match)")]
    Incompatible {
        path: PathBuf,
        plugin: String,
        host: ApiVersion,
    },
    #[error("{path}: its root module does not match plugin API {host}: {detail}")]
    Layout {
        path: PathBuf,
        host: ApiVersion,
        detail: String,
    },
    #[error("{path}: bad manifest: {reason}")]
    Manifest { path: PathBuf, reason: String },
    #[error("{path}: declares group \"{declared}\" but its file name says \"{expected}\"")]
    GroupMismatch {
        path: PathBuf,
        declared: String,
        expected: String,
    },
    #[error("{path}: declares tool \"{tool}\", which the {owner} group owns")]
    ToolConflict {
        path: PathBuf,
        tool: String,
        owner: String,
    },
    #[error("{path}: init failed: {error}")]
    Init { path: PathBuf, error: ToolError },
}
