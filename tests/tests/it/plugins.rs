//! Plugins as a user meets them: loaded on demand, contained when they panic, overrun their
//! deadline or return megabytes, and refused in one line when incompatible.

use std::time::{Duration, Instant};

use coremcp_tests::{is_error, plugin_status, plugins, run, text, Server, TempDir, WAIT};
use serde_json::json;

#[test]
fn no_library_loads_until_a_group_is_needed() {
    let dir = plugins(&["publishing", "fixture"]);
    let mut server = Server::start(dir.path(), &[], &[]);
    server.initialize();
    server.request("ping", json!({}));
    assert_eq!(
        server.mapped_plugins(),
        Vec::<String>::new(),
        "initialize loads nothing"
    );
    server.call("fixture_echo", json!({}));
    assert_eq!(
        server.mapped_plugins(),
        ["libcoremcp_fixture.so"],
        "only the called group"
    );
    server.request("tools/list", json!({}));
    assert_eq!(
        server.mapped_plugins(),
        ["libcoremcp_fixture.so"],
        "a full listing loads none: the install records list the groups"
    );
}

#[test]
fn the_store_groups_share_one_sqlite_library() {
    // Each store plugin carrying its own SQLite cost ~1.6 MB of mapped code per group; they
    // link the system's shared library instead, so the process maps it once.
    let dir = plugins(&["notepad", "registry"]);
    let mut server = Server::start(dir.path(), &[], &[]);
    server.initialize();
    server.ok(
        "notepad_set",
        json!({"scope": "global", "key": "k", "value": "v"}),
    );
    server.ok("registry_theme_list", json!({}));
    assert_eq!(
        server.mapped_plugins(),
        ["libcoremcp_notepad.so", "libcoremcp_registry.so"]
    );
    let sqlite = server.mapped_paths("libsqlite3");
    assert_eq!(sqlite.len(), 1, "one SQLite for both groups: {sqlite:?}");
}

/// What is mapped is a vetted copy of the installed bytes, shared by content: two sessions on
/// one data folder map the same file (so they share its pages), named by the bytes' SHA-256; a
/// copy changed after it was made is never used again, and the next session makes a new one.
#[test]
fn sessions_share_one_vetted_copy_of_a_library() {
    use sha2::Digest;
    let dir = plugins(&["fixture"]);
    let data = TempDir::new("shared-copy");
    let data_arg = data.path().to_str().expect("utf-8 temp path");
    let installed = std::fs::read(dir.path().join("libcoremcp_fixture.so")).expect("read");
    let sha: String = sha2::Sha256::digest(&installed)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let start = || {
        let mut server = Server::start(dir.path(), &[], &[("COREMCP_DATA", data_arg)]);
        server.initialize();
        let echoed = server.call("fixture_echo", json!({"n": 1}));
        assert_eq!(echoed["structuredContent"]["n"], 1, "{echoed}");
        server
    };
    let first = start();
    let second = start();
    let copy = data
        .path()
        .join("vetted-plugins")
        .join(&sha)
        .join("libcoremcp_fixture.so");
    let shown = copy.display().to_string();
    assert_eq!(first.mapped_paths("libcoremcp_fixture"), [shown.as_str()]);
    assert_eq!(second.mapped_paths("libcoremcp_fixture"), [shown.as_str()]);
    assert_eq!(std::fs::read(&copy).expect("read copy"), installed);

    // Changed after it was made (its identity moves with it): never mapped again. (Made
    // read-only, it takes a change of mode first.)
    drop((first, second));
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&copy).expect("stat").permissions().mode();
    assert_eq!(mode & 0o777, 0o400, "{mode:o}");
    let mut changed = installed.clone();
    let last = changed.len() - 1;
    changed[last] ^= 0xff;
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    std::fs::write(&copy, &changed).expect("change the copy");
    let third = start();
    assert_eq!(third.mapped_paths("libcoremcp_fixture"), [shown]);
    assert_eq!(
        std::fs::read(&copy).expect("read copy"),
        installed,
        "made again from the installed bytes"
    );
    drop(third);
}

#[test]
fn groups_limit_what_a_session_sees_and_loads() {
    let dir = plugins(&["publishing", "fixture"]);
    let mut server = Server::start(dir.path(), &["--groups", "publishing"], &[]);
    server.initialize();
    let tools = server.request("tools/list", json!({}))["result"]["tools"].clone();
    let names: Vec<&str> = tools
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["publishing"]);
    let answer = server.request(
        "tools/call",
        json!({"name": "fixture_echo", "arguments": {}}),
    );
    assert_eq!(answer["error"]["code"], -32602, "not in this session");
    assert_eq!(
        server.mapped_plugins(),
        Vec::<String>::new(),
        "listed from its install record, the group is not loaded either"
    );

    let (code, _, stderr) = run(
        &[
            "stdio",
            "--plugins",
            &dir.path().to_string_lossy(),
            "--groups",
            "nope",
        ],
        &[],
    );
    assert_eq!(code, 2);
    assert!(stderr.contains("unknown group \"nope\""), "{stderr}");
}

#[test]
fn a_panic_is_a_tool_error_and_the_host_keeps_serving() {
    let dir = plugins(&["publishing", "fixture"]);
    let mut server = Server::start(dir.path(), &[], &[("COREMCP_PUBLISH_CMD", "echo")]);
    server.initialize();
    for _ in 0..3 {
        let result = server.call("fixture_panic", json!({}));
        assert!(is_error(&result));
        assert!(text(&result).contains("panic"), "{result}");
        assert!(text(&result).contains("fixture_panic was asked to panic"));
    }
    assert_eq!(
        server.call("fixture_echo", json!({"k": "v"}))["structuredContent"],
        json!({"k": "v"})
    );
    // The other group too (`echo` prints its arguments: a JSON number here).
    let result = server.call("publishing", json!({"args": ["42"]}));
    assert_eq!(
        result["structuredContent"],
        json!({"result": 42}),
        "{result}"
    );
    server.wait_stderr("panic", WAIT); // the panic is logged
}

#[test]
fn an_incompatible_plugin_is_refused_in_one_line_and_the_rest_serve() {
    let dir = plugins(&["publishing", "fixture"]);
    std::fs::copy(
        coremcp_tests::library("fixture_incompatible"),
        dir.path().join("libcoremcp_fixture_incompatible.so"),
    )
    .expect("copy");
    // Installing it is refused, naming both versions; never installed, it never loads.
    let (code, out, err) = coremcp_tests::index_plugins(dir.path());
    let stderr = format!("{out}{err}");
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("built against plugin API 2.0.0; this host speaks plugin API 1.0.0"),
        "{stderr}"
    );
    let line = plugin_status(dir.path(), "fixture_incompatible");
    assert!(line.contains("not installed"), "{line}");
    assert!(plugin_status(dir.path(), "fixture").ends_with("loaded"));

    let mut server = Server::start(dir.path(), &[], &[]);
    server.initialize();
    let tools = server.request("tools/list", json!({}))["result"]["tools"].clone();
    assert_eq!(
        tools.as_array().expect("tools").len(),
        10,
        "publishing and fixture still listed"
    );
    assert!(server
        .call("fixture_echo", json!({}))
        .get("isError")
        .is_none());
    let refusals: Vec<String> = server
        .wait_stderr("libcoremcp_fixture_incompatible.so: not installed", WAIT)
        .lines()
        .filter(|l| l.contains("libcoremcp_fixture_incompatible.so"))
        .map(str::to_owned)
        .collect();
    assert_eq!(refusals.len(), 1, "one line: {refusals:?}");
}

#[test]
fn a_file_that_is_not_a_plugin_is_reported_and_contained() {
    let dir = plugins(&["fixture"]);
    std::fs::write(
        dir.path().join("libcoremcp_git.so"),
        b"\x7fELF but not really",
    )
    .expect("write");
    assert!(plugin_status(dir.path(), "git").contains("failed: "));
    // Installing it is refused, saying what it is; it never loads.
    let (code, out, err) = coremcp_tests::index_plugins(dir.path());
    let stderr = format!("{out}{err}");
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("not a whole plugin library"), "{stderr}");

    let mut server = Server::start(dir.path(), &[], &[]);
    server.initialize();
    let result = server.call("git_status", json!({}));
    assert!(is_error(&result));
    assert!(
        text(&result).contains("git_status is unavailable")
            && text(&result).contains("not installed"),
        "{result}"
    );
    assert!(server
        .call("fixture_echo", json!({}))
        .get("isError")
        .is_none());
}

#[test]
fn a_missing_group_answers_a_clear_error() {
    let dir = plugins(&["fixture"]);
    let mut server = Server::start(dir.path(), &[], &[]);
    server.initialize();
    let result = server.call("docker_container_list", json!({}));
    assert!(is_error(&result));
    assert!(
        text(&result)
            .contains("the docker group is not installed: no plugin file libcoremcp_docker.so"),
        "{result}"
    );
    let result = server.call("docs_write", json!({}));
    assert_eq!(
        text(&result),
        "docs_write is not in this build: it needs the \"docs-write\" feature"
    );
}

#[test]
fn a_call_past_its_deadline_is_answered_on_time() {
    let dir = plugins(&["fixture"]);
    let mut server = Server::start(dir.path(), &["--call-timeout", "1"], &[]);
    server.initialize();
    let started = Instant::now();
    // This tool ignores the stop signal: the host must answer without it.
    let result = server.call("fixture_sleep", json!({"ms": 4000}));
    let took = started.elapsed();
    assert!(is_error(&result));
    assert!(
        text(&result).contains("fixture_sleep did not finish within 1 s"),
        "{result}"
    );
    assert!(
        took < Duration::from_millis(2500),
        "answered at the deadline, took {took:?}"
    );
    assert!(
        server
            .call("fixture_echo", json!({}))
            .get("isError")
            .is_none(),
        "still serving"
    );
    // A tool that polls the stop signal returns early, and its late answer is dropped.
    let result = server.call("fixture_sleep", json!({"ms": 4000, "poll": true}));
    assert!(text(&result).contains("did not finish within 1 s"));
    assert_eq!(server.request("ping", json!({}))["result"], json!({}));
    assert!(
        server.pending.is_empty(),
        "no second answer: {:?}",
        server.pending
    );
}

#[test]
fn a_cancelled_call_is_never_answered() {
    let dir = plugins(&["fixture"]);
    let mut server = Server::start(dir.path(), &[], &[]);
    server.initialize();
    server.send(&json!({"jsonrpc": "2.0", "id": "slow-1", "method": "tools/call",
                        "params": {"name": "fixture_sleep", "arguments": {"ms": 800, "poll": true}}}));
    std::thread::sleep(Duration::from_millis(100));
    server.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": "slow-1", "reason": "user"}}),
    );
    assert_eq!(server.request("ping", json!({}))["result"], json!({}));
    std::thread::sleep(Duration::from_millis(1200));
    assert!(
        server.recv(Duration::from_millis(100)).is_none(),
        "the cancelled call got no answer"
    );
    assert!(server.pending.is_empty(), "{:?}", server.pending);
}

#[test]
fn calls_run_concurrently_and_out_of_order() {
    let dir = plugins(&["fixture"]);
    let mut server = Server::start(dir.path(), &[], &[]);
    server.initialize();
    let started = Instant::now();
    server.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                        "params": {"name": "fixture_sleep", "arguments": {"ms": 1500}}}));
    for id in 2..=9 {
        server.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                            "params": {"name": "fixture_sleep", "arguments": {"ms": 300}}}));
    }
    let first = server.recv(WAIT).expect("an answer");
    assert_ne!(first["id"], 1, "a slow call does not hold up the others");
    server.pending.push(first);
    for id in 1..=9 {
        server.answer(&json!(id), WAIT);
    }
    assert!(
        started.elapsed() < Duration::from_millis(2500),
        "ran side by side: {:?}",
        started.elapsed()
    );
}

#[test]
fn a_huge_result_is_a_counted_defect_and_never_a_broken_document() {
    let dir = plugins(&["fixture"]);
    let data = TempDir::new("oversized-data");
    let data_arg = data.path().to_string_lossy().into_owned();
    let mut server = Server::start(
        dir.path(),
        &["--status-listen", "127.0.0.1:0"],
        &[("COREMCP_DATA", &data_arg)],
    );
    server.initialize();
    // A text answer keeps its first part, the marker inside the limit.
    let result = server.call("fixture_big", json!({"bytes": 5_000_000}));
    let shown = text(&result);
    assert!(shown.starts_with(&"x".repeat(19_000)));
    assert!(
        shown.contains("of 5000000 characters; narrow the request"),
        "{}",
        &shown[19_000..]
    );
    assert!(shown.chars().count() <= 20_000, "{}", shown.chars().count());
    assert!(result.get("structuredContent").is_none());
    // An object answer over the budget yields its largest parts in the SDK, saying so.
    let fitted = server.ok("fixture_big", json!({"bytes": 30_000, "json": true}));
    assert_eq!(fitted["text_truncated"], true);
    assert_eq!(fitted["text_total_chars"], 30_000);
    server.wait_stderr("outgrew the call's budget", WAIT);
    // Any other JSON answer is withheld whole, named, rather than cut mid-document.
    let result = server.call_raw("fixture_big", json!({"bytes": 30_000, "array": true}));
    let shown = text(&result);
    assert!(
        shown.starts_with("fixture_big ran, but its answer (30004 characters) is larger"),
        "{shown}"
    );
    assert_eq!(result["isError"], true);
    let small = server.call("fixture_big", json!({"bytes": 10, "json": true}));
    assert_eq!(small["structuredContent"]["text"], "xxxxxxxxxx");
    let addr = crate::status::address_of(data.path(), server.pid());
    let metrics = coremcp_tests::http::request(addr, "GET", "/metrics", &[], b"").text();
    assert!(
        metrics
            .contains("coremcp_oversized_results_total{group=\"fixture\",tool=\"fixture_big\"} 2"),
        "{metrics}"
    );
}

#[test]
fn a_100_mb_line_without_newline_is_discarded_with_bounded_memory() {
    let dir = plugins(&["fixture"]);
    let mut server = Server::start(dir.path(), &[], &[]);
    server.initialize();
    let chunk = vec![b'a'; 1024 * 1024];
    for _ in 0..100 {
        server.write(&chunk);
    }
    server.write(b"\n");
    let report = server.recv(WAIT).expect("reported");
    assert_eq!(report["error"]["code"], -32700);
    assert!(report["id"].is_null());
    assert!(
        report["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("104857600 bytes") && m.contains("discarded")),
        "{report}"
    );
    assert_eq!(
        server.request("ping", json!({}))["result"],
        json!({}),
        "still answering"
    );
    assert!(server
        .call("fixture_echo", json!({"after": true}))
        .get("isError")
        .is_none());
    let peak_kb = server.memory_kb("VmHWM");
    eprintln!("peak RSS after a 100 MB line: {} KiB", peak_kb);
    assert!(
        peak_kb < 48 * 1024,
        "peak RSS {peak_kb} KiB: memory was not bounded"
    );
}

/// A request over the 8 MB line limit is answered under its own id (read as it streamed past,
/// first or last in the line), naming the limit, so its caller never waits out a timeout.
#[test]
fn a_request_over_the_line_limit_is_answered_under_its_id() {
    let dir = plugins(&["fixture"]);
    let mut server = Server::start(dir.path(), &[], &[]);
    server.initialize();
    let pad = "x".repeat(8 * 1024 * 1024 + 1);
    let first = format!(
        r#"{{"jsonrpc":"2.0","id":77,"method":"tools/call","params":{{"name":"fixture_echo","arguments":{{"text":"{pad}"}}}}}}"#
    );
    let last = format!(
        r#"{{"jsonrpc":"2.0","method":"tools/call","params":{{"name":"fixture_echo","arguments":{{"text":"{pad}"}}}},"id":"big-1"}}"#
    );
    for (line, id) in [(first, json!(77)), (last, json!("big-1"))] {
        server.write(line.as_bytes());
        server.write(b"\n");
        let answer = server.recv(WAIT).expect("answered");
        assert_eq!(answer["id"], id, "{answer}");
        assert_eq!(answer["error"]["code"], -32600, "{answer}");
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("8 MB line limit"), "{message}");
    }
    // An id an answer could not carry as written (a bad escape) is no id: the answer still
    // parses, under id null.
    let forged =
        format!(r#"{{"jsonrpc":"2.0","id":"x\q","method":"ping","params":{{"pad":"{pad}"}}}}"#);
    server.write(forged.as_bytes());
    server.write(b"\n");
    let answer = server.recv(WAIT).expect("answered");
    assert!(answer["id"].is_null(), "{answer}");
    assert_eq!(answer["error"]["code"], -32700, "{answer}");
    assert_eq!(
        server.request("ping", json!({}))["result"],
        json!({}),
        "still answering"
    );
}

#[test]
fn a_plugin_claiming_our_version_with_another_layout_is_refused_in_one_line() {
    // The version gate passes (the library says 1.0.0) and abi_stable's layout check must catch
    // the different root module. Made by patching the version string of the 2.0.0 fixture.
    let dir = plugins(&["fixture"]);
    let bytes = std::fs::read(coremcp_tests::library("fixture_incompatible")).expect("read");
    let needle = b"2.0.0";
    let at: Vec<usize> = bytes
        .windows(needle.len())
        .enumerate()
        .filter(|(_, w)| w == needle)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(at.len(), 1, "exactly one version string to patch");
    let mut patched = bytes;
    patched[at[0]] = b'1';
    std::fs::write(dir.path().join("libcoremcp_mislaid.so"), patched).expect("write");

    // Installing it is refused in one condensed line; never installed, it never loads.
    let (code, out, err) = coremcp_tests::index_plugins(dir.path());
    let stderr = format!("{out}{err}");
    assert_eq!(code, 1, "{stderr}");
    let line = stderr
        .lines()
        .find(|l| l.contains("libcoremcp_mislaid.so"))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(
        line.contains("its root module does not match plugin API 1.0.0"),
        "{line}"
    );
    assert!(line.len() < 600, "condensed: {line}");
    assert!(plugin_status(dir.path(), "mislaid").contains("not installed"));
    let mut server = Server::start(dir.path(), &[], &[]);
    server.initialize();
    assert!(server
        .call("fixture_echo", json!({}))
        .get("isError")
        .is_none());
}

#[test]
fn a_plugin_whose_init_hangs_does_not_stall_the_host() {
    let dir = plugins(&["fixture", "fixture_hang"]);
    let mut server = Server::start(dir.path(), &[], &[]);
    server.initialize();
    let started = Instant::now();
    let names = server.tool_names();
    let took = started.elapsed();
    assert!(took < Duration::from_secs(8), "the listing waited {took:?}");
    assert!(names.contains(&"fixture_echo".to_owned()), "{names:?}");
    // Listed from its install record without loading; its first call loads it, and hangs.
    assert!(
        names.contains(&"fixture_hang_hello".to_owned()),
        "{names:?}"
    );
    server.send(
        &json!({"jsonrpc": "2.0", "id": "hang", "method": "tools/call",
        "params": {"name": "fixture_hang_hello", "arguments": {}}}),
    );
    let started = Instant::now();
    assert_eq!(server.request("ping", json!({}))["result"], json!({}));
    assert!(server
        .call("fixture_echo", json!({}))
        .get("isError")
        .is_none());
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "the host answers at once"
    );
}
