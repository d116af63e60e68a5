//! One call of a Wasm skill: a fresh store and instance, run under the call's limits,
//! with every way a guest can misbehave turned into a specific [`Error`].

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;
use wasmtime::Store;
use wasmtime::Trap;
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{FsPerms, WasiCtxBuilder};

use super::bindings::PluginPre;
use super::bindings::evo::skill::types;
use super::limits::{
    Limits, MAX_ERROR_BYTES, MAX_RESOURCES, RETURNED_ENTRY_BYTES, STDIO_CAP_BYTES, StoreLimiter,
};
use super::slots::{LongStreak, Slot};
use super::state::HostState;
use super::{EPOCH_TICK, LoadSource, WasmEngine};
use crate::capabilities::{Access, Grant, MemoryAccess, Policy};
use crate::error::{Error, FailureKind, Result};
use crate::skill::kernel::SkillContext;
use crate::skill::meta::SkillMeta;

pub use crate::skill::executor::{MemoryWrite, StepTrace};

/// What a successful call returns.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SkillOutcome {
    /// The output JSON.
    pub output: Value,
    /// Memory the skill suggests keeping.
    pub memory_writes: Vec<MemoryWrite>,
    /// Steps the skill reported.
    pub intermediate_steps: Vec<StepTrace>,
    /// Wall-clock time of the call.
    #[serde(serialize_with = "as_millis")]
    pub duration: Duration,
    /// What the guest wrote to stdout (capped).
    pub stdout: String,
    /// What the guest wrote to stderr (capped).
    pub stderr: String,
}

fn as_millis<S: serde::Serializer>(
    duration: &Duration,
    serializer: S,
) -> std::result::Result<S::Ok, S::Error> {
    serializer.serialize_f64(duration.as_secs_f64() * 1000.0)
}

/// A loaded Wasm skill, ready to call. Cheap to clone; calls may run concurrently.
#[derive(Clone)]
pub struct WasmSkill {
    inner: Arc<SkillInner>,
}

struct SkillInner {
    engine: WasmEngine,
    meta: SkillMeta,
    info: super::ComponentInfo,
    digest: String,
    source: LoadSource,
    limits: Limits,
    grant: Arc<Grant>,
    calls: Arc<[String]>,
    name: Arc<str>,
    pre: PluginPre<HostState>,
    /// Whether its last calls ran long (they start in the long lane).
    streak: LongStreak,
}

impl std::fmt::Debug for WasmSkill {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WasmSkill")
            .field("name", &self.inner.meta.name)
            .field("digest", &self.inner.digest)
            .field("limits", &self.inner.limits)
            .finish_non_exhaustive()
    }
}

impl WasmSkill {
    #[expect(
        clippy::too_many_arguments,
        reason = "private constructor fed by WasmEngine::load_bytes"
    )]
    pub(super) fn new(
        engine: WasmEngine,
        meta: SkillMeta,
        info: super::ComponentInfo,
        digest: String,
        source: LoadSource,
        limits: Limits,
        policy: &Policy,
        pre: PluginPre<HostState>,
    ) -> Self {
        let mut grant = Grant::new(&meta.capabilities, policy.for_skill(&meta.name));
        grant.config = policy.config.get(&meta.name).cloned().unwrap_or_default();
        for refused in &grant.refused {
            tracing::info!(skill = %meta.name, "not granted: {refused}");
        }
        let inner = SkillInner {
            name: meta.name.as_str().into(),
            calls: meta.calls.clone().into(),
            grant: Arc::new(grant),
            engine,
            meta,
            info,
            digest,
            source,
            limits,
            pre,
            streak: LongStreak::default(),
        };
        Self {
            inner: Arc::new(inner),
        }
    }

    /// The manifest, as the component describes itself.
    pub fn meta(&self) -> &SkillMeta {
        &self.inner.meta
    }

    /// The limits each call runs under.
    pub fn limits(&self) -> &Limits {
        &self.inner.limits
    }

    /// The capabilities granted (and refused).
    pub fn grant(&self) -> &Grant {
        &self.inner.grant
    }

    /// SHA-256 of the component bytes.
    pub fn digest(&self) -> &str {
        &self.inner.digest
    }

    /// The API version and SDK stamp read from the component.
    pub fn info(&self) -> &super::ComponentInfo {
        &self.inner.info
    }

    /// Whether the component was compiled or loaded from the cache.
    pub fn load_source(&self) -> LoadSource {
        self.inner.source
    }

    /// Runs the skill on `input` (JSON text) in a fresh instance.
    pub async fn call(&self, input: &str, ctx: &SkillContext) -> Result<SkillOutcome> {
        let skill = &self.inner;
        serde_json::from_str::<serde::de::IgnoredAny>(input).map_err(|e| Error::InvalidInput {
            skill: skill.meta.name.clone(),
            reason: format!("not valid JSON: {e}"),
        })?;
        let started = Instant::now();
        let input = input.to_owned();
        let (result, guest) = run_guest(
            &skill.engine,
            &skill.pre,
            &skill.name,
            &skill.limits,
            &skill.grant,
            &skill.calls,
            ctx,
            &skill.streak,
            move |plugin, store| {
                Box::pin(async move { plugin.evo_skill_skill().call_execute(store, &input).await })
            },
        )
        .await?;
        let output = match result.map_err(|e| guest.classify(e))? {
            Ok(output) => output,
            Err(error) => {
                if let Some(exceeded) = guest.stdio_exceeded() {
                    return Err(exceeded);
                }
                let (kind, message) = failure(error);
                return Err(Error::Skill {
                    skill: skill.meta.name.clone(),
                    kind,
                    message: guest.scrub.text("error", message),
                });
            }
        };
        // Memory writes and steps leave the guest too: one cap on everything it returns,
        // or a guest could smuggle unbounded data out beside a small output.
        guest.check_output(returned_bytes(&output))?;
        let output = guest.scrub_output(output);
        let value = serde_json::from_str(&output.output).map_err(|e| Error::InvalidOutput {
            skill: skill.meta.name.clone(),
            reason: e.to_string(),
        })?;
        Ok(SkillOutcome {
            output: value,
            memory_writes: if skill.grant.memory == MemoryAccess::ReadWrite {
                output
                    .memory_writes
                    .into_iter()
                    .map(|w| MemoryWrite {
                        text: w.text,
                        category: w.category,
                    })
                    .collect()
            } else {
                // Suggestions are writes by another name: without a write grant a skill
                // could fill memory (and so the model's context) with what it likes.
                if !output.memory_writes.is_empty() {
                    tracing::info!(
                        skill = %skill.meta.name,
                        dropped = output.memory_writes.len(),
                        "memory suggestions dropped: the skill was not granted write access to memory"
                    );
                }
                Vec::new()
            },
            intermediate_steps: output.intermediate_steps.into_iter().map(step).collect(),
            duration: started.elapsed(),
            stdout: guest.stdout_text(),
            stderr: guest.stderr_text(),
        })
    }
}

/// Calls the `manifest` export of a component not yet described, with no grants.
pub(super) async fn read_manifest(
    engine: &WasmEngine,
    label: &str,
    pre: &PluginPre<HostState>,
) -> Result<SkillMeta> {
    let limits = Limits::for_manifest();
    let grant = Arc::new(Grant::default());
    let (result, guest) = run_guest(
        engine,
        pre,
        label,
        &limits,
        &grant,
        &[],
        &SkillContext::detached(),
        &LongStreak::default(),
        |plugin, store| {
            Box::pin(async move { plugin.evo_skill_skill().call_manifest(store).await })
        },
    )
    .await?;
    let json = result.map_err(|e| guest.classify(e))?;
    guest.check_output(json.len())?;
    SkillMeta::from_json(&json).map_err(|problems| Error::InvalidManifest {
        skill: label.to_owned(),
        problems,
    })
}

/// A call's store with its slot: fields drop in order, so the slot is given back only
/// once the instance is gone, wherever the call ends or is cancelled.
struct Held {
    store: Store<HostState>,
    _slot: Arc<std::sync::Mutex<Slot>>,
}

type GuestFuture<'a, T> = std::pin::Pin<Box<dyn Future<Output = wasmtime::Result<T>> + Send + 'a>>;

/// What is left of a store after a call, to explain how it ended.
struct GuestRun {
    skill: String,
    limits: Limits,
    memory_exceeded: bool,
    timed_out: bool,
    stdout: MemoryOutputPipe,
    stderr: MemoryOutputPipe,
    scrub: super::scrub::Scrub,
}

#[expect(
    clippy::too_many_arguments,
    reason = "internal helper shared by call and read_manifest"
)]
async fn run_guest<T: Send + 'static>(
    engine: &WasmEngine,
    pre: &PluginPre<HostState>,
    skill: &str,
    limits: &Limits,
    grant: &Arc<Grant>,
    calls: &[String],
    ctx: &SkillContext,
    streak: &LongStreak,
    body: impl for<'a> FnOnce(super::bindings::Plugin, &'a mut Store<HostState>) -> GuestFuture<'a, T>
    + Send
    + 'static,
) -> Result<(wasmtime::Result<T>, GuestRun)> {
    let slot = engine.slots().acquire(ctx.depth(), streak).await;
    let long = super::background::LongRunning::default();
    if slot.is_long() {
        long.presume();
    }
    let slot = Arc::new(std::sync::Mutex::new(slot));
    let stdout = MemoryOutputPipe::new(STDIO_CAP_BYTES);
    let stderr = MemoryOutputPipe::new(STDIO_CAP_BYTES);
    let wasi = wasi_ctx(grant, &stdout, &stderr)?;
    let mut table = wasmtime::component::ResourceTable::new();
    table.set_max_capacity(MAX_RESOURCES);
    let skill_name: Arc<str> = skill.into();
    let state = HostState {
        wasi,
        http: wasmtime_wasi_http::WasiHttpCtx::new(),
        outbound: super::http::Outbound::new(
            skill_name.clone(),
            grant.hosts.clone(),
            grant.secrets.clone(),
            Some(ctx.clone()),
        ),
        table,
        limiter: StoreLimiter::new(limits.memory_bytes()),
        skill: skill_name,
        calls: calls.into(),
        grant: grant.clone(),
        config: wasmtime_wasi_config::WasiConfigVariables::from_iter(
            grant.config.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        ),
        ctx: ctx.clone(),
        chatter: 0,
        _live: engine.live(),
    };
    let flavor = engine.flavor(limits.fuel.is_some())?;
    let mut store = Store::new(&flavor.engine, state);
    store.limiter(|state| &mut state.limiter);
    super::limits::set_deadline(&mut store, limits.timeout_ms, long.clone());
    if let Some(fuel) = limits.fuel {
        store
            .set_fuel(fuel)
            .map_err(|e| Error::Engine(e.to_string()))?;
    }
    let scrub = store.data().outbound.scrub.clone();

    // The epoch deadline interrupts guest code; this guard also bounds time spent in
    // host calls, which the epoch cannot interrupt.
    let guard = Duration::from_millis(limits.timeout_ms) + EPOCH_TICK * 2;
    let pre = pre.clone();
    let held = Held {
        store,
        _slot: slot.clone(),
    };
    let work = async move {
        // The whole of `held`, not only the field used below (closures capture fields).
        let mut held = held;
        let result = async {
            let plugin = pre.instantiate_async(&mut held.store).await?;
            body(plugin, &mut held.store).await
        }
        .await;
        let memory_exceeded = held.store.data().limiter.memory_exceeded;
        (result, memory_exceeded)
    };
    // Past its first milliseconds the call moves to the low-priority threads, and its
    // slot from the pool to the long lane.
    // Counted long as soon as it is, so that the next calls of a runaway skill take the
    // long lane while this one still runs.
    let moved = || {
        if long.computed_long() {
            streak.ran_long();
        }
        if let Ok(mut slot) = slot.lock() {
            engine.slots().to_long_lane(&mut slot);
        }
    };
    let outcome = tokio::time::timeout(guard, super::background::run(work, &long, moved)).await;
    if !long.computed_long() {
        streak.ran_short();
    }
    let (result, memory_exceeded, timed_out) = match outcome {
        Ok(Some((result, memory_exceeded))) => (result, memory_exceeded, false),
        Ok(None) => (
            Err(wasmtime::Error::msg("the call was cancelled")),
            false,
            false,
        ),
        Err(_) => (
            Err(wasmtime::Error::msg("wall-clock guard expired")),
            false,
            true,
        ),
    };
    let guest = GuestRun {
        skill: skill.to_owned(),
        limits: *limits,
        memory_exceeded,
        timed_out,
        stdout,
        stderr,
        scrub,
    };
    guest.forward_stdio();
    Ok((result, guest))
}

fn wasi_ctx(
    grant: &Grant,
    stdout: &MemoryOutputPipe,
    stderr: &MemoryOutputPipe,
) -> Result<wasmtime_wasi::WasiCtx> {
    let mut builder = WasiCtxBuilder::new();
    builder
        .stdout(stdout.clone())
        .stderr(stderr.clone())
        // No network until a skill can be granted hosts: WASI's default already denies
        // every address, and switching the socket APIs off says so outright.
        .allow_tcp(false)
        .allow_udp(false)
        .allow_ip_name_lookup(false);
    for dir in &grant.dirs {
        let perms = match dir.access {
            Access::Read => FsPerms::ReadOnly,
            Access::ReadWrite => FsPerms::ReadWrite,
        };
        builder
            .preopened_dir(&dir.host, &dir.guest, perms)
            .map_err(|e| {
                Error::Capability(format!(
                    "cannot open {} for {}: {e}",
                    dir.host.display(),
                    dir.guest
                ))
            })?;
    }
    Ok(builder.build())
}

impl GuestRun {
    /// Turns a trap or host error into the error a user should see.
    fn classify(&self, error: wasmtime::Error) -> Error {
        let skill = self.skill.clone();
        if self.memory_exceeded {
            return Error::MemoryLimit {
                skill,
                limit_mib: self.limits.memory_mib,
            };
        }
        if self.timed_out {
            return Error::Timeout {
                skill,
                limit_ms: self.limits.timeout_ms,
            };
        }
        match error.downcast_ref::<Trap>() {
            Some(Trap::Interrupt) => {
                return Error::Timeout {
                    skill,
                    limit_ms: self.limits.timeout_ms,
                };
            }
            Some(Trap::OutOfFuel) => {
                return Error::FuelExhausted {
                    skill,
                    fuel: self.limits.fuel.unwrap_or(0),
                };
            }
            _ => {}
        }
        for (stream, pipe) in [("stdout", &self.stdout), ("stderr", &self.stderr)] {
            if pipe.contents().len() >= STDIO_CAP_BYTES {
                return Error::OutputLimit {
                    skill,
                    stream,
                    limit: STDIO_CAP_BYTES as u64,
                };
            }
        }
        if let Some(wasmtime::component::ResourceTableError::Full) =
            error.downcast_ref::<wasmtime::component::ResourceTableError>()
        {
            return Error::Trap {
                skill,
                message: format!(
                    "the skill held more than {MAX_RESOURCES} host resources at once (open files, directories, streams), the per-call cap; close files it no longer needs"
                ),
            };
        }
        let message = trap_message(&error, &self.stderr_text());
        Error::Trap { skill, message }
    }

    /// A guest that filled stdout or stderr may report that as its own failure or trap;
    /// either way the cause the user needs is the cap.
    fn stdio_exceeded(&self) -> Option<Error> {
        [("stdout", &self.stdout), ("stderr", &self.stderr)]
            .into_iter()
            .find(|(_, pipe)| pipe.contents().len() >= STDIO_CAP_BYTES)
            .map(|(stream, _)| Error::OutputLimit {
                skill: self.skill.clone(),
                stream,
                limit: STDIO_CAP_BYTES as u64,
            })
    }

    fn check_output(&self, len: usize) -> Result<()> {
        if len as u64 > self.limits.output_bytes {
            return Err(Error::OutputLimit {
                skill: self.skill.clone(),
                stream: "output",
                limit: self.limits.output_bytes,
            });
        }
        Ok(())
    }

    /// What the guest returned, with every secret value redacted.
    fn scrub_output(&self, mut output: types::SkillOutput) -> types::SkillOutput {
        if self.scrub.secrets().is_empty() {
            return output;
        }
        let scrub = |channel: &str, text: &mut String| {
            *text = self.scrub.text(channel, std::mem::take(text));
        };
        scrub("output", &mut output.output);
        for write in &mut output.memory_writes {
            scrub("memory write", &mut write.text);
        }
        for step in &mut output.intermediate_steps {
            scrub("step", &mut step.input);
            scrub("step", &mut step.output);
            if let Some(error) = &mut step.error {
                scrub("step", error);
            }
        }
        output
    }

    fn stdout_text(&self) -> String {
        let text = String::from_utf8_lossy(&self.stdout.contents()).into_owned();
        self.scrub.text("stdout", text)
    }

    fn stderr_text(&self) -> String {
        let text = String::from_utf8_lossy(&self.stderr.contents()).into_owned();
        self.scrub.text("stderr", text)
    }

    /// Guests have no terminal: what they print goes to the log, tagged with the skill.
    fn forward_stdio(&self) {
        for (stream, pipe) in [("stdout", &self.stdout), ("stderr", &self.stderr)] {
            let contents = pipe.contents();
            if contents.is_empty() {
                continue;
            }
            let text = String::from_utf8_lossy(&contents).into_owned();
            let text = if self.scrub.secrets().is_empty() {
                text
            } else {
                // Reported once, by `stdout_text`/`stderr_text`; here only kept out.
                self.scrub.secrets().redact(&text).0.into_owned()
            };
            for line in text.lines() {
                tracing::debug!(target: "evo::skill", skill = %self.skill, stream, "{line}");
            }
        }
    }
}

/// Frames of the guest backtrace kept in a trap message: enough to locate the bug.
const TRAP_BACKTRACE_FRAMES: usize = 8;

/// The cause first (for a Rust guest, the panic message it printed), then the top of
/// the guest backtrace.
fn trap_message(error: &wasmtime::Error, stderr: &str) -> String {
    let mut message = error.root_cause().to_string();
    // A Rust panic prints `thread '…' panicked at src/lib.rs:1:2:` and the message on
    // the next line, then a note about RUST_BACKTRACE that would only confuse here.
    let printed: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("note: run with `RUST_BACKTRACE"))
        .collect();
    if !printed.is_empty() {
        let tail = &printed[printed.len().saturating_sub(2)..];
        message = format!("{message}; the guest printed: {}", tail.join(" "));
    }
    if let Some(backtrace) = error.downcast_ref::<wasmtime::WasmBacktrace>() {
        let frames = backtrace.to_string();
        let frames: Vec<&str> = frames
            .lines()
            .filter(|l| l.contains(" - ") && !RUNTIME_FRAMES.iter().any(|f| l.contains(f)))
            .take(TRAP_BACKTRACE_FRAMES)
            .collect();
        if !frames.is_empty() {
            message.push_str("\nguest backtrace:\n");
            message.push_str(&frames.join("\n"));
        }
    }
    message
}

/// Frames of the Rust runtime's panic and abort machinery, which say nothing about
/// where the skill went wrong.
const RUNTIME_FRAMES: [&str; 5] = ["!std[", "!core[", "!alloc[", "!__rustc", "!abort"];

fn failure(error: types::SkillError) -> (FailureKind, String) {
    let (kind, message) = match error {
        types::SkillError::InvalidInput(m) => (FailureKind::InvalidInput, m),
        types::SkillError::NotFound(m) => (FailureKind::NotFound, m),
        types::SkillError::Denied(m) => (FailureKind::Denied, m),
        types::SkillError::Timeout(m) => (FailureKind::Timeout, m),
        types::SkillError::Failed(m) => (FailureKind::Failed, m),
    };
    (kind, cut(message, MAX_ERROR_BYTES))
}

/// `text` cut to at most `max` bytes (on a character boundary), saying how much was cut.
pub(super) fn cut(mut text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let total = text.len();
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.push_str(&format!("… ({} more bytes cut)", total - end));
    text
}

/// Bytes of text a call returns: its output, memory writes and steps.
fn returned_bytes(output: &types::SkillOutput) -> usize {
    let writes: usize = output
        .memory_writes
        .iter()
        .map(|w| RETURNED_ENTRY_BYTES + w.text.len() + w.category.as_ref().map_or(0, String::len))
        .sum();
    let steps: usize = output
        .intermediate_steps
        .iter()
        .map(|s| {
            RETURNED_ENTRY_BYTES
                + s.step_id.len()
                + s.step_name.len()
                + s.input.len()
                + s.output.len()
                + s.error.as_ref().map_or(0, String::len)
        })
        .sum();
    output.output.len() + writes + steps
}

fn step(trace: types::StepTrace) -> StepTrace {
    let json = |text: String| serde_json::from_str(&text).unwrap_or(Value::String(text));
    StepTrace {
        step_id: trace.step_id,
        step_name: trace.step_name,
        input: json(trace.input),
        output: json(trace.output),
        duration: trace.duration_ms,
        error: trace.error,
    }
}
