//! The human commands: `tools`, `call`, `plugins`, and their exit codes.

use coremcp_tests::{plugin_status, plugins, run};
use serde_json::Value;

#[test]
fn tools_lists_every_catalog_tool_with_group_route_and_availability() {
    let dir = plugins(&["publishing", "fixture"]);
    let p = dir.path().to_string_lossy().into_owned();
    let (code, stdout, stderr) = run(&["tools", "--json", "--plugins", &p], &[]);
    assert_eq!(code, 0, "{stderr}");
    let rows: Vec<Value> = serde_json::from_str(&stdout).expect("JSON");
    assert_eq!(
        rows.len(),
        107 + 7,
        "the 107 catalog tools plus the fixture's"
    );
    let publishing = rows
        .iter()
        .find(|r| r["name"] == "publishing")
        .expect("publishing");
    assert_eq!(publishing["group"], "publishing");
    assert_eq!(publishing["route"], "local");
    assert_eq!(publishing["available"], true);
    let git = rows
        .iter()
        .find(|r| r["name"] == "git_status")
        .expect("git_status");
    assert_eq!(git["available"], false);
    assert!(git["reason"]
        .as_str()
        .is_some_and(|r| r.contains("not installed")));
    let docs = rows
        .iter()
        .find(|r| r["name"] == "docs_read")
        .expect("docs_read");
    assert_eq!(
        docs["reason"],
        "not in this build: needs the \"docs-read\" feature"
    );

    let (code, table, _) = run(&["tools", "--plugins", &p, "--groups", "publishing"], &[]);
    assert_eq!(code, 0);
    assert!(
        table.lines().any(|l| l.starts_with("publishing")
            && l.contains("local")
            && l.ends_with("available")),
        "{table}"
    );
    assert!(table.contains("1 of 1 tools available"), "{table}");
}

#[test]
fn call_prints_the_result_and_exits_by_outcome() {
    let dir = plugins(&["fixture"]);
    let p = dir.path().to_string_lossy().into_owned();
    let (code, stdout, _) = run(
        &["call", "fixture_echo", r#"{"a": [1, 2]}"#, "--plugins", &p],
        &[],
    );
    assert_eq!(code, 0);
    assert_eq!(
        serde_json::from_str::<Value>(&stdout).expect("JSON"),
        serde_json::json!({"a": [1, 2]})
    );

    let (code, stdout, stderr) = run(&["call", "fixture_panic", "--plugins", &p], &[]);
    assert_eq!(code, 1, "a tool error exits 1");
    assert!(stdout.is_empty());
    assert!(stderr.contains("fixture_panic failed (panic)"), "{stderr}");

    let (code, _, stderr) = run(&["call", "no_such_tool", "--plugins", &p], &[]);
    assert_eq!(code, 2);
    assert!(stderr.contains("unknown tool: no_such_tool"), "{stderr}");

    let (code, _, stderr) = run(&["call", "fixture_echo", "{not json", "--plugins", &p], &[]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("the JSON arguments do not parse"),
        "{stderr}"
    );

    let (code, _, stderr) = run(&["call", "fixture_echo", "[1]", "--plugins", &p], &[]);
    assert_eq!(code, 2);
    assert!(stderr.contains("must be an object"), "{stderr}");

    let (code, _, stderr) = run(
        &[
            "call",
            "fixture_sleep",
            r#"{"ms": "soon"}"#,
            "--plugins",
            &p,
        ],
        &[],
    );
    assert_eq!(code, 1);
    assert!(
        stderr.contains("argument \"ms\": expected an integer, got a string"),
        "{stderr}"
    );
}

#[test]
fn plugins_reports_each_file() {
    let dir = plugins(&["publishing", "fixture"]);
    let publishing = plugin_status(dir.path(), "publishing");
    let cols: Vec<&str> = publishing.split_whitespace().collect();
    assert_eq!(cols, ["publishing", "1.0.0", "1.0.0", "-", "1", "loaded"]);

    let empty = coremcp_tests::TempDir::new("empty");
    let (code, stdout, _) = run(
        &["plugins", "--plugins", &empty.path().to_string_lossy()],
        &[],
    );
    assert_eq!(code, 0);
    assert!(stdout.contains("(no plugin files"), "{stdout}");
}

#[test]
fn bad_flags_are_usage_errors() {
    let (code, _, stderr) = run(&["stdio", "--call-timeout", "0"], &[]);
    assert_eq!(code, 2, "{stderr}");
    let (code, _, stderr) = run(&["stdio", "--groups", "git,dynamic"], &[]);
    assert_eq!(code, 2);
    assert!(stderr.contains("alone or first"), "{stderr}");
    let (code, stdout, _) = run(&["--help"], &[]);
    assert_eq!(code, 0);
    for word in ["stdio", "tools", "call", "plugins", "--plugins", "--groups"] {
        assert!(stdout.contains(word), "help mentions {word}");
    }
}
