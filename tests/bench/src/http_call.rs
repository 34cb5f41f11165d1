//! One tool call over Streamable HTTP with the host's own MCP client, for the bench drivers.

use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use coremcp_relay::client::{McpClient, Reply};
use serde_json::Value;

/// Calls `tool` with `args` (30 s deadline); an error unless it answered a result that is not
/// a tool error.
pub fn http_call(client: &mut McpClient, tool: &str, args: &Value) -> Result<(), String> {
    let cancelled = AtomicBool::new(false);
    let deadline = Instant::now() + Duration::from_secs(30);
    match client
        .call_tool(
            tool,
            &args.to_string(),
            &serde_json::Map::new(),
            deadline,
            &cancelled,
            Duration::from_secs(3),
        )
        .map_err(|e| format!("{tool}: {e}"))?
    {
        Reply::Result(result) if !result.contains("\"isError\":true") => Ok(()),
        other => Err(format!("{tool}: {other:?}")),
    }
}
