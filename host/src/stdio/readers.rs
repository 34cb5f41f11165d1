//! Who reads stdin, and who runs a call when it arrives.
//!
//! The thread that serves reads the session's opening itself: the messages the host answers
//! alone in bounded time (`initialize`, `tools/list`, a ping, notifications: see
//! [`Session::handle_if_alone`]). So a client's first round trips wait for no other thread to
//! start or wake. At the first message that may run a call, or wait on an upstream server, it
//! hands that message and the reading to a reader on the pool, starts the watcher, and from then
//! on only waits for the end of input.
//!
//! From then on, one thread at a time reads lines and runs each call itself (see
//! [`coremcp_engine::inline`]), so a trivial call costs the one wake-up that brought its line. A
//! call that runs past a grace of one to two [`TICK`]s hands the reading to another thread: a
//! watcher thread wakes every tick while calls are flowing, and when it sees the same call
//! running at two ticks at least a tick apart, it starts a new reader on the pool. So a slow or
//! stuck call never keeps the session from its next message (a cancel, an answer to the
//! server's own question, another call) for more than two ticks.
//!
//! A call costs no system call for this: it only writes its number where the watcher looks.
//! The watcher parks (its timer disarmed) after [`PARK_AFTER`] ticks without a call, and the
//! first call after that re-arms it, so an idle session wakes nobody. The same thread takes
//! SIGHUP (through a `signalfd`) and hands the reload to the pool. The thread that serves starts
//! it right after the first reader; a call about to run inline starts it too, if that comes
//! first. During the opening, the thread that serves polls the input with the `signalfd`, and a
//! SIGHUP ends the opening at once, so the watcher takes it.
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
//!   pending, and is taken when it does. Reloads run one at a time. During the opening, a SIGHUP
//!   waits at most for the message being handled (or for the rest of a line the client began).
//! - The thread that started serving never runs a call: after the opening it reads nothing and
//!   waits for the end of input, so a stuck call cannot keep the process from exiting once stdin
//!   closes.

use std::fs::File;
use std::io::{self, BufReader};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, Once, PoisonError, Weak};
use std::time::{Duration, Instant};

use super::lines::{Event, LineReader};
use crate::session::Session;
use coremcp_engine::inline::{self, Runner};
use coremcp_engine::pool::{self, Job};

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
    /// The input's descriptor (owned by `lines`), which the opening polls.
    input: RawFd,
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
        let fd = input.as_raw_fd();
        Ok(Arc::new_cyclic(|me| Self {
            me: me.clone(),
            input: fd,
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

    /// Reads until the input ends: reads the opening here, then starts the first reader (with
    /// the line that ended the opening) and the watcher, and waits.
    pub fn serve(self: &Arc<Self>) -> io::Result<()> {
        let pending = match self.open() {
            Opening::Ended(result) => return result,
            Opening::HandOver(pending) => pending,
        };
        let reader = Arc::clone(self);
        pool::global().spawn(Box::new(move || reader.read(pending)));
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

    /// Reads and handles, on the thread that serves, the messages the session answers alone
    /// ([`Session::handle_if_alone`]), until the first that it does not (handed over), a
    /// SIGHUP (none), or the end of input. Before each read it polls the input with the
    /// signalfd, so a SIGHUP is seen at once, unless the input has bytes buffered.
    fn open(&self) -> Opening {
        let mut line = Vec::new();
        loop {
            let buffered = self
                .lines
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .has_buffered();
            match hangup_first(self.input, &self.hangups, buffered) {
                Ok(false) => {}
                Ok(true) => return Opening::HandOver(None),
                Err(e) => {
                    // The readers read on, and the watcher takes SIGHUP from the start.
                    tracing::debug!("cannot poll stdin for the opening ({e}): handing over");
                    return Opening::HandOver(None);
                }
            }
            let (got, more) = self.next(&mut line);
            match got {
                Got::Oversize(bytes, id) => self.session.report_oversize(bytes, id.as_deref()),
                Got::Line if !self.session.handle_if_alone(&line) => {
                    return Opening::HandOver(Some(line));
                }
                Got::Line | Got::Nothing => {}
            }
            line.clear();
            match more {
                Ok(true) => {}
                Ok(false) => return Opening::Ended(Ok(())),
                Err(e) => return Opening::Ended(Err(e)),
            }
        }
    }

    /// Reads the next message, its text into `line` (empty before); whether more may follow.
    fn next(&self, line: &mut Vec<u8>) -> (Got, io::Result<bool>) {
        let mut got = Got::Nothing;
        let more = self
            .lines
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .next(|event| match event {
                Event::Line(text) => {
                    line.extend_from_slice(text);
                    got = Got::Line;
                }
                Event::Oversize { bytes, id } => got = Got::Oversize(bytes, id),
            });
        (got, more)
    }

    /// Holds the reader's role, first handling `pending` (the line that ended the opening),
    /// until the input ends or a call running here outlasts the grace.
    fn read(self: Arc<Self>, pending: Option<Vec<u8>>) {
        let _inline = inline::install(Arc::clone(&self) as Arc<dyn Runner>);
        if let Some(line) = pending {
            self.session.handle(&line);
            if !inline::installed() {
                // The call outlasted its grace: another thread reads now.
                return;
            }
        }
        let mut line = Vec::new();
        loop {
            let (got, more) = self.next(&mut line);
            match got {
                Got::Oversize(bytes, id) => self.session.report_oversize(bytes, id.as_deref()),
                Got::Line => self.session.handle(&line),
                Got::Nothing => {}
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
                        pool::global().spawn(Box::new(move || reader.read(None)));
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

/// How the opening ended.
enum Opening {
    /// The input ended (or failed) during it.
    Ended(io::Result<()>),
    /// The readers take over, starting with this line, which the opening did not handle.
    HandOver(Option<Vec<u8>>),
}

/// What one read of the input brought.
enum Got {
    Line,
    /// A line of this many bytes, discarded for exceeding the limit, and its id if one was read.
    Oversize(u64, Option<String>),
    /// The end of input, or an error.
    Nothing,
}

/// Waits until `input` can be read (at once when `buffered`: the reader has bytes already) or
/// a SIGHUP is pending; true for a SIGHUP. The signal is left for the watcher to take.
fn hangup_first(input: RawFd, hangups: &Hangups, buffered: bool) -> io::Result<bool> {
    let mut fds = [
        libc::pollfd {
            fd: hangups.fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            // A negative descriptor is skipped by poll.
            fd: if buffered { -1 } else { input },
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    let timeout = if buffered { 0 } else { -1 };
    loop {
        // SAFETY: `fds` is a valid array of two pollfd for the duration of the call.
        let rc = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout) };
        if rc >= 0 {
            return Ok(fds[0].revents != 0);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
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
    fn run(&self, job: Job, _: Option<&coremcp_engine::pace::Pace>) -> Result<bool, Job> {
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
    use std::io::Write;
    use std::os::fd::FromRawFd;

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

    /// An opening read from `input` (written whole, then closed, before it is read), over an
    /// empty plugins folder; what the session sent meanwhile.
    struct Opened {
        opening: Opening,
        sent: Vec<serde_json::Value>,
    }

    /// Catches what a session sends.
    #[derive(Default)]
    struct Caught(Mutex<Vec<String>>);

    impl crate::session::Outbox for Caught {
        fn send(&self, message: String) {
            self.0.lock().expect("lock").push(message);
        }
    }

    fn open_with(input: &[u8], limit: usize, before: impl FnOnce()) -> Opened {
        let plugins = crate::http::tests::Scratch::new();
        let config = crate::config::Config::with_plugins(plugins.path().to_owned());
        let set =
            Arc::new(coremcp_engine::PluginSet::discover(&config.engine()).expect("discover"));
        let out = Arc::new(Caught::default());
        let session = Session::new(
            config,
            set,
            coremcp_upstream::hub::Upstreams::none(),
            coremcp_wire::policy::Caller::Stdio,
            Arc::clone(&out) as Arc<dyn crate::session::Outbox>,
        );
        let (read, write) = pipe();
        // Small enough to sit in the pipe's buffer whole.
        (&write).write_all(input).expect("write the input");
        drop(write);
        // SAFETY: a local set, initialised before use.
        let set = unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGHUP);
            set
        };
        let readers = Readers::new(read, limit, session, &set).expect("readers");
        before();
        let opening = readers.open();
        let sent = out
            .0
            .lock()
            .expect("lock")
            .iter()
            .map(|m| serde_json::from_str(m).expect("JSON"))
            .collect();
        Opened { opening, sent }
    }

    fn pipe() -> (File, File) {
        let mut fds = [0; 2];
        // SAFETY: `fds` has room for the two descriptors pipe2 writes.
        let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
        assert_eq!(rc, 0, "pipe2: {}", io::Error::last_os_error());
        // SAFETY: both descriptors were just created and are owned by nothing else.
        unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) }
    }

    fn lines(messages: &[serde_json::Value]) -> Vec<u8> {
        messages
            .iter()
            .flat_map(|m| format!("{m}\n").into_bytes())
            .collect()
    }

    fn initialize() -> serde_json::Value {
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "unit", "version": "0"}}})
    }

    #[test]
    fn the_opening_answers_what_the_host_answers_alone_and_hands_over_the_first_call() {
        let call = serde_json::json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
            "params": {"name": "fixture_echo", "arguments": {}}});
        let input = lines(&[
            initialize(),
            serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
            serde_json::json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}),
            serde_json::json!({"jsonrpc": "2.0", "id": 6, "method": "logging/setLevel",
                "params": {"level": "info"}}),
            call.clone(),
            serde_json::json!({"jsonrpc": "2.0", "id": 5, "method": "ping"}),
        ]);
        let opened = open_with(&input, 1 << 20, || {});
        let Opening::HandOver(Some(pending)) = opened.opening else {
            panic!("the call ends the opening");
        };
        assert_eq!(
            pending,
            call.to_string().into_bytes(),
            "handed over as it came"
        );
        let ids: Vec<_> = opened.sent.iter().map(|m| m["id"].clone()).collect();
        assert_eq!(
            ids,
            [1, 2, 3, 6],
            "answered here, in order: {:?}",
            opened.sent
        );
        assert!(
            opened.sent[1]["result"]["tools"].is_array(),
            "{:?}",
            opened.sent
        );
    }

    #[test]
    fn whatever_may_wait_ends_the_opening() {
        for method in [
            "tools/call",
            "resources/list",
            "prompts/get",
            "subscriptions/listen",
        ] {
            let request = serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": method});
            let opened = open_with(&lines(&[initialize(), request.clone()]), 1 << 20, || {});
            let handed = match &opened.opening {
                Opening::HandOver(Some(line)) => line.clone(),
                _ => panic!("{method} ends the opening"),
            };
            assert_eq!(handed, request.to_string().into_bytes(), "{method}");
            assert_eq!(opened.sent.len(), 1, "{method}: only initialize answered");
        }
    }

    #[test]
    fn the_end_of_input_ends_the_opening_with_bad_lines_answered_on_the_way() {
        let mut input = lines(&[initialize()]);
        input.extend_from_slice(b"not json\n");
        input.extend_from_slice(&[b'x'; 300]);
        input.extend_from_slice(b"\n");
        let opened = open_with(&input, 200, || {});
        assert!(matches!(opened.opening, Opening::Ended(Ok(()))));
        let codes: Vec<_> = opened
            .sent
            .iter()
            .map(|m| m["error"]["code"].clone())
            .collect();
        assert_eq!(
            codes,
            [serde_json::Value::Null, (-32700).into(), (-32700).into()]
        );
    }

    #[test]
    fn a_pending_sighup_ends_the_opening_before_anything_is_read() {
        // SAFETY: blocks SIGHUP in this test's thread only, then makes it pending there; the
        // opening polls from this thread, and the signal is taken back below.
        let set = unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGHUP);
            assert_eq!(
                libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()),
                0
            );
            set
        };
        let opened = open_with(&lines(&[initialize()]), 1 << 20, || {
            // SAFETY: signals this thread, which blocks SIGHUP.
            let rc = unsafe { libc::pthread_kill(libc::pthread_self(), libc::SIGHUP) };
            assert_eq!(rc, 0);
        });
        assert!(matches!(opened.opening, Opening::HandOver(None)));
        assert!(opened.sent.is_empty(), "nothing read: {:?}", opened.sent);
        // Taken back, so it never reaches this thread: a signalfd reads this thread's pending
        // signals.
        let hangups = Hangups::new(&set).expect("signalfd");
        assert!(hangups.arrived().expect("read the signalfd"));
    }
}
