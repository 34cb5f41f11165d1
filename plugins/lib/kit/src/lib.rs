//! Helpers shared by Core MCP's local groups (Git, Code and files, Global docs, …): path
//! confinement ([`roots`]), atomic file replacement ([`atomic`]), this machine's Registry host name
//! ([`machine`]), a source and its checkouts as the Registry lists them ([`registry`]), and the SDK's RFC 3339 timestamps re-exported as [`time`]. Plugins
//! depend on this and on the SDK, never on the host. The `testing` feature adds [`testing`], the
//! temporary trees plugins' own tests use.

pub mod atomic;
pub mod machine;
pub mod registry;
pub mod roots;
#[cfg(feature = "testing")]
pub mod testing;
pub use coremcp_plugin_sdk::time;

pub use roots::{canonical_prefix, Roots};
