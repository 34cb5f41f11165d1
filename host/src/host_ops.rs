//! The `host_call` operations a plugin may ask of the command that serves: `registry.hosts`
//! (the Registry's hosts, as `registry_host_list` answers them, every page) and `status` (the
//! `/api/status` document, from the same function).
//!
//! Invariant: both answer from the host's own functions, so a plugin never sees a second copy
//! of a fact the host shows elsewhere.

use std::sync::Arc;
use std::time::Duration;

use coremcp_plugin_api::{codes, ToolError};
use serde_json::{json, Value};

use crate::plugins::host_api::register_op;
use crate::plugins::PluginSet;
use crate::registry::{list_hosts, LookupError};

/// How long a `registry.hosts` lookup may take when the payload names no `timeout_ms`.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);
/// The longest a plugin may ask a lookup to take.
const MAX_TIMEOUT: Duration = Duration::from_secs(60);

/// Registers the operations for a server whose plugins are `plugins` and whose status
/// document `status` builds.
pub fn register(plugins: Arc<PluginSet>, status: Arc<dyn Fn() -> Value + Send + Sync>) {
    register_op(
        "registry.hosts",
        Arc::new(move |payload: &Value| registry_hosts(&plugins, payload)),
    );
    register_op("status", Arc::new(move |_: &Value| Ok(status())));
}

/// `{"filter": {registry_host_list arguments}, "timeout_ms": N}` → `{"hosts": [...]}`.
fn registry_hosts(plugins: &Arc<PluginSet>, payload: &Value) -> Result<Value, ToolError> {
    let filter = payload.get("filter").cloned().unwrap_or_else(|| json!({}));
    if !filter.is_object() {
        return Err(ToolError::new(
            codes::INVALID_ARGUMENTS,
            "registry.hosts: \"filter\" must be an object of registry_host_list arguments",
        ));
    }
    let timeout = payload
        .get("timeout_ms")
        .and_then(Value::as_u64)
        .map_or(DEFAULT_TIMEOUT, Duration::from_millis)
        .min(MAX_TIMEOUT);
    let hosts = list_hosts(plugins, &filter, timeout).map_err(|e| {
        let code = match &e {
            LookupError::NotSelected => codes::NOT_CONFIGURED,
            LookupError::Unavailable(_) => codes::UNAVAILABLE,
            LookupError::Failed(_) | LookupError::Unknown { .. } => codes::FAILED,
        };
        ToolError::new(code, e.to_string())
    })?;
    Ok(json!({ "hosts": hosts }))
}
