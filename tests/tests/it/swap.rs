//! Swapping a group on an installed, running host without rebuilding or restarting it:
//! `coremcp plugins install` puts the new build in place safely, SIGHUP reloads, the client hears
//! `list_changed`, and an incompatible file dropped in is refused while the old copy serves on.

use std::path::{Path, PathBuf};
use std::time::Duration;

use coremcp_tests::{coremcp, library, run_program, Server, TempDir, WAIT};
use serde_json::json;

/// An install laid out like `dist/<profile>`: `bin/coremcp` and an empty `plugins/`.
fn install() -> (TempDir, PathBuf) {
    let dir = TempDir::new("install");
    std::fs::create_dir_all(dir.path().join("bin")).expect("bin");
    std::fs::create_dir_all(dir.path().join("plugins")).expect("plugins");
    let bin = dir.path().join("bin/coremcp");
    std::fs::copy(coremcp(), &bin).expect("copy coremcp");
    (dir, bin)
}

/// The swap group's tools in the listing (the catalog's document tools are listed too).
fn swap_tools(server: &mut Server) -> Vec<String> {
    let mut names = server.tool_names();
    names.retain(|n| n.starts_with("swap_"));
    names
}

fn install_plugin(bin: &Path, file: &Path) -> (i32, String, String) {
    run_program(bin, &["plugins", "install", &file.to_string_lossy()], &[])
}

#[test]
fn a_sighup_before_the_first_message_reloads_at_once() {
    let (_dir, bin) = install();
    let (code, _, err) = install_plugin(&bin, &library("fixture_swap_v1"));
    assert_eq!(code, 0, "{err}");
    let mut server = Server::start_program(&bin, &[], &[]);
    // Logged once SIGHUP is blocked: the signal waits, pending, for the thread that takes it,
    // which runs from the start, before any message.
    server.wait_stderr("coremcp stdio ready", WAIT);
    server.signal(libc::SIGHUP);
    server.wait_stderr("reload: no plugin changed", WAIT);
    server.initialize();
    assert_eq!(
        server.call("swap_hello", json!({}))["structuredContent"],
        json!({"version": 1})
    );
}

#[test]
fn a_sighup_after_the_listing_and_before_any_call_reloads_at_once() {
    let (_dir, bin) = install();
    let (code, _, err) = install_plugin(&bin, &library("fixture_swap_v1"));
    assert_eq!(code, 0, "{err}");
    let mut server = Server::start_program(&bin, &[], &[]);
    server.initialize();
    assert_eq!(swap_tools(&mut server), ["swap_hello", "swap_wait"]);
    let (code, _, err) = install_plugin(&bin, &library("fixture_swap_v2"));
    assert_eq!(code, 0, "{err}");
    // No call yet: the thread that serves reads the session's opening, waiting for the next
    // message, and the signal ends that wait.
    server.signal(libc::SIGHUP);
    server.notification("notifications/tools/list_changed", WAIT);
    assert_eq!(
        server.call("swap_hello", json!({}))["structuredContent"],
        json!({"version": 2})
    );
}

#[test]
fn a_group_is_swapped_on_a_running_host() {
    let (dir, bin) = install();
    let host_bytes = std::fs::read(&bin).expect("read host");

    let (code, out, err) = install_plugin(&bin, &library("fixture_swap_v1"));
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("installed swap 1.0.0"), "{out}");
    assert!(
        dir.path().join("plugins/libcoremcp_swap.so").exists(),
        "found beside the install root"
    );

    let mut server = Server::start_program(&bin, &[], &[]);
    server.initialize();
    assert_eq!(
        server.call("swap_hello", json!({}))["structuredContent"],
        json!({"version": 1})
    );
    assert_eq!(swap_tools(&mut server), ["swap_hello", "swap_wait"]);

    let (code, out, err) = install_plugin(&bin, &library("fixture_swap_v2"));
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("installed swap 2.0.0"), "{out}");
    // Installed, not yet reloaded: the running host still serves version 1.
    assert_eq!(
        server.call("swap_hello", json!({}))["structuredContent"],
        json!({"version": 1})
    );

    // A call running across the reload finishes on the copy it started on.
    server.send(
        &json!({"jsonrpc": "2.0", "id": "running", "method": "tools/call",
                        "params": {"name": "swap_wait", "arguments": {"ms": 1500}}}),
    );
    std::thread::sleep(Duration::from_millis(200));
    server.signal(libc::SIGHUP);
    server.notification("notifications/tools/list_changed", WAIT);
    assert_eq!(
        server.call("swap_hello", json!({}))["structuredContent"],
        json!({"version": 2})
    );
    let running = server.answer(&json!("running"), WAIT);
    assert_eq!(
        running["result"]["structuredContent"],
        json!({"version": 1}),
        "{running}"
    );
    assert_eq!(
        server.call("swap_added", json!({}))["structuredContent"],
        json!({"added_in": 2})
    );
    assert_eq!(
        swap_tools(&mut server),
        ["swap_hello", "swap_wait", "swap_added"]
    );
    assert_eq!(
        std::fs::read(&bin).expect("read host"),
        host_bytes,
        "the host binary is untouched"
    );

    // A reload with nothing changed says so and notifies nobody.
    server.signal(libc::SIGHUP);
    server.wait_stderr("reload: no plugin changed", WAIT);

    // An incompatible build cannot be installed…
    let incompatible = library("fixture_incompatible");
    let (code, _, err) = install_plugin(&bin, &incompatible);
    assert_eq!(code, 2);
    assert!(
        err.contains("not installed") && err.contains("plugin API 2.0.0"),
        "{err}"
    );
    // …and one dropped into the folder by hand is refused at reload, in one line (its bytes are
    // not the installed ones), while the previous copy keeps serving.
    let target = dir.path().join("plugins/libcoremcp_swap.so");
    let staged = dir.path().join("plugins/.staged");
    std::fs::copy(&incompatible, &staged).expect("copy");
    std::fs::rename(&staged, &target).expect("rename");
    server.signal(libc::SIGHUP);
    let stderr = server.wait_stderr("reload refused the new plugin file", WAIT);
    let refusals: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("reload refused"))
        .collect();
    assert_eq!(refusals.len(), 1, "{refusals:?}");
    assert!(
        refusals[0].contains("changed since it was installed"),
        "{}",
        refusals[0]
    );
    assert_eq!(
        server.call("swap_hello", json!({}))["structuredContent"],
        json!({"version": 2})
    );
    std::thread::sleep(Duration::from_millis(100));
    assert!(
        server
            .pending
            .iter()
            .all(|m| m["method"] != "notifications/tools/list_changed"),
        "a refused reload changes nothing: {:?}",
        server.pending
    );
}
