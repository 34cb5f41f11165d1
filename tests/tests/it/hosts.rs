//! The host's view of the Registry: `coremcp hosts` lists exactly the enabled Registry hosts
//! with a Core MCP address (the `remote_host` targets), read through the Registry plugin from
//! the same store an agent writes with `registry_host_add`, on SQLite and on PostgreSQL.

use coremcp_tests::stores::on_both;
use coremcp_tests::{plugins, run};
use serde_json::{json, Value};

fn hosts_json(dir: &str, store_args: &[&str]) -> Value {
    let mut args = vec!["hosts", "--json", "--plugins", dir];
    args.extend_from_slice(store_args);
    let (code, stdout, stderr) = run(&args, &[]);
    assert_eq!(code, 0, "coremcp hosts: {stderr}");
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

#[test]
fn hosts_lists_the_forwarding_targets_the_registry_holds() {
    let dir = plugins(&["registry"]);
    let plugins_dir = dir.path().to_string_lossy().into_owned();
    on_both("hosts", |env| {
        env.with_args(|args| {
            assert_eq!(hosts_json(&plugins_dir, args), json!({"hosts": []}));
            let mut server = env.start(dir.path(), &[]);
            for (name, url) in [
                ("relay-b", Some("http://127.0.0.3:7070/mcp")),
                ("relay-a", Some("http://127.0.0.2:7070/mcp")),
                ("laptop", None),
            ] {
                let mut host = json!({"name": name, "address": "127.0.0.1"});
                if let Some(url) = url {
                    host["core_mcp_url"] = json!(url);
                }
                server.ok("registry_host_add", host);
            }
            assert_eq!(
                hosts_json(&plugins_dir, args),
                json!({"hosts": [
                    {"name": "relay-a", "core_mcp_url": "http://127.0.0.2:7070/mcp", "peer": false},
                    {"name": "relay-b", "core_mcp_url": "http://127.0.0.3:7070/mcp", "peer": false},
                ]})
            );
            // Disabling a host, or clearing its address, takes it out of the targets.
            server.ok(
                "registry_host_update",
                json!({"name": "relay-a", "enabled": false}),
            );
            server.ok(
                "registry_host_update",
                json!({"name": "relay-b", "core_mcp_url": ""}),
            );
            assert_eq!(hosts_json(&plugins_dir, args), json!({"hosts": []}));
            server.ok(
                "registry_host_update",
                json!({"name": "laptop", "core_mcp_url": "https://laptop.example:7443/mcp"}),
            );
            let mut list = vec!["hosts", "--plugins", plugins_dir.as_str()];
            list.extend_from_slice(args);
            let (code, stdout, stderr) = run(&list, &[]);
            assert_eq!(code, 0, "{stderr}");
            assert_eq!(
                stdout.trim(),
                "laptop  https://laptop.example:7443/mcp  (no token (not a --peer))"
            );
            // A host the operator allowed is sent the relay token; the listing says so.
            list.extend_from_slice(&["--peer", "https://laptop.example:7443"]);
            let (code, stdout, stderr) = run(&list, &[]);
            assert_eq!(code, 0, "{stderr}");
            assert_eq!(
                stdout.trim(),
                "laptop  https://laptop.example:7443/mcp  (peer: sent the relay token)"
            );
        });
    });
}

#[test]
fn hosts_without_the_registry_says_why() {
    let dir = plugins(&["git"]);
    let plugins_dir = dir.path().to_string_lossy().into_owned();
    // Not selected: a usage error.
    let (code, _, stderr) = run(
        &["hosts", "--plugins", &plugins_dir, "--groups", "git"],
        &[],
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("registry group is not part of this session"),
        "{stderr}"
    );
    // Selected but not installed: the loader's reason.
    let (code, _, stderr) = run(&["hosts", "--plugins", &plugins_dir], &[]);
    assert_eq!(code, 3, "{stderr}");
    assert!(
        stderr.contains("the registry group is not installed"),
        "{stderr}"
    );
}
