//! Relay failover and `remote_host`, with real processes (ARCHITECTURE.md: the path of one call):
//! relays are `coremcp serve --service` on 127.0.0.2 and 127.0.0.3 sharing one PostgreSQL; the
//! agent's `coremcp stdio` lists them with `--relay`. Which relay served a call is read from its
//! log (`call <tool>` at debug level); connect attempts from the proxy's log.

use std::net::TcpListener;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use coremcp_tests::http::Serve;
use coremcp_tests::stores::{Backend, StoreEnv};
use coremcp_tests::{plugins, text, Server, TempDir};
use serde_json::json;

/// `coremcp serve --listen ADDR ARGS…` logging each call (`call <tool>`) at debug level.
fn serve(addr: &str, plugins: &Path, args: &[&str]) -> Serve {
    Serve::start_on(plugins, addr, args, &[("COREMCP_LOG", "coremcp=debug")])
}

/// Its MCP URL.
fn url(serve: &Serve) -> String {
    format!("http://{}/mcp", serve.addr)
}

/// Calls of `tool` the process ran, from its log, as read so far.
fn calls_run(serve: &Serve, tool: &str) -> usize {
    serve.stderr().matches(&format!("call {tool}")).count()
}

/// Polls `count` until it reaches `at_least` (or 10 s pass) and returns what it is then: a
/// log line written before an answer may still be on its way through the pipe when the answer
/// arrives.
fn settled(at_least: usize, count: impl Fn() -> usize) -> usize {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let n = count();
        if n >= at_least || Instant::now() > until {
            return n;
        }
        thread::sleep(Duration::from_millis(20));
    }
}

/// A free port on `ip`.
fn free_addr(ip: &str) -> String {
    let listener = TcpListener::bind((ip, 0)).expect("bind");
    listener.local_addr().expect("addr").to_string()
}

/// A relay: service mode on the shared store.
fn relay(addr: &str, dir: &TempDir, store: &StoreEnv) -> Serve {
    let args = store.args();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut all = vec!["--service"];
    all.extend_from_slice(&args);
    serve(addr, dir.path(), &all)
}

/// The agent's `coremcp stdio` with these relays.
fn proxy(dir: &TempDir, relays: &[&str], extra: &[&str]) -> Server {
    let data = TempDir::new("proxy-data");
    let data = data.path().to_string_lossy().into_owned();
    let mut args = vec!["--data", data.as_str(), "--relay-retry", "3"];
    for relay in relays {
        args.extend_from_slice(&["--relay", relay]);
    }
    args.extend_from_slice(extra);
    let mut server = Server::start(dir.path(), &args, &[("COREMCP_LOG", "coremcp=debug")]);
    server.initialize();
    server
}

fn connect_failures(proxy: &Server, relay: &str) -> usize {
    proxy
        .stderr()
        .lines()
        .filter(|l| l.contains(&format!("relay {relay} cannot connect")))
        .count()
}

#[test]
fn calls_fail_over_to_the_next_relay_and_return_to_the_first() {
    let dir = plugins(&["notepad", "session"]);
    let Some(store) = StoreEnv::postgres("relays") else {
        return;
    };
    let (first_addr, second_addr) = (free_addr("127.0.0.2"), free_addr("127.0.0.3"));
    let first = relay(&first_addr, &dir, &store);
    let second = relay(&second_addr, &dir, &store);
    let (first_url, second_url) = (url(&first), url(&second));
    let mut agent = proxy(&dir, &[&first_url, &second_url], &[]);

    let set = agent.ok(
        "notepad_set",
        json!({"scope": "global", "key": "relayed", "value": "v1"}),
    );
    assert_eq!(set["version"], 1);
    assert_eq!(
        (
            settled(1, || calls_run(&first, "notepad_set")),
            calls_run(&second, "notepad_set")
        ),
        (1, 0)
    );
    // Core MCPs speak 2026-07-28 between themselves: no session on the relay.
    first.wait_stderr("first 2026-07-28 request", Duration::from_secs(10));
    let status = coremcp_tests::http::request(first.addr, "GET", "/api/status", &[], b"").json();
    assert_eq!(status["sessions"], 0, "{status}");

    // The first relay dies: every call goes through the second, and the dead one gets one
    // connect attempt per retry period (3 s here), not one per call.
    drop(first);
    let started = Instant::now();
    let mut calls = 0;
    while started.elapsed() < Duration::from_secs(7) {
        let note = agent.ok("notepad_get", json!({"scope": "global", "key": "relayed"}));
        assert_eq!(note["value"], "v1");
        calls += 1;
        thread::sleep(Duration::from_millis(50));
    }
    let attempts = settled(1, || connect_failures(&agent, &first_url));
    assert!(
        (1..=4).contains(&attempts),
        "{attempts} connect attempts to the dead relay in 7 s of {calls} calls (retry 3 s)"
    );
    assert_eq!(settled(calls, || calls_run(&second, "notepad_get")), calls);

    // It comes back: once its period is over, calls return to it.
    let first = relay(&first_addr, &dir, &store);
    thread::sleep(Duration::from_millis(3200));
    let note = agent.ok("notepad_get", json!({"scope": "global", "key": "relayed"}));
    assert_eq!(note["value"], "v1");
    agent.ok("notepad_get", json!({"scope": "global", "key": "relayed"}));
    assert_eq!(
        settled(2, || calls_run(&first, "notepad_get")),
        2,
        "calls are back on the first relay"
    );
    assert_eq!(calls_run(&second, "notepad_get"), calls);
}

#[test]
fn an_error_from_a_live_relay_comes_back_as_it_is_and_is_never_retried() {
    let dir = plugins(&["notepad"]);
    let Some(store) = StoreEnv::postgres("live-error") else {
        return;
    };
    let first = relay(&free_addr("127.0.0.2"), &dir, &store);
    let second = relay(&free_addr("127.0.0.3"), &dir, &store);
    let mut agent = proxy(&dir, &[&url(&first), &url(&second)], &[]);
    let missing = agent.refused("notepad_get", json!({"scope": "global", "key": "nope"}));
    assert!(
        missing.starts_with("notepad_get failed (not_found):"),
        "the relay's own error: {missing}"
    );
    assert_eq!(
        (
            settled(1, || calls_run(&first, "notepad_get")),
            calls_run(&second, "notepad_get")
        ),
        (1, 0)
    );
    // A JSON-RPC error of the relay (its argument check) is returned as such.
    let answer = agent.request(
        "tools/call",
        json!({"name": "notepad_get", "arguments": {"scope": "global", "key": "x", "bogus": 1}}),
    );
    let shown = answer.to_string();
    assert!(
        answer.get("error").is_some() || shown.contains("unknown argument"),
        "{shown}"
    );
    assert_eq!(calls_run(&second, "notepad_get"), 0);
}

#[test]
fn a_relay_silent_in_the_handshake_is_failed_over_within_the_connect_timeout() {
    let dir = plugins(&["notepad"]);
    let Some(store) = StoreEnv::postgres("silent") else {
        return;
    };
    // Accepts connections and never answers: no tool call can have reached it.
    let silent = TcpListener::bind("127.0.0.2:0").expect("bind");
    let silent_url = format!("http://{}/mcp", silent.local_addr().expect("addr"));
    let held = Arc::new(Mutex::new(Vec::new()));
    let keeper = Arc::clone(&held);
    thread::spawn(move || {
        for stream in silent.incoming().flatten() {
            keeper.lock().expect("held").push(stream);
        }
    });
    let second = relay(&free_addr("127.0.0.3"), &dir, &store);
    let mut agent = proxy(
        &dir,
        &[&silent_url, &url(&second)],
        &["--relay-connect-timeout", "1"],
    );
    let started = Instant::now();
    let error = agent.refused("notepad_get", json!({"scope": "global", "key": "k"}));
    let took = started.elapsed();
    // The second relay answered (the note is missing there), after the 1 s set-up deadline.
    assert!(
        error.starts_with("notepad_get failed (not_found):"),
        "{error}"
    );
    assert!(took < Duration::from_secs(3), "{took:?}");
    assert_eq!(settled(1, || calls_run(&second, "notepad_get")), 1);
    assert!(
        !held.lock().expect("held").is_empty(),
        "the silent relay was reached"
    );
    let log = agent.stderr();
    assert!(
        log.contains(&format!(
            "relay {silent_url} cannot connect to {}: no answer to server/discover within the 1 s connect timeout",
            silent_url.trim_start_matches("http://").trim_end_matches("/mcp")
        )),
        "{log}"
    );
}

/// Sends `SIGCONT` to a relay stopped with `SIGSTOP` when dropped, so a failing test does
/// not leave it frozen.
struct Stopped<'a>(&'a Serve);

impl<'a> Stopped<'a> {
    fn stop(relay: &'a Serve) -> Self {
        relay.signal(libc::SIGSTOP);
        Self(relay)
    }
}

impl Drop for Stopped<'_> {
    fn drop(&mut self) {
        self.0.signal(libc::SIGCONT);
    }
}

#[test]
fn a_hung_relay_costs_one_call_and_the_calls_after_it_go_to_the_next_relay() {
    let dir = plugins(&["notepad"]);
    let Some(store) = StoreEnv::postgres("hung") else {
        return;
    };
    let first = relay(&free_addr("127.0.0.2"), &dir, &store);
    let second = relay(&free_addr("127.0.0.3"), &dir, &store);
    let (first_url, second_url) = (url(&first), url(&second));
    // The agent's Core MCP, over HTTP so that its status and metrics can be read.
    let agent = serve(
        "127.0.0.1:0",
        dir.path(),
        &[
            "--relay",
            &first_url,
            "--relay",
            &second_url,
            "--call-timeout",
            "4",
        ],
    );
    let mut client = agent.client();
    client.initialize();
    let key = json!({"scope": "global", "key": "hung"});
    client.call(
        "notepad_set",
        json!({"scope": "global", "key": "hung", "value": "v"}),
    );
    assert_eq!(settled(1, || calls_run(&first, "notepad_set")), 1);

    // The first relay hangs with the agent's connection to it open (SIGSTOP).
    let stopped = Stopped::stop(&first);
    let started = Instant::now();
    let lost = client.call("notepad_get", key.clone());
    let took = started.elapsed();
    let lost_text = text(&lost).to_owned();
    assert_eq!(lost["isError"], true, "{lost}");
    assert!(
        lost_text.contains(&first_url)
            && lost_text.contains("no answer")
            && lost_text.contains("It may have run there"),
        "{lost_text}"
    );
    assert!(took < Duration::from_secs(6), "{took:?}");
    eprintln!("the call the hung relay took: answered in {took:?} (call timeout 4 s)");
    assert_eq!(
        calls_run(&second, "notepad_get"),
        0,
        "the lost call is not sent on"
    );

    // The next call goes straight to the second relay.
    let started = Instant::now();
    let note = client.call("notepad_get", key.clone());
    let took = started.elapsed();
    assert_eq!(note["structuredContent"]["value"], "v", "{note}");
    assert!(
        took < Duration::from_secs(3),
        "answered by the second relay in {took:?}"
    );
    eprintln!("the next call: answered by the second relay in {took:?}");
    assert_eq!(settled(1, || calls_run(&second, "notepad_get")), 1);

    let status = coremcp_tests::http::request(agent.addr, "GET", "/api/status", &[], b"").json();
    let hung = &status["relays"][0];
    assert_eq!(hung["state"], "down", "{status}");
    assert_eq!(hung["unanswered"], 1, "{status}");
    assert!(
        hung["reason"]
            .as_str()
            .is_some_and(|r| r.contains("sent no answer by its deadline")),
        "{status}"
    );
    let metrics = coremcp_tests::http::request(agent.addr, "GET", "/metrics", &[], b"").text();
    for line in [
        format!("coremcp_relay_down{{relay=\"{first_url}\"}} 1"),
        format!("coremcp_relay_unanswered_total{{relay=\"{first_url}\"}} 1"),
    ] {
        assert!(metrics.contains(&line), "{line} in:\n{metrics}");
    }

    // A Core MCP that starts now has no session with the hung relay: its set-up times out
    // within the connect timeout (2 s by default) and the call goes to the second relay.
    let mut fresh = proxy(&dir, &[&first_url, &second_url], &[]);
    let started = Instant::now();
    let note = fresh.ok("notepad_get", key);
    let took = started.elapsed();
    assert_eq!(note["value"], "v");
    assert!(
        took < Duration::from_secs(3),
        "answered by the second relay in {took:?}"
    );
    eprintln!("a new Core MCP's first call: answered by the second relay in {took:?}");
    fresh.wait_stderr("within the 2 s connect timeout", Duration::from_secs(10));
    drop(stopped);
}

#[test]
fn with_every_relay_down_one_error_names_each_and_why() {
    let dir = plugins(&["notepad"]);
    let (a, b) = (free_addr("127.0.0.2"), free_addr("127.0.0.3"));
    let (a, b) = (format!("http://{a}/mcp"), format!("http://{b}/mcp"));
    let mut agent = proxy(&dir, &[&a, &b], &[]);
    let error = agent.refused("notepad_get", json!({"scope": "global", "key": "k"}));
    assert!(error.contains("no relay could take the call"), "{error}");
    for relay in [&a, &b] {
        assert!(
            error.contains(&format!("{relay} (cannot connect to")),
            "{relay} and why: {error}"
        );
    }
    // Within the retry period they are skipped, and the error says so.
    let again = agent.refused("notepad_get", json!({"scope": "global", "key": "k"}));
    assert!(again.contains("skipped for"), "{again}");
    assert_eq!(settled(1, || connect_failures(&agent, &a)), 1);
}

#[test]
fn remote_host_runs_the_call_on_that_hosts_core_mcp_one_hop() {
    // The other machine: a proxy-mode `coremcp serve` on 127.0.0.2 with its own root.
    let remote_root = TempDir::new("remote-root");
    std::fs::write(remote_root.path().join("only-on-devbox-2.txt"), "x").expect("write");
    let remote_plugins = plugins(&["files"]);
    let root = remote_root.path().to_string_lossy().into_owned();
    let remote = serve(
        &free_addr("127.0.0.2"),
        remote_plugins.path(),
        &["--root", &root],
    );

    let local_root = TempDir::new("local-root");
    std::fs::write(local_root.path().join("only-here.txt"), "x").expect("write");
    let dir = plugins(&["files", "registry"]);
    let store = StoreEnv::new(Backend::Sqlite, "remote-host");
    let local = local_root.path().to_string_lossy().into_owned();
    let mut agent = store.start(dir.path(), &["--root", &local]);
    agent.ok(
        "registry_host_add",
        json!({"name": "devbox-2", "address": "127.0.0.2", "core_mcp_url": url(&remote)}),
    );
    let here = text(&agent.call("files_list", json!({}))).to_owned();
    assert!(
        here.contains("only-here.txt") && !here.contains("only-on-devbox-2"),
        "{here}"
    );
    let there = agent.ok("files_list", json!({"remote_host": "devbox-2"}));
    let shown = there.to_string();
    assert!(
        shown.contains("only-on-devbox-2.txt") && !shown.contains("only-here"),
        "{shown}"
    );
    assert_eq!(settled(1, || calls_run(&remote, "files_list")), 1);
    // The remote side got the call without remote_host: it ran it itself.
    assert!(!remote.stderr().contains("route=remote_host"));

    let unknown = agent.refused("files_list", json!({"remote_host": "devbox-9"}));
    assert!(
        unknown.contains("unknown remote_host \"devbox-9\"") && unknown.contains("devbox-2"),
        "{unknown}"
    );
    let registry = agent.refused("registry_host_list", json!({"remote_host": "devbox-2"}));
    assert!(
        registry.contains("runs only where the agent runs"),
        "{registry}"
    );
    // A host the Registry has but forwards nothing to is named for what it is.
    agent.ok(
        "registry_host_add",
        json!({"name": "devbox-3", "address": "127.0.0.3"}),
    );
    let no_address = agent.refused("files_list", json!({"remote_host": "devbox-3"}));
    assert!(
        no_address.contains("remote_host \"devbox-3\" has no Core MCP address"),
        "{no_address}"
    );
    agent.ok(
        "registry_host_update",
        json!({"name": "devbox-2", "enabled": false}),
    );
    let disabled = agent.refused("files_list", json!({"remote_host": "devbox-2"}));
    assert!(
        disabled.contains("remote_host \"devbox-2\" is disabled"),
        "{disabled}"
    );
}

#[test]
fn service_mode_serves_only_the_forwarded_groups_and_never_loads_a_local_one() {
    let dir = plugins(&["notepad", "session", "registry", "git", "files", "scrolls"]);
    let store = StoreEnv::new(Backend::Sqlite, "service");
    let args = store.args();
    let mut all = vec!["--service", "--groups", "notepad,session,registry"];
    all.extend(args.iter().map(String::as_str));
    let relay = Serve::start(dir.path(), &all);
    let mut client = relay.client();
    client.initialize();
    let listed = client.request("tools/list", json!({}));
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        names.contains(&"notepad_get") && names.contains(&"session_register"),
        "{names:?}"
    );
    assert!(names.contains(&"registry_host_list"), "{names:?}");
    assert!(
        !names
            .iter()
            .any(|n| n.starts_with("git_") || n.starts_with("files_")),
        "local tools listed in service mode: {names:?}"
    );
    let refused = client.call("git_status", json!({}));
    let refused = refused["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        refused.contains("git_status is not served in service mode"),
        "{refused}"
    );
    // A forwarded group this relay leaves out is said to be that, not a local one.
    let scrolls = client.call("scrolls_project_list", json!({}));
    let scrolls = scrolls["content"][0]["text"].as_str().unwrap_or_default();
    assert!(
        scrolls.contains("not served by this relay")
            && scrolls.contains("Scrolls group is not enabled here")
            && !scrolls.contains("agent's machine"),
        "{scrolls}"
    );
    let set = client.call(
        "notepad_set",
        json!({"scope": "global", "key": "svc", "value": "v"}),
    );
    assert_eq!(set["structuredContent"]["version"], 1, "{set}");
    // A local group in a relay's --groups is refused at start, saying why.
    let plugins_arg = dir.path().to_string_lossy().into_owned();
    #[allow(clippy::disallowed_methods)] // The binary's own start, refused before it serves.
    let mut refused_start = std::process::Command::new(coremcp_tests::coremcp())
        .args([
            "serve",
            "--service",
            "--groups",
            "notepad,git",
            "--listen",
            "127.0.0.1:0",
        ])
        .args(["--plugins", &plugins_arg])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("coremcp serve");
    let until = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = refused_start.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() > until {
            let _ = refused_start.kill();
            panic!("serve --service --groups notepad,git started instead of refusing");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(refused_start.stderr.as_mut().expect("stderr"), &mut stderr)
        .expect("read stderr");
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("\"git\" is a group that runs on the agent's machine"),
        "{stderr}"
    );
    // The local groups' libraries were never opened.
    let maps = std::fs::read_to_string(format!("/proc/{}/maps", relay.pid())).expect("maps");
    let mapped: Vec<&str> = maps
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .filter(|p| p.contains("libcoremcp_"))
        .collect();
    assert!(
        !mapped
            .iter()
            .any(|p| p.contains("libcoremcp_git") || p.contains("libcoremcp_files")),
        "{mapped:?}"
    );
    assert!(
        mapped.iter().any(|p| p.contains("libcoremcp_notepad")),
        "{mapped:?}"
    );
}

/// A Codex agent's budget travels with its calls: the relay fits each answer to the agent's
/// 10 000 characters, so every page and every piece of a long value arrives whole (structured,
/// never cut on the way), and the walks reach everything.
#[test]
fn a_relay_fits_its_answers_to_the_agents_budget() {
    let dir = plugins(&["notepad"]);
    let Some(store) = StoreEnv::postgres("relay-budget") else {
        return;
    };
    let addr = free_addr("127.0.0.2");
    let relayed = relay(&addr, &dir, &store);
    let data = TempDir::new("proxy-data");
    let data = data.path().to_string_lossy().into_owned();
    let relay_url = url(&relayed);
    let mut agent = Server::start(dir.path(), &["--data", &data, "--relay", &relay_url], &[]);
    agent.initialize_as("2025-06-18", "codex-mcp-client");
    let notes: Vec<serde_json::Value> = (0..100)
        .map(|i| json!({"key": format!("k{i:03}"), "value": "é\"".repeat(1_000)}))
        .collect();
    agent.ok(
        "notepad_bulk_set",
        json!({"scope": "global", "entries": notes}),
    );
    let mut args = json!({"scope": "global", "include_values": true, "limit": 200});
    let (mut seen, mut pages) = (0, 0);
    loop {
        // `ok` holds the answer to the session's 10 000 and requires its structured content:
        // an answer cut on the way would have lost it.
        let page = agent.ok("notepad_list", args.clone());
        seen += page["items"].as_array().map_or(0, Vec::len);
        pages += 1;
        match page.get("next_cursor") {
            Some(cursor) => args["cursor"] = cursor.clone(),
            None => break,
        }
    }
    assert_eq!(seen, 100, "every note once");
    assert!(pages >= 5, "{pages} pages of at most 10 000 characters");
    assert_eq!(
        settled(pages, || calls_run(&relayed, "notepad_list")),
        pages,
        "the relay ran every page"
    );
}
