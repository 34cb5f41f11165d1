//! `coremcp serve`: MCP over Streamable HTTP against a real server process on a free loopback
//! port, with the fixture plugin — sessions, JSON and SSE answers, the GET stream, the guards
//! (DNS rebinding, body limit, tokens), the side endpoints and a graceful stop.

use std::io::Write;
use std::path::Path;
use std::thread;
use std::time::Duration;

use coremcp_tests::http::{read_response, request, send_head, EventStream, Serve};
use coremcp_tests::{library, nulls, plugins, run, text, TempDir, WAIT};
use serde_json::{json, Value};

const FIXTURE_TOOLS: [&str; 7] = [
    "fixture_echo",
    "fixture_panic",
    "fixture_sleep",
    "fixture_big",
    "fixture_stdout",
    "fixture_log",
    "fixture_config",
];

fn fixture_server() -> (TempDir, Serve) {
    let dir = plugins(&["fixture"]);
    let server = Serve::start(dir.path(), &["--groups", "fixture"]);
    (dir, server)
}

#[test]
fn a_session_lists_and_calls_over_json() {
    let (_dir, server) = fixture_server();
    let stderr = server.wait_stderr("(proxy mode", WAIT);
    assert!(
        stderr.contains(&format!(
            "listening on http://{}/mcp (proxy mode, no tokens: loopback only)",
            server.addr
        )),
        "{stderr}"
    );
    let mut client = server.client();
    let result = client.initialize();
    assert_eq!(result["protocolVersion"], "2025-06-18");
    assert_eq!(result["capabilities"]["tools"]["listChanged"], true);
    let session = client.session.clone().expect("session id");
    assert_eq!(session.len(), 32, "{session}");
    assert!(session.chars().all(|c| c.is_ascii_hexdigit()), "{session}");

    let listing = client.request("tools/list", json!({}));
    assert_eq!(nulls(&listing), Vec::<String>::new(), "{listing}");
    assert!(
        listing["result"].get("nextCursor").is_none(),
        "one page: {listing}"
    );
    let names: Vec<&str> = listing["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    for tool in FIXTURE_TOOLS {
        assert!(names.contains(&tool), "{tool} missing from {names:?}");
    }

    let echo = client.post(&client_message(
        7,
        "tools/call",
        json!({"name": "fixture_echo", "arguments": {"text": "over http", "n": 3}}),
    ));
    assert_eq!(echo.status, 200);
    assert_eq!(echo.header("content-type"), Some("application/json"));
    assert!(echo.header("mcp-session-id").is_none());
    let answer = echo.json();
    assert_eq!(answer["id"], 7);
    assert_eq!(
        answer["result"]["structuredContent"],
        json!({"text": "over http", "n": 3})
    );
    assert_eq!(nulls(&answer), Vec::<String>::new());

    // A tool error is a result, answered like any other.
    let failed = client.call("fixture_panic", json!({}));
    assert_eq!(failed["isError"], true, "{failed}");

    // Notifications and responses from the client: 202, no body.
    let note = client.post(
        &json!({"jsonrpc": "2.0", "method": "notifications/progress",
                                   "params": {"progressToken": 1, "progress": 1}}),
    );
    assert_eq!((note.status, note.body.len()), (202, 0));
    let response = client.post(&json!({"jsonrpc": "2.0", "id": "from-client", "result": {}}));
    assert_eq!((response.status, response.body.len()), (202, 0));
    // Methods we do not serve answer -32601 at once.
    let unknown = client.request("resources/list", json!({}));
    assert_eq!(unknown["error"]["code"], -32601);
}

/// A tool that has been quick runs on an HTTP worker (one call at a time); when such a call
/// overruns, the other requests are still answered meanwhile, the host says so once, and the
/// tool's next calls run on the pool.
#[test]
fn a_quick_tool_that_overruns_on_a_worker_holds_up_nothing_else() {
    let (_dir, server) = fixture_server();
    let mut client = server.client();
    client.initialize();
    for _ in 0..20 {
        let quick = client.call("fixture_sleep", json!({"ms": 0}));
        assert_eq!(
            quick["structuredContent"],
            json!({"slept_ms": 0}),
            "{quick}"
        );
    }
    let mut slow_client = server.client();
    slow_client.initialize();
    let sent = std::time::Instant::now();
    let slow = thread::spawn(move || {
        let answer = slow_client.call("fixture_sleep", json!({"ms": 1500}));
        (answer, std::time::Instant::now())
    });
    // While it runs, other requests of other sessions are answered promptly.
    let mut other = server.client();
    other.initialize();
    let mut checked = Vec::new();
    while sent.elapsed() < Duration::from_millis(1000) {
        let asked = std::time::Instant::now();
        let echo = other.call("fixture_echo", json!({"n": checked.len()}));
        assert_eq!(echo["structuredContent"]["n"], checked.len(), "{echo}");
        checked.push((asked, asked.elapsed()));
    }
    let (answer, answered) = slow.join().expect("slow call");
    assert_eq!(
        answer["structuredContent"],
        json!({"slept_ms": 1500}),
        "{answer}"
    );
    assert!(
        answered.duration_since(sent) >= Duration::from_millis(1500),
        "it ran"
    );
    let slowest = checked
        .iter()
        .map(|(_, took)| *took)
        .max()
        .unwrap_or_default();
    assert!(
        checked.len() > 10 && slowest < Duration::from_millis(500),
        "{} calls beside the slow one, the slowest took {slowest:?}",
        checked.len()
    );
    let stderr = server.wait_stderr("overran on an HTTP worker", WAIT);
    assert_eq!(
        stderr.matches("overran on an HTTP worker").count(),
        1,
        "{stderr}"
    );
}

fn client_message(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

#[test]
fn a_call_is_answered_as_an_event_stream_with_its_notifications() {
    let (_dir, server) = fixture_server();
    let mut client = server.client();
    client.initialize();

    // A call with a progress token streams; with nothing to report, just its answer.
    let streamed = client.post(&client_message(
        2,
        "tools/call",
        json!({"name": "fixture_echo", "arguments": {"a": 1}, "_meta": {"progressToken": "p1"}}),
    ));
    assert_eq!(streamed.status, 200);
    assert_eq!(streamed.header("content-type"), Some("text/event-stream"));
    let events = streamed.events();
    assert_eq!(events.len(), 1, "{}", streamed.text());
    assert_eq!(events[0]["result"]["structuredContent"], json!({"a": 1}));

    // Once the client asks for log messages, a call's logs come on its stream, before its
    // answer.
    let level = client.request("logging/setLevel", json!({"level": "debug"}));
    assert_eq!(level["result"], json!({}));
    let logged = client.post(&client_message(
        3,
        "tools/call",
        json!({"name": "fixture_log", "arguments": {}}),
    ));
    assert_eq!(logged.header("content-type"), Some("text/event-stream"));
    let events = logged.events();
    let (answer, notes) = events.split_last().expect("events");
    assert_eq!(answer["id"], 3, "the answer comes last: {events:?}");
    assert_eq!(answer["result"]["structuredContent"], json!({"logged": 4}));
    assert!(!notes.is_empty(), "{events:?}");
    assert!(
        notes
            .iter()
            .all(|n| n["method"] == "notifications/message" && n["params"]["logger"] == "fixture"),
        "{notes:?}"
    );
    assert!(notes
        .iter()
        .any(|n| n["params"]["data"] == "fixture log at Error"));

    // A client that accepts only SSE gets every answer as a stream.
    client.accept = "text/event-stream".to_owned();
    let ping = client.post(&client_message(4, "ping", json!({})));
    assert_eq!(ping.header("content-type"), Some("text/event-stream"));
    assert_eq!(
        ping.events(),
        [json!({"jsonrpc": "2.0", "id": 4, "result": {}})]
    );
    // And one that accepts only JSON never does.
    client.accept = "application/json".to_owned();
    let json_only = client.post(&client_message(
        5,
        "tools/call",
        json!({"name": "fixture_log", "arguments": {}}),
    ));
    assert_eq!(json_only.header("content-type"), Some("application/json"));
    assert_eq!(json_only.json()["id"], 5);
}

#[test]
fn sessions_are_required_checked_and_ended_by_delete() {
    let (_dir, server) = fixture_server();
    let mut client = server.client();
    client.initialize();
    let ping = client_message(9, "ping", json!({}));

    let missing = request(
        server.addr,
        "POST",
        "/mcp",
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ],
        ping.to_string().as_bytes(),
    );
    assert_eq!(missing.status, 400, "{}", missing.text());
    assert_eq!(missing.json()["error"]["code"], -32600);
    assert!(
        missing.text().contains("Mcp-Session-Id"),
        "{}",
        missing.text()
    );

    let unknown = client.post_with(
        &ping,
        &[("Mcp-Session-Id", "0123456789abcdef0123456789abcdef")],
    );
    assert_eq!(unknown.status, 404, "{}", unknown.text());

    let version = client.post_with(&ping, &[("MCP-Protocol-Version", "1999-01-01")]);
    assert_eq!(version.status, 400, "{}", version.text());
    assert!(
        version.text().contains("1999-01-01") && version.text().contains("2025-06-18"),
        "names the supported versions: {}",
        version.text()
    );
    let assumed = client.post_with(&ping, &[("MCP-Protocol-Version", "")]);
    assert_eq!(assumed.status, 200, "no header: 2025-03-26 is assumed");

    let bad_json = client.post_with(&json!("x"), &[]);
    assert_eq!(bad_json.status, 400);
    let garbage = request(
        server.addr,
        "POST",
        "/mcp",
        &[("Content-Type", "application/json")],
        b"{\"jsonrpc\": \"2.0\", \"id\": 1, ",
    );
    assert_eq!(garbage.status, 400);
    assert_eq!(garbage.json()["error"]["code"], -32700);

    let deleted = client.delete();
    assert_eq!(deleted.status, 200, "{}", deleted.text());
    assert_eq!(client.post(&ping).status, 404);
    assert_eq!(client.delete().status, 404);
    // A second session is independent of the first.
    let mut other = server.client();
    other.initialize();
    assert_ne!(other.session, client.session);
    assert_eq!(other.request("ping", json!({}))["result"], json!({}));
}

/// Installs a plugin file into `dir` with `coremcp plugins install`.
fn install(dir: &Path, group_library: &str) {
    let (code, _, err) = run(
        &[
            "plugins",
            "--plugins",
            &dir.to_string_lossy(),
            "install",
            &library(group_library).to_string_lossy(),
        ],
        &[],
    );
    assert_eq!(code, 0, "install {group_library}: {err}");
}

#[test]
fn the_get_stream_hears_list_changed_when_a_swapped_plugin_is_reloaded() {
    let dir = TempDir::new("http-swap");
    install(dir.path(), "fixture_swap_v1");
    let server = Serve::start(dir.path(), &["--groups", "swap"]);
    let mut client = server.client();
    client.initialize();
    let names = |listing: &Value| -> Vec<String> {
        listing["result"]["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect()
    };
    assert_eq!(
        names(&client.request("tools/list", json!({}))),
        ["swap_hello", "swap_wait"]
    );

    let mut stream = client.listen();
    assert_eq!(stream.status, 200);
    assert_eq!(stream.header("content-type"), Some("text/event-stream"));
    // One GET stream per session at a time.
    let second = client.listen();
    assert_eq!(second.status, 409);

    install(dir.path(), "fixture_swap_v2");
    server.signal(libc::SIGHUP);
    let changed = stream.wait_for("notifications/tools/list_changed");
    assert!(changed.get("id").is_none(), "{changed}");
    assert_eq!(
        names(&client.request("tools/list", json!({}))),
        ["swap_hello", "swap_wait", "swap_added"]
    );
    assert_eq!(
        client.call("swap_hello", json!({}))["structuredContent"],
        json!({"version": 2})
    );

    // Ending the session ends its stream.
    assert_eq!(client.delete().status, 200);
    assert!(
        stream.next_message().is_none(),
        "the stream ends with its session"
    );
}

#[test]
fn the_get_stream_needs_an_event_stream_accept() {
    let (_dir, server) = fixture_server();
    let mut client = server.client();
    client.initialize();
    let session = client.session.clone().expect("session");
    let plain = request(
        server.addr,
        "GET",
        "/mcp",
        &[("Accept", "application/json"), ("Mcp-Session-Id", &session)],
        b"",
    );
    assert_eq!(plain.status, 405);
    let without_session = EventStream::open(
        server.addr,
        "GET",
        "/mcp",
        &[("Accept", "text/event-stream")],
        b"",
    );
    assert_eq!(without_session.status, 400);
}

#[test]
fn dns_rebinding_is_refused() {
    let (_dir, server) = fixture_server();
    let mut client = server.client();
    let init = client.message(
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "t", "version": "0"}}),
    );
    let origin = client.post_with(&init, &[("Origin", "http://evil.example")]);
    assert_eq!(origin.status, 403, "{}", origin.text());
    assert!(origin.header("mcp-session-id").is_none());
    let host = client.post_with(&init, &[("Host", "evil.example")]);
    assert_eq!(host.status, 403, "{}", host.text());
    let port = format!("localhost:{}", server.addr.port() + 1);
    let other_port = client.post_with(&init, &[("Host", &port)]);
    assert_eq!(other_port.status, 403);
    // The loopback names with the right port, and a loopback Origin, pass.
    let localhost = format!("localhost:{}", server.addr.port());
    let origin = format!("http://localhost:{}", server.addr.port());
    let ok = client.post_with(&init, &[("Host", &localhost), ("Origin", &origin)]);
    assert_eq!(ok.status, 200, "{}", ok.text());
}

#[test]
fn bodies_over_8_mb_are_refused_without_being_read() {
    let (_dir, server) = fixture_server();
    let limit = 8 * 1024 * 1024;
    // A declared length over the limit: refused before a byte of the body is sent.
    let length = (limit + 1).to_string();
    let stream = send_head(
        server.addr,
        "POST",
        "/mcp",
        &[
            ("Content-Type", "application/json"),
            ("Content-Length", &length),
            ("Expect", "100-continue"),
        ],
    );
    let refused = read_response(std::io::BufReader::new(stream));
    assert_eq!(refused.status, 413, "{}", refused.text());
    assert!(refused.text().contains("8 MB"), "{}", refused.text());

    // A chunked body is cut when it passes the limit.
    let mut stream = send_head(
        server.addr,
        "POST",
        "/mcp",
        &[
            ("Content-Type", "application/json"),
            ("Transfer-Encoding", "chunked"),
        ],
    );
    let reader = stream.try_clone().expect("clone");
    let writer = thread::spawn(move || {
        let chunk = vec![b' '; 1024 * 1024];
        for _ in 0..9 {
            let head = format!("{:x}\r\n", chunk.len());
            let sent = stream
                .write_all(head.as_bytes())
                .and_then(|()| stream.write_all(&chunk))
                .and_then(|()| stream.write_all(b"\r\n"));
            if sent.is_err() {
                return; // The server stopped reading, as it should.
            }
        }
        let _ = stream.write_all(b"0\r\n\r\n");
    });
    let cut = read_response(std::io::BufReader::new(reader));
    assert_eq!(cut.status, 413, "{}", cut.text());
    writer.join().expect("writer");

    // The server is fine afterwards.
    let mut client = server.client();
    client.initialize();
    // Just under the limit is read and answered (here: not a valid message).
    let mut big = vec![b' '; limit - 2];
    big[0] = b'[';
    big[limit - 3] = b']';
    let under = request(
        server.addr,
        "POST",
        "/mcp",
        &[("Content-Type", "application/json")],
        &big,
    );
    assert_eq!(under.status, 400, "{}", under.text());
    assert_eq!(under.json()["error"]["code"], -32600, "{}", under.text());
}

/// A client that holds a token and then stops sending its body is answered 408 once its
/// body has been silent for 10 s, and its connection closed: it cannot hold the connection,
/// or a request slot, for ever. (A body that trickles is cut at 60 s in all: a unit test of
/// `http::body`.)
#[test]
fn an_authenticated_body_that_stops_is_answered_408_in_time() {
    let dir = plugins(&["fixture"]);
    let tokens = TempDir::new("tokens");
    let file = tokens.path().join("tokens");
    std::fs::write(&file, "ci ci-token-0123456789abcdef\n").expect("write tokens");
    let server = Serve::start(dir.path(), &["--tokens", &file.to_string_lossy()]);
    let started = std::time::Instant::now();
    let mut stream = send_head(
        server.addr,
        "POST",
        "/mcp",
        &[
            ("Authorization", "Bearer ci-token-0123456789abcdef"),
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("Content-Length", "200"),
        ],
    );
    stream
        .write_all(br#"{"jsonrpc":"2.0","#)
        .expect("write part");
    stream
        .set_read_timeout(Some(Duration::from_secs(40)))
        .expect("timeout");
    let mut reader = std::io::BufReader::new(stream);
    let answer = read_response(&mut reader);
    let took = started.elapsed();
    assert_eq!(answer.status, 408, "{}", answer.text());
    assert!(
        answer.text().contains("not sent in time"),
        "{}",
        answer.text()
    );
    assert_eq!(answer.json()["error"]["code"], -32600, "{}", answer.text());
    assert!(
        took >= Duration::from_secs(9) && took < Duration::from_secs(30),
        "answered after {took:?} (the idle wait is 10 s)"
    );
    let mut rest = Vec::new();
    let closed = std::io::Read::read_to_end(&mut reader, &mut rest);
    assert!(
        closed.is_ok() && rest.is_empty(),
        "the connection was closed: {closed:?} {rest:?}"
    );
    // The server is fine afterwards.
    let mut client = server.client();
    client.token = Some("ci-token-0123456789abcdef".into());
    client.initialize();
}

#[test]
fn other_paths_health_and_status() {
    let (_dir, server) = fixture_server();
    for path in [
        "/index.html",
        "/mcp/extra",
        "/.well-known/oauth-authorization-server",
        "/.well-known/oauth-protected-resource",
    ] {
        let response = request(server.addr, "GET", path, &[], b"");
        assert_eq!(response.status, 404, "{path}: {}", response.text());
    }
    let health = request(server.addr, "GET", "/healthz", &[], b"");
    assert_eq!((health.status, health.text().as_str()), (200, "ok\n"));

    let mut client = server.client();
    client.initialize();
    let status = request(server.addr, "GET", "/api/status", &[], b"");
    assert_eq!(status.status, 200);
    assert_eq!(status.header("content-type"), Some("application/json"));
    let doc = status.json();
    assert_eq!(doc["mode"], "proxy");
    assert_eq!(doc["sessions"], 1);
    assert_eq!(doc["relays"], json!([]));
    assert_eq!(doc["upstream"], json!([]));
    assert_eq!(nulls(&doc), Vec::<String>::new(), "{doc}");
    let fixture = doc["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .find(|g| g["id"] == "fixture")
        .cloned()
        .unwrap_or_else(|| panic!("no fixture group: {doc}"));
    assert_eq!(fixture["state"], "not_loaded", "nothing loaded yet: {doc}");
    client.call("fixture_echo", json!({}));
    let doc = request(server.addr, "GET", "/api/status", &[], b"").json();
    let fixture = doc["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .find(|g| g["id"] == "fixture")
        .cloned()
        .expect("fixture");
    assert_eq!(fixture["state"], "loaded", "{doc}");
    assert_eq!(fixture["tools"], 7);
}

#[test]
fn status_shows_the_relays_with_their_state() {
    let dir = plugins(&["fixture"]);
    let server = Serve::start(
        dir.path(),
        &[
            "--relay",
            "http://127.0.0.3:9/mcp",
            "--relay",
            "http://127.0.0.4:9/mcp",
        ],
    );
    let doc = request(server.addr, "GET", "/api/status", &[], b"").json();
    let relays = doc["relays"].as_array().expect("relays");
    assert_eq!(relays.len(), 2, "{doc}");
    assert_eq!(relays[0]["url"], "http://127.0.0.3:9/mcp", "{doc}");
    assert!(relays.iter().all(|r| r["state"].is_string()), "{doc}");
    assert_eq!(nulls(&doc), Vec::<String>::new(), "{doc}");
}

#[test]
fn service_mode_says_so() {
    let dir = plugins(&["fixture"]);
    let server = Serve::start(dir.path(), &["--service"]);
    server.wait_stderr("(service mode, ", WAIT);
    let doc = request(server.addr, "GET", "/api/status", &[], b"").json();
    assert_eq!(doc["mode"], "service");
}

#[test]
fn tokens_guard_a_server_on_another_loopback_address() {
    let dir = plugins(&["fixture"]);
    let tokens = TempDir::new("tokens");
    let file = tokens.path().join("tokens");
    std::fs::write(
        &file,
        "# callers\nrelay-a  a-very-long-token-for-relay-a\nci ci-token-0123456789abcdef\n",
    )
    .expect("write tokens");
    let server = Serve::start_on(
        dir.path(),
        "127.0.0.2:0",
        &["--tokens", &file.to_string_lossy()],
        &[],
    );
    assert_eq!(server.addr.ip().to_string(), "127.0.0.2");
    server.wait_stderr("bearer tokens: 2", WAIT);

    let mut client = server.client();
    let init = client.message(
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "t", "version": "0"}}),
    );
    let none = client.post(&init);
    assert_eq!(none.status, 401, "{}", none.text());
    assert_eq!(
        none.header("www-authenticate"),
        Some("Bearer realm=\"coremcp\"")
    );
    assert!(none.header("mcp-session-id").is_none());
    let wrong = client.post_with(
        &init,
        &[("Authorization", "Bearer ci-token-0123456789abcdeX")],
    );
    assert_eq!(wrong.status, 401);
    assert!(wrong
        .header("www-authenticate")
        .is_some_and(|c| c.starts_with("Bearer ") && c.contains("invalid_token")));
    assert_eq!(
        request(server.addr, "GET", "/api/status", &[], b"").status,
        401
    );
    assert_eq!(
        request(server.addr, "GET", "/healthz", &[], b"").status,
        200
    );

    client.token = Some("ci-token-0123456789abcdef".to_owned());
    client.initialize();
    assert_eq!(
        client.call("fixture_echo", json!({"x": 1}))["structuredContent"],
        json!({"x": 1})
    );
    // The session records its principal.
    server.wait_stderr("principal=ci", WAIT);
    let status = request(
        server.addr,
        "GET",
        "/api/status",
        &[("Authorization", "Bearer a-very-long-token-for-relay-a")],
        b"",
    );
    assert_eq!(status.status, 200);
    // A session belongs to its principal: another valid token cannot use it.
    client.token = Some("a-very-long-token-for-relay-a".to_owned());
    let ping = client.post(&client_message(1, "ping", json!({})));
    assert_eq!(ping.status, 404, "{}", ping.text());
    client.token = None;
    let ping = client.post(&client_message(1, "ping", json!({})));
    assert_eq!(ping.status, 401);
}

#[test]
fn a_listener_off_loopback_needs_tokens_and_a_bad_tokens_file_is_refused() {
    let dir = plugins(&["fixture"]);
    let plugins_arg = dir.path().to_string_lossy().into_owned();
    // Refused before anything is bound.
    let (code, _, err) = run(
        &["serve", "--plugins", &plugins_arg, "--listen", "0.0.0.0:0"],
        &[],
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("not a loopback address") && err.contains("--tokens"),
        "{err}"
    );

    let tokens = TempDir::new("bad-tokens");
    let file = tokens.path().join("tokens");
    std::fs::write(&file, "ok 0123456789abcdef0123\nbroken-line\n").expect("write");
    let (code, _, err) = run(
        &[
            "serve",
            "--plugins",
            &plugins_arg,
            "--tokens",
            &file.to_string_lossy(),
        ],
        &[],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("line 2"), "{err}");
    assert!(
        !err.contains("0123456789abcdef0123"),
        "never shows a token: {err}"
    );

    let (code, _, err) = run(
        &[
            "serve",
            "--plugins",
            &plugins_arg,
            "--listen",
            "not-an-address",
        ],
        &[],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not an address"), "{err}");
}

#[test]
fn sigterm_lets_calls_in_flight_finish_and_exits_zero() {
    let (_dir, mut server) = fixture_server();
    let mut client = server.client();
    client.initialize();
    let addr = server.addr;
    let headers = client.headers();
    let slow = thread::spawn(move || {
        let headers: Vec<(&str, &str)> = headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        request(
            addr,
            "POST",
            "/mcp",
            &headers,
            client_message(
                1,
                "tools/call",
                json!({"name": "fixture_sleep", "arguments": {"ms": 1500}}),
            )
            .to_string()
            .as_bytes(),
        )
    });
    // A GET stream stays open until the stop, and does not hold the stop up.
    let mut stream = client.listen();
    assert_eq!(stream.status, 200);
    thread::sleep(Duration::from_millis(400));
    server.signal(libc::SIGTERM);
    let answered = slow.join().expect("slow call");
    assert_eq!(answered.status, 200, "{}", answered.text());
    assert_eq!(
        answered.json()["result"]["structuredContent"],
        json!({"slept_ms": 1500}),
        "{}",
        text(&answered.json()["result"])
    );
    assert!(
        stream.next_message().is_none(),
        "the GET stream ends at the stop"
    );
    assert_eq!(server.wait_exit(WAIT), Some(0), "{}", server.stderr());
    assert!(
        std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_err(),
        "no longer listening"
    );
}

/// Sends `GET /healthz` on a kept-alive connection and reads the answer; how long it took.
fn health_on(stream: &mut std::net::TcpStream, addr: std::net::SocketAddr) -> Duration {
    use std::io::{BufRead, BufReader, Read};
    let started = std::time::Instant::now();
    stream
        .write_all(format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\n\r\n").as_bytes())
        .expect("write");
    let mut reader = BufReader::new(&mut *stream);
    let mut line = String::new();
    reader.read_line(&mut line).expect("status line");
    assert!(line.starts_with("HTTP/1.1 200"), "{line:?}");
    let mut length = 0;
    loop {
        line.clear();
        reader.read_line(&mut line).expect("header");
        if line.trim().is_empty() {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().expect("length");
        }
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).expect("body");
    assert_eq!(String::from_utf8_lossy(&body).trim(), "ok", "healthz");
    started.elapsed()
}

#[test]
fn half_open_connections_from_one_address_cannot_starve_the_others() {
    use coremcp_tests::http::{connect_from, raise_fd_limit};
    use std::io::Read;
    use std::net::Ipv4Addr;

    raise_fd_limit();
    let (_dir, serve) = fixture_server();
    let addr = serve.addr;
    // A client already connected, kept alive.
    let mut kept = connect_from(Ipv4Addr::new(127, 0, 0, 1), addr).expect("connect");
    health_on(&mut kept, addr);

    // The attacker: 1 024 connections from 127.0.0.3 that send a request line and Host, then
    // nothing more.
    let head = format!("POST /mcp HTTP/1.1\r\nHost: {addr}\r\n");
    let mut attack = Vec::new();
    for i in 0..1024 {
        // The kept-alive client keeps asking while the attack builds up: it is served each
        // time, and never sits idle long enough for the server to close it as idle (on a
        // loaded machine opening 1 024 connections can take longer than the idle timeout).
        if i % 64 == 0 {
            health_on(&mut kept, addr);
        }
        match connect_from(Ipv4Addr::new(127, 0, 0, 3), addr) {
            Ok(mut stream) => {
                let _ = stream.write_all(head.as_bytes());
                attack.push(stream);
            }
            Err(e) => panic!("attacker connect {}: {e}", attack.len()),
        }
    }
    let started = std::time::Instant::now();

    // Another machine is served at once, and so is the kept-alive client.
    let mut other = connect_from(Ipv4Addr::new(127, 0, 0, 2), addr).expect("connect");
    let took = health_on(&mut other, addr);
    assert!(
        took < Duration::from_secs(1),
        "a new client waited {took:?}"
    );
    let took = health_on(&mut kept, addr);
    assert!(
        took < Duration::from_secs(1),
        "the kept-alive client waited {took:?}"
    );
    let status = request(addr, "GET", "/api/status", &[], b"");
    assert_eq!(status.status, 200);

    // The server holds 512 of the attacker's connections and closed the rest at once; the held
    // ones are closed once their headers are 5 s late.
    let closed = |attack: &[std::net::TcpStream]| -> usize {
        attack
            .iter()
            .filter(|stream| {
                let mut stream: &std::net::TcpStream = stream;
                stream.set_nonblocking(true).expect("nonblocking");
                let mut byte = [0u8; 1];
                let gone = match stream.read(&mut byte) {
                    Ok(0) => true,
                    Err(e) => e.kind() != std::io::ErrorKind::WouldBlock,
                    Ok(_) => false,
                };
                stream.set_nonblocking(false).expect("blocking");
                gone
            })
            .count()
    };
    let poll_until = |attack: &[std::net::TcpStream], want: usize, limit: Duration| loop {
        let n = closed(attack);
        if n >= want || started.elapsed() > limit {
            return (n, started.elapsed());
        }
        thread::sleep(Duration::from_millis(50));
    };
    let (at_once, _) = poll_until(&attack, 512, Duration::from_secs(3));
    assert!(
        at_once >= 512,
        "the connections over the per-address limit were closed at once ({at_once} closed)"
    );
    let (all, when) = poll_until(&attack, attack.len(), Duration::from_secs(15));
    assert_eq!(all, attack.len(), "every half-open connection was closed");
    assert!(
        when < Duration::from_secs(9),
        "half-open connections were held {when:?} (the header timeout is 5 s)"
    );
    let said = serve.wait_stderr("its limit (--max-connections-per-client)", WAIT);
    assert!(said.contains("client=127.0.0.3"), "{said}");
}

#[test]
fn a_post_stream_the_client_drops_is_resumed_with_last_event_id() {
    let (_dir, server) = fixture_server();
    let mut client = server.client();
    client.initialize();
    let headers: Vec<(String, String)> = client
        .headers()
        .into_iter()
        .map(|(n, v)| match n.eq_ignore_ascii_case("accept") {
            true => (n, "text/event-stream".to_owned()),
            false => (n, v),
        })
        .collect();
    let pairs: Vec<(&str, &str)> = headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    let call = client_message(
        9,
        "tools/call",
        json!({"name": "fixture_sleep", "arguments": {"ms": 600}}),
    );
    let mut stream = EventStream::open(
        server.addr,
        "POST",
        "/mcp",
        &pairs,
        call.to_string().as_bytes(),
    );
    assert_eq!(stream.status, 200);
    // The priming event names the stream; then the client goes away before the answer.
    let priming = stream.next_raw().expect("a priming event");
    let id = priming
        .lines()
        .find_map(|l| l.strip_prefix("id: "))
        .unwrap_or_else(|| panic!("no id: {priming:?}"))
        .to_owned();
    assert!(id.ends_with("-0"), "{id}");
    drop(stream);

    let mut resume = pairs.clone();
    resume.push(("Last-Event-ID", &id));
    let mut resumed = EventStream::open(server.addr, "GET", "/mcp", &resume, b"");
    assert_eq!(resumed.status, 200);
    let answer = resumed
        .next_message()
        .expect("the answer on the resumed stream");
    assert_eq!(answer["id"], 9);
    assert_eq!(
        answer["result"]["structuredContent"],
        json!({"slept_ms": 600})
    );
    assert!(
        resumed.next_message().is_none(),
        "the resumed stream ends with its answer"
    );
    // A stream id nobody parked opens the session's ordinary GET stream.
    let mut unknown = pairs.clone();
    unknown.push(("Last-Event-ID", "s999-3"));
    let listen = EventStream::open(server.addr, "GET", "/mcp", &unknown, b"");
    assert_eq!(listen.status, 200);
}
