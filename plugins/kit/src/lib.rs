//! Helpers shared by Core MCP's local groups (Git, Code and files, Global docs, …): path
//! confinement ([`roots`]) and RFC 3339 timestamps ([`time`]). Plugins depend on this
//! and on `coremcp-plugin-api`, never on the host. The `testing` feature adds [`testing`], the
//! temporary trees plugins' own tests use.

pub mod roots;
#[cfg(feature = "testing")]
pub mod testing;
pub mod time;

pub use roots::Roots;
