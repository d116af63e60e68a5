//! Where a call's instance has its place: the pool's slots, the reserve for nested
//! calls, and the lane for calls that run long.
//!
//! Every slot is an instance the pooling allocator holds ready, so a call takes one
//! before it instantiates and gives it back only when its store is gone. Short calls
//! wait for each other in the pool, long calls for each other in their lane: a call that
//! has run past [`LONG_AFTER`](super::background::LONG_AFTER) moves to the lane when
//! it has room, and a skill whose last calls ran long starts its next ones there. So
//! runaways never fill the slots short calls wait for (on two cores, 5 % of calls being
//! 1-second loops filled all sixteen and held short calls for 80 ms at the median).
//!
//! A freed slot goes to whichever call asks first, not to the longest waiter: handing
//! it to a waiter that is not running yet left it idle until that task's turn came, and
//! every call behind queued too (a convoy: the clean run's p99 went from 0.1 to 4 ms at
//! 64 calls at once on 16 slots).

use std::sync::Arc;

use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

use crate::skill::lanes::{Streak, long_places};

/// Instances kept apart for nested calls (a skill calling a skill), on top of the
/// pool's slots: a chain as deep as the kernel's default depth limit runs even when every
/// slot is taken by its own callers, so the depth limit decides, not slot starvation.
pub const NESTED_RESERVE: u32 = 10;

/// The slots for `calls` calls at once in the long lane: half as many as the pool's.
pub(super) fn long_lane(calls: u32) -> u32 {
    u32::try_from(long_places(calls as usize)).unwrap_or(calls)
}

/// Slots of one kind, and the signal that one was freed.
#[derive(Debug)]
struct Lane {
    permits: Arc<Semaphore>,
    freed: Arc<Notify>,
    kind: Kind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Pool,
    Reserve,
    Long,
}

impl Lane {
    fn new(slots: u32, kind: Kind) -> Self {
        Self {
            permits: Arc::new(Semaphore::new(slots as usize)),
            freed: Arc::new(Notify::new()),
            kind,
        }
    }

    /// A free slot, if there is one.
    fn try_take(&self) -> Option<Slot> {
        let permit = self.permits.clone().try_acquire_owned().ok()?;
        Some(Slot {
            permit: Some(permit),
            freed: self.freed.clone(),
            kind: self.kind,
        })
    }

    /// A slot, once one is free.
    async fn take(&self) -> Slot {
        loop {
            let freed = self.freed.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            if let Some(slot) = self.try_take() {
                return slot;
            }
            freed.await;
        }
    }
}

/// The three kinds of slot of one engine.
#[derive(Debug)]
pub(super) struct Slots {
    pool: Lane,
    reserve: Lane,
    long: Lane,
}

/// One call's place. Dropped with the call's store, never before it.
#[derive(Debug)]
pub(super) struct Slot {
    permit: Option<OwnedSemaphorePermit>,
    freed: Arc<Notify>,
    kind: Kind,
}

impl Drop for Slot {
    fn drop(&mut self) {
        drop(self.permit.take());
        self.freed.notify_one();
    }
}

impl Slot {
    /// Whether the slot is in the long lane.
    pub(super) fn is_long(&self) -> bool {
        self.kind == Kind::Long
    }
}

impl Slots {
    /// Slots for `calls` calls at once, plus the reserve and the long lane.
    pub(super) fn new(calls: u32) -> Self {
        let calls = calls.max(1);
        Self {
            pool: Lane::new(calls, Kind::Pool),
            reserve: Lane::new(NESTED_RESERVE, Kind::Reserve),
            long: Lane::new(long_lane(calls), Kind::Long),
        }
    }

    /// A slot for a call at `depth` of a skill with `streak`. A top-level call (depth 1,
    /// called by the run itself; 0 outside a run) waits for one of the pool's, or of the
    /// long lane's if the skill's last calls ran long. A nested call (`depth > 1`, a
    /// skill calling a skill, its caller holding a slot) takes a free one of the pool or
    /// else one of the reserve, and waits only when both are taken, within its caller's
    /// deadline (the caller's future is dropped at it).
    pub(super) async fn acquire(&self, depth: u32, streak: &Streak) -> Slot {
        if depth <= 1 {
            let lane = if streak.takes_long_lane() {
                &self.long
            } else {
                &self.pool
            };
            return lane.take().await;
        }
        if let Some(slot) = self.pool.try_take().or_else(|| self.reserve.try_take()) {
            return slot;
        }
        tokio::select! {
            slot = self.pool.take() => slot,
            slot = self.reserve.take() => slot,
        }
    }

    /// Moves `slot` of a call that has turned long from the pool to the long lane, if
    /// the lane has room: the pool's slot is free at once for a short call.
    pub(super) fn to_long_lane(&self, slot: &mut Slot) {
        if slot.kind != Kind::Pool {
            return;
        }
        if let Some(long) = self.long.try_take() {
            *slot = long;
        }
    }
}
