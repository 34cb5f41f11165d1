//! Running as a task: the one way a tool's handler takes part in MCP's tasks extension. The
//! host decides which calls run as tasks (the catalog marks the tools, the client must take
//! tasks); a handler only asks [`current`] whether it runs as one, and then reports what its
//! work writes ([`Task::writer`]: the task's status and output, which its client reads while
//! it runs) and may ask its client for input ([`Task::ask`]). It sees a cancel as it sees any stop (`Ctx::is_cancelled`), and returns its
//! result as always: the host records it in the task.
//!
//! Invariants: everything goes through the host's `task.*` operations, so a plugin never
//! holds task state of its own; reading or stopping a task ([`read`], [`cancel`]) acts for the
//! principal of the running call only, which the host enforces.

use std::sync::Mutex;

use serde_json::{json, Map, Value};

use crate::ToolError;

/// The task the running call runs as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task {
    id: String,
}

/// The task the running call runs as; `None` for a call that is not one (or outside a host).
pub fn current() -> Option<Task> {
    let answer = crate::host_call("task.current", &json!({})).ok()?;
    answer["task"].as_str().map(|id| Task { id: id.to_owned() })
}

impl Task {
    /// The task's id, as its client knows it.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Asks the task's client for input — `requests` are server-to-client requests by key
    /// (`{"confirm": {"method": "elicitation/create", "params": {…}}}`) — and waits for every
    /// answer (the task shows `input_required` meanwhile; the client answers with
    /// `tasks/update`, in one or several): the answers by key. A cancel ends the wait with a
    /// `cancelled` error.
    pub fn ask(&self, requests: Value, message: &str) -> Result<Map<String, Value>, ToolError> {
        let answer = crate::host_call(
            "task.ask",
            &json!({"task": self.id, "requests": requests, "message": message}),
        )?;
        match answer {
            Value::Object(answers) => Ok(answers),
            other => Err(ToolError::new(
                crate::codes::INTERNAL,
                format!("task.ask answered {other}, not answers by key"),
            )),
        }
    }

    /// A sink for what the work writes (its processes' output), which may be fed from any
    /// thread, in pieces that split characters anywhere.
    pub fn writer(&self) -> Writer {
        Writer {
            id: self.id.clone(),
            pending: Mutex::new(Vec::new()),
        }
    }
}

/// What a task's work writes, passed to its output (see [`Task::writer`]).
#[derive(Debug)]
pub struct Writer {
    id: String,
    /// The start of a character whose other bytes are still to come.
    pending: Mutex<Vec<u8>>,
}

impl Writer {
    /// Appends `bytes` to the task's output (an invalid sequence shows as U+FFFD).
    pub fn write(&self, bytes: &[u8]) {
        let text = {
            let mut pending = self
                .pending
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            pending.extend_from_slice(bytes);
            let whole = whole_characters(&pending);
            let text = String::from_utf8_lossy(&pending[..whole]).into_owned();
            pending.drain(..whole);
            text
        };
        if !text.is_empty() {
            // Output is best effort: a task that ended takes no more.
            let _ = crate::host_call("task.output", &json!({"task": self.id, "text": text}));
        }
    }
}

/// How many leading bytes of UTF-8 `bytes` end on a character boundary: all but a character
/// that has not fully arrived (an invalid sequence counts as complete).
pub fn whole_characters(bytes: &[u8]) -> usize {
    let len = bytes.len();
    for back in 1..=len.min(3) {
        let byte = bytes[len - back];
        if byte & 0xC0 == 0x80 {
            continue;
        }
        let needs = match byte {
            b if b >= 0xF8 => 1,
            b if b >= 0xF0 => 4,
            b if b >= 0xE0 => 3,
            b if b >= 0xC0 => 2,
            _ => 1,
        };
        return if needs > back { len - back } else { len };
    }
    len
}

/// At most `max_bytes` of the output of the caller's task `id` from `offset`: `output`,
/// `offset`, `next_offset`, `total_bytes` (and `skipped_bytes` when the oldest were no longer
/// kept), or where the task is when it no longer runs here.
pub fn read(id: &str, offset: u64, max_bytes: usize) -> Result<Value, ToolError> {
    crate::host_call(
        "task.read",
        &json!({"task": id, "offset": offset, "max_bytes": max_bytes}),
    )
}

/// Asks to stop the caller's task `id` (as `tasks/cancel` does).
pub fn cancel(id: &str) -> Result<Value, ToolError> {
    crate::host_call("task.cancel", &json!({"task": id}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_character_that_has_not_fully_arrived_waits() {
        assert_eq!(whole_characters(b"abc"), 3);
        assert_eq!(whole_characters("é".as_bytes()), 2);
        assert_eq!(whole_characters(&"é".as_bytes()[..1]), 0);
        assert_eq!(whole_characters(&"a€".as_bytes()[..3]), 1);
        assert_eq!(whole_characters(&[0xFF]), 1);
        assert_eq!(whole_characters(&[]), 0);
        // Outside a host there is no task, and nothing fails.
        assert_eq!(current(), None);
    }
}
