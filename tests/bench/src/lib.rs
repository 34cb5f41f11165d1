//! What the bench binaries share: an MCP client over `coremcp stdio` pipes, one tool call over
//! HTTP, and child processes and addresses.

pub mod http_call;
pub mod procs;
pub mod stdio_client;
