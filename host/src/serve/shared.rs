//! What every session of one `evo serve` shares: the host, the bound on calls running
//! at once, the shutdown signals, and the catalogue kept live.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use super::confirm::Pending;
use super::refusal::Refusal;
use crate::config::ServeSettings;
use crate::error::Error;
use crate::host::Host;
use crate::skill::kernel::confirm::Confirmer;
use crate::skill::kernel::executor::SkillOutput;
use crate::skill::kernel::table::RegisteredSkill;
use crate::skill::kernel::{DEADLINE_GRACE, RunOptions};
use crate::skill::lanes::{Streak, long_places};
use crate::skill::observe::events::EventSink;

/// How often the catalogue is checked for skills installed, removed or edited by
/// another process.
pub const CATALOGUE_POLL: Duration = Duration::from_millis(500);
/// Catalogue ticks between two writes of the call statistics (10 s).
pub const STATS_EVERY: u32 = 20;
/// Catalogue ticks between two writes of the calls and gauges of a node whose
/// storage is shared with other nodes (2 s).
pub const BEAT_EVERY: u32 = 4;

/// Ticks of [`CATALOGUE_POLL`] between two samples of this node's gauges (2 s).
const GAUGE_EVERY: u32 = 4;

/// Gauge samples kept: an hour of them, the longest window the console charts.
const GAUGE_SAMPLES: usize = 1800;
/// A call that takes longer than this counts as long (a model call, a big computation,
/// a runaway): a skill whose last two calls were long has its next calls wait for the
/// long lane, half as many slots as `serve.max_calls`, so that calls that take seconds
/// never hold every slot the quick ones need (the rule of [`crate::skill::lanes`]).
pub const LONG_CALL: Duration = Duration::from_millis(100);

/// What every session of one `evo serve` shares.
#[derive(Debug)]
pub struct Shared {
    pub(super) host: Host,
    pub(super) settings: ServeSettings,
    /// One permit per call allowed to run at once.
    pub(super) calls: Arc<Semaphore>,
    /// The long lane's permits (see [`LONG_CALL`]).
    long_calls: Arc<Semaphore>,
    /// Each skill's long calls in a row.
    streaks: std::sync::Mutex<std::collections::HashMap<String, Streak>>,
    /// Calls waiting for a slot of the quick lane now (at most `settings.max_queue`).
    waiting: AtomicUsize,
    /// Calls waiting for a slot of the long lane now (at most `settings.max_queue`): a
    /// backlog of runaways is refused on its own, never quick calls because of it.
    waiting_long: AtomicUsize,
    /// Cancelled when the server stops taking calls (SIGTERM, stdin closed).
    pub(super) draining: CancellationToken,
    /// Cancelled when calls still running must stop now.
    pub(super) abort: CancellationToken,
    /// Calls waiting for their MCP client's answer to a question.
    pub(super) pending: Pending,
    /// This node's gauges, sampled every [`GAUGE_EVERY`] ticks, the last hour of them.
    gauge_samples: std::sync::Mutex<std::collections::VecDeque<super::openapi::GaugeSample>>,
}

impl Shared {
    /// The shared state of a server over `host`, as `host`'s `[serve]` configures it.
    pub fn new(host: Host) -> Arc<Self> {
        let settings = host.config().serve.clone();
        Arc::new(Self {
            calls: Arc::new(Semaphore::new(settings.max_calls)),
            long_calls: Arc::new(Semaphore::new(long_places(settings.max_calls))),
            streaks: std::sync::Mutex::default(),
            waiting: AtomicUsize::new(0),
            waiting_long: AtomicUsize::new(0),
            settings,
            host,
            draining: CancellationToken::new(),
            abort: CancellationToken::new(),
            pending: Pending::default(),
            gauge_samples: std::sync::Mutex::default(),
        })
    }

    /// The host.
    pub fn host(&self) -> &Host {
        &self.host
    }

    /// Stops taking calls; those running go on until [`Shared::abort`].
    pub fn drain(&self) {
        self.draining.cancel();
    }

    /// Stops the calls still running.
    pub fn abort(&self) {
        self.draining.cancel();
        self.abort.cancel();
    }

    /// Whether no call is running.
    pub fn idle(&self) -> bool {
        self.running() == 0
    }

    /// How many calls are running.
    pub fn running(&self) -> usize {
        let max = self.settings.max_calls;
        max.saturating_sub(self.calls.available_permits())
            + long_places(max).saturating_sub(self.long_calls.available_permits())
    }

    /// How many calls are waiting for a slot, in either lane.
    pub fn queued(&self) -> usize {
        self.waiting.load(Ordering::Relaxed) + self.waiting_long.load(Ordering::Relaxed)
    }

    /// The lane `name`'s next call waits for, and the count of the calls waiting for it.
    fn lane(&self, name: &str) -> (&Arc<Semaphore>, &AtomicUsize) {
        let long = self
            .streaks
            .lock()
            .is_ok_and(|streaks| streaks.get(name).is_some_and(Streak::takes_long_lane));
        if long {
            (&self.long_calls, &self.waiting_long)
        } else {
            (&self.calls, &self.waiting)
        }
    }

    /// Counts a call of `name` that ran long (as soon as it has), or ended short.
    fn ran(&self, name: &str, long: bool) {
        if let Ok(mut streaks) = self.streaks.lock() {
            if long {
                streaks.entry(name.to_owned()).or_default().ran_long();
            } else {
                streaks.remove(name);
            }
        }
    }

    /// Keeps the catalogue live until `stop`: refreshes it every [`CATALOGUE_POLL`]
    /// (which ticks [`Host::changes`] when something changed).
    /// Also adds the calls made so far to the statistics (`evo skill stats`) every
    /// [`STATS_EVERY`] ticks and when stopped.
    pub async fn watch_catalogue(self: Arc<Self>, stop: CancellationToken) {
        let mut tick = tokio::time::interval(CATALOGUE_POLL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut ticks = 0u32;
        loop {
            tokio::select! {
                () = stop.cancelled() => {
                    self.flush_stats().await;
                    return;
                }
                _ = tick.tick() => {}
            }
            if let Err(e) = self.host.refresh().await {
                tracing::warn!("could not rescan the skills: [{}] {e}", e.code());
            }
            ticks += 1;
            if ticks.is_multiple_of(GAUGE_EVERY) {
                self.sample_gauges();
            }
            #[cfg(feature = "postgres")]
            let shared_storage = self.host.storage().shared().is_some();
            #[cfg(not(feature = "postgres"))]
            let shared_storage = false;
            if shared_storage && ticks.is_multiple_of(BEAT_EVERY) {
                // Nodes sharing a database: this one's calls and gauges reach the
                // others' consoles within seconds.
                self.flush_stats().await;
                self.beat().await;
            } else if ticks.is_multiple_of(STATS_EVERY) {
                self.flush_stats().await;
            }
        }
    }

    /// Writes this node's gauges where the other nodes read them (shared storage only).
    async fn beat(&self) {
        #[cfg(feature = "postgres")]
        if let Some(pg) = self.host.storage().shared() {
            let node = self.host.kernel().node().to_owned();
            let gauges = serde_json::to_string(&self.gauges()).unwrap_or_default();
            let now = crate::unix_millis() as i64;
            let written = pg
                .run_async(move |client| async move {
                    client
                        .execute(
                            "INSERT INTO serve_nodes (node, seen_ms, gauges) VALUES ($1, $2, $3)
                             ON CONFLICT (node) DO UPDATE SET seen_ms = $2, gauges = $3",
                            &[&node, &now, &gauges],
                        )
                        .await
                })
                .await;
            if let Err(e) = written {
                tracing::warn!("could not share this node's gauges: [{}] {e}", e.code());
            }
        }
    }

    /// Keeps this node's gauges now among the samples the console charts.
    fn sample_gauges(&self) {
        let gauges = self.gauges();
        let sample = super::openapi::GaugeSample {
            at_ms: crate::unix_millis() as i64,
            wasm_instances: gauges.wasm_instances,
            calls_running: gauges.calls_running,
            call_slots: gauges.call_slots,
        };
        let mut samples = self
            .gauge_samples
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if samples.len() >= GAUGE_SAMPLES {
            samples.pop_front();
        }
        samples.push_back(sample);
    }

    /// This node's gauge samples taken at or after `since_ms`, oldest first.
    pub(super) fn gauge_history(&self, since_ms: i64) -> Vec<super::openapi::GaugeSample> {
        let samples = self
            .gauge_samples
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        samples
            .iter()
            .filter(|s| s.at_ms >= since_ms)
            .copied()
            .collect()
    }

    /// Adds the calls made so far to the statistics in the data directory.
    pub async fn flush_stats(&self) {
        let host = self.host.clone();
        let flushed = tokio::task::spawn_blocking(move || host.flush_stats()).await;
        if let Ok(Err(e)) = flushed {
            tracing::warn!("could not record statistics: [{}] {e}", e.code());
        }
    }

    /// What this node is running now.
    pub(super) fn gauges(&self) -> super::openapi::Gauges {
        let engine = self.host.wasm_engine();
        super::openapi::Gauges {
            wasm_instances: engine.map_or(0, |e| e.live_instances() as u64),
            calls_running: self.running() as u64,
            calls_queued: self.queued() as u64,
            call_slots: self.settings.max_calls as u64,
        }
    }

    /// The served skill called `name` (or an alias of it).
    pub fn served(&self, name: &str) -> Option<Arc<RegisteredSkill>> {
        self.host
            .skill(name)
            .filter(|skill| skill.is_exposed() && self.settings.serves(&skill.meta.name))
    }

    /// Every served skill, by name.
    pub fn served_skills(&self) -> Vec<Arc<RegisteredSkill>> {
        self.host
            .skills()
            .into_iter()
            .filter(|skill| skill.is_exposed() && self.settings.serves(&skill.meta.name))
            .collect()
    }

    /// Runs `name` with `input` for a client: waits for a free slot (or `cancelled`),
    /// sends what the skill emits and logs to `events`, asks `confirmer` (when there is
    /// one) to confirm dangerous calls, and stops the call when `cancelled` fires or the
    /// server aborts.
    pub async fn call(
        &self,
        name: &str,
        input: Value,
        events: Option<EventSink>,
        confirmer: Option<Arc<dyn Confirmer>>,
        cancelled: &CancellationToken,
    ) -> Result<SkillOutput, Refusal> {
        if self.draining.is_cancelled() {
            return Err(Refusal::ShuttingDown);
        }
        // The wait for a slot counts against the call's own deadline: a call that could
        // not start in time times out, and the time it waited is not given again.
        let started = Instant::now();
        let limit_ms = self.host.skill(name).map_or(0, |s| s.meta.timeout_ms);
        let deadline = started + Duration::from_millis(limit_ms) + DEADLINE_GRACE;
        let timed_out = || {
            Refusal::Failed(Error::Timeout {
                skill: name.to_owned(),
                limit_ms,
            })
        };
        let (lane, waiting) = self.lane(name);
        let lane = lane.clone();
        let (permit, waited) = match lane.clone().try_acquire_owned() {
            Ok(permit) => (permit, false),
            Err(_) => {
                let Some(_waiting) = Waiting::enter(waiting, self.settings.max_queue) else {
                    return Err(Refusal::Busy {
                        waiting: self.settings.max_queue,
                    });
                };
                let permit = tokio::select! {
                    permit = lane.acquire_owned() => permit.map_err(|_| Refusal::ShuttingDown)?,
                    () = tokio::time::sleep_until(deadline.into()) => return Err(timed_out()),
                    () = cancelled.cancelled() => return Err(Refusal::Cancelled),
                    () = self.draining.cancelled() => return Err(Refusal::ShuttingDown),
                };
                (permit, true)
            }
        };
        let context = self.host.run_context(RunOptions {
            events,
            caller: Some("mcp".into()),
            confirmer,
            single_call: true,
            ..RunOptions::default()
        });
        let call = context.call_full(name, input);
        tokio::pin!(call);
        // Counted long the moment it is, not when it ends: runaways arriving during
        // their first second must not all take the quick lane.
        let long = tokio::time::sleep(LONG_CALL);
        tokio::pin!(long);
        let mut counted = false;
        // A call that waited ends at the deadline it started with (moved by the time it
        // waits for its user's answers); one that did not is ended by the kernel at its
        // own, with the executor's report.
        let overdue = context.deadline(deadline);
        tokio::pin!(overdue);
        let overdue_armed = waited;
        let result = loop {
            tokio::select! {
                result = &mut call => break result.map_err(Refusal::Failed),
                () = &mut overdue, if overdue_armed => break Err(timed_out()),
                () = &mut long, if !counted => {
                    counted = true;
                    self.ran(name, true);
                }
                () = cancelled.cancelled() => break Err(Refusal::Cancelled),
                () = self.abort.cancelled() => break Err(Refusal::ShuttingDown),
            }
        };
        if !counted {
            self.ran(name, false);
        }
        drop(permit);
        result
    }
}

/// A call counted among those waiting for a slot, while it waits.
struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    /// Counts one more waiting call, unless `max` already wait.
    fn enter(waiting: &'a AtomicUsize, max: usize) -> Option<Self> {
        waiting
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |now| {
                (now < max).then_some(now + 1)
            })
            .ok()
            .map(|_| Self(waiting))
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}
