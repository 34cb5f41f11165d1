//! `bootstrap` against a temporary HOME for each agent client, run twice: the first run writes
//! the client's entry into its real config file (merged into what is there, backed up first),
//! the second changes nothing; a dry run changes nothing at all; a file that cannot be merged
//! is left as it is.

use std::path::{Path, PathBuf};

use coremcp_ops::tools::bootstrap::{host_name, run, secondary_install, Bootstrap, Plan};
use coremcp_plugin_sdk::testing::parse;
use serde_json::{json, Value};

struct Home(PathBuf);

impl Home {
    fn new(label: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("coremcp-bootstrap-{label}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("home");
        Self(dir)
    }
}

impl Drop for Home {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn plan(home: &Path, args: Value) -> Plan {
    Plan {
        home: home.to_owned(),
        exe: PathBuf::from("/opt/coremcp/bin/coremcp"),
        plugins: Some(home.join("plugins")),
        publish: None,
        client_env: coremcp_ops::clients::ClientEnv {
            kept: vec![("COREMCP_ROOTS".into(), "/home/dev".into())],
            left_out: vec![(
                "COREMCP_RELAY_TOKEN".into(),
                "its name says it holds a credential: set it in the client's own environment",
            )],
        },
        args: parse::<Bootstrap>(args).expect("args"),
    }
}

fn no_env(_: &str) -> Option<String> {
    None
}

fn files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn each_client_is_written_once_then_left_alone() {
    for (client, file, marker) in [
        ("claude_code", ".claude.json", "\"mcpServers\""),
        ("codex", ".codex/config.toml", "[mcp_servers.core]"),
        ("vscode", ".config/Code/User/mcp.json", "\"servers\""),
        ("cursor", ".cursor/mcp.json", "\"mcpServers\""),
    ] {
        let home = Home::new(client);
        let path = home.0.join(file);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        let before = if client == "codex" {
            "model = \"o3\"\n".to_owned()
        } else {
            r#"{"keep": {"me": true}}"#.to_owned()
        };
        std::fs::write(&path, &before).expect("existing config");

        let dry = run(
            &plan(&home.0, json!({"client": client, "dry_run": true})),
            &no_env,
        )
        .expect("dry run");
        assert_eq!(dry["client"]["action"], "would_write", "{client}: {dry}");
        assert_eq!(dry["folders"][0]["action"], "would_create", "{dry}");
        assert_eq!(
            std::fs::read_to_string(&path).expect("read"),
            before,
            "{client}: dry run wrote"
        );
        assert!(
            !home.0.join(".config/coremcp").exists(),
            "dry run made a folder"
        );

        let first = run(&plan(&home.0, json!({"client": client})), &no_env).expect("first run");
        assert_eq!(first["changed"], true, "{first}");
        assert_eq!(first["client"]["action"], "written", "{client}: {first}");
        let text = std::fs::read_to_string(&path).expect("read");
        assert!(
            text.contains(marker) && text.contains("/opt/coremcp/bin/coremcp"),
            "{client}: {text}"
        );
        // The README's --groups for each client: dynamic where it lists again, search where it
        // never does, every group otherwise.
        let args = match client {
            "claude_code" => json!(["stdio", "--groups", "dynamic"]),
            "codex" => json!(["stdio", "--groups", "search"]),
            _ => json!(["stdio"]),
        };
        assert_eq!(first["client"]["args"], args, "{client}: {first}");
        if client == "codex" {
            assert!(text.starts_with("model = \"o3\"\n"), "{text}");
            // Codex hands its stdio servers no environment: the entry carries the settings.
            assert!(
                text.contains("[mcp_servers.core.env]\nCOREMCP_ROOTS = \"/home/dev\""),
                "{text}"
            );
            assert_eq!(first["client"]["env"], json!(["COREMCP_ROOTS"]), "{first}");
            // What it left out is named with why, never with its value.
            assert_eq!(
                first["client"]["left_out"][0]["name"],
                "COREMCP_RELAY_TOKEN"
            );
            assert!(!text.contains("RELAY_TOKEN"), "{text}");
        } else {
            assert!(!text.contains("COREMCP_ROOTS"), "{client}: {text}");
            let doc: Value = serde_json::from_str(&text).expect("json");
            assert_eq!(doc["keep"]["me"], true, "{client}: lost a key: {text}");
        }
        let backup = first["client"]["backup"].as_str().expect("backup path");
        assert_eq!(std::fs::read_to_string(backup).expect("backup"), before);
        assert!(home.0.join(".config/coremcp").is_dir() && home.0.join("plugins").is_dir());

        let second = run(&plan(&home.0, json!({"client": client})), &no_env).expect("second run");
        assert_eq!(second["changed"], false, "{client}: {second}");
        assert_eq!(second["client"]["action"], "unchanged", "{second}");
        assert_eq!(std::fs::read_to_string(&path).expect("read"), text);
        let backups = files(path.parent().expect("dir"))
            .into_iter()
            .filter(|n| n.contains(".coremcp-backup-"))
            .count();
        assert_eq!(backups, 1, "{client}: a second run made another backup");
    }
}

#[test]
fn a_new_file_gets_no_backup_and_the_entry_runs_stdio_with_every_group() {
    let home = Home::new("fresh");
    let out = run(
        &plan(&home.0, json!({"client": "cursor", "profile": "secondary"})),
        &no_env,
    )
    .expect("run");
    assert_eq!(out["client"]["action"], "written");
    assert!(out["client"].get("backup").is_none(), "{out}");
    let doc: Value = serde_json::from_str(
        &std::fs::read_to_string(home.0.join(".cursor/mcp.json")).expect("read"),
    )
    .expect("json");
    // The secondary profile is a build of its own, never a --groups list hiding tools.
    assert_eq!(doc["mcpServers"]["core"]["args"], json!(["stdio"]), "{doc}");
    let checks: Vec<&str> = out["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .map(|c| c["name"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(checks, ["git", "pwsh", "docker", "publishing"]);
    assert_eq!(
        out["checks"][0]["found"], true,
        "git is installed here: {out}"
    );
    assert!(out["checks"][0]["version"]
        .as_str()
        .unwrap_or_default()
        .starts_with("git version"));
}

#[test]
fn a_file_that_cannot_be_merged_is_left_as_it_is() {
    let home = Home::new("jsonc");
    let path = home.0.join(".config/Code/User/mcp.json");
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    let jsonc = "{\n  // my servers\n  \"servers\": {}\n}\n";
    std::fs::write(&path, jsonc).expect("write");
    let err = run(&plan(&home.0, json!({"client": "vscode"})), &no_env).expect_err("refused");
    assert!(
        err.message.contains("not plain JSON") && err.message.contains("left as it is"),
        "{}",
        err.message
    );
    assert_eq!(std::fs::read_to_string(&path).expect("read"), jsonc);
    assert_eq!(files(path.parent().expect("dir")), ["mcp.json"]);
}

#[test]
fn client_paths_follow_the_clients_own_variables() {
    let home = Home::new("vars");
    let codex = home.0.join("codex-home");
    let env = |name: &str| (name == "CODEX_HOME").then(|| codex.display().to_string());
    run(&plan(&home.0, json!({"client": "codex"})), &env).expect("run");
    assert!(codex.join("config.toml").is_file());
    assert_eq!(host_name("Dev_Box-1.example.org\n"), "dev-box-1");
    assert_eq!(host_name("..."), "localhost");
}

#[test]
fn the_secondary_profile_runs_the_secondary_build() {
    let dist = Home::new("dist");
    let full = dist.0.join("full/bin/coremcp");
    let secondary = dist.0.join("secondary/bin/coremcp");
    std::fs::create_dir_all(full.parent().expect("bin")).expect("mkdir");
    std::fs::write(&full, "").expect("full");
    // None beside it: refused, saying how to lay one out.
    let err = secondary_install(&full).expect_err("no secondary build");
    assert!(
        err.message.contains("scripts/build --profile secondary")
            && err.message.contains("Nothing was changed"),
        "{}",
        err.message
    );
    std::fs::create_dir_all(secondary.parent().expect("bin")).expect("mkdir");
    std::fs::write(&secondary, "").expect("secondary");
    assert_eq!(secondary_install(&full).expect("beside"), secondary);
    // Run from the secondary build itself: that one.
    assert_eq!(secondary_install(&secondary).expect("itself"), secondary);
}

/// A user who chose their own `COREMCP_GROUPS` keeps it: no `--groups` is written over it.
#[test]
fn a_users_own_groups_are_kept() {
    let home = Home::new("own-groups");
    let env = |name: &str| (name == "COREMCP_GROUPS").then(|| "all".to_owned());
    let out = run(&plan(&home.0, json!({"client": "claude_code"})), &env).expect("run");
    assert_eq!(out["client"]["args"], json!(["stdio"]), "{out}");
}
