//! One execution of a script: spawn, feed, watch, kill, reap, clean up.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

#[cfg(feature = "internals")]
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, Command};

use super::cgroup::CallCgroup;
use super::{ExecutionResult, NativeConfig, NativeFailure, confine};

/// Marker appended to output cut at the cap.
pub const TRUNCATED: &str = "[TRUNCATED]";

/// What Node prints when V8's heap limit is hit.
const OOM_MARKERS: [&str; 2] = ["JavaScript heap out of memory", "Reached heap limit"];

/// Protections every execution gets.
const PROTECTIONS: [&str; 5] = [
    "env-scrubbed",
    "fresh-workspace",
    "process-group-kill",
    "timeout",
    "output-cap",
];

/// What to run: `interpreter [V8 flag] script args…`, with `stdin`.
#[derive(Debug, Clone)]
pub struct Program<'a> {
    /// The interpreter (`node`, `python3`, `bash`, `sh`), looked up on `PATH` when it
    /// has no directory.
    pub interpreter: &'a Path,
    /// The script (`None` when `args` say what to run, as `bash -c …`).
    pub script: Option<&'a Path>,
    /// Its arguments.
    pub args: &'a [String],
    /// The skill's directory, visible read-only.
    pub skill_dir: &'a Path,
    /// The one writable directory, which it starts in: a fresh temporary directory,
    /// removed afterwards, when `None`.
    pub workspace: Option<&'a Path>,
    /// What it reads on stdin.
    pub stdin: Vec<u8>,
    /// More directories visible read-only, at their own paths (a toolchain).
    pub read_only: &'a [PathBuf],
}

/// Runs `script` (a skill's `scripts/execute.js`) with `input` on stdin under `config`'s
/// limits. Never fails: every failure is a result with `success: false` and an `error`.
#[cfg(feature = "internals")]
pub async fn execute_script(
    config: &NativeConfig,
    script: &Path,
    input: &Value,
) -> ExecutionResult {
    let skill_dir = script.parent().and_then(Path::parent).unwrap_or(script);
    execute(
        config,
        Program {
            interpreter: &config.node,
            script: Some(script),
            args: &[],
            skill_dir,
            workspace: None,
            stdin: input.to_string().into_bytes(),
            read_only: &[],
        },
        None,
    )
    .await
}

/// A launcher started ahead of its call (`evo-launcher __native-wait`): it has joined (or is
/// joining) its call's cgroup and waits for its [`confine::Job`] on stdin.
#[derive(Debug)]
pub struct Waiting {
    child: Child,
    cgroup: Option<CallCgroup>,
}

impl Waiting {
    /// Starts one: makes the call's cgroup and the launcher, which joins it at once.
    pub fn start(config: &NativeConfig, launcher: &Path) -> std::io::Result<Self> {
        let cgroup = CallCgroup::create(config.cgroup_limits());
        let mut command = Command::new(launcher);
        command.arg(confine::launcher::WAIT);
        for procs in cgroup.iter().flat_map(CallCgroup::procs) {
            command.arg("--cgroup").arg(procs);
        }
        let child = isolated(command.current_dir("/")).spawn()?;
        Ok(Self { child, cgroup })
    }

    /// Whether it is still waiting (one that died, killed or failing to prepare, is
    /// not used: the call starts a fresh launcher, which reports why).
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

/// Runs `program` under `config`'s limits, in the same sandbox as a native skill's
/// script, through `waiting` when one was started ahead (with a launcher configured).
/// Never fails: every failure is a result with `success: false` and an `error`.
pub async fn execute(
    config: &NativeConfig,
    program: Program<'_>,
    waiting: Option<Waiting>,
) -> ExecutionResult {
    let started = Instant::now();
    let failed = |error: String, started: Instant| ExecutionResult {
        success: false,
        stdout: String::new(),
        stderr: String::new(),
        exit_code: None,
        duration: millis(started),
        error: Some(error),
        failure: Some(NativeFailure::Spawn),
        protections: base_protections(),
    };
    // The script runs from its workspace, so it is named absolutely.
    let script = program
        .script
        .map(|script| script.canonicalize().unwrap_or_else(|_| script.to_owned()));
    let workspace = match program.workspace {
        Some(dir) => Workspace::Given(dir.to_owned()),
        // Removed when dropped, whatever happens below.
        None => match tempfile::Builder::new()
            .prefix("skill-workspace-")
            .tempdir()
        {
            Ok(dir) => Workspace::Temporary(dir),
            Err(e) => {
                return failed(
                    format!("Failed to spawn process: no workspace: {e}"),
                    started,
                );
            }
        },
    };
    let interpreter = resolve(program.interpreter);
    let spawn_failed =
        |e: std::io::Error| format!("Failed to spawn process: {} ({e})", interpreter.display());
    let launched = match (&config.launcher, waiting) {
        (None, _) => None,
        (Some(_), Some(waiting)) => Some(waiting),
        (Some(launcher), None) => match Waiting::start(config, launcher) {
            Ok(waiting) => Some(waiting),
            Err(e) => return failed(spawn_failed(e), started),
        },
    };
    let cgroup = launched.as_ref().and_then(|w| w.cgroup.as_ref());
    // A cgroup caps the whole tree's memory; only without one does V8's own heap flag
    // (which costs Node its start-up snapshot) stand in for it.
    let is_node = interpreter.file_stem().is_some_and(|stem| stem == "node");
    let heap = (is_node && !cgroup.is_some_and(CallCgroup::caps_memory))
        .then(|| format!("--max-old-space-size={}", config.max_old_space_mb));
    let mut protections = base_protections();
    if heap.is_some() {
        protections.push("v8-heap-limit".into());
    }
    let cgroup_protections = cgroup.map(CallCgroup::protections).unwrap_or_default();
    let (mut child, cgroup, job) = match launched {
        None => {
            let spawned = isolated(
                Command::new(&interpreter)
                    .args(&heap)
                    .args(&script)
                    .args(program.args)
                    .current_dir(workspace.path()),
            )
            .spawn();
            match spawned {
                Ok(child) => (child, None, Vec::new()),
                Err(e) => {
                    return ExecutionResult {
                        protections,
                        ..failed(spawn_failed(e), started)
                    };
                }
            }
        }
        Some(Waiting { child, cgroup }) => {
            use std::os::unix::ffi::OsStrExt as _;
            let bytes = |p: &Path| p.as_os_str().as_bytes().to_vec();
            // The skill's own directory (its script and files) and the interpreter's
            // installation.
            // Named absolutely, like the script: the private root binds it by path, and a
            // relative one (`evo skill run ./my-skill`) would name nothing there.
            let skill_dir = program
                .skill_dir
                .canonicalize()
                .unwrap_or_else(|_| program.skill_dir.to_owned());
            let mut read_only = vec![bytes(&skill_dir)];
            if let Some(install) = interpreter.parent().and_then(Path::parent) {
                read_only.push(bytes(install));
            }
            read_only.extend(program.read_only.iter().map(|dir| bytes(dir)));
            let mut argv = vec![bytes(&interpreter)];
            argv.extend(heap.iter().map(|h| h.as_bytes().to_vec()));
            argv.extend(script.as_deref().map(bytes));
            argv.extend(program.args.iter().map(|a| a.as_bytes().to_vec()));
            let job = confine::Job {
                workspace: bytes(workspace.path()),
                read_only,
                cpu_seconds: config.timeout.as_secs() + 1,
                program: argv,
            };
            (child, cgroup, job.encode())
        }
    };
    let group = child
        .id()
        .and_then(|id| rustix::process::Pid::from_raw(id as i32));
    let kill_group = move || {
        if let Some(pid) = group {
            // ESRCH (already gone) is fine: the point is that nothing is left.
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
    };
    // Whatever ends this call early — the kernel's deadline, a cancelled run, the host
    // dropping the future — kills the whole group, not only Node (`kill_on_drop`).
    // Declared after `child`, so it runs first, while the unreaped leader still holds
    // the group's id (no risk of killing a reused one).
    let mut guard = GroupGuard(group);

    if let Some(mut stdin) = child.stdin.take() {
        let mut bytes = job;
        bytes.extend(program.stdin);
        // A script that never reads stdin must not block us: write in the background.
        tokio::spawn(async move {
            let _ = stdin.write_all(&bytes).await;
            let _ = stdin.shutdown().await;
        });
    }
    let total = Arc::new(AtomicUsize::new(0));
    let flooded = Arc::new(AtomicBool::new(false));
    let stdout = child.stdout.take().map(|s| {
        tokio::spawn(capture(
            s,
            config.output_cap,
            total.clone(),
            flooded.clone(),
            kill_group,
        ))
    });
    let stderr = child.stderr.take().map(|s| {
        tokio::spawn(capture(
            s,
            config.output_cap,
            total.clone(),
            flooded.clone(),
            kill_group,
        ))
    });

    let status = match tokio::time::timeout(config.timeout, child.wait()).await {
        Ok(status) => status.ok(),
        Err(_) => {
            kill_group();
            // Reap the child so it does not linger as a zombie.
            let _ = child.wait().await;
            guard.disarm();
            if let Some(cgroup) = cgroup {
                cgroup.remove().await;
            }
            let stdout = join(stdout).await;
            let (confined, stderr) = confine::take_status(&join(stderr).await);
            let protections = merge(protections, &cgroup_protections, confined);
            return ExecutionResult {
                success: false,
                stdout,
                stderr,
                exit_code: None,
                duration: millis(started),
                error: Some("Execution timeout".into()),
                failure: Some(NativeFailure::Timeout),
                protections,
            };
        }
    };
    // Grandchildren may still hold the pipes open; the group is done either way, and so
    // is everything in the call's cgroup (children that left the group included).
    kill_group();
    guard.disarm();
    let out_of_memory = cgroup.as_ref().is_some_and(CallCgroup::oom_killed);
    if let Some(cgroup) = cgroup {
        cgroup.remove().await;
    }
    let stdout = join(stdout).await;
    let (confined, stderr) = confine::take_status(&join(stderr).await);
    let exit_code = status.and_then(|s| s.code());
    let failure = if flooded.load(Ordering::SeqCst) {
        Some((
            NativeFailure::OutputLimit,
            format!(
                "Output size exceeded {} limit",
                size_limit(config.output_cap)
            ),
        ))
    } else if out_of_memory || OOM_MARKERS.iter().any(|m| stderr.contains(m)) {
        Some((NativeFailure::OutOfMemory, "Out of memory".into()))
    } else if exit_code == Some(0) {
        None
    } else {
        Some((
            NativeFailure::Exited,
            thrown_message(&stderr).unwrap_or_else(|| match exit_code {
                Some(code) => format!("the script exited with code {code}"),
                None => "the script was killed by a signal".into(),
            }),
        ))
    };
    let (failure, error) = failure.unzip();
    drop(workspace);
    let protections = merge(protections, &cgroup_protections, confined);
    ExecutionResult {
        success: error.is_none(),
        stdout,
        stderr,
        exit_code,
        duration: millis(started),
        error,
        failure,
        protections,
    }
}

/// Where a program runs.
enum Workspace {
    /// A directory the caller owns (the project, for `bash`).
    Given(PathBuf),
    /// A fresh one, removed when dropped.
    Temporary(tempfile::TempDir),
}

impl Workspace {
    fn path(&self) -> &Path {
        match self {
            Self::Given(dir) => dir,
            Self::Temporary(dir) => dir.path(),
        }
    }
}

/// Kills a process group when dropped, unless disarmed once the group is reaped.
struct GroupGuard(Option<rustix::process::Pid>);

impl GroupGuard {
    fn disarm(&mut self) {
        self.0 = None;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if let Some(pid) = self.0 {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
    }
}

/// The host's protections, then the cgroup's if the launcher joined it (it reports
/// `cgroup`), then the launcher's own.
fn merge(mut protections: Vec<String>, cgroup: &[String], confined: Vec<String>) -> Vec<String> {
    if confined.iter().any(|p| p == "cgroup") {
        protections.extend_from_slice(cgroup);
    }
    protections.extend(confined.into_iter().filter(|p| p != "cgroup"));
    protections
}

fn base_protections() -> Vec<String> {
    PROTECTIONS.iter().map(|p| (*p).to_owned()).collect()
}

/// `program` as an absolute path, looked up on `PATH` when it has no directory.
fn resolve(program: &Path) -> PathBuf {
    if program.components().count() > 1 {
        return program.to_owned();
    }
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        // Version managers' shims (pyenv, rbenv, asdf) are scripts that read the user's
        // home, which the sandbox does not show: the next program on PATH is the real one.
        .filter(|dir| !dir.ends_with("shims"))
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
        .and_then(|found| found.canonicalize().ok())
        .unwrap_or_else(|| program.to_owned())
}

/// What the launcher can enforce here: it confines itself and runs `true`.
pub(super) async fn probe(config: &NativeConfig) -> Vec<String> {
    let Some(launcher) = &config.launcher else {
        return Vec::new();
    };
    let Ok(workspace) = tempfile::Builder::new()
        .prefix("skill-workspace-probe-")
        .tempdir()
    else {
        return Vec::new();
    };
    let cgroup = CallCgroup::create(config.cgroup_limits());
    let output = launcher_command(launcher, workspace.path(), cgroup.as_ref())
        .arg("--cpu-seconds")
        .arg("5")
        .arg("--")
        .arg(resolve(Path::new("true")))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .output()
        .await;
    let cgroup_protections = cgroup
        .as_ref()
        .map(CallCgroup::protections)
        .unwrap_or_default();
    if let Some(cgroup) = cgroup {
        cgroup.remove().await;
    }
    match output {
        Ok(output) => {
            let confined = confine::take_status(&String::from_utf8_lossy(&output.stderr)).0;
            merge(Vec::new(), &cgroup_protections, confined)
        }
        Err(_) => Vec::new(),
    }
}

/// `launcher __native-exec --workspace W [--cgroup PROCS]…`, the rest to be added.
fn launcher_command(launcher: &Path, workspace: &Path, cgroup: Option<&CallCgroup>) -> Command {
    let mut command = Command::new(launcher);
    command
        .arg(confine::launcher::EXEC)
        .arg("--workspace")
        .arg(workspace);
    for procs in cgroup.map(CallCgroup::procs).unwrap_or_default() {
        command.arg("--cgroup").arg(procs);
    }
    command
}

fn millis(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// Reads `stream` until it ends, keeping bytes while the shared total is under `cap`;
/// at the cap, marks the run flooded and kills the group.
async fn capture(
    mut stream: impl AsyncRead + Unpin,
    cap: usize,
    total: Arc<AtomicUsize>,
    flooded: Arc<AtomicBool>,
    kill_group: impl Fn(),
) -> String {
    let mut kept = Vec::new();
    let mut buffer = vec![0_u8; 64 * 1024];
    loop {
        let n = match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let before = total.fetch_add(n, Ordering::SeqCst);
        let room = cap.saturating_sub(before);
        kept.extend_from_slice(&buffer[..n.min(room)]);
        if before + n > cap {
            if !flooded.swap(true, Ordering::SeqCst) {
                kill_group();
            }
            break;
        }
    }
    let mut text = String::from_utf8_lossy(&kept).into_owned();
    if flooded.load(Ordering::SeqCst) && total.load(Ordering::SeqCst) > cap {
        text.push_str(TRUNCATED);
    }
    text
}

async fn join(handle: Option<tokio::task::JoinHandle<String>>) -> String {
    match handle {
        Some(handle) => handle.await.unwrap_or_default(),
        None => String::new(),
    }
}

/// The message of the exception Node printed for an uncaught throw: the `Error: …` line.
fn thrown_message(stderr: &str) -> Option<String> {
    stderr.lines().find_map(|line| {
        let line = line.trim();
        let (kind, message) = line.split_once(": ")?;
        let is_error_type = kind.ends_with("Error") && kind.chars().all(char::is_alphanumeric);
        is_error_type.then(|| message.to_owned())
    })
}

/// `command` with only `PATH` in its environment, piped stdio, its own process group
/// (so a timeout kills everything the script started) and killed when dropped.
fn isolated(command: &mut Command) -> &mut Command {
    command
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
}

/// A cap in the unit it was set in: `10MB` for a native skill's, `256KB` for a `bash`
/// line's (which `/ 1 MiB` printed as `0MB`).
fn size_limit(bytes: usize) -> String {
    const MIB: usize = 1024 * 1024;
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{}MB", bytes / MIB)
    } else {
        format!("{}KB", bytes.div_ceil(1024))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_thrown_message_is_found_in_nodes_report() {
        let stderr = "/tmp/x/scripts/execute.js:2\nthrow new Error('boom: bad input');\n^\n\nError: boom: bad input\n    at Object.<anonymous> (/tmp/x/scripts/execute.js:2:7)\n";
        assert_eq!(thrown_message(stderr).as_deref(), Some("boom: bad input"));
        assert_eq!(
            thrown_message("TypeError: x is not a function\n").as_deref(),
            Some("x is not a function")
        );
        assert_eq!(thrown_message("nothing here"), None);
    }
}
