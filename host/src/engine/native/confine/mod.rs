//! Confinement of a native script on Linux, applied by a launcher process (the `evo`
//! binary's hidden `__native-exec`) to itself just before it becomes Node (`exec`), so no
//! unsafe code runs between the host's fork and exec. Layers, outermost first:
//!
//! - a cgroup made by the host for the call ([`super::cgroup`]), joined first so that
//!   everything the script starts is counted and killed with it;
//! - namespaces and a private root ([`namespaces`]): the script is PID 1 of its own PID
//!   namespace (when it ends, everything it started is killed), sees only the system's
//!   programs and libraries, its own directory and its workspace, has its own `/proc`,
//!   `/tmp` and `/dev`, and no network;
//! - no new privileges, an empty capability bounding set;
//! - Landlock: the workspace read-write; the system's program and library directories,
//!   the skill's own directory and Node read-only; of `/proc` only the script's own
//!   entry and a few system-wide files; TCP connect and bind denied where the kernel
//!   supports network rules; signals to processes outside the sandbox and connections to
//!   abstract Unix sockets created outside it denied where the kernel supports scopes
//!   (Landlock ABI 6, Linux 6.12). Without namespaces this is the file-system wall;
//!   with them, a second one;
//! - a seccomp filter (`confine/seccomp.rs`);
//! - rlimits: no core dumps, files written at most [`MAX_FILE_BYTES`], CPU time bounded,
//!   at most [`MAX_USER_PROCESSES`] processes.
//!
//! Each layer the kernel refuses is left out, not faked: the launcher reports what it
//! could enforce on stderr's first line, prefixed with [`STATUS_PREFIX`]; the sandbox
//! strips it and lists the protections in the result (`evo doctor` shows the same list).

pub mod launcher;
pub mod namespaces;
mod seccomp;

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

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
    /// `cgroup.procs` files of the call's cgroups, joined before anything else.
    pub cgroups: Vec<PathBuf>,
    /// Which of the optional layers to apply (all by default; fewer only to cost each
    /// one in the benchmarks).
    pub layers: Layers,
}

/// The job of a launcher started ahead of time (`evo __native-wait --cgroup …`): it
/// does everything that needs no job at once — joining its call's cgroups (the slow
/// part of starting a sandbox), entering the namespaces, preparing the root ([`Prepared`])
/// — and then waits for this message on stdin, ahead of the script's own input. Paths and
/// arguments travel as bytes, so any file name works.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Job {
    /// The only writable directory.
    pub workspace: Vec<u8>,
    /// Extra read-only directories.
    pub read_only: Vec<Vec<u8>>,
    /// CPU seconds the script may use.
    pub cpu_seconds: u64,
    /// The program and its arguments.
    pub program: Vec<Vec<u8>>,
}

impl Job {
    /// The message: the JSON's length (4 bytes, little-endian), then the JSON.
    pub fn encode(&self) -> Vec<u8> {
        let json = serde_json::to_vec(self).unwrap_or_default();
        let mut message = u32::try_from(json.len())
            .unwrap_or(u32::MAX)
            .to_le_bytes()
            .to_vec();
        message.extend(json);
        message
    }

    /// Reads one message from stdin without reading past it (the rest is the script's).
    pub fn read_from_stdin() -> std::io::Result<Self> {
        let mut length = [0_u8; 4];
        read_exactly(&mut length)?;
        let mut json = vec![0_u8; u32::from_le_bytes(length) as usize];
        read_exactly(&mut json)?;
        serde_json::from_slice(&json).map_err(std::io::Error::other)
    }

    /// Completes `prepared` with this job and becomes its program; returns only if
    /// something failed.
    pub fn run(self, prepared: Prepared) -> std::io::Error {
        use std::os::unix::ffi::OsStringExt as _;
        let path = |bytes: Vec<u8>| PathBuf::from(OsString::from_vec(bytes));
        let workspace = path(self.workspace);
        let read_only: Vec<PathBuf> = self.read_only.into_iter().map(path).collect();
        let program: Vec<OsString> = self.program.into_iter().map(OsString::from_vec).collect();
        let Some((first, rest)) = program.split_first() else {
            return std::io::Error::other("the sandbox's job names no program");
        };
        let error = prepared.finish(&workspace, &read_only, self.cpu_seconds, first, rest);
        std::io::Error::other(format!("{}: {error}", first.to_string_lossy()))
    }
}

/// Fills `buffer` from stdin with unbuffered reads.
fn read_exactly(buffer: &mut [u8]) -> std::io::Result<()> {
    let mut filled = 0;
    while filled < buffer.len() {
        match rustix::io::read(std::io::stdin(), &mut buffer[filled..]) {
            Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => filled += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// Moves this process into every cgroup whose `cgroup.procs` is listed; whether all
/// took it.
pub fn join_cgroups(procs: &[PathBuf]) -> bool {
    !procs.is_empty() && procs.iter().all(|procs| join_cgroup(procs).is_ok())
}

/// The layers that can be left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layers {
    /// Namespaces and the private root.
    pub namespaces: bool,
    /// Landlock's rules and scopes.
    pub landlock: bool,
    /// The seccomp filter.
    pub seccomp: bool,
}

impl Default for Layers {
    fn default() -> Self {
        Self {
            namespaces: true,
            landlock: true,
            seccomp: true,
        }
    }
}

impl std::str::FromStr for Layers {
    type Err = String;

    /// A comma-separated list of `namespaces`, `landlock`, `seccomp`, or `none`.
    fn from_str(list: &str) -> Result<Self, String> {
        let mut layers = Self {
            namespaces: false,
            landlock: false,
            seccomp: false,
        };
        for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            match name {
                "namespaces" => layers.namespaces = true,
                "landlock" => layers.landlock = true,
                "seccomp" => layers.seccomp = true,
                "none" => {}
                other => {
                    return Err(format!(
                        "unknown layer `{other}`: use namespaces, landlock, seccomp or none"
                    ));
                }
            }
        }
        Ok(layers)
    }
}

/// Confines the current process as `spec` says, reports on stderr, and replaces the
/// process with `program args`. Returns only if the `exec` failed.
pub fn confine_and_exec(spec: &Spec, program: &OsString, args: &[OsString]) -> std::io::Error {
    // Canonical paths of the host's view, taken before the view changes.
    let workspace = spec
        .workspace
        .canonicalize()
        .unwrap_or_else(|_| spec.workspace.clone());
    let read_only: Vec<PathBuf> = spec
        .read_only
        .iter()
        .filter_map(|dir| dir.canonicalize().ok())
        .collect();
    match Prepared::new(&spec.cgroups, spec.layers) {
        Ok(prepared) => prepared.finish(&workspace, &read_only, spec.cpu_seconds, program, args),
        Err(e) => e,
    }
}

/// A launcher that waits for its job (the `evo` binary's hidden `__native-wait`): joins
/// the `cgroups` and confines itself first, while no call is waiting, then reads the job
/// from stdin and runs it. Returns only if that fails, with why.
pub fn wait_for_job(cgroups: &[PathBuf]) -> std::io::Error {
    match Prepared::new(cgroups, Layers::default()) {
        Ok(prepared) => match Job::read_from_stdin() {
            Ok(job) => job.run(prepared),
            Err(e) => std::io::Error::other(format!("the sandbox got no job: {e}")),
        },
        Err(e) => e,
    }
}

/// The half of the confinement that needs no job: the launcher dies with the host, has
/// joined its cgroups, entered its namespaces (it is PID 1 now) and built the part of
/// the private root every call shares. A launcher started ahead does this while it
/// waits; [`Prepared::finish`] does the rest when the job comes.
#[derive(Debug)]
pub struct Prepared {
    applied: Vec<&'static str>,
    namespaced: bool,
    layers: Layers,
}

impl Prepared {
    /// Joins `cgroups` and, with `layers.namespaces`, enters the namespaces and prepares
    /// the root. A kernel refusing namespaces is not an error (the layer is left out); a
    /// failure after entering them is.
    pub fn new(cgroups: &[PathBuf], layers: Layers) -> std::io::Result<Self> {
        // The launcher dies with the host (a kill -9 included), and the script with it.
        // (The signal follows the host *thread* that spawned it: the sandbox spawns
        // from async tasks, whose runtime threads live as long as the host.)
        let _ =
            rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL));
        let mut applied = Vec::new();
        if join_cgroups(cgroups) {
            applied.push("cgroup");
        }
        let entered = if layers.namespaces {
            namespaces::enter().map_err(|e| {
                std::io::Error::other(format!("the sandbox's namespaces failed: {e}"))
            })?
        } else {
            false
        };
        if entered {
            applied.push("namespaces");
            namespaces::prepare_root().map_err(|e| {
                std::io::Error::other(format!(
                    "the sandbox's private file-system view could not be built: {e}"
                ))
            })?;
        }
        Ok(Self {
            applied,
            namespaced: entered,
            layers,
        })
    }

    /// Completes the confinement for one job — `workspace` and `read_only` absolute and
    /// canonical in the host's view — reports on stderr, and replaces the process with
    /// `program args`. Returns only if something failed.
    pub fn finish(
        self,
        workspace: &Path,
        read_only: &[PathBuf],
        cpu_seconds: u64,
        program: &OsString,
        args: &[OsString],
    ) -> std::io::Error {
        let mut applied = self.applied;
        if self.namespaced {
            if let Err(e) = namespaces::finish_root(workspace, read_only) {
                return std::io::Error::other(format!(
                    "the sandbox's private file-system view could not be built: {e}"
                ));
            }
            applied.push("private-root");
        } else if let Err(e) = std::env::set_current_dir(workspace) {
            return std::io::Error::other(format!(
                "the workspace {} is not there: {e}",
                workspace.display()
            ));
        }
        if rustix::thread::set_no_new_privs(true).is_ok() {
            applied.push("no-new-privileges");
        }
        drop_capability_bounding_set();
        if self.layers.landlock {
            match landlock(workspace, read_only, self.namespaced) {
                Ok(RulesetStatus::FullyEnforced) => applied.push("landlock-full"),
                Ok(RulesetStatus::PartiallyEnforced) => applied.push("landlock-partial"),
                Ok(RulesetStatus::NotEnforced) => {}
                Err(e) => eprintln!("evo-sandbox: landlock failed: {e}"),
            }
            // A second layer, so that a kernel without scopes still reports the
            // file-system and network rules as fully enforced.
            match landlock_scopes() {
                Ok(RulesetStatus::FullyEnforced) => applied.push("landlock-scoped"),
                Ok(_) => {}
                Err(e) => eprintln!("evo-sandbox: landlock scopes failed: {e}"),
            }
        }
        let limits = [
            (rustix::process::Resource::Core, 0),
            (rustix::process::Resource::Fsize, MAX_FILE_BYTES),
            (rustix::process::Resource::Cpu, cpu_seconds),
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
        // Last: the filter refuses the calls the layers above are built with.
        if self.layers.seccomp {
            match seccomp::install() {
                Ok(()) => applied.push("seccomp"),
                Err(e) => eprintln!("evo-sandbox: seccomp failed: {e}"),
            }
        }
        eprintln!("{STATUS_PREFIX} {}", applied.join(" "));
        std::process::Command::new(program).args(args).exec()
    }
}

/// Moves this process into the cgroup whose `cgroup.procs` is `procs`.
fn join_cgroup(procs: &Path) -> std::io::Result<()> {
    std::fs::write(procs, std::process::id().to_string())
}

/// Empties the capability bounding set, so nothing this process execs can gain a
/// capability (the namespace's root user included). Fails quietly without the right to.
#[allow(unsafe_code, reason = "PR_CAPBSET_DROP has no safe wrapper")]
fn drop_capability_bounding_set() {
    for capability in 0..=63 {
        // SAFETY: a plain prctl; EINVAL past the last capability is ignored.
        unsafe {
            libc::prctl(libc::PR_CAPBSET_DROP, capability, 0, 0, 0);
        }
    }
}

/// The file-system and network rules. In a private root, `/proc` is the sandbox's own
/// (its PID namespace holds only the script and its children), so all of it is readable.
fn landlock(
    workspace: &Path,
    read_only: &[PathBuf],
    private_root: bool,
) -> Result<RulesetStatus, landlock::RulesetError> {
    let abi = ABI::V5;
    let own_proc = private_root.then_some("/proc");
    // Only what exists in this view (a private root has no `/sys`).
    let read: Vec<PathBuf> = SYSTEM_READ_DIRS
        .iter()
        .copied()
        .chain(own_proc)
        .map(PathBuf::from)
        .chain(read_only.iter().cloned())
        .filter(|path| path.exists())
        .collect();
    let devices: Vec<&str> = WRITABLE_DEVICES
        .into_iter()
        .filter(|device| Path::new(device).exists())
        .collect();
    // In a private root, `/tmp` is the sandbox's own size-capped tmpfs: compilers and
    // linkers write their temporary files there. Without one it is the host's, and stays
    // closed.
    let writable: Vec<&Path> = std::iter::once(workspace)
        .chain(private_root.then_some(Path::new("/tmp")))
        .collect();
    let status = Ruleset::default()
        .handle_access(AccessFs::from_all(abi))?
        .handle_access(AccessNet::from_all(abi))?
        .create()?
        .add_rules(path_beneath_rules(&read, AccessFs::from_read(abi)))?
        .add_rules(path_beneath_rules(writable, AccessFs::from_all(abi)))?
        // Programs open these for writing as a matter of course (git does).
        .add_rules(path_beneath_rules(devices, AccessFs::from_all(abi)))?
        .restrict_self()?;
    Ok(status.ruleset)
}

/// Signals to processes outside the sandbox and connections to abstract Unix sockets
/// created outside it are denied (Landlock ABI 6, Linux 6.12).
///
/// Every Landlock layer denies linking or renaming a file into another directory
/// (`REFER`) unless it grants it, even one that handles no file access: this layer grants
/// it everywhere, so the first layer's rules alone decide. Without that, `ln` and
/// rustc's hard-linked outputs fail with `EXDEV` inside the workspace.
fn landlock_scopes() -> Result<RulesetStatus, landlock::RulesetError> {
    let status = Ruleset::default()
        .handle_access(AccessFs::Refer)?
        .scope(Scope::from_all(ABI::V6))?
        .create()?
        .add_rules(path_beneath_rules(["/"], AccessFs::Refer))?
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
