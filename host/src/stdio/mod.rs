//! The stdio transport: newline-delimited JSON-RPC on stdin and stdout.
//!
//! Invariants:
//! - The pipes are read and written directly: the reading thread hands each line to the session
//!   itself and runs a call there too, handing the reading to another thread if the call runs
//!   long ([`readers`]); answers are written by whichever thread produced them, one `write`
//!   each, or one for a burst a thread had in hand ([`Cork`], [`outbox`]).
//! - A line longer than [`MAX_LINE_BYTES`] without a newline is discarded as it streams in and
//!   reported; memory stays bounded by the limit, whatever arrives.
//! - Only the protocol writes to the real stdout: fd 1 is re-pointed at stderr before any
//!   plugin loads, so stray prints (a plugin's, a child's) land in the log.
//! - SIGHUP reloads the plugins ([`Session::reload`]); it is blocked in every thread and read
//!   from a `signalfd` by the watcher of [`readers`], so no code runs in a signal handler.

use std::fs::File;
use std::io::{self, BufRead};
use std::os::fd::{AsFd, FromRawFd};
use std::sync::Arc;
use std::time::Duration;

use crate::mcp::MAX_LINE_BYTES;

mod outbox;
mod readers;

use crate::session::{Outbox, Session};
pub use outbox::Cork;
use outbox::StdoutOutbox;

/// How long, after stdin closes, calls in flight get to answer before the process exits.
const DRAIN_LIMIT: Duration = Duration::from_secs(30);

/// What the line reader found.
#[derive(Debug, PartialEq, Eq)]
pub enum Event<'a> {
    Line(&'a [u8]),
    /// A line of this many bytes was discarded for exceeding the limit.
    Oversize(u64),
}

/// Splits a byte stream into lines of at most `limit` bytes.
pub struct LineReader<R> {
    inner: R,
    limit: usize,
    partial: Vec<u8>,
    /// Bytes of an oversize line discarded so far.
    discarding: Option<u64>,
}

impl<R: BufRead> LineReader<R> {
    pub fn new(inner: R, limit: usize) -> Self {
        Self {
            inner,
            limit,
            partial: Vec::new(),
            discarding: None,
        }
    }

    /// Reads until the next event or the end of input (`Ok(false)`).
    pub fn next(&mut self, mut on: impl FnMut(Event<'_>)) -> io::Result<bool> {
        loop {
            let chunk = match self.inner.fill_buf() {
                Ok(chunk) => chunk,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if chunk.is_empty() {
                if let Some(bytes) = self.discarding.take() {
                    on(Event::Oversize(bytes));
                } else if !self.partial.is_empty() {
                    on(Event::Line(&self.partial));
                    self.partial = Vec::new();
                }
                return Ok(false);
            }
            match memchr::memchr(b'\n', chunk) {
                Some(pos) => {
                    if let Some(bytes) = self.discarding.take() {
                        on(Event::Oversize(bytes + pos as u64));
                    } else if self.partial.is_empty() && pos <= self.limit {
                        on(Event::Line(&chunk[..pos]));
                    } else if self.partial.len() + pos > self.limit {
                        on(Event::Oversize((self.partial.len() + pos) as u64));
                        self.partial = Vec::new();
                    } else {
                        self.partial.extend_from_slice(&chunk[..pos]);
                        on(Event::Line(&self.partial));
                        self.partial.clear();
                    }
                    self.inner.consume(pos + 1);
                    return Ok(true);
                }
                None => {
                    let len = chunk.len();
                    if let Some(bytes) = &mut self.discarding {
                        *bytes += len as u64;
                    } else if self.partial.len() + len > self.limit {
                        self.discarding = Some((self.partial.len() + len) as u64);
                        // Give the memory back: the line is lost anyway.
                        self.partial = Vec::new();
                    } else {
                        self.partial.extend_from_slice(chunk);
                    }
                    self.inner.consume(len);
                }
            }
        }
    }
}

impl<R> LineReader<io::BufReader<R>> {
    /// Whether bytes read from the input wait in the buffer (so the next line may need no
    /// read).
    pub fn has_buffered(&self) -> bool {
        !self.inner.buffer().is_empty()
    }
}

/// Moves the protocol to a private copy of fd 1 and points fd 1 at stderr.
fn take_stdout() -> io::Result<File> {
    // SAFETY: fcntl/dup2 on the process's own standard descriptors; F_DUPFD_CLOEXEC returns a
    // new descriptor that children do not inherit, which the File below then owns alone.
    let fd = unsafe { libc::fcntl(libc::STDOUT_FILENO, libc::F_DUPFD_CLOEXEC, 3) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as above; afterwards fd 1 is a second handle on stderr.
    if unsafe { libc::dup2(libc::STDERR_FILENO, libc::STDOUT_FILENO) } < 0 {
        return Err(io::Error::last_os_error());
    }
    // A full tool listing is about 90 KB: with room for it in the pipe, the answer is written
    // in one go instead of waiting for the client to read the first 64 KB. Not a pipe, or a
    // size above what the system allows: nothing changes.
    // SAFETY: fcntl on the descriptor just created; F_SETPIPE_SZ only resizes a pipe's buffer.
    unsafe { libc::fcntl(fd, libc::F_SETPIPE_SZ, PIPE_BYTES) };
    // SAFETY: `fd` is a valid descriptor we just created and nothing else owns.
    Ok(unsafe { File::from_raw_fd(fd) })
}

/// The stdout pipe's buffer, when it is a pipe.
const PIPE_BYTES: libc::c_int = 256 * 1024;

/// Blocks SIGHUP in this thread (and so in every thread started after) and returns its set.
fn block_sighup() -> io::Result<libc::sigset_t> {
    // SAFETY: sigemptyset/sigaddset initialise a local sigset_t; pthread_sigmask only changes
    // this thread's signal mask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGHUP);
        let rc = libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        if rc != 0 {
            return Err(io::Error::from_raw_os_error(rc));
        }
        Ok(set)
    }
}

/// Serves one session on stdin/stdout until stdin closes.
pub fn serve(make_session: impl FnOnce(Arc<dyn Outbox>) -> Session) -> io::Result<()> {
    let sighup = block_sighup()?;
    let out = StdoutOutbox::new(take_stdout()?);
    let session = make_session(out);
    let stdin = File::from(io::stdin().as_fd().try_clone_to_owned()?);
    readers::Readers::new(stdin, MAX_LINE_BYTES, session.clone(), &sighup)?.serve()?;
    tracing::debug!("stdin closed; waiting for calls in flight");
    if !session.drain(DRAIN_LIMIT) {
        tracing::warn!("calls still running after stdin closed; exiting without their answers");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `input` through a reader with `limit` and a tiny buffer (so lines span chunks),
    /// and describes the events.
    fn check(input: &[u8], limit: usize, expected: &[&str]) {
        let mut reader = LineReader::new(io::BufReader::with_capacity(4, input), limit);
        let mut got = Vec::new();
        while reader
            .next(|e| {
                got.push(match e {
                    Event::Line(l) => String::from_utf8_lossy(l).into_owned(),
                    Event::Oversize(n) => format!("<oversize {n}>"),
                })
            })
            .expect("read")
        {}
        assert_eq!(got, expected, "{:?}", String::from_utf8_lossy(input));
    }

    #[test]
    fn framing() {
        check(b"", 100, &[]);
        check(b"a\nbb\n", 100, &["a", "bb"]);
        check(b"a\n\nb", 100, &["a", "", "b"]);
        check(b"0123456789\nok\n", 10, &["0123456789", "ok"]);
        check(b"0123456789X\nok\n", 10, &["<oversize 11>", "ok"]);
        check(b"0123456789XYZ", 10, &["<oversize 13>"]);
        // A whole over-long line in one read of the buffer is over the limit all the same.
        let mut reader = LineReader::new(io::BufReader::with_capacity(64, &b"xxxx\nok\n"[..]), 2);
        let mut got = Vec::new();
        while reader.next(|e| got.push(format!("{e:?}"))).expect("read") {}
        assert_eq!(got, ["Oversize(4)", "Line([111, 107])"]);
        check(
            b"ab\n0123456789abcdefghij\ncd\n",
            10,
            &["ab", "<oversize 20>", "cd"],
        );
    }

    #[test]
    fn oversize_memory_stays_bounded() {
        let big = vec![b'x'; 1_000_000];
        let input = [big.as_slice(), b"\nafter\n"].concat();
        let mut reader =
            LineReader::new(io::BufReader::with_capacity(1024, input.as_slice()), 1000);
        let mut events = Vec::new();
        while reader
            .next(|e| events.push(format!("{e:?}").chars().take(40).collect::<String>()))
            .expect("read")
        {
            assert!(
                reader.partial.capacity() <= 4096,
                "buffer grew past the limit"
            );
        }
        assert_eq!(events.len(), 2);
        assert_eq!(events[0], "Oversize(1000000)");
    }
}
