//! Namespaces and a private root, in the style of bubblewrap (written here on `rustix`
//! so that the `evo` binary needs no set-uid helper and no package on the machine).
//!
//! The launcher, still single-threaded, unshares user, mount, PID, network, IPC, UTS and
//! cgroup namespaces in one call, maps its user to [`SANDBOX_ID`] inside, and forks. The
//! child is PID 1 of the new PID namespace: when it ends, however it ends, the kernel
//! kills every process left in the namespace (`setsid` and double-forked children
//! included). The parent stays outside as a supervisor: it waits for the child and exits
//! the same way, and dies with the host (`PR_SET_PDEATHSIG`), taking the child with it.
//!
//! The child builds the script's whole view of the file system on a fresh tmpfs and
//! pivots into it:
//!
//! - read-only: the system's program and library directories ([`SYSTEM_DIRS`]), a few
//!   files of `/etc` the loader and TLS need ([`ETC_ENTRIES`]; not `passwd`, `shadow`
//!   or anything naming the machine's users), and the extra read-only directories of the
//!   spec (the skill's own directory, Node's installation), each at its own path;
//! - read-write: the workspace, at its own path, and a private `/tmp` (a size-capped
//!   tmpfs);
//! - `/proc` of the new PID namespace (only the sandbox's processes), a `/dev` with
//!   `null`, `zero`, `full`, `random` and `urandom` only;
//! - `/etc/passwd` and `/etc/group` naming only the sandbox user, host name
//!   `evo-sandbox`.
//!
//! The network namespace has only a loopback interface, down: no socket of any family
//! reaches a listener outside, and abstract Unix sockets are per namespace.
//!
//! `fork` and the supervisor's `waitpid` have no safe wrapper that does not start a
//! thread or a runtime; they are the only unsafe code here, in a process with one thread.
#![allow(
    unsafe_code,
    reason = "fork and waitpid in the single-threaded launcher"
)]

use std::ffi::CString;
use std::io;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use rustix::mount::{MountFlags, MountPropagationFlags, UnmountFlags};
use rustix::thread::UnshareFlags;

/// The user and group id a script has inside its namespace (not root: `exec` drops every
/// capability the launcher held there).
pub const SANDBOX_ID: u32 = 1000;

/// Top-level directories of programs and libraries, bound read-only when they are
/// directories and re-created as the same symbolic link when they are links (merged
/// `/usr` systems).
pub const SYSTEM_DIRS: [&str; 7] = [
    "/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32",
];

/// What of `/etc` a script sees: the dynamic loader's cache, time zone, certificates,
/// and the alternatives links some distributions route interpreters through.
pub const ETC_ENTRIES: [&str; 8] = [
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/alternatives",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/nsswitch.conf",
];

/// Device files a script may open: sinks and sources with no data behind them.
const DEVICES: [&str; 5] = ["null", "zero", "full", "random", "urandom"];

/// Size of the private `/tmp`: it lives in memory (and counts against the cgroup's).
const TMP_SIZE: &str = "size=128m";

/// Where the old root is while the new one is built.
const OLD: &str = "/oldroot";
/// Where the new root is built.
const NEW: &str = "/newroot";

/// Enters new namespaces and forks. Returns `Ok(true)` in the child (PID 1 of the new PID
/// namespace); the parent never returns. `Ok(false)` when the kernel refuses
/// unprivileged namespaces (nothing has changed then); `Err` when a later step failed.
pub(super) fn enter() -> io::Result<bool> {
    let uid = rustix::process::getuid().as_raw();
    let gid = rustix::process::getgid().as_raw();
    let flags = UnshareFlags::NEWUSER
        | UnshareFlags::NEWNS
        | UnshareFlags::NEWPID
        | UnshareFlags::NEWNET
        | UnshareFlags::NEWIPC
        | UnshareFlags::NEWUTS
        | UnshareFlags::NEWCGROUP;
    // SAFETY: the launcher is single-threaded here (it runs before any runtime or thread
    // exists) and `flags` has no `FILES`, so no thread can see a changed table.
    if unsafe { rustix::thread::unshare_unsafe(flags) }.is_err() {
        return Ok(false);
    }
    std::fs::write("/proc/self/setgroups", "deny")?;
    std::fs::write("/proc/self/uid_map", format!("{SANDBOX_ID} {uid} 1"))?;
    std::fs::write("/proc/self/gid_map", format!("{SANDBOX_ID} {gid} 1"))?;

    // SAFETY: single-threaded (see above), so the child may run any code after `fork`.
    match unsafe { libc::fork() } {
        -1 => Err(io::Error::last_os_error()),
        0 => {
            // PID 1 dies with the supervisor, and with it the whole namespace. (Its
            // parent is outside the namespace, so `getppid` cannot tell whether the
            // supervisor died before this; the host's group kill and the cgroup cover
            // that instant.)
            rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))?;
            Ok(true)
        }
        child => supervise(child),
    }
}

/// Waits for `child` and ends the same way: the same exit code, or killed by the same
/// signal.
fn supervise(child: libc::pid_t) -> ! {
    let mut status = 0;
    loop {
        // SAFETY: plain system call on our own child.
        let waited = unsafe { libc::waitpid(child, &mut status, 0) };
        if waited == child {
            break;
        }
        if io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            std::process::exit(127);
        }
    }
    if libc::WIFEXITED(status) {
        std::process::exit(libc::WEXITSTATUS(status));
    }
    let signal = libc::WTERMSIG(status);
    // SAFETY: restoring the default action and raising the signal on ourselves.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        libc::raise(signal);
    }
    std::process::exit(128 + signal);
}

/// Builds the part of the private root every call shares (everything but the skill's
/// own directories and the workspace), beside the old root; [`finish_root`] completes
/// it and pivots into it.
pub(super) fn prepare_root() -> io::Result<()> {
    rustix::mount::mount_change(
        "/",
        MountPropagationFlags::PRIVATE | MountPropagationFlags::REC,
    )?;
    // A scratch tmpfs holding both roots, so the old one stays reachable while the new
    // one is filled.
    mount_tmpfs("/tmp", "mode=0755,size=1m")?;
    std::fs::create_dir("/tmp/newroot")?;
    std::fs::create_dir("/tmp/oldroot")?;
    rustix::process::pivot_root("/tmp", "/tmp/oldroot")?;
    std::env::set_current_dir("/")?;
    mount_tmpfs(NEW, "mode=0755,size=4m")?;

    // First the file systems others are bound under.
    let tmp = inside("/tmp");
    std::fs::create_dir(&tmp)?;
    mount_tmpfs(&tmp, &format!("mode=1777,{TMP_SIZE}"))?;
    let proc = inside("/proc");
    std::fs::create_dir(&proc)?;
    let hardened = MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC;
    rustix::mount::mount("proc", &proc, "proc", hardened, None)?;
    devices()?;

    for dir in SYSTEM_DIRS {
        let source = outside(Path::new(dir));
        match std::fs::symlink_metadata(&source) {
            Ok(meta) if meta.file_type().is_symlink() => {
                symlink(std::fs::read_link(&source)?, inside(dir))?;
            }
            Ok(meta) if meta.is_dir() => bind_read_only(Path::new(dir))?,
            _ => {}
        }
    }
    for entry in ETC_ENTRIES {
        if outside(Path::new(entry)).exists() {
            bind_read_only(Path::new(entry))?;
        }
    }
    users()
}

/// Completes the root [`prepare_root`] began with `read_only` and `workspace` (absolute
/// and canonical in the host's view) and pivots into it; the working directory is
/// `workspace` afterwards.
pub(super) fn finish_root(workspace: &Path, read_only: &[PathBuf]) -> io::Result<()> {
    for dir in read_only {
        // Already visible under a system directory, or the whole tree (never bound).
        if dir == Path::new("/") || SYSTEM_DIRS.iter().any(|d| dir.starts_with(d)) {
            continue;
        }
        bind_read_only(dir)?;
    }
    let workspace_inside = inside(workspace);
    std::fs::create_dir_all(&workspace_inside)?;
    rustix::mount::mount_bind(outside(workspace), &workspace_inside)?;

    // Into the new root; the old one is detached and gone from this namespace.
    std::env::set_current_dir(NEW)?;
    rustix::process::pivot_root(".", ".")?;
    rustix::mount::unmount(".", UnmountFlags::DETACH)?;
    std::env::set_current_dir("/")?;
    rustix::mount::mount_remount(
        "/",
        MountFlags::BIND | MountFlags::RDONLY | MountFlags::NOSUID | MountFlags::NODEV,
        c"",
    )?;
    rustix::system::sethostname(b"evo-sandbox")?;
    std::env::set_current_dir(workspace)
}

/// `path` of the old root, as seen while both roots are mounted.
fn outside(path: &Path) -> PathBuf {
    Path::new(OLD).join(path.strip_prefix("/").unwrap_or(path))
}

/// `path` of the new root, as seen while both roots are mounted.
fn inside(path: impl AsRef<Path>) -> PathBuf {
    let path = path.as_ref();
    Path::new(NEW).join(path.strip_prefix("/").unwrap_or(path))
}

fn mount_tmpfs(target: impl AsRef<Path>, options: &str) -> io::Result<()> {
    let options = CString::new(options).map_err(io::Error::other)?;
    rustix::mount::mount(
        "tmpfs",
        target.as_ref(),
        "tmpfs",
        MountFlags::NOSUID | MountFlags::NODEV,
        Some(options.as_c_str()),
    )?;
    Ok(())
}

/// Binds `path` of the old root at the same path of the new one, read-only, keeping the
/// flags the original mount has (a user namespace may not clear them).
fn bind_read_only(path: &Path) -> io::Result<()> {
    let source = outside(path);
    let target = inside(path);
    if source.is_dir() {
        std::fs::create_dir_all(&target)?;
    } else {
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::File::create(&target)?;
    }
    rustix::mount::mount_bind_recursive(&source, &target)?;
    let kept = rustix::fs::statvfs(&source)?.f_flag;
    let mut flags = MountFlags::BIND | MountFlags::RDONLY | MountFlags::NOSUID | MountFlags::NODEV;
    for (has, flag) in [
        (rustix::fs::StatVfsMountFlags::NOEXEC, MountFlags::NOEXEC),
        (rustix::fs::StatVfsMountFlags::NOATIME, MountFlags::NOATIME),
        (
            rustix::fs::StatVfsMountFlags::NODIRATIME,
            MountFlags::NODIRATIME,
        ),
        (
            rustix::fs::StatVfsMountFlags::RELATIME,
            MountFlags::RELATIME,
        ),
    ] {
        if kept.contains(has) {
            flags |= flag;
        }
    }
    rustix::mount::mount_remount(&target, flags, c"")?;
    Ok(())
}

/// A `/dev` with the harmless devices and the usual links.
fn devices() -> io::Result<()> {
    let dev = inside("/dev");
    std::fs::create_dir(&dev)?;
    let options = CString::new("mode=0755,size=64k").map_err(io::Error::other)?;
    rustix::mount::mount(
        "tmpfs",
        &dev,
        "tmpfs",
        MountFlags::NOSUID | MountFlags::NOEXEC,
        Some(options.as_c_str()),
    )?;
    for device in DEVICES {
        let target = dev.join(device);
        std::fs::File::create(&target)?;
        rustix::mount::mount_bind(outside(&Path::new("/dev").join(device)), &target)?;
    }
    for (name, to) in [
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ] {
        symlink(to, dev.join(name))?;
    }
    std::fs::create_dir(dev.join("shm"))?;
    mount_tmpfs(dev.join("shm"), "mode=1777,size=16m")
}

/// `/etc/passwd` and `/etc/group` with the sandbox user only (programs that look
/// themselves up find a name and a home, the workspace's parent is not it).
fn users() -> io::Result<()> {
    let etc = inside("/etc");
    std::fs::create_dir_all(&etc)?;
    std::fs::write(
        etc.join("passwd"),
        format!("sandbox:x:{SANDBOX_ID}:{SANDBOX_ID}:evo sandbox:/tmp:/bin/sh\n"),
    )?;
    std::fs::write(etc.join("group"), format!("sandbox:x:{SANDBOX_ID}:\n"))?;
    std::fs::write(etc.join("hostname"), "evo-sandbox\n")
}
