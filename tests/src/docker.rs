//! The throwaway Docker daemon `scripts/test` starts (`scripts/lib/docker.sh`), and the
//! `docker` CLI the tests use to set up containers (the tools under test never use it).

use std::io::Write as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The test daemon: its endpoint and the image its containers run.
pub struct Daemon {
    pub host: String,
    pub image: String,
}

/// The daemon, or `None` (the test skipped, with one line) when the script said it could not
/// start one here, or when none was provided outside `scripts/test`.
pub fn daemon() -> Option<Daemon> {
    if let Ok(why) = std::env::var("COREMCP_TEST_DOCKER_UNAVAILABLE") {
        let test = std::thread::current().name().unwrap_or("a test").to_owned();
        let _ = writeln!(
            std::io::stderr(),
            "skipped {test}: no Docker daemon ({why})"
        );
        return None;
    }
    let host = crate::external(
        "COREMCP_TEST_DOCKER_HOST",
        "it needs the throwaway dockerd that scripts/lib/docker.sh starts",
    )?;
    let image = std::env::var("COREMCP_TEST_DOCKER_IMAGE")
        .unwrap_or_else(|_| "coremcp-test/busybox:latest".to_owned());
    Some(Daemon { host, image })
}

impl Daemon {
    /// A Compose project in `folder` (created): one service, `web`, of this daemon's image,
    /// without a network, that says "web up" and waits until it is stopped.
    pub fn web_project(&self, folder: &std::path::Path) {
        std::fs::create_dir_all(folder).expect("mkdir");
        std::fs::write(
            folder.join("docker-compose.yml"),
            format!(
                "version: \"2.4\"\nservices:\n  web:\n    image: {}\n    network_mode: none\n    \
                 command: [\"sh\", \"-c\", \"trap 'exit 0' TERM; echo web up; sleep 1000 & wait\"]\n",
                self.image
            ),
        )
        .expect("compose file");
    }

    /// Runs `docker ARGS` against this daemon; returns stdout (panics when it fails).
    pub fn cli(&self, args: &[&str]) -> String {
        #[allow(clippy::disallowed_methods)] // Test setup drives the real CLI directly.
        let out = Command::new("docker")
            .args(args)
            .env("DOCKER_HOST", &self.host)
            .stdin(Stdio::null())
            .output()
            .expect("run docker");
        assert!(
            out.status.success(),
            "docker {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// Starts a detached container named `name` running `script` in busybox `sh` (SIGTERM
    /// ends it, unlike a bare `sh` as PID 1), with `extra` options before the image.
    pub fn run(&self, name: &str, extra: &[&str], script: &str) -> String {
        let mut args = vec!["run", "-d", "--network", "none", "--name", name];
        args.extend_from_slice(extra);
        let script = format!("trap 'exit 0' TERM; {script}");
        args.extend_from_slice(&[self.image.as_str(), "sh", "-c", &script]);
        self.cli(&args)
    }

    /// Waits until `docker inspect` says container `name` is in `state`.
    pub fn wait_state(&self, name: &str, state: &str) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let now = self.cli(&["inspect", "-f", "{{.State.Status}}", name]);
            if now == state {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{name} stayed {now}, never {state}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Removes the containers named, ignoring those already gone.
    pub fn remove(&self, names: &[&str]) {
        #[allow(clippy::disallowed_methods)] // Test clean-up drives the real CLI directly.
        let _ = Command::new("docker")
            .args(["rm", "-f"])
            .args(names)
            .env("DOCKER_HOST", &self.host)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// Removes the containers it names when dropped, so a failing test leaves none behind.
pub struct Cleanup<'a> {
    daemon: &'a Daemon,
    names: Vec<String>,
}

impl<'a> Cleanup<'a> {
    pub fn new(daemon: &'a Daemon, names: &[&str]) -> Self {
        Self {
            daemon,
            names: names.iter().map(|n| (*n).to_owned()).collect(),
        }
    }
}

impl Drop for Cleanup<'_> {
    fn drop(&mut self) {
        let names: Vec<&str> = self.names.iter().map(String::as_str).collect();
        self.daemon.remove(&names);
    }
}

/// A stand-in daemon on 127.0.0.1 that speaks the Engine API's wire format for the two
/// requests a container list makes — `/version` (API 1.41, as the real dockerd of
/// `scripts/test` answers) and `/v1.41/containers/json` (`list`, the body sent as given) — for
/// the answers a real daemon cannot be made to give here (90 000 containers); every other
/// request is a 404. Its endpoint.
pub fn stand_in(list: Vec<u8>) -> String {
    use std::io::{BufRead, BufReader};
    let list = std::sync::Arc::new(list);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { break };
            let list = std::sync::Arc::clone(&list);
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                let mut first = String::new();
                if reader.read_line(&mut first).is_err() {
                    return;
                }
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line != "\r\n" {
                    line.clear();
                }
                let path = first.split_whitespace().nth(1).unwrap_or("/").to_owned();
                let version = br#"{"ApiVersion":"1.41","MinAPIVersion":"1.12","Version":"20.10.24","Os":"linux","Arch":"amd64"}"#;
                let (status, body): (&str, &[u8]) = if path == "/version" {
                    ("200 OK", version)
                } else if path.starts_with("/v1.41/containers/json") {
                    ("200 OK", &list)
                } else {
                    ("404 Not Found", br#"{"message":"page not found"}"#)
                };
                let head = format!(
                    "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                    body.len()
                );
                let _ = stream
                    .write_all(head.as_bytes())
                    .and_then(|()| stream.write_all(body));
            });
        }
    });
    format!("tcp://{addr}")
}
