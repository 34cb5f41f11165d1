//! The durable record of every task: the `tasks` service of the store (one SQLite file beside
//! the groups' under the data folder, or a schema of the shared PostgreSQL), so a task exists
//! before its id is answered and any process on that store can answer for it.
//!
//! Invariants:
//! - A row is read only with its principal: another principal's task, like an unknown or
//!   expired one, is simply not found.
//! - A finished row never changes again (every write that moves a status names the statuses it
//!   moves from).
//! - A running row carries the lease of the process that runs it, which renews it; a row read
//!   past its lease is failed there and then, as the process that ran it is gone.

use coremcp_store::{Migration, Param, Row, Store, StoreError, StoreUrl};
use coremcp_wire::tasks::{Payload, Status, Task};

/// The store's service name (its SQLite file, its PostgreSQL schema).
pub const SERVICE: &str = "tasks";

const MIGRATIONS: &[Migration] = &[Migration {
    version: 1,
    name: "tasks",
    sql: "CREATE TABLE tasks (
            id TEXT PRIMARY KEY,
            principal TEXT NOT NULL,
            tool TEXT NOT NULL,
            status TEXT NOT NULL,
            status_message TEXT,
            payload TEXT,
            created_ms BIGINT NOT NULL,
            updated_ms BIGINT NOT NULL,
            ttl_ms BIGINT NOT NULL,
            expires_ms BIGINT NOT NULL,
            poll_ms BIGINT NOT NULL,
            owner TEXT NOT NULL,
            lease_ms BIGINT NOT NULL,
            cancel_asked BOOLEAN NOT NULL DEFAULT FALSE
          );
          CREATE INDEX tasks_expires ON tasks (expires_ms);
          CREATE INDEX tasks_owner ON tasks (owner, status);",
    search: &[],
    ranks: &[],
    tallies: &[],
}];

/// The statuses a task still runs in.
const RUNNING: &str = "status IN ('working', 'input_required')";
const COLUMNS: &str = "id, principal, tool, status, status_message, payload, created_ms, \
                       updated_ms, ttl_ms, expires_ms, poll_ms, owner, lease_ms";

/// One task's row.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub id: String,
    pub principal: String,
    pub tool: String,
    pub status: Status,
    pub status_message: Option<String>,
    /// By status: the result (completed), the error (failed), the input requests
    /// (input_required), as JSON text.
    pub payload: Option<String>,
    pub created_ms: i64,
    pub updated_ms: i64,
    pub ttl_ms: i64,
    pub expires_ms: i64,
    pub poll_ms: i64,
    /// The process that runs (or ran) it.
    pub owner: String,
    /// Until when its owner vouches that it runs.
    pub lease_ms: i64,
}

impl Record {
    fn from_row(row: &Row) -> Result<Self, StoreError> {
        let status = row.get_text("status")?;
        Ok(Record {
            id: row.get_text("id")?,
            principal: row.get_text("principal")?,
            tool: row.get_text("tool")?,
            status: Status::parse(&status)
                .ok_or_else(|| StoreError::Usage(format!("a task has the status {status:?}")))?,
            status_message: row.get_opt_text("status_message")?,
            payload: row.get_opt_text("payload")?,
            created_ms: row.get_i64("created_ms")?,
            updated_ms: row.get_i64("updated_ms")?,
            ttl_ms: row.get_i64("ttl_ms")?,
            expires_ms: row.get_i64("expires_ms")?,
            poll_ms: row.get_i64("poll_ms")?,
            owner: row.get_text("owner")?,
            lease_ms: row.get_i64("lease_ms")?,
        })
    }

    /// The task as the wire carries it.
    pub fn task(&self) -> Task {
        use coremcp_plugin_sdk::time::timestamp;
        Task {
            task_id: self.id.clone(),
            status: self.status,
            status_message: self.status_message.clone(),
            created_at: timestamp(self.created_ms),
            last_updated_at: timestamp(self.updated_ms),
            ttl_ms: Some(self.ttl_ms.max(0) as u64),
            poll_interval_ms: Some(self.poll_ms.max(0) as u64),
        }
    }

    /// What its status inlines (a payload that is not JSON is an internal error, named).
    pub fn payload(&self) -> Payload {
        let parsed = || {
            self.payload
                .as_deref()
                .and_then(|text| serde_json::from_str::<serde_json::Value>(text).ok())
        };
        match self.status {
            Status::Working | Status::Cancelled => Payload::None,
            Status::InputRequired => {
                Payload::InputRequests(parsed().unwrap_or_else(|| serde_json::json!({})))
            }
            Status::Completed => match parsed() {
                Some(result) => Payload::Result(result),
                None => Payload::Result(serde_json::json!({"content": [], "isError": false})),
            },
            Status::Failed => Payload::Error(parsed().unwrap_or_else(
                || serde_json::json!({"code": -32603, "message": "the task failed"}),
            )),
        }
    }
}

/// The `tasks` service of one store.
#[derive(Debug)]
pub struct TaskStore {
    store: Store,
}

/// How a running task ended, as written.
#[derive(Debug, Clone, PartialEq)]
pub struct Ending {
    pub status: Status,
    pub message: Option<String>,
    pub payload: Option<String>,
}

impl TaskStore {
    /// Opens (creating it if needed) the `tasks` service at `url`.
    pub fn open(url: &StoreUrl) -> Result<Self, StoreError> {
        Ok(TaskStore {
            store: Store::open(url, SERVICE, MIGRATIONS)?,
        })
    }

    /// Opens the `tasks` service as `service` (tests give each their own).
    pub fn open_as(url: &StoreUrl, service: &str) -> Result<Self, StoreError> {
        Ok(TaskStore {
            store: Store::open(url, service, MIGRATIONS)?,
        })
    }

    /// Writes a new task; it is readable once this returns.
    pub fn create(&self, record: &Record) -> Result<(), StoreError> {
        self.store.transaction(|tx| {
            tx.execute(
                &format!(
                    "INSERT INTO tasks ({COLUMNS}) VALUES \
                     ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)"
                ),
                &[
                    record.id.as_str().into(),
                    record.principal.as_str().into(),
                    record.tool.as_str().into(),
                    record.status.as_str().into(),
                    record.status_message.clone().into(),
                    record.payload.clone().into(),
                    record.created_ms.into(),
                    record.updated_ms.into(),
                    record.ttl_ms.into(),
                    record.expires_ms.into(),
                    record.poll_ms.into(),
                    record.owner.as_str().into(),
                    record.lease_ms.into(),
                ],
            )
            .map(|_| ())
        })
    }

    /// `principal`'s task `id` as it stands at `now_ms`: `None` when there is none of theirs
    /// (or it expired). A running task whose lease ran out is failed now, with `orphaned` as
    /// its message: the process that ran it is gone.
    pub fn get(
        &self,
        id: &str,
        principal: &str,
        now_ms: i64,
        orphaned: &str,
    ) -> Result<Option<Record>, StoreError> {
        let found = self.store.read(|tx| {
            tx.query_opt(
                &format!("SELECT {COLUMNS} FROM tasks WHERE id = $1 AND principal = $2"),
                &[id.into(), principal.into()],
            )?
            .as_ref()
            .map(Record::from_row)
            .transpose()
        })?;
        let Some(record) = found.filter(|r| r.expires_ms > now_ms) else {
            return Ok(None);
        };
        if record.status.is_terminal() || record.lease_ms > now_ms {
            return Ok(Some(record));
        }
        let error = serde_json::json!({"code": -32603, "message": orphaned}).to_string();
        let ending = Ending {
            status: Status::Failed,
            message: Some(orphaned.to_owned()),
            payload: Some(error),
        };
        self.end_if(id, &ending, now_ms, Some(now_ms))?;
        self.store.read(|tx| {
            tx.query_opt(
                &format!("SELECT {COLUMNS} FROM tasks WHERE id = $1"),
                &[id.into()],
            )?
            .as_ref()
            .map(Record::from_row)
            .transpose()
        })
    }

    /// Ends running task `id` as `ending`; false when it had already ended (or is gone).
    pub fn end(&self, id: &str, ending: &Ending, now_ms: i64) -> Result<bool, StoreError> {
        self.end_if(id, ending, now_ms, None)
    }

    /// [`TaskStore::end`], only if its lease ran out before `lease_before` when given.
    fn end_if(
        &self,
        id: &str,
        ending: &Ending,
        now_ms: i64,
        lease_before: Option<i64>,
    ) -> Result<bool, StoreError> {
        let lease = match lease_before {
            Some(_) => " AND lease_ms <= $6",
            None => "",
        };
        let mut params: Vec<Param> = vec![
            id.into(),
            ending.status.as_str().into(),
            ending.message.clone().into(),
            ending.payload.clone().into(),
            now_ms.into(),
        ];
        if let Some(before) = lease_before {
            params.push(before.into());
        }
        let changed = self.store.transaction(|tx| {
            tx.execute(
                &format!(
                    "UPDATE tasks SET status = $2, status_message = $3, payload = $4, \
                     updated_ms = $5 WHERE id = $1 AND {RUNNING}{lease}"
                ),
                &params,
            )
        })?;
        Ok(changed == 1)
    }

    /// Moves running task `id` between `working` and `input_required` (with its requests).
    pub fn set_running(
        &self,
        id: &str,
        status: Status,
        message: Option<&str>,
        payload: Option<&str>,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let changed = self.store.transaction(|tx| {
            tx.execute(
                &format!(
                    "UPDATE tasks SET status = $2, status_message = $3, payload = $4, \
                     updated_ms = $5 WHERE id = $1 AND {RUNNING}"
                ),
                &[
                    id.into(),
                    status.as_str().into(),
                    message.into(),
                    payload.into(),
                    now_ms.into(),
                ],
            )
        })?;
        Ok(changed == 1)
    }

    /// `owner` still runs its running tasks: their lease goes on to `until_ms`.
    pub fn renew(&self, owner: &str, until_ms: i64) -> Result<u64, StoreError> {
        self.store.transaction(|tx| {
            tx.execute(
                &format!("UPDATE tasks SET lease_ms = $2 WHERE owner = $1 AND {RUNNING}"),
                &[owner.into(), until_ms.into()],
            )
        })
    }

    /// `principal` asked to cancel running task `id`, which another process runs: that
    /// process reads it when it next renews its leases ([`TaskStore::cancels_asked`]).
    pub fn ask_cancel(&self, id: &str, principal: &str) -> Result<bool, StoreError> {
        let changed = self.store.transaction(|tx| {
            tx.execute(
                &format!(
                    "UPDATE tasks SET cancel_asked = TRUE WHERE id = $1 AND principal = $2 \
                     AND {RUNNING}"
                ),
                &[id.into(), principal.into()],
            )
        })?;
        Ok(changed == 1)
    }

    /// The running tasks of `owner` whose cancel another process was asked for.
    pub fn cancels_asked(&self, owner: &str) -> Result<Vec<String>, StoreError> {
        self.store.read(|tx| {
            tx.query(
                &format!("SELECT id FROM tasks WHERE owner = $1 AND cancel_asked AND {RUNNING}"),
                &[owner.into()],
            )?
            .iter()
            .map(|row| row.get_text(0))
            .collect()
        })
    }

    /// Removes the tasks whose time to live ended before `now_ms`; how many.
    pub fn purge(&self, now_ms: i64) -> Result<u64, StoreError> {
        self.store.transaction(|tx| {
            tx.execute("DELETE FROM tasks WHERE expires_ms <= $1", &[now_ms.into()])
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use coremcp_store::testing::Env;

    fn open(env: &Env) -> TaskStore {
        TaskStore::open_as(&env.url, &env.service).expect("opens")
    }

    fn record(id: &str, principal: &str, now: i64) -> Record {
        Record {
            id: id.into(),
            principal: principal.into(),
            tool: "shell_run".into(),
            status: Status::Working,
            status_message: None,
            payload: None,
            created_ms: now,
            updated_ms: now,
            ttl_ms: 60_000,
            expires_ms: now + 60_000,
            poll_ms: 1_000,
            owner: "p1".into(),
            lease_ms: now + 15_000,
        }
    }

    const GONE: &str = "the process that ran it ended";

    fn a_task_is_its_principals_and_ends_once(env: &Env) {
        let store = open(env);
        let now = 1_800_000_000_000;
        store.create(&record("t_a", "alice", now)).expect("create");
        let read = store
            .get("t_a", "alice", now, GONE)
            .expect("get")
            .expect("found");
        assert_eq!(read.status, Status::Working);
        assert_eq!(read.task().task_id, "t_a");
        // Another principal, an unknown id: not found, alike.
        assert_eq!(store.get("t_a", "bob", now, GONE).expect("get"), None);
        assert_eq!(store.get("t_b", "alice", now, GONE).expect("get"), None);
        let done = Ending {
            status: Status::Completed,
            message: None,
            payload: Some(r#"{"content":[],"isError":false}"#.into()),
        };
        assert!(store.end("t_a", &done, now + 5).expect("end"));
        // A finished task never moves again.
        let cancelled = Ending {
            status: Status::Cancelled,
            message: None,
            payload: None,
        };
        assert!(!store.end("t_a", &cancelled, now + 6).expect("end"));
        assert!(!store
            .set_running("t_a", Status::InputRequired, None, Some("{}"), now + 7)
            .expect("set"));
        let read = store
            .get("t_a", "alice", now + 8, GONE)
            .expect("get")
            .expect("found");
        assert_eq!(read.status, Status::Completed);
        assert_eq!(read.updated_ms, now + 5);
        assert!(matches!(read.payload(), Payload::Result(_)));
        // Past its time to live it is gone, and purged.
        assert_eq!(
            store.get("t_a", "alice", now + 60_000, GONE).expect("get"),
            None
        );
        assert_eq!(store.purge(now + 60_000).expect("purge"), 1);
    }

    fn a_task_whose_process_is_gone_is_failed(env: &Env) {
        let store = open(env);
        let now = 1_800_000_000_000;
        store.create(&record("t_a", "alice", now)).expect("create");
        store.create(&record("t_b", "alice", now)).expect("create");
        // Its owner renews t_a's lease (and t_b's, its too) …
        assert_eq!(store.renew("p1", now + 30_000).expect("renew"), 2);
        let done = Ending {
            status: Status::Completed,
            message: None,
            payload: Some("{}".into()),
        };
        store.end("t_b", &done, now).expect("end");
        assert_eq!(store.renew("p1", now + 31_000).expect("renew"), 1);
        // A cancel asked elsewhere reaches the owner, for its running task only.
        assert!(store.ask_cancel("t_a", "alice").expect("ask"));
        assert!(!store.ask_cancel("t_a", "bob").expect("ask"));
        assert!(!store.ask_cancel("t_b", "alice").expect("ask"));
        assert_eq!(
            store.cancels_asked("p1").expect("asked"),
            vec!["t_a".to_owned()]
        );
        let alive = store.get("t_a", "alice", now + 30_000, GONE).expect("get");
        assert_eq!(alive.expect("found").status, Status::Working);
        // … then stops: read past the lease, the task failed.
        let read = store
            .get("t_a", "alice", now + 31_001, GONE)
            .expect("get")
            .expect("found");
        assert_eq!(read.status, Status::Failed);
        assert_eq!(read.status_message.as_deref(), Some(GONE));
        match read.payload() {
            Payload::Error(e) => assert_eq!(e["message"], GONE),
            other => panic!("{other:?}"),
        }
        // A finished task is not failed for its old lease.
        let b = store.get("t_b", "alice", now + 40_000, GONE).expect("get");
        assert_eq!(b.expect("found").status, Status::Completed);
    }

    coremcp_store::both!(
        a_task_is_its_principals_and_ends_once,
        a_task_whose_process_is_gone_is_failed
    );
}
