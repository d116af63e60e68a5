//! The epoch ticker: it advances an engine's epoch every [`EPOCH_TICK`] while guest code
//! may run, and sleeps while none can.
//!
//! Deadlines are checked at epoch ticks, so they need the ticks only while a guest runs.
//! A ticker that ticked for ever woke an idle `evo serve` a hundred times a second, for
//! three quarters of the CPU the idle server used. A store that may run guest code (a
//! call's, or an instance being made ahead) holds an [`Awake`] from [`Running::awake`];
//! the ticker waits while none is held and starts ticking again as soon as one is. A
//! parked instance runs nothing, and holds none.
//!
//! The epoch does not advance meanwhile, which changes nothing for a deadline: each is
//! set from the epoch at its call's start and measured in wall-clock time.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use wasmtime::Engine;

use super::{EPOCH_TICK, swap};

/// How long an idle ticker sleeps before it looks whether its engine still exists (and,
/// every [`swap::RECHECK`], whether swap was turned on).
const IDLE_CHECK: Duration = Duration::from_secs(1);

/// The stores that may run guest code now, shared by the tickers of an engine's flavors.
#[derive(Debug, Default)]
pub(super) struct Running {
    state: Mutex<Held>,
    woken: Condvar,
    /// Epoch ticks so far, all flavors together.
    ticks: AtomicU64,
}

#[derive(Debug, Default)]
struct Held {
    /// Guards held.
    guards: usize,
    /// Tickers waiting for one: only then does taking a guard wake anything (a wake-up
    /// is a system call, on the path of the call that takes the guard).
    waiting: usize,
}

impl Running {
    fn state(&self) -> MutexGuard<'_, Held> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Keeps the tickers ticking until the returned guard drops.
    pub(super) fn awake(self: &Arc<Self>) -> Awake {
        let mut state = self.state();
        state.guards += 1;
        if state.guards == 1 && state.waiting > 0 {
            self.woken.notify_all();
        }
        Awake(self.clone())
    }

    /// Whether something is held.
    #[cfg(feature = "internals")]
    pub(super) fn ticking(&self) -> bool {
        self.state().guards > 0
    }

    /// Blocks while nothing is held, for at most `idle`; whether something is held.
    fn wait(&self, idle: Duration) -> bool {
        let mut state = self.state();
        if state.guards > 0 {
            return true;
        }
        state.waiting += 1;
        let (mut state, _) = self
            .woken
            .wait_timeout_while(state, idle, |state| state.guards == 0)
            .unwrap_or_else(PoisonError::into_inner);
        state.waiting -= 1;
        state.guards > 0
    }

    /// Epoch ticks so far.
    #[cfg(test)]
    fn ticks(&self) -> u64 {
        self.ticks.load(Ordering::Relaxed)
    }
}

/// Held by a store that may run guest code: the tickers tick while one is.
#[derive(Debug)]
pub(super) struct Awake(Arc<Running>);

impl Drop for Awake {
    fn drop(&mut self) {
        self.0.state().guards -= 1;
    }
}

/// Starts `engine`'s ticker, which ticks while `running` holds a store and ends after
/// the engine is dropped; if `watch_swap` (its pool resets memory with the page scan),
/// it also says when swap is turned on.
pub(super) fn start(engine: &Engine, watch_swap: bool, running: Arc<Running>) {
    let weak = engine.weak();
    let spawned = std::thread::Builder::new()
        .name("evo-epoch".into())
        .spawn(move || {
            let mut swap = watch_swap.then(swap::Watch::new);
            loop {
                let ticking = running.wait(IDLE_CHECK);
                if ticking {
                    std::thread::sleep(EPOCH_TICK);
                }
                let Some(engine) = weak.upgrade() else {
                    return;
                };
                if ticking {
                    engine.increment_epoch();
                    running.ticks.fetch_add(1, Ordering::Relaxed);
                }
                drop(engine);
                if let Some(swap) = &mut swap {
                    swap.check();
                }
            }
        });
    if let Err(e) = spawned {
        // Without a ticker, deadlines never fire; the tokio guard in `call` still
        // bounds each call's wall-clock time, so this degrades rather than hangs.
        tracing::error!(error = %e, "could not start the epoch ticker; deadlines rely on the async guard only");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Waits until `done`, for at most a minute.
    fn wait_until(done: impl Fn() -> bool) -> bool {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while !done() {
            if std::time::Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        true
    }

    #[test]
    fn the_ticker_ticks_only_while_a_store_may_run_guest_code() {
        let mut config = wasmtime::Config::new();
        config.epoch_interruption(true);
        let engine = Engine::new(&config).unwrap();
        let running = Arc::new(Running::default());
        start(&engine, false, running.clone());
        // Nothing holds it: no tick, however long it is left (ten ticks' worth here).
        std::thread::sleep(EPOCH_TICK * 10);
        assert_eq!(running.ticks(), 0);

        let awake = running.awake();
        let second = running.awake();
        assert!(wait_until(|| running.ticks() >= 3), "it ticks while held");
        drop(awake);
        let before = running.ticks();
        assert!(
            wait_until(|| running.ticks() >= before + 2),
            "it ticks while any guard is held"
        );
        drop(second);
        // At most the tick under way when the last guard dropped.
        let stopped = running.ticks();
        std::thread::sleep(EPOCH_TICK * 10);
        assert!(running.ticks() <= stopped + 1, "{} ticks", running.ticks());

        // And it starts again.
        let _again = running.awake();
        let idle = running.ticks();
        assert!(wait_until(|| running.ticks() > idle + 1));
    }
}
