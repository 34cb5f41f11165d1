//! Child processes and addresses for the bench drivers: a child killed on drop, a free port on
//! a loopback address, the wait for a listener, and `coremcp serve` started on one.

use std::ffi::OsStr;
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A child process killed (and reaped) on drop.
pub struct Proc(pub Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `IP:PORT` with a port free on `ip` right now.
pub fn free_addr(ip: &str) -> Result<String, String> {
    let listener = TcpListener::bind((ip, 0)).map_err(|e| format!("bind {ip}: {e}"))?;
    Ok(listener
        .local_addr()
        .map_err(|e| e.to_string())?
        .to_string())
}

/// Waits (up to 20 s) until something accepts connections on `addr`.
pub fn wait_listening(addr: &str) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect(addr).is_err() {
        if Instant::now() > deadline {
            return Err(format!("nothing listens on {addr}"));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(())
}

/// `HOST serve --listen ADDR --plugins PLUGINS ARGS…` (with `env` added), once it accepts
/// connections.
pub fn serve<S: AsRef<OsStr>>(
    host: &Path,
    plugins: &Path,
    addr: &str,
    args: &[S],
    env: &[(&str, &str)],
) -> Result<Proc, String> {
    #[allow(clippy::disallowed_methods)] // The bench starts the binary it measures.
    let child = Command::new(host)
        .args(["serve", "--listen", addr, "--plugins"])
        .arg(plugins)
        .args(args)
        .envs(env.iter().copied())
        .env_remove("COREMCP_GROUPS")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("start coremcp serve: {e}"))?;
    let proc = Proc(child);
    wait_listening(addr)?;
    Ok(proc)
}
