//! Running one guest: a fresh store and instance under the call's limits, on the
//! caller's runtime or the low-priority one, and turning how it ended into an [`Error`].

use std::sync::Arc;
use std::time::Duration;

use wasmtime::Store;
use wasmtime::Trap;
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{FsPerms, WasiCtxBuilder};

use super::bindings::evo::skill::types;
use super::contract::{GuestFuture, Instantiate};
use super::limits::{Limits, MAX_RESOURCES, STDIO_CAP_BYTES, StoreLimiter};
use super::parked::Spot;
use super::slots::Slot;
use super::state::HostState;
use super::{EPOCH_TICK, WasmEngine};
use crate::capabilities::{Access, DirGrant, Grant, Sandbox};
use crate::error::{Error, Result};
use crate::skill::kernel::SkillContext;
use crate::skill::lanes::Streak;

/// A call's store with its slot: fields drop in order, so the slot is given back only
/// once the instance is gone, wherever the call ends or is cancelled.
struct Held {
    store: Store<HostState>,
    _slot: Arc<std::sync::Mutex<Slot>>,
}

/// What is left of a store after a call, to explain how it ended.
pub(super) struct GuestRun {
    skill: String,
    limits: Limits,
    /// The engine's cap on a component's core instances and tables.
    max_instances: u32,
    memory_exceeded: bool,
    timed_out: bool,
    stdout: MemoryOutputPipe,
    stderr: MemoryOutputPipe,
    pub(super) scrub: super::scrub::Scrub,
    /// Why the host refused the guest's last outbound request, if it refused one.
    refusal: Arc<std::sync::Mutex<Option<String>>>,
}

#[expect(
    clippy::too_many_arguments,
    reason = "internal helper shared by call and read_manifest"
)]
pub(super) async fn run_guest<P: Instantiate, T: Send + 'static>(
    engine: &WasmEngine,
    pre: &P,
    skill: &str,
    limits: &Limits,
    grant: &Arc<Grant>,
    calls: &[String],
    ctx: &SkillContext,
    streak: &Streak,
    spot: Option<&Arc<Spot<P::Instance>>>,
    body: impl for<'a> FnOnce(P::Instance, &'a mut Store<HostState>) -> GuestFuture<'a, T>
    + Send
    + 'static,
) -> Result<(wasmtime::Result<T>, GuestRun)> {
    // Counted while it waits for its slot too, so that long calls yield to it.
    let (long, _counted) =
        super::background::LongRunning::start(engine.calls(), ctx.depth(), streak);
    let slot = engine.slots().acquire(ctx.depth(), streak).await;
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
    let parked = spot.and_then(|spot| spot.take());
    let (mut store, ready) = match parked {
        // Its state is neutral: everything of the call replaces it, the limiter (which
        // counted the memory its instantiation made) and the place in the pool stay.
        Some(parked) => {
            let mut store = parked.store;
            let state = store.data_mut();
            state.wasi = wasi;
            state.http = wasmtime_wasi_http::WasiHttpCtx::new();
            state.chatter = 0;
            state.reached = false;
            state.outbound =
                super::http::Outbound::new(skill_name.clone(), grant, Some(ctx.clone()));
            state.table = table;
            state.skill = skill_name.clone();
            state.calls = calls.into();
            state.grant = grant.clone();
            state.ctx = ctx.clone();
            state._live = engine.live();
            (store, Some(parked.instance))
        }
        None => {
            let state = HostState {
                wasi,
                http: wasmtime_wasi_http::WasiHttpCtx::new(),
                outbound: super::http::Outbound::new(skill_name.clone(), grant, Some(ctx.clone())),
                table,
                limiter: StoreLimiter::new(limits.memory_bytes())
                    .with_instances(engine.inner.config.limits.max_instances),
                skill: skill_name.clone(),
                calls: calls.into(),
                grant: grant.clone(),
                ctx: ctx.clone(),
                chatter: 0,
                reached: false,
                _live: engine.live(),
            };
            let flavor = engine.flavor(limits.fuel.is_some())?;
            let mut store = Store::new(&flavor.engine, state);
            store.limiter(|state| &mut state.limiter);
            (store, None)
        }
    };
    store.set_hostcall_fuel(super::limits::MAX_COPIED_BYTES);
    super::limits::set_deadline(&mut store, limits.timeout_ms, long.clone());
    if let Some(fuel) = limits.fuel {
        store
            .set_fuel(fuel)
            .map_err(|e| Error::Engine(e.to_string()))?;
    }
    let scrub = store.data().outbound.scrub.clone();
    let refusal = store.data().outbound.last_refusal.clone();

    // The epoch deadline interrupts guest code; this guard also bounds time spent in
    // host calls, which the epoch cannot interrupt.
    let guard = Duration::from_millis(limits.timeout_ms) + EPOCH_TICK * 2;
    let made = pre.clone();
    let pre = pre.clone();
    let held = Held {
        store,
        _slot: slot.clone(),
    };
    let work_long = long.clone();
    let work = async move {
        // The whole of `held`, not only the field used below (closures capture fields).
        let mut held = held;
        let result = async {
            let instance = match ready {
                Some(instance) => instance,
                None => pre.instantiate(&mut held.store).await?,
            };
            body(instance, &mut held.store).await
        }
        .await;
        let memory_exceeded = held.store.data().limiter.memory_exceeded;
        // Its guest runs no more: the epoch's ticker may sleep while the store waits to
        // be given back (on a current-thread runtime driven by `block_on`, until the
        // next call).
        held.store.data_mut()._live.stop_running();
        // A call that moved to the low-priority threads gives its store back there;
        // one that did not, after its answer (below).
        let held = if work_long.is_marked() {
            drop(held);
            None
        } else {
            Some(held)
        };
        (result, memory_exceeded, held)
    };
    // Past its first milliseconds, beside other calls, the call moves to the
    // low-priority threads, and its slot from the pool to the long lane.
    let moved = || {
        if let Ok(mut slot) = slot.lock() {
            engine.slots().to_long_lane(&mut slot);
        }
    };
    let outcome = tokio::time::timeout(guard, super::background::run(work, &long, moved)).await;
    if !long.computed_long() {
        streak.ran_short();
    }
    let (outcome, held) = match outcome {
        Ok(Some((result, memory_exceeded, held))) => (Ok(Some((result, memory_exceeded))), held),
        other => (other.map(|_| None), None),
    };
    // The store is given back after the answer: with the next instance's making when
    // one is made, else on its own.
    let held = match spot {
        Some(spot) => engine.park_next(&made, spot, &skill_name, limits, held),
        None => held,
    };
    if let Some(held) = held {
        drop_later(held);
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
        max_instances: engine.inner.config.limits.max_instances,
        memory_exceeded,
        timed_out,
        stdout,
        stderr,
        scrub,
        refusal,
    };
    guest.forward_stdio();
    Ok((result, guest))
}

/// Drops a finished call's store and instance once the runtime has run what the call's
/// result wakes: giving the instance back to the pool resets its memory (~15 % of an
/// echo call's CPU in `evo serve`), work its caller need not wait for. The store still
/// holds its slot until then, so no more instances live than slots allow.
///
/// On a current-thread runtime (`evo serve` over stdio) the answer and the drop take
/// turns on one thread. On a multi-thread runtime the making of the next instance takes
/// the store when there is one ([`WasmEngine::park_next`]); a store it does not take
/// (the spot already held an instance made late, after the next call had instantiated
/// its own) goes to a task of its own too, which wakes a worker: more CPU, a shorter
/// answer (docs/decisions.md, "An ended connection closes with the call, after its
/// answer"). Outside any runtime it drops in place.
fn drop_later(held: Held) {
    match tokio::runtime::Handle::try_current() {
        Ok(runtime) if runtime.runtime_flavor() == tokio::runtime::RuntimeFlavor::CurrentThread => {
            runtime.spawn(async move {
                // Each yield waits for the runtime to have run what is ready and looked
                // for input. After the first, the answer is out and the next instance is
                // parked (its making yields once); after the second, a request read
                // meanwhile has had its turns to reach its call. Neither waits for this.
                tokio::task::yield_now().await;
                tokio::task::yield_now().await;
                drop(held);
            });
        }
        Ok(runtime) => {
            runtime.spawn(async move { drop(held) });
        }
        Err(_) => drop(held),
    }
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
    crate::capabilities::confine(grant, &mut builder).map_err(Error::Capability)?;
    Ok(builder.build())
}

/// The Wasm engine's sandbox is the WASI context a guest gets: a granted directory is
/// preopened there, reached through a capability handle.
impl Sandbox for WasiCtxBuilder {
    fn preopen(&mut self, dir: &DirGrant) -> Result<(), String> {
        let perms = match dir.access {
            Access::Read => FsPerms::ReadOnly,
            Access::ReadWrite => FsPerms::ReadWrite,
        };
        self.preopened_dir(&dir.host, &dir.guest, perms)
            .map(drop)
            .map_err(|e| format!("cannot open {} for {}: {e}", dir.host.display(), dir.guest))
    }
}

impl GuestRun {
    /// Turns a trap or host error into the error a user should see.
    pub(super) fn classify(&self, error: wasmtime::Error) -> Error {
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
        // wasmtime's words for an instance or table the store limiter refused.
        let cause = error.root_cause().to_string();
        if let Some(what) = ["instance", "table"]
            .into_iter()
            .find(|what| cause.contains(&format!("{what} count too high")))
        {
            return Error::Trap {
                skill,
                message: format!(
                    "the component creates more than {} core {what}s, the most one component may have; if you trust it, raise `max_instances` under [engine] in evo.toml",
                    self.max_instances
                ),
            };
        }
        // wasmtime's name for a transfer past `MAX_COPIED_BYTES` (its type is private).
        if error
            .root_cause()
            .to_string()
            .contains("fuel allocated for hostcalls has been exhausted")
        {
            return Error::OutputLimit {
                skill,
                stream: "output",
                limit: self.limits.output_bytes,
            };
        }
        let message = trap_message(&error, &self.stderr_text());
        Error::Trap { skill, message }
    }

    /// A guest that filled stdout or stderr may report that as its own failure or trap;
    /// either way the cause the user needs is the cap.
    pub(super) fn stdio_exceeded(&self) -> Option<Error> {
        [("stdout", &self.stdout), ("stderr", &self.stderr)]
            .into_iter()
            .find(|(_, pipe)| pipe.contents().len() >= STDIO_CAP_BYTES)
            .map(|(stream, _)| Error::OutputLimit {
                skill: self.skill.clone(),
                stream,
                limit: STDIO_CAP_BYTES as u64,
            })
    }

    /// Why the host refused the guest's last outbound request, if it refused one: what
    /// a guest's own error (`HttpRequestDenied`) does not say.
    pub(super) fn refusal(&self) -> Option<String> {
        self.refusal
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    pub(super) fn check_output(&self, len: usize) -> Result<()> {
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
    pub(super) fn scrub_output(&self, mut output: types::SkillOutput) -> types::SkillOutput {
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

    pub(super) fn stdout_text(&self) -> String {
        let text = String::from_utf8_lossy(&self.stdout.contents()).into_owned();
        self.scrub.text("stdout", text)
    }

    pub(super) fn stderr_text(&self) -> String {
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
        let frames: Vec<String> = frames
            .lines()
            .filter(|l| l.contains(" - "))
            .map(demangled)
            .filter(|l| !RUNTIME_FRAMES.iter().any(|f| l.contains(f)))
            .take(TRAP_BACKTRACE_FRAMES)
            .collect();
        if !frames.is_empty() {
            message.push_str("\nguest backtrace:\n");
            message.push_str(&frames.join("\n"));
        }
    }
    message
}

/// A backtrace line (`  3: 0x1a2b - skill.wasm!_RNv…`) with its Rust function name
/// demangled without its hash (`skill.wasm!my_skill::parse`), as `evo skill build`
/// writes names in the first place; other names as they are.
fn demangled(line: &str) -> String {
    match line
        .split_once(" - ")
        .and_then(|(at, frame)| Some((at, frame.split_once('!')?)))
    {
        Some((at, (module, name))) => {
            format!("{at} - {module}!{:#}", rustc_demangle::demangle(name))
        }
        None => line.to_owned(),
    }
}

/// Frames of the Rust runtime's panic and abort machinery, which say nothing about
/// where the skill went wrong.
const RUNTIME_FRAMES: [&str; 5] = ["!std::", "!core::", "!alloc::", "!__rustc", "!abort"];

#[cfg(test)]
mod tests {
    use super::demangled;

    #[test]
    fn backtrace_lines_name_rust_functions_readably() {
        assert_eq!(
            demangled("    0: 0x1a2b - skill.wasm!_ZN4core9panicking5panic17h0123456789abcdefE"),
            "    0: 0x1a2b - skill.wasm!core::panicking::panic"
        );
        for plain in [
            "    1:   0x10 - skill.wasm!main",
            "    2:   0x20 - <unknown>!<wasm function 3>",
            "error while executing at wasm backtrace:",
        ] {
            assert_eq!(demangled(plain), plain);
        }
    }
}
