//! What the bench binaries share: an MCP client over `coremcp stdio` pipes, one tool call over
//! HTTP, the `--host/--plugins/--calls` flags, child processes and addresses, and the flags, host and timing of the store benches.

pub mod host_args;
pub mod http_call;
pub mod procs;
pub mod stdio_client;
pub mod store_run;
