//! The Ops group through the real binary: `session_record` on both stores, auto-detecting
//! Claude Code's transcript, and through a relay (`coremcp serve --service`); `core_status`
//! against `/api/status`; `bootstrap` writing a client's config and registering this machine,
//! then `repo_setup` cloning a Registry source and recording the checkout; `shell_run`; and
//! `stale_containers_find` across a live and a dead Docker host.

use std::path::Path;
use std::time::{Duration, Instant};

use coremcp_ops::transcript::{claude_fixture, claude_project_dir};
use coremcp_tests::docker::{daemon, Cleanup};
use coremcp_tests::http::{request, Serve};
use coremcp_tests::stores::on_both;
use coremcp_tests::{plugins, text, Server, TempDir};
use serde_json::{json, Value};

const SESSION: &str = "0b0e2c3a-7d7e-4a55-9c53-1b2f1f0a9e11";

fn arg(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

#[test]
fn a_transcript_is_recorded_once_and_read_back_whole_on_both_stores() {
    let dir = plugins(&["ops", "session"]);
    on_both("ops-record", |env| {
        let root = TempDir::new("record-root");
        let transcript = claude_fixture(SESSION, "/work/demo", 4);
        let file = root.path().join("session.jsonl");
        std::fs::write(&file, &transcript).expect("transcript");
        let root_arg = arg(root.path());
        let mut s = env.start(dir.path(), &["--root", &root_arg]);
        let args = json!({"transcript_path": "session.jsonl", "title": "demo run",
                          "summary": "fixed the build", "tags": ["ci"], "project": "CORE"});
        let first = s.ok("session_record", args.clone());
        assert_eq!(first["recorded"], true, "{first}");
        assert_eq!(first["created_session"], true, "{first}");
        assert_eq!(first["session_id"], SESSION);
        assert_eq!(first["stored_by"], "this_process", "{first}");
        assert_eq!(first["size_bytes"], transcript.len());
        assert_eq!(first["stats"]["turns"], 4);
        assert_eq!(first["stats"]["tool_calls"], 4);
        assert_eq!(first["stats"]["client"], "claude_code");
        let packed = first["packed_chars"].as_u64().expect("packed_chars");
        assert!(
            packed < transcript.len() as u64,
            "{packed} packed chars: not compressed"
        );

        let again = s.ok("session_record", args);
        assert_eq!(again["recorded"], false, "{again}");
        assert_eq!(again["recording_id"], first["recording_id"]);

        let listed = s.ok("session_list_recorded", json!({"query": "demo run"}));
        let items = listed["items"].as_array().expect("items");
        assert_eq!(items.len(), 1, "one recording, not two: {listed}");
        assert_eq!(items[0]["recording_id"], first["recording_id"]);
        assert_eq!(items[0]["agent"], "claude-code");
        assert_eq!(items[0]["stats"]["turns"], 4);

        let got = s.ok(
            "session_get",
            json!({"session_id": SESSION, "include_recording": true, "max_chars": 1_000_000}),
        );
        assert_eq!(got["status"], "closed", "a closed session row: {got}");
        assert_eq!(got["cwd"], "/work/demo");
        let recording = &got["recording"];
        assert_eq!(recording["size_bytes"], transcript.len());
        let shown = recording["transcript"].as_str().expect("transcript");
        assert!(
            transcript.starts_with(shown) && shown.len() > 1000,
            "the transcript comes back as text: {}",
            &shown[..shown.len().min(200)]
        );

        let err = s.refused("session_record", json!({"transcript_path": "/etc/passwd"}));
        assert!(
            err.contains("transcript_path") && err.contains("outside"),
            "{err}"
        );
        std::fs::write(root.path().join("notes.txt"), "no ids here\n").expect("notes");
        let err = s.refused("session_record", json!({"transcript_path": "notes.txt"}));
        assert!(err.contains("session_id"), "{err}");
    });
}

#[test]
fn the_current_claude_code_session_is_found_without_a_path() {
    let dir = plugins(&["ops", "session"]);
    let (home, root, data) = (
        TempDir::new("record-home"),
        TempDir::new("record-cwd"),
        TempDir::new("record-data"),
    );
    let canonical = root.path().canonicalize().expect("canonical");
    let folder = claude_project_dir(home.path(), &canonical);
    std::fs::create_dir_all(&folder).expect("mkdir");
    let id = "5d2b0f0e-1c0a-4f5e-8a8e-0c9b5b1f2a3c";
    std::fs::write(
        folder.join(format!("{id}.jsonl")),
        claude_fixture(id, &arg(&canonical), 2),
    )
    .expect("transcript");
    let (root_arg, data_arg, home_arg) = (arg(&canonical), arg(data.path()), arg(home.path()));
    let mut s = Server::start(
        dir.path(),
        &["--root", &root_arg, "--data", &data_arg],
        &[("HOME", &home_arg)],
    );
    s.initialize();
    let out = s.ok("session_record", json!({}));
    assert_eq!(out["session_id"], id, "{out}");
    assert_eq!(out["stats"]["turns"], 2);
    assert!(out["transcript_path"]
        .as_str()
        .is_some_and(|p| p.ends_with(&format!("{id}.jsonl"))));

    std::fs::remove_dir_all(&folder).expect("remove");
    let err = s.refused("session_record", json!({}));
    assert!(
        err.contains("no transcript of this session") && err.contains(".claude/projects"),
        "{err}"
    );
}

#[test]
fn through_a_relay_the_write_is_stored_by_the_service() {
    let (service_dir, agent_dir) = (plugins(&["session"]), plugins(&["ops", "session"]));
    let (relay_data, agent_data, root) = (
        TempDir::new("relay-store"),
        TempDir::new("agent-store"),
        TempDir::new("relay-root"),
    );
    let relay = Serve::start(
        service_dir.path(),
        &["--service", "--data", &arg(relay_data.path())],
    );
    let url = format!("http://{}/mcp", relay.addr);
    let transcript = claude_fixture(SESSION, "/work/relayed", 3);
    std::fs::write(root.path().join("t.jsonl"), &transcript).expect("transcript");
    let mut agent = Server::start(
        agent_dir.path(),
        &[
            "--root",
            &arg(root.path()),
            "--data",
            &arg(agent_data.path()),
            "--relay",
            &url,
        ],
        &[],
    );
    agent.initialize();
    let out = agent.ok(
        "session_record",
        json!({"transcript_path": "t.jsonl", "title": "relayed"}),
    );
    assert_eq!(
        (out["recorded"].clone(), out["stored_by"].clone()),
        (json!(true), json!("relay")),
        "{out}"
    );
    // The relay's store holds it; the agent's own store was never opened for it.
    let listed = agent.ok("session_list_recorded", json!({"query": "relayed"}));
    assert_eq!(
        listed["items"][0]["recording_id"], out["recording_id"],
        "{listed}"
    );
    assert!(
        !agent_data.path().join("nervhq.sqlite3").exists(),
        "the agent wrote to its own store"
    );
    let again = agent.ok("session_record", json!({"transcript_path": "t.jsonl"}));
    assert_eq!(again["recorded"], false, "{again}");

    // The service checks what it is sent: a hash that is not the transcript's is refused.
    let mut client = relay.client();
    client.initialize();
    let packed = |text: &str| {
        let p = coremcp_recording::pack(text).expect("pack");
        json!({"session_id": SESSION, "format": "jsonl", "transcript": p.data,
               "size_bytes": p.size_bytes, "content_hash": p.content_hash})
    };
    let mut forged = packed("{\"a\":1}\n");
    forged["content_hash"] = coremcp_recording::content_hash("something else").into();
    let answer = client.call("session_record", forged);
    assert!(
        text(&answer).contains("content_hash") && coremcp_tests::is_error(&answer),
        "{answer}"
    );
    let mut wrong_size = packed(&"a".repeat(1_000_000));
    wrong_size["size_bytes"] = 1.into();
    let answer = client.call("session_record", wrong_size);
    assert!(
        text(&answer).contains("unpacks to 1000000 bytes, not 1"),
        "{answer}"
    );

    drop(relay);
    let err = agent.refused(
        "session_record",
        json!({"transcript_path": "t.jsonl", "title": "x"}),
    );
    assert!(
        err.contains("could not store the recording") && err.contains(&url),
        "{err}"
    );
}

#[test]
fn core_status_is_the_status_page() {
    let dir = plugins(&["ops", "session"]);
    let data = TempDir::new("status-data");
    let serve = Serve::start(dir.path(), &["--data", &arg(data.path())]);
    let mut client = serve.client();
    client.initialize();
    let answer = client.call("core_status", json!({}));
    let status = answer["structuredContent"].clone();
    let page = request(serve.addr, "GET", "/api/status", &[], b"").json();
    for key in ["version", "mode", "groups", "relays"] {
        assert_eq!(status[key], page[key], "{key}: {status} vs {page}");
    }
    let groups: Vec<&str> = status["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .filter_map(|g| g["id"].as_str())
        .collect();
    assert!(
        groups.contains(&"ops") && groups.contains(&"session"),
        "{groups:?}"
    );
    let only = client.call("core_status", json!({"include": ["relays"]}));
    assert!(only["structuredContent"].get("groups").is_none(), "{only}");
}

/// `git ARGS` in `dir`, which must succeed.
fn git(dir: &Path, args: &[&str]) {
    #[allow(clippy::disallowed_methods)] // The test builds its fixture repository with git.
    let status = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.org")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.org")
        .status()
        .expect("git");
    assert!(status.success(), "git {args:?}");
}

/// A work tree `name` under `origin` holding `files`, committed on main, and its bare clone
/// `bare` beside it; the work tree's path.
fn bare_repository(
    origin: &Path,
    name: &str,
    bare: &str,
    files: &[(&str, &str)],
) -> std::path::PathBuf {
    let work = origin.join(name);
    for (path, text) in files {
        let file = work.join(path);
        std::fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
        std::fs::write(&file, text).expect("file");
    }
    git(&work, &["init", "-q", "-b", "main"]);
    git(&work, &["add", "."]);
    git(&work, &["commit", "-q", "-m", "first"]);
    git(origin, &["clone", "-q", "--bare", name, bare]);
    work
}

/// `coremcp stdio` with `root` and `data`, `home` as HOME, and an address to advertise.
fn advertised_server(plugins: &Path, home: &TempDir, root: &TempDir, data: &TempDir) -> Server {
    let home_arg = arg(home.path());
    let mut s = Server::start(
        plugins,
        &["--root", &arg(root.path()), "--data", &arg(data.path())],
        &[
            ("HOME", &home_arg),
            ("COREMCP_ADVERTISE_URL", "http://devbox.example:7070/mcp"),
        ],
    );
    s.initialize();
    s
}

#[test]
fn bootstrap_registers_this_machine_and_repo_setup_records_its_checkout() {
    let dir = plugins(&["ops", "registry"]);
    let (home, root, data) = (
        TempDir::new("boot-home"),
        TempDir::new("boot-root"),
        TempDir::new("boot-data"),
    );
    // A local source is cloned only from inside the roots.
    let origin = root.path().join("origins");
    let work = bare_repository(
        &origin,
        "work",
        "demo.git",
        &[
            (".githooks/pre-commit", "#!/bin/sh\nexit 0\n"),
            ("README.md", "hello\n"),
        ],
    );
    let mut s = advertised_server(dir.path(), &home, &root, &data);

    let dry = s.ok(
        "bootstrap",
        json!({"client": "claude_code", "register_host": true, "dry_run": true}),
    );
    assert_eq!(dry["client"]["action"], "would_write", "{dry}");
    assert_eq!(dry["host"]["action"], "would_add", "{dry}");
    assert!(
        !home.path().join(".claude.json").exists(),
        "a dry run wrote"
    );
    let first = s.ok(
        "bootstrap",
        json!({"client": "claude_code", "register_host": true}),
    );
    assert_eq!(
        (first["changed"].clone(), first["host"]["action"].clone()),
        (json!(true), json!("added")),
        "{first}"
    );
    let config: Value = serde_json::from_str(
        &std::fs::read_to_string(home.path().join(".claude.json")).expect("written"),
    )
    .expect("json");
    assert!(
        config["mcpServers"]["core"]["command"].is_string(),
        "{config}"
    );
    let second = s.ok(
        "bootstrap",
        json!({"client": "claude_code", "register_host": true}),
    );
    assert_eq!(second["changed"], false, "{second}");
    assert_eq!(second["host"]["action"], "unchanged", "{second}");
    let host = first["host"]["name"]
        .as_str()
        .expect("host name")
        .to_owned();
    let hosts = s.ok("registry_host_list", json!({"name": host}));
    // The host is registered where the operator said it is reached, not at a guess.
    assert_eq!(
        hosts["items"][0]["core_mcp_url"], "http://devbox.example:7070/mcp",
        "{hosts}"
    );
    assert_eq!(hosts["items"][0]["address"], "devbox.example", "{hosts}");

    s.ok(
        "registry_project_add",
        json!({"key": "CORE", "name": "Core"}),
    );
    let url = arg(&origin.join("demo.git"));
    s.ok(
        "registry_source_add",
        json!({"project": "CORE", "name": "demo", "kind": "git", "url": url}),
    );
    // Anybody may register a source, but one on this machine outside the roots is not cloned.
    let elsewhere = TempDir::new("boot-elsewhere");
    git(
        elsewhere.path(),
        &["clone", "-q", "--bare", &arg(&work), "other.git"],
    );
    let outside = format!("file://{}", arg(&elsewhere.path().join("other.git")));
    s.ok(
        "registry_source_add",
        json!({"project": "CORE", "name": "outside", "kind": "git", "url": outside}),
    );
    let refused = s.refused("repo_setup", json!({"source": "CORE/outside"}));
    assert!(refused.contains("outside the roots"), "{refused}");
    assert!(!root.path().join("outside").exists());
    let set_up = s.ok("repo_setup", json!({"source": "CORE/demo", "hooks": true}));
    assert_eq!(set_up["action"], "cloned", "{set_up}");
    assert_eq!(set_up["hooks"]["installed"], true, "{set_up}");
    assert_eq!(set_up["registry"]["recorded"], true, "{set_up}");
    let checkout = root.path().join("demo");
    assert!(checkout.join("README.md").is_file());
    let again = s.ok("repo_setup", json!({"source": "CORE/demo"}));
    assert_eq!(again["action"], "present", "{again}");
    let sources = s.ok(
        "registry_source_list",
        json!({"project": "CORE", "include_checkouts": true}),
    );
    let checkout_row = &sources["items"][0]["checkouts"][0];
    assert_eq!(checkout_row["host"], host.as_str(), "{sources}");
    assert_eq!(checkout_row["branch"], "main", "{sources}");
    assert_eq!(
        checkout_row["path"],
        arg(&checkout.canonicalize().expect("canonical")),
        "{sources}"
    );
}

#[test]
fn shell_run_runs_a_script_in_the_roots() {
    let dir = plugins(&["ops"]);
    let root = TempDir::new("shell-root");
    let mut s = Server::start(dir.path(), &["--root", &arg(root.path())], &[]);
    s.initialize();
    let out = s.ok(
        "shell_run",
        json!({"script": "echo \"$GREETING from $(pwd)\"; echo oops >&2; exit 3",
               "env": {"GREETING": "hello"}, "shell": "bash"}),
    );
    assert_eq!(out["exit_code"], 3, "{out}");
    let stdout = out["stdout"].as_str().expect("stdout");
    let canonical = root.path().canonicalize().expect("canonical");
    assert_eq!(stdout, format!("hello from {}\n", canonical.display()));
    assert_eq!(out["stderr"], "oops\n");
    let err = s.refused(
        "shell_run",
        json!({"script": "true", "env": {"API_TOKEN": "x"}}),
    );
    assert!(err.contains("API_TOKEN"), "{err}");
    let err = s.refused("shell_run", json!({"script": "true", "cwd": "/"}));
    assert!(err.contains("cwd"), "{err}");
}

#[test]
fn shell_run_leaves_nothing_behind_and_background_jobs_hold_nothing_up() {
    let dir = plugins(&["ops"]);
    let root = TempDir::new("shell-background");
    let mut s = Server::start(dir.path(), &["--root", &arg(root.path())], &[]);
    s.initialize();
    // The attack's reproducer: answered as soon as the script ends, the sleep gone with it.
    let started = std::time::Instant::now();
    let mark = coremcp_tests::unique_sleep();
    let out = s.ok(
        "shell_run",
        json!({"script": format!("sleep {mark} & setsid sleep {mark} & echo started"),
               "timeout_s": 1, "shell": "bash"}),
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(out["stdout"], "started\n", "{out}");
    assert_eq!(out["exit_code"], 0, "{out}");
    assert!(
        coremcp_tests::none_left_with(&mark),
        "{:?} outlived shell_run",
        coremcp_tests::processes_with(&mark)
    );
    // At timeout_s, what left the process group dies too, and the call answers then.
    let started = std::time::Instant::now();
    let mark = coremcp_tests::unique_sleep();
    let err = s.refused(
        "shell_run",
        json!({"script": format!("setsid sleep {mark} & sleep 90"),
               "timeout_s": 1, "shell": "bash"}),
    );
    assert!(err.contains("did not finish within"), "{err}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    assert!(
        coremcp_tests::none_left_with(&mark),
        "the setsid sleep outlived the timeout"
    );

    // Sixteen of them at once neither jam the Ops group nor core_status.
    let ids: Vec<serde_json::Value> = (0..16)
        .map(|n| {
            let id = json!(format!("bg-{n}"));
            s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                           "params": {"name": "shell_run", "arguments":
                               {"script": "sleep 90 & echo started", "timeout_s": 1}}}));
            id
        })
        .collect();
    let started = std::time::Instant::now();
    for id in &ids {
        let answer = s.answer(id, std::time::Duration::from_secs(10));
        assert_eq!(
            answer["result"]["structuredContent"]["stdout"], "started\n",
            "{answer}"
        );
    }
    assert!(started.elapsed() < std::time::Duration::from_secs(8));
    let status = s.ok("core_status", json!({}));
    assert!(status.is_object(), "{status}");
}

#[test]
fn stale_containers_are_found_on_live_hosts_and_a_dead_one_is_reported() {
    let Some(d) = daemon() else { return };
    let dir = plugins(&["ops", "registry"]);
    let (root, data) = (TempDir::new("stale-root"), TempDir::new("stale-data"));
    let dead = format!("unix://{}/dead.sock", root.path().display());
    let mut s = Server::start(
        dir.path(),
        &["--root", &arg(root.path()), "--data", &arg(data.path())],
        &[],
    );
    s.initialize();
    for (name, endpoint) in [("live", d.host.as_str()), ("dead", dead.as_str())] {
        s.ok(
            "registry_host_add",
            json!({"name": name, "address": "127.0.0.1", "docker_endpoint": endpoint}),
        );
    }
    let tag = format!("cm-stale-{}", std::process::id());
    let (exited, running) = (format!("{tag}-exited"), format!("{tag}-running"));
    let _cleanup = Cleanup::new(&d, &[&exited, &running]);
    let label = format!("stale={tag}");
    d.run(&exited, &["--label", &label], "exit 0");
    d.run(&running, &["--label", &label], "sleep 1000 & wait");
    d.wait_state(&exited, "exited");
    d.wait_state(&running, "running");

    let started = Instant::now();
    let found = s.ok(
        "stale_containers_find",
        json!({"older_than_s": 0, "label": label}),
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    let hosts = found["hosts"].as_array().expect("hosts");
    let live = hosts.iter().find(|h| h["host"] == "live").expect("live");
    let down = hosts.iter().find(|h| h["host"] == "dead").expect("dead");
    assert_eq!(live["ok"], true, "{found}");
    let names: Vec<&str> = live["containers"]
        .as_array()
        .expect("containers")
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(
        names,
        [exited.as_str()],
        "running ones are not stale: {found}"
    );
    assert_eq!(down["ok"], false);
    assert!(
        down["error"].as_str().is_some_and(|e| e.contains(&dead)),
        "{found}"
    );

    let with_running = s.ok(
        "stale_containers_find",
        json!({"older_than_s": 0, "label": label, "include_running": true, "hosts": ["live"]}),
    );
    assert_eq!(with_running["total"], 2, "{with_running}");
    let young = s.ok(
        "stale_containers_find",
        json!({"older_than_s": 3600, "label": label, "hosts": ["live"]}),
    );
    assert_eq!(young["total"], 0, "younger than an hour: {young}");

    // A single machine with no Registry hosts: its own daemon is looked at, as "local".
    let empty_data = TempDir::new("stale-data-empty");
    let mut alone = Server::start(
        dir.path(),
        &[
            "--root",
            &arg(root.path()),
            "--data",
            &arg(empty_data.path()),
        ],
        &[("DOCKER_HOST", d.host.as_str())],
    );
    alone.initialize();
    let mine = alone.ok(
        "stale_containers_find",
        json!({"older_than_s": 0, "label": label}),
    );
    assert_eq!(mine["total"], 1, "{mine}");
    assert_eq!(mine["hosts"][0]["host"], "local", "{mine}");
    assert_eq!(
        mine["hosts"][0]["containers"][0]["name"],
        exited.as_str(),
        "{mine}"
    );
    let named = alone.ok(
        "stale_containers_find",
        json!({"older_than_s": 0, "label": label, "hosts": ["local"]}),
    );
    assert_eq!(named["total"], 1, "{named}");
    // With the Registry's "live" host on the same daemon, it is counted once.
    let mut both = Server::start(
        dir.path(),
        &["--root", &arg(root.path()), "--data", &arg(data.path())],
        &[("DOCKER_HOST", d.host.as_str())],
    );
    both.initialize();
    let once = both.ok(
        "stale_containers_find",
        json!({"older_than_s": 0, "label": label}),
    );
    assert_eq!(once["total"], 1, "{once}");
    let live = once["hosts"]
        .as_array()
        .expect("hosts")
        .iter()
        .find(|h| h["host"] == "live")
        .expect("live");
    assert_eq!(live["same_daemon_as"], "local", "{once}");
}

#[test]
fn a_command_that_reads_stdin_leaves_the_rest_of_the_script_alone() {
    let dir = plugins(&["ops"]);
    let root = TempDir::new("shell-stdin-root");
    let tmp = TempDir::new("shell-stdin-tmp");
    let tmp_arg = arg(tmp.path());
    let mut s = Server::start(
        dir.path(),
        &["--root", &arg(root.path())],
        &[("TMPDIR", &tmp_arg)],
    );
    s.initialize();
    let cases = [
        // cat sees an empty stdin, not the script's next lines.
        ("cat\necho SHOULD_PRINT\n", "SHOULD_PRINT\n"),
        // read gets nothing and the next line still runs.
        ("read x\necho \"got:$x\"\necho after\n", "got:\nafter\n"),
        // A program reading all of stdin, as ssh -T or python - would.
        ("head -c 100 /dev/stdin\necho end\n", "end\n"),
        // A heredoc is part of the script, as written.
        ("cat <<EOF\nhello\nEOF\necho done\n", "hello\ndone\n"),
    ];
    for (script, expected) in cases {
        let out = s.ok("shell_run", json!({"script": script, "shell": "bash"}));
        assert_eq!(out["stdout"], expected, "{script:?}: {out}");
        assert_eq!(out["exit_code"], 0, "{script:?}: {out}");
    }
    // The script's file is gone with its run.
    let left: Vec<_> = std::fs::read_dir(tmp.path())
        .expect("tmp")
        .filter_map(Result::ok)
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// `bootstrap register_host` without an address other machines reach this Core MCP at is
/// refused before anything changes, saying how to give one.
#[test]
fn bootstrap_refuses_to_register_a_host_without_its_address() {
    let dir = plugins(&["ops", "registry"]);
    let (home, data) = (
        TempDir::new("boot-noaddr-home"),
        TempDir::new("boot-noaddr-data"),
    );
    let home_arg = arg(home.path());
    let mut s = Server::start(
        dir.path(),
        &["--data", &arg(data.path())],
        &[("HOME", &home_arg)],
    );
    s.initialize();
    let err = s.refused(
        "bootstrap",
        json!({"client": "claude_code", "register_host": true}),
    );
    assert!(
        err.contains("--advertise") && err.contains("COREMCP_ADVERTISE_URL"),
        "{err}"
    );
    assert!(
        !home.path().join(".claude.json").exists(),
        "it changed the client's file"
    );
    let hosts = s.ok("registry_host_list", json!({"status": "all"}));
    assert_eq!(hosts["items"], json!([]), "{hosts}");
    // A malformed address is refused at start, naming the flag.
    #[allow(clippy::disallowed_methods)] // The binary's own start, refused before it serves.
    let bad = std::process::Command::new(coremcp_tests::coremcp())
        .args(["stdio", "--advertise", "devbox:7070"])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("coremcp");
    assert!(!bad.status.success());
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("--advertise"),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );
}

/// A bare docs repository `handbook.git` with one guide, under `origins/` in `root`.
fn handbook(root: &TempDir) -> std::path::PathBuf {
    let origin = root.path().join("origins");
    bare_repository(
        &origin,
        "handbook",
        "handbook.git",
        &[(
            "guide.md",
            "---\ntitle: Guide\n---\n# Guide\n\nHow we work.\n",
        )],
    );
    origin
}

/// On a machine that is no relay host (the stdio default: no `--advertise`), the docs of a
/// Registry source are reached all the same: `repo_setup` adds this machine's host record
/// itself (no Core MCP URL) and records its checkout, where it used to send the agent to
/// `bootstrap register_host`, which refuses without an address.
#[test]
fn docs_through_the_registry_work_on_a_machine_that_is_no_relay_host() {
    let dir = plugins(&["ops", "registry", "docs"]);
    let (home, root, data) = (
        TempDir::new("stdio-docs-home"),
        TempDir::new("stdio-docs-root"),
        TempDir::new("stdio-docs-data"),
    );
    let origin = handbook(&root);
    let home_arg = arg(home.path());
    let mut s = Server::start(
        dir.path(),
        &["--root", &arg(root.path()), "--data", &arg(data.path())],
        &[("HOME", &home_arg)],
    );
    s.initialize();
    s.ok(
        "registry_project_add",
        json!({"key": "CORE", "name": "Core"}),
    );
    s.ok(
        "registry_source_add",
        json!({"project": "CORE", "name": "docs", "kind": "docs",
               "url": arg(&origin.join("handbook.git"))}),
    );
    s.ok(
        "registry_project_update",
        json!({"key": "CORE", "docs_source": "CORE/docs"}),
    );
    let set_up = s.ok("repo_setup", json!({"source": "CORE/docs"}));
    assert_eq!(set_up["registry"]["recorded"], true, "{set_up}");
    assert_eq!(set_up["registry"]["host_added"], true, "{set_up}");
    let host = set_up["registry"]["host"]
        .as_str()
        .expect("host")
        .to_owned();
    let hosts = s.ok("registry_host_list", json!({"name": host}));
    assert!(
        hosts["items"][0].get("core_mcp_url").is_none(),
        "no Core MCP URL was made up: {hosts}"
    );
    let doc = s.ok("docs_read", json!({"project": "CORE", "path": "guide.md"}));
    assert_eq!(doc["front_matter"]["title"], "Guide", "{doc}");
    // A second run finds the host and the checkout in place.
    let again = s.ok("repo_setup", json!({"source": "CORE/docs"}));
    assert_eq!(again["registry"]["recorded"], true, "{again}");
    assert!(again["registry"].get("host_added").is_none(), "{again}");
}

/// A Registry docs source is reached by the docs tools at this machine's checkout, which
/// `repo_setup` clones and records; one checkout per source and machine unless moved; a
/// recorded checkout outside the roots is never used.
#[test]
fn docs_reach_a_registry_docs_source_through_this_machines_checkout() {
    let dir = plugins(&["ops", "registry", "docs"]);
    let (home, root, data) = (
        TempDir::new("docsreg-home"),
        TempDir::new("docsreg-root"),
        TempDir::new("docsreg-data"),
    );
    let origin = handbook(&root);
    let mut s = advertised_server(dir.path(), &home, &root, &data);
    let err = s.refused("docs_read", json!({"project": "CORE", "path": "guide.md"}));
    assert!(err.contains("no Registry project CORE"), "{err}");
    let host = s.ok("bootstrap", json!({"register_host": true}));
    let host = host["host"]["name"].as_str().expect("host").to_owned();
    s.ok(
        "registry_project_add",
        json!({"key": "CORE", "name": "Core"}),
    );
    s.ok(
        "registry_source_add",
        json!({"project": "CORE", "name": "docs", "kind": "docs",
               "url": arg(&origin.join("handbook.git"))}),
    );
    let err = s.refused("docs_read", json!({"project": "CORE", "path": "guide.md"}));
    assert!(err.contains("registry_project_update"), "{err}");
    s.ok(
        "registry_project_update",
        json!({"key": "CORE", "docs_source": "CORE/docs"}),
    );
    let err = s.refused("docs_read", json!({"project": "CORE", "path": "guide.md"}));
    assert!(
        err.contains("no checkout on this machine") && err.contains("repo_setup"),
        "{err}"
    );

    let set_up = s.ok("repo_setup", json!({"source": "CORE/docs"}));
    assert_eq!(set_up["action"], "cloned", "{set_up}");
    assert_eq!(set_up["registry"]["recorded"], true, "{set_up}");
    for args in [
        json!({"project": "CORE", "path": "guide.md"}),
        json!({"repo": "CORE/docs", "path": "guide.md"}),
    ] {
        let doc = s.ok("docs_read", args.clone());
        assert_eq!(doc["repo"], "CORE/docs", "{args}: {doc}");
        assert_eq!(doc["front_matter"]["title"], "Guide", "{doc}");
        assert!(
            doc["body"]
                .as_str()
                .unwrap_or_default()
                .contains("How we work"),
            "{doc}"
        );
    }
    s.ok(
        "docs_write",
        json!({"project": "CORE", "path": "notes/new.md", "body": "# New\n\nWritten.\n"}),
    );
    assert!(root.path().join("docs/notes/new.md").is_file());

    // A second checkout path is refused unless moved; moved, the docs follow it.
    let err = s.refused(
        "repo_setup",
        json!({"source": "CORE/docs", "path": "handbook2"}),
    );
    assert!(
        err.contains("already checked out") && err.contains("move: true"),
        "{err}"
    );
    let moved = s.ok(
        "repo_setup",
        json!({"source": "CORE/docs", "path": "handbook2", "move": true}),
    );
    assert!(moved["registry"]["moved_from"].is_string(), "{moved}");
    let listing = s.ok("docs_read", json!({"repo": "CORE/docs", "path": "."}));
    let text = listing.to_string();
    assert!(
        text.contains("guide.md") && !text.contains("notes"),
        "{listing}"
    );

    // Whoever may write the Registry cannot point the docs tools outside the roots.
    let elsewhere = TempDir::new("docsreg-elsewhere");
    std::fs::write(elsewhere.path().join("secret.md"), "# secret\n").expect("file");
    s.ok(
        "registry_source_update",
        json!({"source": "CORE/docs", "checkout_host": host,
               "checkout_path": arg(elsewhere.path())}),
    );
    let err = s.refused(
        "docs_read",
        json!({"repo": "CORE/docs", "path": "secret.md"}),
    );
    assert!(err.contains("outside this Core MCP's roots"), "{err}");
}

/// Errors say what happened: the Session service's refusal of a recording is its own, not
/// "the Registry answered"; a group's features show before it loads.
#[test]
fn errors_name_who_refused_and_features_show_before_loading() {
    let dir = plugins(&["ops", "session", "docs"]);
    // Installed as an install is: each library with its manifest beside it.
    let (code, _, stderr) = coremcp_tests::index_plugins(dir.path());
    assert_eq!(code, 0, "{stderr}");
    let (root, data) = (TempDir::new("errors-root"), TempDir::new("errors-data"));
    std::fs::write(
        root.path().join("session.jsonl"),
        claude_fixture(SESSION, "/work/demo", 2),
    )
    .expect("transcript");
    let mut s = Server::start(
        dir.path(),
        &["--root", &arg(root.path()), "--data", &arg(data.path())],
        &[],
    );
    s.initialize();
    // Nothing has loaded the docs group, and its features are known.
    let status = s.ok("core_status", json!({"include": ["features", "groups"]}));
    assert!(status.to_string().contains("not_loaded"), "{status}");
    let features = status["features"].to_string();
    assert!(
        features.contains("docs-read") && features.contains("docs-write"),
        "{status}"
    );
    let err = s.refused(
        "session_record",
        json!({"transcript_path": "session.jsonl", "session_id": "bad id"}),
    );
    assert!(
        err.starts_with("session_record failed (invalid_arguments)")
            && err.contains("session_id")
            && !err.contains("Registry"),
        "{err}"
    );
}

/// A record that steers is written over HTTP only with a grant naming its tool: a principal
/// with no grant (or the Registry group's) cannot move a source's URL or its checkout. And
/// even a URL changed by someone allowed to is not followed by the owner's next `repo_setup`:
/// origin stays the URL the checkout was made from (restored when changed by hand), so the
/// owner's pushes keep going where they went, until the owner names the new URL.
#[test]
fn a_source_url_changed_by_another_never_redirects_the_owners_pushes() {
    use coremcp_tests::http::{Client, Serve};
    let dir = plugins(&["ops", "registry", "git"]);
    let (home, root, data) = (
        TempDir::new("steer-home"),
        TempDir::new("steer-root"),
        TempDir::new("steer-data"),
    );
    let origins = root.path().join("origins");
    let work = bare_repository(&origins, "work", "demo.git", &[("README.md", "hello\n")]);
    // The attacker's repository shares the history: the checkout would accept it as origin.
    git(&origins, &["clone", "-q", "--bare", "work", "evil.git"]);
    let (demo, evil) = (
        arg(&origins.join("demo.git")),
        arg(&origins.join("evil.git")),
    );
    let tokens = [
        ("owner", "owner-token-0123456789ab"),
        ("attacker", "attacker-token-0123456789"),
        ("groupie", "groupie-token-0123456789a"),
        ("registrar", "registrar-token-012345678"),
    ];
    let text: Vec<String> = tokens.iter().map(|(n, t)| format!("{n} {t}")).collect();
    let serve = Serve::start_on(
        dir.path(),
        "127.0.0.1:0",
        &[
            "--root",
            &arg(root.path()),
            "--data",
            &arg(data.path()),
            "--grants",
            "owner=ops,git,registry_source_add; groupie=registry; \
             registrar=registry_source_update",
        ],
        &[
            ("COREMCP_TOKENS_TEXT", &text.join(";")),
            ("HOME", &arg(home.path())),
            ("COREMCP_ADVERTISE_URL", "http://devbox.example:7070/mcp"),
        ],
    );
    let client = |name: &str| -> Client {
        let token = tokens.iter().find(|(n, _)| *n == name).expect("token").1;
        let mut c = serve.client();
        c.token = Some(token.to_owned());
        c.initialize();
        c
    };
    let ok = |c: &mut Client, tool: &str, args: Value| -> Value {
        let result = c.call(tool, args.clone());
        assert_ne!(result["isError"], true, "{tool} {args}: {result}");
        result["structuredContent"].clone()
    };
    let refused = |c: &mut Client, tool: &str, args: Value| -> String {
        let result = c.call(tool, args.clone());
        assert_eq!(result["isError"], true, "{tool} {args}: {result}");
        coremcp_tests::text(&result).to_owned()
    };
    let (mut owner, mut attacker) = (client("owner"), client("attacker"));
    let (mut groupie, mut registrar) = (client("groupie"), client("registrar"));
    ok(&mut owner, "bootstrap", json!({"register_host": true}));
    ok(
        &mut owner,
        "registry_project_add",
        json!({"key": "CORE", "name": "Core"}),
    );
    let add = json!({"project": "CORE", "name": "demo", "kind": "git", "url": demo});
    // Adding a source writes where code comes from: a grant naming the tool, not the group's.
    let text = refused(&mut groupie, "registry_source_add", add.clone());
    assert!(text.contains("names the tool itself"), "{text}");
    ok(&mut owner, "registry_source_add", add);
    let set_up = ok(&mut owner, "repo_setup", json!({"source": "CORE/demo"}));
    assert_eq!(set_up["action"], "cloned", "{set_up}");
    let checkout = root.path().join("demo");

    // No grant, or the group's: neither the URL nor the checkout moves.
    for (who, c) in [("attacker", &mut attacker), ("groupie", &mut groupie)] {
        for args in [
            json!({"source": "CORE/demo", "url": evil}),
            json!({"source": "CORE/demo", "checkout_host": set_up["registry"]["host"],
                   "checkout_path": arg(&origins.join("work"))}),
        ] {
            let text = refused(c, "registry_source_update", args.clone());
            assert!(
                text.contains("steers where code, credentials or calls go"),
                "{who} {args}: {text}"
            );
        }
    }
    let listed = ok(
        &mut owner,
        "registry_source_list",
        json!({"project": "CORE", "include_checkouts": true}),
    );
    assert_eq!(listed["items"][0]["url"], demo.as_str(), "{listed}");
    assert_eq!(
        listed["items"][0]["checkouts"][0]["url"],
        demo.as_str(),
        "{listed}"
    );

    // Someone allowed to moves the URL: the owner's next repo_setup keeps origin, and says so.
    ok(
        &mut registrar,
        "registry_source_update",
        json!({"source": "CORE/demo", "url": evil}),
    );
    let again = ok(&mut owner, "repo_setup", json!({"source": "CORE/demo"}));
    assert_eq!(again["origin"], demo.as_str(), "{again}");
    assert_eq!(
        again["source_url_changed"]["registry"],
        evil.as_str(),
        "{again}"
    );
    assert_eq!(again["changed"], false, "{again}");
    // An origin changed by hand goes back to the URL the checkout was made from.
    git(&checkout, &["remote", "set-url", "origin", &evil]);
    let restored = ok(&mut owner, "repo_setup", json!({"source": "CORE/demo"}));
    assert_eq!(restored["origin"], demo.as_str(), "{restored}");
    assert_eq!(restored["changed"], true, "{restored}");
    // The owner's push goes where it always went.
    std::fs::write(checkout.join("private.txt"), "private\n").expect("file");
    git(&checkout, &["config", "user.name", "Owner"]);
    git(&checkout, &["config", "user.email", "owner@example.org"]);
    let repo = arg(&checkout);
    ok(
        &mut owner,
        "git_add",
        json!({"repo_path": repo, "paths": ["private.txt"]}),
    );
    ok(
        &mut owner,
        "git_commit",
        json!({"repo_path": repo, "message": "private work"}),
    );
    ok(&mut owner, "git_push", json!({"repo_path": repo}));
    let has = |bare: &str| {
        #[allow(clippy::disallowed_methods)] // Reading the fixture repositories with git.
        let out = std::process::Command::new("git")
            .args(["--git-dir", bare, "log", "--format=%s", "main"])
            .output()
            .expect("git log");
        String::from_utf8_lossy(&out.stdout).contains("private work")
    };
    assert!(has(&demo), "the push reached the owner's repository");
    assert!(!has(&evil), "nothing reached the other one");

    // Following the new URL takes naming it: the wrong one is refused, the right one moves it.
    let text = refused(
        &mut owner,
        "repo_setup",
        json!({"source": "CORE/demo", "follow_url": demo}),
    );
    assert!(
        text.contains("follow_url") && text.contains(&evil),
        "{text}"
    );
    let followed = ok(
        &mut owner,
        "repo_setup",
        json!({"source": "CORE/demo", "follow_url": evil}),
    );
    assert_eq!(followed["origin"], evil.as_str(), "{followed}");
    assert!(followed.get("source_url_changed").is_none(), "{followed}");
    let listed = ok(
        &mut owner,
        "registry_source_list",
        json!({"project": "CORE", "include_checkouts": true}),
    );
    assert_eq!(
        listed["items"][0]["checkouts"][0]["url"],
        evil.as_str(),
        "{listed}"
    );
    drop(work);
}
