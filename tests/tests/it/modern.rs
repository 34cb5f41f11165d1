//! MCP 2026-07-28 beside the 2025 revisions, against the real binary: the era chosen per
//! process on stdio and per request on HTTP, a table of malformed modern requests (each with the
//! code and status the specification gives it), no session on HTTP, cancel by closing the
//! stream, and two `coremcp serve` on one data folder answering each other's clients — an
//! approval asked by one and answered through the other included.

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use coremcp_tests::http::{request, EventStream, Response, Serve};
use coremcp_tests::{plugins, text, Server, TempDir, WAIT};
use serde_json::{json, Value};

const VERSION: &str = "2026-07-28";

fn envelope() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "coremcp-tests", "version": "0"}
    })
}

fn modern(id: Value, method: &str, mut params: Value) -> Value {
    params["_meta"] = envelope();
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn code(answer: &Value) -> i64 {
    answer["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not an error: {answer}"))
}

#[test]
fn a_stdio_process_speaks_the_era_of_its_first_request() {
    let dir = plugins(&["fixture"]);
    let mut server = Server::start(dir.path(), &[], &[]);
    server.send(&modern(json!(1), "server/discover", json!({})));
    let discover = server.answer(&json!(1), WAIT);
    assert_eq!(discover["result"]["resultType"], "complete", "{discover}");
    assert_eq!(discover["result"]["supportedVersions"], json!([VERSION]));
    assert_eq!(
        discover["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "coremcp"
    );
    assert!(discover["result"].get("protocolVersion").is_none());

    // The table: (request, expected error code), each on the same modern connection.
    let mut no_caps = modern(json!(0), "tools/list", json!({}));
    no_caps["params"]["_meta"]
        .as_object_mut()
        .expect("meta")
        .remove("io.modelcontextprotocol/clientCapabilities");
    let mut later = modern(json!(0), "tools/list", json!({}));
    later["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    let mut numeric = modern(json!(0), "tools/list", json!({}));
    numeric["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!(20260728);
    let mut bad_level = modern(json!(0), "tools/list", json!({}));
    bad_level["params"]["_meta"]["io.modelcontextprotocol/logLevel"] = json!("loud");
    let table: Vec<(&str, Value, i64)> = vec![
        (
            "no _meta",
            json!({"jsonrpc": "2.0", "id": 0, "method": "tools/list"}),
            -32602,
        ),
        (
            "_meta not an object",
            json!({"jsonrpc": "2.0", "id": 0, "method": "tools/list", "params": {"_meta": []}}),
            -32602,
        ),
        ("no capabilities", no_caps, -32602),
        ("an unknown version", later, -32022),
        ("a version that is not a string", numeric, -32602),
        ("an unknown log level", bad_level, -32602),
        (
            "initialize on a modern connection",
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                   "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                              "clientInfo": {"name": "x", "version": "1"}}}),
            -32022,
        ),
        (
            "ping (removed in 2026)",
            modern(json!(0), "ping", json!({})),
            -32601,
        ),
        (
            "logging/setLevel (removed)",
            modern(json!(0), "logging/setLevel", json!({"level": "debug"})),
            -32601,
        ),
        (
            "a method nobody serves",
            modern(json!(0), "nope/nothing", json!({})),
            -32601,
        ),
        (
            "tools/call without a name",
            modern(json!(0), "tools/call", json!({})),
            -32602,
        ),
    ];
    for (n, (what, mut message, expected)) in table.into_iter().enumerate() {
        let id = json!(100 + n);
        message["id"] = id.clone();
        server.send(&message);
        let answer = server.answer(&id, WAIT);
        assert_eq!(code(&answer), expected, "{what}: {answer}");
        let said = answer["error"]["message"].as_str().unwrap_or("");
        assert!(!said.is_empty(), "{what}: {answer}");
        if expected == -32022 {
            assert_eq!(
                answer["error"]["data"]["supported"],
                json!([VERSION]),
                "{what}: {answer}"
            );
        }
    }
    // The connection still serves after all of that.
    server.send(&modern(
        json!("call"),
        "tools/call",
        json!({"name": "fixture_echo", "arguments": {"text": "2026"}}),
    ));
    let call = server.answer(&json!("call"), WAIT);
    assert_eq!(call["result"]["resultType"], "complete", "{call}");
    assert_eq!(call["result"]["structuredContent"], json!({"text": "2026"}));
    server.send(&modern(json!("list"), "tools/list", json!({})));
    let list = server.answer(&json!("list"), WAIT);
    assert_eq!(list["result"]["resultType"], "complete");
    assert_eq!(list["result"]["ttlMs"], 0);
    assert_eq!(list["result"]["cacheScope"], "private");
    assert_eq!(coremcp_tests::nulls(&list), Vec::<String>::new());
}

#[test]
fn a_legacy_process_refuses_modern_requests_and_keeps_2025_answers_clean() {
    let dir = plugins(&["fixture"]);
    let mut server = Server::start(dir.path(), &[], &[]);
    let init = server.initialize();
    assert_eq!(init["protocolVersion"], "2025-06-18");
    server.send(&modern(json!(2), "tools/list", json!({})));
    let refused = server.answer(&json!(2), WAIT);
    assert_eq!(code(&refused), -32600, "{refused}");
    // Nothing of the 2026 shape in a 2025 answer.
    let list = server.request("tools/list", json!({}));
    for key in ["resultType", "ttlMs", "cacheScope"] {
        assert!(list["result"].get(key).is_none(), "{key} in {list}");
    }
    let call = server.call("fixture_echo", json!({"text": "2025"}));
    assert!(call.get("resultType").is_none(), "{call}");
    // `server/discover` after initialize is a method a 2025 session does not serve.
    let discover = server.request("server/discover", json!({}));
    assert_eq!(code(&discover), -32601, "{discover}");
}

#[test]
fn a_stdio_subscription_is_acknowledged_tagged_and_cancelled() {
    let dir = plugins(&["fixture"]);
    let mut server = Server::start(dir.path(), &["--groups", "dynamic"], &[]);
    server.send(&modern(json!(1), "tools/list", json!({})));
    server.answer(&json!(1), WAIT);
    server.send(&modern(
        json!("sub"),
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true, "promptsListChanged": true}}),
    ));
    let ack = server.notification("notifications/subscriptions/acknowledged", WAIT);
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "sub"
    );
    // Only what is served is granted.
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true})
    );
    server.send(&modern(
        json!(2),
        "tools/call",
        json!({"name": "groups_enable", "arguments": {"groups": ["fixture"]}}),
    ));
    server.answer(&json!(2), WAIT);
    let changed = server.notification("notifications/tools/list_changed", WAIT);
    assert_eq!(
        changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "sub",
        "{changed}"
    );
    // Cancelled: no answer to the listen, and no notification any more.
    server.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": "sub"}}),
    );
    server.send(&modern(
        json!(3),
        "tools/call",
        json!({"name": "groups_disable", "arguments": {"groups": ["fixture"]}}),
    ));
    server.answer(&json!(3), WAIT);
    server.send(&modern(json!(4), "tools/list", json!({})));
    server.answer(&json!(4), WAIT);
    assert!(
        server.recv(Duration::from_millis(300)).is_none(),
        "nothing after the cancel"
    );
}

/// One malformed request: what it is, its headers and body, the status and code it gets.
type Case<'a> = (&'a str, Vec<(&'a str, &'a str)>, Value, u16, i64);

/// The headers of a well-formed modern POST of `method` (naming `name`).
fn headers<'a>(method: &'a str, name: Option<&'a str>) -> Vec<(&'a str, &'a str)> {
    let mut headers = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", VERSION),
        ("Mcp-Method", method),
    ];
    if let Some(name) = name {
        headers.push(("Mcp-Name", name));
    }
    headers
}

fn post(serve: &Serve, headers: &[(&str, &str)], body: &Value) -> Response {
    request(
        serve.addr,
        "POST",
        "/mcp",
        headers,
        body.to_string().as_bytes(),
    )
}

fn call_body(id: Value, tool: &str, arguments: Value) -> Value {
    modern(
        id,
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
    )
}

#[test]
fn over_http_each_request_is_checked_on_its_own_and_no_session_is_made() {
    let dir = plugins(&["fixture"]);
    let serve = Serve::start(dir.path(), &["--groups", "fixture"]);
    let echo = call_body(json!(1), "fixture_echo", json!({"text": "sessionless"}));
    let ok = post(&serve, &headers("tools/call", Some("fixture_echo")), &echo);
    assert_eq!(ok.status, 200, "{}", ok.text());
    assert!(ok.header("mcp-session-id").is_none());
    assert_eq!(ok.json()["result"]["resultType"], "complete");
    assert_eq!(
        ok.json()["result"]["structuredContent"],
        json!({"text": "sessionless"})
    );
    // The base64 form of a header value is decoded before it is compared.
    let unicode = call_body(json!(2), "fixture_echo", json!({"text": "x"}));
    let encoded = post(
        &serve,
        &headers("tools/call", Some("=?base64?Zml4dHVyZV9lY2hv?=")),
        &unicode,
    );
    assert_eq!(encoded.status, 200, "{}", encoded.text());

    let mut no_meta = echo.clone();
    no_meta["params"]
        .as_object_mut()
        .expect("params")
        .remove("_meta");
    let mut other_version = echo.clone();
    other_version["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] =
        json!("2099-01-01");
    let list = modern(json!(3), "tools/list", json!({}));
    let table: Vec<Case<'_>> = vec![
        (
            "no _meta",
            headers("tools/call", Some("fixture_echo")),
            no_meta,
            400,
            -32602,
        ),
        (
            "Mcp-Method missing",
            headers("tools/call", Some("fixture_echo"))
                .into_iter()
                .filter(|(n, _)| *n != "Mcp-Method")
                .collect(),
            echo.clone(),
            400,
            -32020,
        ),
        (
            "Mcp-Method disagrees",
            headers("tools/list", Some("fixture_echo")),
            echo.clone(),
            400,
            -32020,
        ),
        (
            "Mcp-Name disagrees",
            headers("tools/call", Some("fixture_panic")),
            echo.clone(),
            400,
            -32020,
        ),
        (
            "Mcp-Name missing",
            headers("tools/call", None),
            echo.clone(),
            400,
            -32020,
        ),
        (
            "Mcp-Name in broken base64",
            headers("tools/call", Some("=?base64?Zml4dHVyZV9lY2hv=?=")),
            echo.clone(),
            400,
            -32020,
        ),
        (
            "the header names a version the body does not",
            headers("tools/call", Some("fixture_echo")),
            other_version,
            400,
            -32020,
        ),
        (
            "an unknown method",
            headers("nope/nothing", None),
            modern(json!(4), "nope/nothing", json!({})),
            404,
            -32601,
        ),
        (
            "initialize with a 2026 header",
            headers("initialize", None),
            modern(
                json!(5),
                "initialize",
                json!({"protocolVersion": "2025-06-18"}),
            ),
            400,
            -32022,
        ),
        (
            "a JSON-RPC batch",
            headers("tools/list", None),
            json!([list.clone()]),
            400,
            -32600,
        ),
    ];
    for (what, headers, body, status, expected) in table {
        let answer = post(&serve, &headers, &body);
        assert_eq!(answer.status, status, "{what}: {}", answer.text());
        assert_eq!(code(&answer.json()), expected, "{what}: {}", answer.text());
        assert!(answer.header("mcp-session-id").is_none(), "{what}");
    }
    // An unsupported version in header and body alike: -32022 naming what is served.
    let mut future = list.clone();
    future["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    let mut future_headers = headers("tools/list", None);
    future_headers[2] = ("MCP-Protocol-Version", "2099-01-01");
    let unsupported = post(&serve, &future_headers, &future);
    assert_eq!(unsupported.status, 400);
    assert_eq!(code(&unsupported.json()), -32022);
    assert_eq!(
        unsupported.json()["error"]["data"],
        json!({"supported": [VERSION], "requested": "2099-01-01"})
    );
    // GET and DELETE are not part of 2026: 405, Allow: POST.
    for method in ["GET", "DELETE"] {
        let answer = request(
            serve.addr,
            method,
            "/mcp",
            &[
                ("MCP-Protocol-Version", VERSION),
                ("Accept", "text/event-stream"),
            ],
            b"",
        );
        assert_eq!(answer.status, 405, "{method}");
        assert_eq!(answer.header("allow"), Some("POST"), "{method}");
    }
    // A listen needs an event stream.
    let listen = modern(
        json!(6),
        "subscriptions/listen",
        json!({"notifications": {}}),
    );
    let mut json_only = headers("subscriptions/listen", None);
    json_only[1] = ("Accept", "application/json");
    assert_eq!(post(&serve, &json_only, &listen).status, 406);
    // A 2025 client on the same endpoint is served as before.
    let mut legacy = serve.client();
    assert_eq!(legacy.initialize()["protocolVersion"], "2025-06-18");
    let status = request(serve.addr, "GET", "/api/status", &[], b"").json();
    assert_eq!(status["sessions"], 1, "only the 2025 client has a session");
}

#[test]
fn closing_the_response_cancels_a_2026_call() {
    let dir = plugins(&["fixture"]);
    let serve = Serve::start(dir.path(), &["--groups", "fixture"]);
    let body = call_body(json!(1), "fixture_sleep", json!({"ms": 20_000}));
    let mut stream = coremcp_tests::http::send_head(
        serve.addr,
        "POST",
        "/mcp",
        &[
            headers("tools/call", Some("fixture_sleep")).as_slice(),
            &[("Content-Length", &body.to_string().len().to_string())],
        ]
        .concat(),
    );
    stream
        .write_all(body.to_string().as_bytes())
        .expect("write body");
    let until = Instant::now() + WAIT;
    let in_flight = |serve: &Serve| {
        request(serve.addr, "GET", "/metrics", &[], b"")
            .text()
            .lines()
            .find_map(|l| l.strip_prefix("coremcp_calls_in_flight "))
            .and_then(|n| n.trim().parse::<f64>().ok())
            .unwrap_or(-1.0)
    };
    while in_flight(&serve) < 1.0 {
        assert!(Instant::now() < until, "the call never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(stream);
    while in_flight(&serve) > 0.0 {
        assert!(
            Instant::now() < until,
            "closing the response did not cancel the call:\n{}",
            serve.stderr()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let metrics = request(serve.addr, "GET", "/metrics", &[], b"").text();
    assert!(
        metrics.lines().any(|l| l.starts_with("coremcp_calls_total")
            && l.contains("tool=\"fixture_sleep\"")
            && l.contains("outcome=\"cancelled\"")),
        "{metrics}"
    );
}

fn misbehave() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/upstream/misbehave.py")
        .to_string_lossy()
        .into_owned()
}

/// Two `coremcp serve` on one data folder, each with the fixture upstream server "m".
struct Pair {
    _dir: TempDir,
    _plugins: TempDir,
    log: PathBuf,
    a: Serve,
    b: Serve,
}

fn pair() -> Pair {
    let dir = TempDir::new("modern-pair");
    let log = dir.path().join("calls.log");
    let config = dir.path().join("mcp.json");
    std::fs::write(
        &config,
        json!({"servers": [{"id": "m", "command": "python3", "args": [misbehave(), "calls"],
                            "env": {"CALL_LOG": log.to_string_lossy()}}]})
        .to_string(),
    )
    .expect("config");
    let data = dir.path().join("data");
    let plugins = plugins(&["fixture"]);
    let env = [
        ("COREMCP_MCP_CONFIG", config.to_str().expect("utf-8")),
        ("COREMCP_MCP_SERVERS", ""),
        ("COREMCP_MCP_GRANTS", "*=m"),
        ("COREMCP_DATA", data.to_str().expect("utf-8")),
    ];
    let a = Serve::start_on(
        plugins.path(),
        "127.0.0.1:0",
        &["--groups", "fixture"],
        &env,
    );
    let b = Serve::start_on(
        plugins.path(),
        "127.0.0.1:0",
        &["--groups", "fixture"],
        &env,
    );
    Pair {
        _dir: dir,
        _plugins: plugins,
        log,
        a,
        b,
    }
}

fn eliciting(mut body: Value) -> Value {
    body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
        json!({"elicitation": {}});
    body
}

/// Posts a call of `mcp__m__echo` to `serve` until the server is connected there; the answer.
fn call_echo(serve: &Serve, body: &Value) -> Value {
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        let answer = post(serve, &headers("tools/call", Some("mcp__m__echo")), body).json();
        let unknown = answer["result"]["isError"] == true
            && (text(&answer["result"]).contains("unknown tool")
                || text(&answer["result"]).contains("connecting"));
        let not_yet = unknown
            || answer["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("unknown tool"));
        if !not_yet {
            return answer;
        }
        assert!(
            Instant::now() < until,
            "mcp__m__echo never became callable: {answer}\n{}",
            serve.stderr()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn two_servers_on_one_store_answer_each_others_clients_and_approvals() {
    let pair = pair();
    // Plain calls: either process answers, with no session anywhere.
    for (n, serve) in [&pair.a, &pair.b, &pair.a].into_iter().enumerate() {
        let answer = post(
            serve,
            &headers("tools/call", Some("fixture_echo")),
            &call_body(json!(n), "fixture_echo", json!({"text": "either"})),
        );
        assert_eq!(answer.status, 200, "{}", answer.text());
        assert!(answer.header("mcp-session-id").is_none());
    }
    // The question is asked by A...
    let args = json!({"message": "across"});
    let first = call_echo(
        &pair.a,
        &eliciting(call_body(json!(10), "mcp__m__echo", args.clone())),
    );
    let result = &first["result"];
    assert_eq!(result["resultType"], "input_required", "{first}");
    let question = &result["inputRequests"]["approval"];
    assert_eq!(question["method"], "elicitation/create");
    assert!(
        question["params"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("\"m\"")),
        "{question}"
    );
    let state = result["requestState"].as_str().expect("state").to_owned();
    assert!(
        !std::fs::read_to_string(&pair.log)
            .unwrap_or_default()
            .contains("echo"),
        "nothing is called before the answer"
    );
    // ...and answered through B, which holds the same key.
    let mut retry = eliciting(call_body(json!(11), "mcp__m__echo", args.clone()));
    retry["params"]["inputResponses"] = json!({"approval": {"action": "accept", "content": {}}});
    retry["params"]["requestState"] = json!(state);
    let done = call_echo(&pair.b, &retry);
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
    assert_eq!(text(&done["result"]), "across", "{done}");
    // A state altered by one character is refused by either, and nothing is called.
    let mut forged = retry.clone();
    let mut chars: Vec<char> = state.chars().collect();
    let last = chars.len() - 1;
    chars[last] = if chars[last] == 'A' { 'B' } else { 'A' };
    forged["params"]["requestState"] = json!(chars.into_iter().collect::<String>());
    forged["id"] = json!(12);
    let refused = post(
        &pair.a,
        &headers("tools/call", Some("mcp__m__echo")),
        &forged,
    );
    assert_eq!(refused.status, 400, "{}", refused.text());
    assert_eq!(code(&refused.json()), -32602);
    assert!(refused.text().contains("invalid_request_state"));
    // Without elicitation declared in the request: -32021, nothing called.
    let blind = post(
        &pair.a,
        &headers("tools/call", Some("mcp__m__echo")),
        &call_body(json!(13), "mcp__m__echo", args),
    );
    assert_eq!(blind.status, 400, "{}", blind.text());
    assert_eq!(code(&blind.json()), -32021);
    assert_eq!(
        blind.json()["error"]["data"],
        json!({"requiredCapabilities": {"elicitation": {}}})
    );
    let calls = std::fs::read_to_string(&pair.log).unwrap_or_default();
    assert_eq!(calls.lines().collect::<Vec<_>>(), vec!["echo"], "{calls}");
}

#[test]
fn an_http_subscription_carries_the_clients_own_id() {
    let dir = plugins(&["fixture"]);
    let serve = Serve::start(dir.path(), &["--groups", "fixture"]);
    let body = modern(
        json!("mine"),
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
    );
    let mut stream = EventStream::open(
        serve.addr,
        "POST",
        "/mcp",
        &headers("subscriptions/listen", None),
        body.to_string().as_bytes(),
    );
    assert_eq!(stream.status, 200);
    assert_eq!(stream.header("content-type"), Some("text/event-stream"));
    let ack = stream.wait_for("notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "mine",
        "{ack}"
    );
    // A graceful stop ends the subscription with its `complete` answer.
    serve.signal(libc::SIGTERM);
    let until = Instant::now() + WAIT;
    let end = loop {
        match stream.next_message() {
            Some(message) if message.get("id").is_some() => break message,
            Some(_) => {}
            None => panic!("the stream ended without its answer"),
        }
        assert!(Instant::now() < until);
    };
    assert_eq!(end["id"], "mine");
    assert_eq!(end["result"]["resultType"], "complete");
    assert_eq!(
        end["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "mine"
    );
}

#[test]
fn prompts_and_resources_are_declared_only_with_upstream_servers() {
    let dir = plugins(&["fixture"]);
    // None configured: only tools (and logging), and the methods are not served.
    let mut bare = Server::start(dir.path(), &[], &[("COREMCP_MCP_SERVERS", "")]);
    let init = bare.initialize();
    assert!(init["capabilities"].get("prompts").is_none(), "{init}");
    assert!(init["capabilities"].get("resources").is_none(), "{init}");
    assert_eq!(code(&bare.request("prompts/list", json!({}))), -32601);
    // One configured: declared in both eras (with listChanged), listed empty until it has some.
    let setup = TempDir::new("modern-surface");
    let config = setup.path().join("mcp.json");
    std::fs::write(
        &config,
        json!({"servers": [{"id": "m", "command": "python3", "args": [misbehave(), "calls"]}]})
            .to_string(),
    )
    .expect("config");
    let env = [
        ("COREMCP_MCP_CONFIG", config.to_str().expect("utf-8")),
        ("COREMCP_MCP_SERVERS", ""),
        ("COREMCP_MCP_GRANTS", "stdio=m"),
    ];
    let mut legacy = Server::start(dir.path(), &[], &env);
    let init = legacy.initialize();
    assert_eq!(
        init["capabilities"]["prompts"],
        json!({"listChanged": true})
    );
    assert_eq!(
        init["capabilities"]["resources"],
        json!({"listChanged": true})
    );
    assert_eq!(init["capabilities"]["completions"], json!({}));
    let prompts = legacy.request("prompts/list", json!({}));
    assert_eq!(prompts["result"], json!({"prompts": []}), "{prompts}");
    let unknown = legacy.request("resources/read", json!({"uri": "file:///etc/passwd"}));
    assert_eq!(code(&unknown), -32602, "{unknown}");
    let mut modern_server = Server::start(dir.path(), &[], &env);
    modern_server.send(&modern(json!(1), "server/discover", json!({})));
    let discover = modern_server.answer(&json!(1), WAIT);
    assert_eq!(
        discover["result"]["capabilities"]["prompts"],
        json!({"listChanged": true})
    );
    modern_server.send(&modern(json!(2), "resources/templates/list", json!({})));
    let templates = modern_server.answer(&json!(2), WAIT);
    assert_eq!(templates["result"]["resourceTemplates"], json!([]));
    assert_eq!(templates["result"]["resultType"], "complete");
    assert_eq!(templates["result"]["ttlMs"], 0);
}
