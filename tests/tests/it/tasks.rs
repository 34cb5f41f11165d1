//! Core MCP's own long calls as tasks (MCP's tasks extension), through the real binary on
//! both stores: a `shell_run` task polled to its result over stdio and over sessionless HTTP,
//! a dev server whose output is read while it runs and which a cancel stops with all its
//! processes, tasks that belong to their principal, a task whose process died, and a client
//! that does not take tasks getting what it always got.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use coremcp_tests::http::{request, Response, Serve};
use coremcp_tests::{none_left_with, plugins, text, unique_sleep, Server, TempDir, WAIT};
use serde_json::{json, Value};

const VERSION: &str = "2026-07-28";
const TASKS: &str = "io.modelcontextprotocol/tasks";

/// The 2026 envelope; `tasks`: the request declares the extension.
fn envelope(tasks: bool) -> Value {
    let capabilities = match tasks {
        true => json!({"extensions": {TASKS: {}}}),
        false => json!({}),
    };
    json!({
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "coremcp-tests", "version": "0"}
    })
}

fn message(id: u64, method: &str, mut params: Value, tasks: bool) -> Value {
    params["_meta"] = envelope(tasks);
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// A 2026 stdio client of one `coremcp stdio`.
struct Client {
    server: Server,
    next: u64,
}

impl Client {
    fn start(data: &TempDir, store: Option<&str>) -> Client {
        Client::start_with(data, store, &[])
    }

    fn start_with(data: &TempDir, store: Option<&str>, env: &[(&str, &str)]) -> Client {
        Client::start_groups(&["ops"], data, store, env)
    }

    fn start_groups(
        groups: &[&str],
        data: &TempDir,
        store: Option<&str>,
        env: &[(&str, &str)],
    ) -> Client {
        Client::start_args(groups, data, store, &[], env)
    }

    fn start_args(
        groups: &[&str],
        data: &TempDir,
        store: Option<&str>,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Client {
        let dir = plugins(groups);
        let data = data.path().to_string_lossy().into_owned();
        let mut args = vec!["--data", data.as_str()];
        if let Some(store) = store {
            args.extend(["--store", store]);
        }
        args.extend_from_slice(extra);
        let server = Server::start(dir.path(), &args, env);
        // The plugins folder lives as long as the process needs it.
        std::mem::forget(dir);
        Client { server, next: 1 }
    }

    fn ask(&mut self, method: &str, params: Value, tasks: bool) -> Value {
        self.next += 1;
        let id = self.next;
        self.server.send(&message(id, method, params, tasks));
        self.server.answer(&json!(id), WAIT)
    }

    fn call(&mut self, tool: &str, arguments: Value, tasks: bool) -> Value {
        self.ask(
            "tools/call",
            json!({"name": tool, "arguments": arguments}),
            tasks,
        )
    }

    fn get(&mut self, task: &str) -> Value {
        self.ask("tasks/get", json!({"taskId": task}), true)
    }

    /// Polls `tasks/get` until `done` holds of the task (at most `wait`).
    fn poll(&mut self, task: &str, wait: Duration, done: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + wait;
        loop {
            let answer = self.get(task);
            let task_state = &answer["result"];
            if done(task_state) {
                return task_state.clone();
            }
            assert!(
                Instant::now() < deadline,
                "the task never got there: {answer}\n{}",
                self.server.stderr()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

fn terminal(task: &Value) -> bool {
    matches!(
        task["status"].as_str(),
        Some("completed" | "failed" | "cancelled")
    )
}

fn started(answer: &Value) -> String {
    let result = &answer["result"];
    assert_eq!(result["resultType"], "task", "{answer}");
    assert_eq!(result["status"], "working", "{answer}");
    assert_eq!(result["pollIntervalMs"], 1000, "{answer}");
    assert!(
        result["ttlMs"].as_u64().is_some_and(|t| t > 3_600_000),
        "{answer}"
    );
    let id = result["taskId"].as_str().expect("taskId").to_owned();
    assert!(id.starts_with("t_") && id.len() == 34, "{id}");
    id
}

fn a_shell_run_task_is_polled_to_its_result(store: Option<&str>) {
    let data = TempDir::new("tasks-stdio");
    let mut client = Client::start(&data, store);
    let discover = client.ask("server/discover", json!({}), true);
    assert!(
        discover["result"]["capabilities"]["extensions"][TASKS].is_object(),
        "{discover}"
    );
    let script = "echo first; sleep 1; echo done; exit 3";
    let answer = client.call("shell_run", json!({"script": script}), true);
    let id = started(&answer);
    let done = client.poll(&id, WAIT, terminal);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["resultType"], "complete");
    // What the call would have answered: a non-zero exit is a result, not an error.
    let result = &done["result"]["structuredContent"];
    assert_eq!(result["exit_code"], 3, "{done}");
    assert!(
        result["stdout"]
            .as_str()
            .is_some_and(|s| s.contains("first\ndone")),
        "{done}"
    );
    // Read again: the same, until its time to live ends.
    assert_eq!(client.get(&id)["result"]["result"], done["result"]);

    // Notifications instead of polling: the state now, then the end, on the subscription.
    let answer = client.call("shell_run", json!({"script": "sleep 1; echo heard"}), true);
    let heard = started(&answer);
    let unknown = "t_00000000000000000000000000000000";
    client.server.send(&message(
        900,
        "subscriptions/listen",
        json!({"notifications": {"taskIds": [heard, unknown]}}),
        true,
    ));
    let ack = client
        .server
        .notification("notifications/subscriptions/acknowledged", WAIT);
    // Only the caller's own task is granted.
    assert_eq!(
        ack["params"]["notifications"],
        json!({"taskIds": [heard]}),
        "{ack}"
    );
    let mut told = Vec::new();
    while told.last().is_none_or(|s: &Value| !terminal(s)) {
        let note = client.server.notification("notifications/tasks", WAIT);
        assert_eq!(note["params"]["taskId"], heard.as_str(), "{note}");
        assert_eq!(
            note["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 900,
            "{note}"
        );
        told.push(note["params"].clone());
    }
    assert_eq!(told[0]["status"], "working", "{told:?}");
    assert_eq!(told.len(), 2, "{told:?}");
    assert_eq!(told[1]["status"], "completed");
    assert!(text(&told[1]["result"]).contains("heard"), "{told:?}");
    // Without the extension, taskIds are refused.
    let undeclared = client.ask(
        "subscriptions/listen",
        json!({"notifications": {"taskIds": [heard]}}),
        false,
    );
    assert_eq!(undeclared["error"]["code"], -32021, "{undeclared}");

    // A request that does not declare the extension gets what it always got …
    let plain = client.call("shell_run", json!({"script": "echo now"}), false);
    assert_eq!(plain["result"]["resultType"], "complete", "{plain}");
    assert!(text(&plain["result"]).contains("now"), "{plain}");
    // … and a quick tool is never a task.
    let quick = client.call("core_status", json!({}), true);
    assert_eq!(quick["result"]["resultType"], "complete", "{quick}");
    // tasks/* without the extension: -32021, naming it.
    let undeclared = client.ask("tasks/get", json!({"taskId": id}), false);
    assert_eq!(undeclared["error"]["code"], -32021, "{undeclared}");
    assert!(
        undeclared["error"]["data"]["requiredCapabilities"]["extensions"][TASKS].is_object(),
        "{undeclared}"
    );
    // Unknown, forged and malformed ids: one same -32602.
    for bad in [
        "t_00000000000000000000000000000000",
        "nonsense",
        &id.to_uppercase(),
    ] {
        let answer = client.get(bad);
        assert_eq!(answer["error"]["code"], -32602, "{answer}");
        let message = answer["error"]["message"].as_str().expect("message");
        assert!(
            message.contains(&format!("no task {bad} of yours")),
            "{message}"
        );
    }
    let missing = client.ask("tasks/get", json!({}), true);
    assert_eq!(missing["error"]["code"], -32602, "{missing}");
    // An ordinary call cannot ask for a day; a task can.
    let long = client.call(
        "shell_run",
        json!({"script": "true", "timeout_s": 3600}),
        false,
    );
    assert!(text(&long["result"]).contains("timeout_s"), "{long}");
}

#[test]
fn a_shell_run_task_is_polled_to_its_result_on_sqlite() {
    a_shell_run_task_is_polled_to_its_result(None);
}

#[test]
fn a_shell_run_task_is_polled_to_its_result_on_postgres() {
    if let Some(url) = coremcp_tests::postgres_half() {
        a_shell_run_task_is_polled_to_its_result(Some(&url));
    }
}

#[test]
fn a_dev_server_task_is_read_while_it_runs_and_a_cancel_stops_all_of_it() {
    let data = TempDir::new("tasks-dev");
    let mut client = Client::start(&data, None);
    let sleep = unique_sleep();
    // A "server": a banner, a child that outlives the script's own line, then it waits.
    let script = format!(
        "echo 'listening on http://localhost:5173'; sleep {sleep} & \
         for i in $(seq 1 3); do echo \"request $i\"; done; wait"
    );
    let answer = client.call(
        "shell_run",
        json!({"script": script, "timeout_s": 3600}),
        true,
    );
    let id = started(&answer);
    let running = client.poll(&id, WAIT, |t| {
        t["statusMessage"]
            .as_str()
            .is_some_and(|m| m.contains("request 3"))
    });
    assert_eq!(running["status"], "working", "{running}");
    let message = running["statusMessage"].as_str().expect("message");
    assert!(
        message.contains("listening on http://localhost:5173"),
        "{message}"
    );
    // Its output so far, by offset, through an ordinary call.
    let read = client.call("shell_run", json!({"task": id}), false);
    let read = &read["result"]["structuredContent"];
    assert_eq!(read["running_here"], true, "{read}");
    let output = read["output"].as_str().expect("output");
    assert!(
        output.starts_with("listening on http://localhost:5173\nrequest 1"),
        "{output}"
    );
    let next = read["next_offset"].as_u64().expect("next");
    assert_eq!(next as usize, output.len());
    let again = client.call("shell_run", json!({"task": id, "offset": next}), false);
    assert_eq!(
        again["result"]["structuredContent"]["output"], "",
        "{again}"
    );
    assert!(!coremcp_tests::processes_with(&sleep).is_empty());
    // Cancelled: acknowledged at once, then the task ends cancelled and nothing it started
    // is left.
    let cancel = client.ask("tasks/cancel", json!({"taskId": id}), true);
    assert_eq!(
        cancel["result"],
        json!({"resultType": "complete"}),
        "{cancel}"
    );
    let ended = client.poll(&id, WAIT, terminal);
    assert_eq!(ended["status"], "cancelled", "{ended}");
    assert!(
        none_left_with(&sleep),
        "the server's child outlived its cancel"
    );
    // Output heavy with escapes is read whole, in reads that each fit the answer's budget.
    let quoted = format!("{}\n", "\"\t".repeat(99));
    let script = r#"line=$(printf '"\t%.0s' $(seq 1 99)); for i in $(seq 1 600); do printf '%s\n' "$line"; done; sleep 600"#;
    let noisy = started(&client.call("shell_run", json!({"script": script}), true));
    let total = quoted.len() * 600;
    client.poll(&noisy, WAIT, |t| {
        t["statusMessage"]
            .as_str()
            .is_some_and(|m| m.contains(&format!("{total} bytes")))
    });
    let (mut offset, mut whole) = (0u64, String::new());
    while (offset as usize) < total {
        let read = client.call("shell_run", json!({"task": noisy, "offset": offset}), false);
        coremcp_tests::check_answer_within("shell_run", &read["result"], 20_000);
        let read = &read["result"]["structuredContent"];
        assert_eq!(read["offset"], offset, "{read}");
        whole.push_str(read["output"].as_str().expect("output"));
        let next = read["next_offset"].as_u64().expect("next");
        assert!(next > offset, "{read}");
        offset = next;
    }
    assert_eq!(whole, quoted.repeat(600));
    client.ask("tasks/cancel", json!({"taskId": noisy}), true);
    assert_eq!(client.poll(&noisy, WAIT, terminal)["status"], "cancelled");
    // `stop` through the tool does the same.
    let sleep = unique_sleep();
    let answer = client.call(
        "shell_run",
        json!({"script": format!("sleep {sleep}")}),
        true,
    );
    let id = started(&answer);
    let stopped = client.call("shell_run", json!({"task": id, "stop": true}), false);
    assert!(
        stopped["result"]["structuredContent"]["cancel"].is_string(),
        "{stopped}"
    );
    assert_eq!(client.poll(&id, WAIT, terminal)["status"], "cancelled");
    assert!(none_left_with(&sleep));
}

#[test]
fn a_task_whose_process_died_is_failed_when_read_again() {
    let data = TempDir::new("tasks-restart");
    let mut first = Client::start(&data, None);
    let sleep = unique_sleep();
    let answer = first.call(
        "shell_run",
        json!({"script": format!("sleep {sleep}")}),
        true,
    );
    let id = started(&answer);
    first.poll(&id, WAIT, |t| t["status"] == "working");
    // Killed outright: nothing of it can say how the task ended, and its processes die with
    // it.
    first.server.signal(libc::SIGKILL);
    first.server.finish(WAIT);
    assert!(none_left_with(&sleep));
    let mut second = Client::start(&data, None);
    // Within a lease (15 s) of the last renewal, it is failed, never `working` forever.
    let failed = second.poll(&id, Duration::from_secs(30), terminal);
    assert_eq!(failed["status"], "failed", "{failed}");
    let why = failed["error"]["message"].as_str().expect("error");
    assert!(
        why.contains("Core MCP stopped while this task ran"),
        "{why}"
    );
    // An exit that can say so fails what still runs at once.
    let answer = second.call("shell_run", json!({"script": "sleep 600"}), true);
    let id = started(&answer);
    // The agent goes: stdin closes.
    second.server.finish(WAIT);
    let mut third = Client::start(&data, None);
    let failed = third.get(&id);
    assert_eq!(failed["result"]["status"], "failed", "{failed}");
}

const CI: &str = "ci-token-0123456789abcdef";
const READER: &str = "reader-token-0123456789ab";

fn post(serve: &Serve, token: &str, body: &Value, name: Option<&str>) -> Response {
    let bearer = format!("Bearer {token}");
    let method = body["method"].as_str().expect("method");
    let mut headers = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", VERSION),
        ("Mcp-Method", method),
        ("Authorization", bearer.as_str()),
    ];
    if let Some(name) = name {
        headers.push(("Mcp-Name", name));
    }
    request(
        serve.addr,
        "POST",
        "/mcp",
        &headers,
        body.to_string().as_bytes(),
    )
}

#[test]
fn over_http_a_task_is_its_principals_and_named_in_mcp_name() {
    let lib = plugins(&["ops"]);
    let data = TempDir::new("tasks-http");
    let secrets = TempDir::new("tasks-tokens");
    let tokens = coremcp_tests::tokens_file(&secrets, &[("ci", CI), ("reader", READER)]);
    let data_arg = data.path().to_string_lossy().into_owned();
    let serve = Serve::start_on(
        lib.path(),
        "127.0.0.1:0",
        &[
            "--data",
            &data_arg,
            "--tokens",
            &tokens,
            "--grants",
            "ci=shell_run",
        ],
        &[],
    );
    let (ci, reader) = (CI, READER);
    let call = message(
        1,
        "tools/call",
        json!({"name": "shell_run", "arguments": {"script": "sleep 1; echo over http"}}),
        true,
    );
    let created = post(&serve, ci, &call, Some("shell_run"));
    assert_eq!(created.status, 200, "{}", created.text());
    let id = started(&created.json());
    let get = message(2, "tasks/get", json!({"taskId": id}), true);
    // Another principal: the same answer as an unknown id.
    let theirs = post(&serve, reader, &get, Some(&id)).json();
    assert_eq!(theirs["error"]["code"], -32602, "{theirs}");
    assert!(
        theirs["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("of yours")),
        "{theirs}"
    );
    let cancel = message(3, "tasks/cancel", json!({"taskId": id}), true);
    assert_eq!(
        post(&serve, reader, &cancel, Some(&id)).json()["error"]["code"],
        -32602
    );
    // Mcp-Name must carry the task id.
    let wrong = post(&serve, ci, &get, Some("t_other"));
    assert_eq!(wrong.status, 400, "{}", wrong.text());
    assert_eq!(wrong.json()["error"]["code"], -32020);
    let deadline = Instant::now() + WAIT;
    let done = loop {
        let answer = post(&serve, ci, &get, Some(&id)).json();
        if answer["result"]["status"] == "completed" {
            break answer;
        }
        assert!(Instant::now() < deadline, "{answer}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        text(&done["result"]["result"]).contains("over http"),
        "{done}"
    );
    // The reader's cancel changed nothing: it ran to its end.
    assert_eq!(
        done["result"]["result"]["structuredContent"]["exit_code"],
        0
    );
}

/// `mcp.json` in `dir` with the task-speaking fixture server as "t", logging to `log`.
fn task_server_config(dir: &TempDir, log: &Path) -> String {
    let fixture =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/upstream/task_server.py");
    let config = dir.path().join("mcp.json");
    let servers = json!({"servers": [{"id": "t", "command": "python3",
        "args": [fixture.to_string_lossy()], "env": {"CALL_LOG": log.to_string_lossy()}}]});
    std::fs::write(&config, servers.to_string()).expect("mcp.json");
    config.to_string_lossy().into_owned()
}

/// A data folder with the fixture's `mcp.json`: the folder, the fixture's log, the config.
fn upstream_setup(label: &str) -> (TempDir, PathBuf, String) {
    let data = TempDir::new(label);
    let log = data.path().join("calls.log");
    let config = task_server_config(&data, &log);
    (data, log, config)
}

/// The environment that serves `config`'s fixture to the stdio principal.
fn upstream_env(config: &str) -> [(&str, &str); 3] {
    [
        ("COREMCP_MCP_CONFIG", config),
        ("COREMCP_MCP_SERVERS", ""),
        ("COREMCP_MCP_GRANTS", "stdio=t"),
    ]
}

/// What the fixture server was asked, a line each.
fn asked(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Waits until the server lists `tool`.
fn wait_listed(client: &mut Client, tool: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let listed = client.ask("tools/list", json!({}), true);
        let names: Vec<&str> = listed["result"]["tools"]
            .as_array()
            .map(|t| t.iter().filter_map(|t| t["name"].as_str()).collect())
            .unwrap_or_default();
        if names.contains(&tool) {
            return;
        }
        assert!(Instant::now() < deadline, "{tool} never listed: {names:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn an_upstream_servers_tasks_are_passed_on_under_our_ids_or_waited_for() {
    let (data, log, config) = upstream_setup("tasks-upstream");
    let mut env = upstream_env(&config).to_vec();
    env.extend([
        ("COREMCP_MCP_REQUIRE_APPROVAL", "false"),
        ("COREMCP_CALL_TIMEOUT", "3"),
    ]);
    let mut client = Client::start_with(&data, None, &env);
    wait_listed(&mut client, "mcp__t__slow");

    // Passed on: the client sees the task under an id of ours, and polls it through us.
    let answer = client.call("mcp__t__slow", json!({"seconds": 1, "message": "a"}), true);
    let result = &answer["result"];
    assert_eq!(result["resultType"], "task", "{answer}");
    let id = result["taskId"].as_str().expect("taskId").to_owned();
    assert!(id.starts_with("u_") && !id.contains("task-1"), "{id}");
    assert_eq!(result["pollIntervalMs"], 200);
    let done = client.poll(&id, WAIT, terminal);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["taskId"], id.as_str());
    assert_eq!(text(&done["result"]), "slow: a", "{done}");
    let log_now = asked(&log);
    assert!(
        log_now.contains(&"tools/call slow declared".to_owned()),
        "{log_now:?}"
    );
    assert!(
        log_now.contains(&"tasks/get task-1 declared".to_owned()),
        "{log_now:?}"
    );
    // Its failure is the server's error, inlined.
    let broken = client.call("mcp__t__broken", json!({}), true);
    let broken_id = broken["result"]["taskId"]
        .as_str()
        .expect("taskId")
        .to_owned();
    let failed = client.poll(&broken_id, WAIT, terminal);
    assert_eq!(failed["status"], "failed", "{failed}");
    assert_eq!(failed["error"]["message"], "the upstream broke");
    // Cancelled through us.
    let long = client.call("mcp__t__slow", json!({"seconds": 60}), true);
    let long_id = long["result"]["taskId"]
        .as_str()
        .expect("taskId")
        .to_owned();
    let ack = client.ask("tasks/cancel", json!({"taskId": long_id}), true);
    assert_eq!(ack["result"], json!({"resultType": "complete"}), "{ack}");
    assert_eq!(client.poll(&long_id, WAIT, terminal)["status"], "cancelled");
    // An id of the form that was never handed to this principal: unknown, as any other.
    let forged = format!("u_{}.{}", hex("t"), hex("task-99"));
    let unknown = client.get(&forged);
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");

    // Waited for: a client that does not take tasks gets the result, and its progress.
    client.next += 1;
    let call_id = client.next;
    let mut waited = message(
        call_id,
        "tools/call",
        json!({"name": "mcp__t__slow", "arguments": {"seconds": 1, "message": "b"}}),
        false,
    );
    waited["params"]["_meta"]["progressToken"] = json!("p-1");
    client.server.send(&waited);
    let answer = client.server.answer(&json!(call_id), WAIT);
    assert_eq!(text(&answer["result"]), "slow: b", "{answer}");
    let progress = client.server.notification("notifications/progress", WAIT);
    assert_eq!(progress["params"]["progressToken"], "p-1", "{progress}");
    assert!(
        progress["params"]["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("task working")),
        "{progress}"
    );
    let broken = client.call("mcp__t__broken", json!({}), false);
    assert!(
        text(&broken["result"]).contains("the upstream broke"),
        "{broken}"
    );
    // Past the call's deadline (3 s here) the task is cancelled, and the error says so.
    let late = client.call("mcp__t__slow", json!({"seconds": 60}), false);
    let why = text(&late["result"]);
    assert!(
        why.contains("did not finish within its") && why.contains("cancelled"),
        "{why}"
    );
    let deadline = Instant::now() + WAIT;
    while !asked(&log)
        .iter()
        .any(|l| l.starts_with("tasks/cancel") && !l.contains(&long_id))
    {
        assert!(Instant::now() < deadline, "{:?}", asked(&log));
        std::thread::sleep(Duration::from_millis(50));
    }
    // A server that runs a tool only as a task is waited for too.
    let only = client.call("mcp__t__needs_tasks", json!({"message": "c"}), false);
    assert_eq!(text(&only["result"]), "slow: c", "{only}");
}

#[test]
fn a_2025_client_waits_for_an_upstream_task_with_progress() {
    let (data, log, config) = upstream_setup("tasks-upstream-2025");
    let dir = plugins(&["ops"]);
    let data_arg = data.path().to_string_lossy().into_owned();
    let mut env = upstream_env(&config).to_vec();
    env.push(("COREMCP_MCP_REQUIRE_APPROVAL", "false"));
    let mut server = Server::start(dir.path(), &["--data", &data_arg], &env);
    server.initialize();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !server.tool_names().iter().any(|n| n == "mcp__t__slow") {
        assert!(Instant::now() < deadline, "mcp__t__slow never listed");
        std::thread::sleep(Duration::from_millis(100));
    }
    server.send(&json!({"jsonrpc": "2.0", "id": 77, "method": "tools/call",
        "params": {"name": "mcp__t__slow", "arguments": {"seconds": 1, "message": "old"},
                   "_meta": {"progressToken": 5}}}));
    let answer = server.answer(&json!(77), WAIT);
    assert_eq!(text(&answer["result"]), "slow: old", "{answer}");
    let progress = server.notification("notifications/progress", WAIT);
    assert_eq!(progress["params"]["progressToken"], 5, "{progress}");
    assert!(asked(&log).contains(&"tools/call slow declared".to_owned()));
}

fn hex(text: &str) -> String {
    text.bytes().map(|b| format!("{b:02x}")).collect()
}

/// `message`, declaring elicitation too.
fn eliciting(mut message: Value) -> Value {
    message["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]["elicitation"] =
        json!({});
    message
}

#[test]
fn a_first_calls_approval_is_asked_in_a_task_and_answered_with_tasks_update() {
    let (data, log, config) = upstream_setup("tasks-approval");
    let env = upstream_env(&config);
    let calls = || {
        asked(&log)
            .iter()
            .filter(|l| l.starts_with("tools/call"))
            .count()
    };
    for answer in ["accept", "decline"] {
        let mut client = Client::start_with(&data, None, &env);
        wait_listed(&mut client, "mcp__t__slow");
        let before = calls();
        client.next += 1;
        let call_id = client.next;
        let arguments = json!({"seconds": 0.5, "message": answer});
        client.server.send(&eliciting(message(
            call_id,
            "tools/call",
            json!({"name": "mcp__t__slow", "arguments": arguments}),
            true,
        )));
        let created = client.server.answer(&json!(call_id), WAIT);
        let result = &created["result"];
        assert_eq!(result["resultType"], "task", "{created}");
        assert_eq!(result["status"], "input_required", "{created}");
        let id = result["taskId"].as_str().expect("taskId").to_owned();
        assert!(id.starts_with("t_"), "{id}");
        let asking = client.get(&id);
        let request = &asking["result"]["inputRequests"]["approval"];
        assert_eq!(request["method"], "elicitation/create", "{asking}");
        assert!(
            request["params"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("\"t\"")),
            "{asking}"
        );
        // Nothing reached the server while the question waits.
        assert_eq!(calls(), before, "{:?}", asked(&log));
        let ack = client.ask(
            "tasks/update",
            json!({"taskId": id, "inputResponses": {"approval": {"action": answer, "content": {}}}}),
            true,
        );
        assert_eq!(ack["result"], json!({"resultType": "complete"}), "{ack}");
        let done = client.poll(&id, WAIT, terminal);
        assert_eq!(done["status"], "completed", "{done}");
        match answer {
            "accept" => {
                assert_eq!(text(&done["result"]), "slow: accept", "{done}");
                // Approved for the connection: the next call is passed on at once.
                let next = client.call("mcp__t__slow", json!({"seconds": 0}), true);
                assert!(
                    next["result"]["taskId"]
                        .as_str()
                        .is_some_and(|t| t.starts_with("u_")),
                    "{next}"
                );
            }
            _ => {
                assert_eq!(done["result"]["isError"], true, "{done}");
                assert!(text(&done["result"]).contains("declined"), "{done}");
                assert_eq!(calls(), before, "a declined call reached the server");
            }
        }
    }
}

#[test]
fn a_group_outside_the_catalog_declares_its_task_tools_in_its_manifest() {
    let data = TempDir::new("tasks-outside");
    let mut client = Client::start_groups(&["fixture_tasks"], &data, None, &[]);
    // Before the group loads, its sidecar tells: the first call is a task already.
    let created = client.call("slow_compute", json!({"seconds": 0.2}), true);
    let id = started(&created);
    assert_eq!(client.poll(&id, WAIT, terminal)["status"], "completed");
    // Never a task: answered as ever.
    let greet = client.call("greet", json!({"name": "Ada"}), true);
    assert_eq!(text(&greet["result"]), "Hello, Ada!", "{greet}");
    // Only as a task: a request that does not take tasks gets -32021.
    let refused = client.call("failing_job", json!({}), false);
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    // A tool error is a completed task; a plugin that fails inside, a failed one.
    let failing = started(&client.call("failing_job", json!({}), true));
    let done = client.poll(&failing, WAIT, terminal);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["isError"], true);
    let broken = started(&client.call("protocol_error_job", json!({}), true));
    let failed = client.poll(&broken, WAIT, terminal);
    assert_eq!(failed["status"], "failed", "{failed}");
    assert_eq!(failed["error"]["code"], -32603);
    assert!(failed.get("result").is_none());
    // A task's work asks its client, answered with tasks/update, in parts.
    let asking = client.call("multi_input", json!({}), true);
    let id = asking["result"]["taskId"]
        .as_str()
        .expect("taskId")
        .to_owned();
    let both = client.poll(&id, WAIT, |t| {
        t["inputRequests"].as_object().is_some_and(|r| r.len() == 2)
    });
    assert_eq!(both["status"], "input_required");
    let first = json!({"taskId": id, "inputResponses": {"first": {"action": "accept"}}});
    client.ask("tasks/update", first, true);
    let partly = client.get(&id);
    let left: Vec<&String> = partly["result"]["inputRequests"]
        .as_object()
        .expect("requests")
        .keys()
        .collect();
    assert_eq!(left, ["second"], "{partly}");
    let second = json!({"taskId": id, "inputResponses": {"second": {"action": "decline"}}});
    client.ask("tasks/update", second, true);
    let done = client.poll(&id, WAIT, terminal);
    assert_eq!(
        done["result"]["structuredContent"]["second"]["action"], "decline",
        "{done}"
    );
}

#[test]
fn docker_compose_up_runs_as_a_task_on_the_real_daemon() {
    let Some(d) = coremcp_tests::docker::daemon() else {
        return;
    };
    let data = TempDir::new("tasks-compose");
    let root = TempDir::new("tasks-compose-root");
    let project = format!("cmtask{}", std::process::id());
    d.web_project(&root.path().join("app"));
    let root_arg = root.path().to_string_lossy().into_owned();
    let env = [
        ("DOCKER_HOST", d.host.as_str()),
        ("COREMCP_COMPOSE", "docker-compose"),
    ];
    let mut client = Client::start_args(
        &["docker", "registry"],
        &data,
        None,
        &["--root", &root_arg],
        &env,
    );
    let args =
        |action: &str| json!({"action": action, "project_dir": "app", "project_name": project});
    // `ps` is quick: never a task.
    let ps = client.call("docker_compose", args("ps"), true);
    assert_eq!(ps["result"]["resultType"], "complete", "{ps}");
    let id = started(&client.call("docker_compose", args("up"), true));
    let done = client.poll(&id, Duration::from_secs(120), terminal);
    assert_eq!(done["status"], "completed", "{done}");
    assert_ne!(done["result"]["isError"], true, "{done}");
    let ps = client.call("docker_compose", args("ps"), true);
    assert_eq!(
        ps["result"]["structuredContent"]["containers"][0]["state"], "running",
        "{ps}"
    );
    let down = started(&client.call("docker_compose", args("down"), true));
    assert_eq!(
        client.poll(&down, Duration::from_secs(120), terminal)["status"],
        "completed"
    );
    let ps = client.call("docker_compose", args("ps"), true);
    assert_eq!(ps["result"]["structuredContent"]["count"], 0, "{ps}");
}

fn seele_import_runs_as_a_task(store: Option<&str>) {
    let data = TempDir::new("tasks-seele");
    let mut client = Client::start_groups(&["seele"], &data, store, &[]);
    let nodes: Vec<Value> = (0..50)
        .map(|i| json!({"path": format!("doc-{i}"), "body": format!("# Doc {i}\nimported as a task")}))
        .collect();
    let root = format!("tasks-{}", std::process::id());
    let id = started(&client.call(
        "seele_import",
        json!({"nodes": nodes, "root_path": root}),
        true,
    ));
    let done = client.poll(&id, WAIT, terminal);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["structuredContent"]["created"], 50, "{done}");
    // Written: read back through an ordinary call.
    let read = client.call(
        "seele_read",
        json!({"path": format!("{root}/doc-7")}),
        false,
    );
    assert!(
        text(&read["result"]).contains("imported as a task"),
        "{read}"
    );
}

#[test]
fn seele_import_runs_as_a_task_on_sqlite() {
    seele_import_runs_as_a_task(None);
}

#[test]
fn seele_import_runs_as_a_task_on_postgres() {
    if let Some(url) = coremcp_tests::postgres_half() {
        seele_import_runs_as_a_task(Some(&url));
    }
}
