//! `coremcp stdio --status-listen` and `coremcp status`: a person can look at a stdio session
//! an agent client owns — its page, `/api/status` and `/metrics` on loopback — and list every
//! such process on the machine.

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use coremcp_tests::http::request;
use coremcp_tests::{plugins, run, Server, TempDir};
use serde_json::{json, Value};

const WAIT: Duration = Duration::from_secs(10);

/// Waits for the address file of `pid` under `data` and returns the address it names.
pub(crate) fn address_of(data: &Path, pid: u32) -> SocketAddr {
    let file = data.join("status").join(format!("{pid}.json"));
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(doc) = std::fs::read_to_string(&file)
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        {
            assert_eq!(doc["pid"], pid);
            let url = doc["url"].as_str().expect("url");
            let host = url
                .strip_prefix("http://")
                .and_then(|rest| rest.strip_suffix('/'))
                .expect("http://ADDR/");
            return host.parse().expect("socket address");
        }
        assert!(
            Instant::now() < deadline,
            "no {} within {WAIT:?}",
            file.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_stdio_session_serves_its_status_and_coremcp_status_finds_it() {
    let dir = plugins(&["publishing"]);
    let data = TempDir::new("status-data");
    let data_arg = data.path().to_string_lossy().into_owned();
    let mut server = Server::start(
        dir.path(),
        &["--status-listen", "127.0.0.1:0"],
        &[("COREMCP_PUBLISH_CMD", "echo"), ("COREMCP_DATA", &data_arg)],
    );
    server.initialize();
    let addr = address_of(data.path(), server.pid());
    assert!(addr.ip().is_loopback());

    let ok = server.call("publishing", json!({"args": ["hello"]}));
    assert!(ok.get("content").is_some(), "{ok}");
    let status = request(addr, "GET", "/api/status", &[], b"");
    assert_eq!(status.status, 200, "{}", status.text());
    let doc = status.json();
    assert_eq!(
        (doc["mode"].as_str(), doc["sessions"].as_u64()),
        (Some("proxy"), Some(1))
    );
    assert!(doc["groups"]
        .as_array()
        .is_some_and(|g| g.iter().any(|g| g["id"] == "publishing")));
    let page = request(addr, "GET", "/", &[], b"");
    assert_eq!(page.status, 200);
    assert!(page.text().contains("<title>Core MCP status</title>"));
    // Names nobody serves are counted, but never as labels of their own.
    for name in ["made_up_tool", "mcp__nope__x"] {
        let answer = server.request("tools/call", json!({"name": name, "arguments": {}}));
        assert!(
            answer.get("error").is_some() || answer["result"]["isError"] == true,
            "{answer}"
        );
    }
    let metrics = request(addr, "GET", "/metrics", &[], b"").text();
    assert!(
        metrics.contains("coremcp_calls_total{group=\"publishing\",tool=\"publishing\""),
        "{metrics}"
    );
    assert!(
        metrics.contains(
            "coremcp_calls_total{group=\"unknown\",tool=\"unknown\",outcome=\"refused\"} 2"
        ),
        "{metrics}"
    );
    assert!(
        !metrics.contains("nope") && !metrics.contains("made_up"),
        "{metrics}"
    );
    // MCP itself is this process's stdin and stdout, never its status listener.
    assert_eq!(request(addr, "POST", "/mcp", &[], b"{}").status, 404);

    let (code, stdout, stderr) = run(&["status", "--data", &data_arg], &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains(&format!("coremcp stdio, pid {}", server.pid())),
        "{stdout}"
    );
    assert!(
        stdout.contains("groups: publishing (1 tools); not installed: "),
        "{stdout}"
    );
    let (code, stdout, _) = run(&["status", "--data", &data_arg, "--json"], &[]);
    assert_eq!(code, 0);
    let listed: Value = serde_json::from_str(&stdout).expect("json");
    assert_eq!(listed[0]["pid"], server.pid());
    assert_eq!(listed[0]["status"]["sessions"], 1);
    let url = format!("http://{addr}");
    let (code, stdout, _) = run(&["status", "--url", &url], &[]);
    assert_eq!(code, 0);
    assert!(stdout.contains("coremcp serve · "), "{stdout}");

    // The file goes with the process.
    let file = data
        .path()
        .join("status")
        .join(format!("{}.json", server.pid()));
    assert_eq!(server.finish(WAIT), Some(0));
    assert!(!file.exists(), "{} outlived its process", file.display());
    let (code, stdout, _) = run(&["status", "--data", &data_arg], &[]);
    assert_eq!(code, 0);
    assert!(stdout.contains("no running Core MCP"), "{stdout}");
}

#[test]
fn a_status_listener_off_loopback_is_refused_and_a_dead_url_reported() {
    let dir = plugins(&["publishing"]);
    let (code, _, stderr) = run(
        &[
            "stdio",
            "--plugins",
            &dir.path().to_string_lossy(),
            "--status-listen",
            "0.0.0.0:0",
        ],
        &[],
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("not a loopback address"), "{stderr}");
    let port = coremcp_tests::free_port();
    let (code, stdout, _) = run(
        &["status", "--url", &format!("http://127.0.0.1:{port}")],
        &[],
    );
    assert_eq!(code, 1);
    assert!(stdout.contains("does not answer"), "{stdout}");
    let (code, _, stderr) = run(&["status", "--url", "ftp://example.com"], &[]);
    assert_eq!(code, 2, "{stderr}");
}

#[test]
fn each_principal_sees_only_its_own_recent_errors_and_an_operator_sees_all() {
    use coremcp_tests::http::{request, Serve};
    let dir = coremcp_tests::plugins(&["files", "ops"]);
    let root = coremcp_tests::TempDir::new("errors-root");
    let secrets = coremcp_tests::TempDir::new("errors-tokens");
    let tokens = secrets.path().join("tokens");
    std::fs::write(
        &tokens,
        "alice alice-token-0123456789\nbob bob-token-0123456789ab\nops ops-token-0123456789ab\n",
    )
    .expect("tokens");
    let serve = Serve::start_on(
        dir.path(),
        "127.0.0.1:0",
        &[
            "--tokens",
            &tokens.to_string_lossy(),
            "--root",
            &root.path().to_string_lossy(),
            "--operator",
            "ops",
        ],
        &[],
    );
    let client = |token: &str| {
        let mut c = serve.client();
        c.token = Some(token.to_owned());
        c.initialize();
        c
    };
    let mut alice = client("alice-token-0123456789");
    // A failing call whose message quotes its argument.
    let failed = alice.call("files_list", json!({"path": "alice-private-folder"}));
    assert_eq!(failed["isError"], true, "{failed}");
    let errors = |token: &str| -> String {
        let bearer = format!("Bearer {token}");
        let status = request(
            serve.addr,
            "GET",
            "/api/status",
            &[("Authorization", &bearer)],
            b"",
        )
        .json();
        status["recent_errors"].to_string()
    };
    assert!(errors("alice-token-0123456789").contains("alice-private-folder"));
    assert!(errors("ops-token-0123456789ab").contains("alice-private-folder"));
    let bobs = errors("bob-token-0123456789ab");
    assert!(!bobs.contains("alice-private-folder"), "{bobs}");
    // core_status answers the same way, for the principal whose call asks.
    let mut bob = client("bob-token-0123456789ab");
    let status = bob.call("core_status", json!({}));
    assert_eq!(status["isError"], Value::Null, "{status}");
    assert!(
        !status.to_string().contains("alice-private-folder"),
        "{status}"
    );
    let status = alice.call("core_status", json!({}));
    assert!(
        status.to_string().contains("alice-private-folder"),
        "{status}"
    );
}
