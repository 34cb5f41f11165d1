//! The task table on both stores: ownership, bounds, endings, cancels and an exit.

use super::*;
use coremcp_store::testing::Env;

fn table(env: &Env, bounds: Bounds) -> Arc<Tasks> {
    let tasks = Tasks::new(Settings {
        store: Some(env.url.clone()),
        bounds,
        poll: Duration::from_millis(500),
    });
    let store = TaskStore::open_as(&env.url, &env.service).map_err(|e| e.to_string());
    tasks.store.set(store).expect("first");
    tasks
}

fn any(_: &str) -> Result<(), String> {
    Ok(())
}

fn id_of(created: &Value) -> String {
    created["taskId"].as_str().expect("taskId").to_owned()
}

fn a_task_is_created_read_and_ended_by_its_principal_only(env: &Env) {
    let tasks = table(env, Bounds::default());
    let (created, live) = tasks
        .create("alice", "shell_run", Duration::from_secs(60))
        .expect("created");
    assert_eq!(created["resultType"], "task");
    assert_eq!(created["status"], "working");
    assert_eq!(created["pollIntervalMs"], 500);
    let id = id_of(&created);
    assert!(wire::is_own_id(&id), "{id}");
    assert_eq!(created["ttlMs"], (60 + KEPT_AFTER.as_secs()) * 1000);
    live.push_output(b"listening on http://localhost:5173\n");
    let working = tasks.get(&id, "alice", &any).expect("get");
    assert_eq!(working["status"], "working");
    assert_eq!(working["resultType"], "complete");
    let message = working["statusMessage"].as_str().expect("message");
    assert!(
        message.contains("listening on http://localhost:5173"),
        "{message}"
    );
    let read = tasks.output(&id, "alice", 0, 1000).expect("output");
    assert_eq!(read["output"], "listening on http://localhost:5173\n");
    assert_eq!(read["next_offset"], 35);
    // Another principal, a forged and a malformed id: one same answer.
    let forged = wire::own_id([9; 16]);
    for (id, who) in [
        (id.as_str(), "bob"),
        (forged.as_str(), "alice"),
        ("t_1", "alice"),
    ] {
        for e in [
            tasks.get(id, who, &any).expect_err("get"),
            tasks.cancel(id, who, &any).expect_err("cancel"),
            tasks
                .update(id, who, &any, &serde_json::Map::new())
                .expect_err("update"),
            tasks.output(id, who, 0, 10).expect_err("output"),
        ] {
            assert!(
                matches!(&e, TaskError::NotFound(named) if named == id),
                "{e}"
            );
        }
    }
    let result = r#"{"content":[{"type":"text","text":"ok"}],"isError":false}"#;
    tasks.finish(&live, End::Result(result.to_owned()));
    // The first ending wins.
    tasks.finish(&live, End::Cancelled);
    let done = tasks.get(&id, "alice", &any).expect("get");
    assert_eq!(done["status"], "completed");
    assert_eq!(done["result"]["content"][0]["text"], "ok");
    // A cancel of a finished task is acknowledged and changes nothing.
    tasks.cancel(&id, "alice", &any).expect("cancel");
    assert_eq!(
        tasks.get(&id, "alice", &any).expect("get")["status"],
        "completed"
    );
    let gone = tasks.output(&id, "alice", 0, 10).expect("output");
    // The policy is asked on every request: a principal whose grant went is refused.
    let e = tasks
        .get(&id, "alice", &|tool| {
            Err(format!("{tool} is no longer granted"))
        })
        .expect_err("refused");
    assert!(
        matches!(&e, TaskError::Refused(t) if t == "shell_run is no longer granted"),
        "{e}"
    );
    assert_eq!(gone["running_here"], false);
}

fn a_watcher_hears_the_end_of_its_principals_task_once(env: &Env) {
    let tasks = table(env, Bounds::default());
    let (created, live) = tasks
        .create("alice", "shell_run", Duration::from_secs(60))
        .expect("created");
    let id = id_of(&created);
    let heard = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&heard);
    let watcher: Watcher = Box::new(move |state: &Value| {
        sink.lock().expect("lock").push(state.clone());
        true
    });
    tasks.watch(&id, "alice", &any, watcher).expect("watch");
    // Another's task is not watched, and says so as an unknown one.
    let nobody: Watcher = Box::new(|_: &Value| panic!("told another's task"));
    assert!(matches!(
        tasks.watch(&id, "bob", &any, nobody),
        Err(TaskError::NotFound(_))
    ));
    tasks.finish(
        &live,
        End::Result(r#"{"content":[],"isError":false}"#.into()),
    );
    tasks.finish(&live, End::Cancelled);
    {
        // Its state then, and its end, once.
        let heard = heard.lock().expect("lock");
        let statuses: Vec<&str> = heard.iter().filter_map(|s| s["status"].as_str()).collect();
        assert_eq!(statuses, ["working", "completed"]);
        assert!(heard[1]["result"].is_object());
    }
    // A finished task is told once, at once.
    let late = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&late);
    let watcher: Watcher = Box::new(move |state: &Value| {
        sink.lock().expect("lock").push(state["status"].clone());
        true
    });
    tasks.watch(&id, "alice", &any, watcher).expect("watch");
    assert_eq!(*late.lock().expect("lock"), [json!("completed")]);
}

fn an_upstream_task_is_bound_to_its_principal_and_never_orphaned(env: &Env) {
    let tasks = table(env, Bounds::default());
    let id = wire::upstream_id("gh", "786512e2");
    tasks
        .adopt(&id, "alice", "mcp__gh__build", Duration::from_secs(60))
        .expect("adopt");
    assert_eq!(
        tasks.adopted(&id, "alice", &any).expect("adopted"),
        "mcp__gh__build"
    );
    assert!(matches!(
        tasks.adopted(&id, "bob", &any),
        Err(TaskError::NotFound(_))
    ));
    // It is not one of ours: our own requests do not find it.
    assert!(matches!(
        tasks.get(&id, "alice", &any),
        Err(TaskError::NotFound(_))
    ));
    // Long past a lease, it is still the server's to tell.
    let store = TaskStore::open_as(&env.url, &env.service).expect("store");
    let later = now_ms() + 2 * LEASE.as_millis() as i64;
    let read = store
        .get(&id, "alice", later, ORPHANED)
        .expect("get")
        .expect("found");
    assert_eq!(read.status, Status::Working);
    // And an own task is no upstream one.
    let (created, _live) = tasks
        .create("alice", "shell_run", Duration::from_secs(60))
        .expect("created");
    let own = id_of(&created);
    assert!(matches!(
        tasks.adopted(&own, "alice", &any),
        Err(TaskError::NotFound(_))
    ));
}

fn a_waiting_task_starts_its_work_on_the_answer_to_what_it_asked(env: &Env) {
    let tasks = table(env, Bounds::default());
    let answers = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&answers);
    let waiting = Waiting {
        requests: json!({"approval": {"method": "elicitation/create", "params": {}}}),
        message: "waiting for a human".into(),
        on_input: Box::new(move |given, _| sink.lock().expect("lock").push(given)),
    };
    let (created, live) = tasks
        .create_waiting("alice", "mcp__gh__build", Duration::from_secs(60), waiting)
        .expect("created");
    assert_eq!(created["status"], "input_required");
    assert_eq!(created["statusMessage"], "waiting for a human");
    let id = id_of(&created);
    let asking = tasks.get(&id, "alice", &any).expect("get");
    assert_eq!(asking["status"], "input_required");
    assert!(asking["inputRequests"]["approval"].is_object(), "{asking}");
    // A key it did not ask is ignored; another principal is not found.
    let other = json!({"other": {"action": "accept"}});
    tasks
        .update(&id, "alice", &any, other.as_object().expect("map"))
        .expect("ack");
    assert!(answers.lock().expect("lock").is_empty());
    let accept = json!({"approval": {"action": "accept"}, "other": 1});
    let accept = accept.as_object().expect("map");
    assert!(tasks.update(&id, "bob", &any, accept).is_err());
    tasks.update(&id, "alice", &any, accept).expect("ack");
    // Answered once: the work starts with exactly the keys asked.
    tasks.update(&id, "alice", &any, accept).expect("ack");
    assert_eq!(
        *answers.lock().expect("lock"),
        [json!({"approval": {"action": "accept"}})
            .as_object()
            .cloned()
            .expect("map")]
    );
    assert_eq!(
        tasks.get(&id, "alice", &any).expect("get")["status"],
        "working"
    );
    tasks.finish(
        &live,
        End::Result(r#"{"content":[],"isError":false}"#.into()),
    );
}

fn a_tasks_work_asks_and_gets_every_answer_in_parts(env: &Env) {
    let tasks = table(env, Bounds::default());
    let (created, live) = tasks
        .create("alice", "multi_input", Duration::from_secs(60))
        .expect("created");
    let id = id_of(&created);
    let asker = Arc::clone(&tasks);
    let asking_id = id.clone();
    let work = std::thread::spawn(move || {
        asker.ask(
            &asking_id,
            json!({"first": {"method": "elicitation/create"}, "second": {"method": "elicitation/create"}}),
            "two questions",
        )
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    while tasks.get(&id, "alice", &any).expect("get")["status"] != "input_required" {
        assert!(Instant::now() < deadline, "never asked");
        std::thread::sleep(Duration::from_millis(5));
    }
    let first = json!({"first": {"action": "accept"}, "nope": 1});
    tasks
        .update(&id, "alice", &any, first.as_object().expect("map"))
        .expect("ack");
    let partly = tasks.get(&id, "alice", &any).expect("get");
    assert_eq!(partly["status"], "input_required");
    let keys: Vec<&String> = partly["inputRequests"]
        .as_object()
        .expect("map")
        .keys()
        .collect();
    assert_eq!(keys, ["second"], "{partly}");
    let second = json!({"second": {"action": "decline"}});
    tasks
        .update(&id, "alice", &any, second.as_object().expect("map"))
        .expect("ack");
    let answers = work.join().expect("work").expect("answered");
    assert_eq!(
        Value::Object(answers),
        json!({"first": {"action": "accept"}, "second": {"action": "decline"}})
    );
    assert_eq!(
        tasks.get(&id, "alice", &any).expect("get")["status"],
        "working"
    );
    // A cancel ends a wait.
    let waiter = Arc::clone(&tasks);
    let waiting_id = id.clone();
    let work = std::thread::spawn(move || {
        waiter.ask(
            &waiting_id,
            json!({"third": {"method": "elicitation/create"}}),
            "one more",
        )
    });
    while tasks.get(&id, "alice", &any).expect("get")["status"] != "input_required" {
        std::thread::sleep(Duration::from_millis(5));
    }
    tasks.cancel(&id, "alice", &any).expect("cancel");
    assert!(matches!(work.join().expect("work"), Err(AskError::Stopped)));
    tasks.finish(&live, End::Cancelled);
    assert_eq!(
        tasks.get(&id, "alice", &any).expect("get")["status"],
        "cancelled"
    );
}

fn running_tasks_are_bounded_per_principal_and_in_all(env: &Env) {
    let tasks = table(
        env,
        Bounds {
            per_principal: 2,
            total: 3,
        },
    );
    let run = Duration::from_secs(60);
    let a1 = tasks.create("alice", "shell_run", run).expect("a1").1;
    tasks.create("alice", "shell_run", run).expect("a2");
    let e = tasks.create("alice", "shell_run", run).expect_err("a3");
    assert!(
        matches!(&e, CreateError::Bounded(t) if t.contains("at most 2")),
        "{e}"
    );
    tasks.create("bob", "shell_run", run).expect("b1");
    let e = tasks.create("carol", "shell_run", run).expect_err("c1");
    assert!(
        matches!(&e, CreateError::Bounded(t) if t.contains("at most 3")),
        "{e}"
    );
    // One ends: room again.
    tasks.finish(&a1, End::Result("{}".into()));
    tasks.create("carol", "shell_run", run).expect("c1 now");
}

fn a_cancel_stops_the_work_and_an_exit_fails_what_still_runs(env: &Env) {
    let tasks = table(env, Bounds::default());
    let run = Duration::from_secs(60);
    let (created, live) = tasks.create("alice", "shell_run", run).expect("one");
    let id = id_of(&created);
    tasks.cancel(&id, "alice", &any).expect("cancel");
    assert!(live.stop.load(Ordering::Relaxed), "the work sees the stop");
    assert!(tasks.get(&id, "alice", &any).expect("get")["statusMessage"]
        .as_str()
        .is_some_and(|m| m.contains("cancelled")));
    // The work then ends as it ends when stopped (a tool error): the cancel names it.
    tasks.finish(
        &live,
        End::Result(r#"{"content":[],"isError":true}"#.into()),
    );
    let cancelled = tasks.get(&id, "alice", &any).expect("get");
    assert_eq!(cancelled["status"], "cancelled");
    assert!(cancelled.get("result").is_none());
    let (created, live) = tasks.create("alice", "shell_run", run).expect("two");
    let id = id_of(&created);
    let exiting = Arc::clone(&tasks);
    let worker = std::thread::spawn(move || {
        while !live.stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(5));
        }
        exiting.finish(&live, End::Cancelled);
    });
    tasks.stop_all(Duration::from_secs(10));
    worker.join().expect("worker");
    let failed = tasks.get(&id, "alice", &any).expect("get");
    assert_eq!(failed["status"], "failed");
    assert_eq!(failed["error"]["message"], ORPHANED);
}

fn a_task_of_a_process_that_died_is_failed_once_its_lease_ends(env: &Env) {
    let tasks = table(env, Bounds::default());
    let (created, live) = tasks
        .create("alice", "shell_run", Duration::from_secs(60))
        .expect("one");
    let id = id_of(&created);
    // The process "dies": its table is gone and nobody renews; a new process reads the
    // task after the lease.
    std::mem::forget(live);
    let store = TaskStore::open_as(&env.url, &env.service).expect("store");
    let later = now_ms() + LEASE.as_millis() as i64 + 1;
    let read = store
        .get(&id, "alice", later, ORPHANED)
        .expect("get")
        .expect("found");
    assert_eq!(read.status, Status::Failed);
    assert_eq!(read.status_message.as_deref(), Some(ORPHANED));
}

coremcp_store::both!(
    a_task_is_created_read_and_ended_by_its_principal_only,
    a_watcher_hears_the_end_of_its_principals_task_once,
    an_upstream_task_is_bound_to_its_principal_and_never_orphaned,
    a_waiting_task_starts_its_work_on_the_answer_to_what_it_asked,
    a_tasks_work_asks_and_gets_every_answer_in_parts,
    running_tasks_are_bounded_per_principal_and_in_all,
    a_cancel_stops_the_work_and_an_exit_fails_what_still_runs,
    a_task_of_a_process_that_died_is_failed_once_its_lease_ends,
);
