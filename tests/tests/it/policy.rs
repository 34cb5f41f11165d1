//! One policy for every call, through the real binary: over HTTP the tools that change this
//! machine are refused unless a grant names the caller, reads are not, `!` takes a tool away
//! even from the stdio client, and a malformed rule stops the start with its number.

use std::time::Duration;

use coremcp_tests::http::Serve;
use coremcp_tests::{is_error, plugins, text, Server, TempDir};
use serde_json::{json, Value};

const WAIT: Duration = Duration::from_secs(20);

fn docs_repo() -> TempDir {
    let dir = TempDir::new("policy-docs");
    std::fs::write(dir.path().join("readme.md"), "# Read me\n").expect("write");
    dir
}

fn write_args(name: &str) -> Value {
    json!({"path": name, "body": "# Written\n", "mode": "create"})
}

fn tokens(dir: &TempDir) -> String {
    coremcp_tests::tokens_file(
        dir,
        &[
            ("ci", "ci-token-0123456789abcdef"),
            ("reader", "reader-token-0123456789ab"),
        ],
    )
}

#[test]
fn over_http_machine_changing_tools_need_a_grant_naming_the_caller() {
    let lib = plugins(&["docs"]);
    let repo = docs_repo();
    let secrets = TempDir::new("policy-tokens");
    let docs = repo.path().to_string_lossy().into_owned();
    let tokens = tokens(&secrets);
    let server = Serve::start_on(
        lib.path(),
        "127.0.0.1:0",
        &[
            "--docs",
            &docs,
            "--tokens",
            &tokens,
            "--grants",
            "ci=docs_write",
        ],
        &[],
    );
    server.wait_stderr("bearer tokens: 2", WAIT);
    let mut reader = server.client();
    reader.token = Some("reader-token-0123456789ab".to_owned());
    reader.initialize();
    // A read is allowed to every principal.
    let read = reader.call("docs_read", json!({"path": "readme.md"}));
    assert!(!is_error(&read), "{read}");
    // A write is refused, naming the grant that would allow it, and nothing is written.
    let refused = reader.call("docs_write", write_args("by-reader.md"));
    assert!(is_error(&refused), "{refused}");
    let why = text(&refused);
    assert!(
        why.contains("docs_write is refused to the token \"reader\"")
            && why.contains("COREMCP_GRANTS=\"reader=docs_write\""),
        "{why}"
    );
    assert!(!repo.path().join("by-reader.md").exists());
    // The granted principal writes.
    let mut ci = server.client();
    ci.token = Some("ci-token-0123456789abcdef".to_owned());
    ci.initialize();
    let written = ci.call("docs_write", write_args("by-ci.md"));
    assert!(!is_error(&written), "{written}");
    assert!(repo.path().join("by-ci.md").exists());
}

#[test]
fn the_stdio_client_may_call_every_built_in_tool_unless_a_rule_takes_it_away() {
    let lib = plugins(&["docs"]);
    let repo = docs_repo();
    let docs = repo.path().to_string_lossy().into_owned();
    let mut server = Server::start(lib.path(), &["--docs", &docs], &[]);
    server.initialize();
    let written = server.call("docs_write", write_args("by-stdio.md"));
    assert!(!is_error(&written), "{written}");

    let mut limited = Server::start(
        lib.path(),
        &["--docs", &docs, "--grants", "stdio=!docs_write"],
        &[],
    );
    limited.initialize();
    // Taken away: not listed, and refused if called anyway.
    assert_eq!(limited.tool_names(), ["docs_read"]);
    let refused = limited.call("docs_write", write_args("taken-away.md"));
    assert!(is_error(&refused), "{refused}");
    assert!(
        text(&refused).contains("by COREMCP_GRANTS rule 1 (\"stdio=!docs_write\")"),
        "{refused}"
    );
    assert!(!repo.path().join("taken-away.md").exists());
    let read = limited.call("docs_read", json!({"path": "readme.md"}));
    assert!(!is_error(&read), "{read}");
}

#[test]
fn a_grant_naming_nothing_known_is_warned_about_at_start() {
    let lib = plugins(&["docs"]);
    let (code, _, stderr) = coremcp_tests::run(
        &[
            "--plugins",
            &lib.path().to_string_lossy(),
            "--grants",
            "ci=git_psh",
            "tools",
        ],
        &[("COREMCP_MCP", "false")],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("COREMCP_GRANTS rule 1 (\"ci=git_psh\") names \"git_psh\"")
            && stderr.contains("check the spelling"),
        "{stderr}"
    );
}

#[test]
fn a_malformed_grant_stops_the_start_naming_the_rule() {
    let lib = plugins(&["docs"]);
    let (code, _, stderr) = coremcp_tests::run(
        &[
            "--plugins",
            &lib.path().to_string_lossy(),
            "--grants",
            "ci=git_push;ci",
            "tools",
        ],
        &[],
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("COREMCP_GRANTS rule 2 (\"ci\"): expected PRINCIPAL=TARGET"),
        "{stderr}"
    );
}

/// A group built outside the catalog, as a third party writes one, is judged from the guards
/// its entries declare, exactly as a built-in group is: over HTTP its machine-changing tool
/// needs a grant, its escalation and its steering argument a grant naming the tool, and a grant
/// naming its tools is no typo to warn about.
#[test]
fn a_group_outside_the_catalog_is_judged_by_the_guards_it_declares() {
    let lib = plugins(&[]);
    let dir = lib.path().to_string_lossy().into_owned();
    let built = coremcp_tests::library("fixture_guarded");
    let (code, _, stderr) = coremcp_tests::run(
        &[
            "plugins",
            "--plugins",
            &dir,
            "install",
            &built.to_string_lossy(),
        ],
        &[],
    );
    assert_eq!(code, 0, "{stderr}");
    let secrets = TempDir::new("policy-guarded-tokens");
    let tokens = secrets.path().join("tokens");
    std::fs::write(
        &tokens,
        "ci ci-token-0123456789abcdef\nops ops-token-0123456789abcd\nreader reader-token-0123456789ab\n",
    )
    .expect("tokens");
    let server = Serve::start_on(
        lib.path(),
        "127.0.0.1:0",
        &[
            "--tokens",
            &tokens.to_string_lossy(),
            "--grants",
            "ci=guarded; ops=guarded_deploy",
        ],
        &[],
    );
    server.wait_stderr("bearer tokens: 3", WAIT);
    let client = |token: &str| {
        let mut c = server.client();
        c.token = Some(token.to_owned());
        c.initialize();
        c
    };
    let (mut reader, mut ci, mut ops) = (
        client("reader-token-0123456789ab"),
        client("ci-token-0123456789abcdef"),
        client("ops-token-0123456789abcd"),
    );
    let allowed = |c: &mut coremcp_tests::http::Client, tool: &str, args: Value| {
        let result = c.call(tool, args.clone());
        assert!(!is_error(&result), "{tool} {args}: {result}");
    };
    let refused = |c: &mut coremcp_tests::http::Client, tool: &str, args: Value, says: &str| {
        let result = c.call(tool, args.clone());
        assert!(is_error(&result), "{tool} {args} was run: {result}");
        assert!(text(&result).contains(says), "{tool} {args}: {result}");
    };
    // No grant: reads only.
    allowed(&mut reader, "guarded_read", json!({}));
    refused(
        &mut reader,
        "guarded_write",
        json!({}),
        "changes this machine",
    );
    refused(
        &mut reader,
        "guarded_deploy",
        json!({}),
        "changes this machine",
    );
    allowed(&mut reader, "guarded_target", json!({}));
    refused(
        &mut reader,
        "guarded_target",
        json!({"url": "http://x"}),
        "steers",
    );
    // The group's grant: its machine-changing tools, not the escalation nor the steering.
    allowed(&mut ci, "guarded_write", json!({}));
    allowed(&mut ci, "guarded_deploy", json!({}));
    refused(
        &mut ci,
        "guarded_deploy",
        json!({"everywhere": true}),
        "names the tool itself",
    );
    refused(
        &mut ci,
        "guarded_target",
        json!({"url": "http://x"}),
        "steers",
    );
    // A grant naming the tool: its escalation too.
    allowed(&mut ops, "guarded_deploy", json!({"everywhere": true}));
    refused(&mut ops, "guarded_write", json!({}), "changes this machine");
    assert!(
        !server.stderr().contains("check the spelling"),
        "{}",
        server.stderr()
    );
}
