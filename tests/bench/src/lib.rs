//! What the bench binaries share: an MCP client over `coremcp stdio` pipes.

pub mod stdio_client;
