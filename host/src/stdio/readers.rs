//! Who reads stdin, and who runs a call when it arrives.
//!
//! One thread at a time reads lines and runs each call itself (see [`crate::inline`]), so a
//! trivial call costs the one wake-up that brought its line. A call that runs past [`GRACE`]
//! hands the reading to another thread: before it runs, the reader arms a timer that a watcher
//! thread sleeps on, and if it fires with the call still running, the watcher starts a new
//! reader on the pool. So a slow or stuck call never keeps the session from its next message (a
//! cancel, an answer to the server's own question, another call) for more than the grace.
//!
//! Invariants:
//! - Exactly one thread reads at a time: the lines sit behind a mutex, and a thread reads only
//!   while it holds the role. The role passes by one compare-and-swap on `turn`, which the
//!   thread running the call and the watcher race for, so exactly one of them has it after.
//! - The thread that lost the role finishes its call (its answer is written as always) and then
//!   leaves; it reads nothing more.
//! - The thread that started serving never reads: it waits for the end of input, so a stuck
//!   call cannot keep the process from exiting once stdin closes.

use std::fs::File;
use std::io::{self, BufReader};
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

use super::{Event, LineReader};
use crate::inline::{self, Runner};
use crate::pool::{self, Job};
use crate::session::Session;

/// How long a call runs on the reading thread before another thread takes over the reading.
pub const GRACE: Duration = Duration::from_millis(2);

/// `turn` when no call runs inline.
const IDLE: u64 = 0;
/// `turn` once the watcher took the role from the call running inline.
const TAKEN: u64 = u64::MAX;
/// `turn` once the input ended: the watcher leaves.
const ENDED: u64 = u64::MAX - 1;

/// The readers of one stdio session.
pub struct Readers {
    lines: Mutex<LineReader<BufReader<File>>>,
    session: Session,
    timer: Timer,
    /// The number of the call running inline, [`IDLE`] or [`TAKEN`].
    turn: AtomicU64,
    /// The last number given to an inline call.
    numbered: AtomicU64,
    /// How reading ended, once it has.
    ended: Mutex<Option<io::Result<()>>>,
    ended_signal: Condvar,
}

impl Readers {
    /// Readers of `input`, a line at most `limit` bytes, for `session`.
    pub fn new(input: File, limit: usize, session: Session) -> io::Result<Arc<Self>> {
        Ok(Arc::new(Self {
            lines: Mutex::new(LineReader::new(
                BufReader::with_capacity(64 * 1024, input),
                limit,
            )),
            session,
            timer: Timer::new()?,
            turn: AtomicU64::new(IDLE),
            numbered: AtomicU64::new(IDLE),
            ended: Mutex::new(None),
            ended_signal: Condvar::new(),
        }))
    }

    /// Reads until the input ends: starts the first reader and the watcher, and waits.
    pub fn serve(self: &Arc<Self>) -> io::Result<()> {
        let watcher = Arc::clone(self);
        std::thread::Builder::new()
            .name("coremcp-stdin-watch".into())
            .spawn(move || watcher.watch())?;
        let reader = Arc::clone(self);
        pool::global().spawn(Box::new(move || reader.read()));
        let mut ended = self.ended.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some(result) = ended.take() {
                return result;
            }
            ended = self
                .ended_signal
                .wait(ended)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Holds the reader's role until the input ends or a call running here outlasts the grace.
    fn read(self: Arc<Self>) {
        let _inline = inline::install(Arc::clone(&self) as Arc<dyn Runner>);
        let mut line = Vec::new();
        loop {
            let mut oversize = None;
            let more = {
                let mut lines = self.lines.lock().unwrap_or_else(PoisonError::into_inner);
                lines.next(|event| match event {
                    Event::Line(text) => line.extend_from_slice(text),
                    Event::Oversize(bytes) => oversize = Some(bytes),
                })
            };
            match oversize {
                Some(bytes) => self.session.report_oversize(bytes),
                None if more.as_ref().is_ok_and(|&more| more) || !line.is_empty() => {
                    self.session.handle(&line)
                }
                None => {}
            }
            line.clear();
            match more {
                Ok(true) if inline::installed() => {}
                // Another thread reads now.
                Ok(true) => return,
                Ok(false) => return self.end(Ok(())),
                Err(e) => return self.end(Err(e)),
            }
        }
    }

    fn end(&self, result: io::Result<()>) {
        *self.ended.lock().unwrap_or_else(PoisonError::into_inner) = Some(result);
        self.ended_signal.notify_all();
        // Wakes the watcher to find the input over and leave.
        self.turn.store(ENDED, Ordering::Release);
        let _ = self.timer.set(Duration::from_nanos(1));
    }

    /// Sleeps on the timer; when it fires with a call still running inline, takes the role
    /// from that call and starts a new reader.
    fn watch(self: Arc<Self>) {
        loop {
            if let Err(e) = self.timer.wait() {
                tracing::error!(
                    "the stdin watcher's timer failed ({e}); a long call now keeps the \
                     session from reading until it ends"
                );
                return;
            }
            let turn = self.turn.load(Ordering::Acquire);
            if turn == ENDED {
                return;
            }
            // Re-armed since it fired: a new call started, and has its full grace.
            if turn == IDLE || turn == TAKEN || self.timer.armed() {
                continue;
            }
            if self
                .turn
                .compare_exchange(turn, TAKEN, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                tracing::debug!("a call outlasted {GRACE:?} on the reader; another thread reads");
                let reader = Arc::clone(&self);
                pool::global().spawn(Box::new(move || reader.read()));
            }
        }
    }
}

impl Runner for Readers {
    fn run(&self, job: Job) -> bool {
        let number = self.numbered.fetch_add(1, Ordering::Relaxed) + 1;
        self.turn.store(number, Ordering::Release);
        let armed = self.timer.set(GRACE);
        if let Err(e) = &armed {
            tracing::warn!("cannot arm the stdin watcher ({e}); this call runs on the pool");
            self.turn.store(IDLE, Ordering::Release);
            pool::global().spawn(job);
            return true;
        }
        job();
        let kept = self
            .turn
            .compare_exchange(number, IDLE, Ordering::AcqRel, Ordering::Acquire)
            .is_ok();
        // The timer is left armed: the next call re-arms it (one syscall a call, not two),
        // and an expiry after the last call finds `IDLE` and is ignored.
        kept
    }
}

/// A one-shot monotonic timer whose expiry a thread can sleep on (a Linux `timerfd`).
struct Timer {
    fd: OwnedFd,
}

impl Timer {
    fn new() -> io::Result<Self> {
        // SAFETY: plain syscall; a non-negative result is a new descriptor owned here alone.
        let fd = unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just created and is owned by nothing else.
        let fd = unsafe { std::os::fd::FromRawFd::from_raw_fd(fd) };
        Ok(Self { fd })
    }

    /// Arms the timer to expire once after `after`.
    fn set(&self, after: Duration) -> io::Result<()> {
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: after.as_secs() as libc::time_t,
                tv_nsec: after.subsec_nanos() as libc::c_long,
            },
        };
        // SAFETY: `spec` is a valid itimerspec and the old value is not asked for.
        let rc =
            unsafe { libc::timerfd_settime(self.fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Whether the timer is set to expire (again).
    fn armed(&self) -> bool {
        // SAFETY: all-zero is a valid itimerspec, which timerfd_gettime overwrites.
        let mut spec: libc::itimerspec = unsafe { std::mem::zeroed() };
        // SAFETY: `spec` is a valid, writable itimerspec.
        let rc = unsafe { libc::timerfd_gettime(self.fd.as_raw_fd(), &mut spec) };
        rc == 0 && (spec.it_value.tv_sec != 0 || spec.it_value.tv_nsec != 0)
    }

    /// Sleeps until the timer expires.
    fn wait(&self) -> io::Result<()> {
        let mut expirations = 0u64;
        loop {
            // SAFETY: reads 8 bytes into a local u64, as timerfd requires.
            let n = unsafe {
                libc::read(
                    self.fd.as_raw_fd(),
                    (&mut expirations as *mut u64).cast(),
                    std::mem::size_of::<u64>(),
                )
            };
            if n == std::mem::size_of::<u64>() as isize {
                return Ok(());
            }
            let e = io::Error::last_os_error();
            if n < 0 && e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
    }
}
