//! Core MCP's own long calls as tasks (MCP's tasks extension): a `tools/call` of a tool the
//! catalog marks, from a request that declared the extension, is recorded in the process's
//! task table (`crate::tasks`) and answered with the task at once; its work runs on a thread
//! of its own and its ending is written to the task. `tasks/get`, `tasks/update` and
//! `tasks/cancel` are answered here.
//!
//! Invariants:
//! - A task is created only for a request that declared the extension, for a tool this
//!   process runs itself; everything else runs as it always did.
//! - The task is in the store before its id is sent; the work starts after that.
//! - Every `tasks/*` request is for the session's principal, and judged by the policy for the
//!   task's tool; an unknown, forged or another's id gets the one same -32602.
//! - A task's work runs on its own thread, never a pool thread or a group's gate: a dev server
//!   that runs for hours holds no slot a quick call needs, and its processes (killed when the
//!   thread that started them ends, `coremcp-spawn`) live exactly as long as its work.

use std::sync::Arc;
use std::time::Duration;

use coremcp_tasks::{CreateError, End, Live, TaskError, Tasks};
use coremcp_wire::modern::{self, Envelope, Refusal};
use coremcp_wire::{rpc, tasks as wire};
use serde_json::value::RawValue;

use super::call::Request;
use super::{Inner, Session};
use crate::calls::{Call, Origin};
use crate::route::{self, Run, To};

/// What becomes of a call, as far as tasks go.
pub(super) enum Fate {
    /// It runs as it always did.
    Plain,
    /// It runs as a task of this table.
    Task(&'static Arc<Tasks>),
    /// It runs only as a task, and a 2026 request that does not take tasks gets -32021.
    Refused(Refusal),
    /// It runs only as a task and cannot be one here: the tool error's text.
    Cannot(String),
}

/// The shortest time a task's work gets: running as a task is for work that takes long.
const MIN_RUN: Duration = Duration::from_secs(600);
/// The longest a task's work may take (a dev server, a watcher): a day.
pub const MAX_RUN: Duration = Duration::from_secs(24 * 3600);

impl Session {
    /// What becomes of the call `name` with `run` from a request with `modern`, as far as tasks
    /// go: the catalog's entry says for its tools, a group outside it says in its manifest
    /// (read from its sidecar before it loads).
    pub(super) fn task_fate(&self, name: &str, run: &Run, modern: Option<&Envelope>) -> Fate {
        if !matches!(run.to, To::Plugin) {
            return Fate::Plain;
        }
        let entry = match coremcp_catalog::find(name) {
            Some((_, entry)) => Some(entry),
            None => self.inner.plugins.slots()[run.index]
                .listing()
                .and_then(|listing| listing.task_entry(name)),
        };
        let Some(entry) = entry.filter(|e| e.task.is_some()) else {
            return Fate::Plain;
        };
        let args: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(&run.args).unwrap_or_default();
        if !entry.runs_as_task(&args) {
            return Fate::Plain;
        }
        let declared = modern.is_some_and(|m| m.tasks);
        match (declared, crate::tasks::table()) {
            (true, Some(tasks)) => Fate::Task(tasks),
            (_, None) | (false, _) if !entry.task_required => Fate::Plain,
            (false, _) => match modern {
                Some(_) => Fate::Refused(modern::missing_extension(
                    wire::EXTENSION,
                    &format!("{name} runs only as a task; nothing was called"),
                )),
                None => Fate::Cannot(format!(
                    "{name} runs only as an MCP task, which this client does not take (the \
                     tasks extension of MCP 2026-07-28); nothing was called"
                )),
            },
            (true, None) => Fate::Cannot(format!(
                "{name} runs only as a task, and tasks are off here (Core MCP has no store to \
                 record them in); nothing was called"
            )),
        }
    }

    /// Records the call as a task and answers with it, then starts its work; `Err` gives the
    /// call back when the task could not be recorded (it then runs as it always did).
    pub(super) fn start_task(
        &self,
        id: &str,
        request: &Request<'_>,
        run: Run,
        origin: Origin<'_>,
        tasks: &'static Arc<Tasks>,
    ) -> Result<(), Run> {
        let inner = &self.inner;
        let name = request.name.as_ref();
        let slot = &inner.plugins.slots()[run.index];
        let declared = || slot.listing().and_then(|l| l.declared_timeout(name));
        let work = task_run(&request.args, self.timeout_for(&request.args, declared));
        let principal = origin.caller.principal();
        let (created, live) = match tasks.create(&principal, name, work) {
            Ok(created) => created,
            Err(CreateError::Bounded(text)) => {
                crate::metrics::refused(&crate::metrics::Subject::of(name, Some(&slot.id)));
                self.tool_error(id, &text);
                return Ok(());
            }
            Err(e @ CreateError::Unavailable(_)) => {
                tracing::warn!(tool = name, "{e}; the call runs without a task");
                return Err(run);
            }
        };
        tracing::info!(tool = name, task = %live.id, principal = %principal, "started a task");
        inner.out.send(rpc::response(id, &created.to_string()));
        let call = Call::for_task(
            &live.id,
            name,
            Some(&slot.id),
            (live.deadline, live.deadline_unix_ms),
            origin,
            Arc::clone(&live.stop),
        );
        let job = Arc::clone(inner);
        let worker = Arc::clone(&live);
        let started = std::thread::Builder::new()
            .name("coremcp-task".into())
            .spawn(move || job.run_task(&call, &run, &worker, tasks));
        if let Err(e) = started {
            tasks.finish(
                &live,
                End::Error {
                    code: rpc::INTERNAL_ERROR,
                    message: format!("{name} could not start: no thread for its task ({e})"),
                },
            );
        }
        Ok(())
    }

    /// `tasks/get`, `tasks/update` and `tasks/cancel` of a 2026 request.
    pub(super) fn task_request(
        &self,
        id: &str,
        method: &str,
        params: Option<&RawValue>,
        envelope: &Envelope,
    ) {
        let inner = &self.inner;
        let refuse = |refusal: Refusal| inner.out.send(refusal.to_message(Some(id)));
        if !envelope.tasks {
            return refuse(modern::missing_extension(
                wire::EXTENSION,
                &format!("{method} is part of the tasks extension; declare it to use tasks"),
            ));
        }
        let request = match wire::request(method, params) {
            Ok(request) => request,
            Err(message) => return refuse(Refusal::new(rpc::INVALID_PARAMS, message)),
        };
        if let Some(ids) = wire::parse_upstream_id(&request.task_id) {
            return self.upstream_task_request(id, method, request, ids);
        }
        let task_id = request.task_id.as_str();
        let principal = inner.caller.principal();
        let allowed = self.task_policy();
        let answer = match crate::tasks::table() {
            None => Err(TaskError::NotFound(task_id.to_owned())),
            Some(tasks) => match method {
                "tasks/get" => tasks
                    .get(task_id, &principal, &allowed)
                    .map(|task| task.to_string()),
                "tasks/update" => tasks
                    .update(
                        task_id,
                        &principal,
                        &allowed,
                        request
                            .input_responses
                            .as_ref()
                            .unwrap_or(&Default::default()),
                    )
                    .map(|()| "{}".to_owned()),
                _ => tasks
                    .cancel(task_id, &principal, &allowed)
                    .map(|()| "{}".to_owned()),
            },
        };
        match answer {
            Ok(result) => inner.out.send(rpc::response(id, &result)),
            Err(e) => {
                if let TaskError::NotFound(_) = e {
                    tracing::debug!(task = task_id, "{method} of no task of {principal}'s");
                }
                self.task_error(id, method, e)
            }
        }
    }
}

impl Session {
    /// Opens subscription `id` for `filter` and the task ids `asked`: only the caller's own
    /// tasks are granted (another's, like an unknown one, is left out of the acknowledgment),
    /// each one's state is sent at once, and again when a task of this process ends.
    pub(super) fn listen(&self, id: &str, filter: modern::Filter, asked: &[String]) {
        let inner = &self.inner;
        let Some(tasks) = crate::tasks::table().filter(|_| !asked.is_empty()) else {
            return inner.era.listen(id, filter, &[]);
        };
        let principal = inner.caller.principal();
        let allowed = self.task_policy();
        let granted: Vec<String> = asked
            .iter()
            .filter(|task| tasks.get(task, &principal, &allowed).is_ok())
            .cloned()
            .collect();
        // Acknowledged before any state of a task goes out on it.
        inner.era.listen(id, filter, &granted);
        for task in &granted {
            let era = Arc::downgrade(&inner.era);
            let subscription = id.to_owned();
            let watcher: coremcp_tasks::Watcher = Box::new(move |state| {
                era.upgrade().is_some_and(|era| {
                    era.notify(
                        &subscription,
                        modern::task_notification(&subscription, state),
                    )
                })
            });
            if let Err(e) = tasks.watch(task, &principal, &allowed, watcher) {
                tracing::debug!(task = %task, "a listened task is no longer there: {e}");
            }
        }
    }

    /// The policy on a task of the session's caller: may it still call the task's tool?
    pub(super) fn task_policy(&self) -> impl Fn(&str) -> Result<(), String> + '_ {
        let inner = &self.inner;
        move |tool: &str| {
            let may = match tool.starts_with("mcp__") {
                true => inner.upstreams.resolve(tool).is_ok_and(|target| {
                    let subject = coremcp_wire::policy::Subject::Upstream {
                        server: target.server.id(),
                        tool: &target.tool,
                        full: tool,
                    };
                    inner.config.grants.decide(&inner.caller, subject)
                        == coremcp_wire::policy::Decision::Allow
                }),
                false => {
                    let group = coremcp_catalog::group_of(tool).map_or("", |g| g.id);
                    route::may_call(&inner.config.grants, &inner.caller, group, tool)
                }
            };
            match may {
                true => Ok(()),
                false => Err(format!(
                    "refused: {} may no longer call {tool}, whose task this is",
                    inner.caller.principal()
                )),
            }
        }
    }
}

impl Inner {
    /// Runs a task's call in its group's plugin and writes how it ended.
    fn run_task(self: &Arc<Self>, call: &Call, run: &Run, live: &Live, tasks: &Tasks) {
        let task: Arc<str> = Arc::clone(&call.id);
        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            coremcp_engine::host_api::with_task(task, || self.run_plugin(run, call))
        }));
        let end = match ran {
            // A plugin that failed inside is a protocol error, not the tool's answer.
            Ok(_) if call.crashed.get().is_some() => End::Error {
                code: rpc::INTERNAL_ERROR,
                message: call.crashed.get().cloned().unwrap_or_default(),
            },
            Ok(result) => End::Result(result),
            Err(_) => End::Error {
                code: rpc::INTERNAL_ERROR,
                message: format!("{}: Core MCP failed while running it", call.tool),
            },
        };
        tasks.finish(live, end);
    }
}

/// How long a task's work may take: the call's own timeout (its `timeout_s` given, up to a
/// day, or the tool's declared one), and never less than [`MIN_RUN`].
fn task_run(args: &str, call_timeout: Duration) -> Duration {
    #[derive(serde::Deserialize)]
    struct Probe {
        timeout_s: Option<u64>,
    }
    let given = serde_json::from_str::<Probe>(args)
        .ok()
        .and_then(|p| p.timeout_s)
        .map(|s| Duration::from_secs(s) + Duration::from_secs(5));
    given
        .unwrap_or(call_timeout)
        .max(call_timeout)
        .clamp(MIN_RUN, MAX_RUN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tasks_work_gets_its_own_timeout_within_bounds() {
        let secs = Duration::from_secs;
        let run = |args: &str, timeout| task_run(args, timeout);
        assert_eq!(run("{}", secs(30)), MIN_RUN);
        assert_eq!(run(r#"{"timeout_s":3600}"#, secs(605)), secs(3605));
        assert_eq!(run(r#"{"timeout_s":999999}"#, secs(605)), MAX_RUN);
        assert_eq!(run(r#"{"timeout_s":10}"#, secs(700)), secs(700));
    }
}
