//! The tasks extension of MCP 2026-07-28 (`io.modelcontextprotocol/tasks`, SEP-2663), as it
//! is written on the wire: the task a long `tools/call` answers with (`resultType: "task"`),
//! its statuses and the moves between them, the detailed task `tasks/get` and
//! `notifications/tasks` carry (a finished task's result or error inlined), the parameters of
//! `tasks/get`, `tasks/update` and `tasks/cancel`, and the task ids a gateway gives the tasks
//! of the servers behind it.
//!
//! Invariants: a task id of ours is [`OWN_PREFIX`] and 32 lowercase hex digits (128 bits the
//! caller draws at random; this crate does no I/O), and anything else is no id of ours; an
//! upstream task's id is namespaced by its server ([`upstream_id`]) and read back exactly
//! ([`parse_upstream_id`]), so it routes to its server and never collides with ours or
//! another server's; a finished status never changes; optional fields are left out, never
//! `null`, except `ttlMs`, whose `null` means "unlimited" on the wire.

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

/// The extension's name, in `server/discover`'s `capabilities.extensions` and in a request's
/// `clientCapabilities.extensions`.
pub const EXTENSION: &str = "io.modelcontextprotocol/tasks";
/// The prefix of the ids of tasks this Core MCP runs itself.
pub const OWN_PREFIX: &str = "t_";
/// The prefix of the ids of upstream servers' tasks, as the client sees them.
pub const UPSTREAM_PREFIX: &str = "u_";

/// A task's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Working,
    InputRequired,
    Completed,
    Failed,
    Cancelled,
}

impl Status {
    /// As the wire writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Working => "working",
            Status::InputRequired => "input_required",
            Status::Completed => "completed",
            Status::Failed => "failed",
            Status::Cancelled => "cancelled",
        }
    }

    /// The status the wire (or a store) names, if it is one.
    pub fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "working" => Status::Working,
            "input_required" => Status::InputRequired,
            "completed" => Status::Completed,
            "failed" => Status::Failed,
            "cancelled" => Status::Cancelled,
            _ => return None,
        })
    }

    /// A finished task: its status never changes again.
    pub fn is_terminal(self) -> bool {
        matches!(self, Status::Completed | Status::Failed | Status::Cancelled)
    }

    /// Whether a task may move from this status to `next`: a running task may wait for input
    /// and go on, and may finish in any way; a finished one stays as it is.
    pub fn may_become(self, next: Status) -> bool {
        !self.is_terminal() && self != next
    }
}

/// A task's state as every answer about it carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task {
    pub task_id: String,
    pub status: Status,
    pub status_message: Option<String>,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339.
    pub last_updated_at: String,
    /// `None`: unlimited.
    pub ttl_ms: Option<u64>,
    pub poll_interval_ms: Option<u64>,
}

impl Task {
    /// The task's fields as a JSON object.
    fn fields(&self) -> Map<String, Value> {
        let mut map = Map::new();
        map.insert("taskId".into(), self.task_id.clone().into());
        map.insert("status".into(), self.status.as_str().into());
        if let Some(message) = &self.status_message {
            map.insert("statusMessage".into(), message.clone().into());
        }
        map.insert("createdAt".into(), self.created_at.clone().into());
        map.insert("lastUpdatedAt".into(), self.last_updated_at.clone().into());
        map.insert("ttlMs".into(), self.ttl_ms.map_or(Value::Null, Value::from));
        if let Some(poll) = self.poll_interval_ms {
            map.insert("pollIntervalMs".into(), poll.into());
        }
        map
    }

    /// The answer to the `tools/call` that created the task (a `CreateTaskResult`).
    /// `resultType` comes first: the 2026 outbox adds `"complete"` to a result that does not
    /// begin with one (`modern::completed`).
    pub fn create_result(&self) -> Value {
        let mut map = Map::new();
        map.insert("resultType".into(), "task".into());
        map.extend(self.fields());
        Value::Object(map)
    }

    /// The detailed task `tasks/get` answers and `notifications/tasks` carries: the task, and
    /// what its status inlines. `Err` names what does not go with the status (a result on a
    /// task still working, no error on a failed one, …).
    pub fn detailed(&self, payload: Payload) -> Result<Value, String> {
        let mut map = self.fields();
        let status = self.status;
        match (status, payload) {
            (Status::Working | Status::Cancelled, Payload::None) => {}
            (Status::InputRequired, Payload::InputRequests(requests)) if requests.is_object() => {
                map.insert("inputRequests".into(), requests);
            }
            (Status::Completed, Payload::Result(result)) if result.is_object() => {
                map.insert("result".into(), result);
            }
            (Status::Failed, Payload::Error(error)) if error.is_object() => {
                map.insert("error".into(), error);
            }
            (status, payload) => {
                return Err(format!(
                    "a {} task cannot carry {}",
                    status.as_str(),
                    payload.describe()
                ))
            }
        }
        Ok(Value::Object(map))
    }

    /// [`Task::detailed`] as the result of `tasks/get` (`resultType: "complete"`).
    pub fn get_result(&self, payload: Payload) -> Result<Value, String> {
        let Value::Object(detailed) = self.detailed(payload)? else {
            unreachable!("a detailed task is an object")
        };
        let mut map = Map::new();
        map.insert("resultType".into(), "complete".into());
        map.extend(detailed);
        Ok(Value::Object(map))
    }
}

/// What a detailed task inlines, by its status.
#[derive(Debug, Clone, PartialEq)]
pub enum Payload {
    None,
    /// The outstanding server-to-client requests of an `input_required` task, by key.
    InputRequests(Value),
    /// A completed task's result (for a `tools/call`, its `CallToolResult`).
    Result(Value),
    /// A failed task's JSON-RPC error.
    Error(Value),
}

impl Payload {
    fn describe(&self) -> &'static str {
        match self {
            Payload::None => "nothing",
            Payload::InputRequests(_) => "inputRequests",
            Payload::Result(_) => "a result",
            Payload::Error(_) => "an error",
        }
    }
}

/// Whether a request's client capabilities (the object under
/// `io.modelcontextprotocol/clientCapabilities`) declare the extension. Never assumed: a
/// request that does not declare it never gets a task.
pub fn declared(client_capabilities: Option<&Value>) -> bool {
    client_capabilities
        .and_then(|c| c.get("extensions"))
        .and_then(|e| e.get(EXTENSION))
        .is_some_and(|v| !v.is_null())
}

/// Whether a `tools/call` result is a task (`resultType: "task"`).
pub fn is_task(result: &Value) -> bool {
    result.get("resultType").and_then(Value::as_str) == Some("task")
}

/// The client capabilities that declare the extension (a request's
/// `io.modelcontextprotocol/clientCapabilities`).
pub fn capabilities() -> Value {
    json!({"extensions": {EXTENSION: {}}})
}

/// Whether `id` has the form of one of our own task ids. (Whether such a task exists, and
/// belongs to the caller, is the store's to say: a malformed id and another's get the same
/// answer as an unknown one.)
pub fn is_own_id(id: &str) -> bool {
    id.strip_prefix(OWN_PREFIX).is_some_and(|hex| {
        hex.len() == 32 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}

/// Our task id for 16 random bytes the caller drew.
pub fn own_id(random: [u8; 16]) -> String {
    let mut id = String::with_capacity(OWN_PREFIX.len() + 32);
    id.push_str(OWN_PREFIX);
    for b in random {
        id.push_str(&format!("{b:02x}"));
    }
    id
}

/// The id the client sees for the task `inner` of the upstream server `server`: the server's
/// id and the task's, each hex-encoded, so neither can forge the other's part.
pub fn upstream_id(server: &str, inner: &str) -> String {
    let hex = |s: &str| s.bytes().map(|b| format!("{b:02x}")).collect::<String>();
    format!("{UPSTREAM_PREFIX}{}.{}", hex(server), hex(inner))
}

/// The server and its own task id that [`upstream_id`] wrote, or `None` for any other text.
pub fn parse_upstream_id(id: &str) -> Option<(String, String)> {
    let rest = id.strip_prefix(UPSTREAM_PREFIX)?;
    let (server, inner) = rest.split_once('.')?;
    let unhex = |s: &str| -> Option<String> {
        if s.is_empty() || s.len() % 2 != 0 {
            return None;
        }
        let bytes: Option<Vec<u8>> = (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
            .collect();
        String::from_utf8(bytes?).ok()
    };
    Some((unhex(server)?, unhex(inner)?))
}

/// The parameters of `tasks/get`, `tasks/update` and `tasks/cancel`.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskRequest {
    pub task_id: String,
    /// `tasks/update`'s answers to the task's `inputRequests`, by key.
    pub input_responses: Option<Map<String, Value>>,
}

/// Reads the parameters of the `tasks/*` method `method`; the error names what is wrong.
pub fn request(method: &str, params: Option<&RawValue>) -> Result<TaskRequest, String> {
    #[derive(Deserialize)]
    struct Params {
        #[serde(rename = "taskId")]
        task_id: Option<Value>,
        #[serde(rename = "inputResponses")]
        input_responses: Option<Value>,
    }
    let params: Params = match params {
        Some(raw) => serde_json::from_str(raw.get()).map_err(|e| format!("{method}: {e}"))?,
        None => return Err(format!("{method} needs params with a taskId")),
    };
    let task_id = match params.task_id {
        Some(Value::String(id)) if !id.is_empty() && id.len() <= 512 => id,
        Some(other) => {
            return Err(format!(
                "{method}: \"taskId\" must be a task id string, got {other}"
            ))
        }
        None => return Err(format!("{method}: \"taskId\" is required")),
    };
    let input_responses = match (method, params.input_responses) {
        ("tasks/update", Some(Value::Object(map))) => Some(map),
        ("tasks/update", Some(other)) => {
            return Err(format!(
                "tasks/update: \"inputResponses\" must be an object of answers by key, got {other}"
            ))
        }
        ("tasks/update", None) => {
            return Err("tasks/update: \"inputResponses\" is required".to_owned())
        }
        (_, _) => None,
    };
    Ok(TaskRequest {
        task_id,
        input_responses,
    })
}

/// The notification that carries a task's whole state to a client listening for it.
pub fn notification(detailed: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/tasks", "params": detailed})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(status: Status) -> Task {
        Task {
            task_id: own_id([7; 16]),
            status,
            status_message: None,
            created_at: "2026-12-07T10:00:00Z".into(),
            last_updated_at: "2026-12-07T10:00:01Z".into(),
            ttl_ms: Some(3_600_000),
            poll_interval_ms: Some(2_000),
        }
    }

    #[test]
    fn a_created_task_is_a_task_result_with_no_null_but_an_unlimited_ttl() {
        let created = task(Status::Working).create_result();
        assert_eq!(created["resultType"], "task");
        assert!(created.to_string().starts_with(r#"{"resultType":"task""#));
        assert_eq!(created["status"], "working");
        assert_eq!(created["ttlMs"], 3_600_000);
        assert!(created.get("statusMessage").is_none());
        let mut unlimited = task(Status::Working);
        unlimited.ttl_ms = None;
        unlimited.poll_interval_ms = None;
        let created = unlimited.create_result();
        assert!(created["ttlMs"].is_null(), "null is the wire's unlimited");
        assert!(created.get("pollIntervalMs").is_none());
    }

    #[test]
    fn a_detailed_task_inlines_exactly_what_its_status_carries() {
        let result = json!({"content": [], "isError": false});
        let done = task(Status::Completed)
            .get_result(Payload::Result(result.clone()))
            .expect("completed");
        assert_eq!(done["result"], result);
        assert_eq!(done["resultType"], "complete");
        let failed = task(Status::Failed)
            .detailed(Payload::Error(json!({"code": -32603, "message": "gone"})))
            .expect("failed");
        assert_eq!(failed["error"]["code"], -32603);
        let asking = task(Status::InputRequired)
            .detailed(Payload::InputRequests(
                json!({"approve": {"method": "elicitation/create"}}),
            ))
            .expect("input");
        assert!(asking["inputRequests"]["approve"].is_object());
        for (status, payload) in [
            (Status::Working, Payload::Result(json!({}))),
            (Status::Completed, Payload::None),
            (Status::Failed, Payload::Result(json!({}))),
            (Status::Cancelled, Payload::Error(json!({}))),
            (Status::InputRequired, Payload::InputRequests(json!([]))),
        ] {
            let e = task(status).detailed(payload).expect_err(status.as_str());
            assert!(e.contains(status.as_str()), "{e}");
        }
        let note = notification(task(Status::Cancelled).detailed(Payload::None).expect("ok"));
        assert_eq!(note["method"], "notifications/tasks");
        assert_eq!(note["params"]["status"], "cancelled");
    }

    #[test]
    fn a_finished_task_never_moves() {
        use Status::*;
        let all = [Working, InputRequired, Completed, Failed, Cancelled];
        for from in all {
            assert_eq!(Status::parse(from.as_str()), Some(from));
            for to in all {
                let may = from.may_become(to);
                assert_eq!(may, !from.is_terminal() && from != to, "{from:?} -> {to:?}");
            }
        }
        assert_eq!(Status::parse("done"), None);
    }

    #[test]
    fn only_a_declared_extension_gets_tasks() {
        assert!(declared(Some(&json!({"extensions": {EXTENSION: {}}}))));
        assert!(!declared(Some(&json!({"extensions": {EXTENSION: null}}))));
        assert!(!declared(Some(&json!({"extensions": {"other": {}}}))));
        assert!(!declared(Some(&json!({}))));
        assert!(!declared(None));
        assert!(declared(Some(&capabilities())));
        assert!(is_task(&json!({"resultType": "task", "taskId": "t"})));
        assert!(!is_task(&json!({"resultType": "complete"})));
    }

    #[test]
    fn ids_are_ours_or_namespaced_and_nothing_else_passes_for_either() {
        let id = own_id([0xab; 16]);
        assert!(is_own_id(&id), "{id}");
        assert_eq!(id.len(), 34);
        for bad in [
            "t_",
            "t_ABAB",
            &id.to_uppercase(),
            &format!("{id}0"),
            "u_61.62",
            "",
        ] {
            assert!(!is_own_id(bad), "{bad}");
        }
        let wrapped = upstream_id("every.thing", "786512e2-9e0d.x");
        assert_eq!(
            parse_upstream_id(&wrapped),
            Some(("every.thing".to_owned(), "786512e2-9e0d.x".to_owned()))
        );
        assert!(!is_own_id(&wrapped));
        for bad in ["u_", "u_6.62", "u_61.", "u_zz.61", "t_61.62", "u_6162"] {
            assert_eq!(parse_upstream_id(bad), None, "{bad}");
        }
    }

    #[test]
    fn task_requests_name_what_is_wrong() {
        let raw = |s: &str| RawValue::from_string(s.to_owned()).expect("json");
        let get = request("tasks/get", Some(&raw(r#"{"taskId":"t_1"}"#))).expect("get");
        assert_eq!(get.task_id, "t_1");
        assert_eq!(get.input_responses, None);
        let update = request(
            "tasks/update",
            Some(&raw(
                r#"{"taskId":"t_1","inputResponses":{"approve":{"action":"accept"}}}"#,
            )),
        )
        .expect("update");
        assert!(update
            .input_responses
            .expect("answers")
            .contains_key("approve"));
        for (method, params, needle) in [
            ("tasks/get", None, "taskId"),
            ("tasks/get", Some(r#"{}"#), "\"taskId\" is required"),
            ("tasks/cancel", Some(r#"{"taskId":7}"#), "task id string"),
            ("tasks/cancel", Some(r#"{"taskId":""}"#), "task id string"),
            (
                "tasks/update",
                Some(r#"{"taskId":"t_1"}"#),
                "\"inputResponses\" is required",
            ),
            (
                "tasks/update",
                Some(r#"{"taskId":"t_1","inputResponses":[1]}"#),
                "object of answers",
            ),
            ("tasks/get", Some("[1]"), "tasks/get"),
        ] {
            let params = params.map(raw);
            let e = request(method, params.as_deref()).expect_err(method);
            assert!(e.contains(needle), "{method}: {e}");
        }
    }
}
