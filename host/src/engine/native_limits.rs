//! The native sandbox's default limits: the defaults of `[native]` in `evo.toml`, which a
//! configuration has whether or not this build has the sandbox (the `native` feature).

use std::time::Duration;

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
