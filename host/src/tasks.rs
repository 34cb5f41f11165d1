//! The process's task table (`coremcp-tasks`), built once from the configuration by the
//! command that serves, and the `host_call` operations a plugin's task work uses:
//! `task.current` (the task the asking call runs as), `task.output` (what its processes wrote,
//! appended to the task's output), `task.ask` (the work asks its client for input and waits
//! for the answers, given with `tasks/update`), `task.read` (a task's output from an offset,
//! for its principal) and `task.cancel`.
//!
//! Invariants: `task.read` and `task.cancel` act for the principal of the call that asks, so a
//! plugin can never read or stop another principal's task for its caller; without a serving
//! command's table (a unit test, a command that serves nothing) no call is ever a task.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use coremcp_engine::host_api::{self, register_op};
use coremcp_plugin_api::{codes, ToolError};
use coremcp_tasks::{Bounds, Settings, TaskError, Tasks};
use serde_json::{json, Value};

use crate::config::Config;

/// How often a client is asked to poll a task.
pub const POLL: Duration = Duration::from_millis(1000);
/// The most output bytes one `task.read` returns.
const MAX_READ: usize = 64 * 1024;

static TABLE: OnceLock<Arc<Tasks>> = OnceLock::new();

/// Builds the table for `config` (once per process; later calls keep the first).
pub fn init(config: &Config) {
    let store = config.data_dir.as_deref().and_then(|dir| {
        coremcp_store::StoreUrl::parse(&config.store, dir)
            .map_err(|e| tracing::warn!("tasks are off: {e}"))
            .ok()
    });
    if store.is_none() {
        tracing::info!("tasks are off: there is no data folder or store to record them in");
    }
    TABLE.get_or_init(|| {
        Tasks::new(Settings {
            store,
            bounds: Bounds::default(),
            poll: POLL,
        })
    });
    register_ops();
}

/// The table, when tasks are served.
pub fn table() -> Option<&'static Arc<Tasks>> {
    TABLE.get().filter(|t| t.enabled())
}

/// Stops every task of this process (it is exiting), waiting at most `wait` for their work.
pub fn stop_all(wait: Duration) {
    if let Some(table) = TABLE.get() {
        table.stop_all(wait);
    }
}

/// A task error as a plugin sees it.
fn tool_error(e: TaskError) -> ToolError {
    match e {
        TaskError::NotFound(_) => ToolError::new(codes::NOT_FOUND, e.to_string()),
        TaskError::Store(_) => ToolError::new(codes::FAILED, e.to_string()),
        TaskError::Refused(_) => ToolError::new(codes::INVALID_ARGUMENTS, e.to_string()),
    }
}

fn task_arg(payload: &Value) -> Result<&str, ToolError> {
    payload["task"].as_str().ok_or_else(|| {
        ToolError::new(
            codes::INVALID_ARGUMENTS,
            "the payload needs \"task\", a task id",
        )
    })
}

/// The principal of the asking call; outside a call, nobody's task is reached.
fn principal() -> Result<String, ToolError> {
    host_api::call_principal().ok_or_else(|| {
        ToolError::new(
            codes::INVALID_ARGUMENTS,
            "a task is reached only from a call, for its principal",
        )
    })
}

fn tasks() -> Result<&'static Arc<Tasks>, ToolError> {
    table().ok_or_else(|| {
        ToolError::new(
            codes::NOT_CONFIGURED,
            "tasks are off here: Core MCP has no store to record them in",
        )
    })
}

fn register_ops() {
    register_op(
        "task.current",
        Arc::new(|_: &Value| {
            Ok(match host_api::call_task() {
                Some(task) => json!({"task": &*task}),
                None => json!({}),
            })
        }),
    );
    register_op(
        "task.output",
        Arc::new(|payload: &Value| {
            let id = task_arg(payload)?;
            let text = payload["text"].as_str().unwrap_or_default();
            // A task that already ended (or another process's) takes no more output.
            if let Some(live) = tasks()?.live(id) {
                live.push_output(text.as_bytes());
            }
            Ok(json!({}))
        }),
    );
    register_op(
        "task.ask",
        Arc::new(|payload: &Value| {
            let id = task_arg(payload)?;
            // Only the work of that very task asks its client.
            if host_api::call_task().as_deref() != Some(id) {
                return Err(ToolError::new(
                    codes::INVALID_ARGUMENTS,
                    "only a task's own work asks its client for input",
                ));
            }
            let message = payload["message"].as_str().unwrap_or("waiting for input");
            match tasks()?.ask(id, payload["requests"].clone(), message) {
                Ok(answers) => Ok(Value::Object(answers)),
                Err(e @ coremcp_tasks::AskError::Stopped) => {
                    Err(ToolError::new(codes::CANCELLED, e.to_string()))
                }
                Err(e @ coremcp_tasks::AskError::Malformed) => {
                    Err(ToolError::new(codes::INVALID_ARGUMENTS, e.to_string()))
                }
                Err(e) => Err(ToolError::new(codes::FAILED, e.to_string())),
            }
        }),
    );
    register_op(
        "task.read",
        Arc::new(|payload: &Value| {
            let id = task_arg(payload)?;
            let offset = payload["offset"].as_u64().unwrap_or(0);
            let max = payload["max_bytes"]
                .as_u64()
                .map_or(MAX_READ, |m| (m as usize).min(MAX_READ));
            tasks()?
                .output(id, &principal()?, offset, max)
                .map_err(tool_error)
        }),
    );
    register_op(
        "task.cancel",
        Arc::new(|payload: &Value| {
            let id = task_arg(payload)?;
            // The call that asks was judged by the policy for its own tool, which may stop
            // only what its principal started.
            tasks()?
                .cancel(id, &principal()?, &|_| Ok(()))
                .map_err(tool_error)?;
            Ok(json!({"task": id, "cancel": "asked"}))
        }),
    );
}
