//! `coremcp serve --tls-cert --tls-key`: MCP over https with a certificate from the test's own
//! CA, checked by curl as a client trusting that CA; the certificate read again on SIGHUP;
//! bad files refused before anything starts.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use coremcp_tests::http::Serve;
use coremcp_tests::tls::TestCa;
use coremcp_tests::{plugins, run, TempDir, WAIT};

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
