//! The execution context: how one skill calls another.
//!
//! A [`Kernel`] holds the registry, the model, memory and statistics of a host. Each run
//! gets a [`SkillContext`] from [`Kernel::context`]; [`SkillContext::call`] is the one
//! path every call takes, whatever runs the skill:
//!
//! 1. the depth limit (`SKILL_DEPTH_EXCEEDED`, default 10 frames),
//! 2. lookup (`Skills not found: <name>`, `SKILL_NOT_FOUND`),
//! 3. gate 1: defaults applied, input validated (`SKILL_VALIDATION_FAILED` with a report),
//! 4. a `skill_call` event, then the executor under the skill's `timeout`, retried with
//!    exponential backoff up to `retry` times, for transient errors only,
//! 5. gate 2: the output validated (llm skills heal themselves instead),
//! 6. statistics and a `skill_result` event.
//!
//! ```
//! use std::sync::Arc;
//! use evo_host::tools::BuiltinTools;
//! use evo_host::skill::kernel::{Kernel, RunOptions};
//! use evo_host::skill::kernel::table::SkillTable;
//! use serde_json::json;
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let registry = Arc::new(SkillTable::new());
//! BuiltinTools::default().register(&registry).unwrap();
//! let kernel = Arc::new(Kernel::new(registry));
//! let ctx = kernel.context(RunOptions::default());
//! let out = ctx.call("calculate", json!({ "expression": "sqrt(144) + 10" })).await.unwrap();
//! assert_eq!(out, json!({ "result": 22 }));
//! let err = ctx.call("nope", json!({})).await.unwrap_err();
//! assert_eq!((err.code(), err.to_string().as_str()), ("SKILL_NOT_FOUND", "Skills not found: nope"));
//! # });
//! ```

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::skill::exchange::{
    BoxFuture, LlmRequest, MemoryFilter, MemoryHit, Scratch, StoreOutcome,
};
use crate::skill::exchange::{MemoryWrite, MemoryWriteOutcome, SkillOutput, WriteStatus};
use crate::skill::kernel::table::{RegisteredSkill, SkillTable};
use crate::skill::observe::events::{EventSink, RunEvent};
use crate::skill::observe::stats::Stats;
use crate::skill::validate::{Direction, ValidationReport};

pub mod confirm;
mod context;
pub mod executor;
mod gate;
mod guest;
mod settings;
pub mod table;

use crate::error::{Error, Result};
use crate::secrets::{SecretStore, Secrets};
use crate::skill::kernel::confirm::{ConfirmPolicy, Confirmer};
use crate::skill::observe::history::{History, Record, Status};
use crate::skill::permission::{Locale, Profile};
pub use context::SkillContext;
pub use settings::{Fallback, KernelSettings, Preprocess};

pub use crate::error::HOW_TO_CONFIGURE_LLM;

/// Default call depth limit: deep enough for real pipelines,
/// shallow enough that a skill calling itself fails fast.
pub const DEFAULT_MAX_DEPTH: u32 = 10;
/// Attempts an llm skill gets to produce valid output.
pub const DEFAULT_MAX_OUTPUT_ATTEMPTS: u32 = 3;
/// Attempts the calling model gets to fix its arguments; reported in
/// gate-1 reports so the model knows how many tries it has.
pub const DEFAULT_MAX_INPUT_ATTEMPTS: u32 = 3;
/// First wait before a retry; doubled each time. Long enough for a lock or a rate limit
/// to clear, short enough not to stall a conversation.
pub const DEFAULT_RETRY_BACKOFF: Duration = Duration::from_millis(200);
/// Extra time the kernel gives an executor that enforces the skill's deadline itself:
/// enough for it to kill, reap and report, so its error (not the kernel's) is the one
/// the caller sees.
pub const DEADLINE_GRACE: Duration = Duration::from_secs(2);
/// The longest a dangerous call waits for its user's answer; no answer by then is no.
/// The wait does not count against the call's time limit.
pub const CONFIRM_WAIT: Duration = Duration::from_secs(10 * 60);
/// The longest between retries of a transient failure.
pub const MAX_RETRY_BACKOFF: Duration = Duration::from_secs(5);

/// The values the host puts in every run's [`SkillContext::env`] (operators name theirs
/// otherwise): `session` (the run's id, or the session the front end gave), `locale`
/// (`en` or `zh`, the language of refusals), `cwd` (the project directory the built-in
/// tools work in) and `model` (the model the run asked for, when it did).
pub const HOST_ENV_KEYS: [&str; 4] = ["session", "locale", "cwd", "model"];

/// How the kernel runs calls.
#[derive(Debug, Clone)]
pub struct KernelConfig {
    /// Call depth limit.
    pub max_depth: u32,
    /// See [`DEFAULT_MAX_INPUT_ATTEMPTS`].
    pub max_input_attempts: u32,
    /// See [`DEFAULT_MAX_OUTPUT_ATTEMPTS`].
    pub max_output_attempts: u32,
    /// What llm skills do when self-heal fails.
    pub fallback: Fallback,
    /// First retry wait (see [`DEFAULT_RETRY_BACKOFF`]).
    pub retry_backoff: Duration,
    /// The language of refusals (permission, confirmation, paths, allowlist).
    pub locale: Locale,
    /// What a dangerous call does in a run without a confirmer.
    pub confirm: ConfirmPolicy,
    /// The host's values for [`SkillContext::env`]: the operator's (`[env]`) and `cwd`.
    pub env: serde_json::Map<String, Value>,
    /// Models an llm skill may ask for instead of the configured one (`[llm] models`).
    pub models: Vec<String>,
    /// The skills that preprocess messages and inputs.
    pub preprocess: Preprocess,
}

impl Default for KernelConfig {
    /// - depth limit [`DEFAULT_MAX_DEPTH`],
    /// - [`DEFAULT_MAX_INPUT_ATTEMPTS`] and [`DEFAULT_MAX_OUTPUT_ATTEMPTS`],
    /// - [`Fallback::Throw`],
    /// - retries after [`DEFAULT_RETRY_BACKOFF`], doubling up to [`MAX_RETRY_BACKOFF`],
    /// - English refusals, dangerous calls denied without a confirmer.
    fn default() -> Self {
        Self {
            max_depth: DEFAULT_MAX_DEPTH,
            max_input_attempts: DEFAULT_MAX_INPUT_ATTEMPTS,
            max_output_attempts: DEFAULT_MAX_OUTPUT_ATTEMPTS,
            fallback: Fallback::Throw,
            retry_backoff: DEFAULT_RETRY_BACKOFF,
            locale: Locale::En,
            confirm: ConfirmPolicy::Deny,
            env: serde_json::Map::new(),
            models: Vec::new(),
            preprocess: Preprocess::default(),
        }
    }
}

/// The language model as skills see it: one prompt in, one text out.
pub trait Llm: Send + Sync + fmt::Debug {
    /// Completes `request`.
    fn complete(&self, request: LlmRequest) -> BoxFuture<'_, Result<String>>;
}

/// Long-term memory as skills see it; the memory kernel implements it.
pub trait Memory: Send + Sync + fmt::Debug {
    /// Hybrid search, best first.
    fn search(&self, query: String, limit: u32) -> BoxFuture<'_, Result<Vec<MemoryHit>>>;
    /// Hybrid search over what `filter` keeps, best first. A memory without sources or
    /// dates ignores the filter.
    fn search_filtered(
        &self,
        query: String,
        limit: u32,
        filter: MemoryFilter,
    ) -> BoxFuture<'_, Result<Vec<MemoryHit>>> {
        let _ = filter;
        self.search(query, limit)
    }
    /// Stores `text` unless a near-duplicate exists.
    fn store(&self, text: String, category: Option<String>) -> BoxFuture<'_, Result<StoreOutcome>>;
    /// Keeps the memory writes a skill suggested and says what became of each. The
    /// default stores each with [`Memory::store`].
    fn keep(&self, writes: Vec<MemoryWrite>) -> BoxFuture<'_, Vec<MemoryWriteOutcome>> {
        Box::pin(async move {
            let mut kept = Vec::with_capacity(writes.len());
            for write in writes {
                let stored = self.store(write.text.clone(), write.category.clone()).await;
                kept.push(match stored {
                    Ok(stored) => MemoryWriteOutcome {
                        text: write.text,
                        status: if stored.stored {
                            WriteStatus::Kept
                        } else {
                            WriteStatus::Merged
                        },
                        id: None,
                        supersedes: None,
                        reason: stored.reason,
                    },
                    Err(e) => MemoryWriteOutcome::refused(&write, format!("[{}] {e}", e.code())),
                });
            }
            kept
        })
    }
    /// Forgets entries by id or query; returns how many.
    fn forget(&self, query: String) -> BoxFuture<'_, Result<u32>>;
}

/// Everything the calls of a host share.
#[derive(Debug)]
pub struct Kernel {
    registry: Arc<SkillTable>,
    config: KernelConfig,
    llm: Option<Arc<dyn Llm>>,
    memory: Option<Arc<dyn Memory>>,
    stats: Arc<Stats>,
    #[cfg(feature = "metrics")]
    metrics: Arc<crate::skill::observe::metrics::Metrics>,
    live: crate::skill::observe::live::LiveCalls,
    /// The node's name in the history, once `evo serve` has named it.
    node: std::sync::OnceLock<String>,
    history: Arc<History>,
    secrets: Option<Arc<SecretStore>>,
}

impl Kernel {
    /// A kernel over `registry` with the default [`KernelConfig`], no model and no memory.
    pub fn new(registry: Arc<SkillTable>) -> Self {
        Self {
            registry,
            config: KernelConfig::default(),
            llm: None,
            memory: None,
            stats: Arc::new(Stats::default()),
            #[cfg(feature = "metrics")]
            metrics: Arc::default(),
            live: crate::skill::observe::live::LiveCalls::default(),
            node: std::sync::OnceLock::new(),
            history: Arc::new(History::default()),
            secrets: None,
        }
    }

    /// Replaces the configuration.
    pub fn with_config(mut self, config: KernelConfig) -> Self {
        self.config = config;
        self
    }

    /// Attaches the language model.
    pub fn with_llm(mut self, llm: Arc<dyn Llm>) -> Self {
        self.llm = Some(llm);
        self
    }

    /// Attaches long-term memory.
    pub fn with_memory(mut self, memory: Arc<dyn Memory>) -> Self {
        self.memory = Some(memory);
        self
    }

    /// Attaches the secrets skills may have put into their requests.
    pub fn with_secrets(mut self, secrets: Arc<SecretStore>) -> Self {
        self.secrets = Some(secrets);
        self
    }

    /// The secrets as they are now (none when no store is attached, or when it cannot
    /// be read, which is logged: a skill that needs one then fails to get it).
    pub fn secrets(&self) -> Arc<Secrets> {
        let Some(store) = &self.secrets else {
            return Arc::default();
        };
        store.snapshot().unwrap_or_else(|e| {
            tracing::error!("cannot read the secrets: {e}");
            Arc::default()
        })
    }

    /// Records a call in the history, with every secret value redacted from its
    /// arguments and error.
    pub(crate) fn record(&self, record: Record) {
        self.record_call(None, record);
    }

    /// [`Self::record`] for the call numbered `call` when it started (see
    /// [`Self::live`]).
    pub(crate) fn record_call(&self, call: Option<u64>, mut record: Record) {
        record.node = self.node().to_owned();
        let secrets = self.secrets();
        if !secrets.is_empty() {
            record.arguments = secrets.redact(&record.arguments).0.into_owned();
            if let Some(error) = &record.error {
                record.error = Some(secrets.redact(error).0.into_owned());
            }
        }
        #[cfg(feature = "metrics")]
        self.metrics.observe(&record);
        self.live.finished(call, &record);
        self.history.record(record);
    }

    /// The name calls are recorded under: what [`Self::name_node`] set (`evo serve`
    /// names its `host:port`), else this machine's name.
    pub fn node(&self) -> &str {
        match self.node.get() {
            Some(name) => name,
            None => machine_name(),
        }
    }

    /// Names this process's node in the history from now on (the first name given
    /// stays).
    #[cfg_attr(
        not(any(feature = "serve", feature = "internals")),
        allow(dead_code, reason = "`evo serve` and Evo's own tests use it")
    )]
    pub fn name_node(&self, name: String) {
        let _ = self.node.set(name);
    }

    /// Calls as they start and finish, for watchers.
    #[cfg_attr(
        not(any(feature = "serve", feature = "internals")),
        allow(dead_code, reason = "`evo serve` and Evo's own tests use it")
    )]
    pub fn live(&self) -> &crate::skill::observe::live::LiveCalls {
        &self.live
    }

    /// The figures for monitoring (`evo serve`'s `/metrics`).
    #[cfg(feature = "metrics")]
    pub fn metrics(&self) -> &Arc<crate::skill::observe::metrics::Metrics> {
        &self.metrics
    }

    /// Shares `stats` (e.g. with other kernels of the process).
    #[cfg_attr(
        not(feature = "internals"),
        allow(dead_code, reason = "Evo's own tests call it")
    )]
    pub fn with_stats(mut self, stats: Arc<Stats>) -> Self {
        self.stats = stats;
        self
    }

    /// Whether a language model is attached.
    pub fn has_llm(&self) -> bool {
        self.llm.is_some()
    }

    /// The skills.
    pub fn registry(&self) -> &Arc<SkillTable> {
        &self.registry
    }

    /// The configuration.
    pub fn config(&self) -> &KernelConfig {
        &self.config
    }

    /// Per-skill call statistics.
    pub fn stats(&self) -> &Arc<Stats> {
        &self.stats
    }

    /// Calls recorded since the last flush of the history.
    pub fn history(&self) -> &Arc<History> {
        &self.history
    }

    /// The root context of a new run.
    pub fn context(self: &Arc<Self>, options: RunOptions) -> SkillContext {
        SkillContext {
            kernel: self.clone(),
            run: Arc::new(Run {
                task_id: options.task_id.unwrap_or_else(new_task_id),
                scratch: options.scratch.unwrap_or_default(),
                events: options.events,
                caller: options.caller.unwrap_or_else(|| "root".into()),
                profile: options.profile.unwrap_or_default(),
                confirmer: options.confirmer,
                single_call: options.single_call,
                leave_memory_writes: options.leave_memory_writes,
                session: options.session,
                model: options.model,
                input_failures: std::sync::Mutex::default(),
                asking: std::sync::Mutex::default(),
                approval: std::sync::Mutex::default(),
            }),
            depth: 0,
            parent: None,
            preprocessing: false,
        }
    }
}

fn new_task_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let millis = crate::unix_millis();
    format!("task-{millis}-{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

/// How to start a run.
#[derive(Debug, Default)]
pub struct RunOptions {
    /// The run's id; generated when `None`.
    pub task_id: Option<String>,
    /// Scratch to start from (e.g. recalled memories); empty when `None`.
    pub scratch: Option<Scratch>,
    /// Where events go; dropped when `None`.
    pub events: Option<EventSink>,
    /// Who runs it (`cli`, `agent`, `mcp`, an agent's id), for the history; `root`
    /// when `None`.
    pub caller: Option<String>,
    /// What the run may call; `Profile::default` (`full`) when `None`.
    pub profile: Option<Profile>,
    /// Who confirms dangerous calls; the host's `ConfirmPolicy` decides when `None`.
    pub confirmer: Option<Arc<dyn Confirmer>>,
    /// The run is one call for a caller that cannot try again within it (a CLI command,
    /// an MCP or HTTP request, a test case): an input that fails its schema is reported
    /// as that call's only try, not as "attempt 1 of `max_input_attempts`".
    pub single_call: bool,
    /// Leave the memory writes skills suggest unkept (they stay in
    /// [`SkillOutput::memory_writes`], with nothing in [`SkillOutput::memory`]): for runs
    /// that must not change memory, such as `evo skill test`.
    pub leave_memory_writes: bool,
    /// The session the run belongs to (an MCP session, a chat), for
    /// [`SkillContext::env`]'s `session`; the run's id when `None`.
    pub session: Option<String>,
    /// The model the run's requests ask for instead of the configured one (`--model`);
    /// an llm skill that names its own keeps it. Checked by the caller that allows it.
    pub model: Option<String>,
}

#[derive(Debug)]
struct Run {
    task_id: String,
    scratch: Scratch,
    events: Option<EventSink>,
    caller: String,
    profile: Profile,
    confirmer: Option<Arc<dyn Confirmer>>,
    single_call: bool,
    leave_memory_writes: bool,
    session: Option<String>,
    model: Option<String>,
    /// Gate-1 failures per skill in this run: a caller (a model) gets
    /// `max_input_attempts` tries to fix its arguments, then the run stops.
    input_failures: std::sync::Mutex<std::collections::HashMap<String, u32>>,
    /// The time the run has spent waiting for its user's answers, which no deadline
    /// counts.
    asking: std::sync::Mutex<AskClock>,
    /// A tool whose next confirmation the user already gave (see
    /// [`SkillContext::approve_once`]).
    approval: std::sync::Mutex<Option<String>>,
}

/// The time a run has spent waiting for its user (several questions may be open at
/// once, from steps that run side by side).
#[derive(Debug, Default)]
struct AskClock {
    /// Time spent while no question was open any more.
    closed: Duration,
    /// Questions open now.
    open: u32,
    /// Since when at least one has been open.
    since: Option<Instant>,
}

impl Run {
    fn approval(&self) -> std::sync::MutexGuard<'_, Option<String>> {
        self.approval
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether the user already confirmed `tool`'s call; the approval is used up either way.
    fn take_approval(&self, tool: &str) -> bool {
        self.approval()
            .take()
            .is_some_and(|approved| approved == tool)
    }

    fn clock(&self) -> std::sync::MutexGuard<'_, AskClock> {
        // A poisoned lock still holds a valid clock (each update is whole).
        self.asking
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The time spent waiting for the user so far, a question still open included.
    fn time_asking(&self) -> Duration {
        let clock = self.clock();
        clock.closed + clock.since.map_or(Duration::ZERO, |since| since.elapsed())
    }

    /// Counts the time from now until the guard is dropped as time spent asking.
    fn asking(&self) -> Asking<'_> {
        let mut clock = self.clock();
        if clock.open == 0 {
            clock.since = Some(Instant::now());
        }
        clock.open += 1;
        Asking(self)
    }

    /// Counts one more gate-1 failure of `skill`; returns the count.
    fn input_failure(&self, skill: &str) -> u32 {
        // A poisoned lock still holds valid counts (each update is one insert).
        let mut failures = self
            .input_failures
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let count = failures.entry(skill.to_owned()).or_insert(0);
        *count += 1;
        *count
    }
}

/// A question to the user, open while it lives.
struct Asking<'a>(&'a Run);

impl Drop for Asking<'_> {
    fn drop(&mut self) {
        let mut clock = self.0.clock();
        clock.open -= 1;
        if clock.open == 0
            && let Some(since) = clock.since.take()
        {
            clock.closed += since.elapsed();
        }
    }
}

/// Gate 2 for executors that do not validate their own output: a code skill that breaks
/// its own output schema has a bug, and retrying deterministic code changes nothing.
fn check_output(skill: &RegisteredSkill, out: SkillOutput) -> Result<SkillOutput> {
    if skill.executor.validates_output() {
        return Ok(out);
    }
    let violations = skill.output_schema().check(&out.output);
    if violations.is_empty() {
        Ok(out)
    } else {
        Err(Error::Validation(Box::new(ValidationReport::new(
            skill.meta.name.clone(),
            Direction::Output,
            1,
            1,
            violations,
        ))))
    }
}

/// This machine's name (its host name), read once.
fn machine_name() -> &'static str {
    static NAME: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    NAME.get_or_init(|| {
        rustix::system::uname()
            .nodename()
            .to_string_lossy()
            .into_owned()
    })
}
