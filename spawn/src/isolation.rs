//! Keeping children out of each other: a child run to completion ([`crate::run`]) gets a PID
//! namespace of its own, with its own `/proc` in a mount namespace of its own, so it sees — and
//! can signal, trace or read — only its own processes: not the host, its reapers, upstream
//! servers or the children of other calls. As root its capability bounding set loses what
//! would undo that (`CAP_SYS_ADMIN` to unmount that `/proc`, `CAP_SYS_PTRACE`, raw memory and
//! module loading); as an ordinary user the namespaces come with a user namespace that maps the
//! user to itself, in which the program has no capability at all. Either way the script keeps
//! the caller's own access to the files it may reach.
//!
//! Whether the kernel grants this is tried once per process ([`mode`]): a short-lived child
//! makes every step the real ones make. Where it refuses (a container's seccomp profile, user
//! namespaces turned off) — or `COREMCP_CHILD_ISOLATION=off` says not to — children run as
//! before, sharing this process's PID namespace ([`Mode::Shared`]); the host says so once
//! ([`describe`]).
//!
//! Invariants:
//! - Everything here that runs between `fork` and `exec` makes raw system calls on stack
//!   buffers only (the module invariants of [`crate::reaper`]).
//! - The new `/proc` is mounted in a mount namespace whose mounts are private first, so it never
//!   propagates to the host's.

use std::sync::OnceLock;

/// The variable that turns the isolation off (`off`): children then share the host's PID
/// namespace, as where the kernel refuses one.
pub const ISOLATION_VAR: &str = "COREMCP_CHILD_ISOLATION";

/// How children run to completion are kept apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// In namespaces of their own; `user`: with a user namespace (this process is not root).
    Namespaces { user: bool },
    /// In this process's PID namespace (the reason why).
    Shared(String),
}

impl Mode {
    /// Whether children get namespaces of their own.
    pub fn isolated(&self) -> bool {
        matches!(self, Mode::Namespaces { .. })
    }
}

/// The capabilities a root child's bounding set loses: those that would let it leave or look
/// past its namespaces (mount, `setns`, unmount its `/proc`), trace or read other processes
/// and the kernel's memory, or change the kernel itself.
const DROPPED: &[u32] = &[
    2,  // CAP_DAC_READ_SEARCH: open_by_handle_at reaches files past the mount namespace
    16, // CAP_SYS_MODULE
    17, // CAP_SYS_RAWIO: /dev/mem, /proc/kcore
    19, // CAP_SYS_PTRACE
    21, // CAP_SYS_ADMIN: mount, umount, setns
    22, // CAP_SYS_BOOT
    34, // CAP_SYSLOG: the kernel's log and addresses
    38, // CAP_PERFMON: other processes' and the kernel's events
    39, // CAP_BPF
    40, // CAP_CHECKPOINT_RESTORE
];

/// How this process's children are kept apart: found once, by trying.
pub fn mode() -> &'static Mode {
    static MODE: OnceLock<Mode> = OnceLock::new();
    MODE.get_or_init(|| {
        if std::env::var(ISOLATION_VAR).is_ok_and(|v| v.trim().eq_ignore_ascii_case("off")) {
            return Mode::Shared(format!("{ISOLATION_VAR}=off"));
        }
        probe()
    })
}

/// One line for the host's log: what a child can see of its siblings and ancestors.
pub fn describe(mode: &Mode) -> String {
    match mode {
        Mode::Namespaces { user: false } => {
            "children run in PID and mount namespaces of their own, without the capabilities \
             that would leave them: none sees the host, its upstream servers or another call's \
             processes"
                .to_owned()
        }
        Mode::Namespaces { user: true } => {
            "children run in user, PID and mount namespaces of their own: none sees the host, \
             its upstream servers or another call's processes"
                .to_owned()
        }
        Mode::Shared(why) => format!(
            "children share this process's PID namespace ({why}): a script this user runs can \
             read the environment of upstream servers and of other calls' children; Core MCP \
             is their subreaper and kills what a killed reaper leaves at the call's end (see \
             README, \"What a child can see\")"
        ),
    }
}

/// Tries every step in a short-lived child.
fn probe() -> Mode {
    // SAFETY: geteuid(2).
    let user = unsafe { libc::geteuid() } != 0;
    // SAFETY: fork(2) in a process that may have other threads: the child makes only the raw
    // system calls of `enter` and `_exit`, and the parent waits for it.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Mode::Shared(format!("fork: {}", std::io::Error::last_os_error()));
    }
    if pid == 0 {
        // SAFETY: a freshly forked child; see above.
        unsafe {
            let code = match enter(user) {
                Err(step) => step,
                Ok(()) => {
                    let init = libc::fork();
                    if init == 0 {
                        let code = match init_namespaces(user) {
                            Ok(()) => 0,
                            Err(step) => step,
                        };
                        libc::_exit(code);
                    }
                    let mut status = 0;
                    if init < 0 || libc::waitpid(init, &mut status, 0) != init {
                        Step::Fork as i32
                    } else if libc::WIFEXITED(status) {
                        libc::WEXITSTATUS(status)
                    } else {
                        Step::Fork as i32
                    }
                }
            };
            libc::_exit(code);
        }
    }
    let mut status = 0;
    let waited = loop {
        // SAFETY: waitpid(2) for the child just forked, into our own integer.
        let got = unsafe { libc::waitpid(pid, &mut status, 0) };
        if got == pid || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            break got;
        }
    };
    if waited != pid || !libc::WIFEXITED(status) {
        return Mode::Shared("the namespace probe did not end normally".to_owned());
    }
    match libc::WEXITSTATUS(status) {
        0 => Mode::Namespaces { user },
        code => Mode::Shared(format!(
            "the kernel refused {}",
            Step::from_code(code).map_or("a step", Step::what)
        )),
    }
}

/// A step of [`enter`] or [`init_namespaces`], as the probe reports its failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub(crate) enum Step {
    Unshare = 10,
    UserMap = 11,
    Private = 12,
    Proc = 13,
    Caps = 14,
    Fork = 15,
}

impl Step {
    /// Every step, in the order they are taken.
    const ALL: [Step; 6] = [
        Step::Unshare,
        Step::UserMap,
        Step::Private,
        Step::Proc,
        Step::Caps,
        Step::Fork,
    ];

    fn from_code(code: i32) -> Option<Self> {
        Self::ALL.into_iter().find(|s| *s as i32 == code)
    }

    fn what(self) -> &'static str {
        match self {
            Step::Unshare => "new PID and mount namespaces (unshare)",
            Step::UserMap => "a user namespace mapping this user to itself",
            Step::Private => "making the new mount namespace private",
            Step::Proc => "a /proc of the new PID namespace",
            Step::Caps => "dropping capabilities from the bounding set",
            Step::Fork => "the new namespace's first process",
        }
    }
}

/// Moves the calling (forked, single-threaded) process into new PID and mount namespaces —
/// and a user namespace mapping this user to itself when `user` — so that its next child is
/// the first process of the new PID namespace.
///
/// # Safety
/// Only in a freshly forked child, before `exec`.
pub(crate) unsafe fn enter(user: bool) -> Result<(), i32> {
    // SAFETY: raw system calls on values and stack buffers of our own.
    unsafe {
        let (uid, gid) = (libc::geteuid(), libc::getegid());
        let mut flags = libc::CLONE_NEWPID | libc::CLONE_NEWNS;
        if user {
            flags |= libc::CLONE_NEWUSER;
        }
        if libc::unshare(flags) != 0 {
            return Err(Step::Unshare as i32);
        }
        if user {
            // An undumpable process's /proc files are root's, its own uid_map included: it
            // is dumpable only while it writes them (nothing of ours can see it meanwhile:
            // every child of Core MCP runs in namespaces of its own).
            let dumpable = libc::prctl(libc::PR_GET_DUMPABLE, 0, 0, 0, 0);
            libc::prctl(libc::PR_SET_DUMPABLE, 1, 0, 0, 0);
            let mut line = [0u8; 48];
            let ok = write_file(c"/proc/self/setgroups", b"deny")
                && write_file(c"/proc/self/uid_map", map_line(&mut line, uid))
                && write_file(c"/proc/self/gid_map", map_line(&mut line, gid));
            libc::prctl(libc::PR_SET_DUMPABLE, dumpable.max(0), 0, 0, 0);
            if !ok {
                return Err(Step::UserMap as i32);
            }
        }
        Ok(())
    }
}

/// The first process of the new namespaces makes them its own: mounts private, a `/proc` of
/// this PID namespace, and (as root) the bounding set without [`DROPPED`].
///
/// # Safety
/// Only in the first child after [`enter`], before its own child `exec`s.
pub(crate) unsafe fn init_namespaces(user: bool) -> Result<(), i32> {
    // SAFETY: raw system calls on NUL-terminated literals and values of our own.
    unsafe {
        let none = std::ptr::null();
        if libc::mount(
            none,
            c"/".as_ptr(),
            none,
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        ) != 0
        {
            return Err(Step::Private as i32);
        }
        if libc::mount(
            c"proc".as_ptr(),
            c"/proc".as_ptr(),
            c"proc".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            std::ptr::null(),
        ) != 0
        {
            return Err(Step::Proc as i32);
        }
        if !user && !drop_capabilities() {
            return Err(Step::Caps as i32);
        }
        Ok(())
    }
}

/// Takes [`DROPPED`] out of the bounding set and the inheritable set, and clears the ambient
/// set: no later `exec` of this process or its children gets them back.
///
/// # Safety
/// As [`init_namespaces`].
unsafe fn drop_capabilities() -> bool {
    /// `_LINUX_CAPABILITY_VERSION_3`: two 32-bit words per set.
    const VERSION_3: u32 = 0x2008_0522;
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    // SAFETY: prctl(2) and capget/capset(2) on structs of ours, laid out as the kernel's.
    unsafe {
        for cap in DROPPED {
            // A capability this kernel does not know is not in any set (EINVAL): skip it.
            if libc::prctl(libc::PR_CAPBSET_DROP, *cap as libc::c_ulong, 0, 0, 0) != 0
                && *libc::__errno_location() != libc::EINVAL
            {
                return false;
            }
        }
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        );
        let mut header = Header {
            version: VERSION_3,
            pid: 0,
        };
        let mut data = [Data {
            effective: 0,
            permitted: 0,
            inheritable: 0,
        }; 2];
        if libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()) != 0 {
            return false;
        }
        for cap in DROPPED {
            data[(*cap / 32) as usize].inheritable &= !(1u32 << (cap % 32));
        }
        libc::syscall(libc::SYS_capset, &mut header, data.as_ptr()) == 0
    }
}

/// `ID ID 1`: one id mapped to itself.
fn map_line(buf: &mut [u8; 48], id: u32) -> &[u8] {
    let mut at = crate::reaper::write_number(&mut buf[..], u64::from(id));
    buf[at] = b' ';
    at += 1;
    at += crate::reaper::write_number(&mut buf[at..], u64::from(id));
    buf[at..at + 3].copy_from_slice(b" 1\n");
    &buf[..at + 3]
}

/// Writes `bytes` to `path` in one `write`; whether all of it was taken.
///
/// # Safety
/// Async-signal-safe: open/write/close on a NUL-terminated path and a buffer of ours.
unsafe fn write_file(path: &std::ffi::CStr, bytes: &[u8]) -> bool {
    // SAFETY: as above.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return false;
        }
        let written = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
        libc::close(fd);
        written == bytes.len() as isize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_map_line_maps_one_id_to_itself() {
        let mut buf = [0u8; 48];
        assert_eq!(map_line(&mut buf, 65534), b"65534 65534 1\n");
        assert_eq!(map_line(&mut buf, 0), b"0 0 1\n");
    }

    #[test]
    fn every_refusal_names_its_step() {
        for step in Step::ALL {
            assert_eq!(Step::from_code(step as i32), Some(step));
            assert!(!step.what().is_empty());
        }
        assert_eq!(Step::from_code(0), None);
        let shared = describe(&Mode::Shared("the kernel refused x".into()));
        assert!(
            shared.contains("share this process's PID namespace"),
            "{shared}"
        );
    }
}
