//! The init of one child run to completion ([`crate::run`]): whatever the program leaves
//! behind dies with it.
//!
//! A script's background job (`sleep 90 &`) keeps the output pipes open after the script
//! ends, and one started with `setsid` leaves the process group too, so neither reading to the
//! end of the pipes nor killing the group is enough. So the forked child, before it runs the
//! program, splits ([`split`], called from `pre_exec`), in one of two ways:
//!
//! - **In namespaces of its own** ([`crate::isolation`]), the usual way: the child we know by
//!   pid (the *keeper*) moves into new PID and mount namespaces and forks their first process,
//!   the *init*, which mounts the namespace's `/proc` and forks the **program**. The init is
//!   PID 1 there: every orphan of the program's tree becomes its child, nothing in the
//!   namespace can kill it (`kill -9 $PPID` included) or see anything outside, and when the
//!   program ends the init writes its status to the keeper and exits, which makes the kernel
//!   kill everything left in the namespace. The keeper, outside, waits for the init or for
//!   `SIGTERM` (the caller's deadline or cancel, on which it kills the init and so the whole
//!   namespace), and exits as the program did.
//! - **Sharing this process's PID namespace**, where the kernel refuses one: the child we know
//!   by pid is the **reaper**, the child subreaper of the program's tree
//!   (`PR_SET_CHILD_SUBREAPER`), so every orphan — `setsid` daemons and double forks included
//!   — becomes its child instead of init's. It waits for the program to end or for `SIGTERM`,
//!   then kills every child it has, again and again as their orphans come to it, until it has
//!   none, and exits with the program's status (or, killed by the caller, with `SIGKILL`'s). A
//!   program can kill this reaper (it is its parent, with its user): what it then leaves goes
//!   to the host, itself a subreaper, whose sweep kills it ([`crate::sweep`]).
//!
//! So when the pid the caller waits for has ended, nothing the program started is left and
//! the pipes have reached their end.
//!
//! Invariants:
//! - Between `fork` and `exec` only async-signal-safe calls are made (the parent has other
//!   threads, whose locks a forked copy must never take): raw system calls on buffers of the
//!   stack, no allocation, no lock, no Rust I/O.
//! - Neither the reaper, the keeper nor the init holds a descriptor of the caller's (they close
//!   them all, std's exec-error pipe and the output pipes included, but for the init's status
//!   pipe to the keeper), so none keeps a pipe open or a `spawn` waiting.
//! - They end when the thread that started them ends (`PR_SET_PDEATHSIG`), so a caller that
//!   dies leaves nothing running either; the init ends with its keeper.

use std::io;

/// Splits the forked child into the program (returns `Ok`, to go on to `exec`) and its reaper,
/// or its keeper and init (never return): in namespaces of its own when `isolated` is
/// `Some(user)` (`user`: with a user namespace), else sharing this process's.
///
/// # Safety
/// Only in a freshly forked child, before `exec` (std's `pre_exec`).
pub(crate) unsafe fn split(isolated: Option<bool>) -> io::Result<()> {
    // SAFETY: as this function's own contract.
    unsafe {
        match isolated {
            Some(user) => split_namespaces(user),
            None => split_shared(),
        }
    }
}

/// The blocked signals the reaper, keeper and init take with `sigwaitinfo`: a child ended, or
/// the caller stops.
unsafe fn waited_signals() -> libc::sigset_t {
    // SAFETY: sigset operations on a set of our own.
    unsafe {
        let mut waited: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut waited);
        libc::sigaddset(&mut waited, libc::SIGCHLD);
        libc::sigaddset(&mut waited, libc::SIGTERM);
        waited
    }
}

/// [`split`] in namespaces of its own ([`crate::isolation`]).
unsafe fn split_namespaces(user: bool) -> io::Result<()> {
    // SAFETY: raw system calls on values and stack buffers of our own, in a single-threaded
    // forked child; see the module invariants.
    unsafe {
        let parent = libc::getppid();
        // The init tells the keeper how the program ended through this pipe.
        let mut status_pipe = [0 as libc::c_int; 2];
        if libc::pipe2(status_pipe.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
            return Err(io::Error::last_os_error());
        }
        let [status_read, status_write] = status_pipe;
        if let Err(step) = crate::isolation::enter(user) {
            if step == crate::isolation::Step::Unshare as i32 {
                // Nothing changed yet: this one runs as the shared way does.
                libc::close(status_read);
                libc::close(status_write);
                return split_shared();
            }
            return Err(io::Error::other(
                "the child's user namespace could not map this user",
            ));
        }
        let waited = waited_signals();
        let mut before: libc::sigset_t = std::mem::zeroed();
        libc::sigprocmask(libc::SIG_BLOCK, &waited, &mut before);
        libc::signal(libc::SIGCHLD, libc::SIG_DFL);
        let init = libc::fork();
        if init < 0 {
            return Err(io::Error::last_os_error());
        }
        if init == 0 {
            libc::close(status_read);
            // The keeper gone (killed by the caller's group kill), the namespace goes too.
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
            if crate::isolation::init_namespaces(user).is_err() {
                libc::_exit(125);
            }
            let program = libc::fork();
            if program < 0 {
                libc::_exit(125);
            }
            if program == 0 {
                libc::sigprocmask(libc::SIG_SETMASK, &before, std::ptr::null_mut());
                return Ok(());
            }
            init_life(program, status_write, &waited)
        }
        libc::close(status_write);
        keep(init, parent, status_read, &waited)
    }
}

/// The init's life, PID 1 of the program's namespace: reaps every process that ends there,
/// and when the program ends, hands its status to the keeper and exits (the kernel then kills
/// whatever is left in the namespace). A `SIGTERM` ends it at once.
unsafe fn init_life(program: libc::pid_t, status_write: libc::c_int, waited: &libc::sigset_t) -> ! {
    // SAFETY: raw system calls on values and stack buffers of our own, as in `split`.
    unsafe {
        close_all_but(status_write);
        loop {
            if let Some(status) = reap_ready(program) {
                let bytes = status.to_ne_bytes();
                libc::write(status_write, bytes.as_ptr().cast(), bytes.len());
                libc::_exit(0);
            }
            let mut info: libc::siginfo_t = std::mem::zeroed();
            if libc::sigwaitinfo(waited, &mut info) == libc::SIGTERM {
                libc::_exit(0);
            }
        }
    }
}

/// The keeper's life, outside the namespace: waits for the init, or for the caller's
/// `SIGTERM` (then kills the init, which takes the namespace with it), and exits as the
/// program did.
unsafe fn keep(
    init: libc::pid_t,
    parent: libc::pid_t,
    status_read: libc::c_int,
    waited: &libc::sigset_t,
) -> ! {
    // SAFETY: raw system calls on values and stack buffers of our own, as in `split`.
    unsafe {
        close_all_but(status_read);
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM, 0, 0, 0);
        let mut stopped = libc::getppid() != parent;
        loop {
            if stopped {
                libc::kill(init, libc::SIGKILL);
                let mut status = 0;
                libc::waitpid(init, &mut status, 0);
                break;
            }
            let mut status = 0;
            if libc::waitpid(init, &mut status, libc::WNOHANG) == init {
                break;
            }
            let mut info: libc::siginfo_t = std::mem::zeroed();
            if libc::sigwaitinfo(waited, &mut info) == libc::SIGTERM {
                stopped = true;
            }
        }
        let mut bytes = [0u8; 4];
        let got = libc::read(status_read, bytes.as_mut_ptr().cast(), bytes.len());
        let ended = (!stopped && got == 4).then(|| libc::c_int::from_ne_bytes(bytes));
        end_as(ended, stopped)
    }
}

/// [`split`] sharing this process's PID namespace.
unsafe fn split_shared() -> io::Result<()> {
    // SAFETY: raw system calls on values and stack buffers of our own, in a single-threaded
    // forked child; see the module invariants.
    unsafe {
        let parent = libc::getppid();
        if libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0 {
            return Err(io::Error::last_os_error());
        }
        // SIGCHLD and SIGTERM are taken by `sigwaitinfo`, never by a handler: blocked from
        // here, so one that arrives between a look and a wait is not lost. Blocked signals
        // are queued even where the default is to ignore them.
        let waited = waited_signals();
        let mut before: libc::sigset_t = std::mem::zeroed();
        libc::sigprocmask(libc::SIG_BLOCK, &waited, &mut before);
        // A SIGCHLD set to be ignored would reap children behind our back.
        libc::signal(libc::SIGCHLD, libc::SIG_DFL);
        let program = libc::fork();
        if program < 0 {
            return Err(io::Error::last_os_error());
        }
        if program == 0 {
            // The program: the signal mask std gave it (the subreaper role is not inherited).
            libc::sigprocmask(libc::SIG_SETMASK, &before, std::ptr::null_mut());
            return Ok(());
        }
        reap(program, parent, &waited)
    }
}

/// The reaper's life: waits, cleans up, exits like the program did.
unsafe fn reap(program: libc::pid_t, parent: libc::pid_t, waited: &libc::sigset_t) -> ! {
    // SAFETY: raw system calls on values and stack buffers of our own, as in `split`.
    unsafe {
        close_everything();
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM, 0, 0, 0);
        let mut ended: Option<libc::c_int> = None;
        // The caller may have ended before the death signal was asked for.
        let mut stopped = libc::getppid() != parent;
        while ended.is_none() && !stopped {
            ended = reap_ready(program);
            if ended.is_some() {
                break;
            }
            let mut info: libc::siginfo_t = std::mem::zeroed();
            if libc::sigwaitinfo(waited, &mut info) == libc::SIGTERM {
                stopped = true;
            }
        }
        kill_every_child(program, &mut ended);
        end_as(ended, stopped)
    }
}

/// Ends this process as the program ended (`ended`: its wait status, when known): with its exit
/// code, or by the same signal; killed by the caller (`stopped`), or not known, as `SIGKILL`.
unsafe fn end_as(ended: Option<libc::c_int>, stopped: bool) -> ! {
    // SAFETY: raw system calls on values of our own, as in `split`.
    unsafe {
        match ended {
            Some(status) if !stopped && libc::WIFSIGNALED(status) => {
                // Ended by a signal: end by the same one (no core: the host is undumpable).
                let signal = libc::WTERMSIG(status);
                libc::signal(signal, libc::SIG_DFL);
                let mut only: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut only);
                libc::sigaddset(&mut only, signal);
                libc::sigprocmask(libc::SIG_UNBLOCK, &only, std::ptr::null_mut());
                libc::kill(libc::getpid(), signal);
                libc::_exit(128 + signal)
            }
            Some(status) if !stopped && libc::WIFEXITED(status) => {
                libc::_exit(libc::WEXITSTATUS(status))
            }
            _ => {
                // Stopped by the caller: end as the kill it asked for.
                libc::signal(libc::SIGKILL, libc::SIG_DFL);
                libc::kill(libc::getpid(), libc::SIGKILL);
                libc::_exit(137)
            }
        }
    }
}

/// Reaps every child that has ended; the program's status once it is among them.
unsafe fn reap_ready(program: libc::pid_t) -> Option<libc::c_int> {
    let mut found = None;
    loop {
        let mut status = 0;
        // SAFETY: waitpid(2) writing into our own integer.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if pid <= 0 {
            return found;
        }
        if pid == program {
            found = Some(status);
        }
    }
}

/// Kills every child until none is left: each one killed hands its own children to us (we
/// are their subreaper), and the next round kills those. Notes the program's status if it
/// is reaped here. When nothing was left behind (the usual case) no `/proc` scan is made:
/// `waitpid` says there is no child.
unsafe fn kill_every_child(program: libc::pid_t, ended: &mut Option<libc::c_int>) {
    // SAFETY: raw system calls on values and stack buffers of our own, as in `split`.
    unsafe {
        let me = libc::getpid();
        loop {
            let mut status = 0;
            let pid = libc::waitpid(-1, &mut status, libc::WNOHANG);
            if pid == program {
                ended.get_or_insert(status);
            }
            if pid > 0 {
                continue;
            }
            if pid < 0 {
                // ECHILD: nobody is left.
                return;
            }
            // Children are alive: kill them all, then wait for one to go.
            if kill_children_of(me) > 0 {
                let pid = libc::waitpid(-1, &mut status, 0);
                if pid == program {
                    ended.get_or_insert(status);
                }
            } else {
                // Children we could not see yet (just forked): look again in a moment.
                let pause = libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 1_000_000,
                };
                libc::nanosleep(&pause, std::ptr::null_mut());
            }
        }
    }
}

/// Sends `SIGKILL` to every process whose parent is `me` (found in `/proc`); how many.
unsafe fn kill_children_of(me: libc::pid_t) -> usize {
    // SAFETY: as in `split`; the buffers are ours and the lengths passed are theirs.
    unsafe {
        let dir = libc::open(
            c"/proc".as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        );
        if dir < 0 {
            return 0;
        }
        let mut killed = 0;
        let mut entries = [0u8; 8192];
        loop {
            let n = libc::syscall(
                libc::SYS_getdents64,
                dir,
                entries.as_mut_ptr(),
                entries.len(),
            );
            if n <= 0 {
                break;
            }
            let mut at = 0usize;
            while at < n as usize {
                // struct linux_dirent64: d_ino u64, d_off i64, d_reclen u16, d_type u8, d_name
                let reclen = u16::from_ne_bytes([entries[at + 16], entries[at + 17]]) as usize;
                let name = &entries[at + 19..at + reclen];
                let name = &name[..name.iter().position(|b| *b == 0).unwrap_or(name.len())];
                if let Some(pid) = number(name) {
                    if parent_of(pid) == Some(me) {
                        libc::kill(pid, libc::SIGKILL);
                        killed += 1;
                    }
                }
                at += reclen;
            }
        }
        libc::close(dir);
        killed
    }
}

/// The parent of `pid`, from `/proc/PID/stat` (`pid (comm) state ppid …`).
unsafe fn parent_of(pid: libc::pid_t) -> Option<libc::pid_t> {
    let mut path = [0u8; 32];
    let prefix = b"/proc/";
    path[..prefix.len()].copy_from_slice(prefix);
    let at = prefix.len() + write_number(&mut path[prefix.len()..], pid as u64);
    path[at..at + 6].copy_from_slice(b"/stat\0");
    let mut stat = [0u8; 512];
    // SAFETY: open/read/close on a NUL-terminated path and a buffer of ours.
    let read = unsafe {
        let fd = libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return None;
        }
        let n = libc::read(fd, stat.as_mut_ptr().cast(), stat.len());
        libc::close(fd);
        n
    };
    if read <= 0 {
        return None;
    }
    let stat = &stat[..read as usize];
    // The command may hold spaces and parentheses: the fields start after the last ')'.
    let close = stat.iter().rposition(|b| *b == b')')?;
    let mut fields = stat[close + 1..]
        .split(|b| *b == b' ')
        .filter(|f| !f.is_empty());
    let _state = fields.next()?;
    number(fields.next()?)
}

/// A decimal number of ASCII digits.
fn number(digits: &[u8]) -> Option<libc::pid_t> {
    if digits.is_empty() || digits.len() > 9 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(
        digits
            .iter()
            .fold(0, |n, d| n * 10 + libc::pid_t::from(d - b'0')),
    )
}

/// Writes `n` in decimal at the start of `out`; how many bytes.
pub(crate) fn write_number(out: &mut [u8], mut n: u64) -> usize {
    let mut digits = [0u8; 20];
    let mut len = 0;
    loop {
        digits[len] = b'0' + (n % 10) as u8;
        len += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for i in 0..len {
        out[i] = digits[len - 1 - i];
    }
    len
}

/// Closes every descriptor this process holds but `keep`.
unsafe fn close_all_but(keep: libc::c_int) {
    // SAFETY: close_range(2), and close(2) on numbers as its fallback.
    unsafe {
        let keep = keep as u32;
        let below = keep == 0 || libc::syscall(libc::SYS_close_range, 0u32, keep - 1, 0u32) == 0;
        let above = libc::syscall(libc::SYS_close_range, keep + 1, u32::MAX, 0u32) == 0;
        if !(below && above) {
            for fd in (0..4096).filter(|fd| *fd != keep as libc::c_int) {
                libc::close(fd);
            }
        }
    }
}

/// Closes every descriptor this process holds.
unsafe fn close_everything() {
    // SAFETY: close_range(2), and close(2) on numbers as its fallback.
    unsafe {
        if libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32) != 0 {
            for fd in 0..4096 {
                libc::close(fd);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_read_and_written_without_allocating() {
        assert_eq!(number(b"1234"), Some(1234));
        assert_eq!(number(b""), None);
        assert_eq!(number(b"12a"), None);
        assert_eq!(number(b"self"), None);
        let mut out = [0u8; 20];
        let n = write_number(&mut out, 40_512);
        assert_eq!(&out[..n], b"40512");
        let n = write_number(&mut out, 0);
        assert_eq!(&out[..n], b"0");
    }

    #[test]
    fn the_parent_of_a_process_is_read_from_proc() {
        let me = std::process::id() as libc::pid_t;
        // SAFETY: getppid(2).
        let parent = unsafe { libc::getppid() };
        // SAFETY: reads /proc into buffers of its own.
        assert_eq!(unsafe { parent_of(me) }, Some(parent));
        // SAFETY: likewise, of a pid that does not exist.
        assert_eq!(unsafe { parent_of(i32::MAX) }, None);
    }
}
