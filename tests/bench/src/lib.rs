//! What the bench binaries share: an MCP client over `coremcp stdio` pipes, and child
//! processes and addresses.

pub mod procs;
pub mod stdio_client;
