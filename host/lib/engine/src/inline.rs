//! Running a call on the thread that read it.
//!
//! Handing a call to a pool thread costs a wake-up, which on a small machine is most of what a
//! trivial call costs. A transport whose reader may run a call itself (stdio) installs a
//! [`Runner`] on its reading thread; a gated call submitted from that thread then runs there,
//! through the runner, which is what keeps the transport reading if the call runs long (stdio's
//! hands its input to another thread when a call outlasts a grace period).
//!
//! A runner may decline a call (it then goes to the pool): an HTTP runtime worker takes only a
//! call of a tool that has been quick lately ([`crate::pace`]).
//!
//! Invariants: only the thread that installed a runner sees it; the runner is taken off the
//! thread while a call runs, so a call that submits another one from inside goes to the pool
//! instead of nesting; a runner that reports it no longer owns the thread is not put back.

use std::cell::RefCell;
use std::marker::PhantomData;
use std::sync::Arc;

use crate::pace::Pace;

/// A unit of work.
pub type Job = Box<dyn FnOnce() + Send + 'static>;

/// Runs calls on the thread that installed it.
pub trait Runner: Send + Sync {
    /// Runs `job` now, on this thread: `Ok(false)` when the thread gave up its transport role
    /// while the job ran (it should run no further call inline), `Err(job)` when it declines
    /// the call. `pace` is how quick the call's tool has been, when known.
    fn run(&self, job: Job, pace: Option<&Pace>) -> Result<bool, Job>;
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

/// Runs `job` on this thread through its runner, or gives it back when the thread has none or
/// its runner declines it.
#[inline]
pub fn run(job: Job, pace: Option<&Pace>) -> Result<(), Job> {
    let Some(runner) = RUNNER.with(|r| r.borrow_mut().take()) else {
        return Err(job);
    };
    let outcome = runner.run(job, pace);
    if !matches!(outcome, Ok(false)) {
        RUNNER.with(|r| *r.borrow_mut() = Some(runner));
    }
    outcome.map(drop)
}

/// Runs `f` with `runner` installed on this thread.
pub fn with<R>(runner: Arc<dyn Runner>, f: impl FnOnce() -> R) -> R {
    let _installed = install(runner);
    f()
}

/// The runner of an HTTP runtime worker: it takes a call only of a tool that has been quick
/// lately ([`Pace::is_quick`]) and only while no other call runs on a runtime worker, so a tool
/// that turns slow holds one worker at most, once: a call that overran bars its tool from the
/// workers for good. Anything else it declines, to the pool.
pub fn on_runtime() -> Arc<dyn Runner> {
    static RUNTIME: std::sync::LazyLock<Arc<OnRuntime>> =
        std::sync::LazyLock::new(|| Arc::new(OnRuntime::default()));
    Arc::clone(&*RUNTIME) as Arc<dyn Runner>
}

#[derive(Default)]
struct OnRuntime {
    /// A call runs on a runtime worker.
    busy: std::sync::atomic::AtomicBool,
}

impl Runner for OnRuntime {
    fn run(&self, job: Job, pace: Option<&Pace>) -> Result<bool, Job> {
        use std::sync::atomic::Ordering;
        let Some(pace) = pace.filter(|p| p.is_quick()) else {
            return Err(job);
        };
        if self.busy.swap(true, Ordering::Acquire) {
            return Err(job);
        }
        /// Frees the slot even if the call unwinds.
        struct Free<'a>(&'a std::sync::atomic::AtomicBool);
        impl Drop for Free<'_> {
            fn drop(&mut self) {
                self.0.store(false, Ordering::Release);
            }
        }
        let _free = Free(&self.busy);
        let started = std::time::Instant::now();
        job();
        let took = started.elapsed();
        if took > crate::pace::OVERRUN {
            pace.bar();
            tracing::warn!(
                took_us = took.as_micros() as u64,
                "a call of a quick tool overran on an HTTP worker; its tool runs on the pool \
                 from now on"
            );
        }
        Ok(true)
    }
}

/// Whether this thread has a runner (for a reader to learn that it gave up its role).
pub fn installed() -> bool {
    RUNNER.with(|r| r.borrow().is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;

    struct Counting {
        ran: AtomicUsize,
        keep: bool,
    }

    impl Runner for Counting {
        fn run(&self, job: Job, _: Option<&Pace>) -> Result<bool, Job> {
            self.ran.fetch_add(1, Ordering::SeqCst);
            job();
            Ok(self.keep)
        }
    }

    #[test]
    fn only_an_installing_thread_runs_inline_and_never_nested() {
        assert!(
            run(Box::new(|| {}), None).is_err(),
            "no runner: the job comes back"
        );
        let runner = Arc::new(Counting {
            ran: AtomicUsize::new(0),
            keep: true,
        });
        let guard = install(runner.clone());
        let nested = Arc::new(AtomicUsize::new(0));
        let seen = nested.clone();
        run(
            Box::new(move || {
                // From inside a call the runner is away: a nested job comes back.
                if run(Box::new(|| {}), None).is_err() {
                    seen.fetch_add(1, Ordering::SeqCst);
                }
            }),
            None,
        )
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
        assert!(run(Box::new(|| {}), None).is_ok());
        assert!(!installed());
        assert!(run(Box::new(|| {}), None).is_err());
    }

    /// A runner that declines every call.
    struct Declining;

    impl Runner for Declining {
        fn run(&self, job: Job, _: Option<&Pace>) -> Result<bool, Job> {
            Err(job)
        }
    }

    /// A pace that counts as quick.
    fn quick() -> Pace {
        let pace = Pace::default();
        for _ in 0..crate::pace::STREAK {
            pace.record(std::time::Duration::from_micros(10), true);
        }
        pace
    }

    #[test]
    fn a_runtime_worker_takes_one_quick_call_at_a_time_and_bars_one_that_overran() {
        let runtime = OnRuntime::default();
        let (slow, unknown) = (quick(), Pace::default());
        assert!(
            runtime.run(Box::new(|| {}), None).is_err(),
            "no pace: declined"
        );
        assert!(
            runtime.run(Box::new(|| {}), Some(&unknown)).is_err(),
            "not quick: declined"
        );
        // While one call runs on a worker, another is declined.
        let other = quick();
        let inner = Arc::new(Mutex::new(None));
        let seen = Arc::clone(&inner);
        let runtime = Arc::new(runtime);
        let nested = Arc::clone(&runtime);
        let ran = runtime.run(
            Box::new(move || {
                let declined = nested.run(Box::new(|| {}), Some(&other)).is_err();
                *seen.lock().expect("seen") = Some(declined);
                std::thread::sleep(crate::pace::OVERRUN * 2);
            }),
            Some(&slow),
        );
        assert!(matches!(ran, Ok(true)));
        assert_eq!(*inner.lock().expect("seen"), Some(true));
        assert!(!slow.is_quick(), "overran: barred");
        assert!(runtime.run(Box::new(|| {}), Some(&slow)).is_err());
        let fast = quick();
        assert!(
            runtime.run(Box::new(|| {}), Some(&fast)).is_ok(),
            "the slot is free"
        );
        assert!(fast.is_quick());
    }

    #[test]
    fn a_declined_call_comes_back_and_the_runner_stays() {
        let _guard = install(Arc::new(Declining));
        assert!(run(Box::new(|| {}), None).is_err());
        assert!(installed(), "a runner that declined keeps its thread");
    }
}
