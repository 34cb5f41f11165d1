//! The stdio transport: newline-delimited JSON-RPC on stdin and stdout.
//!
//! Invariants:
//! - The pipes are read and written directly: the reading thread hands each line to the session
//!   itself and runs a call there too, handing the reading to another thread if the call runs
//!   long ([`readers`]); answers are written by whichever thread produced them, one `write`
//!   each, or one for a burst a thread had in hand ([`Cork`](coremcp_wire::cork::Cork),
//!   [`outbox`]).
//! - A line longer than [`MAX_LINE_BYTES`] without a newline is discarded as it streams in and
//!   reported; memory stays bounded by the limit, whatever arrives.
//! - Only the protocol writes to the real stdout: fd 1 is re-pointed at stderr before any
//!   plugin loads, so stray prints (a plugin's, a child's) land in the log.
//! - SIGHUP reloads the plugins ([`Session::reload`]); it is blocked in every thread and read
//!   from a `signalfd` by the watcher of [`readers`], so no code runs in a signal handler.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, FromRawFd};
use std::sync::Arc;
use std::time::Duration;

use coremcp_wire::mcp::MAX_LINE_BYTES;

pub(crate) mod lines;
mod outbox;
mod readers;

use crate::session::{Outbox, Session};
use outbox::StdoutOutbox;

/// How long, after stdin closes, calls in flight get to answer before the process exits.
const DRAIN_LIMIT: Duration = Duration::from_secs(30);

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
