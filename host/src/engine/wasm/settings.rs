//! `[engine]` in `evo.toml`: the Wasm engine's sizing and limits.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::limits::LimitPolicy;
use super::{DEFAULT_COMPILE_DEADLINE, DEFAULT_MAX_COMPONENT_BYTES};
use crate::settings::{Invalid, Section, in_range};

/// Wasm calls that may run at once by default: the pool is sized to it (a pool sized to
/// need starts ~10× faster than wasmtime's defaults), and a CLI invocation
/// runs a handful of calls.
pub const DEFAULT_POOL_SLOTS: u32 = 16;
/// The largest pool `evo.toml` may ask for: each slot reserves address space for a
/// memory of the policy's maximum size.
pub const MAX_POOL_SLOTS: u32 = 1_024;

/// Sizing and limits of the Wasm engine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EngineSettings {
    /// Calls that may run at once (the pool's size); more wait for a slot.
    pub pool_slots: u32,
    /// Use the pooling allocator.
    pub pooling: bool,
    /// Keep compiled components in the data directory across runs.
    pub compile_cache: bool,
    /// The most memory any skill may ask for, MiB.
    pub max_memory_mib: u64,
    /// The largest output any skill may ask for, bytes.
    pub max_output_bytes: u64,
    /// The longest deadline any skill may ask for, ms.
    pub max_timeout_ms: u64,
    /// The most fuel per call, if the operator caps it.
    pub max_fuel: Option<u64>,
    /// The most core instances (and tables) one component may create.
    pub max_instances: u32,
    /// Largest component compiled at all, MiB.
    pub max_component_mb: u64,
    /// Longest wait for a component to compile, ms.
    pub compile_deadline_ms: u64,
    /// Whether a skill may make symbolic links in a read-write grant (only ones that
    /// point down, into the directory that holds them); `false` refuses every link.
    pub symlinks: bool,
    /// Instances made ahead of their calls, one per component at most; 0 turns it off.
    pub parked_instances: u32,
}

impl Default for EngineSettings {
    /// [`DEFAULT_POOL_SLOTS`] pooled slots, the engine's limit policy, the compile
    /// cache on, links that point down allowed, [`crate::wasm::DEFAULT_PARKED_INSTANCES`]
    /// instances made ahead.
    fn default() -> Self {
        let limits = LimitPolicy::default();
        Self {
            pool_slots: DEFAULT_POOL_SLOTS,
            pooling: true,
            compile_cache: true,
            max_memory_mib: limits.max_memory_mib,
            max_output_bytes: limits.max_output_bytes,
            max_timeout_ms: limits.max_timeout_ms,
            max_fuel: limits.max_fuel,
            max_instances: limits.max_instances,
            max_component_mb: DEFAULT_MAX_COMPONENT_BYTES >> 20,
            compile_deadline_ms: u64::try_from(DEFAULT_COMPILE_DEADLINE.as_millis())
                .unwrap_or(u64::MAX),
            symlinks: true,
            parked_instances: super::DEFAULT_PARKED_INSTANCES,
        }
    }
}

impl Section for EngineSettings {
    const TABLE: &'static str = "engine";

    fn check(&mut self, _: &Path) -> Result<(), Invalid> {
        in_range(
            "engine.pool_slots",
            self.pool_slots,
            1,
            MAX_POOL_SLOTS.into(),
        )?;
        in_range(
            "engine.parked_instances",
            self.parked_instances,
            0,
            MAX_POOL_SLOTS.into(),
        )?;
        in_range("engine.max_memory_mib", self.max_memory_mib, 1, 1 << 20)?;
        in_range(
            "engine.max_output_bytes",
            self.max_output_bytes,
            1,
            u64::MAX,
        )?;
        in_range("engine.max_timeout_ms", self.max_timeout_ms, 1, u64::MAX)?;
        in_range("engine.max_instances", self.max_instances, 1, 10_000)?;
        in_range("engine.max_component_mb", self.max_component_mb, 1, 4_096)?;
        in_range(
            "engine.compile_deadline_ms",
            self.compile_deadline_ms,
            1,
            u64::MAX,
        )?;
        if let Some(fuel) = self.max_fuel {
            in_range("engine.max_fuel", fuel, 1, u64::MAX)?;
        }
        Ok(())
    }
}
