//! Confinement of a native script on Linux, applied by a launcher process to itself just
//! before it becomes Node (`exec`), so no unsafe code runs between fork and exec:
//!
//! - Landlock: the workspace read-write; the system's program and library directories,
//!   the skill's own directory and Node read-only; nothing else (the host's data
//!   directory, home, other temp files are invisible); of `/proc` only the script's own
//!   entry and a few system-wide files (not the host's environment, memory map or
//!   command line); TCP connect and bind denied where the kernel supports network rules;
//!   signals to processes outside the sandbox and connections to abstract Unix sockets
//!   created outside it denied where the kernel supports scopes (Landlock ABI 6, Linux
//!   6.12);
//! - no new privileges (set-uid binaries cannot raise them);
//! - rlimits: no core dumps, files written at most [`MAX_FILE_BYTES`], CPU time bounded,
//!   at most [`MAX_USER_PROCESSES`] processes.
//!
//! The launcher reports what it could enforce on stderr's first line, prefixed with
//! [`STATUS_PREFIX`]; the sandbox strips it and lists the protections in the result.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;

use landlock::{
    ABI, Access, AccessFs, AccessNet, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus,
    Scope, path_beneath_rules,
};

/// Marks the launcher's status line on stderr.
pub const STATUS_PREFIX: &str = "\u{1}evo-sandbox:";
/// Largest file a script may write: enough for real work, not enough to fill a disk.
pub const MAX_FILE_BYTES: u64 = 1 << 30;
/// Processes the user may have while a script runs (`RLIMIT_NPROC` counts all of the
/// user's processes, not just the script's): high enough for a desktop session, low
/// enough that a fork bomb stops. Not enforced for root.
pub const MAX_USER_PROCESSES: u64 = 4096;
/// Directories every Node process needs to read (program, libraries, certificates,
/// `/dev/null`, its own `/proc` entry and the system-wide `/proc` files libuv reads).
/// Not the whole of `/proc`: another process's `environ`, `maps` and `cmdline` (the
/// host's API keys among them) would be readable.
pub const SYSTEM_READ_DIRS: [&str; 13] = [
    "/usr",
    "/lib",
    "/lib64",
    "/bin",
    "/etc",
    "/dev",
    "/sys",
    "/proc/self",
    "/proc/cpuinfo",
    "/proc/meminfo",
    "/proc/stat",
    "/proc/uptime",
    "/proc/sys",
];

/// Device files that may be written: sinks and sources with no data behind them.
pub const WRITABLE_DEVICES: [&str; 3] = ["/dev/null", "/dev/zero", "/dev/full"];

/// What the launcher is told.
#[derive(Debug, Clone)]
pub struct Spec {
    /// The only writable directory.
    pub workspace: PathBuf,
    /// Extra read-only directories (the skill's directory, Node's installation).
    pub read_only: Vec<PathBuf>,
    /// CPU seconds the script may use.
    pub cpu_seconds: u64,
}

/// Confines the current process as `spec` says, reports on stderr, and replaces the
/// process with `program args`. Returns only if the `exec` failed.
pub fn confine_and_exec(spec: &Spec, program: &OsString, args: &[OsString]) -> std::io::Error {
    let mut applied: Vec<&str> = Vec::new();
    match landlock(spec) {
        Ok(RulesetStatus::FullyEnforced) => applied.push("landlock-full"),
        Ok(RulesetStatus::PartiallyEnforced) => applied.push("landlock-partial"),
        Ok(RulesetStatus::NotEnforced) => {}
        Err(e) => eprintln!("evo-sandbox: landlock failed: {e}"),
    }
    // A second layer, so that a kernel without scopes still reports the file-system
    // and network rules as fully enforced.
    match landlock_scopes() {
        Ok(RulesetStatus::FullyEnforced) => applied.push("landlock-scoped"),
        Ok(_) => {}
        Err(e) => eprintln!("evo-sandbox: landlock scopes failed: {e}"),
    }
    if rustix::thread::set_no_new_privs(true).is_ok() {
        applied.push("no-new-privileges");
    }
    let limits = [
        (rustix::process::Resource::Core, 0),
        (rustix::process::Resource::Fsize, MAX_FILE_BYTES),
        (rustix::process::Resource::Cpu, spec.cpu_seconds),
        (rustix::process::Resource::Nproc, MAX_USER_PROCESSES),
    ];
    let mut all_limits = true;
    for (resource, value) in limits {
        let limit = rustix::process::Rlimit {
            current: Some(value),
            maximum: Some(value),
        };
        all_limits &= rustix::process::setrlimit(resource, limit).is_ok();
    }
    if all_limits {
        applied.push("rlimits");
    }
    eprintln!("{STATUS_PREFIX} {}", applied.join(" "));
    std::process::Command::new(program).args(args).exec()
}

fn landlock(spec: &Spec) -> Result<RulesetStatus, landlock::RulesetError> {
    let abi = ABI::V5;
    let mut read: Vec<PathBuf> = SYSTEM_READ_DIRS.iter().map(PathBuf::from).collect();
    read.extend(spec.read_only.iter().cloned());
    let status = Ruleset::default()
        .handle_access(AccessFs::from_all(abi))?
        .handle_access(AccessNet::from_all(abi))?
        .create()?
        .add_rules(path_beneath_rules(&read, AccessFs::from_read(abi)))?
        .add_rules(path_beneath_rules(
            [&spec.workspace],
            AccessFs::from_all(abi),
        ))?
        // Programs open these for writing as a matter of course (git does).
        .add_rules(path_beneath_rules(
            WRITABLE_DEVICES,
            AccessFs::from_all(abi),
        ))?
        .restrict_self()?;
    Ok(status.ruleset)
}

/// Signals to processes outside the sandbox and connections to abstract Unix sockets
/// created outside it are denied (Landlock ABI 6, Linux 6.12).
fn landlock_scopes() -> Result<RulesetStatus, landlock::RulesetError> {
    let status = Ruleset::default()
        .scope(Scope::from_all(ABI::V6))?
        .create()?
        .restrict_self()?;
    Ok(status.ruleset)
}

/// Splits the launcher's status line off `stderr`: `(protections, the rest)`.
pub fn take_status(stderr: &str) -> (Vec<String>, String) {
    match stderr.split_once('\n') {
        Some((first, rest)) if first.starts_with(STATUS_PREFIX) => (
            first[STATUS_PREFIX.len()..]
                .split_whitespace()
                .map(str::to_owned)
                .collect(),
            rest.to_owned(),
        ),
        _ => (Vec::new(), stderr.to_owned()),
    }
}
