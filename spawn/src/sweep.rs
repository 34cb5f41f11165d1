//! What a dead reaper left: processes this process adopted as their subreaper (the host sets
//! `PR_SET_CHILD_SUBREAPER` on itself at start), killed and reaped.
//!
//! A child run to completion shares this process's PID namespace only where the kernel refused
//! one ([`crate::isolation`]); there, a program can kill its own reaper (`setsid sleep 60 &
//! kill -9 $PPID`), and what it started comes to this process. It is told from this process's
//! own children by where it comes from: it started after the dead reaper did, and it is in the
//! reaper's process group or session, or in a session of its own — every child Core MCP starts
//! leads a process group in this process's session. (One that moves itself to a group of its
//! own in this session is left: the README says so.) In namespaces, the only adopted process is
//! an init whose keeper the caller had to kill; it is in the keeper's group.
//!
//! Invariants: only a process whose parent is this one is killed, and each one killed is
//! reaped by its own pid (never `waitpid(-1)`, which could take another call's status).

use std::path::Path;

/// The process a stray comes from: a reaper (or keeper) that ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Origin {
    pub pid: libc::pid_t,
    /// When it started, in clock ticks since boot (`/proc/PID/stat` field 22).
    pub start: u64,
}

/// The facts of `/proc/PID/stat` a sweep needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stat {
    ppid: libc::pid_t,
    pgrp: libc::pid_t,
    session: libc::pid_t,
    start: u64,
}

/// `pid`'s stat line read (`None`: gone).
fn stat(pid: libc::pid_t) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&text)
}

/// `pid (comm) state ppid pgrp session … starttime …`: the command may hold anything, so the
/// fields are read after its last `)`.
fn parse_stat(text: &str) -> Option<Stat> {
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some(Stat {
        ppid: fields.get(1)?.parse().ok()?,
        pgrp: fields.get(2)?.parse().ok()?,
        session: fields.get(3)?.parse().ok()?,
        start: fields.get(19)?.parse().ok()?,
    })
}

/// The origin of strays for the reaper `pid`, read while it lives.
pub(crate) fn origin(pid: libc::pid_t) -> Option<Origin> {
    stat(pid).map(|s| Origin {
        pid,
        start: s.start,
    })
}

/// Whether `stat`, a child of this process, came from `origin` (see the module doc); `own`
/// is this process's session.
fn is_stray(stat: &Stat, origin: &Origin, own: libc::pid_t) -> bool {
    stat.start >= origin.start
        && (stat.pgrp == origin.pid || stat.session == origin.pid || stat.session != own)
}

/// Kills and reaps every stray of `origin` adopted by this process, and theirs as they come;
/// how many.
pub(crate) fn sweep(origin: &Origin) -> usize {
    // SAFETY: getpid(2) and getsid(2) take nothing of ours.
    let (me, own) = unsafe { (libc::getpid(), libc::getsid(0)) };
    let mut swept = 0;
    // Each round kills what is adopted now; their own children come to us as they die.
    for _ in 0..64 {
        let strays: Vec<libc::pid_t> = children_of(me)
            .into_iter()
            .filter(|(_, s)| is_stray(s, origin, own))
            .map(|(pid, _)| pid)
            .collect();
        if strays.is_empty() {
            break;
        }
        for pid in strays {
            // SAFETY: kill(2) and waitpid(2) of a child of ours, by its pid.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                let mut status = 0;
                libc::waitpid(pid, &mut status, 0);
            }
            swept += 1;
        }
    }
    swept
}

/// The processes whose parent is `me`, with their stat.
fn children_of(me: libc::pid_t) -> Vec<(libc::pid_t, Stat)> {
    let Ok(entries) = std::fs::read_dir(Path::new("/proc")) else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<libc::pid_t>().ok())
        .filter_map(|pid| Some((pid, stat(pid)?)))
        .filter(|(_, s)| s.ppid == me)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_is_read_past_any_command() {
        let line = "4242 (we) ird (name)) S 10 4242 4242 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 \
                    987654 1 2 3\n";
        assert_eq!(
            parse_stat(line),
            Some(Stat {
                ppid: 10,
                pgrp: 4242,
                session: 4242,
                start: 987_654
            })
        );
        assert_eq!(parse_stat("garbage"), None);
        // SAFETY: getpid(2).
        let me = unsafe { libc::getpid() };
        assert!(stat(me).is_some_and(|s| s.start > 0));
    }

    #[test]
    fn strays_are_told_from_this_processs_own_children() {
        let origin = Origin {
            pid: 500,
            start: 1_000,
        };
        let own = 7;
        let child = |pgrp, session, start| Stat {
            ppid: 1,
            pgrp,
            session,
            start,
        };
        // Left in the reaper's group, in its session, or in a session of its own.
        assert!(is_stray(&child(500, own, 1_001), &origin, own));
        assert!(is_stray(&child(600, 500, 1_001), &origin, own));
        assert!(is_stray(&child(600, 600, 1_001), &origin, own));
        // Another call's reaper, an upstream server: group leaders in this session.
        assert!(!is_stray(&child(600, own, 1_001), &origin, own));
        // Anything older than the reaper is not its.
        assert!(!is_stray(&child(500, own, 999), &origin, own));
    }
}
