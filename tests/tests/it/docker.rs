//! The Docker group against the real, throwaway `dockerd` of `scripts/test`: containers that
//! run, exit and log to both streams, lifecycle actions, a Compose project through the real
//! `docker-compose`, and Registry hosts whose `docker_endpoint`s are that daemon and a dead
//! socket.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use coremcp_tests::docker::{daemon, Cleanup, Daemon};
use coremcp_tests::{plugins, Server, TempDir};
use serde_json::{json, Value};

/// A container name no other test (or earlier run) uses.
fn unique(label: &str) -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    format!(
        "cm-{label}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// The host with the Docker and Registry groups, this machine's daemon being the test one.
fn server(d: &Daemon, root: &TempDir) -> (TempDir, Server) {
    let dir = plugins(&["docker", "registry"]);
    let root = root.path().to_string_lossy().into_owned();
    let mut server = Server::start(
        dir.path(),
        &["--root", &root],
        &[
            ("DOCKER_HOST", d.host.as_str()),
            ("COREMCP_COMPOSE", "docker-compose"),
        ],
    );
    server.initialize();
    (dir, server)
}

/// `args` with the members of `extra` added.
fn merge(args: &mut Value, extra: Value) {
    if let (Some(args), Value::Object(extra)) = (args.as_object_mut(), extra) {
        args.extend(extra);
    }
}

fn names(list: &Value) -> Vec<String> {
    list["containers"]
        .as_array()
        .expect("containers")
        .iter()
        .map(|c| c["name"].as_str().expect("name").to_owned())
        .collect()
}

#[test]
fn containers_are_listed_inspected_and_tailed() {
    let Some(d) = daemon() else { return };
    let root = TempDir::new("docker-root");
    let (_dir, mut server) = server(&d, &root);
    let (runs, exits) = (unique("runs"), unique("exits"));
    let _cleanup = Cleanup::new(&d, &[&runs, &exits]);
    let team = format!("team={runs}");
    d.run(
        &runs,
        &[
            "-e",
            "API_TOKEN=s3cret",
            "-e",
            "PLAIN=visible",
            "--label",
            &team,
        ],
        "for i in $(seq 1 3000); do echo out $i; echo err $i >&2; done; sleep 1000 & wait",
    );
    d.run(&exits, &[], "echo bye; exit 3");
    d.wait_state(&exits, "exited");
    d.wait_state(&runs, "running");

    let running = server.ok("docker_container_list", json!({"name": "cm-"}));
    assert!(names(&running).contains(&runs), "{running}");
    assert!(!names(&running).contains(&exits), "{running}");
    assert_eq!(running["endpoint"], d.host);
    let all = server.ok(
        "docker_container_list",
        json!({"all": true, "label": [team]}),
    );
    assert_eq!(names(&all), std::slice::from_ref(&runs), "{all}");
    let all = server.ok("docker_container_list", json!({"all": true, "name": exits}));
    let exited = &all["containers"][0];
    assert_eq!(exited["state"], "exited");
    assert_eq!(exited["image"], d.image);
    assert_eq!(exited["id"].as_str().expect("id").len(), 12);
    assert!(exited["created"].as_str().expect("created").ends_with('Z'));

    let trimmed = server.ok("docker_container_inspect", json!({"container": runs}));
    let c = &trimmed["container"];
    assert_eq!(c["name"], runs.as_str());
    assert_eq!(c["state"]["running"], true);
    let env = c["config"]["env"].to_string();
    assert!(
        env.contains("API_TOKEN=<redacted>") && env.contains("PLAIN=visible"),
        "{env}"
    );
    assert!(!trimmed.to_string().contains("s3cret"), "{trimmed}");
    let raw = server.ok(
        "docker_container_inspect",
        json!({"container": runs, "raw": true}),
    );
    assert!(raw["container"]["Config"]["Env"].is_array(), "{raw}");
    assert!(
        !raw.to_string().contains("s3cret"),
        "raw leaks the credential"
    );
    let gone = server.ok("docker_container_inspect", json!({"container": exits}));
    assert_eq!(gone["container"]["state"]["exit_code"], 3);

    // All 6000 lines written before the logs are read.
    let deadline = Instant::now() + Duration::from_secs(30);
    let logs = loop {
        let logs = server.ok(
            "docker_container_logs",
            json!({"container": runs, "tail": 5000}),
        );
        let count = |stream: &str| logs[stream].as_u64().unwrap_or(0);
        let total = count("stdout_lines") + count("stderr_lines");
        let text = logs["logs"].as_str().unwrap_or_default().to_owned();
        // Both streams' last line written: the log ends with one of them.
        if total == 5000
            && (text.ends_with("\nout 3000\n") || text.ends_with("[stderr] err 3000\n"))
        {
            break logs;
        }
        let end = &text[text.len().saturating_sub(200)..];
        assert!(
            Instant::now() < deadline,
            "the logs never reached line 3000 of both streams: {total} lines, ending {end:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    // (dockerd copies the two streams apart: their lines are not interleaved exactly.)
    let text = logs["logs"].as_str().expect("logs");
    assert!(
        text.lines()
            .all(|l| l.starts_with("out ") || l.starts_with("[stderr] err ")),
        "{text}"
    );
    assert_eq!(logs["truncated"], true, "5000 lines cannot fit one result");
    let err_only = server.ok(
        "docker_container_logs",
        json!({"container": runs, "tail": 5000, "stream": "stderr", "timestamps": true}),
    );
    // The daemon counts `tail` over both streams, then keeps the one asked for: of the last
    // 5000 of 6000 lines, at least 2000 are stderr's (the answer shows their end).
    let lines: Vec<&str> = err_only["logs"].as_str().expect("logs").lines().collect();
    let counted = err_only["stderr_lines"].as_u64().expect("count");
    assert!(
        counted >= 2000 && err_only["stdout_lines"] == 0,
        "{counted}"
    );
    assert!(lines.len() > 100, "{}", lines.len());
    assert!(
        lines
            .iter()
            .all(|l| l.starts_with("20") && l.contains("Z err ")),
        "{err_only}"
    );
    assert!(lines[lines.len() - 1].ends_with(" err 3000"), "{err_only}");
    let later = server.ok(
        "docker_container_logs",
        json!({"container": runs, "since": "2037-01-01T00:00:00Z"}),
    );
    assert_eq!(later["logs"], "", "{later}");

    for (args, says) in [
        (
            json!({"container": "cm-no-such-container"}),
            "no container \"cm-no-such-container\"",
        ),
        (
            json!({"container": "../v1.41/info"}),
            "not a container id or name",
        ),
        (
            json!({"container": runs, "since": "yesterday"}),
            "argument \"since\"",
        ),
    ] {
        let err = server.refused("docker_container_logs", args.clone());
        assert!(err.contains(says), "{args}: {err}");
    }
}

#[test]
fn lifecycle_actions_change_state_and_repeat_safely() {
    let Some(d) = daemon() else { return };
    let root = TempDir::new("docker-root");
    let (_dir, mut server) = server(&d, &root);
    let name = unique("life");
    let _cleanup = Cleanup::new(&d, &[&name]);
    d.run(&name, &[], "sleep 1000 & wait");
    d.wait_state(&name, "running");
    let act = |server: &mut Server, action: &str, extra: Value| {
        let mut args = json!({"container": name, "action": action});
        merge(&mut args, extra);
        server.ok("docker_container_action", args)
    };
    let stop = act(&mut server, "stop", json!({"timeout_s": 5}));
    assert_eq!(
        (stop["changed"].clone(), stop["state"].clone()),
        (json!(true), json!("exited")),
        "{stop}"
    );
    let again = act(&mut server, "stop", json!({}));
    assert_eq!(again["changed"], false, "{again}");
    let start = act(&mut server, "start", json!({}));
    assert_eq!(start["state"], "running", "{start}");
    assert_eq!(act(&mut server, "pause", json!({}))["state"], "paused");
    assert_eq!(act(&mut server, "unpause", json!({}))["state"], "running");
    assert_eq!(
        act(&mut server, "restart", json!({"timeout_s": 1}))["state"],
        "running"
    );
    let refused = server.refused(
        "docker_container_action",
        json!({"container": name, "action": "remove"}),
    );
    assert!(
        refused.contains("refused") && refused.contains(&d.host),
        "{refused}"
    );
    let err = server.refused(
        "docker_container_action",
        json!({"container": name, "action": "stop", "force": true}),
    );
    assert!(err.contains("argument \"force\""), "{err}");
    let kill = act(&mut server, "kill", json!({}));
    assert_eq!(kill["state"], "exited", "{kill}");
    assert_eq!(kill["exit_code"], 137, "{kill}");
    let removed = act(
        &mut server,
        "remove",
        json!({"force": true, "remove_volumes": true}),
    );
    assert_eq!(removed["removed"], true);
    let err = server.refused("docker_container_inspect", json!({"container": name}));
    assert!(err.contains("no container"), "{err}");
}

#[test]
fn a_compose_project_goes_up_and_down() {
    let Some(d) = daemon() else { return };
    let root = TempDir::new("docker-root");
    let project = unique("proj").replace('-', "");
    let folder = root.path().join("app");
    d.web_project(&folder);
    let (_dir, mut server) = server(&d, &root);
    let base = json!({"project_dir": "app", "project_name": project});
    let call = |server: &mut Server, action: &str, extra: Value| {
        let mut args = base.clone();
        args["action"] = action.into();
        merge(&mut args, extra);
        server.ok("docker_compose", args)
    };
    let config = call(&mut server, "config", json!({}));
    assert_eq!(
        config["config"]["services"]["web"]["image"], d.image,
        "{config}"
    );
    let up = call(&mut server, "up", json!({}));
    assert!(
        up["output"].as_str().expect("output").contains("web"),
        "{up}"
    );
    let ps = call(&mut server, "ps", json!({}));
    assert_eq!(ps["count"], 1, "{ps}");
    assert_eq!(ps["containers"][0]["state"], "running", "{ps}");
    assert_eq!(
        ps["containers"][0]["compose_project"],
        project.as_str(),
        "{ps}"
    );
    let listed = server.ok("docker_container_list", json!({"compose_project": project}));
    assert_eq!(listed["count"], 1, "{listed}");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let logs = call(&mut server, "logs", json!({"tail": 10}));
        if logs["output"]
            .as_str()
            .is_some_and(|o| o.contains("web up"))
        {
            break;
        }
        assert!(Instant::now() < deadline, "no 'web up' in {logs}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let stop = call(&mut server, "stop", json!({"services": ["web"]}));
    assert_eq!(stop["action"], "stop");
    let ps = call(&mut server, "ps", json!({}));
    assert_eq!(ps["containers"][0]["state"], "exited", "{ps}");
    call(&mut server, "down", json!({"remove_volumes": true}));
    let ps = call(&mut server, "ps", json!({}));
    assert_eq!(ps["count"], 0, "{ps}");

    for (args, says) in [
        (
            json!({"action": "ps", "project_dir": "/"}),
            "outside the roots",
        ),
        (
            json!({"action": "ps", "project_dir": "app", "files": ["missing.yml"]}),
            "files[0]",
        ),
        (
            json!({"action": "up", "project_dir": "app", "files": ["../../../etc/passwd"]}),
            "files[0]",
        ),
    ] {
        let err = server.refused("docker_compose", args.clone());
        assert!(err.contains(says), "{args}: {err}");
    }
    // A Compose file Compose rejects: the failure carries what Compose said.
    std::fs::write(folder.join("bad.yml"), "services: [not, a, map]\n").expect("bad file");
    let err = server.refused(
        "docker_compose",
        json!({"action": "config", "project_dir": "app", "files": ["bad.yml"]}),
    );
    assert!(err.contains("failed") && err.len() > 60, "{err}");
}

#[test]
fn hosts_pick_their_daemon_and_a_dead_one_is_a_clear_error_in_time() {
    let Some(d) = daemon() else { return };
    let root = TempDir::new("docker-root");
    let dead = format!("unix://{}/dead.sock", root.path().display());
    let (_dir, mut server) = server(&d, &root);
    // Host names of this run only (the Registry's store outlives one test).
    let tag = unique("h");
    let named = |role: &str| format!("{role}-{tag}");
    for (role, endpoint) in [
        ("live", Some(d.host.as_str())),
        ("dead", Some(dead.as_str())),
        ("plain", None),
    ] {
        let mut host = json!({"name": named(role), "address": "127.0.0.1"});
        if let Some(endpoint) = endpoint {
            host["docker_endpoint"] = endpoint.into();
        }
        server.ok("registry_host_add", host);
    }
    let name = unique("hosted");
    let _cleanup = Cleanup::new(&d, &[&name]);
    d.run(&name, &[], "sleep 1000 & wait");
    let live = server.ok(
        "docker_container_list",
        json!({"host": named("live"), "name": name}),
    );
    assert_eq!(
        (live["host"].clone(), live["count"].clone()),
        (json!(named("live")), json!(1)),
        "{live}"
    );
    let started = Instant::now();
    let err = server.refused("docker_container_list", json!({"host": named("dead")}));
    assert!(
        err.contains("not reachable") && err.contains(&dead),
        "{err}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
    let err = server.refused("docker_container_list", json!({"host": named("plain")}));
    assert!(err.contains("has no docker_endpoint"), "{err}");
    let err = server.refused("docker_container_list", json!({"host": "nowhere"}));
    assert!(
        err.contains("no Registry host is named \"nowhere\""),
        "{err}"
    );
}

#[test]
fn without_a_daemon_the_error_names_the_endpoint() {
    // No daemon needed: this is about the one that is not there.
    let root = TempDir::new("docker-root");
    let socket = format!("unix://{}/none.sock", root.path().display());
    let dir = plugins(&["docker"]);
    let root_arg = root.path().to_string_lossy().into_owned();
    let mut server = Server::start(
        dir.path(),
        &["--root", &root_arg],
        &[("DOCKER_HOST", socket.as_str())],
    );
    server.initialize();
    let err = server.refused("docker_container_list", json!({}));
    assert!(
        err.contains("not reachable") && err.contains(&socket),
        "{err}"
    );
    let err = server.refused("docker_container_list", json!({"host": "x"}));
    assert!(err.contains("registry"), "{err}");
    let mut bad = Server::start(
        dir.path(),
        &["--root", &root_arg],
        &[("DOCKER_HOST", "ssh://me@box")],
    );
    bad.initialize();
    let err = bad.refused("docker_container_list", json!({}));
    assert!(err.contains("no ssh transport"), "{err}");

    // A socket that takes the connection and never answers: the call's deadline, not a hang.
    let silent_path = root.path().join("silent.sock");
    let _silent = std::os::unix::net::UnixListener::bind(&silent_path).expect("bind");
    let silent = format!("unix://{}", silent_path.display());
    let mut hung = Server::start(
        dir.path(),
        &["--root", &root_arg, "--call-timeout", "2"],
        &[("DOCKER_HOST", silent.as_str())],
    );
    hung.initialize();
    let started = Instant::now();
    let err = hung.refused("docker_container_list", json!({}));
    // The plugin gives up just before the deadline and names the endpoint; on a loaded
    // machine the host's own deadline answer may still come first.
    let named = err.contains("did not answer before the call's deadline") && err.contains(&silent);
    assert!(named || err.contains("did not finish within 2 s"), "{err}");
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(1500) && took < Duration::from_secs(8),
        "took {took:?}"
    );
}

/// A stand-in daemon on 127.0.0.1 whose every answer is 200 MB of JSON, streamed: with a
/// `Content-Length` when `announce`, else chunked. It stops when the reader hangs up.
fn flood(announce: bool) -> String {
    use std::io::{BufRead, BufReader, Write};
    const TOTAL: usize = 200 << 20;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { break };
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line != "\r\n" {
                    line.clear();
                }
                let head = if announce {
                    format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {TOTAL}\r\n\r\n"
                    )
                } else {
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                        .to_owned()
                };
                if stream.write_all(head.as_bytes()).is_err() {
                    return;
                }
                let piece = vec![b' '; 64 << 10];
                let mut sent = 0;
                while sent < TOTAL {
                    let wrote = if announce {
                        stream.write_all(&piece)
                    } else {
                        stream
                            .write_all(format!("{:x}\r\n", piece.len()).as_bytes())
                            .and_then(|()| stream.write_all(&piece))
                            .and_then(|()| stream.write_all(b"\r\n"))
                    };
                    if wrote.is_err() {
                        return;
                    }
                    sent += piece.len();
                }
            });
        }
    });
    format!("tcp://{addr}")
}

#[test]
fn an_answer_over_8_mb_is_refused_with_its_size_and_never_held() {
    let root = TempDir::new("docker-flood");
    let dir = plugins(&["docker", "registry"]);
    let root_arg = root.path().to_string_lossy().into_owned();
    let data = TempDir::new("docker-flood-data");
    let data_arg = data.path().to_string_lossy().into_owned();
    let mut server = Server::start(dir.path(), &["--root", &root_arg, "--data", &data_arg], &[]);
    server.initialize();
    for (name, announce) in [("announced", true), ("chunked", false)] {
        let endpoint = flood(announce);
        server.ok(
            "registry_host_add",
            json!({"name": name, "address": "127.0.0.1", "docker_endpoint": endpoint}),
        );
        let err = server.refused("docker_container_list", json!({"host": name}));
        assert!(
            err.contains(&endpoint) && err.contains("over the 8388608-byte (8 MB) limit"),
            "{name}: {err}"
        );
        if announce {
            assert!(err.contains("of 209715200 bytes"), "{err}");
        }
    }
    // Before the bound the host grew past 400 MB on such an answer.
    let peak = server.memory_kb("VmHWM");
    assert!(peak < 100 * 1024, "peak RSS {peak} kB");
}

/// A daemon's list of 90 000 small containers, 7.5 MB, within the 8 MB bound: read as a
/// stream, it costs a call its bytes and what the answer shows — before, one call held 303 MB
/// and eight at once 1.16 GB. (The daemon is a stand-in speaking the Engine API's wire format:
/// a real one cannot be made to hold 90 000 containers here.)
#[test]
fn a_list_of_90_000_containers_costs_a_call_what_it_shows() {
    let entries: Vec<String> = (0..90_000)
        .map(|i| format!(r#"{{"Id":"{i:024x}","Names":["/c{i}"],"State":"exited","Created":1}}"#))
        .collect();
    let list = format!("[{}]", entries.join(",")).into_bytes();
    assert!(
        list.len() > 7 << 20 && list.len() < 8 << 20,
        "{}",
        list.len()
    );
    let endpoint = coremcp_tests::docker::stand_in(list);
    let root = TempDir::new("docker-many");
    let data = TempDir::new("docker-many-data");
    let dir = plugins(&["docker", "registry", "ops"]);
    let (root_arg, data_arg) = (
        root.path().to_string_lossy().into_owned(),
        data.path().to_string_lossy().into_owned(),
    );
    let mut server = Server::start(dir.path(), &["--root", &root_arg, "--data", &data_arg], &[]);
    server.initialize();
    server.ok(
        "registry_host_add",
        json!({"name": "many", "address": "127.0.0.1", "docker_endpoint": endpoint}),
    );
    // The plugins loaded and warmed up on a call that reaches the daemon.
    server.ok("registry_host_list", json!({}));
    let before = server.memory_kb("VmRSS");
    server.reset_peak_memory();
    let listed = server.ok(
        "docker_container_list",
        json!({"host": "many", "all": true}),
    );
    let one = server.memory_kb("VmHWM").saturating_sub(before);
    assert_eq!(listed["count"], 90_000, "{}", &listed.to_string()[..300]);
    let shown = listed["containers"].as_array().expect("containers").len();
    assert!(shown > 10, "{shown}");
    assert_eq!(listed["more"], 90_000 - shown as u64);
    let stale = server.ok(
        "stale_containers_find",
        json!({"hosts": ["many"], "older_than_s": 60}),
    );
    assert_eq!(stale["total"], 90_000, "{}", &stale.to_string()[..300]);
    // Eight at once.
    let before = server.memory_kb("VmRSS");
    server.reset_peak_memory();
    let ids: Vec<Value> = (0..8)
        .map(|n| {
            let id = json!(format!("many-{n}"));
            server.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "docker_container_list", "arguments": {"host": "many", "all": true}}}));
            id
        })
        .collect();
    for id in &ids {
        let answer = server.answer(id, coremcp_tests::WAIT);
        assert_eq!(answer["result"]["structuredContent"]["count"], 90_000);
    }
    let eight = server.memory_kb("VmHWM").saturating_sub(before);
    eprintln!("90 000 containers: one call {one} kB over its start, eight at once {eight} kB");
    assert!(one < 64 * 1024, "one call took {one} kB");
    assert!(eight < 8 * 32 * 1024, "eight calls took {eight} kB");
}

#[test]
fn compose_without_a_grant_reads_nothing_outside_the_roots_and_up_never_hands_over_the_host() {
    let top = TempDir::new("compose-confined");
    let root = top.path().join("root");
    let outside = top.path().join("outside");
    std::fs::create_dir_all(root.join("proj")).expect("mkdir");
    std::fs::create_dir_all(&outside).expect("mkdir");
    std::fs::write(
        outside.join("secret.env"),
        "API_TOKEN=outside-secret-value\n",
    )
    .expect("secret");
    std::fs::write(
        root.join("proj/compose.yml"),
        "services:\n  web:\n    image: busybox\n    env_file: ../../outside/secret.env\n",
    )
    .expect("compose");
    std::fs::create_dir_all(root.join("host")).expect("mkdir");
    std::fs::write(
        root.join("host/compose.yml"),
        "services:\n  web:\n    image: busybox\n    volumes:\n      - /:/host\n",
    )
    .expect("compose");
    let dir = plugins(&["docker"]);
    let root_arg = root.to_string_lossy().into_owned();
    // A daemon is never reached: the project is refused before Compose runs.
    let socket = format!("unix://{}/none.sock", top.path().display());
    let mut server = Server::start(
        dir.path(),
        &["--root", &root_arg],
        &[
            ("DOCKER_HOST", socket.as_str()),
            ("COREMCP_COMPOSE", "docker-compose"),
        ],
    );
    server.initialize();
    for action in ["config", "ps", "logs"] {
        let err = server.refused(
            "docker_compose",
            json!({"action": action, "project_dir": "proj"}),
        );
        assert!(
            err.contains("services.web.env_file[0]")
                && err.contains("outside the roots")
                && !err.contains("outside-secret-value"),
            "{action}: {err}"
        );
    }
    let err = server.refused(
        "docker_compose",
        json!({"action": "up", "project_dir": "host"}),
    );
    assert!(
        err.contains("mounts /") && err.contains("allow_host_access"),
        "{err}"
    );

    // Over HTTP the ways past these checks need grants: reach_outside_roots is up's grant, and
    // allow_host_access a grant naming docker_compose itself (a grant of the group is not).
    let serve = coremcp_tests::http::Serve::start_on(
        dir.path(),
        "127.0.0.1:0",
        &["--root", &root_arg, "--grants", "*=docker"],
        &[
            ("DOCKER_HOST", socket.as_str()),
            ("COREMCP_COMPOSE", "docker-compose"),
        ],
    );
    let mut client = serve.client();
    client.initialize();
    let refused = client.call(
        "docker_compose",
        json!({"action": "up", "project_dir": "host", "allow_host_access": true}),
    );
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(
        coremcp_tests::text(&refused).contains("only a grant that names the tool itself"),
        "{refused}"
    );
    let plain = coremcp_tests::http::Serve::start_on(
        dir.path(),
        "127.0.0.1:0",
        &["--root", &root_arg],
        &[("DOCKER_HOST", socket.as_str())],
    );
    let mut reader = plain.client();
    reader.initialize();
    let refused = reader.call(
        "docker_compose",
        json!({"action": "config", "project_dir": "proj", "reach_outside_roots": true}),
    );
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(
        coremcp_tests::text(&refused).contains("docker_compose is refused"),
        "{refused}"
    );
}

/// A Compose `down` takes as long as its services' stop grace: it runs for `timeout_s` (120 by
/// default) rather than the call's deadline, and one cut short kills Compose's process group
/// and says what the project was left as.
#[test]
fn compose_runs_for_its_own_timeout_and_a_cut_one_says_what_it_left() {
    let Some(d) = daemon() else { return };
    let root = TempDir::new("docker-root");
    let project = unique("grace").replace('-', "");
    let folder = root.path().join("slow");
    std::fs::create_dir_all(&folder).expect("mkdir");
    // The service ignores SIGTERM, so stopping it takes its whole grace.
    std::fs::write(
        folder.join("docker-compose.yml"),
        format!(
            "version: \"2.4\"\nservices:\n  web:\n    image: {}\n    network_mode: none\n    \
             stop_grace_period: 12s\n    \
             command: [\"sh\", \"-c\", \"trap '' TERM; while true; do sleep 1; done\"]\n",
            d.image
        ),
    )
    .expect("compose file");
    let dir = plugins(&["docker", "registry"]);
    let root_arg = root.path().to_string_lossy().into_owned();
    // A short call deadline: the grace is longer than it, as a 45 s grace is than 30 s.
    let mut server = Server::start(
        dir.path(),
        &["--root", &root_arg, "--call-timeout", "5"],
        &[
            ("DOCKER_HOST", d.host.as_str()),
            ("COREMCP_COMPOSE", "docker-compose"),
        ],
    );
    server.initialize();
    let (v1, v2) = (format!("{project}_web_1"), format!("{project}-web-1"));
    let _cleanup = Cleanup::new(&d, &[&v1, &v2]);
    let base = json!({"project_dir": "slow", "project_name": project});
    let with = |action: &str, extra: Value| {
        let mut args = base.clone();
        args["action"] = action.into();
        merge(&mut args, extra);
        args
    };
    server.ok("docker_compose", with("up", json!({})));

    let started = Instant::now();
    let err = server.refused("docker_compose", with("down", json!({"timeout_s": 2})));
    assert!(started.elapsed() < Duration::from_secs(8), "{err}");
    assert!(
        err.contains("killed") && err.contains(&project) && err.contains("running"),
        "a cut down says what it left: {err}"
    );
    assert!(err.contains("timeout_s"), "{err}");

    // With no timeout_s the default lets the grace run out, well past the call deadline.
    let started = Instant::now();
    server.ok("docker_compose", with("down", json!({})));
    assert!(
        started.elapsed() > Duration::from_secs(5),
        "the grace was honoured"
    );
    let ps = server.ok("docker_compose", with("ps", json!({})));
    assert_eq!(ps["count"], 0, "down finished: {ps}");
}

/// The attacks of the fourth trust rung, against the real dockerd and Compose: shapes Compose
/// reads one way and a second parser another (merge keys at every depth and as lists, YAML 1.1
/// booleans, `extends` through a merge key, a `.env` that is a symlink or that interpolates one
/// value into another). `up` never hands a container the host without `allow_host_access`, and
/// the grant-less `config` reads nothing outside the roots; a project that uses the same
/// features legitimately still goes up, from the configuration Compose resolved.
#[test]
fn compose_decides_on_what_compose_will_run() {
    let Some(d) = daemon() else { return };
    let top = TempDir::new("compose-rung4");
    let root = top.path().join("root");
    let outside = top.path().join("outside");
    std::fs::create_dir_all(&outside).expect("mkdir");
    std::fs::write(
        outside.join("secret.env"),
        "API_TOKEN=outside-secret-value\n",
    )
    .expect("secret");
    std::fs::write(
        outside.join("base.yml"),
        "services:\n  web:\n    image: busybox\n    env_file: secret.env\n",
    )
    .expect("base");
    let image = &d.image;
    let write = |name: &str, compose: &str, dotenv: Option<&str>| {
        let folder = root.join(name);
        std::fs::create_dir_all(&folder).expect("mkdir");
        std::fs::write(folder.join("compose.yml"), compose).expect("compose");
        if let Some(dotenv) = dotenv {
            std::fs::write(folder.join(".env"), dotenv).expect(".env");
        }
    };
    let service = format!("image: {image}\n    network_mode: none\n    command: [\"sh\", \"-c\", \"trap 'exit 0' TERM; sleep 1000 & wait\"]");
    write(
        "mergeroot",
        &format!("x-v: &v\n  type: bind\n  source: /\n  target: /host\nservices:\n  web:\n    {service}\n    volumes:\n      - <<: *v\n"),
        None,
    );
    write(
        "privyes",
        &format!("services:\n  web:\n    {service}\n    privileged: yes\n"),
        None,
    );
    write(
        "privon",
        &format!("services:\n  web:\n    {service}\n    privileged: on\n"),
        None,
    );
    write(
        "servicesmerge",
        "x: &all\n  web:\n    image: busybox\n    env_file: ../../outside/secret.env\nservices:\n  <<: *all\n",
        None,
    );
    write(
        "anchorlist",
        "x: &a {image: busybox}\ny: &b {env_file: ../../outside/secret.env}\nservices:\n  web:\n    <<: [*a, *b]\n",
        None,
    );
    write(
        "extendsmerge",
        "x: &e\n  extends:\n    file: ../../outside/base.yml\n    service: web\nservices:\n  web:\n    <<: *e\n",
        None,
    );
    write(
        "dotenvref",
        "services:\n  web:\n    image: busybox\n    env_file: ${P}\n",
        Some(&format!("D={}\nP=${{D}}/secret.env\n", outside.display())),
    );
    write(
        "dotenvlink",
        "services:\n  web:\n    image: busybox\n    environment:\n      LEAK: ${API_TOKEN}\n",
        None,
    );
    std::os::unix::fs::symlink(outside.join("secret.env"), root.join("dotenvlink/.env"))
        .expect("symlink");
    // The same features used inside the roots: merge keys, a YAML 1.1 `no`, `.env`
    // interpolation, an env_file Compose inlines into the resolved file.
    let project = unique("good").replace('-', "");
    write(
        "good",
        &format!(
            "x-base: &base\n  {}\n  privileged: no\n  env_file: ${{APP_ENV}}\nservices:\n  web:\n    <<: *base\n    environment:\n      GREETING: \"${{GREETING}}\"\n      LITERAL: \"$$HOME\"\n",
            service.replace("\n    ", "\n  ")
        ),
        Some("NAME=world\nGREETING=hello ${NAME}\nAPP_ENV=./app.env\n"),
    );
    std::fs::write(root.join("good/app.env"), "FROM_FILE=inlined\n").expect("app.env");
    let (v1, v2) = (format!("{project}_web_1"), format!("{project}-web-1"));
    let _cleanup = Cleanup::new(&d, &[&v1, &v2]);

    let dir = plugins(&["docker"]);
    let root_arg = root.to_string_lossy().into_owned();
    let mut server = Server::start(
        dir.path(),
        &["--root", &root_arg],
        &[
            ("DOCKER_HOST", d.host.as_str()),
            ("COREMCP_COMPOSE", "docker-compose"),
        ],
    );
    server.initialize();
    for (name, says) in [
        ("mergeroot", "mounts /"),
        ("privyes", "privileged"),
        ("privon", "privileged"),
    ] {
        let err = server.refused(
            "docker_compose",
            json!({"action": "up", "project_dir": name, "project_name": format!("{project}{name}")}),
        );
        assert!(
            err.contains(says) && err.contains("allow_host_access"),
            "{name}: {err}"
        );
        let created = d.cli(&[
            "ps",
            "-a",
            "-q",
            "--filter",
            &format!("label=com.docker.compose.project={project}{name}"),
        ]);
        assert_eq!(created, "", "{name}: nothing was created");
    }
    for (name, says) in [
        ("servicesmerge", "services.web.env_file[0]"),
        ("anchorlist", "services.web.env_file[0]"),
        ("extendsmerge", "services.web.extends.file"),
        ("dotenvref", "services.web.env_file[0]"),
        ("dotenvlink", ".env"),
    ] {
        for action in ["config", "ps", "logs"] {
            let err = server.refused(
                "docker_compose",
                json!({"action": action, "project_dir": name}),
            );
            assert!(
                err.contains(says)
                    && err.contains("outside the roots")
                    && !err.contains("outside-secret-value"),
                "{name} {action}: {err}"
            );
        }
    }

    let base = json!({"project_dir": "good", "project_name": project});
    let with = |action: &str, extra: Value| {
        let mut args = base.clone();
        args["action"] = action.into();
        merge(&mut args, extra);
        args
    };
    let config = server.ok("docker_compose", with("config", json!({})));
    let web = &config["config"]["services"]["web"];
    assert_eq!(web["environment"]["GREETING"], "hello world", "{config}");
    server.ok("docker_compose", with("up", json!({})));
    let name = d.cli(&[
        "ps",
        "-a",
        "--filter",
        &format!("label=com.docker.compose.project={project}"),
        "--format",
        "{{.Names}}",
    ]);
    let env = d.cli(&["inspect", "-f", "{{json .Config.Env}}", &name]);
    for expected in ["GREETING=hello world", "FROM_FILE=inlined", "LITERAL=$HOME"] {
        assert!(env.contains(expected), "{expected} in {env}");
    }
    let privileged = d.cli(&["inspect", "-f", "{{.HostConfig.Privileged}}", &name]);
    assert_eq!(privileged, "false");
    // Up again changes nothing: the resolved file is the project Compose knows.
    let again = server.ok("docker_compose", with("up", json!({})));
    assert!(
        again["output"]
            .as_str()
            .unwrap_or_default()
            .contains("up-to-date"),
        "{again}"
    );
    server.ok("docker_compose", with("down", json!({})));

    // The opt-in still works, through the same resolved file (a bind of `/`: this machine's
    // sandbox lets no container run privileged).
    let opted_project = format!("{project}mergeroot");
    let (p1, p2) = (
        format!("{opted_project}_web_1"),
        format!("{opted_project}-web-1"),
    );
    let _cleanup_opted = Cleanup::new(&d, &[&p1, &p2]);
    let opted = json!({"project_dir": "mergeroot", "project_name": opted_project});
    let mut up = opted.clone();
    up["action"] = "up".into();
    up["allow_host_access"] = true.into();
    server.ok("docker_compose", up);
    let id = d.cli(&[
        "ps",
        "-a",
        "-q",
        "--filter",
        &format!("label=com.docker.compose.project={opted_project}"),
    ]);
    let mounts = d.cli(&["inspect", "-f", "{{json .Mounts}}", &id]);
    assert!(mounts.contains(r#""Source":"/""#), "{mounts}");
    let mut down = opted;
    down["action"] = "down".into();
    server.ok("docker_compose", down);
}

/// A daemon's containers in pages: `docker_container_list` walks one Compose project's 400
/// containers by name with its cursor, and `stale_containers_find` walks two hosts' stale
/// ones host by host, each container exactly once, in a Codex session whose every answer fits
/// 10 000 characters. (The daemons are stand-ins speaking the Engine API's wire format, as
/// above; they answer every list whole, so the filters are the real daemon's job.)
#[test]
fn container_lists_page_by_name_and_reach_every_container_once() {
    let stand_in = |prefix: &str, n: usize| {
        let entries: Vec<String> = (0..n)
            // Created out of name order, so the pages' order is the tool's own.
            .map(|i| {
                let labels = format!(
                    r#"{{"com.docker.compose.project":"shop","com.docker.compose.service":"web","note":"{}"}}"#,
                    "n".repeat(150)
                );
                format!(
                    r#"{{"Id":"{:064x}","Names":["/{prefix}-{:04}"],"Image":"shop/web:1","State":"exited","Status":"Exited (0)","Created":{},"Labels":{labels}}}"#,
                    i + 1,
                    (i * 7919) % n,
                    1 + i
                )
            })
            .collect();
        coremcp_tests::docker::stand_in(format!("[{}]", entries.join(",")).into_bytes())
    };
    let (one, two) = (stand_in("shop-web", 400), stand_in("other", 120));
    let root = TempDir::new("docker-pages");
    let data = TempDir::new("docker-pages-data");
    let dir = plugins(&["docker", "registry", "ops"]);
    let (root_arg, data_arg) = (
        root.path().to_string_lossy().into_owned(),
        data.path().to_string_lossy().into_owned(),
    );
    let mut server = Server::start(dir.path(), &["--root", &root_arg, "--data", &data_arg], &[]);
    server.initialize_as("2025-06-18", "codex-mcp-client");
    for (name, endpoint) in [("one", &one), ("two", &two)] {
        server.ok(
            "registry_host_add",
            json!({"name": name, "address": "127.0.0.1", "docker_endpoint": endpoint}),
        );
    }
    let mut args = json!({"host": "one", "all": true, "compose_project": "shop"});
    let mut walked: Vec<String> = Vec::new();
    let mut pages = 0;
    loop {
        let page = server.ok("docker_container_list", args.clone());
        assert_eq!(page["count"], 400);
        walked.extend(
            page["containers"]
                .as_array()
                .expect("containers")
                .iter()
                .map(|c| c["name"].as_str().expect("name").to_owned()),
        );
        pages += 1;
        match page.get("next_cursor") {
            Some(cursor) => {
                assert!(page["more"].as_u64().unwrap_or(0) > 0, "{}", page["more"]);
                args["cursor"] = cursor.clone();
            }
            None => break,
        }
    }
    let expected: Vec<String> = (0..400).map(|i| format!("shop-web-{i:04}")).collect();
    assert_eq!(walked, expected, "every container once, by name");
    assert!(pages >= 8, "{pages} pages");

    let mut args = json!({"hosts": ["one", "two"], "older_than_s": 60});
    let mut walked: Vec<(String, String)> = Vec::new();
    loop {
        let page = server.ok("stale_containers_find", args.clone());
        assert_eq!(page["total"], 520);
        for host in page["hosts"].as_array().expect("hosts") {
            for c in host["containers"].as_array().into_iter().flatten() {
                walked.push((
                    host["host"].as_str().expect("host").to_owned(),
                    c["name"].as_str().expect("name").to_owned(),
                ));
            }
        }
        match page.get("next_cursor") {
            Some(cursor) => args["cursor"] = cursor.clone(),
            None => break,
        }
    }
    let mut expected: Vec<(String, String)> = (0..400)
        .map(|i| ("one".to_owned(), format!("shop-web-{i:04}")))
        .collect();
    expected.extend((0..120).map(|i| ("two".to_owned(), format!("other-{i:04}"))));
    assert_eq!(walked, expected, "every stale container once, host by host");
    let bad = server.refused(
        "docker_container_list",
        json!({"host": "one", "cursor": "zz"}),
    );
    assert!(bad.contains("cursor"), "{bad}");
}
