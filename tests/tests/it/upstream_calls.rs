//! Upstream MCP tools called through a running host (ARCHITECTURE.md: the path of one call,
//! "Policy"): grants, approval through elicitation (stdio and Streamable HTTP), supervision (a
//! crash mid-call, a crash loop), the per-server timeout, cancellation, refresh (SIGHUP and `POST
//! /api/mcp/refresh`) and the upstream `list_changed` passed through. The servers are real child
//! processes: the misbehaving fixture (tests/fixtures/upstream/misbehave.py, modes `calls` and
//! `crashloop`), and the real `@modelcontextprotocol/server-everything` and `mcp-server-time`,
//! which scripts/test installs.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use coremcp_tests::http::{EventStream, Serve};
use coremcp_tests::{free_port, is_error, nulls, plugins, text, KillOnDrop, Server, TempDir, WAIT};
use serde_json::{json, Value};

const OFF_LINE: &str =
    "MCP approval is OFF (COREMCP_MCP_REQUIRE_APPROVAL=false) — calls run unattended.";

fn fixture() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/upstream/misbehave.py")
        .to_string_lossy()
        .into_owned()
}

/// The fixture in `mode` as server `id`, logging the tools it is called with to `log`.
fn misbehave(id: &str, mode: &str, log: &Path) -> Value {
    json!({"id": id, "command": "python3", "args": [fixture(), mode],
           "env": {"CALL_LOG": log.to_string_lossy()}})
}

fn installed(var: &str) -> Option<String> {
    let path = coremcp_tests::external(
        var,
        "it needs a real upstream MCP server from the registries",
    )?;
    assert!(Path::new(&path).exists(), "{var}={path} does not exist");
    Some(path)
}

/// A scratch folder with `mcp.json` holding `servers`.
struct Setup {
    dir: TempDir,
    config: String,
}

impl Setup {
    fn new(servers: Value) -> Self {
        let dir = TempDir::new("upstream-calls");
        let config = dir.path().join("mcp.json").to_string_lossy().into_owned();
        let setup = Self { dir, config };
        setup.write(servers);
        setup
    }

    fn write(&self, servers: Value) {
        let temp = format!("{}.new", self.config);
        std::fs::write(&temp, json!({ "servers": servers }).to_string()).expect("write");
        std::fs::rename(&temp, &self.config).expect("rename");
    }

    /// The fixture in `calls` mode as server "m" (its call log is [`Setup::calls`]).
    fn calls_server() -> Self {
        let setup = Self::new(json!([]));
        setup.write(json!([misbehave("m", "calls", &setup.calls())]));
        setup
    }

    /// The call log the fixtures of this setup write.
    fn calls(&self) -> PathBuf {
        self.log("calls.log")
    }

    fn log(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `coremcp stdio` with this config and `env`.
    fn stdio(&self, env: &[(&str, &str)]) -> (TempDir, Server) {
        let dir = plugins(&["fixture"]);
        let mut all = vec![
            ("COREMCP_MCP_CONFIG", self.config.as_str()),
            ("COREMCP_MCP_SERVERS", ""),
        ];
        all.extend_from_slice(env);
        let server = Server::start(dir.path(), &[], &all);
        (dir, server)
    }
}

/// The tools a listing shows, waiting up to 30 s for `name` to be among them.
fn wait_listed(server: &mut Server, name: &str) -> Vec<String> {
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        let names = server.tool_names();
        if names.iter().any(|n| n == name) || Instant::now() > until {
            return names;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `initialize` declaring elicitation.
fn initialize_eliciting(server: &mut Server) {
    let answer = server.request(
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {"elicitation": {}},
               "clientInfo": {"name": "coremcp-tests", "version": "0"}}),
    );
    assert!(answer.get("result").is_some(), "{answer}");
    server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
}

/// Calls `tool`, answering every elicitation with `action`; the result and the elicitation
/// requests seen.
fn call_answering(
    server: &mut Server,
    id: u64,
    tool: &str,
    arguments: Value,
    action: &str,
) -> (Value, Vec<Value>) {
    server.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                        "params": {"name": tool, "arguments": arguments}}));
    let mut asked = Vec::new();
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        let left = until.saturating_duration_since(Instant::now());
        let Some(message) = server.recv(left) else {
            panic!("no answer to {tool}\nstderr:\n{}", server.stderr());
        };
        if message["method"] == "elicitation/create" {
            server.send(&json!({"jsonrpc": "2.0", "id": message["id"],
                                "result": {"action": action, "content": {}}}));
            asked.push(message);
        } else if message["id"] == id && message.get("method").is_none() {
            return (message["result"].clone(), asked);
        }
    }
}

/// Starts `mcp__m__sleep` as request `id`, cancels it once the server has it — as its `log`
/// of calls shows, or after 300 ms without one — and checks the server still serves.
fn cancel_a_sleep(server: &mut Server, id: u64, log: Option<&Path>) {
    let sleeps = |log: &Path| log_lines(log).iter().filter(|l| *l == "sleep").count();
    let before = log.map(sleeps);
    server.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                        "params": {"name": "mcp__m__sleep", "arguments": {"seconds": 0.9}}}));
    match (log, before) {
        (Some(log), Some(before)) => {
            let until = Instant::now() + Duration::from_secs(10);
            while sleeps(log) == before {
                assert!(Instant::now() < until, "the server never got the sleep");
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        _ => std::thread::sleep(Duration::from_millis(300)),
    }
    server.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": id}}),
    );
    assert_eq!(
        text(&server.call("mcp__m__echo", json!({"message": "after"}))),
        "after"
    );
}

fn log_lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn real_servers_are_called_through_the_host_with_a_scrubbed_environment() {
    let Some(everything) = installed("COREMCP_TEST_EVERYTHING") else {
        return;
    };
    let Some(time) = installed("COREMCP_TEST_TIME") else {
        return;
    };
    let port = free_port();
    let _http = everything_http(&everything, port);
    let setup = Setup::new(json!([
        {"id": "everything", "command": everything, "args": ["stdio"],
         "env": {"HANDED_TOKEN": "given-explicitly"}},
        {"id": "time", "command": time},
        {"id": "everything-http", "type": "http", "url": format!("http://127.0.0.1:{port}/mcp")},
    ]));
    let (_plugins, mut server) = setup.stdio(&[
        (
            "COREMCP_MCP_GRANTS",
            "stdio=everything,time,everything-http",
        ),
        ("COREMCP_MCP_REQUIRE_APPROVAL", "false"),
        ("FOO_API_KEY", "must-not-leak"),
        ("GH_TOKEN", "must-not-leak"),
        ("AWS_ACCESS_KEY_ID", "must-not-leak"),
    ]);
    server.initialize();
    for name in ["mcp__everything-http__echo", "mcp__time__get_current_time"] {
        wait_listed(&mut server, name);
    }
    let names = server.tool_names();
    for name in [
        "mcp__everything__echo",
        "mcp__everything__get-env",
        "mcp__time__get_current_time",
        "mcp__everything-http__echo",
    ] {
        assert!(names.iter().any(|n| n == name), "{name} not in {names:?}");
    }
    let listing = server.request("tools/list", json!({}));
    assert!(nulls(&listing).is_empty(), "{:?}", nulls(&listing));
    server.wait_stderr(OFF_LINE, WAIT);

    let echoed = server.call(
        "mcp__everything__echo",
        json!({"message": "through the hop"}),
    );
    assert!(!is_error(&echoed), "{echoed}");
    assert_eq!(text(&echoed), "Echo: through the hop");
    let echoed = server.call(
        "mcp__everything-http__echo",
        json!({"message": "over http"}),
    );
    assert_eq!(text(&echoed), "Echo: over http", "{echoed}");

    let env = server.call("mcp__everything__get-env", json!({}));
    let seen: Value = serde_json::from_str(text(&env)).expect("get-env answers JSON");
    for secret in ["FOO_API_KEY", "GH_TOKEN", "AWS_ACCESS_KEY_ID"] {
        assert!(
            seen.get(secret).is_none(),
            "{secret} reached the server: {seen}"
        );
    }
    assert_eq!(seen["HANDED_TOKEN"], "given-explicitly", "{seen}");

    let now = server.call("mcp__time__get_current_time", json!({"timezone": "UTC"}));
    assert!(!is_error(&now), "{now}");
    assert!(text(&now).contains("\"timezone\": \"UTC\""), "{now}");
    let bad = server.call(
        "mcp__time__get_current_time",
        json!({"timezone": "Mars/Base"}),
    );
    assert!(is_error(&bad), "{bad}");
}

/// server-everything over Streamable HTTP on `port`.
fn everything_http(everything: &str, port: u16) -> KillOnDrop {
    #[allow(clippy::disallowed_methods)] // The test starts the real upstream server itself.
    let child = Command::new(everything)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start server-everything");
    KillOnDrop(child)
}

#[test]
fn an_http_server_that_goes_away_is_withdrawn_and_reconnected() {
    let Some(everything) = installed("COREMCP_TEST_EVERYTHING") else {
        return;
    };
    let port = free_port();
    let web = everything_http(&everything, port);
    let setup = Setup::new(json!([
        {"id": "web", "type": "http", "url": format!("http://127.0.0.1:{port}/mcp")},
    ]));
    let (_plugins, mut server) = setup.stdio(&[
        ("COREMCP_MCP_GRANTS", "stdio=web"),
        ("COREMCP_MCP_REQUIRE_APPROVAL", "false"),
    ]);
    server.initialize();
    wait_listed(&mut server, "mcp__web__echo");
    assert_eq!(
        text(&server.call("mcp__web__echo", json!({"message": "up"}))),
        "Echo: up"
    );

    // Nobody calls: the supervisor's ping finds it gone and withdraws its tools.
    server
        .pending
        .retain(|m| m["method"] != "notifications/tools/list_changed");
    drop(web);
    server.notification("notifications/tools/list_changed", Duration::from_secs(25));
    let until = Instant::now() + Duration::from_secs(5);
    while server
        .tool_names()
        .iter()
        .any(|n| n.starts_with("mcp__web__"))
    {
        assert!(
            Instant::now() < until,
            "the dead server's tools are still listed"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let started = Instant::now();
    let down = server.call("mcp__web__echo", json!({"message": "down"}));
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(
        is_error(&down) && text(&down).contains("restarting"),
        "{down}"
    );
    server.wait_stderr("stopped answering ping", WAIT);

    let _web = everything_http(&everything, port);
    let names = wait_listed(&mut server, "mcp__web__echo");
    assert!(names.iter().any(|n| n == "mcp__web__echo"), "{names:?}");
    assert_eq!(
        text(&server.call("mcp__web__echo", json!({"message": "back"}))),
        "Echo: back"
    );
}

#[test]
fn nothing_is_listed_or_called_without_a_grant() {
    let setup = Setup::calls_server();
    let log = setup.calls();
    for (grants, why) in [
        ("none", "no grant"),
        ("ci-bot=m", "a grant to another principal"),
        ("stdio=mcp__m__count", "a grant of another tool"),
    ] {
        let (_plugins, mut server) = setup.stdio(&[
            ("COREMCP_MCP_GRANTS", grants),
            ("COREMCP_MCP_REQUIRE_APPROVAL", "false"),
        ]);
        server.initialize();
        server.wait_stderr("nobody may call yet", Duration::from_secs(30));
        let names = server.tool_names();
        assert!(
            !names.iter().any(|n| n == "mcp__m__echo"),
            "{why}: {names:?}"
        );
        let refused = server.call("mcp__m__echo", json!({"message": "hi"}));
        assert!(is_error(&refused), "{why}: {refused}");
        assert!(
            text(&refused).contains("is not granted to the stdio client")
                && text(&refused).contains("COREMCP_MCP_GRANTS=\"stdio=m\""),
            "{why}: {refused}"
        );
    }
    assert!(log_lines(&log).is_empty(), "{:?}", log_lines(&log));

    let (code, stdout, stderr) = coremcp_tests::run(
        &["tools"],
        &[
            ("COREMCP_MCP_CONFIG", &setup.config),
            ("COREMCP_MCP_SERVERS", ""),
            ("COREMCP_MCP_GRANTS", "ci-bot=mcp__m__count"),
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    let line = |name: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("{name} not in:\n{stdout}"))
            .to_owned()
    };
    assert!(
        line("mcp__m__echo ").contains("not granted: nobody may call it yet"),
        "{stdout}"
    );
    assert!(
        line("mcp__m__count ").contains("available to ci-bot"),
        "{stdout}"
    );
    assert!(
        stdout.contains("upstream tool(s) nobody may call yet"),
        "{stdout}"
    );
}

#[test]
fn approval_is_asked_once_per_connection_and_again_after_a_crash() {
    let setup = Setup::calls_server();
    let log = setup.calls();
    let (_plugins, mut server) = setup.stdio(&[("COREMCP_MCP_GRANTS", "stdio=m")]);
    initialize_eliciting(&mut server);
    wait_listed(&mut server, "mcp__m__echo");

    let (result, asked) = call_answering(
        &mut server,
        1,
        "mcp__m__echo",
        json!({"message": "a"}),
        "accept",
    );
    assert_eq!(text(&result), "a", "{result}");
    assert_eq!(asked.len(), 1);
    let message = asked[0]["params"]["message"].as_str().expect("message");
    assert!(
        message.contains("\"m\"") && message.contains("echo"),
        "{message}"
    );
    assert_eq!(asked[0]["params"]["requestedSchema"]["type"], "object");
    let (result, asked) = call_answering(
        &mut server,
        2,
        "mcp__m__echo",
        json!({"message": "b"}),
        "accept",
    );
    assert_eq!(text(&result), "b");
    assert!(asked.is_empty(), "asked again on the same connection");

    // The server dies in the middle of a call: the call fails with why, nothing hangs.
    let started = Instant::now();
    let (crashed, _) = call_answering(&mut server, 3, "mcp__m__crash", json!({}), "accept");
    assert!(is_error(&crashed), "{crashed}");
    let why = text(&crashed);
    assert!(
        why.contains("exit status: 3") && why.contains("crashing mid-call"),
        "{why}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));

    // Supervised: it is started again, and the new connection is asked about again.
    let until = Instant::now() + Duration::from_secs(20);
    let mut id = 10;
    let asked_again = loop {
        id += 1;
        let before = Instant::now();
        let (result, asked) = call_answering(
            &mut server,
            id,
            "mcp__m__echo",
            json!({"message": "c"}),
            "accept",
        );
        if !is_error(&result) {
            assert_eq!(text(&result), "c");
            break asked;
        }
        // While it restarts, a call fails at once with the state and the reason.
        assert!(before.elapsed() < Duration::from_secs(2), "{result}");
        assert!(
            text(&result).contains("restarting") || text(&result).contains("connecting"),
            "{result}"
        );
        assert!(Instant::now() < until, "never came back: {result}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(
        asked_again.len(),
        1,
        "a reconnected server is asked about again"
    );
    assert_eq!(log_lines(&log), ["echo", "echo", "crash", "echo"]);
}

#[test]
fn the_human_gets_longer_than_the_call_deadline_to_answer() {
    let setup = Setup::calls_server();
    let (_plugins, mut server) = setup.stdio(&[
        ("COREMCP_MCP_GRANTS", "stdio=m"),
        ("COREMCP_CALL_TIMEOUT", "1"),
    ]);
    initialize_eliciting(&mut server);
    wait_listed(&mut server, "mcp__m__echo");
    server.send(&json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                        "params": {"name": "mcp__m__echo", "arguments": {"message": "slow"}}}));
    let ask = loop {
        let message = server.recv(Duration::from_secs(10)).expect("the question");
        if message["method"] == "elicitation/create" {
            break message;
        }
    };
    std::thread::sleep(Duration::from_millis(2500));
    server.send(&json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept"}}));
    let answer = server.answer(&json!(5), Duration::from_secs(10));
    assert_eq!(text(&answer["result"]), "slow", "{answer}");
    assert_eq!(log_lines(&setup.calls()), ["echo"]);
}

#[test]
fn a_decline_is_final_for_the_connection_and_a_client_that_cannot_ask_fails_closed() {
    let setup = Setup::calls_server();
    let log = setup.calls();
    let (_plugins, mut server) = setup.stdio(&[("COREMCP_MCP_GRANTS", "stdio=m")]);
    initialize_eliciting(&mut server);
    wait_listed(&mut server, "mcp__m__echo");
    let declined = "The human declined to use the MCP server \"m\", so \"mcp__m__echo\" was not \
                    called. Do not retry it; carry on with the tools you have.";
    let (result, asked) = call_answering(
        &mut server,
        1,
        "mcp__m__echo",
        json!({"message": "x"}),
        "decline",
    );
    assert!(is_error(&result));
    assert_eq!(text(&result), declined);
    assert_eq!(asked.len(), 1);
    let (result, asked) = call_answering(
        &mut server,
        2,
        "mcp__m__echo",
        json!({"message": "x"}),
        "accept",
    );
    assert_eq!(text(&result), declined);
    assert!(
        asked.is_empty(),
        "the human was asked again after declining"
    );
    drop(server);

    let (_plugins, mut server) = setup.stdio(&[("COREMCP_MCP_GRANTS", "stdio=m")]);
    server.initialize();
    wait_listed(&mut server, "mcp__m__echo");
    let refused = server.call("mcp__m__echo", json!({"message": "x"}));
    assert!(is_error(&refused));
    assert!(
        text(&refused).contains("COREMCP_MCP_PREAPPROVED=m"),
        "{refused}"
    );
    assert!(log_lines(&log).is_empty(), "{:?}", log_lines(&log));

    let (_plugins, mut server) = setup.stdio(&[
        ("COREMCP_MCP_GRANTS", "stdio=m"),
        ("COREMCP_MCP_PREAPPROVED", "m"),
    ]);
    server.initialize();
    wait_listed(&mut server, "mcp__m__echo");
    assert_eq!(
        text(&server.call("mcp__m__echo", json!({"message": "pre"}))),
        "pre"
    );
    assert_eq!(log_lines(&log), ["echo"]);
}

#[test]
fn timeouts_cancels_and_big_results_leave_the_server_serving() {
    let setup = Setup::new(json!([]));
    let log = setup.log("calls.log");
    let mut config = misbehave("m", "calls", &log);
    config["requestTimeoutMs"] = json!(1000);
    setup.write(json!([config]));
    let (_plugins, mut server) = setup.stdio(&[
        ("COREMCP_MCP_GRANTS", "stdio=m"),
        ("COREMCP_MCP_REQUIRE_APPROVAL", "false"),
    ]);
    server.initialize();
    wait_listed(&mut server, "mcp__m__sleep");

    let started = Instant::now();
    let slow = server.call("mcp__m__sleep", json!({"seconds": 5}));
    assert!(is_error(&slow), "{slow}");
    assert!(
        text(&slow).contains("no answer to tools/call within 1000 ms"),
        "{slow}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        text(&server.call("mcp__m__echo", json!({"message": "still here"}))),
        "still here"
    );

    // A call the client cancels gets no answer; the server is told and keeps serving.
    cancel_a_sleep(&mut server, 77, None);
    std::thread::sleep(Duration::from_millis(1000));
    while let Some(message) = server.recv(Duration::from_millis(100)) {
        assert_ne!(
            message["id"], 77,
            "a cancelled call was answered: {message}"
        );
    }

    let big = server.call("mcp__m__big", json!({}));
    let body = text(&big);
    assert!(
        body.contains("[truncated by Core MCP: the result has 50000 characters"),
        "{}",
        &body[body.len() - 200..]
    );
    assert!(
        body.chars().count() <= 20_000,
        "the marker counts in the limit: {}",
        body.chars().count()
    );
    assert!(big.get("structuredContent").is_none());
}

/// Without a shorter `requestTimeoutMs`, a call is sent without a thread waiting for it: the
/// host's deadline and the client's cancel must still end it, and tell the server.
#[test]
fn the_call_deadline_and_a_cancel_end_calls_nobody_waits_for() {
    let setup = Setup::calls_server();
    let log = setup.calls();
    let (_plugins, mut server) = setup.stdio(&[
        ("COREMCP_MCP_GRANTS", "stdio=m"),
        ("COREMCP_MCP_REQUIRE_APPROVAL", "false"),
        ("COREMCP_CALL_TIMEOUT", "1"),
    ]);
    server.initialize();
    wait_listed(&mut server, "mcp__m__sleep");

    let started = Instant::now();
    let slow = server.call("mcp__m__sleep", json!({"seconds": 5}));
    assert!(is_error(&slow), "{slow}");
    assert!(text(&slow).contains("did not finish within 1 s"), "{slow}");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );

    cancel_a_sleep(&mut server, 78, Some(&log));
    let until = Instant::now() + Duration::from_secs(5);
    while log_lines(&log).iter().filter(|l| *l == "cancelled").count() < 2 {
        assert!(Instant::now() < until, "{:?}", log_lines(&log));
        std::thread::sleep(Duration::from_millis(50));
    }
    // What the host promises, and no more: each call reaches the server before its cancel,
    // and the echo comes after the second sleep (it is sent once the server has that). The
    // deadline's cancel of the first call, the client's second call, its cancel and the echo
    // travel on paths of their own, so they may reach the server in other orders.
    let lines = log_lines(&log);
    let mut each = lines.clone();
    each.sort();
    assert_eq!(
        each,
        ["cancelled", "cancelled", "echo", "sleep", "sleep"],
        "{lines:?}"
    );
    let at = |what: &str, nth: usize| {
        let mut found = lines.iter().enumerate().filter(|(_, l)| *l == what);
        found.nth(nth).map(|(i, _)| i).expect("counted above")
    };
    assert_eq!(at("sleep", 0), 0, "{lines:?}");
    assert!(at("cancelled", 1) > at("sleep", 1), "{lines:?}");
    assert!(at("echo", 0) > at("sleep", 1), "{lines:?}");
    std::thread::sleep(Duration::from_millis(1000));
    while let Some(message) = server.recv(Duration::from_millis(100)) {
        assert_ne!(
            message["id"], 78,
            "a cancelled call was answered: {message}"
        );
    }
}

#[test]
fn a_crash_looping_server_is_stopped_and_the_rest_keeps_working() {
    let setup = Setup::new(json!([]));
    let log = setup.log("calls.log");
    setup.write(json!([
        misbehave("loop", "crashloop", &log),
        misbehave("m", "calls", &log)
    ]));
    let (_plugins, mut server) = setup.stdio(&[
        ("COREMCP_MCP_GRANTS", "stdio=loop,m"),
        ("COREMCP_MCP_REQUIRE_APPROVAL", "false"),
    ]);
    server.initialize();
    let stopped = server.wait_stderr("crash-loop guard", Duration::from_secs(40));
    assert!(stopped.contains("misbehave: crash loop"), "{stopped}");
    let started = Instant::now();
    let refused = server.call("mcp__loop__echo", json!({"message": "x"}));
    assert!(started.elapsed() < Duration::from_secs(1));
    let why = text(&refused);
    assert!(why.contains("failed 5 times within 60 s"), "{why}");
    assert!(why.contains("POST /api/mcp/refresh"), "{why}");
    assert_eq!(
        text(&server.call("mcp__m__echo", json!({"message": "fine"}))),
        "fine"
    );
    let starts = server.stderr().matches("upstream server went away").count()
        + server
            .stderr()
            .matches("upstream server failed to connect")
            .count();
    assert!(starts >= 5, "{starts} failures logged");

    // A refresh tries it again.
    server.signal(libc::SIGHUP);
    server.wait_stderr("started=loop", Duration::from_secs(10));
}

#[test]
fn sighup_refresh_swaps_servers_and_upstream_list_changed_passes_through() {
    let setup = Setup::new(json!([]));
    let log = setup.log("calls.log");
    setup.write(json!([misbehave("a", "calls", &log)]));
    let (_plugins, mut server) = setup.stdio(&[
        ("COREMCP_MCP_GRANTS", "stdio=a,b"),
        ("COREMCP_MCP_REQUIRE_APPROVAL", "false"),
    ]);
    server.initialize();
    wait_listed(&mut server, "mcp__a__echo");
    // The list_changed that announced server a (it connected after the first listing).
    server
        .pending
        .retain(|m| m["method"] != "notifications/tools/list_changed");

    // The server adds a tool and says so: the client hears list_changed and sees it.
    assert_eq!(text(&server.call("mcp__a__grow", json!({}))), "grown");
    server.notification("notifications/tools/list_changed", Duration::from_secs(10));
    let names = wait_listed(&mut server, "mcp__a__extra");
    assert!(names.iter().any(|n| n == "mcp__a__extra"), "{names:?}");

    setup.write(json!([misbehave("b", "calls", &log)]));
    server.signal(libc::SIGHUP);
    server.notification("notifications/tools/list_changed", Duration::from_secs(10));
    let names = wait_listed(&mut server, "mcp__b__echo");
    assert!(names.iter().any(|n| n == "mcp__b__echo"), "{names:?}");
    assert!(
        !names.iter().any(|n| n.starts_with("mcp__a__")),
        "{names:?}"
    );
    let gone = server.call("mcp__a__echo", json!({"message": "x"}));
    assert!(
        text(&gone).contains("no upstream MCP server \"a\"; configured: b"),
        "{gone}"
    );

    // A configuration that does not parse changes nothing.
    std::fs::write(&setup.config, "{not json").expect("write");
    server.signal(libc::SIGHUP);
    server.wait_stderr(
        "the upstream servers are unchanged",
        Duration::from_secs(10),
    );
    assert_eq!(
        text(&server.call("mcp__b__echo", json!({"message": "kept"}))),
        "kept"
    );
}

#[test]
fn over_http_approval_rides_the_call_stream_and_refresh_has_an_endpoint() {
    let setup = Setup::calls_server();
    let log = setup.calls();
    let dir = plugins(&["fixture"]);
    let serve = Serve::start_on(
        dir.path(),
        "127.0.0.1:0",
        &[],
        &[
            ("COREMCP_MCP_CONFIG", &setup.config),
            ("COREMCP_MCP_SERVERS", ""),
            ("COREMCP_MCP_GRANTS", "*=m"),
        ],
    );
    let mut client = serve.client();
    client.initialize_with(json!({"elicitation": {}}));
    let until = Instant::now() + Duration::from_secs(30);
    while !client.request("tools/list", json!({}))["result"]["tools"]
        .as_array()
        .is_some_and(|t| t.iter().any(|t| t["name"] == "mcp__m__echo"))
    {
        assert!(Instant::now() < until, "{}", serve.stderr());
        std::thread::sleep(Duration::from_millis(100));
    }

    let answer = http_call_answering(&serve, &mut client, "via http", "accept");
    assert_eq!(text(&answer), "via http", "{answer}");

    let status = coremcp_tests::http::request(serve.addr, "GET", "/api/status", &[], b"").json();
    let upstream = &status["upstream"][0];
    assert_eq!(upstream["id"], "m");
    assert_eq!(upstream["state"], "connected", "{upstream}");
    assert_eq!(upstream["approved"], true, "{upstream}");
    assert!(nulls(&status).is_empty(), "{status}");

    setup.write(json!([misbehave("n", "calls", &log)]));
    let wrong = coremcp_tests::http::request(serve.addr, "GET", "/api/mcp/refresh", &[], b"");
    assert_eq!(wrong.status, 405);
    let refreshed = coremcp_tests::http::request(serve.addr, "POST", "/api/mcp/refresh", &[], b"");
    assert_eq!(refreshed.status, 200, "{}", refreshed.text());
    assert_eq!(
        refreshed.json(),
        json!({"kept": [], "started": ["n"], "removed": ["m"]})
    );
    std::fs::write(
        &setup.config,
        "{\"servers\": [{\"id\": \"bad_id\", \"command\": \"x\"}]}",
    )
    .expect("write");
    let refused = coremcp_tests::http::request(serve.addr, "POST", "/api/mcp/refresh", &[], b"");
    assert_eq!(refused.status, 400);
    assert!(
        refused.json()["error"]
            .as_str()
            .is_some_and(|e| e.contains("bad_id")),
        "{}",
        refused.text()
    );
    let status = coremcp_tests::http::request(serve.addr, "GET", "/api/status", &[], b"").json();
    assert_eq!(status["upstream"][0]["id"], "n", "{status}");
}

#[test]
fn an_answer_over_8_mb_fails_its_call_at_once_and_the_server_keeps_serving() {
    let setup = Setup::calls_server();
    let (_dir, mut server) = setup.stdio(&[
        ("COREMCP_MCP_GRANTS", "stdio=m"),
        ("COREMCP_MCP_PREAPPROVED", "m"),
    ]);
    server.initialize();
    wait_listed(&mut server, "mcp__m__huge");
    for tool in ["huge", "huge_id_last"] {
        let started = Instant::now();
        let result = server.call(&format!("mcp__m__{tool}"), json!({}));
        let took = started.elapsed();
        assert!(is_error(&result), "{result}");
        let said = text(&result);
        assert!(
            said.starts_with(&format!(
                "mcp__m__{tool} failed: the MCP server \"m\": its answer to tools/call ("
            )) && said.contains("bytes) is over the 8388608-byte limit and was discarded unread"),
            "{said}"
        );
        assert!(
            took < Duration::from_secs(10),
            "{tool}: answered after {took:?}"
        );
        let echoed = server.call("mcp__m__echo", json!({"message": "still here"}));
        assert_eq!(text(&echoed), "still here", "{echoed}");
    }
    let log = server.wait_stderr("an upstream answer over the size limit was discarded", WAIT);
    assert!(
        log.contains("server=m") && log.contains("bytes=94"),
        "{log}"
    );
}

/// `mcp__m__echo` of `message` over HTTP, its approval question (which must come) answered
/// with `action` on the call's own event stream; the call's result.
fn http_call_answering(
    serve: &Serve,
    client: &mut coremcp_tests::http::Client,
    message: &str,
    action: &str,
) -> Value {
    let call = client.message(
        "tools/call",
        json!({"name": "mcp__m__echo", "arguments": {"message": message}}),
    );
    let headers = client.headers();
    let pairs: Vec<(&str, &str)> = headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    let mut stream = EventStream::open(
        serve.addr,
        "POST",
        "/mcp",
        &pairs,
        call.to_string().as_bytes(),
    );
    assert_eq!(stream.status, 200);
    let ask = stream.wait_for("elicitation/create");
    let reply =
        client.post(&json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": action}}));
    assert_eq!(reply.status, 202, "{}", reply.text());
    let answer = stream.next_message().expect("the call's answer");
    assert_eq!(answer["id"], call["id"]);
    answer["result"].clone()
}

#[test]
fn an_approval_holds_only_for_the_principal_that_gave_it_and_a_dismissal_is_said_to_be_one() {
    let setup = Setup::calls_server();
    let dir = plugins(&["fixture"]);
    let tokens = TempDir::new("approval-tokens");
    let file = tokens.path().join("tokens");
    std::fs::write(
        &file,
        "alice alice-token-0123456789\nbob bob-token-0123456789ab\n",
    )
    .expect("tokens");
    let serve = Serve::start_on(
        dir.path(),
        "127.0.0.1:0",
        &["--tokens", &file.to_string_lossy()],
        &[
            ("COREMCP_MCP_CONFIG", &setup.config),
            ("COREMCP_MCP_SERVERS", ""),
            ("COREMCP_MCP_GRANTS", "alice=m;bob=m"),
        ],
    );
    let session = |token: &str| {
        let mut client = serve.client();
        client.token = Some(token.to_owned());
        client.initialize_with(json!({"elicitation": {}}));
        let until = Instant::now() + Duration::from_secs(30);
        while !client.request("tools/list", json!({}))["result"]["tools"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["name"] == "mcp__m__echo"))
        {
            assert!(Instant::now() < until, "{}", serve.stderr());
            std::thread::sleep(Duration::from_millis(100));
        }
        client
    };
    let status = || {
        coremcp_tests::http::request(
            serve.addr,
            "GET",
            "/api/status",
            &[("Authorization", "Bearer alice-token-0123456789")],
            b"",
        )
        .json()["upstream"][0]
            .clone()
    };
    let mut alice = session("alice-token-0123456789");
    assert_eq!(
        text(&http_call_answering(&serve, &mut alice, "hello", "accept")),
        "hello"
    );
    let shown = status();
    assert_eq!(shown["approved"], true, "{shown}");
    assert_eq!(
        shown["approval"], "approved by a human for alice on this connection",
        "{shown}"
    );
    // Alice is not asked again.
    assert_eq!(
        text(&alice.call("mcp__m__echo", json!({"message": "again"}))),
        "again"
    );

    // Bob's human is asked: Alice's yes is not his.
    let mut bob = session("bob-token-0123456789ab");
    let dismissed = http_call_answering(&serve, &mut bob, "hello", "cancel");
    assert!(is_error(&dismissed), "{dismissed}");
    assert_eq!(
        text(&dismissed),
        "The question whether \"mcp__m__echo\" may use the MCP server \"m\" was dismissed \
         without an answer, so nothing was called. Ask the user to approve it, or carry on \
         with the tools you have."
    );
    // A dismissal is not a decline: the next call asks again, and a decline is final.
    let declined = http_call_answering(&serve, &mut bob, "hello", "decline");
    assert!(text(&declined).starts_with("The human declined to use the MCP server \"m\""));
    let calls = std::fs::read_to_string(setup.calls()).unwrap_or_default();
    assert_eq!(
        calls.lines().collect::<Vec<_>>(),
        ["echo", "echo"],
        "only Alice's calls ran"
    );
}

#[test]
fn a_pre_approved_server_shows_approved_and_why() {
    let setup = Setup::calls_server();
    let dir = plugins(&["fixture"]);
    let serve = Serve::start_on(
        dir.path(),
        "127.0.0.1:0",
        &[],
        &[
            ("COREMCP_MCP_CONFIG", &setup.config),
            ("COREMCP_MCP_SERVERS", ""),
            ("COREMCP_MCP_GRANTS", "*=m"),
            ("COREMCP_MCP_PREAPPROVED", "m"),
        ],
    );
    let mut client = serve.client();
    client.initialize();
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        let result = client.call("mcp__m__echo", json!({"message": "ok"}));
        if text(&result) == "ok" {
            break;
        }
        assert!(Instant::now() < until, "{result}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let status = coremcp_tests::http::request(serve.addr, "GET", "/api/status", &[], b"").json();
    let upstream = &status["upstream"][0];
    assert_eq!(upstream["approved"], true, "{upstream}");
    assert_eq!(
        upstream["approval"],
        "pre-approved (COREMCP_MCP_PREAPPROVED)"
    );
    assert_eq!(upstream["needs_approval"], false);
}

#[test]
fn the_real_servers_prompts_and_resources_pass_through_over_stdio_and_http() {
    let Some(everything) = installed("COREMCP_TEST_EVERYTHING") else {
        return;
    };
    let port = free_port();
    let _http = everything_http(&everything, port);
    let setup = Setup::new(json!([
        {"id": "everything", "command": everything, "args": ["stdio"]},
        {"id": "everything-http", "type": "http", "url": format!("http://127.0.0.1:{port}/mcp")},
    ]));
    let (_plugins, mut server) = setup.stdio(&[
        ("COREMCP_MCP_GRANTS", "stdio=everything,everything-http"),
        ("COREMCP_MCP_REQUIRE_APPROVAL", "false"),
    ]);
    server.initialize();
    for id in ["everything", "everything-http"] {
        wait_listed(&mut server, &format!("mcp__{id}__echo"));
        let until = Instant::now() + Duration::from_secs(30);
        let prompts = loop {
            let listed = server.request("prompts/list", json!({}));
            let names: Vec<String> = listed["result"]["prompts"]
                .as_array()
                .map(|p| {
                    p.iter()
                        .filter_map(|p| p["name"].as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default();
            if names.iter().any(|n| n.starts_with(&format!("mcp__{id}__"))) {
                break names;
            }
            assert!(Instant::now() < until, "{id}: no prompts: {listed}");
            std::thread::sleep(Duration::from_millis(100));
        };
        let simple = format!("mcp__{id}__simple-prompt");
        assert!(prompts.contains(&simple), "{prompts:?}");
        let got = server.request("prompts/get", json!({"name": simple}));
        assert!(
            got["result"]["messages"][0]["content"]["text"]
                .as_str()
                .is_some_and(|t| t.contains("simple prompt")),
            "{got}"
        );
        let resources = server.request("resources/list", json!({}));
        let prefix = format!("coremcp+{id}:");
        let uri = resources["result"]["resources"]
            .as_array()
            .and_then(|r| {
                r.iter()
                    .filter_map(|r| r["uri"].as_str())
                    .find(|u| u.starts_with(&prefix))
            })
            .unwrap_or_else(|| panic!("no resource of {id}: {resources}"))
            .to_owned();
        let read = server.request("resources/read", json!({"uri": uri}));
        assert_eq!(read["result"]["contents"][0]["uri"], json!(uri), "{read}");
        assert!(coremcp_tests::nulls(&read).is_empty(), "{read}");
        let templates = server.request("resources/templates/list", json!({}));
        assert!(
            templates["result"]["resourceTemplates"]
                .as_array()
                .is_some_and(|t| t.iter().any(|t| t["uriTemplate"]
                    .as_str()
                    .is_some_and(|u| u.starts_with(&prefix)))),
            "{templates}"
        );
    }
}

/// A stdio server that stops reading its input cannot hold the session up: its calls are sent
/// from the thread that reads the client, and what does not fit in the pipe waits in a bounded
/// backlog (host/lib/upstream/src/pipe.rs) instead of blocking that thread.
#[test]
fn a_server_that_stops_reading_does_not_stall_the_session() {
    let setup = Setup::new(json!([]));
    setup.write(json!([misbehave("m", "stall", &setup.calls())]));
    let (_plugins, mut server) = setup.stdio(&[
        ("COREMCP_MCP_GRANTS", "stdio=m"),
        ("COREMCP_MCP_REQUIRE_APPROVAL", "false"),
    ]);
    server.initialize();
    wait_listed(&mut server, "mcp__m__stall");
    server.send(
        &json!({"jsonrpc": "2.0", "id": "stall", "method": "tools/call",
                        "params": {"name": "mcp__m__stall", "arguments": {"seconds": 3}}}),
    );
    // More than its input pipe holds (64 KB), and less than ours does: were our reader to
    // block writing them, this test's own writes would still go through, and the ping show it.
    let message = "m".repeat(19_000);
    for n in 0..5 {
        server.send(
            &json!({"jsonrpc": "2.0", "id": format!("echo-{n}"), "method": "tools/call",
                            "params": {"name": "mcp__m__echo", "arguments": {"message": message}}}),
        );
    }
    let started = Instant::now();
    let pong = server.request("ping", json!({}));
    assert!(pong.get("result").is_some(), "{pong}");
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "ping waited {:?} behind a server that reads nothing",
        started.elapsed()
    );
    let stalled = server.answer(&json!("stall"), Duration::from_secs(20));
    assert_eq!(text(&stalled["result"]), "stalled", "{stalled}");
    for n in 0..5 {
        let echoed = server.answer(&json!(format!("echo-{n}")), Duration::from_secs(20));
        assert_eq!(
            text(&echoed["result"]),
            message,
            "echo-{n}: every byte arrived"
        );
    }
}

/// A server that is slow to start never holds the first listing up: the built-in tools (and
/// the prompts and resources lists) answer at once, and the server's tools arrive with
/// `notifications/tools/list_changed` once it connects.
#[test]
fn a_slow_upstream_never_holds_the_first_listing() {
    let setup = Setup::new(json!([]));
    let slow = format!("sleep 10; exec python3 {} calls", fixture());
    setup.write(json!([{"id": "m", "command": "sh", "args": ["-c", slow]}]));
    let (_plugins, mut server) = setup.stdio(&[
        ("COREMCP_MCP_GRANTS", "stdio=m"),
        ("COREMCP_MCP_REQUIRE_APPROVAL", "false"),
    ]);
    let started = Instant::now();
    server.initialize();
    let names = server.tool_names();
    for method in ["prompts/list", "resources/list"] {
        let answer = server.request(method, json!({}));
        assert!(answer.get("result").is_some(), "{method}: {answer}");
    }
    // Far above the 100 ms budget (`scripts/bench` measures it), far below the 10 s start.
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(3),
        "the first listings took {took:?}"
    );
    assert!(names.iter().any(|n| n == "fixture_echo"), "{names:?}");
    assert!(
        !names.iter().any(|n| n.starts_with("mcp__m__")),
        "{names:?}"
    );
    // The server's tools come once it connects, announced.
    server.notification("notifications/tools/list_changed", Duration::from_secs(40));
    let names = server.tool_names();
    assert!(names.iter().any(|n| n == "mcp__m__echo"), "{names:?}");
}

/// In a search session an upstream server's tools are found and called through the meta tools,
/// with the upstream grants judging the inner call, and never listed.
#[test]
fn upstream_tools_are_searched_and_called_through_the_meta_tools() {
    let setup = Setup::calls_server();
    let dir = plugins(&["fixture"]);
    let mut server = Server::start(
        dir.path(),
        &["--groups", "search"],
        &[
            ("COREMCP_MCP_CONFIG", setup.config.as_str()),
            ("COREMCP_MCP_SERVERS", ""),
            ("COREMCP_MCP_GRANTS", "stdio=m"),
            ("COREMCP_MCP_REQUIRE_APPROVAL", "false"),
        ],
    );
    server.initialize();
    server.wait_stderr("upstream server connected", Duration::from_secs(30));
    // The list is only the two meta tools, with the server connected: its tools are found.
    assert_eq!(server.tool_names(), ["tools_search", "tools_call"]);
    let found = server.ok("tools_search", json!({"query": "echo message"}));
    let names = found.to_string();
    assert!(names.contains("mcp__m__echo"), "{found}");
    let called = server.call(
        "tools_call",
        json!({"name": "mcp__m__echo", "arguments": {"message": "again"}}),
    );
    assert_eq!(text(&called), "again");
}

/// Tool names model APIs refuse are published renamed, never withheld, and a call by the
/// published name reaches the server's own tool.
#[test]
fn renamed_upstream_tools_are_called_by_their_own_names() {
    let setup = Setup::new(json!([]));
    setup.write(json!([{"id": "n", "command": "python3", "args": [fixture(), "names"]}]));
    let (_plugins, mut server) = setup.stdio(&[
        ("COREMCP_MCP_GRANTS", "stdio=n"),
        ("COREMCP_MCP_REQUIRE_APPROVAL", "false"),
    ]);
    server.initialize();
    let names = wait_listed(&mut server, "mcp__n__a_b");
    let long = format!("long_{}", "n".repeat(65));
    let mut published: Vec<&String> = names.iter().filter(|n| n.starts_with("mcp__n__")).collect();
    published.sort();
    assert_eq!(published.len(), 4, "{names:?}");
    for name in &published {
        assert!(
            name.len() <= 64
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
            "{name}"
        );
    }
    let long_published = published
        .iter()
        .find(|n| n.starts_with("mcp__n__long_"))
        .expect("the long one");
    for (name, original) in [
        ("mcp__n__a_b", "a.b"),
        ("mcp__n__a_b_2", "a/b"),
        ("mcp__n__a_b_3", "a_b"),
        (long_published.as_str(), long.as_str()),
    ] {
        let answer = server.call(name, json!({}));
        assert_eq!(text(&answer), format!("called {original}"), "{name}");
    }
    // `coremcp upstream` reports each rename.
    let (code, out, err) = coremcp_tests::run(
        &["upstream"],
        &[
            ("COREMCP_MCP_CONFIG", setup.config.as_str()),
            ("COREMCP_MCP_SERVERS", ""),
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("mcp__n__a_b_2 is the server's \"a/b\""),
        "{out}"
    );
}
