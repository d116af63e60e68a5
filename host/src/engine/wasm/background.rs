//! Calls that run long move off the caller's threads.
//!
//! A call starts where it is awaited, on the embedder's (or `evo serve`'s) runtime, so a
//! short call pays no hand-off. Once it has computed for [`LONG_AFTER`] its guest is
//! moved, between two epoch ticks, to a small runtime of its own whose threads run at
//! the lowest priority (nice 19): the operating system gives the CPU to normal threads
//! first. A runaway loop then takes what short calls leave, instead of the short calls waiting
//! behind its slices: on two cores, five runaways in a hundred calls made the good
//! calls' p99 2,199× their clean run before this.
//!
//! It moves only while other calls are in flight in the same engine: a long call alone
//! keeps its priority, so other processes on the machine do not starve it.
//!
//! The price is paid by long calls beside short ones on a saturated machine: they get a
//! small share of the CPU until the short ones are done, and may meet their deadline
//! first. See `docs/decisions.md`.

use std::pin::Pin;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::Poll;
use std::time::Duration;

/// How long a call computes on its caller's thread before it counts as long-running. A
/// good call takes microseconds; checked at epoch ticks, so the move happens at the
/// first tick after this.
pub const LONG_AFTER: Duration = Duration::from_millis(2);

/// Whether a call runs long: set by its epoch callback once it has computed for
/// [`LONG_AFTER`], or presumed before it starts; and the engine's count of the calls in
/// flight, this one among them until it ends.
///
/// A long call moves to the low-priority threads only while other calls are in flight
/// in the same engine (waiting for a slot or running). Alone (a one-shot `evo skill
/// run`, a skill calling a skill, a server with nothing else to do) it keeps its
/// priority: lowered, it would lose the CPU to every other process on the machine (a
/// build, a test run) and could meet its deadline for nothing, and a thread's priority
/// cannot be raised again without privileges. Checked at every tick, so a long call
/// moves as soon as another call arrives.
#[derive(Debug, Clone)]
pub(super) struct LongRunning {
    state: Arc<AtomicU8>,
    /// The engine's count of calls in flight.
    calls: Arc<AtomicUsize>,
    /// The calls in flight that are this one's own: it and the callers it runs for.
    own: usize,
    /// Its skill's long calls in a row, counted the moment this one turns long, so that
    /// the next calls of a runaway skill take the long lane while this one still runs.
    streak: crate::skill::lanes::Streak,
}

/// The call is to run on the low-priority runtime.
const MOVE: u8 = 1;
/// The guest was seen computing past [`LONG_AFTER`].
const COMPUTED: u8 = 2;

impl LongRunning {
    /// A call at `depth` (1 or 0 at the top, more for a skill called by a skill), counted
    /// among the engine's `calls` until `Counted` drops, however the call ends.
    pub(super) fn start(
        calls: &Arc<AtomicUsize>,
        depth: u32,
        streak: &crate::skill::lanes::Streak,
    ) -> (Self, Counted) {
        calls.fetch_add(1, Ordering::Relaxed);
        let long = Self {
            state: Arc::new(AtomicU8::new(0)),
            calls: calls.clone(),
            // Its callers are in flight too (when they are Wasm calls; when they are
            // not, this errs towards staying).
            own: depth.max(1) as usize,
            streak: streak.clone(),
        };
        (long.clone(), Counted(long))
    }

    /// The guest has computed for [`LONG_AFTER`]: move it if other calls are in flight.
    pub(super) fn mark(&self) {
        if self.state.fetch_or(COMPUTED, Ordering::Relaxed) & COMPUTED == 0 {
            self.streak.ran_long();
        }
        self.presume();
    }

    /// The call is long before it starts (its skill's last calls ran long): it runs on
    /// the low-priority runtime from the start if other calls are in flight.
    pub(super) fn presume(&self) {
        if self.calls.load(Ordering::Relaxed) > self.own {
            self.state.fetch_or(MOVE, Ordering::Relaxed);
        }
    }

    /// Whether the call runs, or is to run, on the low-priority runtime.
    pub(super) fn is_marked(&self) -> bool {
        self.state.load(Ordering::Relaxed) & MOVE != 0
    }

    /// Whether the guest was seen computing past [`LONG_AFTER`] (not merely waiting:
    /// a call that waited for the CPU is not long for it).
    pub(super) fn computed_long(&self) -> bool {
        self.state.load(Ordering::Relaxed) & COMPUTED != 0
    }
}

/// Keeps a call among the engine's calls in flight until it is dropped, however the
/// call ends: cancelled calls too.
#[derive(Debug)]
pub(super) struct Counted(LongRunning);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.calls.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The low-priority runtime, started on the first long call; `None` if it could not be.
fn runtime() -> Option<&'static tokio::runtime::Runtime> {
    static RUNTIME: OnceLock<Option<tokio::runtime::Runtime>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
            let built = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(threads)
                .thread_name("evo-long")
                .on_thread_start(lower_priority)
                .enable_all()
                .build();
            match built {
                Ok(runtime) => Some(runtime),
                Err(e) => {
                    tracing::warn!(error = %e, "could not start the threads for long-running calls; they stay on the caller's");
                    None
                }
            }
        })
        .as_ref()
}

/// The lowest priority (nice 19) for the calling thread: a normal thread that wants the
/// CPU takes it, and this one still gets a small share, so a call on it keeps reaching
/// its deadline and a cancelled call is dropped (freeing its instance) even while the
/// machine is saturated. `SCHED_IDLE`, tried first, left a cancelled runaway holding
/// its instance for as long as a build kept both cores busy.
fn lower_priority() {
    #[cfg(target_os = "linux")]
    if let Err(e) = rustix::process::setpriority_process(Some(rustix::thread::gettid()), 19) {
        tracing::debug!(error = %e, "could not lower the priority of a thread for long calls");
    }
}

/// Runs `work` here until `long` is marked, then (after calling `moved`) on the
/// low-priority runtime. Dropping the returned future cancels `work` wherever it runs.
pub(super) async fn run<T: Send + 'static>(
    work: impl Future<Output = T> + Send + 'static,
    long: &LongRunning,
    moved: impl FnOnce(),
) -> Option<T> {
    let mut work: Pin<Box<dyn Future<Output = T> + Send>> = Box::pin(work);
    // A call marked before it starts (its skill's last calls ran long) starts there.
    if !long.is_marked() {
        let here = std::future::poll_fn(|cx| match work.as_mut().poll(cx) {
            Poll::Ready(value) => Poll::Ready(Some(value)),
            Poll::Pending if long.is_marked() => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        })
        .await;
        if let Some(value) = here {
            return Some(value);
        }
    }
    moved();
    let Some(runtime) = runtime() else {
        return Some(work.await);
    };
    match AbortOnDrop(runtime.spawn(work)).await {
        Ok(value) => Some(value),
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(_) => None,
    }
}

/// A spawned task that is cancelled when its handle is dropped.
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Future for AbortOnDrop<T> {
    type Output = Result<T, tokio::task::JoinError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.0).poll(cx)
    }
}

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}
