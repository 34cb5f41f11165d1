//! What the process does to itself before anything else, so that the children it starts —
//! upstream MCP servers, `shell_run` scripts, git and its hooks, the publishing CLI, Compose —
//! cannot read it: it makes itself **undumpable** (`prctl(PR_SET_DUMPABLE, 0)`).
//!
//! An undumpable process's `/proc/<pid>/environ`, `mem`, `maps`, `fd` and the like belong to
//! root, and `ptrace` of it is refused to every process without `CAP_SYS_PTRACE`, children of
//! the same user included. So the secrets Core MCP holds in its environment (`COREMCP_SQL`,
//! `COREMCP_RELAY_TOKEN`, a cloud key the agent client handed down) stay out of their reach;
//! what children get is only the scrubbed environment `coremcp-spawn` gives them. It also means
//! no core dump is written.
//!
//! `COREMCP_DUMPABLE=1` keeps the process dumpable, for a debugger, a core dump or `/proc`
//! readers of the same user (the test suite run as an ordinary user reads `/proc/<pid>/maps`);
//! it gives that reach to every child too.
//!
//! Undumpable is not enough: root's children hold `CAP_SYS_PTRACE`, and siblings (upstream
//! servers, other calls' scripts) are dumpable. So `coremcp-spawn` runs every child in PID and
//! mount namespaces of its own, where it sees none of them (`coremcp_spawn::isolation`); this
//! process is also the **subreaper** of what its children leave (`PR_SET_CHILD_SUBREAPER`),
//! so that where the kernel refuses namespaces, a script that kills its own reaper leaves its
//! processes to Core MCP, which kills them at the call's end, and not to init.
//!
//! Invariant: unless `COREMCP_DUMPABLE=1`, the process is undumpable before it reads its
//! configuration, starts a thread or starts a child, and it is a subreaper before it starts a
//! child; a child inherits nothing of it but what `coremcp-spawn` passes (dumpability is reset
//! by `execve`).

use crate::config::env;

/// Makes this process the subreaper of its children's orphans, and undumpable unless
/// `COREMCP_DUMPABLE=1` asks otherwise; whether it is undumpable.
pub fn at_start() -> bool {
    // SAFETY: prctl(2) with PR_SET_CHILD_SUBREAPER takes an integer and touches no memory of
    // ours.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
    if std::env::var_os(env::DUMPABLE).is_some_and(|v| v == "1") {
        return false;
    }
    // SAFETY: prctl(2) with PR_SET_DUMPABLE takes an integer and touches no memory of ours.
    unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) == 0 }
}

/// Says once, from a thread of its own, how this process's children are kept apart: a warning
/// where they share its PID namespace. The kernel is asked by a short-lived child a moment
/// after the start, off the path of the session's first answers (a child started before then
/// asks it at once).
pub fn say_how_children_are_kept() {
    let _ = std::thread::Builder::new()
        .name("coremcp-isolation".to_owned())
        .spawn(|| {
            std::thread::sleep(std::time::Duration::from_millis(500));
            let mode = coremcp_spawn::isolation_mode();
            let line = coremcp_spawn::describe_isolation(mode);
            match mode.isolated() {
                true => tracing::debug!("{line}"),
                false => tracing::warn!("{line}"),
            }
        });
}

/// Warns about every command-line word that carries a credential (a URL with a password, a
/// `password=` pair): `/proc/<pid>/cmdline` is readable by every process on the machine,
/// undumpable or not. The variables (`COREMCP_SQL`, `COREMCP_STORE`, …) are the way to pass
/// one.
pub fn warn_about_credentials_in(args: &[std::ffi::OsString]) {
    for (at, arg) in args.iter().enumerate().skip(1) {
        if coremcp_spawn::is_credential_value(arg) {
            let flag = args
                .get(at - 1)
                .and_then(|a| a.to_str())
                .filter(|a| a.starts_with("--"))
                .unwrap_or("an argument");
            tracing::warn!(
                "{flag} carries a credential on the command line, which every process on this \
                 machine can read in /proc/{}/cmdline: pass it in its COREMCP_* variable instead",
                std::process::id()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_process_is_undumpable_after_the_start() {
        // The test binary is not Core MCP: only the call is checked, on a forked copy so the
        // test runner itself stays debuggable.
        // SAFETY: fork(2); the child only calls async-signal-safe functions and `_exit`s.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // SAFETY: prctl and _exit, async-signal-safe.
            unsafe {
                libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
                let dumpable = libc::prctl(libc::PR_GET_DUMPABLE, 0, 0, 0, 0);
                libc::_exit(dumpable);
            }
        }
        let mut status = 0;
        // SAFETY: waitpid on the child we forked, writing into our own integer.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        assert!(libc::WIFEXITED(status));
        assert_eq!(libc::WEXITSTATUS(status), 0, "still dumpable");
    }
}
