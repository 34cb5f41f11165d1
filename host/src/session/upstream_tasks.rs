//! The tasks of upstream MCP servers (MCP's tasks extension). Core MCP declares the extension
//! on every `tools/call` to a 2026 server; a server that answers with a task gets one of two
//! things done with it:
//!
//! - **Passed on**, to a client that declared the extension in its request: the client sees
//!   the task under a namespaced id (`coremcp_wire::tasks::upstream_id`: the server's id and
//!   the server's task id), recorded in the task store as its principal's, so it routes back to
//!   its server, cannot collide with ours or another server's, and nobody else reaches it. Its
//!   `tasks/get`, `tasks/update` and `tasks/cancel` go to the server, with the ids rewritten
//!   both ways.
//! - **Waited for** (bridged), for a client that cannot take tasks: Core MCP polls the task at
//!   the server's interval and answers the call with its final result, reporting its status as
//!   `notifications/progress` when the client gave a progress token; a task still running at
//!   the call's deadline is cancelled, and the error says so.
//!
//! Invariants: a task id of a server never reaches a client unwrapped, and a namespaced id is
//! served only to the principal whose call created it, only while the policy still grants it
//! the tool; nothing of an upstream task is kept here but that binding.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use super::modern_call::APPROVAL_KEY;
use super::outcome::{Mrtr, Outcome};
use super::upstream::{failed, finish, MARGIN};
use super::{Inner, Session};
use crate::calls::{Call, Origin};
use coremcp_engine::pool;
use coremcp_tasks::{CreateError, End, Live, OnInput, TaskError, Waiting};
use coremcp_upstream::approval::{self, Answer};
use coremcp_upstream::hub::Target;
use coremcp_upstream::rpc::UpstreamError;
use coremcp_upstream::supervisor::Connection;
use coremcp_wire::tasks::{self as wire, TaskRequest};
use coremcp_wire::{render, rpc};

/// How long a passed-on task is bound to its principal when its server gives no time to live.
const DEFAULT_TTL: Duration = Duration::from_secs(24 * 3600);
/// The longest binding kept, whatever the server says.
const MAX_TTL: Duration = Duration::from_secs(7 * 24 * 3600);
/// The polling interval used when the server suggests none, and its bounds.
const DEFAULT_POLL: Duration = Duration::from_millis(1000);
const MIN_POLL: Duration = Duration::from_millis(100);
const MAX_POLL: Duration = Duration::from_secs(5);
/// How long a `tasks/*` request passed on to a server may take.
const TASK_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// `result` with `resultType` first and the task id `id` (the outbox adds `"complete"` to a
/// result that does not begin with a `resultType`).
fn rewritten(result: &Value, result_type: &str, id: &str) -> String {
    let mut out = Map::new();
    out.insert("resultType".into(), result_type.into());
    if let Some(fields) = result.as_object() {
        for (key, value) in fields {
            if key != "resultType" && key != "_meta" {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    if out.contains_key("taskId") {
        out.insert("taskId".into(), id.into());
    }
    Value::Object(out).to_string()
}

/// The least time a call waiting for its approval in a task gets: a human answers in minutes.
const APPROVAL_TASK_RUN: Duration = Duration::from_secs(600);

impl Inner {
    /// The first call to a server that needs a human's approval, from a client that takes
    /// tasks and can show the question: answered with a task of ours that waits for it
    /// (`input_required`, the question under "approval" in its `inputRequests`); the answer,
    /// given with `tasks/update`, runs the call in that task — or ends it, declined, with
    /// nothing called. `None`: no task could be recorded (the question is asked as before).
    pub(super) fn approval_task(
        self: &Arc<Self>,
        call: &Arc<Call>,
        conn: &Arc<Connection>,
        target: &Target,
        args: &str,
    ) -> Option<Outcome> {
        let tasks = crate::tasks::table()?;
        let (full, server) = (call.tool.as_str(), target.server.id());
        let mut question = approval::request(
            server,
            conn.client.server_info.as_deref(),
            &target.tool,
            args,
        );
        question["mode"] = json!("form");
        let requests =
            json!({ APPROVAL_KEY: {"method": "elicitation/create", "params": question} });
        let job = Arc::clone(self);
        let (call_now, conn_now) = (Arc::clone(call), Arc::clone(conn));
        let target_now = Target {
            server: Arc::clone(&target.server),
            tool: target.tool.clone(),
        };
        let args_now = args.to_owned();
        let on_input: OnInput = Box::new(move |answers, live| {
            let started = std::thread::Builder::new()
                .name("coremcp-task".into())
                .spawn(move || {
                    let end = job.approved_work(
                        &call_now,
                        &conn_now,
                        &target_now,
                        &args_now,
                        &answers,
                        &live,
                    );
                    tasks.finish(&live, end);
                });
            if let Err(e) = started {
                tracing::error!("no thread for an approved task's work: {e}");
            }
        });
        let waiting = Waiting {
            requests,
            message: format!(
                "waiting for a human's approval of the MCP server \"{server}\" (answer the \
                 approval input request with tasks/update)"
            ),
            on_input,
        };
        let run = call.timeout.max(APPROVAL_TASK_RUN);
        match tasks.create_waiting(&call.principal, full, run, waiting) {
            Ok((created, live)) => {
                tracing::info!(server, tool = full, task = %live.id, "asking the human for approval (a task)");
                Some(Outcome::Result(created.to_string()))
            }
            Err(CreateError::Bounded(text)) => {
                Some(Outcome::Result(render::call_error_text(&text)))
            }
            Err(e @ CreateError::Unavailable(_)) => {
                tracing::warn!(tool = full, "{e}; the approval is asked without a task");
                None
            }
        }
    }

    /// The work of an approval task once answered: the call made, or why it was not.
    fn approved_work(
        self: &Arc<Self>,
        call: &Call,
        conn: &Arc<Connection>,
        target: &Target,
        args: &str,
        answers: &Map<String, Value>,
        live: &Live,
    ) -> End {
        let (full, server) = (call.tool.as_str(), target.server.id());
        match answers.get(APPROVAL_KEY).map(approval::answer) {
            Some(Answer::Approved) => {
                tracing::info!(server, principal = %self.caller.principal(), "the human approved the server");
                conn.approve(&self.caller);
            }
            Some(Answer::Declined) => {
                tracing::info!(server, "the human declined the server");
                self.declined_lock()
                    .insert((server.to_owned(), conn.generation));
                return End::Result(render::call_error_text(&approval::declined(server, full)));
            }
            Some(Answer::Dismissed) | None => {
                return End::Result(render::call_error_text(&approval::dismissed(server, full)))
            }
        }
        let origin = Origin {
            caller: &call.caller,
            client: call.client.as_deref(),
            budget: call.budget,
        };
        let work = Arc::new(Call::for_task(
            &live.id,
            full,
            None,
            (live.deadline, live.deadline_unix_ms),
            origin,
            Arc::clone(&live.stop),
        ));
        match self.run_upstream(&work, target, args, None) {
            Outcome::Result(result) => End::Result(result),
            Outcome::Refused(refusal) => End::Error {
                code: refusal.code,
                message: refusal.message,
            },
            Outcome::Cancelled => End::Cancelled,
            // A task's call is never sent detached (`Call::is_task`).
            Outcome::Detached => End::Error {
                code: rpc::INTERNAL_ERROR,
                message: format!("{full}: its answer went astray"),
            },
        }
    }

    /// An upstream server answered `call` with the task `task`: passed on to a client that
    /// takes tasks, else waited for.
    pub(super) fn upstream_task(
        &self,
        call: &Call,
        conn: &Arc<Connection>,
        target: &Target,
        task: Value,
        mrtr: Option<&Mrtr>,
    ) -> Result<Outcome, Option<String>> {
        let (full, server) = (call.tool.as_str(), target.server.id());
        let Some(inner_id) = task["taskId"].as_str().filter(|t| !t.is_empty()) else {
            return Err(Some(format!(
                "{full} failed: the MCP server \"{server}\" answered with a task without a taskId"
            )));
        };
        if let Some(tasks) = crate::tasks::table().filter(|_| mrtr.is_some_and(|m| m.tasks)) {
            let id = wire::upstream_id(server, inner_id);
            let ttl = task["ttlMs"]
                .as_u64()
                .map_or(DEFAULT_TTL, Duration::from_millis)
                .min(MAX_TTL);
            match tasks.adopt(&id, &call.principal, full, ttl) {
                Ok(()) => {
                    tracing::info!(tool = full, task = %id, "passing an upstream task on");
                    return Ok(Outcome::Result(rewritten(&task, "task", &id)));
                }
                // Unbound, it must not reach the client: Core MCP waits for it instead.
                Err(e) => tracing::warn!(tool = full, "{e}; waiting for the upstream task"),
            }
        }
        self.bridge(call, conn, server, inner_id, &task)
    }

    /// Waits for the upstream task `inner_id` of `call` and answers with its end.
    fn bridge(
        &self,
        call: &Call,
        conn: &Arc<Connection>,
        server: &str,
        inner_id: &str,
        first: &Value,
    ) -> Result<Outcome, Option<String>> {
        let full = call.tool.as_str();
        tracing::debug!(tool = full, task = inner_id, "waiting for an upstream task");
        let mut state = first.clone();
        let mut polls = 0u64;
        loop {
            self.report_progress(call, &state, polls);
            let wait = poll_interval(&state);
            let outcome = self.sleep_or_stop(call, wait);
            if let Some(stopped) = outcome {
                cancel_upstream(conn, inner_id);
                return match stopped {
                    Stop::Cancelled => Err(None),
                    Stop::Deadline => Err(Some(format!(
                        "{full} did not finish within its {} s: the MCP server \"{server}\" runs \
                         it as a task, which was cancelled (a client that takes MCP tasks gets \
                         the task itself, and no deadline)",
                        call.timeout.as_secs()
                    ))),
                };
            }
            let left = call
                .deadline
                .saturating_duration_since(Instant::now())
                .saturating_sub(MARGIN);
            let timeout = conn.client.timeout().min(left).max(MIN_POLL);
            polls += 1;
            state = match conn.client.request(
                "tasks/get",
                task_params(inner_id, None),
                timeout,
                &call.cancelled,
            ) {
                Ok(state) => state,
                Err(UpstreamError::Cancelled { .. }) => {
                    cancel_upstream(conn, inner_id);
                    return Err(None);
                }
                Err(e) => return Err(Some(failed(full, server, &e))),
            };
            match state["status"].as_str() {
                Some("completed") => {
                    let result = state.get("result").cloned().unwrap_or_else(|| json!({}));
                    return Ok(Outcome::Result(finish(result, call.budget)));
                }
                Some("failed") => {
                    let error = &state["error"];
                    return Ok(Outcome::Result(render::call_error_text(&format!(
                        "{full} failed: the MCP server \"{server}\" ended its task with error {}: {}",
                        error["code"].as_i64().unwrap_or(rpc::INTERNAL_ERROR),
                        error["message"].as_str().unwrap_or("(no message)")
                    ))));
                }
                Some("cancelled") => {
                    return Ok(Outcome::Result(render::call_error_text(&format!(
                        "{full} did not finish: the MCP server \"{server}\" cancelled its task{}",
                        state["statusMessage"]
                            .as_str()
                            .map_or_else(String::new, |m| format!(" ({m})"))
                    ))))
                }
                Some("input_required") => {
                    cancel_upstream(conn, inner_id);
                    return Ok(Outcome::Result(render::call_error_text(&format!(
                        "{full} did not finish: the MCP server \"{server}\" asked for input while \
                         it ran, which Core MCP cannot ask this client (it does not take MCP \
                         tasks); the task was cancelled"
                    ))));
                }
                _ => {}
            }
        }
    }

    /// `notifications/progress` for a waited-for task, when the client gave a token.
    fn report_progress(&self, call: &Call, state: &Value, polls: u64) {
        let Some(token) = call.progress.get() else {
            return;
        };
        let Ok(token) = serde_json::from_str::<Value>(token) else {
            return;
        };
        let status = state["status"].as_str().unwrap_or("working");
        let message = match state["statusMessage"].as_str() {
            Some(text) => format!("task {status}: {text}"),
            None => format!("task {status}"),
        };
        let params = json!({"progressToken": token, "progress": polls, "message": message});
        self.out.send_for(
            &call.id,
            rpc::notification("notifications/progress", &params.to_string()),
        );
    }

    /// Sleeps `wait`, or less when the call is cancelled or its deadline comes first.
    fn sleep_or_stop(&self, call: &Call, wait: Duration) -> Option<Stop> {
        let until = Instant::now() + wait;
        loop {
            if call.cancelled.load(Ordering::Relaxed) {
                return Some(match Instant::now() + MARGIN >= call.deadline {
                    true => Stop::Deadline,
                    false => Stop::Cancelled,
                });
            }
            let now = Instant::now();
            if now + MARGIN >= call.deadline {
                return Some(Stop::Deadline);
            }
            if now >= until {
                return None;
            }
            std::thread::sleep((until - now).min(Duration::from_millis(20)));
        }
    }
}

/// Why a `tasks/*` request passed on to a server was not answered with a result.
enum Failed {
    /// The server's JSON-RPC error.
    Rpc(i64, String),
    /// No answer from it (it is down, timed out, …).
    Other(String),
}

/// Why a wait for a task ended early.
enum Stop {
    Cancelled,
    Deadline,
}

/// The interval a task's state asks to be polled at, within bounds.
fn poll_interval(state: &Value) -> Duration {
    state["pollIntervalMs"]
        .as_u64()
        .map_or(DEFAULT_POLL, Duration::from_millis)
        .clamp(MIN_POLL, MAX_POLL)
}

/// The params of a `tasks/*` request to a server, declaring the extension.
fn task_params(inner_id: &str, responses: Option<&Map<String, Value>>) -> Value {
    let mut params = json!({
        "taskId": inner_id,
        "_meta": {coremcp_wire::modern::CAPABILITIES_KEY: wire::capabilities()},
    });
    if let Some(responses) = responses {
        params["inputResponses"] = Value::Object(responses.clone());
    }
    params
}

/// Tells the server to stop task `inner_id`, from a thread of the pool (best effort: the
/// caller does not wait).
fn cancel_upstream(conn: &Arc<Connection>, inner_id: &str) {
    let conn = Arc::clone(conn);
    let params = task_params(inner_id, None);
    pool::global().spawn(Box::new(move || {
        let never = std::sync::atomic::AtomicBool::new(false);
        let cancelled = conn
            .client
            .request("tasks/cancel", params, TASK_REQUEST_TIMEOUT, &never);
        if let Err(e) = cancelled {
            tracing::debug!("an upstream task was not cancelled: {e}");
        }
    }));
}

impl Session {
    /// `tasks/get`, `tasks/update` or `tasks/cancel` of an upstream server's task the client
    /// knows as `request.task_id` (namespaced): passed on to its server for the principal
    /// that owns it, the ids rewritten both ways.
    pub(super) fn upstream_task_request(
        &self,
        id: &str,
        method: &str,
        request: TaskRequest,
        (server, inner_id): (String, String),
    ) {
        let inner = &self.inner;
        let task_id = request.task_id.as_str();
        let principal = inner.caller.principal();
        let allowed = self.task_policy();
        let bound = match crate::tasks::table() {
            None => Err(TaskError::NotFound(task_id.to_owned())),
            Some(tasks) => tasks.adopted(task_id, &principal, &allowed),
        };
        let target = bound.and_then(|tool| {
            inner
                .upstreams
                .resolve(&tool)
                .ok()
                .filter(|t| t.server.id() == server)
                .ok_or_else(|| {
                    TaskError::Store(format!(
                        "the MCP server \"{server}\" of task {task_id} is no longer configured"
                    ))
                })
        });
        let target = match target {
            Ok(target) => target,
            Err(e) => return self.task_error(id, method, e),
        };
        let job = Arc::clone(inner);
        let (id, method, task_id) = (id.to_owned(), method.to_owned(), task_id.to_owned());
        pool::global().spawn(Box::new(move || {
            let deadline = Instant::now() + TASK_REQUEST_TIMEOUT;
            let never = std::sync::atomic::AtomicBool::new(false);
            let answer = target
                .server
                .connection(deadline)
                .map_err(|why| Failed::Other(format!("the MCP server \"{server}\" {why}")))
                .and_then(|conn| {
                    let params = task_params(&inner_id, request.input_responses.as_ref());
                    conn.client
                        .request(&method, params, TASK_REQUEST_TIMEOUT, &never)
                        .map_err(|e| match e {
                            UpstreamError::Rpc { code, message, .. } => Failed::Rpc(code, message),
                            e => Failed::Other(format!("the MCP server \"{server}\": {e}")),
                        })
                });
            let message = match answer {
                Ok(mut state) => {
                    if let Some(result) = state.get("result").cloned() {
                        let capped = finish(result, job.budget_of(None, None));
                        state["result"] = serde_json::from_str(&capped).unwrap_or_default();
                    }
                    rpc::response(&id, &rewritten(&state, "complete", &task_id))
                }
                // The server's own JSON-RPC error, as it gave it.
                Err(Failed::Rpc(code, message)) => {
                    rpc::error(Some(&id), code, &format!("{method}: {message}"))
                }
                Err(Failed::Other(text)) => {
                    rpc::error(Some(&id), rpc::INTERNAL_ERROR, &format!("{method}: {text}"))
                }
            };
            job.out.send(message);
        }));
    }

    /// The JSON-RPC error answering a `tasks/*` request that was not served.
    pub(super) fn task_error(&self, id: &str, method: &str, e: TaskError) {
        let code = match e {
            TaskError::NotFound(_) | TaskError::Refused(_) => rpc::INVALID_PARAMS,
            TaskError::Store(_) => rpc::INTERNAL_ERROR,
        };
        self.inner
            .out
            .send(rpc::error(Some(id), code, &format!("{method}: {e}")));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_passed_on_task_carries_our_id_and_its_type_first() {
        let upstream = json!({"taskId": "task-1", "status": "working", "resultType": "task",
                              "pollIntervalMs": 200, "_meta": {"x": 1}});
        let ours = wire::upstream_id("m", "task-1");
        let text = rewritten(&upstream, "task", &ours);
        assert!(text.starts_with(r#"{"resultType":"task""#), "{text}");
        let value: Value = serde_json::from_str(&text).expect("json");
        assert_eq!(value["taskId"], ours.as_str());
        assert_eq!(value["pollIntervalMs"], 200);
        assert!(value.get("_meta").is_none());
        // An acknowledgment names no task, and gets none.
        let ack = rewritten(&json!({"resultType": "complete"}), "complete", &ours);
        assert_eq!(ack, r#"{"resultType":"complete"}"#);
    }

    #[test]
    fn polling_follows_the_server_within_bounds() {
        assert_eq!(poll_interval(&json!({})), DEFAULT_POLL);
        assert_eq!(
            poll_interval(&json!({"pollIntervalMs": 200})),
            Duration::from_millis(200)
        );
        assert_eq!(poll_interval(&json!({"pollIntervalMs": 1})), MIN_POLL);
        assert_eq!(
            poll_interval(&json!({"pollIntervalMs": 3_600_000})),
            MAX_POLL
        );
    }
}
