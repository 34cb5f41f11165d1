//! Running a call on the thread that read it.
//!
//! Handing a call to a pool thread costs a wake-up, which on a small machine is most of what a
//! trivial call costs. A transport whose reader may run a call itself (stdio) installs a
//! [`Runner`] on its reading thread; a gated call submitted from that thread then runs there,
//! through the runner, which is what keeps the transport reading if the call runs long (stdio's
//! hands its input to another thread when a call outlasts a grace period).
//!
//! Invariants: only the thread that installed a runner sees it; the runner is taken off the
//! thread while a call runs, so a call that submits another one from inside goes to the pool
//! instead of nesting; a runner that reports it no longer owns the thread is not put back.

use std::cell::RefCell;
use std::marker::PhantomData;
use std::sync::Arc;

use crate::pool::Job;

/// Runs calls on the thread that installed it.
pub trait Runner: Send + Sync {
    /// Runs `job` now, on this thread; false when the thread gave up its transport role while
    /// the job ran (it should run no further call inline).
    fn run(&self, job: Job) -> bool;
}

thread_local! {
    static RUNNER: RefCell<Option<Arc<dyn Runner>>> = const { RefCell::new(None) };
}

/// Keeps a runner installed on this thread until dropped.
pub struct Installed {
    /// Tied to the thread that installed it.
    _thread: PhantomData<*const ()>,
}

impl Drop for Installed {
    fn drop(&mut self) {
        RUNNER.with(|r| r.borrow_mut().take());
    }
}

/// Installs `runner` on this thread.
pub fn install(runner: Arc<dyn Runner>) -> Installed {
    RUNNER.with(|r| *r.borrow_mut() = Some(runner));
    Installed {
        _thread: PhantomData,
    }
}

/// Runs `job` on this thread through its runner, or gives it back when the thread has none.
pub fn run(job: Job) -> Result<(), Job> {
    let Some(runner) = RUNNER.with(|r| r.borrow_mut().take()) else {
        return Err(job);
    };
    if runner.run(job) {
        RUNNER.with(|r| *r.borrow_mut() = Some(runner));
    }
    Ok(())
}

/// Whether this thread has a runner (for a reader to learn that it gave up its role).
pub fn installed() -> bool {
    RUNNER.with(|r| r.borrow().is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct Counting {
        ran: AtomicUsize,
        keep: bool,
    }

    impl Runner for Counting {
        fn run(&self, job: Job) -> bool {
            self.ran.fetch_add(1, Ordering::SeqCst);
            job();
            self.keep
        }
    }

    #[test]
    fn only_an_installing_thread_runs_inline_and_never_nested() {
        assert!(
            run(Box::new(|| {})).is_err(),
            "no runner: the job comes back"
        );
        let runner = Arc::new(Counting {
            ran: AtomicUsize::new(0),
            keep: true,
        });
        let guard = install(runner.clone());
        let nested = Arc::new(AtomicUsize::new(0));
        let seen = nested.clone();
        run(Box::new(move || {
            // From inside a call the runner is away: a nested job comes back.
            if run(Box::new(|| {})).is_err() {
                seen.fetch_add(1, Ordering::SeqCst);
            }
        }))
        .map_err(|_| "ran")
        .expect("inline");
        assert_eq!(nested.load(Ordering::SeqCst), 1);
        assert_eq!(runner.ran.load(Ordering::SeqCst), 1);
        assert!(installed());
        std::thread::spawn(|| assert!(!installed()))
            .join()
            .expect("other thread");
        drop(guard);
        assert!(!installed());
    }

    #[test]
    fn a_runner_that_lost_its_role_is_not_put_back() {
        let runner = Arc::new(Counting {
            ran: AtomicUsize::new(0),
            keep: false,
        });
        let _guard = install(runner);
        assert!(run(Box::new(|| {})).is_ok());
        assert!(!installed());
        assert!(run(Box::new(|| {})).is_err());
    }
}
