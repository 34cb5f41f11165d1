//! `--groups dynamic`: a session that starts with the meta tools and the groups it names, and
//! enables and disables the others at run time, telling the client each time its list changes.

use std::time::Duration;

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
            "publishing"
        ]
    );
    // Only the named group's library is mapped.
    assert_eq!(server.mapped_plugins(), ["libcoremcp_publishing.so"]);

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
    assert_eq!(server.tool_names().len(), 3);
    let unknown = server.refused("groups_enable", json!({"groups": ["git", "nope"]}));
    assert!(unknown.contains("unknown group \"nope\""), "{unknown}");
    assert!(
        unknown.contains("publishing"),
        "names the known ones: {unknown}"
    );
    assert_eq!(server.tool_names().len(), 3, "git was not enabled either");
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
    assert!(!server.tool_names().iter().any(|n| n.starts_with("groups_")));
    let answer = server.request(
        "tools/call",
        json!({"name": "groups_list", "arguments": {}}),
    );
    assert!(
        answer.get("error").is_some() || is_error(&answer["result"]),
        "{answer}"
    );
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
