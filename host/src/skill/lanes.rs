//! The two-lane rule that keeps slow calls from holding every place the quick ones
//! need, shared by the Wasm engine's instance slots and `evo serve`'s call permits: the
//! calls of a skill whose last [`LONG_STREAK`] calls ran long wait in the long lane,
//! which has half as many places as the quick one ([`long_places`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

/// Long calls of one skill in a row after which its next calls take the long lane.
pub const LONG_STREAK: u32 = 2;

/// The long lane's places beside `quick` places in the quick lane: half as many, at
/// least one.
pub fn long_places(quick: usize) -> usize {
    (quick / 2).max(1)
}

/// How many calls of one skill in a row ran long: which lane its next call takes.
#[derive(Debug, Clone, Default)]
pub struct Streak(Arc<AtomicU32>);

impl Streak {
    /// A call of the skill ran long (counted as soon as it has).
    pub fn ran_long(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    /// A call of the skill ended without running long.
    pub fn ran_short(&self) {
        self.0.store(0, Ordering::Relaxed);
    }

    /// Whether the skill's next call waits in the long lane.
    pub fn takes_long_lane(&self) -> bool {
        self.0.load(Ordering::Relaxed) >= LONG_STREAK
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_long_calls_in_a_row_send_the_next_to_the_long_lane_and_a_short_one_back() {
        let streak = Streak::default();
        streak.ran_long();
        assert!(!streak.takes_long_lane(), "one long call is not a habit");
        streak.ran_long();
        assert!(streak.takes_long_lane());
        streak.ran_short();
        assert!(!streak.takes_long_lane());
        assert_eq!(
            (long_places(1), long_places(16), long_places(33)),
            (1, 8, 16)
        );
    }
}
