//! Writes to an upstream server's stdin without ever blocking the writer.
//!
//! A session's stdin reader sends upstream calls itself (no pool thread in between), so a
//! server that stops reading must not be able to stall it. Our end of the pipe is
//! non-blocking: a line goes straight into the pipe when it fits; what does not fit waits in a
//! bounded backlog, which a thread started for the purpose writes out as the server reads.
//!
//! Invariants:
//! - Lines reach the server whole and in the order they were written.
//! - [`Pipe::write_line`] never blocks on the server: it returns once the line is in the pipe
//!   or in the backlog. A line that would take the backlog past [`BACKLOG_LIMIT`] is refused
//!   (the server is not reading), and so is every line after a write failed (it went away).

use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::process::ChildStdin;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

/// What may wait for a server that does not read, at most.
pub(crate) const BACKLOG_LIMIT: usize = 16 << 20;
/// How long the backlog's thread waits for the pipe between looks at its state.
const POLL_SLICE: Duration = Duration::from_millis(500);

struct State {
    pipe: Option<ChildStdin>,
    backlog: VecDeque<u8>,
    /// Why writing stopped for good, once it did.
    failed: Option<io::ErrorKind>,
    draining: bool,
}

/// The write end of an upstream server's stdin.
pub(crate) struct Pipe {
    shared: Arc<(Mutex<State>, Condvar)>,
}

impl Pipe {
    /// Takes over `pipe` (made non-blocking; `None`: a server without stdin, every write fails).
    pub fn new(pipe: Option<ChildStdin>) -> Self {
        if let Some(pipe) = &pipe {
            set_nonblocking(pipe.as_raw_fd());
        }
        Self {
            shared: Arc::new((
                Mutex::new(State {
                    pipe,
                    backlog: VecDeque::new(),
                    failed: None,
                    draining: false,
                }),
                Condvar::new(),
            )),
        }
    }

    /// Sends `line` (which ends with its newline), now or from the backlog.
    pub(crate) fn write_line(&self, line: &[u8]) -> io::Result<()> {
        let (lock, _) = &*self.shared;
        let mut state = lock.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(kind) = state.failed {
            return Err(kind.into());
        }
        let Some(fd) = state.pipe.as_ref().map(AsRawFd::as_raw_fd) else {
            return Err(io::ErrorKind::BrokenPipe.into());
        };
        let mut rest = line;
        if state.backlog.is_empty() {
            match write_some(fd, rest) {
                Ok(n) => rest = &rest[n..],
                Err(e) => {
                    state.failed = Some(e.kind());
                    return Err(e);
                }
            }
        }
        if rest.is_empty() {
            return Ok(());
        }
        if state.backlog.len() + rest.len() > BACKLOG_LIMIT {
            return Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                format!(
                    "the server is not reading its input ({} bytes are waiting for it)",
                    state.backlog.len()
                ),
            ));
        }
        state.backlog.extend(rest);
        if !state.draining {
            state.draining = true;
            let shared = Arc::clone(&self.shared);
            let started = std::thread::Builder::new()
                .name("coremcp-upstream-in".to_owned())
                .spawn(move || drain(&shared));
            if let Err(e) = started {
                state.draining = false;
                state.failed = Some(io::ErrorKind::Other);
                return Err(io::Error::other(format!(
                    "cannot start a writer thread: {e}"
                )));
            }
        }
        Ok(())
    }
}

/// Writes the backlog out as the server reads it; ends when it is empty or writing failed.
fn drain(shared: &(Mutex<State>, Condvar)) {
    let (lock, _) = shared;
    loop {
        let fd = {
            let mut state = lock.lock().unwrap_or_else(PoisonError::into_inner);
            let Some(fd) = state.pipe.as_ref().map(AsRawFd::as_raw_fd) else {
                state.draining = false;
                return;
            };
            while !state.backlog.is_empty() {
                let (front, _) = state.backlog.as_slices();
                match write_some(fd, front) {
                    Ok(0) => break,
                    Ok(n) => drop(state.backlog.drain(..n)),
                    Err(e) => {
                        state.failed = Some(e.kind());
                        state.backlog.clear();
                    }
                }
            }
            if state.backlog.is_empty() {
                state.draining = false;
                return;
            }
            fd
        };
        // Outside the lock: new lines join the backlog meanwhile.
        wait_writable(fd, POLL_SLICE);
    }
}

/// Writes what the pipe takes now (0 when it is full).
fn write_some(fd: RawFd, bytes: &[u8]) -> io::Result<usize> {
    let mut written = 0;
    while written < bytes.len() {
        let rest = &bytes[written..];
        // SAFETY: `fd` is the open write end of the pipe, owned by the state whose lock the
        // caller holds; `rest` is a live buffer of `rest.len()` bytes.
        let n = unsafe { libc::write(fd, rest.as_ptr().cast(), rest.len()) };
        if n >= 0 {
            written += n as usize;
            continue;
        }
        let e = io::Error::last_os_error();
        match e.kind() {
            io::ErrorKind::Interrupted => {}
            io::ErrorKind::WouldBlock => break,
            _ => return Err(e),
        }
    }
    Ok(written)
}

fn wait_writable(fd: RawFd, limit: Duration) {
    let mut poll = libc::pollfd {
        fd,
        events: libc::POLLOUT,
        revents: 0,
    };
    // SAFETY: one valid pollfd; a closed or failed pipe only makes poll return early.
    unsafe { libc::poll(&mut poll, 1, limit.as_millis() as libc::c_int) };
}

fn set_nonblocking(fd: RawFd) {
    // SAFETY: fcntl on a descriptor we own; it only changes the flags of our open file.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags >= 0 {
            libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::process::{Command, Stdio};
    use std::time::Instant;

    /// `sleep`-then-`cat`: a server that reads nothing for a while, then everything.
    fn late_reader(seconds: &str) -> (std::process::Child, Pipe) {
        #[allow(clippy::disallowed_methods)] // A plain child to write to.
        let mut child = Command::new("sh")
            .args(["-c", &format!("sleep {seconds}; cat")])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("sh");
        let pipe = Pipe::new(child.stdin.take());
        (child, pipe)
    }

    #[test]
    fn a_server_that_does_not_read_never_blocks_the_writer_and_loses_nothing() {
        let (mut child, pipe) = late_reader("1");
        let line = vec![b'x'; 1000];
        let mut line = line;
        line.push(b'\n');
        let started = Instant::now();
        for _ in 0..1000 {
            pipe.write_line(&line).expect("queued");
        }
        assert!(
            started.elapsed() < Duration::from_millis(500),
            "1 MB written to a pipe nobody reads took {:?}",
            started.elapsed()
        );
        drop(pipe); // the backlog's thread still holds the pipe until it is written out
        let mut out = Vec::new();
        child
            .stdout
            .take()
            .expect("stdout")
            .read_to_end(&mut out)
            .expect("read");
        assert_eq!(out.len(), 1000 * 1001, "every byte, in order");
        assert!(out.chunks(1001).all(|c| c == line.as_slice()));
        let _ = child.wait();
    }

    #[test]
    fn the_backlog_is_bounded() {
        let (mut child, pipe) = late_reader("30");
        let big = vec![b'y'; BACKLOG_LIMIT / 4];
        let mut refused = None;
        for _ in 0..8 {
            if let Err(e) = pipe.write_line(&big) {
                refused = Some(e);
                break;
            }
        }
        let e = refused.expect("refused once the backlog is full");
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
        assert!(e.to_string().contains("not reading its input"), "{e}");
        let _ = child.kill();
        let _ = child.wait();
    }
}
