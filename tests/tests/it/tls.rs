//! `coremcp serve --tls-cert --tls-key`: MCP over https with a certificate from the test's own
//! CA, checked by curl as a client trusting that CA; the certificate read again on SIGHUP;
//! bad files refused before anything starts.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use coremcp_tests::http::Serve;
use coremcp_tests::tls::{ServerCert, TestCa};
use coremcp_tests::{is_error, plugins, run, text, Server, TempDir, WAIT};
use serde_json::{json, Value};

/// `curl` against the server: (exit code, body, stderr).
fn curl(args: &[&str]) -> (i32, String, String) {
    #[allow(clippy::disallowed_methods)] // A real TLS client, as a user's would be.
    let out = Command::new("curl")
        .args(["--silent", "--show-error", "--max-time", "10"])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run curl");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The subject of the certificate the server presents now (a fresh handshake).
fn presented_subject(addr: &str, ca: &str) -> String {
    let (_, _, verbose) = curl(&[
        "--verbose",
        "--cacert",
        ca,
        &format!("https://{addr}/healthz"),
    ]);
    verbose
        .lines()
        .find_map(|l| l.split("subject: ").nth(1))
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn serve_speaks_tls_with_its_certificate_and_reads_it_again_on_sighup() {
    let work = TempDir::new("tls");
    let ca = TestCa::new(work.path(), "test-ca");
    let first = ca.issue("first", "IP:127.0.0.1,DNS:localhost", 30);
    let dir = plugins(&["fixture"]);
    let cert = work.path().join("server.pem");
    let key = work.path().join("server.key");
    std::fs::copy(&first.cert, &cert).expect("copy");
    std::fs::copy(&first.key, &key).expect("copy");
    let server = Serve::start(
        dir.path(),
        &[
            "--groups",
            "fixture",
            "--tls-cert",
            &cert.to_string_lossy(),
            "--tls-key",
            &key.to_string_lossy(),
        ],
    );
    let stderr = server.wait_stderr("(proxy mode", WAIT);
    assert!(
        stderr.contains(&format!("listening on https://{}/mcp", server.addr)),
        "{stderr}"
    );
    let addr = server.addr.to_string();
    let ca_file = ca.cert().to_string_lossy().into_owned();
    let url = format!("https://{addr}/mcp");

    let (code, body, err) = curl(&["--cacert", &ca_file, &format!("https://{addr}/healthz")]);
    assert_eq!((code, body.as_str()), (0, "ok\n"), "{err}");
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"0"}}}"#;
    let (code, body, err) = curl(&[
        "--cacert",
        &ca_file,
        "-H",
        "content-type: application/json",
        "-H",
        "accept: application/json, text/event-stream",
        "--data",
        init,
        &url,
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        body.contains("\"protocolVersion\":\"2025-06-18\""),
        "{body}"
    );
    // A client that does not trust the CA refuses the certificate; plain http gets nothing.
    let (code, _, err) = curl(&[&format!("https://{addr}/healthz")]);
    assert_ne!(code, 0);
    assert!(err.contains("certificate"), "{err}");
    let (code, _, _) = curl(&[&format!("http://{addr}/healthz")]);
    assert_ne!(code, 0, "plain http is not served on a TLS port");

    // A new certificate in the same files, then SIGHUP: new handshakes get it.
    assert!(presented_subject(&addr, &ca_file).contains("CN=first"));
    let second = ca.issue("second", "IP:127.0.0.1,DNS:localhost", 30);
    std::fs::copy(&second.cert, &cert).expect("copy");
    std::fs::copy(&second.key, &key).expect("copy");
    server.signal(libc::SIGHUP);
    server.wait_stderr("TLS certificate and key read again", WAIT);
    let deadline = Instant::now() + WAIT;
    while !presented_subject(&addr, &ca_file).contains("CN=second") {
        assert!(
            Instant::now() < deadline,
            "the new certificate was never served"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // A broken file on the next SIGHUP keeps the certificate in use.
    std::fs::write(&key, "not a key").expect("write");
    server.signal(libc::SIGHUP);
    let said = server.wait_stderr("the certificate in use stays", WAIT);
    assert!(said.contains("--tls-key"), "{said}");
    assert!(presented_subject(&addr, &ca_file).contains("CN=second"));
}

#[test]
fn bad_certificate_flags_are_usage_errors() {
    let work = TempDir::new("tls-bad");
    let ca = TestCa::new(work.path(), "bad-ca");
    let one = ca.issue("one", "DNS:localhost", 30);
    let two = ca.issue("two", "DNS:localhost", 30);
    let serve = |args: &[&str]| {
        let mut all = vec!["serve", "--listen", "127.0.0.1:0"];
        all.extend_from_slice(args);
        run(&all, &[])
    };
    let (cert, key) = (one.cert.to_string_lossy(), one.key.to_string_lossy());
    let (code, _, stderr) = serve(&["--tls-cert", &cert]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("give both or neither"), "{stderr}");
    let missing = work.path().join("missing.pem");
    let (code, _, stderr) = serve(&["--tls-cert", &missing.to_string_lossy(), "--tls-key", &key]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("--tls-cert") && stderr.contains("missing.pem"),
        "{stderr}"
    );
    let (code, _, stderr) = serve(&["--tls-cert", &cert, "--tls-key", &two.key.to_string_lossy()]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("do not belong together"), "{stderr}");
}

/// A service-mode relay with the Notepad group, serving TLS with `cert`, on its own store.
fn relay(dir: &std::path::Path, cert: &ServerCert, data: &TempDir) -> Serve {
    let (c, k) = (cert.cert.to_string_lossy(), cert.key.to_string_lossy());
    let data = data.path().to_string_lossy().into_owned();
    Serve::start_on(
        dir,
        "127.0.0.1:0",
        &["--service", "--tls-cert", &c, "--tls-key", &k],
        &[("COREMCP_DATA", &data)],
    )
}

#[test]
fn relays_over_https_fail_over_on_a_refused_certificate_with_the_reason() {
    let work = TempDir::new("tls-relays");
    let trusted = TestCa::new(work.path(), "trusted");
    let stranger = TestCa::new(work.path(), "stranger");
    let good = trusted.issue("good", "IP:127.0.0.1", 30);
    let unknown = stranger.issue("unknown", "IP:127.0.0.1", 30);
    let mismatch = trusted.issue("mismatch", "DNS:other.example", 30);
    let expired = trusted.issue("expired", "IP:127.0.0.1", 0);
    // Past the expired one's last second.
    std::thread::sleep(Duration::from_millis(1100));
    let dir = plugins(&["notepad"]);
    let datas: Vec<TempDir> = (0..4)
        .map(|i| TempDir::new(&format!("relay-{i}")))
        .collect();
    let relays: Vec<Serve> = [&unknown, &mismatch, &expired, &good]
        .iter()
        .zip(&datas)
        .map(|(cert, data)| relay(dir.path(), cert, data))
        .collect();
    let mut args = vec![
        "--ca-file".to_owned(),
        trusted.cert().to_string_lossy().into_owned(),
    ];
    for r in &relays {
        args.extend(["--relay".to_owned(), format!("https://{}/mcp", r.addr)]);
    }
    let proxy_data = TempDir::new("proxy");
    args.extend([
        "--data".to_owned(),
        proxy_data.path().to_string_lossy().into_owned(),
    ]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut proxy = Server::start(dir.path(), &args, &[]);
    proxy.initialize();
    let set = proxy.call(
        "notepad_set",
        json!({"scope": "global", "key": "k", "value": "over https"}),
    );
    assert!(!is_error(&set), "{}", text(&set));
    let got = proxy.ok("notepad_get", json!({"scope": "global", "key": "k"}));
    assert_eq!(got["value"], "over https");
    // Each refused relay is named with why, as a connect failure (skipped, not retried).
    for reason in [
        "is signed by an unknown issuer",
        "is not valid for this host name",
        "has expired",
    ] {
        let said = proxy.wait_stderr(reason, WAIT);
        assert!(
            said.contains("the certificate of 127.0.0.1 is not accepted"),
            "{said}"
        );
    }
    // Without --ca-file the test CA is unknown: every relay is refused, and the agent is told.
    let mut untrusting = Server::start(dir.path(), &args[2..], &[]);
    untrusting.initialize();
    let refused = untrusting.refused("notepad_get", json!({"scope": "global", "key": "k"}));
    assert!(refused.contains("certificate"), "{refused}");
}

#[test]
fn an_upstream_server_over_https_is_reached_with_the_extra_ca() {
    let work = TempDir::new("tls-upstream");
    let ca = TestCa::new(work.path(), "up-ca");
    let cert = ca.issue("up", "IP:127.0.0.1,DNS:localhost", 30);
    let dir = plugins(&["fixture"]);
    let (c, k) = (cert.cert.to_string_lossy(), cert.key.to_string_lossy());
    let upstream = Serve::start(
        dir.path(),
        &["--groups", "fixture", "--tls-cert", &c, "--tls-key", &k],
    );
    let config = work.path().join("mcp.json");
    let entry = json!({"servers": [{"id": "secure", "type": "http",
                                    "url": format!("https://{}/mcp", upstream.addr)}]});
    std::fs::write(&config, entry.to_string()).expect("write");
    let config = config.to_string_lossy().into_owned();
    let env = [
        ("COREMCP_MCP_CONFIG", config.as_str()),
        ("COREMCP_MCP_SERVERS", ""),
    ];
    let ca_file = ca.cert().to_string_lossy().into_owned();
    let (code, stdout, stderr) = run(&["upstream", "--json", "--ca-file", &ca_file], &env);
    assert_eq!(code, 0, "{stderr}");
    let report: Value = serde_json::from_str(&stdout).expect("json");
    let server = &report["servers"][0];
    assert_eq!(server["state"], "connected", "{server}");
    assert!(server["tools"].as_u64().is_some_and(|n| n >= 7), "{server}");
    // Without the CA: refused, saying so.
    let (_, stdout, _) = run(&["upstream", "--json"], &env);
    let report: Value = serde_json::from_str(&stdout).expect("json");
    let reason = report["servers"][0]["reason"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        reason.contains("certificate") && reason.contains("unknown issuer"),
        "{reason}"
    );
    // A bundle that cannot be used stops at once.
    let (code, _, stderr) = run(&["upstream", "--ca-file", &config], &env);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--ca-file"), "{stderr}");
}

#[test]
fn remote_host_reaches_a_core_mcp_over_https() {
    let work = TempDir::new("tls-remote");
    let ca = TestCa::new(work.path(), "remote-ca");
    let cert = ca.issue("devbox", "IP:127.0.0.1", 30);
    // The other machine: `coremcp serve` with the files group, over TLS, on its own root.
    let remote_root = TempDir::new("tls-remote-root");
    std::fs::write(remote_root.path().join("only-over-there.txt"), "x").expect("write");
    let remote_plugins = plugins(&["files"]);
    let (c, k) = (cert.cert.to_string_lossy(), cert.key.to_string_lossy());
    let root = remote_root.path().to_string_lossy().into_owned();
    let remote = Serve::start(
        remote_plugins.path(),
        &["--root", &root, "--tls-cert", &c, "--tls-key", &k],
    );
    let dir = plugins(&["files", "registry"]);
    let store =
        coremcp_tests::stores::StoreEnv::new(coremcp_tests::stores::Backend::Sqlite, "tls-rh");
    let local = TempDir::new("tls-local-root");
    let local_root = local.path().to_string_lossy().into_owned();
    let ca_file = ca.cert().to_string_lossy().into_owned();
    let mut agent = store.start(dir.path(), &["--root", &local_root, "--ca-file", &ca_file]);
    agent.ok(
        "registry_host_add",
        json!({"name": "devbox-tls", "address": "127.0.0.1",
               "core_mcp_url": format!("https://{}/mcp", remote.addr)}),
    );
    let there = agent.ok("files_list", json!({"remote_host": "devbox-tls"}));
    assert!(there.to_string().contains("only-over-there.txt"), "{there}");
}
