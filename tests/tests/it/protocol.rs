//! The MCP wire over stdio: negotiation, framing errors, the rules real agent clients need
//! (ARCHITECTURE.md, "What agent clients need"), and that stdout carries nothing but JSON-RPC.

use std::time::{Duration, Instant};

use coremcp_tests::{hints, is_error, nulls, plugins, text, Server, WAIT};
use serde_json::{json, Value};

fn server() -> (coremcp_tests::TempDir, Server) {
    let dir = plugins(&["publishing", "fixture"]);
    let server = Server::start(dir.path(), &[], &[]);
    (dir, server)
}

#[test]
fn initialize_negotiates_the_protocol_version() {
    for (offered, answered) in [
        ("2025-06-18", "2025-06-18"),
        ("2025-11-25", "2025-11-25"),
        ("2025-03-26", "2025-03-26"),
        ("2024-11-05", "2024-11-05"),
        // An offer it does not speak in initialize: the latest revision it does.
        ("2026-07-28", "2025-11-25"),
        ("2099-01-01", "2025-11-25"),
        ("not-a-version", "2025-11-25"),
    ] {
        let (_dir, mut server) = server();
        let result = server.initialize_with(offered);
        assert_eq!(result["protocolVersion"], answered, "offered {offered}");
        assert_eq!(result["serverInfo"]["name"], "coremcp");
        assert_eq!(
            result["capabilities"]["tools"]["listChanged"], true,
            "tools capability"
        );
        assert!(result["instructions"]
            .as_str()
            .is_some_and(|s| s.contains("Publishing")));
        assert_eq!(nulls(&result), Vec::<String>::new());
    }
}

#[test]
fn unknown_methods_answer_method_not_found_at_once() {
    let (_dir, mut server) = server();
    // Clients such as the Python SDK 2.x and Claude Code probe this before initialize.
    let started = Instant::now();
    let answer = server.request("server/discover", json!({}));
    assert_eq!(answer["error"]["code"], -32601);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "answered at once"
    );
    server.initialize();
    for method in [
        "resources/list",
        "prompts/list",
        "resources/templates/list",
        "x/y",
    ] {
        let answer = server.request(method, json!({}));
        assert_eq!(answer["error"]["code"], -32601, "{method}");
        assert!(answer["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains(method)));
    }
    assert_eq!(server.request("ping", json!({}))["result"], json!({}));
}

#[test]
fn framing_errors_are_answered_and_the_session_goes_on() {
    let (_dir, mut server) = server();
    server.initialize();
    for (line, code) in [
        ("this is not json", -32700),
        (r#"{"jsonrpc":"2.0","id":1,"method""#, -32700),
        (r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#, -32600),
        (r#"{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}"#, -32600),
        (r#"{"jsonrpc":"1.0","id":77,"method":"ping"}"#, -32600),
        (r#"{"jsonrpc":"2.0","id":78}"#, -32600),
    ] {
        server.write(format!("{line}\n").as_bytes());
        let answer = server.recv(WAIT).expect("an answer");
        assert_eq!(answer["error"]["code"], code, "{line}: {answer}");
    }
    // A notification is never answered; the next request still is.
    server.write(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/whatever\"}\n");
    assert_eq!(server.request("ping", json!({}))["result"], json!({}));
    // Bad params of known methods.
    let answer = server.request("tools/call", json!({"arguments": {}}));
    assert_eq!(answer["error"]["code"], -32602);
    let answer = server.request("tools/call", json!({"name": "no_such_tool"}));
    assert_eq!(answer["error"]["code"], -32602);
    assert!(answer["error"]["message"]
        .as_str()
        .is_some_and(|m| m.contains("no_such_tool")));
    let answer = server.request(
        "tools/call",
        json!({"name": "fixture_echo", "arguments": [1]}),
    );
    assert_eq!(answer["error"]["code"], -32602);
    let answer = server.request("logging/setLevel", json!({"level": "loud"}));
    assert_eq!(answer["error"]["code"], -32602);
}

#[test]
fn tools_list_follows_what_agent_clients_need() {
    let (_dir, mut server) = server();
    server.initialize();
    let answer = server.request("tools/list", json!({}));
    assert_eq!(nulls(&answer), Vec::<String>::new(), "no null anywhere");
    let result = &answer["result"];
    assert!(
        result.get("nextCursor").is_none(),
        "every tool on the first page"
    );
    let tools = result["tools"].as_array().expect("tools");
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(
        names,
        [
            // Listed although no docs plugin is installed: they answer that they are not in
            // this build.
            "docs_read",
            "docs_write",
            "publishing",
            "fixture_echo",
            "fixture_panic",
            "fixture_sleep",
            "fixture_big",
            "fixture_stdout",
            "fixture_log",
            "fixture_config"
        ]
    );
    for tool in tools {
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
        assert!(tool["description"].as_str().is_some_and(|d| !d.is_empty()));
        let name = tool["name"].as_str().expect("name");
        assert!(name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'));
        for key in tool.as_object().expect("object").keys() {
            assert!(
                ["name", "description", "inputSchema", "annotations"].contains(&key.as_str()),
                "unexpected field {key}"
            );
        }
    }
    let publishing = &tools[2];
    assert_eq!(hints(publishing)["openWorldHint"], true);
    // Results omit what they do not have, too.
    let ok = server.call("fixture_echo", json!({"a": 1}));
    assert_eq!(nulls(&ok), Vec::<String>::new());
    assert!(ok.get("isError").is_none());
    let err = server.call("fixture_panic", json!({}));
    assert!(err.get("structuredContent").is_none());
}

#[test]
fn tools_list_pages_only_when_asked() {
    let dir = plugins(&["publishing", "fixture"]);
    let mut server = Server::start(dir.path(), &["--page-size", "3"], &[]);
    server.initialize();
    let mut names = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..10 {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let result = server.request("tools/list", params)["result"].clone();
        let page = result["tools"].as_array().expect("tools").clone();
        assert!(page.len() <= 3);
        names.extend(
            page.iter()
                .map(|t| t["name"].as_str().expect("name").to_owned()),
        );
        match result.get("nextCursor") {
            Some(next) => cursor = Some(next.as_str().expect("cursor").to_owned()),
            None => break,
        }
    }
    assert_eq!(names.len(), 10);
    let answer = server.request("tools/list", json!({"cursor": "bogus"}));
    assert_eq!(answer["error"]["code"], -32602);
}

#[test]
fn stdout_carries_nothing_but_json_rpc() {
    let (_dir, mut server) = server();
    server.initialize();
    assert_eq!(
        server.request("logging/setLevel", json!({"level": "debug"}))["result"],
        json!({})
    );
    server.call("fixture_stdout", json!({}));
    server.call("fixture_log", json!({}));
    server.call("fixture_panic", json!({}));
    server.call("fixture_big", json!({"bytes": 100_000}));
    server.request("tools/list", json!({}));
    server.write(b"garbage\n");
    server.request("ping", json!({}));
    assert_eq!(
        server.finish(WAIT),
        Some(0),
        "exits cleanly when stdin closes"
    );
    let raw = server.raw.lock().expect("raw").clone();
    assert!(raw.len() >= 8);
    for line in &raw {
        let message: Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        assert_eq!(message["jsonrpc"], "2.0", "{line}");
        assert!(
            message.get("id").is_some() || message.get("method").is_some(),
            "{line}"
        );
    }
    // The plugin's print went to stderr.
    server.wait_stderr("this line must not reach the protocol stream", WAIT);
}

#[test]
fn plugin_logs_reach_the_client_at_its_level() {
    let (_dir, mut server) = server();
    server.initialize();
    server.request("logging/setLevel", json!({"level": "warning"}));
    server.call("fixture_log", json!({}));
    let levels: Vec<String> = server
        .pending
        .iter()
        .filter(|m| m["method"] == "notifications/message")
        .map(|m| {
            assert_eq!(m["params"]["logger"], "fixture");
            m["params"]["level"].as_str().expect("level").to_owned()
        })
        .collect();
    assert_eq!(levels, ["error", "warning"]);
    // All levels still go to stderr (polled: the line may still be in the pipe).
    server.wait_stderr("fixture log at Info", WAIT);
}

#[test]
fn stdin_closing_lets_calls_in_flight_answer() {
    let (_dir, mut server) = server();
    server.initialize();
    server.send(&json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                        "params": {"name": "fixture_sleep", "arguments": {"ms": 300}}}));
    assert_eq!(server.finish(WAIT), Some(0));
    let answer = server.answer(&json!(5), WAIT);
    assert_eq!(answer["result"]["structuredContent"]["slept_ms"], 300);
    let _ = text(&answer["result"]);
    assert!(!is_error(&answer["result"]));
}

#[test]
fn nothing_but_ping_is_served_before_initialize_and_initialize_happens_once() {
    let (_dir, mut server) = server();
    for method in ["tools/list", "tools/call", "logging/setLevel"] {
        let answer = server.request(method, json!({"name": "fixture_echo", "level": "info"}));
        assert_eq!(answer["error"]["code"], -32600, "{method}: {answer}");
        assert!(
            answer["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .contains(&format!(
                    "{method} before initialize: send initialize first"
                )),
            "{answer}"
        );
    }
    assert_eq!(server.request("ping", json!({}))["result"], json!({}));
    // Methods we do not serve are still answered -32601 at once (clients probe them).
    assert_eq!(
        server.request("server/discover", json!({}))["error"]["code"],
        -32601
    );
    let first = server.initialize_with("2025-06-18");
    assert_eq!(first["protocolVersion"], "2025-06-18");
    let again = server.request(
        "initialize",
        json!({"protocolVersion": "2024-11-05", "capabilities": {},
               "clientInfo": {"name": "again", "version": "0"}}),
    );
    assert_eq!(again["error"]["code"], -32600, "{again}");
    assert!(
        again["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("already initialized (protocol 2025-06-18)"),
        "{again}"
    );
    assert!(server.tool_names().contains(&"fixture_echo".to_owned()));
}

#[test]
fn a_second_request_with_an_id_in_flight_is_refused() {
    let (_dir, mut server) = server();
    server.initialize();
    let call = |ms: u64| {
        json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
               "params": {"name": "fixture_sleep", "arguments": {"ms": ms}}})
    };
    server.send(&call(500));
    server.send(&call(1));
    let first = server.answer(&json!(9), WAIT);
    let second = server.answer(&json!(9), WAIT);
    let (refused, ran) = if first.get("error").is_some() {
        (first, second)
    } else {
        (second, first)
    };
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("request id 9 is already in flight"),
        "{refused}"
    );
    assert_eq!(ran["result"]["structuredContent"]["slept_ms"], 500, "{ran}");
    // Once answered, the id may be used again.
    server.send(&call(1));
    assert_eq!(
        server.answer(&json!(9), WAIT)["result"]["structuredContent"]["slept_ms"],
        1
    );
}
