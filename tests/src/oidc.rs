//! The OpenID provider of the OAuth tests: npm's oidc-provider (an OpenID Certified
//! implementation) run from `tests/oidc/provider.mjs`, which `scripts/lib/oidc.sh` installs
//! and names in `COREMCP_TEST_OIDC`. Tokens come from its token endpoint, as any client gets
//! them; the tests never make one by hand.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

/// The provider script, or `None` (the test skipped, with one line) without one.
pub fn script() -> Option<String> {
    crate::external(
        "COREMCP_TEST_OIDC",
        "it needs the OpenID provider (npm oidc-provider) that scripts/lib/oidc.sh installs",
    )
}

/// A running provider.
pub struct Provider {
    child: Child,
    pub addr: SocketAddr,
    /// The issuer it names itself.
    pub issuer: String,
}

impl Provider {
    /// Starts `script` on `port` as `issuer`, signing with a new RSA key of id `kid`; waits
    /// (30 s at most) until it listens.
    pub fn start(script: &str, port: u16, issuer: &str, kid: &str) -> Self {
        #[allow(clippy::disallowed_methods)] // The real provider, started as its README shows.
        let mut child = Command::new("node")
            .arg(script)
            .args([&port.to_string(), issuer, kid])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start node provider.mjs");
        // Its stderr (Node's warnings among it) is kept for a failure's message, not shown.
        let said = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let mut stderr = child.stderr.take().expect("stderr");
        let keep = std::sync::Arc::clone(&said);
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = std::io::Read::read_to_string(&mut stderr, &mut text);
            keep.lock().expect("stderr").push_str(&text);
        });
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let ready = rx.recv_timeout(Duration::from_secs(30));
        if ready.as_deref() != Ok("ready") {
            let _ = child.kill();
            let _ = child.wait();
            // Its stderr ends with the process; give the reader a moment to collect it.
            std::thread::sleep(Duration::from_millis(200));
            panic!(
                "the OpenID provider did not start ({ready:?}):\n{}",
                said.lock().expect("stderr")
            );
        }
        Self {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            issuer: issuer.to_owned(),
        }
    }

    /// Asks the token endpoint for a client credentials token of `client` (`sdk` or `short`:
    /// client_secret_post) for `resource`: the answer as JSON.
    pub fn token_answer(&self, client: &str, resource: &str) -> (u16, Value) {
        let body = format!(
            "grant_type=client_credentials&client_id={client}&client_secret={client}-secret-0123456789&resource={}&scope=notes",
            form(resource)
        );
        let response = crate::http::request(
            self.addr,
            "POST",
            "/token",
            &[("Content-Type", "application/x-www-form-urlencoded")],
            body.as_bytes(),
        );
        (response.status, response.json())
    }

    /// [`Provider::token_answer`]'s access token (which must be given).
    pub fn token(&self, client: &str, resource: &str) -> String {
        let (status, answer) = self.token_answer(client, resource);
        assert_eq!(status, 200, "{answer}");
        answer["access_token"]
            .as_str()
            .expect("access_token")
            .to_owned()
    }
}

impl Drop for Provider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Form encoding of a URL (only what a loopback URL holds needs it).
fn form(value: &str) -> String {
    value
        .replace('%', "%25")
        .replace(':', "%3A")
        .replace('/', "%2F")
        .replace('?', "%3F")
        .replace('&', "%26")
        .replace('=', "%3D")
}
