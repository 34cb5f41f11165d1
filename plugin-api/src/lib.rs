//! The stable plugin ABI of Core MCP: the only contract between the host and a plugin library.
//!
//! A Core MCP group (Git, Docker, Publishing, …) is a dynamic library that exports one
//! [`abi::PluginMod`] root module. The host loads it on demand and talks to it only through
//! that module and the [`abi::HostApi`] callbacks it hands over at `init`. Plugin authors do not
//! use this crate directly: they write a group with the SDK (`coremcp-plugin-sdk`, beside this
//! crate), which is linked statically into each plugin and may change in any minor release.
//!
//! Invariants this crate keeps:
//! - It depends on `abi_stable` and `serde` only: never on the host, never on tokio.
//! - Arguments, results and the manifest cross the boundary as **JSON text**, so tools and
//!   their arguments change without touching the ABI.
//! - The crate version is the ABI version ([`API_VERSION`]). A minor release only appends
//!   prefix fields or adds types; anything else is a major release, and the host refuses a
//!   plugin whose major version differs from its own before running any plugin code.
//! - Error codes ([`codes`]) are part of the contract: never renamed or removed in a major.

pub mod abi;
pub mod codes;
pub mod manifest;
pub mod version;

pub use abi::{CallCtx, HostApi, HostApiRef, LogLevel, PluginMod, PluginModRef, ToolError};
pub use manifest::{
    Annotations, EscalationSpec, FeatureGate, GuardSpec, Manifest, Runs, TaskSpec, ToolSpec,
};
pub use version::{ApiVersion, API_VERSION};

/// Re-exports the SDK's `export_plugin!` builds the library header with; not for plugin code.
#[doc(hidden)]
pub mod __private {
    pub use abi_stable::library::{
        __call_root_module_loader, CheckTypeLayout, IntoRootModuleResult, LibHeader,
        RootModuleResult,
    };
}
