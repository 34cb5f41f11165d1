//! Who reads stdin, and who runs a call when it arrives.
//!
//! One thread at a time reads lines and runs each call itself (see [`crate::inline`]), so a
//! trivial call costs the one wake-up that brought its line. A call that runs past a grace of
//! one to two [`TICK`]s hands the reading to another thread: a watcher thread wakes every tick
//! while calls are flowing, and when it sees the same call running at two ticks at least a tick
//! apart, it starts a new reader on the pool. So a slow or stuck call never keeps the session
//! from its next message (a cancel, an answer to the server's own question, another call) for
//! more than two ticks.
//!
//! A call costs no system call for this: it only writes its number where the watcher looks.
//! The watcher parks (its timer disarmed) after [`PARK_AFTER`] ticks without a call, and the
//! first call after that re-arms it, so an idle session wakes nobody. The same thread takes
//! SIGHUP (through a `signalfd`) and hands the reload to the pool. The thread that starts serving
//! starts it right after the first reader, while that reader already reads: the client's first
//! round trip waits for no thread but the reader, and a SIGHUP is taken from the start. A call
//! about to run inline starts it too, if that comes first.
//!
//! Invariants:
//! - Exactly one thread reads at a time: the lines sit behind a mutex, and a thread reads only
//!   while it holds the role. The role passes by one compare-and-swap on `turn`, which the
//!   thread running the call and the watcher race for, so exactly one of them has it after.
//! - The thread that lost the role finishes its call (its answer is written as always) and then
//!   leaves; it reads nothing more.
//! - A call never runs inline unwatched: the watcher runs before the first one does; the reader
//!   publishes a call's number before it looks whether the watcher is parked, and the watcher
//!   publishes that it parks before it looks for a running call (both sequentially
//!   consistent), so at least one of them sees the other and exactly one re-arms the timer.
//! - SIGHUP stays blocked in every thread; one that arrives before the watcher runs waits,
//!   pending, and is taken when it does. Reloads run one at a time.
//! - The thread that started serving never reads: it waits for the end of input, so a stuck
//!   call cannot keep the process from exiting once stdin closes.

use std::fs::File;
use std::io::{self, BufReader};
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, Once, PoisonError, Weak};
use std::time::{Duration, Instant};

use super::{Event, LineReader};
use crate::inline::{self, Runner};
use crate::pool::{self, Job};
use crate::session::Session;

/// The watcher's period while calls flow: a call still running after one to two ticks hands
/// the reading to another thread.
pub const TICK: Duration = Duration::from_millis(1);
/// Ticks without a call after which the watcher parks.
const PARK_AFTER: u32 = 20;

/// `turn` when no call runs inline.
const IDLE: u64 = 0;
/// `turn` once the watcher took the role from the call running inline.
const TAKEN: u64 = u64::MAX;
/// `turn` once the input ended: the watcher leaves.
const ENDED: u64 = u64::MAX - 1;

/// The readers of one stdio session.
pub struct Readers {
    /// This value's own `Arc`, for the threads it starts.
    me: Weak<Self>,
    lines: Mutex<LineReader<BufReader<File>>>,
    session: Session,
    timer: Timer,
    hangups: Hangups,
    /// Starts the watcher, once.
    watcher: Once,
    /// Held by the reload that runs (a second SIGHUP waits for it).
    reloading: Mutex<()>,
    /// The number of the call running inline, [`IDLE`], [`TAKEN`] or [`ENDED`].
    turn: AtomicU64,
    /// The watcher's timer is disarmed: the next call re-arms it.
    parked: AtomicBool,
    /// The watcher thread runs (it clears this if it has to stop).
    watcher_alive: AtomicBool,
    /// The last number given to an inline call.
    numbered: AtomicU64,
    /// How reading ended, once it has.
    ended: Mutex<Option<io::Result<()>>>,
    ended_signal: Condvar,
}

impl Readers {
    /// Readers of `input`, a line at most `limit` bytes, for `session`; `hangup` is the
    /// blocked SIGHUP whose arrival reloads the session's plugins.
    pub fn new(
        input: File,
        limit: usize,
        session: Session,
        hangup: &libc::sigset_t,
    ) -> io::Result<Arc<Self>> {
        let (timer, hangups) = (Timer::new()?, Hangups::new(hangup)?);
        Ok(Arc::new_cyclic(|me| Self {
            me: me.clone(),
            lines: Mutex::new(LineReader::new(
                BufReader::with_capacity(64 * 1024, input),
                limit,
            )),
            session,
            timer,
            hangups,
            watcher: Once::new(),
            reloading: Mutex::new(()),
            turn: AtomicU64::new(IDLE),
            parked: AtomicBool::new(true),
            watcher_alive: AtomicBool::new(false),
            numbered: AtomicU64::new(IDLE),
            ended: Mutex::new(None),
            ended_signal: Condvar::new(),
        }))
    }

    /// Reads until the input ends: starts the first reader, then the watcher, and waits.
    pub fn serve(self: &Arc<Self>) -> io::Result<()> {
        let reader = Arc::clone(self);
        pool::global().spawn(Box::new(move || reader.read()));
        self.start_watcher();
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
        // Wakes the watcher (parked or not) to find the input over and leave.
        self.turn.store(ENDED, Ordering::SeqCst);
        let _ = self.timer.once(Duration::from_nanos(1));
    }

    /// Starts the watcher thread unless it runs already. A failure to start it leaves the
    /// session without a watcher: calls then run on the pool (see [`Runner::run`]).
    fn start_watcher(&self) {
        self.watcher.call_once(|| {
            let Some(me) = self.me.upgrade() else { return };
            let started = std::thread::Builder::new()
                .name("coremcp-stdin-watch".into())
                .spawn(move || me.watch());
            match started {
                Ok(_) => self.watcher_alive.store(true, Ordering::Release),
                Err(e) => {
                    tracing::error!(
                        "cannot start the stdin watcher ({e}): calls run on the pool, and \
                         SIGHUP reloads nothing"
                    );
                }
            }
        });
    }

    /// Whether the watcher thread runs.
    fn watching(&self) -> bool {
        self.watcher_alive.load(Ordering::Acquire)
    }

    /// Wakes every tick while calls flow and at every SIGHUP; takes the role from a call seen
    /// running at two ticks a tick apart and starts a new reader; parks when the calls stop.
    fn watch(self: Arc<Self>) {
        let mut watch = Watch::new();
        loop {
            let woken = match wait(&self.timer, &self.hangups) {
                Ok(woken) => woken,
                Err(e) => {
                    self.watcher_alive.store(false, Ordering::Release);
                    tracing::error!(
                        "the stdin watcher failed ({e}); calls run on the pool from now on, and \
                         SIGHUP reloads nothing"
                    );
                    return;
                }
            };
            if woken.hangup {
                self.reload();
            }
            if !woken.tick {
                continue;
            }
            let turn = self.turn.load(Ordering::SeqCst);
            match watch.tick(turn, Instant::now()) {
                Tick::Wait => {}
                Tick::Ended => return,
                Tick::Take => {
                    if self
                        .turn
                        .compare_exchange(turn, TAKEN, Ordering::AcqRel, Ordering::Acquire)
                        .is_ok()
                    {
                        tracing::debug!("a call outlasted its grace on the reader; another reads");
                        let reader = Arc::clone(&self);
                        pool::global().spawn(Box::new(move || reader.read()));
                    }
                }
                Tick::Park => {
                    if let Err(e) = self.timer.disarm() {
                        tracing::warn!("cannot park the stdin watcher ({e}); it keeps ticking");
                        continue;
                    }
                    self.parked.store(true, Ordering::SeqCst);
                    match self.turn.load(Ordering::SeqCst) {
                        ENDED => return,
                        // A call started before it could see the watcher parked: unless that
                        // call re-armed the timer itself, the watcher does.
                        IDLE | TAKEN => {}
                        _ => {
                            if self.parked.swap(false, Ordering::SeqCst) {
                                self.arm();
                            }
                        }
                    }
                }
            }
        }
    }

    /// Reloads the session's plugins on the pool, one reload at a time, so the watcher keeps
    /// watching meanwhile.
    fn reload(&self) {
        let Some(me) = self.me.upgrade() else { return };
        pool::global().spawn(Box::new(move || {
            let _one = me.reloading.lock().unwrap_or_else(PoisonError::into_inner);
            tracing::info!("SIGHUP: reloading plugins");
            me.session.reload();
        }));
    }

    /// Starts the watcher ticking.
    fn arm(&self) -> bool {
        match self.timer.every(TICK) {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!("cannot arm the stdin watcher ({e})");
                self.parked.store(true, Ordering::SeqCst);
                false
            }
        }
    }
}

/// What the watcher does at a tick.
#[derive(Debug, PartialEq, Eq)]
enum Tick {
    Wait,
    /// The call it saw last time, at least a tick ago, is still running.
    Take,
    /// No call for [`PARK_AFTER`] ticks.
    Park,
    Ended,
}

/// What the watcher remembers between ticks.
struct Watch {
    /// The `turn` it saw last, and when it first saw it.
    last: u64,
    since: Instant,
    idle: u32,
}

impl Watch {
    fn new() -> Self {
        Self {
            last: IDLE,
            since: Instant::now(),
            idle: 0,
        }
    }

    fn tick(&mut self, turn: u64, now: Instant) -> Tick {
        if turn == ENDED {
            return Tick::Ended;
        }
        if turn == IDLE || turn == TAKEN {
            self.last = IDLE;
            self.idle += 1;
            if self.idle >= PARK_AFTER {
                self.idle = 0;
                return Tick::Park;
            }
            return Tick::Wait;
        }
        self.idle = 0;
        if turn != self.last {
            self.last = turn;
            self.since = now;
            return Tick::Wait;
        }
        // Ticks can bunch up behind a late wake-up: a tick's worth must really have passed.
        if now.duration_since(self.since) >= TICK {
            Tick::Take
        } else {
            Tick::Wait
        }
    }
}

impl Runner for Readers {
    fn run(&self, job: Job, _: Option<&crate::pace::Pace>) -> Result<bool, Job> {
        self.start_watcher();
        if !self.watching() {
            // Nobody could take over a stuck call here: it goes where it cannot block reading.
            return Err(job);
        }
        let number = self.numbered.fetch_add(1, Ordering::Relaxed) + 1;
        self.turn.store(number, Ordering::SeqCst);
        if self.parked.load(Ordering::SeqCst)
            && self.parked.swap(false, Ordering::SeqCst)
            && !self.arm()
        {
            tracing::warn!("the stdin watcher cannot tick; this call runs on the pool");
            self.turn.store(IDLE, Ordering::SeqCst);
            return Err(job);
        }
        job();
        Ok(self
            .turn
            .compare_exchange(number, IDLE, Ordering::AcqRel, Ordering::Acquire)
            .is_ok())
    }
}

/// A monotonic timer a thread can sleep on (a Linux `timerfd`).
struct Timer {
    fd: OwnedFd,
}

impl Timer {
    fn new() -> io::Result<Self> {
        // SAFETY: plain syscall; a non-negative result is a new descriptor owned here alone.
        let fd = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_CLOEXEC | libc::TFD_NONBLOCK,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just created and is owned by nothing else.
        let fd = unsafe { std::os::fd::FromRawFd::from_raw_fd(fd) };
        Ok(Self { fd })
    }

    /// Expires every `period`, the first time one period from now.
    fn every(&self, period: Duration) -> io::Result<()> {
        self.set(period, period)
    }

    /// Expires once, `after` from now.
    fn once(&self, after: Duration) -> io::Result<()> {
        self.set(after, Duration::ZERO)
    }

    /// Stops expiring.
    fn disarm(&self) -> io::Result<()> {
        self.set(Duration::ZERO, Duration::ZERO)
    }

    fn set(&self, first: Duration, period: Duration) -> io::Result<()> {
        let spec = |d: Duration| libc::timespec {
            tv_sec: d.as_secs() as libc::time_t,
            tv_nsec: d.subsec_nanos() as libc::c_long,
        };
        let spec = libc::itimerspec {
            it_interval: spec(period),
            it_value: spec(first),
        };
        // SAFETY: `spec` is a valid itimerspec and the old value is not asked for.
        let rc =
            unsafe { libc::timerfd_settime(self.fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Takes the expirations so far; whether there were any.
    fn expired(&self) -> io::Result<bool> {
        let mut expirations = 0u64;
        drain(&self.fd, &mut expirations)
    }
}

/// SIGHUP, blocked in every thread, read from a `signalfd`.
struct Hangups {
    fd: OwnedFd,
}

impl Hangups {
    fn new(set: &libc::sigset_t) -> io::Result<Self> {
        // SAFETY: `set` is an initialised signal set; a non-negative result is a new descriptor
        // owned here alone.
        let fd = unsafe { libc::signalfd(-1, set, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just created and is owned by nothing else.
        let fd = unsafe { std::os::fd::FromRawFd::from_raw_fd(fd) };
        Ok(Self { fd })
    }

    /// Takes the signals that arrived; whether there were any.
    fn arrived(&self) -> io::Result<bool> {
        // SAFETY: all-zero is a valid signalfd_siginfo, which the read overwrites.
        let mut info: libc::signalfd_siginfo = unsafe { std::mem::zeroed() };
        let mut any = false;
        while drain(&self.fd, &mut info)? {
            any = true;
        }
        Ok(any)
    }
}

/// Reads one record of `T` from the non-blocking `fd`; false when there is none.
fn drain<T>(fd: &OwnedFd, record: &mut T) -> io::Result<bool> {
    loop {
        // SAFETY: reads at most size_of::<T>() bytes into `record`, a plain-data local whose
        // every bit pattern is valid (a counter, a signalfd_siginfo).
        let n = unsafe {
            libc::read(
                fd.as_raw_fd(),
                (record as *mut T).cast(),
                std::mem::size_of::<T>(),
            )
        };
        if n == std::mem::size_of::<T>() as isize {
            return Ok(true);
        }
        let e = io::Error::last_os_error();
        match e.kind() {
            io::ErrorKind::Interrupted if n < 0 => continue,
            io::ErrorKind::WouldBlock if n < 0 => return Ok(false),
            _ => return Err(e),
        }
    }
}

/// What woke the watcher.
struct Woken {
    tick: bool,
    hangup: bool,
}

/// Sleeps until the timer expires or SIGHUP arrives.
fn wait(timer: &Timer, hangups: &Hangups) -> io::Result<Woken> {
    let mut fds = [
        libc::pollfd {
            fd: timer.fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: hangups.fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    loop {
        // SAFETY: `fds` is a valid array of two pollfd for the duration of the call.
        let rc = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, -1) };
        if rc >= 0 {
            break;
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    // A timer re-armed between the poll and the read shows no expiration: not a tick.
    let tick = fds[0].revents != 0 && timer.expired()?;
    let hangup = fds[1].revents != 0 && hangups.arrived()?;
    Ok(Woken { tick, hangup })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_is_taken_over_only_when_seen_running_a_tick_apart() {
        let start = Instant::now();
        let at = |ms: u64| start + Duration::from_millis(ms);
        let mut watch = Watch::new();
        assert_eq!(watch.tick(7, at(0)), Tick::Wait, "first seen");
        assert_eq!(
            watch.tick(7, at(0)),
            Tick::Wait,
            "bunched ticks are not a tick apart"
        );
        assert_eq!(watch.tick(7, at(1)), Tick::Take);
        // Another call each tick: never taken.
        for n in 8..20 {
            assert_eq!(watch.tick(n, at(n)), Tick::Wait);
        }
        assert_eq!(watch.tick(ENDED, at(30)), Tick::Ended);
    }

    #[test]
    fn the_watcher_parks_after_idle_ticks_and_forgets_the_call_it_saw() {
        let start = Instant::now();
        let mut watch = Watch::new();
        assert_eq!(watch.tick(3, start), Tick::Wait);
        for i in 1..PARK_AFTER {
            let turn = if i % 2 == 0 { IDLE } else { TAKEN };
            assert_eq!(watch.tick(turn, start), Tick::Wait, "idle tick {i}");
        }
        assert_eq!(watch.tick(IDLE, start), Tick::Park);
        // After parking, the next call seen gets its full grace again.
        let later = start + TICK * 5;
        assert_eq!(watch.tick(3, later), Tick::Wait);
        assert_eq!(watch.tick(3, later + TICK), Tick::Take);
    }
}
