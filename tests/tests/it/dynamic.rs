//! `--groups dynamic`: a session that starts with the meta tools and the groups it names, and
//! enables and disables the others at run time, telling the client each time its list changes;
//! `--groups search` and `tools_search`/`tools_call`, through which a client that never lists
//! again reaches every tool, over stdio, a 2025 HTTP session and sessionless 2026 HTTP, the
//! policy judging the inner call exactly as a direct one.

use std::time::Duration;

use coremcp_tests::http::{request, Serve};
use coremcp_tests::{is_error, plugins, text, Server, TempDir};
use serde_json::{json, Value};

const WAIT: Duration = Duration::from_secs(10);

fn start(groups: &str) -> (Server, TempDir, TempDir) {
    let dir = plugins(&["publishing", "files", "git"]);
    let root = TempDir::new("root");
    std::fs::write(root.path().join("a.txt"), "hello").expect("write");
    let mut server = Server::start(
        dir.path(),
        &["--groups", groups, "--root", &root.path().to_string_lossy()],
        &[("COREMCP_PUBLISH_CMD", "echo")],
    );
    let init = server.initialize();
    assert!(
        init["instructions"]
            .as_str()
            .is_some_and(|t| t.contains("groups_enable")),
        "{init}"
    );
    (server, dir, root)
}

/// Whether `list_changed` arrived by the time a later request was answered (the session
/// answers in order, so a notification sent before that answer is already here).
fn list_changed_arrived(server: &mut Server) -> bool {
    server.request("ping", json!({}));
    let before = server.pending.len();
    server
        .pending
        .retain(|m| m["method"] != "notifications/tools/list_changed");
    server.pending.len() != before
}

fn group<'a>(listed: &'a Value, id: &str) -> &'a Value {
    listed["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .find(|g| g["id"] == id)
        .unwrap_or_else(|| panic!("{id} not in {listed}"))
}

#[test]
fn a_dynamic_session_starts_small_and_grows_on_demand() {
    let (mut server, _dir, _root) = start("dynamic,publishing");
    let mut names = server.tool_names();
    names.sort();
    assert_eq!(
        names,
        [
            "groups_disable",
            "groups_enable",
            "groups_list",
            "publishing",
            "tools_call",
            "tools_search"
        ]
    );
    // Nothing is mapped: the named group is listed from its install record.
    assert_eq!(server.mapped_plugins(), Vec::<String>::new());

    let listed = server.ok("groups_list", json!({}));
    assert_eq!(group(&listed, "files")["enabled"], false);
    assert_eq!(group(&listed, "publishing")["enabled"], true);
    assert_eq!(
        group(&listed, "git")["tools"],
        coremcp_catalog::GIT.tools.len()
    );
    assert!(group(&listed, "git")["purpose"].is_string());
    assert_eq!(group(&listed, "seele")["installed"], false);

    // A tool of a group that is not enabled is refused with the way to enable it.
    let refused = server.refused("files_list", json!({}));
    assert!(
        refused.contains(r#"groups_enable with {"groups": ["files"]}"#),
        "{refused}"
    );

    let enabled = server.ok("groups_enable", json!({"groups": ["files"]}));
    assert_eq!(enabled["changed"], true);
    assert_eq!(enabled["enabled"], json!(["files", "publishing"]));
    assert!(enabled["note"]
        .as_str()
        .is_some_and(|n| n.contains("next turn")));
    server.notification("notifications/tools/list_changed", WAIT);
    assert!(server.tool_names().contains(&"files_list".to_owned()));
    let listing = server.call("files_list", json!({}));
    assert!(!is_error(&listing), "{}", text(&listing));
    assert!(text(&listing).contains("a.txt"));

    // Enabling it again changes nothing and says so, without a notification.
    let again = server.ok("groups_enable", json!({"groups": ["files"]}));
    assert_eq!(again["changed"], false);
    assert!(!list_changed_arrived(&mut server));

    let disabled = server.ok("groups_disable", json!({"groups": ["files"]}));
    assert_eq!(disabled["enabled"], json!(["publishing"]));
    server.notification("notifications/tools/list_changed", WAIT);
    assert!(!server.tool_names().contains(&"files_list".to_owned()));
    assert!(server
        .refused("files_list", json!({}))
        .contains("has not enabled"));
}

#[test]
fn bad_meta_calls_name_the_problem_and_change_nothing() {
    let (mut server, _dir, _root) = start("dynamic");
    assert_eq!(server.tool_names().len(), 5);
    let unknown = server.refused("groups_enable", json!({"groups": ["git", "nope"]}));
    assert!(unknown.contains("unknown group \"nope\""), "{unknown}");
    assert!(
        unknown.contains("publishing"),
        "names the known ones: {unknown}"
    );
    assert_eq!(server.tool_names().len(), 5, "git was not enabled either");
    let empty = server.refused("groups_enable", json!({"groups": []}));
    assert!(empty.contains("at least one"), "{empty}");
    let wrong = server.refused("groups_disable", json!({"group": "git"}));
    assert!(wrong.contains("groups_disable"), "{wrong}");
    let extra = server.refused("groups_list", json!({"all": true}));
    assert!(extra.contains("takes no arguments"), "{extra}");
    // A group not installed here is enabled but reported.
    let missing = server.ok("groups_enable", json!({"groups": ["seele"]}));
    assert_eq!(
        missing["load_errors"]["seele"],
        "not installed on this machine"
    );
    assert_eq!(missing["changed"], true);
}

#[test]
fn meta_tools_exist_only_in_dynamic_mode() {
    let dir = plugins(&["publishing"]);
    let mut server = Server::start(dir.path(), &[], &[("COREMCP_PUBLISH_CMD", "echo")]);
    server.initialize();
    assert!(!server
        .tool_names()
        .iter()
        .any(|n| n.starts_with("groups_") || n.starts_with("tools_")));
    for meta in ["groups_list", "tools_search"] {
        let answer = server.request("tools/call", json!({"name": meta, "arguments": {}}));
        assert!(
            answer.get("error").is_some() || is_error(&answer["result"]),
            "{answer}"
        );
    }
}

#[test]
fn a_dynamic_start_names_only_known_groups() {
    let dir = plugins(&["publishing"]);
    let (code, _, stderr) = coremcp_tests::run(
        &[
            "tools",
            "--plugins",
            &dir.path().to_string_lossy(),
            "--groups",
            "dynamic,nope",
        ],
        &[],
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("unknown group \"nope\""), "{stderr}");
}

const ALICE: &str = "alice-token-0123456789";
const BOB: &str = "bob-token-0123456789ab";

/// A tokens file of alice and bob in `dir`.
fn tokens(dir: &TempDir) -> String {
    coremcp_tests::tokens_file(dir, &[("alice", ALICE), ("bob", BOB)])
}

/// A repository with one commit and an untracked file, inside a fresh root.
fn repository() -> TempDir {
    let root = TempDir::new("search-root");
    let git = |args: &[&str]| {
        #[allow(clippy::disallowed_methods)] // Test set-up drives the real git directly.
        let out = std::process::Command::new("git")
            .args(["-c", "user.name=T", "-c", "user.email=t@example.invalid"])
            .args(args)
            .current_dir(root.path())
            .output()
            .expect("git");
        assert!(out.status.success(), "git {args:?}");
    };
    git(&["init", "-q", "-b", "main"]);
    std::fs::write(root.path().join("a.txt"), "hello").expect("write");
    git(&["add", "."]);
    git(&["commit", "-q", "-m", "first"]);
    std::fs::write(root.path().join("new.txt"), "new").expect("write");
    root
}

#[test]
fn a_search_session_reaches_every_tool_through_search_and_call() {
    let dir = plugins(&["publishing", "files", "git"]);
    let root = repository();
    let root_arg = root.path().to_string_lossy().into_owned();
    let mut server = Server::start(
        dir.path(),
        &["--groups", "search", "--root", &root_arg],
        &[],
    );
    let init = server.initialize();
    assert!(
        init["instructions"]
            .as_str()
            .is_some_and(|t| t.contains("tools_search") && !t.contains("groups_enable")),
        "{init}"
    );
    let listing = server.request("tools/list", json!({}));
    let mut names = server.tool_names();
    names.sort();
    assert_eq!(names, ["tools_call", "tools_search"]);
    let start = listing["result"].to_string().chars().count();
    assert!(start < 4_000, "the start list is {start} characters");
    // Nothing is loaded to start with.
    assert_eq!(server.mapped_plugins(), Vec::<String>::new());

    let found = server.ok(
        "tools_search",
        json!({"query": "git status of the repository"}),
    );
    assert_eq!(found["tools"][0]["name"], "git_status", "{found}");
    assert!(
        found["tools"][0]["inputSchema"]["properties"].is_object(),
        "{found}"
    );
    let via = server.ok("tools_call", json!({"name": "git_status", "arguments": {}}));
    let mut plain = Server::start(dir.path(), &["--root", &root_arg], &[]);
    plain.initialize();
    let direct = plain.ok("git_status", json!({}));
    assert_eq!(via, direct, "tools_call answers as a direct call does");
    assert!(via.to_string().contains("new.txt"), "{via}");

    // A direct call of a tool the session does not list points to tools_call.
    let refused = server.refused("git_status", json!({}));
    assert!(refused.contains("tools_call"), "{refused}");
    // Bad input names the problem; an unknown tool is what a direct call of it is.
    for (args, says) in [
        (json!({"name": "tools_call", "arguments": {}}), "meta tool"),
        (json!({"name": "git_status", "arguments": [1]}), "object"),
        (json!({"arguments": {}}), "name"),
    ] {
        let err = server.refused("tools_call", args.clone());
        assert!(err.contains(says), "{args}: {err}");
    }
    let unknown = server.request(
        "tools/call",
        json!({"name": "tools_call", "arguments": {"name": "nope_tool"}}),
    );
    let direct_unknown = plain.request("tools/call", json!({"name": "nope_tool", "arguments": {}}));
    assert_eq!(unknown["error"], direct_unknown["error"], "{unknown}");
    let arg_error = server.refused(
        "tools_call",
        json!({"name": "git_log", "arguments": {"max_count": 0}}),
    );
    let direct_error = plain.refused("git_log", json!({"max_count": 0}));
    assert_eq!(arg_error, direct_error);
    let none = server.ok("tools_search", json!({"query": "kubernetes helm chart"}));
    assert_eq!(none["matches"], 0, "{none}");
}

#[test]
fn tools_call_is_judged_by_the_policy_as_the_direct_call_is() {
    let dir = plugins(&["publishing", "files", "git"]);
    let root = repository();
    let root_arg = root.path().to_string_lossy().into_owned();
    let secrets = TempDir::new("search-tokens");
    let tokens = tokens(&secrets);
    let serve_with = |groups: &str| {
        Serve::start_on(
            dir.path(),
            "127.0.0.1:0",
            &[
                "--groups",
                groups,
                "--root",
                &root_arg,
                "--tokens",
                &tokens,
                "--grants",
                "alice=git;bob=files",
            ],
            &[],
        )
    };
    let search = serve_with("search");
    let plain = serve_with("all");
    let client = |serve: &Serve, token: &str| {
        let mut client = serve.client();
        client.token = Some(token.to_owned());
        client.initialize();
        client
    };
    // git_add changes the machine: over HTTP only a grant allows it.
    let args = json!({"paths": ["new.txt"]});
    let mut bob = client(&search, BOB);
    let through = bob.call("tools_call", json!({"name": "git_add", "arguments": args}));
    let mut bob_plain = client(&plain, BOB);
    let direct = bob_plain.call("git_add", args.clone());
    assert!(
        is_error(&through) && is_error(&direct),
        "{through} {direct}"
    );
    assert_eq!(
        text(&through),
        text(&direct),
        "the same refusal, naming git_add"
    );
    assert!(text(&through).contains("git_add"), "{through}");
    let mut alice = client(&search, ALICE);
    let added = alice.call("tools_call", json!({"name": "git_add", "arguments": args}));
    assert!(!is_error(&added), "{added}");
    // Search offers only what the caller may call: git_add to alice, not to bob (who still
    // finds git_status, which needs no grant).
    let offered = |client: &mut coremcp_tests::http::Client| -> Vec<String> {
        let found = client.call(
            "tools_search",
            json!({"query": "git add status", "limit": 20}),
        );
        assert!(!is_error(&found), "{found}");
        found["structuredContent"]["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect()
    };
    let bobs = offered(&mut bob);
    assert!(!bobs.contains(&"git_add".to_owned()), "{bobs:?}");
    assert!(bobs.contains(&"git_status".to_owned()), "{bobs:?}");
    assert!(offered(&mut alice).contains(&"git_add".to_owned()));
}

#[test]
fn a_sessionless_2026_client_gets_the_meta_tools_and_calls_through_them() {
    let dir = plugins(&["publishing", "files", "git"]);
    let root = repository();
    let root_arg = root.path().to_string_lossy().into_owned();
    let serve = Serve::start(dir.path(), &["--groups", "dynamic", "--root", &root_arg]);
    let post = |id: u64, method: &str, name: Option<&str>, params: Value| {
        let mut params = params;
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "coremcp-tests", "version": "0"}
        });
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let mut headers = vec![
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", method),
        ];
        if let Some(name) = name {
            headers.push(("Mcp-Name", name));
        }
        let answer = request(
            serve.addr,
            "POST",
            "/mcp",
            &headers,
            body.to_string().as_bytes(),
        );
        assert_eq!(answer.status, 200, "{}", answer.text());
        answer.json()
    };
    let listed = post(1, "tools/list", None, json!({}));
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    for meta in ["groups_list", "groups_enable", "tools_search", "tools_call"] {
        assert!(names.contains(&meta), "{meta} not in {names:?}");
    }
    let call = |id: u64, tool: &str, arguments: Value| {
        post(
            id,
            "tools/call",
            Some(tool),
            json!({"name": tool, "arguments": arguments}),
        )
    };
    let enable = call(2, "groups_enable", json!({"groups": ["git"]}));
    assert_eq!(enable["result"]["isError"], true, "{enable}");
    let says = enable["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        says.contains("needs a session") && says.contains("tools_call"),
        "{says}"
    );
    let found = call(3, "tools_search", json!({"query": "git status"}));
    assert_eq!(
        found["result"]["structuredContent"]["tools"][0]["name"], "git_status",
        "{found}"
    );
    let status = call(
        4,
        "tools_call",
        json!({"name": "git_status", "arguments": {}}),
    );
    assert!(status["result"].get("isError").is_none(), "{status}");
    assert!(status.to_string().contains("new.txt"), "{status}");
}
