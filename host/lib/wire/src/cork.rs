//! [`Cork`]: a thread that has several messages already in hand holds one, so that what it
//! sends leaves in one `write` when it lets go. The writer that honours it (the stdio outbox)
//! lives with the transport; the threads that hold it (an upstream server's reader) know no
//! transport, so the cork itself sits here, below both.
//!
//! Invariants: a cork stays on the thread that took it; when a thread's last cork drops, every
//! writer deferred on that thread is told once, in the order it was deferred. No I/O here.

use std::cell::{Cell, RefCell};
use std::marker::PhantomData;
use std::sync::Arc;

/// A writer that held back what a corked thread sent.
pub trait Uncork: Send + Sync {
    /// The thread's last cork dropped: write out what was held back.
    fn uncorked(&self);
}

thread_local! {
    /// How many [`Cork`]s this thread holds.
    static CORKS: Cell<usize> = const { Cell::new(0) };
    /// The writers that held back a message this thread sent while corked.
    static HELD: RefCell<Vec<Arc<dyn Uncork>>> = const { RefCell::new(Vec::new()) };
}

/// While one is held, a writer that honours corks holds back what this thread sends, and
/// writes it when the last one drops. A thread whose writer ignores corks holds one to no
/// effect. It stays on the thread that took it.
pub struct Cork(PhantomData<*const ()>);

impl Cork {
    pub fn hold() -> Self {
        CORKS.set(CORKS.get() + 1);
        Self(PhantomData)
    }
}

impl Drop for Cork {
    fn drop(&mut self) {
        let left = CORKS.get() - 1;
        CORKS.set(left);
        if left == 0 {
            for writer in HELD.take() {
                writer.uncorked();
            }
        }
    }
}

/// Whether this thread holds a cork now.
#[inline]
pub fn corked() -> bool {
    CORKS.get() > 0
}

/// Has `writer` told when this thread's last cork drops (call only while [`corked`]).
pub fn defer(writer: Arc<dyn Uncork>) {
    HELD.with_borrow_mut(|held| held.push(writer));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[derive(Default)]
    struct Count(AtomicUsize);

    impl Uncork for Count {
        fn uncorked(&self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn a_deferred_writer_is_told_once_when_the_last_cork_drops() {
        let writer = Arc::new(Count::default());
        assert!(!corked());
        let outer = Cork::hold();
        let inner = Cork::hold();
        assert!(corked());
        defer(writer.clone());
        drop(inner);
        assert_eq!(writer.0.load(Ordering::SeqCst), 0, "one cork is still held");
        drop(outer);
        assert_eq!(writer.0.load(Ordering::SeqCst), 1);
        assert!(!corked());
        drop(Cork::hold());
        assert_eq!(
            writer.0.load(Ordering::SeqCst),
            1,
            "told once, not at every later drop"
        );
    }
}
