//! Upstream MCP server configuration (DESIGN §6) as the binary reads it: `mcp.json` named by
//! `COREMCP_MCP_CONFIG` merged with `COREMCP_MCP_SERVERS`, refused at start with the entry
//! named, reported in `/api/status`. (Connecting to the servers is not in this build yet.)

use coremcp_tests::{plugins, run, TempDir};
use serde_json::json;

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
            {"id": "everything", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"]},
            {"id": "web", "type": "http", "url": "http://127.0.0.1:9/mcp", "enabled": false}
        ]}"#,
    )
    .expect("write");
    let file = file.to_string_lossy().into_owned();
    let plugins = plugins(&["fixture"]);
    let serve = coremcp_tests::http::Serve::start_on(
        plugins.path(),
        "127.0.0.1:0",
        &[],
        &[
            ("COREMCP_MCP_CONFIG", &file),
            ("COREMCP_MCP_SERVERS", "time=uvx mcp-server-time"),
        ],
    );
    let status = coremcp_tests::http::request(serve.addr, "GET", "/api/status", &[], b"").json();
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
    assert_eq!(
        summary,
        [
            ("everything".into(), "stdio".into(), "not_connected".into()),
            ("web".into(), "http".into(), "disabled".into()),
            ("time".into(), "stdio".into(), "not_connected".into()),
        ],
        "{}",
        json!(upstream)
    );
}
