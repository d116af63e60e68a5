//! Per-call limits: what a skill asks for, clamped by the host's policy.

use std::time::Duration;

use crate::skill::manifest::SkillMeta;

/// Memory a skill gets when its manifest does not say: enough for a Rust guest parsing
/// a few MiB of JSON, small enough that a bomb is caught early.
pub const DEFAULT_MEMORY_MIB: u64 = 64;
/// The most memory any skill may have unless the operator raises it. The JS and Python
/// guests (12–18 MB components with an interpreter) run comfortably within it.
pub const MAX_MEMORY_MIB: u64 = 512;
/// Largest output unless the manifest asks for less: 1 MiB of JSON is far more than a
/// model can read in one tool result.
pub const DEFAULT_OUTPUT_BYTES: u64 = 1 << 20;
/// The most output any skill may return unless the operator raises it.
pub const MAX_OUTPUT_BYTES: u64 = 16 << 20;
/// Longest call any skill may ask for unless the operator raises it (10 minutes).
pub const MAX_TIMEOUT_MS: u64 = 600_000;
/// Captured stdout and stderr, each: enough for diagnostics, too little to use as a
/// side channel for bulk output.
pub const STDIO_CAP_BYTES: usize = 64 << 10;
/// Table elements across all tables; Rust guests use a few hundred.
pub const MAX_TABLE_ELEMENTS: usize = 100_000;
/// Host resources one call may hold at once (open files and directories, streams,
/// pollables): each open file is a descriptor of the host's, and the host has a few
/// thousand for every call it runs.
pub const MAX_RESOURCES: usize = 256;
/// Core instances one component may create unless the operator sets another cap
/// (`[engine] max_instances`), and tables as many: a Rust wasip2 component has 3–4
/// core instances, a componentize-js one about a dozen, a componentize-py one built
/// with `--stub-wasi` 33. A component's count is fixed by its bytes: one past the cap
/// is refused when it is loaded, with the setting named.
pub const DEFAULT_MAX_INSTANCES: u32 = 128;
/// Memories a component may create; a Rust wasip2 component has one.
pub const MAX_MEMORIES: usize = 4;
/// Deadline for each host call that can block (`call`, `llm`, `memory-*`), so a slow
/// backend cannot hold a guest past its own deadline unnoticed.
pub const HOST_CALL_TIMEOUT: Duration = Duration::from_secs(120);
/// Most `log` and `emit` calls per skill call; more are dropped with one warning.
pub const MAX_LOG_AND_EVENT_CALLS: u32 = 1_000;
/// Longest error message a guest's failure carries: it reaches stderr, `--json` and a
/// model's context, where a few kilobytes already say everything useful.
pub const MAX_ERROR_BYTES: usize = 16 << 10;
/// Longest log message or emitted event; a longer log line is cut, a longer event (JSON
/// that cannot be cut) dropped.
pub const MAX_CHATTER_BYTES: usize = 16 << 10;
/// What each memory write and step costs against the output cap beyond its text: its
/// JSON framing, so that thousands of empty entries cannot pass as free.
pub const RETURNED_ENTRY_BYTES: usize = 64;
/// Host memory one guest-to-host transfer may take: a call's result as wasmtime lifts it
/// (a `list<u8>` costs a `Val` of 32 bytes per byte), or the arguments of one host
/// call. A guest that sends more traps before the host allocates it; far above any
/// output a call may return ([`MAX_OUTPUT_BYTES`]).
pub const MAX_COPIED_BYTES: usize = 128 << 20;
/// Deadline for the `manifest` export, which only builds a string.
pub const MANIFEST_TIMEOUT_MS: u64 = 5_000;

/// The host's maxima; a manifest may ask for less, never more.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimitPolicy {
    /// Largest memory, MiB.
    pub max_memory_mib: u64,
    /// Largest output, bytes.
    pub max_output_bytes: u64,
    /// Longest call, ms.
    pub max_timeout_ms: u64,
    /// Most fuel per call, if the operator caps it.
    pub max_fuel: Option<u64>,
    /// Most core instances (and tables) one component may create.
    pub max_instances: u32,
}

impl Default for LimitPolicy {
    fn default() -> Self {
        Self {
            max_memory_mib: MAX_MEMORY_MIB,
            max_output_bytes: MAX_OUTPUT_BYTES,
            max_timeout_ms: MAX_TIMEOUT_MS,
            max_fuel: None,
            max_instances: DEFAULT_MAX_INSTANCES,
        }
    }
}

/// The limits one call runs under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Limits {
    /// Wall-clock deadline, ms.
    pub timeout_ms: u64,
    /// Linear memory across all memories, MiB.
    pub memory_mib: u64,
    /// Output JSON, bytes.
    pub output_bytes: u64,
    /// Fuel, when metered.
    pub fuel: Option<u64>,
}

impl Limits {
    /// The manifest's requests, each clamped to `policy`.
    pub fn resolve(meta: &SkillMeta, policy: &LimitPolicy) -> Self {
        Self {
            timeout_ms: meta.timeout_ms.min(policy.max_timeout_ms),
            memory_mib: meta
                .limits
                .memory_mib
                .unwrap_or(DEFAULT_MEMORY_MIB)
                .min(policy.max_memory_mib),
            output_bytes: meta
                .limits
                .output_bytes
                .unwrap_or(DEFAULT_OUTPUT_BYTES)
                .min(policy.max_output_bytes),
            fuel: match (meta.limits.fuel, policy.max_fuel) {
                (Some(fuel), Some(max)) => Some(fuel.min(max)),
                (fuel, _) => fuel,
            },
        }
    }

    /// Limits for running the `manifest` export of a skill not yet described.
    pub fn for_manifest() -> Self {
        Self {
            timeout_ms: MANIFEST_TIMEOUT_MS,
            memory_mib: DEFAULT_MEMORY_MIB,
            output_bytes: DEFAULT_OUTPUT_BYTES,
            fuel: None,
        }
    }

    /// Memory in bytes.
    pub fn memory_bytes(&self) -> usize {
        usize::try_from(self.memory_mib << 20).unwrap_or(usize::MAX)
    }
}

/// Counts linear memory across all of a store's memories, and tables, against the
/// call's limits. Refusing a grow with an error (rather than `Ok(false)`) traps at once
/// with a clear cause instead of letting the guest's allocator abort later.
#[derive(Debug)]
pub struct StoreLimiter {
    memory_limit: usize,
    /// Core instances and tables, each.
    instances: usize,
    memory_used: usize,
    table_elements: usize,
    /// Set when a grow was refused, so the caller can report the limit.
    pub memory_exceeded: bool,
}

/// The error a refused memory grow traps with.
#[derive(Debug, thiserror::Error)]
#[error("linear memory limit of {limit} bytes exceeded (asked for {asked} bytes in total)")]
pub struct MemoryLimitExceeded {
    limit: usize,
    asked: usize,
}

impl StoreLimiter {
    /// A limiter allowing `memory_limit` bytes of linear memory in total, and
    /// [`DEFAULT_MAX_INSTANCES`] core instances and tables.
    pub fn new(memory_limit: usize) -> Self {
        Self {
            memory_limit,
            instances: DEFAULT_MAX_INSTANCES as usize,
            memory_used: 0,
            table_elements: 0,
            memory_exceeded: false,
        }
    }

    /// Bytes of linear memory the store's memories hold now.
    pub(super) fn memory_used(&self) -> usize {
        self.memory_used
    }

    /// The same, allowing `instances` core instances and as many tables.
    pub fn with_instances(self, instances: u32) -> Self {
        Self {
            instances: instances as usize,
            ..self
        }
    }
}

impl wasmtime::ResourceLimiter for StoreLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let asked = self
            .memory_used
            .saturating_sub(current)
            .saturating_add(desired);
        tracing::trace!(current, desired, total = asked, "linear memory grows");
        if asked > self.memory_limit {
            self.memory_exceeded = true;
            return Err(wasmtime::Error::new(MemoryLimitExceeded {
                limit: self.memory_limit,
                asked,
            }));
        }
        self.memory_used = asked;
        Ok(true)
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let asked = self
            .table_elements
            .saturating_sub(current)
            .saturating_add(desired);
        if asked > MAX_TABLE_ELEMENTS {
            return Ok(false);
        }
        self.table_elements = asked;
        Ok(true)
    }

    fn instances(&self) -> usize {
        self.instances
    }

    fn tables(&self) -> usize {
        self.instances
    }

    fn memories(&self) -> usize {
        MAX_MEMORIES
    }
}

/// Interrupts the guest in `store` at the first epoch tick after `timeout_ms` have
/// passed, and makes it yield to the executor at every tick before that once it has run
/// for [`LONG_AFTER`](super::background::LONG_AFTER): a guest that computes without end
/// holds no runtime thread (two of them stalled a two-core `evo serve` until their
/// deadlines). At each such yield the call is marked `long`, and moved to the
/// low-priority threads once other calls are in flight. Time is wall-clock time, not
/// ticks seen: a guest that waited for the CPU has still used its time.
pub(super) fn set_deadline<T: Send + 'static>(
    store: &mut wasmtime::Store<T>,
    timeout_ms: u64,
    long: super::background::LongRunning,
) {
    let timeout = Duration::from_millis(timeout_ms);
    let started = std::time::Instant::now();
    store.set_epoch_deadline(1);
    store.epoch_deadline_callback(move |_| {
        let elapsed = started.elapsed();
        if elapsed >= timeout {
            return Ok(wasmtime::UpdateDeadline::Interrupt);
        }
        if elapsed < super::background::LONG_AFTER {
            // A short call finishes where it started: yielding would put it behind every
            // task in the runtime's queue, for nothing.
            return Ok(wasmtime::UpdateDeadline::Continue(1));
        }
        long.mark();
        Ok(wasmtime::UpdateDeadline::Yield(1))
    });
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

#[cfg(test)]
mod tests {
    use super::*;
    use wasmtime::ResourceLimiter;

    #[test]
    fn memory_is_counted_across_memories() {
        let mut limiter = StoreLimiter::new(10);
        assert!(limiter.memory_growing(0, 4, None).unwrap());
        assert!(limiter.memory_growing(0, 4, None).unwrap());
        assert!(limiter.memory_growing(4, 6, None).unwrap());
        let err = limiter.memory_growing(4, 5, None).unwrap_err();
        assert!(limiter.memory_exceeded);
        assert_eq!(
            err.to_string(),
            "linear memory limit of 10 bytes exceeded (asked for 11 bytes in total)"
        );
    }

    #[test]
    fn manifest_requests_are_clamped_to_policy() {
        let mut meta =
            SkillMeta::from_json(r#"{"name":"a","description":"b","timeout":9999999}"#).unwrap();
        meta.limits.memory_mib = Some(4096);
        meta.limits.fuel = Some(1_000);
        let policy = LimitPolicy {
            max_fuel: Some(10),
            ..LimitPolicy::default()
        };
        let limits = Limits::resolve(&meta, &policy);
        assert_eq!(
            limits,
            Limits {
                timeout_ms: MAX_TIMEOUT_MS,
                memory_mib: MAX_MEMORY_MIB,
                output_bytes: DEFAULT_OUTPUT_BYTES,
                fuel: Some(10)
            }
        );
    }
}
