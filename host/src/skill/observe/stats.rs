//! Per-skill call statistics.
//!
//! [`Stats`] counts in memory on the call path (a map update under a mutex, well under a
//! microsecond); [`Stats::flush`] adds what was counted since the last flush to the
//! stored figures ([`CallStore`]) in one transaction, so figures survive
//! restarts and several processes can share a data directory without losing counts.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::Duration;

use crate::error::Result;
use crate::skill::observe::store::CallStore;
pub use crate::skill::observe::store::SkillStats;

#[derive(Debug, Default)]
struct Counts {
    totals: HashMap<String, SkillStats>,
    unflushed: HashMap<String, SkillStats>,
}

/// Statistics of the calls made in this process.
#[derive(Debug, Default)]
pub struct Stats {
    counts: Mutex<Counts>,
}

impl Stats {
    fn lock(&self) -> std::sync::MutexGuard<'_, Counts> {
        // Each update is a handful of additions; a panic cannot interrupt one halfway in
        // a way that matters for statistics.
        self.counts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Counts one call of `skill`.
    pub fn record(&self, skill: &str, success: bool, duration: Duration) {
        let ms = duration.as_secs_f64() * 1000.0;
        let call = SkillStats {
            call_count: 1,
            success_count: u64::from(success),
            total_duration: ms,
            max_duration: ms,
            ..SkillStats::default()
        };
        let mut guard = self.lock();
        let counts = &mut *guard;
        for map in [&mut counts.totals, &mut counts.unflushed] {
            match map.get_mut(skill) {
                Some(entry) => entry.add(&call),
                None => {
                    let mut entry = SkillStats {
                        tool_name: skill.to_owned(),
                        ..call.clone()
                    };
                    entry.derive();
                    map.insert(skill.to_owned(), entry);
                }
            }
        }
    }

    /// The figures of `skill` in this process.
    #[cfg_attr(
        not(feature = "internals"),
        allow(dead_code, reason = "Evo's own tests use it")
    )]
    pub fn get(&self, skill: &str) -> Option<SkillStats> {
        self.lock().totals.get(skill).cloned()
    }

    /// Every skill's figures in this process, by name.
    #[cfg_attr(
        not(feature = "internals"),
        allow(dead_code, reason = "Evo's own tests use it")
    )]
    pub fn snapshot(&self) -> BTreeMap<String, SkillStats> {
        self.lock()
            .totals
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// Forgets the calls counted since the last flush, so that no flush stores them (a
    /// rehearsal such as `evo skill test`, whose expected failures are not failures of
    /// the skill in use).
    pub fn discard_unflushed(&self) {
        self.lock().unflushed.clear();
    }

    /// Adds the calls counted since the last flush to `store`. On error nothing is
    /// lost: the counts stay pending for the next flush.
    pub fn flush(&self, store: &dyn CallStore) -> Result<()> {
        let pending = std::mem::take(&mut self.lock().unflushed);
        if pending.is_empty() {
            return Ok(());
        }
        let counts: Vec<SkillStats> = pending.values().cloned().collect();
        let result = store.add_stats(&counts);
        if result.is_err() {
            let mut counts = self.lock();
            for (skill, s) in pending {
                counts
                    .unflushed
                    .entry(skill)
                    .or_insert_with(|| SkillStats {
                        tool_name: s.tool_name.clone(),
                        ..SkillStats::default()
                    })
                    .add(&s);
            }
        }
        result
    }

    /// Every skill's figures as stored in `store` (all processes, all time).
    #[cfg_attr(
        not(feature = "internals"),
        allow(dead_code, reason = "Evo's own tests use it")
    )]
    pub fn load(store: &dyn CallStore) -> Result<BTreeMap<String, SkillStats>> {
        store.stats()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_derive_rates_and_survive_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let stats = Stats::default();
        stats.record("calculate", true, Duration::from_millis(10));
        stats.record("calculate", false, Duration::from_millis(30));
        let s = stats.get("calculate").unwrap();
        assert_eq!((s.call_count, s.success_count), (2, 1));
        assert_eq!(
            (s.average_duration, s.success_rate, s.max_duration),
            (20.0, 0.5, 30.0)
        );

        for storage in crate::storage::testing::both(dir.path()) {
            let stats = Stats::default();
            stats.record("calculate", true, Duration::from_millis(10));
            stats.record("calculate", false, Duration::from_millis(30));
            let store = crate::skill::observe::store::store_for(&storage);
            stats.flush(store.as_ref()).unwrap();
            stats.record("calculate", true, Duration::from_millis(20));
            stats.flush(store.as_ref()).unwrap();
            stats.flush(store.as_ref()).unwrap(); // nothing new: nothing added twice
            // Another process (or node) counting the same skill adds to it.
            let other = Stats::default();
            other.record("calculate", true, Duration::from_millis(40));
            other
                .flush(crate::skill::observe::store::store_for(&storage).as_ref())
                .unwrap();

            let stored =
                Stats::load(crate::skill::observe::store::store_for(&storage).as_ref()).unwrap();
            let s = &stored["calculate"];
            assert_eq!(serde_json::to_value(s).unwrap()["toolName"], "calculate");
            assert_eq!(
                (
                    s.call_count,
                    s.success_count,
                    s.total_duration,
                    s.max_duration
                ),
                (4, 3, 100.0, 40.0)
            );
            assert!((s.success_rate - 3.0 / 4.0).abs() < 1e-9);
        }
    }
}
