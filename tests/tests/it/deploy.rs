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

    let name = format!("coremcp-image-{}", std::process::id());
    let _cleanup = Cleanup::new(&daemon, &[&name]);
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let store_env = format!("COREMCP_STORE={}", store.store);
    // Its bearer tokens come in as a read-only file, as a team would mount them.
    let secrets = TempDir::new("image-tokens");
    let tokens = secrets.path().join("tokens");
    std::fs::write(&tokens, format!("alice {TOKEN}\n")).expect("write tokens");
    let mount = format!("{}:/run/tokens:ro", tokens.display());
    let run = [
        "run",
        "-d",
        "--network",
        "host",
        "--name",
        &name,
        "-e",
        &store_env,
        "-v",
        &mount,
        "-e",
        "COREMCP_TOKENS=/run/tokens",
        &tag,
        "serve",
        "--service",
        "--listen",
        &listen,
    ];
    daemon.cli(&run);
    let addr = listen.parse().expect("address");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if std::net::TcpStream::connect(addr).is_ok()
            && request(addr, "GET", "/healthz", &[], b"").status == 200
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the container never answered /healthz:\n{}",
            daemon.cli(&["logs", &name])
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    let anonymous = request(addr, "POST", "/mcp", &[], b"{}");
    assert_eq!(
        anonymous.status,
        401,
        "{} {}",
        anonymous.text(),
        daemon.cli(&[
            "inspect",
            "-f",
            "{{.Config.Env}} {{.Mounts}} {{.Args}}",
            &name
        ])
    );

    // A developer's proxy reaches it as its relay.
    let dir = plugins(&["notepad"]);
    let relay = format!("http://{listen}/mcp");
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
    let bearer = format!("Bearer {TOKEN}");
    let status = request(
        addr,
        "GET",
        "/api/status",
        &[("Authorization", &bearer)],
        b"",
    )
    .json();
    assert_eq!(status["mode"], "service");

    // docker stop sends SIGTERM: the server drains and exits 0, well within the grace.
    let started = Instant::now();
    daemon.cli(&["stop", "-t", "40", &name]);
    assert!(
        started.elapsed() < Duration::from_secs(35),
        "{:?}",
        started.elapsed()
    );
    let state = daemon.cli(&[
        "inspect",
        "-f",
        "{{.State.ExitCode}} {{.State.OOMKilled}}",
        &name,
    ]);
    assert_eq!(state, "0 false");
    drop(proxy);
    daemon.remove(&[&name]);
    let _ = daemon.cli(&["image", "rm", "-f", &tag]);
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
