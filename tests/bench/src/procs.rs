//! Child processes and addresses for the bench drivers: a child killed on drop, a free port on
//! a loopback address, and the wait for a listener.

use std::net::{TcpListener, TcpStream};
use std::process::Child;
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
