//! What the bench binaries share: an MCP client over `coremcp stdio` pipes, one tool call over
//! HTTP, child processes and addresses, and the flags, host and timing of the store benches.

pub mod http_call;
pub mod procs;
pub mod stdio_client;
pub mod store_run;
