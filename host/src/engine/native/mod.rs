//! Native script skills: `scripts/execute.js` run by Node in a subprocess sandbox.
//! Lower trust than Wasm skills: the script is an ordinary process
//! with the limits below, not a capability-checked guest.
//!
//! Per execution:
//!
//! - a fresh workspace `skill-workspace-<random>` under the temp dir, the process's
//!   working directory, removed afterwards whatever happened;
//! - an environment of `PATH` only (the host's keys and tokens never reach the script);
//! - the input JSON on stdin;
//! - V8's heap capped (`--max-old-space-size`, 512 MiB by default): an OOM is
//!   `Out of memory` and only the child dies;
//! - a wall-clock timeout (60 s by default): the whole process group gets SIGKILL and is
//!   reaped, so no zombie or orphaned grandchild is left;
//! - stdout + stderr capped (10 MB): the group is killed when reached and the kept output
//!   ends with `[TRUNCATED]`;
//! - at most `max_concurrency` scripts at once, the rest wait in FIFO order.

pub mod cgroup;
pub mod confine;
pub mod egress;
mod executor;
mod run;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use crate::error::{Error, Result};
use crate::skill::observe::stats::Stats;

pub use executor::NativeExecutor;
#[cfg(feature = "internals")]
pub use run::execute_script;

pub use super::native_settings::{
    DEFAULT_MAX_CPU_PERCENT, DEFAULT_MAX_OLD_SPACE_MB, DEFAULT_MAX_TASKS, DEFAULT_TIMEOUT,
};
/// Default cap on stdout + stderr.
pub const DEFAULT_OUTPUT_CAP: usize = 10 * 1024 * 1024;
/// The script each native skill runs, relative to its directory.
#[cfg_attr(
    not(feature = "internals"),
    allow(
        dead_code,
        reason = "Evo's own tests use it (and, for some, the program tools)"
    )
)]
pub const SCRIPT: &str = "scripts/execute.js";

/// How native skills run.
#[derive(Debug, Clone)]
pub struct NativeConfig {
    /// The Node binary (looked up on `PATH` when relative).
    pub node: PathBuf,
    /// Wall-clock limit per execution.
    pub timeout: Duration,
    /// Cap on stdout + stderr, in bytes.
    pub output_cap: usize,
    /// Memory limit in MiB (see [`DEFAULT_MAX_OLD_SPACE_MB`]).
    pub max_old_space_mb: u32,
    /// Tasks one script's tree may have at once (see [`DEFAULT_MAX_TASKS`]).
    pub max_tasks: u64,
    /// CPU a call's process tree may use, in percent of one core (0: no cap), where a
    /// cgroup caps it (see [`DEFAULT_MAX_CPU_PERCENT`]).
    pub max_cpu_percent: u64,
    /// Scripts that may run at once.
    pub max_concurrency: usize,
    /// A program that confines itself and then becomes Node: `evo-launcher`, or the `evo`
    /// binary itself (both run [`confine::launcher::main`]); `None` runs Node directly, without
    /// file-system and network isolation.
    pub launcher: Option<PathBuf>,
    /// Refuse to run scripts when file-system isolation is not available.
    pub require_isolation: bool,
}

impl NativeConfig {
    /// What a call's cgroup caps: the memory limit for the whole tree, and the tasks.
    pub fn cgroup_limits(&self) -> cgroup::Limits {
        cgroup::Limits {
            memory_bytes: u64::from(self.max_old_space_mb) << 20,
            max_tasks: self.max_tasks,
            cpu_percent: self.max_cpu_percent,
        }
    }
}

impl Default for NativeConfig {
    /// - `node` from `PATH`,
    /// - [`DEFAULT_TIMEOUT`], [`DEFAULT_OUTPUT_CAP`], [`DEFAULT_MAX_OLD_SPACE_MB`],
    /// - as many concurrent scripts as the machine has cores,
    /// - no launcher (no file-system isolation), not required.
    fn default() -> Self {
        Self {
            node: PathBuf::from("node"),
            timeout: DEFAULT_TIMEOUT,
            output_cap: DEFAULT_OUTPUT_CAP,
            max_old_space_mb: DEFAULT_MAX_OLD_SPACE_MB,
            max_tasks: DEFAULT_MAX_TASKS,
            max_cpu_percent: DEFAULT_MAX_CPU_PERCENT,
            max_concurrency: std::thread::available_parallelism().map_or(1, usize::from),
            launcher: None,
            require_isolation: false,
        }
    }
}

/// How confined native scripts are, named from the protections a call reported (see
/// `docs/sandbox.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum IsolationLevel {
    /// Own user, PID, mount, network, IPC and UTS namespaces and a private root: the
    /// script sees only the system's programs, its own directory and its workspace.
    Namespaced,
    /// Landlock alone: the host's files are there but refused.
    Landlock,
    /// Neither: an ordinary process of the host's user, with process limits.
    ProcessLimits,
}

impl IsolationLevel {
    /// The level `protections` amount to.
    pub fn of(protections: &[String]) -> Self {
        let has = |p: &str| protections.iter().any(|x| x == p);
        if has("namespaces") && has("private-root") {
            Self::Namespaced
        } else if protections.iter().any(|p| p.starts_with("landlock-")) {
            Self::Landlock
        } else {
            Self::ProcessLimits
        }
    }

    /// Its name: `namespaced`, `landlock`, `process-limits`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Namespaced => "namespaced",
            Self::Landlock => "landlock",
            Self::ProcessLimits => "process-limits",
        }
    }

    /// What it means, for a person.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Namespaced => {
                "in its own namespaces and private root: sees only system programs, its own directory and its workspace; no network"
            }
            Self::Landlock => {
                "confined to its workspace by Landlock (no namespaces here: other processes' names and the machine's network are visible)"
            }
            Self::ProcessLimits => {
                "with process limits only: NO file-system or network isolation here"
            }
        }
    }
}

/// `ExecutionResult`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionResult {
    /// Whether the script exited 0 within its limits.
    pub success: bool,
    /// What it printed (capped).
    pub stdout: String,
    /// What it printed on stderr (capped).
    pub stderr: String,
    /// Its exit code (`None` when killed by a signal).
    pub exit_code: Option<i32>,
    /// Wall-clock time, in milliseconds.
    pub duration: u64,
    /// Why it failed: `Execution timeout`, `Output size exceeded 10MB limit`,
    /// `Out of memory`, the thrown error's message, or `Failed to spawn process: …`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The kind of failure `error` words, for callers to act on.
    #[serde(skip)]
    pub failure: Option<NativeFailure>,
    /// Protections that applied to this execution (`landlock-full` means the script
    /// could touch no file outside its workspace and the read-only system directories).
    pub protections: Vec<String>,
}

/// Why a native run failed; [`ExecutionResult::error`] says it in words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NativeFailure {
    /// It ran past its time limit (`Execution timeout`).
    Timeout,
    /// It printed more than the output cap (`Output size exceeded …`).
    OutputLimit,
    /// It ran out of memory (`Out of memory`).
    OutOfMemory,
    /// It could not be started (`Failed to spawn process: …`).
    Spawn,
    /// It exited with an error: the thrown message, or its exit code or signal.
    Exited,
}

impl ExecutionResult {
    /// The structured output: the last line of stdout if it is a JSON object, else
    /// `{ "stdout": … }`.
    pub fn output(&self) -> Value {
        self.stdout
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .and_then(|l| serde_json::from_str::<Value>(l.trim()).ok())
            .filter(Value::is_object)
            .unwrap_or_else(|| serde_json::json!({ "stdout": self.stdout }))
    }
}

/// The interpreter a helper script runs with, by its extension: `python3` for `.py`,
/// `bash` for `.sh` and `.bash`, `node` for `.js`, `.mjs` and `.cjs`.
pub fn interpreter_for(script: &Path) -> Option<&'static str> {
    match script.extension()?.to_str()? {
        "py" => Some("python3"),
        "sh" | "bash" => Some("bash"),
        "js" | "mjs" | "cjs" => Some("node"),
        _ => None,
    }
}

/// What a command line of the `bash` tool may use besides the system's programs: the
/// toolchains the operator made reachable (`[tools] toolchains`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(
    not(feature = "internals"),
    allow(
        dead_code,
        reason = "Evo's own tests use it (and, for some, the program tools)"
    )
)]
pub struct Toolchains {
    /// Directories bound read-only at their own paths.
    pub dirs: Vec<PathBuf>,
    /// Variables set for the command line (`HOME`, `CARGO_HOME`, …), so the tools find
    /// their directories.
    pub env: Vec<(String, String)>,
}

/// Runs native skills from one skills directory.
#[derive(Debug, Clone)]
pub struct NativeSandbox {
    config: Arc<NativeConfig>,
    #[cfg_attr(
        not(feature = "internals"),
        allow(
            dead_code,
            reason = "Evo's own tests use it (and, for some, the program tools)"
        )
    )]
    skills_root: PathBuf,
    slots: Arc<tokio::sync::Semaphore>,
    #[cfg_attr(
        not(feature = "internals"),
        allow(
            dead_code,
            reason = "Evo's own tests use it (and, for some, the program tools)"
        )
    )]
    stats: Arc<Stats>,
    probe: Arc<tokio::sync::OnceCell<Vec<String>>>,
    warm: Arc<Warm>,
}

/// Launchers started ahead of their calls, so that joining a cgroup (~10 ms on some
/// kernels) is paid off the call's path. A host starts keeping them from its second
/// native call on: a one-shot `evo skill run` starts none it would not use.
#[derive(Debug, Default)]
struct Warm {
    ready: std::sync::Mutex<Vec<run::Waiting>>,
    calls: std::sync::atomic::AtomicU64,
}

#[cfg_attr(
    not(feature = "internals"),
    allow(
        dead_code,
        reason = "Evo's own tests use it (and, for some, the program tools)"
    )
)]
impl NativeSandbox {
    /// A sandbox for the skills under `skills_root` (`<root>/<name>/scripts/execute.js`).
    pub fn new(skills_root: impl Into<PathBuf>, config: NativeConfig) -> Self {
        let slots = tokio::sync::Semaphore::new(config.max_concurrency.max(1));
        Self {
            config: Arc::new(config),
            skills_root: skills_root.into(),
            slots: Arc::new(slots),
            stats: Arc::default(),
            probe: Arc::default(),
            warm: Arc::default(),
        }
    }

    /// Shares `stats` (e.g. with the kernel's).
    pub fn with_stats(mut self, stats: Arc<Stats>) -> Self {
        self.stats = stats;
        self
    }

    /// Per-skill statistics.
    pub fn stats(&self) -> &Arc<Stats> {
        &self.stats
    }

    /// The configuration.
    pub fn config(&self) -> &NativeConfig {
        &self.config
    }

    /// The script of skill `name`, or `Skills not found: <name>` (`ENOENT`).
    pub fn script(&self, name: &str) -> Result<PathBuf> {
        let valid = crate::skill::manifest::is_valid_name(name);
        let script = self.skills_root.join(name).join(SCRIPT);
        if valid && script.is_file() {
            Ok(script)
        } else {
            Err(Error::ScriptNotFound {
                name: name.to_owned(),
            })
        }
    }

    /// Runs skill `name` on `input`, waiting for a slot first (FIFO), and records its
    /// statistics.
    pub async fn execute(&self, name: &str, input: &Value) -> Result<ExecutionResult> {
        let script = self.script(name)?;
        let result = self.run_script(&script, input, self.config.timeout).await?;
        self.stats
            .record(name, result.success, Duration::from_millis(result.duration));
        Ok(result)
    }

    /// Runs `script` on `input` with `timeout`, waiting for a slot first (FIFO).
    pub async fn run_script(
        &self,
        script: &Path,
        input: &Value,
        timeout: Duration,
    ) -> Result<ExecutionResult> {
        self.run_script_in(script, input, timeout, None).await
    }

    /// [`NativeSandbox::run_script`] in a given workspace (`None`: a fresh one).
    pub async fn run_script_in(
        &self,
        script: &Path,
        input: &Value,
        timeout: Duration,
        workspace: Option<&Path>,
    ) -> Result<ExecutionResult> {
        let skill_dir = script.parent().and_then(Path::parent).unwrap_or(script);
        let program = run::Program {
            interpreter: &self.config.node,
            script: Some(script),
            args: &[],
            skill_dir,
            workspace,
            stdin: input.to_string().into_bytes(),
            read_only: &[],
        };
        self.run(program, timeout, self.config.output_cap).await
    }

    /// Runs a helper script of the skill in `skill_dir` (`scripts/fill.py`, …) with
    /// `args` and nothing on stdin, in the same sandbox and limits as a native skill,
    /// with the interpreter its extension names ([`interpreter_for`]).
    pub async fn run_helper(
        &self,
        skill_dir: &Path,
        script: &Path,
        args: &[String],
    ) -> Result<ExecutionResult> {
        let interpreter = match interpreter_for(script) {
            Some("node") => self.config.node.clone(),
            Some(name) => PathBuf::from(name),
            None => {
                return Err(Error::InvalidInput {
                    skill: "run_skill_script".into(),
                    reason: format!(
                        "{} has no interpreter Evo runs: .py runs with python3, .sh with bash, .js with node",
                        script.display()
                    ),
                });
            }
        };
        let program = run::Program {
            interpreter: &interpreter,
            script: Some(script),
            args,
            skill_dir,
            workspace: None,
            stdin: Vec::new(),
            read_only: &[],
        };
        self.run(program, self.config.timeout, self.config.output_cap)
            .await
    }

    /// Runs `command` with `bash -c` in `workspace` (writable, and where it starts), in
    /// the same sandbox as a native skill: no network, nothing else writable, the whole
    /// process group killed at `timeout` or when the call is dropped, output capped at
    /// `output_cap` bytes.
    pub async fn run_shell(
        &self,
        workspace: &Path,
        command: &str,
        timeout: Duration,
        output_cap: usize,
    ) -> Result<ExecutionResult> {
        self.run_shell_with(
            workspace,
            command,
            timeout,
            output_cap,
            &Toolchains::default(),
        )
        .await
    }

    /// [`NativeSandbox::run_shell`] with `toolchains` visible, read-only, and their
    /// variables set; the line runs with `pipefail`, so a failure before a pipe (`cargo
    /// test | tail`) is the line's exit status.
    pub async fn run_shell_with(
        &self,
        workspace: &Path,
        command: &str,
        timeout: Duration,
        output_cap: usize,
        toolchains: &Toolchains,
    ) -> Result<ExecutionResult> {
        // `env` (a system program) sets the variables, so the launcher passes on only
        // `PATH`, as for every other call.
        let mut args: Vec<String> = toolchains
            .env
            .iter()
            .map(|(name, value)| format!("{name}={value}"))
            .collect();
        args.extend(["bash", "-o", "pipefail", "-c", command].map(str::to_owned));
        let program = run::Program {
            interpreter: Path::new("env"),
            script: None,
            args: &args,
            skill_dir: workspace,
            workspace: Some(workspace),
            stdin: Vec::new(),
            read_only: &toolchains.dirs,
        };
        self.run(program, timeout, output_cap).await
    }

    /// Runs `program` (looked up on `PATH` when it has no directory) with `args` in
    /// `workspace`, as [`run_shell`](Self::run_shell) runs a command line.
    pub async fn run_in(
        &self,
        workspace: &Path,
        program: &Path,
        args: &[String],
        timeout: Duration,
        output_cap: usize,
    ) -> Result<ExecutionResult> {
        let program = run::Program {
            interpreter: program,
            script: None,
            args,
            skill_dir: workspace,
            workspace: Some(workspace),
            stdin: Vec::new(),
            read_only: &[],
        };
        self.run(program, timeout, output_cap).await
    }

    async fn run(
        &self,
        program: run::Program<'_>,
        timeout: Duration,
        output_cap: usize,
    ) -> Result<ExecutionResult> {
        if self.config.require_isolation
            && IsolationLevel::of(&self.isolation().await) == IsolationLevel::ProcessLimits
        {
            return Err(Error::Capability(
                "native skills are configured to require file-system isolation (native.isolation = \"required\"), and neither unprivileged namespaces nor Landlock are available here; enable user namespaces (sysctl kernel.unprivileged_userns_clone=1) or run on Linux 5.13+ with Landlock, or use Wasm skills".into(),
            ));
        }
        let _slot = self
            .slots
            .acquire()
            .await
            .map_err(|e| Error::Engine(e.to_string()))?;
        let waiting = self.take_warm();
        let config = NativeConfig {
            timeout,
            output_cap,
            ..(*self.config).clone()
        };
        Ok(run::execute(&config, program, waiting).await)
    }

    /// Launchers started ahead and waiting for a call.
    pub fn ready_launchers(&self) -> usize {
        self.warm
            .ready
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .len()
    }

    /// A launcher started ahead, if one is ready; and, from the second call on, a new
    /// one started for a later call (up to one per slot), while this call runs.
    fn take_warm(&self) -> Option<run::Waiting> {
        let launcher = self.config.launcher.as_ref()?;
        let mut ready = self
            .warm
            .ready
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut taken = None;
        while let Some(mut waiting) = ready.pop() {
            if waiting.alive() {
                taken = Some(waiting);
                break;
            }
        }
        let earlier = self
            .warm
            .calls
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if earlier > 0 && ready.len() < self.config.max_concurrency.max(1) {
            match run::Waiting::start(&self.config, launcher) {
                Ok(waiting) => ready.push(waiting),
                Err(e) => tracing::debug!("could not start a launcher ahead: {e}"),
            }
        }
        taken
    }

    /// The protections the launcher can apply here (probed once by confining a no-op
    /// program); empty without a launcher.
    pub async fn isolation(&self) -> Vec<String> {
        let config = self.config.clone();
        self.probe
            .get_or_init(|| async move { run::probe(&config).await })
            .await
            .clone()
    }

    /// The directory of skill `name`.
    pub fn skill_dir(&self, name: &str) -> PathBuf {
        self.skills_root.join(name)
    }

    /// The skills root.
    pub fn root(&self) -> &Path {
        &self.skills_root
    }
}
