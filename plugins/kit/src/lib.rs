//! Helpers shared by Core MCP's local groups (Git, Code and files, …). Plugins depend on this
//! and on `coremcp-plugin-api`, never on the host.

pub mod roots;

pub use roots::Roots;
