//! Running Core MCP for a team: the container image `scripts/image` makes (no base image) on
//! the real test dockerd, with PostgreSQL as its store, reached as a relay from a proxy and
//! stopped cleanly; and the systemd unit in `deploy/`, checked by systemd's own verifier.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use coremcp_tests::docker::{self, Cleanup};
use coremcp_tests::http::request;
use coremcp_tests::stores::{Backend, StoreEnv};
use coremcp_tests::{free_port, plugins, Server, TempDir};
use serde_json::json;

/// The bearer token of the image's one principal.
const TOKEN: &str = "image-test-0123456789abcdef";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn full_profile() -> Option<PathBuf> {
    let root = coremcp_tests::external(
        "COREMCP_TEST_DIST",
        "it needs the profiles that scripts/build --dist lays out",
    )?;
    Some(PathBuf::from(root).join("full"))
}

#[test]
fn the_image_serves_a_relay_on_postgres_and_stops_cleanly() {
    let (Some(daemon), Some(full)) = (docker::daemon(), full_profile()) else {
        return;
    };
    if coremcp_tests::postgres().is_none() {
        return;
    }
    let store = StoreEnv::new(Backend::Postgres, "image");
    let tag = format!("coremcp-test/service:{}", std::process::id());
    #[allow(clippy::disallowed_methods)] // The script under test, run as a person would.
    let built = Command::new(repo().join("scripts/image"))
        .args(["--dist", &full.to_string_lossy(), "--tag", &tag])
        .env("DOCKER_HOST", &daemon.host)
        .stdin(Stdio::null())
        .output()
        .expect("run scripts/image");
    assert!(
        built.status.success(),
        "scripts/image: {}",
        String::from_utf8_lossy(&built.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&built.stdout).trim(), tag);
    // One layer, from nothing: no base image was pulled or used; not root.
    let inspect = |format: &str| daemon.cli(&["image", "inspect", "-f", format, &tag]);
    assert_eq!(inspect("{{len .RootFS.Layers}}"), "1");
    assert_eq!(inspect("{{.Parent}}"), "");
    assert_eq!(inspect("{{.Config.User}}"), "10001:10001");

    // The README's line, word for word, with only the env file and the image substituted.
    let line = readme_run_line();
    assert_eq!(
        line[..6],
        ["docker", "run", "-d", "--network", "host", "--env-file"],
        "{line:?}"
    );
    assert_eq!(
        (line.len(), line[6].as_str()),
        (8, "service.env"),
        "{line:?}"
    );
    let port = free_port();
    let secrets = TempDir::new("image-env");
    let env_file = secrets.path().join("service.env");
    let tokens_text = format!("alice {TOKEN};ci ci-token-0123456789abcdef");
    std::fs::write(
        &env_file,
        service_env(&store.store, port, Some(&tokens_text)),
    )
    .expect("write env file");
    let mut run: Vec<String> = line[1..].to_vec();
    run[5] = env_file.to_string_lossy().into_owned();
    run[6].clone_from(&tag);
    let run: Vec<&str> = run.iter().map(String::as_str).collect();
    let id = daemon.cli(&run);
    let _cleanup = Cleanup::new(&daemon, &[&id]);
    // No volume: the settings and the tokens came in the environment.
    assert_eq!(daemon.cli(&["inspect", "-f", "{{len .Mounts}}", &id]), "0");
    let addr = format!("127.0.0.1:{port}").parse().expect("address");
    wait_healthy(&daemon, &id, addr);

    let anonymous = request(addr, "POST", "/mcp", &[], b"{}");
    assert_eq!(anonymous.status, 401, "{}", anonymous.text());

    // A developer's proxy reaches it as its relay.
    let dir = plugins(&["notepad"]);
    let relay = format!("http://127.0.0.1:{port}/mcp");
    let data = TempDir::new("proxy-data");
    let args = ["--relay", &relay, "--data", &data.path().to_string_lossy()];
    // Without the token the relay turns the proxy away, and the agent is told why.
    let mut stranger = Server::start(dir.path(), &args, &[]);
    stranger.initialize();
    let refused = stranger.refused("notepad_get", json!({"scope": "global", "key": "x"}));
    assert!(refused.contains("401"), "{refused}\n{}", stranger.stderr());
    drop(stranger);
    let mut proxy = Server::start(dir.path(), &args, &[("COREMCP_RELAY_TOKEN", TOKEN)]);
    proxy.initialize();
    proxy.ok(
        "notepad_set",
        json!({"scope": "global", "key": "from-proxy", "value": "through the image"}),
    );
    let got = proxy.ok(
        "notepad_get",
        json!({"scope": "global", "key": "from-proxy"}),
    );
    assert_eq!(got["value"], "through the image");
    // Written in the image's PostgreSQL, not in the proxy's own store.
    let rows = store.query(
        "nervhq",
        "SELECT value FROM notepad_entry WHERE key = 'from-proxy'",
    );
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert!(!data.path().join("nervhq.sqlite3").exists());
    let status = status_of(addr, TOKEN);
    assert_eq!(status.status, 200, "{}", status.text());
    assert_eq!(status.json()["mode"], "service");
    // The second token of the variable is accepted too.
    assert_eq!(status_of(addr, "ci-token-0123456789abcdef").status, 200);

    // docker stop sends SIGTERM: the server drains and exits 0, well within the grace.
    stop_cleanly(&daemon, &id);
    drop(proxy);
    daemon.remove(&[&id]);

    mounted_tokens_file(&daemon, &tag, &store.store);
    let _ = daemon.cli(&["image", "rm", "-f", &tag]);
}

/// The team guide's other set-up: the tokens in a mounted file. Owned by root with mode 0600
/// the image's user cannot read it, and the relay stops at start saying what to do; owned by
/// that user (uid 10001, mode 0400), as the guide shows, it serves.
fn mounted_tokens_file(daemon: &docker::Daemon, tag: &str, store: &str) {
    use std::os::unix::fs::PermissionsExt;
    let secrets = TempDir::new("image-tokens");
    let env_file = secrets.path().join("service.env");
    let tokens = secrets.path().join("tokens");
    std::fs::write(&tokens, format!("alice {TOKEN}\n")).expect("write tokens");
    std::fs::set_permissions(&tokens, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    // SAFETY: geteuid(2) takes nothing and always succeeds.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped the mounted tokens file: chown to the image's user needs root");
        return;
    }
    let port = free_port();
    std::fs::write(&env_file, service_env(store, port, None)).expect("write env file");
    let env_path = env_file.to_string_lossy().into_owned();
    let mount = format!("{}:/run/tokens:ro", tokens.display());
    let run = |extra: &[&str]| {
        let mut args = vec!["run", "-d", "--network", "host", "--env-file", &env_path];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["-v", &mount, "-e", "COREMCP_TOKENS=/run/tokens", tag]);
        daemon.cli(&args)
    };
    // Root's, 0600: refused at start, naming the user and the way out.
    let id = run(&[]);
    let _cleanup = Cleanup::new(daemon, &[&id]);
    daemon.wait_state(&id, "exited");
    assert_eq!(
        daemon.cli(&["inspect", "-f", "{{.State.ExitCode}}", &id]),
        "2"
    );
    let said = logs(daemon, &id);
    assert!(
        said.contains("permission denied to this process (uid 10001")
            && said.contains("chown 10001 /run/tokens")
            && said.contains("COREMCP_TOKENS_TEXT"),
        "{said}"
    );
    daemon.remove(&[&id]);
    // The guide's way: owned by the image's user, readable by it alone.
    std::os::unix::fs::chown(&tokens, Some(10001), Some(10001)).expect("chown");
    std::fs::set_permissions(&tokens, std::fs::Permissions::from_mode(0o400)).expect("chmod");
    let id = run(&[]);
    let _cleanup = Cleanup::new(daemon, &[&id]);
    let addr = format!("127.0.0.1:{port}").parse().expect("address");
    wait_healthy(daemon, &id, addr);
    let status = status_of(addr, TOKEN);
    assert_eq!(status.status, 200, "{}", status.text());
    stop_cleanly(daemon, &id);
}

/// `GET /api/status` with `token`.
fn status_of(addr: std::net::SocketAddr, token: &str) -> coremcp_tests::http::Response {
    let bearer = format!("Bearer {token}");
    request(
        addr,
        "GET",
        "/api/status",
        &[("Authorization", &bearer)],
        b"",
    )
}

/// The README's `docker run` line for the image, as words.
fn readme_run_line() -> Vec<String> {
    let readme = std::fs::read_to_string(repo().join("README.md")).expect("read README");
    let line = readme
        .split('`')
        .find(|piece| piece.starts_with("docker run ") && piece.contains("--env-file"))
        .expect("README shows how to run the image");
    line.split_whitespace().map(str::to_owned).collect()
}

/// `deploy/service.env.example` as a team fills it in: the store, the port, and (for a
/// container with no volume) the tokens.
fn service_env(store: &str, port: u16, tokens_text: Option<&str>) -> String {
    let example = std::fs::read_to_string(repo().join("deploy/service.env.example"))
        .expect("read the example");
    let mut filled = Vec::new();
    let (mut set_store, mut set_listen, mut set_tokens) = (false, false, false);
    for line in example.lines() {
        if line.starts_with("COREMCP_STORE=") {
            filled.push(format!("COREMCP_STORE={store}"));
            set_store = true;
        } else if line == "COREMCP_LISTEN=0.0.0.0:7070" {
            filled.push(format!("COREMCP_LISTEN=0.0.0.0:{port}"));
            set_listen = true;
        } else if let (Some(_), Some(tokens)) =
            (line.strip_prefix("# COREMCP_TOKENS_TEXT="), tokens_text)
        {
            filled.push(format!("COREMCP_TOKENS_TEXT={tokens}"));
            set_tokens = true;
        } else {
            filled.push(line.to_owned());
        }
    }
    assert!(
        set_store && set_listen && (set_tokens || tokens_text.is_none()),
        "the example names the store, the listen address and the tokens:\n{example}"
    );
    filled.join("\n") + "\n"
}

fn logs(daemon: &docker::Daemon, id: &str) -> String {
    #[allow(clippy::disallowed_methods)] // The container's output, as `docker logs` shows it.
    let out = Command::new("docker")
        .args(["logs", id])
        .env("DOCKER_HOST", &daemon.host)
        .stdin(Stdio::null())
        .output()
        .expect("docker logs");
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

/// Polls `/healthz` at `addr` until the container answers (30 s at most).
fn wait_healthy(daemon: &docker::Daemon, id: &str, addr: std::net::SocketAddr) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if std::net::TcpStream::connect(addr).is_ok()
            && request(addr, "GET", "/healthz", &[], b"").status == 200
        {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the container never answered /healthz:\n{}",
            logs(daemon, id)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `docker stop`: SIGTERM, then the server drains and exits 0 well within the grace.
fn stop_cleanly(daemon: &docker::Daemon, id: &str) {
    let started = Instant::now();
    daemon.cli(&["stop", "-t", "40", id]);
    assert!(
        started.elapsed() < Duration::from_secs(35),
        "{:?}",
        started.elapsed()
    );
    let state = daemon.cli(&[
        "inspect",
        "-f",
        "{{.State.ExitCode}} {{.State.OOMKilled}}",
        id,
    ]);
    assert_eq!(state, "0 false");
}

#[test]
fn the_systemd_unit_is_valid_and_hardened() {
    let unit = std::fs::read_to_string(repo().join("deploy/coremcp.service")).expect("read unit");
    for line in [
        "DynamicUser=yes",
        "NoNewPrivileges=yes",
        "ProtectSystem=strict",
        "StateDirectory=coremcp",
        "ExecStart=/opt/coremcp/bin/coremcp serve --service",
        "KillSignal=SIGTERM",
        "CapabilityBoundingSet=",
    ] {
        assert!(unit.lines().any(|l| l == line), "{line} missing");
    }
    let Some(full) = full_profile() else {
        return;
    };
    let analyze = Path::new("/usr/bin/systemd-analyze");
    if !analyze.exists() {
        assert!(
            std::env::var_os(coremcp_tests::RUN_ALL).is_none(),
            "systemd-analyze is missing (Debian's systemd package has it)"
        );
        return;
    }
    // The unit as installed: the binary where the unit looks for it, its settings file.
    let scratch = TempDir::new("unit");
    let env_file = scratch.path().join("service.env");
    std::fs::copy(repo().join("deploy/service.env.example"), &env_file).expect("copy env");
    let binary = full.join("bin/coremcp");
    let installed = unit
        .replace("/opt/coremcp/bin/coremcp", &binary.to_string_lossy())
        .replace("/etc/coremcp/service.env", &env_file.to_string_lossy());
    let path = scratch.path().join("coremcp.service");
    std::fs::write(&path, installed).expect("write unit");
    #[allow(clippy::disallowed_methods)] // systemd's own checker of unit files.
    let out = Command::new(analyze)
        .args(["verify", "--man=no", "--recursive-errors=no"])
        .arg(&path)
        .stdin(Stdio::null())
        .output()
        .expect("run systemd-analyze");
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    // Without a running systemd (a container) it cannot load the rest of the system's units;
    // it still parses every line of ours, and names any it does not understand.
    let ours: Vec<&str> = said
        .lines()
        .filter(|l| l.contains("coremcp.service"))
        .collect();
    assert!(ours.is_empty(), "systemd-analyze verify:\n{said}");
}
