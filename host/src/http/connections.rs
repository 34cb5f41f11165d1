//! How many connections `coremcp serve` holds, in all and per client address, so that no one
//! client can take the listener from the others before it has even authenticated.
//!
//! Invariants:
//! - A client address never holds more than its limit of open connections: one over it is
//!   closed as soon as it is accepted, and the connections already established keep being
//!   served. Relays and load balancers bring many users from one address, so the default
//!   ([`DEFAULT_PER_CLIENT`]) is generous; `--max-connections-per-client` changes it.
//! - The total is bounded by the process's descriptor limit (raised to its hard limit at start),
//!   leaving room for the files, pipes and sockets the host itself needs.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Connections one client address may hold by default.
pub const DEFAULT_PER_CLIENT: usize = 512;
/// Descriptors kept for everything but client connections.
const RESERVED_FDS: u64 = 256;
/// The most connections held in all, whatever the descriptor limit.
const MAX_TOTAL: u64 = 65_536;
/// How often a refusal is logged per address, at most.
const WARN_EVERY: Duration = Duration::from_secs(60);

/// The open connections of each client address.
#[derive(Debug)]
pub struct PerClient {
    limit: usize,
    open: Mutex<HashMap<IpAddr, Entry>>,
}

#[derive(Debug, Default)]
struct Entry {
    open: usize,
    refused: u64,
    warned: Option<Instant>,
}

/// One connection counted against its address; dropping it ends the count.
#[derive(Debug)]
pub struct Held {
    owner: Arc<PerClient>,
    ip: IpAddr,
}

impl PerClient {
    pub fn new(limit: usize) -> Arc<Self> {
        Arc::new(Self {
            limit: limit.max(1),
            open: Mutex::new(HashMap::new()),
        })
    }

    /// Counts a new connection from `ip`, or `None` when the address is at its limit (the
    /// refusal is logged at most once a minute per address, with how many were refused).
    pub fn admit(self: &Arc<Self>, ip: IpAddr) -> Option<Held> {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = open.entry(ip).or_default();
        if entry.open >= self.limit {
            entry.refused += 1;
            if entry.warned.is_none_or(|at| at.elapsed() >= WARN_EVERY) {
                tracing::warn!(
                    client = %ip,
                    refused = entry.refused,
                    "a client holds {} connections, its limit (--max-connections-per-client); \
                     new ones from it are closed at once",
                    self.limit
                );
                entry.warned = Some(Instant::now());
            }
            return None;
        }
        entry.open += 1;
        Some(Held {
            owner: Arc::clone(self),
            ip,
        })
    }

    /// Connections open from `ip` now.
    pub fn open(&self, ip: IpAddr) -> usize {
        self.open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&ip)
            .map_or(0, |e| e.open)
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let mut open = self
            .owner
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(entry) = open.get_mut(&self.ip) {
            entry.open = entry.open.saturating_sub(1);
            // An address with nothing open is forgotten, so the table never outgrows the
            // connections themselves.
            if entry.open == 0 {
                open.remove(&self.ip);
            }
        }
    }
}

/// Raises the soft descriptor limit to the hard one and returns how many connections may be
/// open in all: the limit less what the host keeps for itself.
pub fn total_limit() -> usize {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit read and write the local struct only.
    let soft = unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            1024
        } else {
            if limit.rlim_cur < limit.rlim_max {
                let raised = libc::rlimit {
                    rlim_cur: limit.rlim_max,
                    rlim_max: limit.rlim_max,
                };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                    limit.rlim_cur = limit.rlim_max;
                }
            }
            limit.rlim_cur
        }
    };
    soft.saturating_sub(RESERVED_FDS).clamp(64, MAX_TOTAL) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_address_is_bounded_on_its_own_and_released_on_drop() {
        let limits = PerClient::new(2);
        let (a, b): (IpAddr, IpAddr) = (
            "127.0.0.3".parse().expect("ip"),
            "127.0.0.2".parse().expect("ip"),
        );
        let first = limits.admit(a).expect("1");
        let _second = limits.admit(a).expect("2");
        assert!(limits.admit(a).is_none(), "over the limit");
        assert!(limits.admit(a).is_none());
        let _other = limits.admit(b).expect("another address is not affected");
        drop(first);
        assert_eq!(limits.open(a), 1);
        let _again = limits.admit(a).expect("room again");
        assert_eq!(limits.open(a), 2);
    }

    #[test]
    fn the_total_leaves_room_for_the_host() {
        let total = total_limit();
        assert!((64..=65_536).contains(&total), "{total}");
    }
}
