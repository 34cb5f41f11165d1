//! The Publishing group against real child processes: a fake publishing CLI written as a shell
//! script (the real CLI is configured per site; the contract is argv in, JSON out).

use std::time::{Duration, Instant};

use coremcp_tests::{is_error, plugins, text, Server, TempDir};
use serde_json::json;

/// A CLI that prints its argv (and selected env) as JSON, or misbehaves on request.
const CLI: &str = r#"#!/bin/sh
case "$1" in
  fail) echo "partial output"; echo "boom: no such release" >&2; exit 3 ;;
  text) echo "this is not json"; exit 0 ;;
  slow) sleep 10; echo '{}' ;;
  env) printf '{"token":"%s","path_set":%s}\n' "${FAKE_API_TOKEN:-}" "$([ -n "$PATH" ] && echo true || echo false)"; exit 0 ;;
  stdin) printf '{"stdin":"%s","cwd":"%s"}\n' "$(cat)" "$PWD"; exit 0 ;;
esac
printf '{"argv":['
sep=""
for a in "$@"; do printf '%s"%s"' "$sep" "$a"; sep=","; done
printf ']}\n'
"#;

/// The host, with the CLI's own folder as its only root.
fn server(cli: &std::path::Path) -> (TempDir, Server) {
    let dir = plugins(&["publishing"]);
    let cmd = cli.to_string_lossy().into_owned();
    // (A CLI that does not exist has no folder to be a root: then the temp folder.)
    let root = cli
        .parent()
        .filter(|dir| dir.is_dir())
        .map_or_else(std::env::temp_dir, std::path::Path::to_path_buf)
        .to_string_lossy()
        .into_owned();
    let mut server = Server::start(
        dir.path(),
        &["--root", &root],
        &[
            ("COREMCP_PUBLISH_CMD", cmd.as_str()),
            ("FAKE_API_TOKEN", "s3cret"),
        ],
    );
    server.initialize();
    (dir, server)
}

#[test]
fn arguments_pass_unchanged_and_json_comes_back_structured() {
    let bin = TempDir::new("cli");
    let cli = bin.script("publish", CLI);
    let (_dir, mut server) = server(&cli);
    let args = json!(["release", "--dry-run", "a b", "$HOME", "*", "; rm -rf /"]);
    let result = server.call("publishing", json!({"args": args}));
    assert!(!is_error(&result), "{result}");
    assert_eq!(result["structuredContent"]["argv"], args);
}

#[test]
fn failures_carry_an_excerpt_of_what_the_cli_said() {
    let bin = TempDir::new("cli");
    let cli = bin.script("publish", CLI);
    let (_dir, mut server) = server(&cli);
    let result = server.call("publishing", json!({"args": ["fail"]}));
    assert!(is_error(&result));
    assert!(text(&result).contains("exited with status 3"), "{result}");
    assert!(
        text(&result).contains("boom: no such release") && text(&result).contains("partial output")
    );

    let result = server.call("publishing", json!({"args": ["text"]}));
    assert!(is_error(&result));
    assert!(
        text(&result).contains("not JSON") && text(&result).contains("this is not json"),
        "{result}"
    );

    let started = Instant::now();
    let result = server.call("publishing", json!({"args": ["slow"], "timeout_s": 1}));
    assert!(is_error(&result));
    assert!(
        text(&result).contains("did not finish within 1 s"),
        "{result}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));

    let result = server.call("publishing", json!({"args": "not-a-list"}));
    assert!(
        text(&result).contains("argument \"args\": expected an array"),
        "{result}"
    );
    let result = server.call("publishing", json!({"args": [], "bogus": 1}));
    assert!(
        text(&result).contains("unknown argument \"bogus\""),
        "{result}"
    );
}

#[test]
fn a_missing_or_unset_cli_is_a_clear_error() {
    let (_dir, mut server) = server(std::path::Path::new("/nonexistent/publish-cli"));
    let result = server.call("publishing", json!({"args": ["x"]}));
    assert!(is_error(&result));
    assert!(
        text(&result).contains("/nonexistent/publish-cli: command not found"),
        "{result}"
    );

    let dir = plugins(&["publishing"]);
    let mut server = Server::start(dir.path(), &[], &[("COREMCP_PUBLISH_CMD", "")]);
    server.initialize();
    let result = server.call("publishing", json!({"args": []}));
    assert!(
        text(&result).contains("set COREMCP_PUBLISH_CMD"),
        "{result}"
    );
}

#[test]
fn the_cli_gets_a_scrubbed_environment_stdin_and_cwd() {
    let bin = TempDir::new("cli");
    let cli = bin.script("publish", CLI);
    let (_dir, mut server) = server(&cli);
    let result = server.call("publishing", json!({"args": ["env"]}));
    assert_eq!(
        result["structuredContent"],
        json!({"token": "", "path_set": true}),
        "credentials scrubbed"
    );
    let cwd = bin.path().to_string_lossy().into_owned();
    let result = server.call(
        "publishing",
        json!({"args": ["stdin"], "stdin": "hello", "cwd": cwd}),
    );
    assert_eq!(
        result["structuredContent"],
        json!({"stdin": "hello", "cwd": cwd})
    );
}

#[test]
fn the_cli_runs_only_in_a_folder_inside_the_roots() {
    let bin = TempDir::new("cli");
    let cli = bin.script("publish", CLI);
    std::fs::create_dir_all(bin.path().join("site")).expect("mkdir");
    let (_dir, mut server) = server(&cli);
    let root = bin.path().canonicalize().expect("canonical");
    let at = |server: &mut Server, cwd: Option<&str>| {
        let mut args = json!({"args": ["stdin"], "stdin": ""});
        if let Some(cwd) = cwd {
            args["cwd"] = json!(cwd);
        }
        server.call("publishing", args)
    };
    let result = at(&mut server, None);
    assert_eq!(
        result["structuredContent"]["cwd"],
        root.to_string_lossy().as_ref(),
        "the first root by default: {result}"
    );
    let result = at(&mut server, Some("site"));
    assert_eq!(
        result["structuredContent"]["cwd"],
        root.join("site").to_string_lossy().as_ref()
    );
    for (cwd, needle) in [
        ("/etc", "an absolute path outside the roots"),
        ("../", "\"..\" is not allowed"),
        ("site/../..", "\"..\" is not allowed"),
        ("publish", "not a folder"),
        ("missing", "missing"),
    ] {
        let result = at(&mut server, Some(cwd));
        assert!(is_error(&result), "{cwd}: {result}");
        assert!(
            text(&result).contains("argument \"cwd\"") && text(&result).contains(needle),
            "{cwd}: {result}"
        );
    }
}
