//! Instances made before their calls. After a call of a component answers, its next
//! instance is made off the critical path and parked beside it, so that the next call
//! starts in guest code instead of instantiating first.
//!
//! The rules:
//!
//! - Nothing of a call is in a parked instance. It is made with a neutral state (no
//!   frame, nothing granted, no preopens, no environment); what belongs to a call (its
//!   caller's frame, the grant's WASI context, stdio, the outbound checks, the resource
//!   table, the deadline and fuel) is set when a call takes it, so neither its time
//!   nor its fuel counts what making the instance took.
//! - So an instance is parked only if making it reached nothing of the host: a component
//!   whose initialization asks the host anything (its environment, a preopen, the clock)
//!   would have been answered from the neutral state instead of its call's. Seen once,
//!   that component is never parked again, and each of its calls makes its own instance
//!   as before. Making an instance runs under the skill's memory limit and a deadline
//!   of [`MAKING_DEADLINE`] (or the skill's own, if shorter); a component that fails
//!   either is not parked again either. The deadline bounds how long a component whose
//!   initialization spins holds the runtime's thread while it is made ahead: once.
//! - At most one instance per component, [`EngineConfig::parked_instances`] in all
//!   (`[engine] parked_instances`, 0 turns parking off) and [`PARKED_MEMORY_BYTES`] of
//!   linear memory in all: parking past either evicts the instances parked longest ago.
//!   The pool has places for them beside its call slots (and for the one being made:
//!   one at a time per engine), so a parked instance never keeps a call waiting.
//! - A component's instances are parked from its second call on: a one-shot
//!   `evo skill run` makes no instance it would never use.
//! - A component removed from the catalogue or replaced drops its spot, and so its
//!   parked instance; a grant changed meanwhile applies to the next call, since the
//!   instance was made with none.
//! - A parked instance is not counted in [`WasmEngine::live_instances`] (the instances
//!   of calls under way) but in [`WasmEngine::parked_instances`].
//! - On a multi-thread runtime the making also gives the ended call's store back to the
//!   pool, after the next instance is made: the reset of the memory its guest wrote
//!   leaves the caller's path, and the worker that makes the instance is woken once for
//!   both. Until then that store keeps its slot and counts as live.
//! - On a current-thread runtime (`evo serve` over stdio) the making runs on that
//!   runtime's thread, after the answer is out. A thread of its own for the making
//!   (and the drop) was measured slower in the `mcp_stdio` bench, twice: each hand-off
//!   wakes a thread, which on two cores shared with the client costs more than the
//!   work it takes off the path.
//!
//! [`EngineConfig::parked_instances`]: super::EngineConfig::parked_instances

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use wasmtime::Store;

use super::contract::Instantiate;
use super::limits::{Limits, MAX_COPIED_BYTES, StoreLimiter};
use super::state::{HostState, Live};
use super::{EPOCH_TICK, WasmEngine};
use crate::skill::kernel::SkillContext;

/// Instances that may be parked at once by default.
pub const DEFAULT_PARKED_INSTANCES: u32 = 8;
/// Linear memory parked instances may hold in all: a Rust skill's instance holds about
/// 1 MiB, a componentize-js one about 10, a componentize-py one several tens.
pub(super) const PARKED_MEMORY_BYTES: usize = 64 << 20;

/// The longest an instance may take to be made ahead: far more than any example's
/// making takes, short enough that a component whose initialization spins holds its
/// runtime's thread for no longer, once.
pub(super) const MAKING_DEADLINE: Duration = Duration::from_millis(250);

/// Epoch ticks to give a making: [`MAKING_DEADLINE`], or the skill's own deadline if
/// shorter, as a fresh instance's making would have.
fn making_ticks(timeout_ms: u64) -> u64 {
    let tick = EPOCH_TICK.as_millis().max(1);
    let deadline = MAKING_DEADLINE.as_millis().min(u128::from(timeout_ms));
    u64::try_from(deadline / tick).unwrap_or(u64::MAX) + 1
}

/// An instance made ahead, with its store.
pub(super) struct Parked<I> {
    pub(super) store: Store<HostState>,
    pub(super) instance: I,
}

/// Where a component's next instance waits: one per loaded component.
pub(super) struct Spot<I> {
    parked: Mutex<Option<Parked<I>>>,
    /// Cleared once making its instance was seen to reach the host.
    parkable: AtomicBool,
    /// Calls that ended, up to the second (from which on it is parked).
    calls: AtomicU32,
}

impl<I> Default for Spot<I> {
    fn default() -> Self {
        Self {
            parked: Mutex::new(None),
            parkable: AtomicBool::new(true),
            calls: AtomicU32::new(0),
        }
    }
}

impl<I> Spot<I> {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Parked<I>>> {
        self.parked.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The parked instance, if there is one.
    pub(super) fn take(&self) -> Option<Parked<I>> {
        self.lock().take()
    }
}

/// A spot as the engine's list of them sees it, whatever its component's kind.
trait Evict: Send + Sync {
    /// Whether it holds an instance.
    fn holds(&self) -> bool;
    /// Drops its parked instance; whether it had one.
    fn evict(&self) -> bool;
}

impl<I: Send> Evict for Spot<I> {
    fn holds(&self) -> bool {
        self.lock().is_some()
    }

    fn evict(&self) -> bool {
        let parked = self.take();
        let had = parked.is_some();
        drop(parked);
        had
    }
}

/// One instance to be made and parked, counted until it is (or is not after all).
struct Pending(Arc<AtomicUsize>);

impl Pending {
    fn new(count: &Arc<AtomicUsize>) -> Self {
        count.fetch_add(1, Ordering::AcqRel);
        Self(count.clone())
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The engine's one turn to make an instance ahead, given back however the making ends
/// (a runtime shutting down drops its task midway).
struct Turn(WasmEngine);

impl Drop for Turn {
    fn drop(&mut self) {
        self.0.inner.parking.making.store(false, Ordering::Release);
    }
}

/// The engine's parked instances: how many may be, and which are, oldest first.
pub(super) struct Parking {
    max: usize,
    /// Spots that were given an instance, oldest first, with the memory it holds. An
    /// entry whose instance was taken since stays until the next parking passes it.
    order: Mutex<VecDeque<(Weak<dyn Evict>, usize)>>,
    /// Whether an instance is being made: one at a time.
    making: AtomicBool,
    /// Parked stores alive.
    count: Arc<AtomicUsize>,
    /// Instances to be made and parked that are not yet, or not parked after all.
    pending: Arc<AtomicUsize>,
    /// The frame parked stores hold until a call gives them its own.
    idle: std::sync::OnceLock<SkillContext>,
}

impl Parking {
    /// Room for `max` parked instances (none: parking is off).
    pub(super) fn new(max: u32) -> Self {
        Self {
            max: max as usize,
            order: Mutex::default(),
            making: AtomicBool::new(false),
            count: Arc::default(),
            pending: Arc::default(),
            idle: std::sync::OnceLock::new(),
        }
    }

    /// Places the pool keeps for parked instances: those parked, and the one being made.
    pub(super) fn places(&self) -> u32 {
        if self.max == 0 {
            0
        } else {
            u32::try_from(self.max + 1).unwrap_or(u32::MAX)
        }
    }

    /// Parked instances alive now.
    pub(super) fn count(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }

    /// Parks `parked` in `spot`, holding `memory` bytes, after evicting the instances
    /// parked longest ago that leave no room for it; false (and nothing parked) when it
    /// alone is larger than every parked instance may be, or the spot holds one already.
    fn admit<I: Send + 'static>(
        &self,
        spot: &Arc<Spot<I>>,
        parked: Parked<I>,
        memory: usize,
    ) -> bool {
        if memory > PARKED_MEMORY_BYTES {
            return false;
        }
        let mut evicted = 0;
        {
            let mut order = self.order.lock().unwrap_or_else(PoisonError::into_inner);
            let mut slot = spot.lock();
            if slot.is_some() {
                return false;
            }
            let this: Weak<dyn Evict> = Arc::downgrade(spot) as Weak<dyn Evict>;
            // Entries of spots that are gone, or whose instance a call took, count for
            // nothing: dropped as they are passed.
            order.retain(|(weak, _)| {
                !Weak::ptr_eq(weak, &this) && weak.upgrade().is_some_and(|s| s.holds())
            });
            let mut held: usize = order.iter().map(|(_, bytes)| bytes).sum();
            while !order.is_empty()
                && (order.len() >= self.max || held + memory > PARKED_MEMORY_BYTES)
            {
                let Some((weak, bytes)) = order.pop_front() else {
                    break;
                };
                held -= bytes;
                if weak.upgrade().is_some_and(|s| s.evict()) {
                    evicted += 1;
                }
            }
            order.push_back((this, memory));
            *slot = Some(parked);
        }
        if evicted > 0 {
            tracing::debug!(evicted, "parked instances evicted for a newer one");
        }
        true
    }
}

impl WasmEngine {
    /// Parked instances alive now: made ahead for the next call of a component each.
    pub fn parked_instances(&self) -> usize {
        self.inner.parking.count()
    }

    /// Whether the epoch's ticker is kept ticking: a call's guest may run, or an
    /// instance is being made.
    #[cfg(feature = "internals")]
    #[doc(hidden)]
    pub fn epoch_ticking(&self) -> bool {
        self.inner.running.ticking()
    }

    /// Instances to be made and parked that are not yet (or not parked after all): a
    /// test waits for none.
    #[cfg(feature = "internals")]
    #[doc(hidden)]
    pub fn parking_pending(&self) -> usize {
        self.inner.parking.pending.load(Ordering::Acquire)
    }

    /// The frame a parked store holds until a call gives it its own.
    fn idle_context(&self) -> SkillContext {
        self.inner
            .parking
            .idle
            .get_or_init(SkillContext::detached)
            .clone()
    }

    /// Makes the next instance of `pre` for `spot` in the background, once what the
    /// runtime has ready now (the answer of the call that just ended) has run; nothing
    /// if parking is off, the spot holds one, its component reaches the host when
    /// instantiated, or another instance is being made.
    ///
    /// `ended` is what is left of the call that just ended (its store). On a
    /// multi-thread runtime the making takes it and drops it once the next instance is
    /// made: giving a store back resets the memory its guest wrote, which then happens
    /// on the worker that makes the instance, woken once for both, instead of on the
    /// caller's path. Otherwise (no making, or a current-thread runtime, where the
    /// caller drops it after the answer) it is handed back.
    pub(super) fn park_next<P: Instantiate, E: Send + 'static>(
        &self,
        pre: &P,
        spot: &Arc<Spot<P::Instance>>,
        skill: &Arc<str>,
        limits: &Limits,
        ended: Option<E>,
    ) -> Option<E>
    where
        P::Instance: 'static,
    {
        let parking = &self.inner.parking;
        // Counted up to 2 only: races between calls may lose a count, which only parks
        // a call later.
        let called = spot.calls.load(Ordering::Relaxed).saturating_add(1).min(2);
        spot.calls.store(called, Ordering::Relaxed);
        if parking.max == 0 || called < 2 || !spot.parkable.load(Ordering::Relaxed) || spot.holds()
        {
            return ended;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return ended;
        };
        let (taken, ended) = match runtime.runtime_flavor() {
            tokio::runtime::RuntimeFlavor::CurrentThread => (None, ended),
            _ => (ended, None),
        };
        let pending = Pending::new(&parking.pending);
        let (engine, pre, spot, skill, limits) = (
            self.clone(),
            pre.clone(),
            spot.clone(),
            skill.clone(),
            *limits,
        );
        runtime.spawn(async move {
            let _pending = pending;
            // Dropped before `_pending`, however the task ends: once no making is
            // pending, the store it took is gone too.
            let _ended = taken;
            tokio::task::yield_now().await;
            let parking = &engine.inner.parking;
            if parking.making.swap(true, Ordering::Acquire) {
                return;
            }
            let _turn = Turn(engine.clone());
            engine.make_parked(&pre, &spot, skill, &limits).await;
        });
        ended
    }

    async fn make_parked<P: Instantiate>(
        &self,
        pre: &P,
        spot: &Arc<Spot<P::Instance>>,
        skill: Arc<str>,
        limits: &Limits,
    ) where
        P::Instance: 'static,
    {
        if spot.holds() {
            return;
        }
        let Ok(flavor) = self.flavor(limits.fuel.is_some()) else {
            return;
        };
        let state = self.neutral_state(skill.clone(), limits);
        let mut store = Store::new(&flavor.engine, state);
        store.limiter(|state| &mut state.limiter);
        store.set_hostcall_fuel(MAX_COPIED_BYTES);
        // A component's initialization may run guest code (a Rust component's runs its
        // constructors), which may span a tick; past the making's own deadline it is
        // not parked, and its calls make their instances, moving to the long lane if
        // they run long. The making cannot move: its deadline bounds how long it holds
        // its runtime's thread (that of every request of `evo serve` over stdio).
        store.set_epoch_deadline(making_ticks(limits.timeout_ms));
        store.epoch_deadline_trap();
        if let Some(fuel) = limits.fuel
            && store.set_fuel(fuel).is_err()
        {
            return;
        }
        let awake = self.inner.running.awake();
        let made = pre.instantiate(&mut store).await;
        drop(awake);
        let reached = store.data().reached;
        match made {
            Ok(instance) if !reached => {
                let memory = store.data().limiter.memory_used();
                let parked = Parked { store, instance };
                if !self.inner.parking.admit(spot, parked, memory) {
                    tracing::trace!(skill = %skill, memory, "not parked: no room");
                }
            }
            Ok(_) => {
                spot.parkable.store(false, Ordering::Relaxed);
                tracing::debug!(skill = %skill, "not parked: its initialization reaches the host, so each call makes its own instance");
            }
            Err(error) => {
                // A trap (its initialization ran past the making's deadline or the
                // memory limit) recurs every time; a full pool does not.
                if error.downcast_ref::<wasmtime::Trap>().is_some()
                    || store.data().limiter.memory_exceeded
                {
                    spot.parkable.store(false, Ordering::Relaxed);
                }
                tracing::debug!(skill = %skill, error = %error, "not parked");
            }
        }
    }

    /// The state of a store made ahead: nothing of any call, nothing granted.
    fn neutral_state(&self, skill: Arc<str>, limits: &Limits) -> HostState {
        let grant = Arc::new(crate::capabilities::Grant::default());
        let mut table = wasmtime::component::ResourceTable::new();
        table.set_max_capacity(super::limits::MAX_RESOURCES);
        HostState {
            wasi: wasmtime_wasi::WasiCtxBuilder::new()
                .allow_tcp(false)
                .allow_udp(false)
                .allow_ip_name_lookup(false)
                .build(),
            http: wasmtime_wasi_http::WasiHttpCtx::new(),
            outbound: super::http::Outbound::new(skill.clone(), &grant, None),
            table,
            limiter: StoreLimiter::new(limits.memory_bytes())
                .with_instances(self.inner.config.limits.max_instances),
            skill,
            calls: Arc::new([]),
            grant,
            ctx: self.idle_context(),
            chatter: 0,
            reached: false,
            _live: Live::new(&self.inner.parking.count),
        }
    }
}
