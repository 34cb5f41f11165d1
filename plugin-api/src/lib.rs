//! The stable plugin ABI of Core MCP, and the SDK plugin authors build a group with.
//!
//! A Core MCP group (Git, Docker, Publishing, …) is a dynamic library that exports one
//! [`abi::PluginMod`] root module. The host loads it on demand and talks to it only through
//! that module and the [`abi::HostApi`] callbacks it hands over at `init`.
//!
//! Invariants this crate keeps:
//! - It depends on `abi_stable` and `serde` only: never on the host, never on tokio.
//! - Arguments, results and the manifest cross the boundary as **JSON text**, so tools and
//!   their arguments change without touching the ABI.
//! - The crate version is the ABI version ([`API_VERSION`]). A minor release only appends
//!   prefix fields or adds types; anything else is a major release, and the host refuses a
//!   plugin whose major version differs from its own before running any plugin code.
//! - Nothing that a plugin exports through [`export_plugin!`] lets a panic cross the boundary.

pub mod abi;
pub mod manifest;
pub mod schema;
pub mod sdk;
pub mod version;

pub use abi::{CallCtx, HostApi, HostApiRef, LogLevel, PluginMod, PluginModRef, ToolError};
pub use manifest::{Annotations, FeatureGate, Manifest, Runs, ToolSpec};
pub use version::{ApiVersion, API_VERSION};

/// Re-exports used by [`export_plugin!`]; not part of the public API.
#[doc(hidden)]
pub mod __private {
    pub use abi_stable::library::{
        __call_root_module_loader, CheckTypeLayout, IntoRootModuleResult, LibHeader,
        RootModuleResult,
    };
}
