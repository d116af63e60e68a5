//! `[native]` in `evo.toml`: how native script skills run, with their default limits,
//! which a configuration has whether or not this build has the sandbox (the `native`
//! feature).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::settings::{Invalid, Section, in_range};

/// Default wall-clock limit.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// Default memory limit in MiB: of the script's whole process tree where a cgroup caps
/// it, else of V8's heap (`--max-old-space-size`).
pub const DEFAULT_MAX_OLD_SPACE_MB: u32 = 512;
/// Default cap on the tasks (processes and threads) of one script's tree, where a cgroup
/// enforces it: Node alone runs about a dozen threads.
pub const DEFAULT_MAX_TASKS: u64 = 256;
/// Default CPU cap on one script's tree, in percent of one core, where a cgroup's `cpu`
/// controller enforces it: a runaway (or a busy script with worker threads) takes at
/// most one core, never the machine, until its deadline.
pub const DEFAULT_MAX_CPU_PERCENT: u64 = 100;

/// Whether native skills may run without file-system isolation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Isolation {
    /// Confine them when the kernel can (Landlock), else run them with process limits
    /// only, and say so.
    #[default]
    BestEffort,
    /// Refuse to run them unconfined.
    Required,
}

/// How native script skills run: `[native]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NativeSettings {
    /// Scripts that may run at once.
    pub concurrency: usize,
    /// See [`Isolation`].
    pub isolation: Isolation,
    /// Wall-clock limit per script, ms.
    pub timeout_ms: u64,
    /// Memory limit, MiB: of the script's whole process tree where a cgroup caps it,
    /// else of V8's heap.
    pub max_old_space_mb: u32,
    /// Tasks (processes and threads) one script may have at once, where a cgroup caps
    /// them.
    pub max_tasks: u64,
    /// CPU one script's process tree may use, in percent of one core (100: one core;
    /// 0: no cap), where a cgroup's `cpu` controller caps it.
    pub max_cpu_percent: u64,
    /// The Node binary.
    pub node: PathBuf,
}

impl Default for NativeSettings {
    /// As many scripts at once as there are cores, best-effort isolation, and the
    /// default limits above.
    fn default() -> Self {
        Self {
            concurrency: std::thread::available_parallelism()
                .map_or(1, usize::from)
                .min(1_024),
            isolation: Isolation::BestEffort,
            timeout_ms: u64::try_from(DEFAULT_TIMEOUT.as_millis()).unwrap_or(u64::MAX),
            max_old_space_mb: DEFAULT_MAX_OLD_SPACE_MB,
            max_tasks: DEFAULT_MAX_TASKS,
            max_cpu_percent: DEFAULT_MAX_CPU_PERCENT,
            node: PathBuf::from("node"),
        }
    }
}

impl Section for NativeSettings {
    const TABLE: &'static str = "native";

    fn check(&mut self, _: &Path) -> Result<(), Invalid> {
        in_range("native.concurrency", self.concurrency, 1, 1_024)?;
        in_range("native.timeout_ms", self.timeout_ms, 1, u64::MAX)?;
        in_range(
            "native.max_old_space_mb",
            self.max_old_space_mb,
            16,
            1 << 20,
        )?;
        in_range("native.max_tasks", self.max_tasks, 16, 1 << 22)?;
        in_range("native.max_cpu_percent", self.max_cpu_percent, 0, 102_400)
    }
}
