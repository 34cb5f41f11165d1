//! Upstream MCP servers as the binary reads and reaches them: `mcp.json` named by
//! `COREMCP_MCP_CONFIG` merged with `COREMCP_MCP_SERVERS`, refused at start with the entry
//! named, reported in `/api/status`; and `coremcp upstream --json`, which connects once to each
//! server: misbehaving fixtures (tests/fixtures/upstream), and the real
//! `@modelcontextprotocol/server-everything` (stdio, Streamable HTTP and legacy SSE) and
//! `mcp-server-time`, which scripts/test installs and names in `COREMCP_TEST_EVERYTHING` and
//! `COREMCP_TEST_TIME`.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use coremcp_tests::{free_port, plugins, run, KillOnDrop, TempDir};
use serde_json::{json, Value};

fn tools_with(env: &[(&str, &str)]) -> (i32, String) {
    let dir = plugins(&["fixture"]);
    let plugins_dir = dir.path().to_string_lossy().into_owned();
    let (code, _, stderr) = run(&["tools", "--plugins", &plugins_dir], env);
    (code, stderr)
}

#[test]
fn a_bad_configuration_stops_the_host_with_the_entry_named() {
    let dir = TempDir::new("mcp-config");
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).expect("write");
        path.to_string_lossy().into_owned()
    };
    let duplicate = write(
        "dup.json",
        r#"{"servers": [{"id": "a", "command": "x"}, {"id": "a", "command": "y"}]}"#,
    );
    let (code, stderr) = tools_with(&[("COREMCP_MCP_CONFIG", &duplicate)]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("servers[1]: duplicate server id \"a\"."),
        "{stderr}"
    );

    let underscore = write(
        "under.json",
        r#"{"servers": [{"id": "my_srv", "command": "x"}]}"#,
    );
    let (code, stderr) = tools_with(&[("COREMCP_MCP_CONFIG", &underscore)]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("separates the server id from the tool name"),
        "{stderr}"
    );

    let missing = dir.path().join("nope.json").to_string_lossy().into_owned();
    let (code, stderr) = tools_with(&[("COREMCP_MCP_CONFIG", &missing)]);
    assert_eq!(code, 2);
    assert!(stderr.contains("COREMCP_MCP_CONFIG names"), "{stderr}");

    let (code, stderr) = tools_with(&[("COREMCP_MCP_SERVERS", "ok=cmd;bad_id=cmd")]);
    assert_eq!(code, 2);
    assert!(stderr.contains("COREMCP_MCP_SERVERS entry 2"), "{stderr}");

    // Off: nothing is read.
    let (code, stderr) =
        tools_with(&[("COREMCP_MCP_CONFIG", &duplicate), ("COREMCP_MCP", "false")]);
    assert_eq!(code, 0, "{stderr}");
    // An empty variable disables the file.
    let (code, stderr) = tools_with(&[("COREMCP_MCP_CONFIG", "")]);
    assert_eq!(code, 0, "{stderr}");
}

#[test]
fn configured_servers_are_reported_in_the_status() {
    let dir = TempDir::new("mcp-status");
    let file = dir.path().join("mcp.json");
    std::fs::write(
        &file,
        r#"{"servers": [
            {"id": "missing", "command": "/nonexistent/mcp-server"},
            {"id": "web", "type": "http", "url": "http://127.0.0.1:9/mcp", "enabled": false}
        ]}"#,
    )
    .expect("write");
    let file = file.to_string_lossy().into_owned();
    let inline = format!("fixture=python3 {} calls", fixture("misbehave.py"));
    let plugins = plugins(&["fixture"]);
    let serve = coremcp_tests::http::Serve::start_on(
        plugins.path(),
        "127.0.0.1:0",
        &[],
        &[
            ("COREMCP_MCP_CONFIG", &file),
            ("COREMCP_MCP_SERVERS", &inline),
        ],
    );
    let until = Instant::now() + Duration::from_secs(30);
    let (summary, upstream) = loop {
        let status =
            coremcp_tests::http::request(serve.addr, "GET", "/api/status", &[], b"").json();
        let upstream = status["upstream"].as_array().expect("upstream").clone();
        let summary: Vec<(String, String, String)> = upstream
            .iter()
            .map(|s| {
                (
                    s["id"].as_str().unwrap_or_default().to_owned(),
                    s["transport"].as_str().unwrap_or_default().to_owned(),
                    s["state"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect();
        let settled = summary.iter().all(|(_, _, state)| state != "connecting");
        if (settled
            && summary
                .iter()
                .any(|(id, _, s)| id == "fixture" && s == "connected"))
            || Instant::now() > until
        {
            break (summary, upstream);
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(summary[1], ("web".into(), "http".into(), "disabled".into()));
    assert_eq!(
        summary[2],
        ("fixture".into(), "stdio".into(), "connected".into())
    );
    let missing = &upstream[0];
    assert_eq!(missing["id"], "missing");
    assert!(
        missing["state"] == "restarting" || missing["state"] == "failed",
        "{missing}"
    );
    assert!(
        missing["reason"]
            .as_str()
            .is_some_and(|r| r.contains("/nonexistent/mcp-server")),
        "{missing}"
    );
    assert_eq!(upstream[2]["tools"], 10, "{}", json!(upstream));
    assert_eq!(upstream[2]["ungranted"], 10, "{}", json!(upstream));
}

fn fixture(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/upstream")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

fn misbehave(id: &str, mode: &str) -> Value {
    json!({"id": id, "command": "python3", "args": [fixture("misbehave.py"), mode]})
}

fn installed(var: &str) -> Option<String> {
    let path = coremcp_tests::external(
        var,
        "it needs a real upstream MCP server from the registries",
    )?;
    assert!(
        std::path::Path::new(&path).exists(),
        "{var}={path} does not exist"
    );
    Some(path)
}

/// Runs `coremcp upstream --json` with `servers` as the config file; returns the exit code,
/// the servers' reports by id order, and stderr.
fn upstream_json(servers: Value, env: &[(&str, &str)]) -> (i32, Vec<Value>, String) {
    let dir = TempDir::new("upstream");
    let file = dir.path().join("mcp.json");
    std::fs::write(&file, json!({ "servers": servers }).to_string()).expect("write");
    let file = file.to_string_lossy().into_owned();
    let mut all = vec![
        ("COREMCP_MCP_CONFIG", file.as_str()),
        ("COREMCP_MCP_SERVERS", ""),
    ];
    all.extend_from_slice(env);
    let (code, stdout, stderr) = run(&["upstream", "--json"], &all);
    let value: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}\nstderr: {stderr}"));
    let servers = value["servers"].as_array().cloned().unwrap_or_default();
    (code, servers, stderr)
}

fn by_id<'a>(servers: &'a [Value], id: &str) -> &'a Value {
    servers
        .iter()
        .find(|s| s["id"] == id)
        .unwrap_or_else(|| panic!("{id} not reported: {}", json!(servers)))
}

fn names(server: &Value) -> Vec<String> {
    server["published"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn misbehaving_servers_are_reported_and_bounded() {
    let mut shapes = misbehave("shapes", "shapes");
    shapes["env"] = json!({"EXPLICIT_TOKEN": "given"});
    let (code, servers, stderr) = upstream_json(
        json!([
            misbehave("paging", "paging"),
            shapes,
            misbehave("exits", "exit"),
            {"id": "legacy", "type": "sse", "url": "http://127.0.0.1:9/sse"},
            {"id": "off", "command": "python3", "enabled": false},
        ]),
        &[("FOO_API_KEY", "secret")],
    );
    assert_eq!(code, 0, "{stderr}");

    let paging = by_id(&servers, "paging");
    assert_eq!(paging["state"], "connected", "{paging}");
    assert_eq!(paging["tools"], 200);
    assert_eq!(names(paging).len(), 200);
    assert!(names(paging).contains(&"mcp__paging__t199".to_owned()));
    assert!(
        paging["warnings"][0]
            .as_str()
            .unwrap_or_default()
            .contains("stopped after 20 pages"),
        "{paging}"
    );

    let shapes = by_id(&servers, "shapes");
    assert_eq!(shapes["state"], "connected", "{shapes}");
    // The 70-character name is published cut to 64, ending in a hash of its own name.
    let published = names(shapes);
    assert_eq!(published.len(), 3, "{published:?}");
    assert_eq!(
        published[..2],
        ["mcp__shapes__env", "mcp__shapes__long_description"]
    );
    assert!(
        published[2].len() == 64 && published[2].starts_with("mcp__shapes__nnnn"),
        "{published:?}"
    );
    assert_eq!(shapes["renamed"][0]["tool"], "n".repeat(70), "{shapes}");
    let definitions = shapes["definitions"].as_array().expect("definitions");
    // The scrubbed environment: FOO_API_KEY never reaches the child; the env block does.
    // The fixture's roots/list request was answered -32601.
    assert_eq!(
        definitions[0]["description"],
        "FOO_API_KEY=(unset) EXPLICIT_TOKEN=given roots/list answered -32601"
    );
    let long = definitions[1]["description"].as_str().expect("text");
    assert_eq!(long.chars().count(), 1000);
    assert!(long.ends_with('…'));
    assert_eq!(shapes["listChanged"], true);
    let withheld: Vec<(String, String)> = shapes["withheld"]
        .as_array()
        .expect("withheld")
        .iter()
        .map(|w| {
            (
                w["tool"].as_str().unwrap_or_default().to_owned(),
                w["reason"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert_eq!(withheld.len(), 2, "{withheld:?}");
    assert_eq!(withheld[0].0, "big_schema");
    assert!(withheld[0].1.contains("the limit is 8000"), "{withheld:?}");
    assert!(
        withheld[1].1.contains("not an object schema"),
        "{withheld:?}"
    );

    let exits = by_id(&servers, "exits");
    assert_eq!(exits["state"], "failed");
    let reason = exits["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("cannot open /nonexistent/db: no such file"),
        "{reason}"
    );
    assert!(reason.contains("exit status: 1"), "{reason}");

    let legacy = by_id(&servers, "legacy");
    assert_eq!(legacy["state"], "failed");
    assert!(
        legacy["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("cannot connect to 127.0.0.1:9"),
        "{legacy}"
    );
    assert_eq!(by_id(&servers, "off")["state"], "disabled");
}

#[test]
fn a_line_over_8_mb_is_discarded_with_memory_bounded() {
    let dir = TempDir::new("upstream-bigline");
    let file = dir.path().join("mcp.json");
    let servers = json!({"servers": [misbehave("big", "bigline")]});
    std::fs::write(&file, servers.to_string()).expect("write");
    // Python runs coremcp and reports the peak RSS of its descendants (coremcp, and the fixture,
    // which writes its 64 MB line in 1 MB pieces): coremcp must not hold the line.
    let measure = "import resource, subprocess, sys\n\
                   out = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n\
                   sys.stdout.write(out.stdout)\n\
                   sys.stderr.write(out.stderr)\n\
                   print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)\n\
                   sys.exit(out.returncode)\n";
    #[allow(clippy::disallowed_methods)] // The test starts the binary under test.
    let out = Command::new("python3")
        .args(["-c", measure])
        .arg(coremcp_tests::coremcp())
        .args(["upstream", "--json"])
        .env("COREMCP_MCP_CONFIG", &file)
        .env("COREMCP_MCP_SERVERS", "")
        .env("COREMCP_DATA", coremcp_tests::scratch_data_dir())
        .stdin(Stdio::null())
        .output()
        .expect("run python3");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let big = &report["servers"][0];
    assert_eq!(big["state"], "connected", "{big}");
    assert_eq!(names(big), ["mcp__big__ok"]);
    assert!(
        big["warnings"][0]
            .as_str()
            .unwrap_or_default()
            .contains("discarded a stdout line of 67108864 bytes"),
        "{big}"
    );
    let peak_kb: u64 = stderr
        .lines()
        .last()
        .and_then(|l| l.trim().parse().ok())
        .unwrap_or_else(|| panic!("no RSS figure: {stderr}"));
    assert!(
        peak_kb < 48 * 1024,
        "peak RSS {peak_kb} KB: the 64 MB line was held"
    );
}

#[test]
fn a_server_that_never_answers_fails_after_the_30_s_handshake() {
    let started = Instant::now();
    let mut silent = misbehave("silent", "silent");
    // requestTimeoutMs is for requests; the handshake has its own 30 s.
    silent["requestTimeoutMs"] = json!(1000);
    let (code, servers, stderr) = upstream_json(json!([silent]), &[]);
    assert_eq!(code, 0, "{stderr}");
    let silent = by_id(&servers, "silent");
    assert_eq!(silent["state"], "failed");
    assert!(
        silent["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("no answer to initialize within 30000 ms"),
        "{silent}"
    );
    let took = started.elapsed();
    assert!(
        took >= Duration::from_secs(30) && took < Duration::from_secs(45),
        "{took:?}"
    );
}

fn wait_listening(port: u16) {
    let until = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < until, "nothing listens on {port}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn streamable_http_sets_a_lost_session_up_again_and_reads_event_streams() {
    use std::io::BufRead;
    #[allow(clippy::disallowed_methods)] // The test starts the fixture server itself.
    let mut child = Command::new("python3")
        .arg(fixture("http_server.py"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the HTTP fixture");
    let stdout = child.stdout.take().expect("stdout");
    let server = KillOnDrop(child);
    let mut port = String::new();
    std::io::BufReader::new(stdout)
        .read_line(&mut port)
        .expect("port");
    let url = format!("http://127.0.0.1:{}/mcp", port.trim());
    let (code, servers, stderr) =
        upstream_json(json!([{"id": "web", "type": "http", "url": url}]), &[]);
    drop(server);
    assert_eq!(code, 0, "{stderr}");
    let web = by_id(&servers, "web");
    assert_eq!(web["state"], "connected", "{web}");
    assert_eq!(names(web), ["mcp__web__sse_tool"]);
    // The first session was refused (404) and set up again once.
    assert_eq!(web["definitions"][0]["description"], "sessions opened: 2");
    assert_eq!(web["listChanged"], true);
}

/// The real server-everything in `mode` (`streamableHttp` or `sse`) on a free port, once it
/// listens.
fn start_everything(everything: &str, mode: &str) -> (KillOnDrop, u16) {
    let port = free_port();
    #[allow(clippy::disallowed_methods)] // The test starts the real upstream server itself.
    let server = KillOnDrop(
        Command::new(everything)
            .arg(mode)
            .env("PORT", port.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start server-everything"),
    );
    wait_listening(port);
    (server, port)
}

#[test]
fn real_servers_connect_and_publish_their_tools() {
    let Some(everything) = installed("COREMCP_TEST_EVERYTHING") else {
        return;
    };
    let Some(time) = installed("COREMCP_TEST_TIME") else {
        return;
    };
    let (http, http_port) = start_everything(&everything, "streamableHttp");
    let (sse, sse_port) = start_everything(&everything, "sse");
    let (code, servers, stderr) = upstream_json(
        json!([
            {"id": "everything", "command": everything},
            {"id": "time", "command": time},
            {"id": "everything-http", "type": "http",
             "url": format!("http://127.0.0.1:{http_port}/mcp")},
            {"id": "everything-sse", "type": "sse",
             "url": format!("http://127.0.0.1:{sse_port}/sse")},
        ]),
        &[],
    );
    drop((http, sse));
    assert_eq!(code, 0, "{stderr}");
    for (id, expected) in [
        ("everything", "mcp__everything__echo"),
        ("time", "mcp__time__get_current_time"),
        ("everything-http", "mcp__everything-http__echo"),
        ("everything-sse", "mcp__everything-sse__echo"),
    ] {
        let server = by_id(&servers, id);
        assert_eq!(server["state"], "connected", "{server}");
        assert!(names(server).contains(&expected.to_owned()), "{server}");
        assert!(
            server["withheld"].as_array().is_some_and(Vec::is_empty),
            "{server}"
        );
    }
    assert!(names(by_id(&servers, "time")).contains(&"mcp__time__convert_time".to_owned()));
    assert_eq!(
        by_id(&servers, "everything")["protocolVersion"],
        "2025-06-18"
    );
}

#[test]
fn the_text_report_names_states_and_tools() {
    let dir = TempDir::new("upstream-text");
    let file = dir.path().join("mcp.json");
    let servers = json!({"servers": [misbehave("shapes", "shapes"), misbehave("exits", "exit")]});
    std::fs::write(&file, servers.to_string()).expect("write");
    let file = file.to_string_lossy().into_owned();
    let (code, stdout, stderr) = run(
        &["upstream"],
        &[("COREMCP_MCP_CONFIG", &file), ("COREMCP_MCP_SERVERS", "")],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("shapes (stdio): connected, misbehave 1.0"),
        "{stdout}"
    );
    assert!(
        stdout.contains("  + mcp__shapes__env  (not granted to anyone)\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("  - big_schema: its input schema is"),
        "{stdout}"
    );
    assert!(
        stdout.contains("exits (stdio): failed\n  reason: initialize failed"),
        "{stdout}"
    );
}

#[test]
fn grants_are_default_deny_and_name_who_may_call_what() {
    let servers = json!([misbehave("paging", "paging")]);
    // No grants: every published tool is shown as granted to nobody.
    let (code, reports, stderr) = upstream_json(servers.clone(), &[("COREMCP_MCP_GRANTS", "none")]);
    assert_eq!(code, 0, "{stderr}");
    let granted = &by_id(&reports, "paging")["grantedTo"];
    assert_eq!(granted["mcp__paging__t000"], json!([]), "{granted}");
    // A server for stdio, one tool for a token.
    let (code, reports, stderr) = upstream_json(
        servers.clone(),
        &[(
            "COREMCP_MCP_GRANTS",
            "stdio=paging; ci-bot=mcp__paging__t001",
        )],
    );
    assert_eq!(code, 0, "{stderr}");
    let granted = &by_id(&reports, "paging")["grantedTo"];
    assert_eq!(granted["mcp__paging__t000"], json!(["stdio"]));
    assert_eq!(granted["mcp__paging__t001"], json!(["stdio", "ci-bot"]));
    // The text report counts what nobody may call.
    let dir = TempDir::new("grants");
    let file = dir.path().join("mcp.json");
    std::fs::write(&file, json!({ "servers": servers }).to_string()).expect("write");
    let file = file.to_string_lossy().into_owned();
    let (code, stdout, stderr) = run(
        &["upstream"],
        &[
            ("COREMCP_MCP_CONFIG", &file),
            ("COREMCP_MCP_SERVERS", ""),
            ("COREMCP_MCP_GRANTS", "ci-bot=mcp__paging__t001"),
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("mcp__paging__t001  (granted to: ci-bot)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("mcp__paging__t000  (not granted to anyone)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("199 of 200 published upstream tools nobody may call yet"),
        "{stdout}"
    );
    // A malformed rule stops the host at start, naming it.
    let (code, _, stderr) = run(
        &["upstream"],
        &[
            ("COREMCP_MCP_CONFIG", ""),
            ("COREMCP_MCP_GRANTS", "stdio=my_server"),
        ],
    );
    assert_eq!(code, 2);
    assert!(stderr.contains("COREMCP_MCP_GRANTS rule 1"), "{stderr}");
}

#[test]
fn a_server_publishes_at_most_its_max_tools_and_a_repeated_cursor_is_named() {
    let mut capped = misbehave("capped", "flood");
    capped["maxTools"] = json!(50);
    let (code, servers, stderr) = upstream_json(
        json!([
            misbehave("flood", "flood"),
            capped,
            misbehave("loops", "samecursor")
        ]),
        &[],
    );
    assert_eq!(code, 0, "{stderr}");
    let flood = by_id(&servers, "flood");
    assert_eq!(flood["tools"], 10_000, "{flood}");
    assert_eq!(names(flood).len(), 200, "the default cap");
    assert_eq!(names(flood)[199], "mcp__flood__f00199");
    // The ones past the limit are counted, never kept one by one.
    assert_eq!(flood["over_limit"], 9_800, "{flood}");
    assert_eq!(flood["withheld"], json!([]), "{flood}");
    assert_eq!(names(by_id(&servers, "capped")).len(), 50);

    let loops = by_id(&servers, "loops");
    assert_eq!(names(loops).len(), 4, "{loops}");
    let warnings = loops["warnings"].to_string();
    assert!(
        warnings.contains("the server repeated the cursor \\\"again\\\" (it would page forever)"),
        "{warnings}"
    );
    assert!(!warnings.contains("the server has more"), "{warnings}");
}

#[test]
fn a_server_listing_a_hundred_thousand_tools_costs_a_count_and_one_log_line() {
    let dir = coremcp_tests::plugins(&[]);
    let servers = format!("big=python3 {} hundredk", fixture("misbehave.py"));
    let mut host = coremcp_tests::Server::start(
        dir.path(),
        &["--status-listen", "127.0.0.1:0"],
        &[
            ("COREMCP_MCP_CONFIG", ""),
            ("COREMCP_MCP_SERVERS", &servers),
            ("COREMCP_MCP_GRANTS", "stdio=big"),
        ],
    );
    host.initialize();
    let log = host.wait_stderr("upstream server connected", Duration::from_secs(60));
    let names = host.tool_names();
    assert_eq!(
        names.iter().filter(|n| n.starts_with("mcp__big__")).count(),
        200,
        "the default limit"
    );
    let withheld_lines = log
        .lines()
        .filter(|l| l.contains("withheld") || l.contains("past its limit"))
        .count();
    assert!(withheld_lines <= 2, "{withheld_lines} lines:\n{log}");
    assert!(
        log.contains("99800 more past its limit of 200"),
        "no summary line:\n{log}"
    );
    // What it keeps: 200 tools and a count, not 100 000 entries.
    let rss = host.memory_kb("VmRSS");
    assert!(rss < 50 * 1024, "RSS {rss} kB after listing 100 000 tools");
}

/// One page of 100 000 small tools: read as a stream, only what `maxTools` keeps becomes
/// values — before, the page was parsed whole (125 MB at its peak, 103 MB kept).
#[test]
fn one_page_of_a_hundred_thousand_tools_is_read_as_a_stream() {
    let dir = coremcp_tests::plugins(&[]);
    let servers = format!("big=python3 {} onepage", fixture("misbehave.py"));
    let mut host = coremcp_tests::Server::start(
        dir.path(),
        &[],
        &[
            ("COREMCP_MCP_CONFIG", ""),
            ("COREMCP_MCP_SERVERS", &servers),
            ("COREMCP_MCP_GRANTS", "stdio=big"),
        ],
    );
    host.initialize();
    // Before the server answers its first tools/list (python takes a while to build it).
    let before = host.memory_kb("VmRSS");
    let log = host.wait_stderr("upstream server connected", Duration::from_secs(60));
    let names = host.tool_names();
    assert_eq!(
        names.iter().filter(|n| n.starts_with("mcp__big__")).count(),
        200,
        "the default limit"
    );
    assert!(
        log.contains("99800 more past its limit of 200"),
        "no summary line:\n{log}"
    );
    // The whole process's peak, from its start: no reading of the page is missed.
    let peak = host.memory_kb("VmHWM");
    let kept = host.memory_kb("VmRSS").saturating_sub(before);
    eprintln!("100 000 tools on one page: peak {peak} kB in all, {kept} kB kept over the start");
    assert!(peak < 64 * 1024, "the process peaked at {peak} kB");
    assert!(kept < 32 * 1024, "the page left {kept} kB");
}

#[test]
fn variables_in_an_entry_are_expanded_from_the_hosts_environment_and_never_shown() {
    let mut shapes = misbehave("shapes", "shapes");
    shapes["env"] = json!({"EXPLICIT_TOKEN": "${SHAPES_TEST_TOKEN}"});
    let secret = "hdr-value-0123456789";
    let (code, servers, stderr) = upstream_json(
        json!([
            shapes,
            {"id": "remote", "type": "http",
             "url": "${SHAPES_TEST_MISSING_BASE:-http://127.0.0.1:9}/mcp",
             "headers": {"Authorization": "Bearer ${SHAPES_TEST_HEADER}"}},
            // A server that prints the secret it was given, then fails.
            {"id": "leaky", "command": "sh", "args": ["-c", "echo \"token is $T\" >&2; exit 1"],
             "env": {"T": "${SHAPES_TEST_HEADER}"}},
        ]),
        &[
            ("SHAPES_TEST_TOKEN", "from-the-environment"),
            ("SHAPES_TEST_HEADER", secret),
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    // The server saw the expanded value in its env block (and chose to say so).
    let definitions = by_id(&servers, "shapes")["definitions"].clone();
    assert!(
        definitions[0]["description"]
            .as_str()
            .is_some_and(|d| d.contains("EXPLICIT_TOKEN=from-the-environment")),
        "{definitions}"
    );
    // The default made a usable URL (nothing listens there), and the header's value is
    // never printed, in the report or the log.
    let remote = by_id(&servers, "remote");
    assert_ne!(remote["state"], "connected", "{remote}");
    let everything = format!("{} {stderr}", json!(servers));
    assert!(!everything.contains(secret), "{everything}");
    let leaky = by_id(&servers, "leaky");
    assert!(
        leaky["reason"]
            .as_str()
            .is_some_and(|r| r.contains("token is ${SHAPES_TEST_HEADER}")),
        "{leaky}"
    );

    // An unset variable without a default refuses the entry, naming the variable only.
    let dir = TempDir::new("upstream-unset");
    let file = dir.path().join("mcp.json");
    let entry = json!({"servers": [{"id": "a", "type": "http", "url": "http://h/mcp",
                                    "headers": {"X-Key": "${SHAPES_TEST_NOT_SET}"}}]});
    std::fs::write(&file, entry.to_string()).expect("write");
    let (code, _, stderr) = run(
        &["upstream", "--json"],
        &[
            ("COREMCP_MCP_CONFIG", &file.to_string_lossy()),
            ("COREMCP_MCP_SERVERS", ""),
        ],
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("servers[0].headers.X-Key: ${SHAPES_TEST_NOT_SET} is not set"),
        "{stderr}"
    );
}

#[test]
fn a_real_server_behind_tls_is_reached_over_https_with_the_extra_ca() {
    let Some(everything) = installed("COREMCP_TEST_EVERYTHING") else {
        return;
    };
    let work = TempDir::new("everything-tls");
    let ca = coremcp_tests::tls::TestCa::new(work.path(), "front-ca");
    let cert = ca.issue("front", "IP:127.0.0.1", 30);
    let start = |mode: &str| {
        let (server, port) = start_everything(&everything, mode);
        // Its TLS front: a small forwarder standing in for a TLS-terminating proxy.
        let front = free_port();
        #[allow(clippy::disallowed_methods)] // The harness's TLS forwarder.
        let forwarder = KillOnDrop(
            Command::new("python3")
                .arg(fixture("tls_forward.py"))
                .args([front.to_string(), port.to_string()])
                .arg(&cert.cert)
                .arg(&cert.key)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start the TLS forwarder"),
        );
        wait_listening(front);
        (server, forwarder, front)
    };
    let (http, http_front, http_port) = start("streamableHttp");
    let (sse, sse_front, sse_port) = start("sse");
    let ca_file = ca.cert().to_string_lossy().into_owned();
    let (code, servers, stderr) = upstream_json(
        json!([
            {"id": "secure-http", "type": "http", "url": format!("https://127.0.0.1:{http_port}/mcp")},
            {"id": "secure-sse", "type": "sse", "url": format!("https://127.0.0.1:{sse_port}/sse")},
        ]),
        &[("COREMCP_CA_FILE", &ca_file)],
    );
    drop((http, http_front, sse, sse_front));
    assert_eq!(code, 0, "{stderr}");
    for id in ["secure-http", "secure-sse"] {
        let server = by_id(&servers, id);
        assert_eq!(server["state"], "connected", "{server}");
        assert!(
            names(server).contains(&format!("mcp__{id}__echo")),
            "{server}"
        );
    }
}
