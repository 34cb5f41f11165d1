//! How quick a tool has been lately: whether its next call may run on the thread that read it
//! when that thread must not be held up for long (an HTTP runtime worker).
//!
//! A tool is quick once its last [`STREAK`] calls each ran within [`QUICK`] (the plugin's own
//! time, not the wait for a thread); a call over that, or one that timed out or was
//! cancelled, starts the count again. A tool whose call held such a thread for [`OVERRUN`] is
//! never quick again in this process ([`Pace::bar`]): a plugin that turns slow or stuck costs
//! that thread once, not once per call.
//!
//! Invariant: reading and recording are a few relaxed atomics; nothing here waits.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

/// The longest a call may take and still count as quick.
pub(crate) const QUICK: Duration = Duration::from_millis(1);
/// Quick calls in a row before the tool counts as quick.
pub(crate) const STREAK: u32 = 16;
/// How long a call may hold a thread that must not wait before its tool is barred from it
/// (well past what a busy machine's scheduler takes from a quick call).
pub(crate) const OVERRUN: Duration = Duration::from_millis(20);

/// The recent pace of one tool.
#[derive(Debug, Default)]
pub struct Pace {
    streak: AtomicU32,
    barred: AtomicBool,
}

impl Pace {
    /// Whether the tool's last [`STREAK`] calls were quick (and it was never barred).
    pub(crate) fn is_quick(&self) -> bool {
        !self.barred.load(Ordering::Relaxed) && self.streak.load(Ordering::Relaxed) >= STREAK
    }

    /// A call ran for `took` in its plugin; `completed` is false when it timed out or was
    /// cancelled.
    #[inline]
    pub fn record(&self, took: Duration, completed: bool) {
        if completed && took <= QUICK {
            // Saturates well before overflow: only the threshold matters.
            let _ = self
                .streak
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                    (n < STREAK).then_some(n + 1)
                });
        } else {
            self.streak.store(0, Ordering::Relaxed);
        }
    }

    /// A call overran where it must not: the tool is never quick again.
    pub(crate) fn bar(&self) {
        self.barred.store(true, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quick_after_a_streak_reset_by_a_slow_call_and_barred_for_good() {
        let pace = Pace::default();
        let fast = Duration::from_micros(50);
        for _ in 0..STREAK - 1 {
            pace.record(fast, true);
        }
        assert!(!pace.is_quick());
        pace.record(fast, true);
        assert!(pace.is_quick());
        pace.record(QUICK * 2, true);
        assert!(!pace.is_quick(), "a slow call starts the count again");
        for _ in 0..STREAK {
            pace.record(fast, true);
        }
        assert!(pace.is_quick());
        pace.record(fast, false);
        assert!(!pace.is_quick(), "a timeout or a cancel is not quick");
        for _ in 0..STREAK * 3 {
            pace.record(fast, true);
        }
        pace.bar();
        assert!(!pace.is_quick(), "barred for good");
    }
}
