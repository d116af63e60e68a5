//! A cgroup for each native call, made by the host under its own cgroup: the memory of
//! the script's whole process tree (Buffers and children included, not only V8's heap)
//! is capped, its number of tasks is capped (a fork bomb stops there), and at the end of
//! the call everything in it is killed (`cgroup.kill`, or a signal to every member where
//! the kernel has none) before the directory is removed.
//!
//! Both cgroup versions are used as the machine has them: on a unified (v2) hierarchy
//! one directory does all three, when the host's cgroup delegates the `memory` and
//! `pids` controllers; on a hybrid machine the v1 `memory` and `pids` hierarchies cap and
//! the v2 one, even without controllers, gives `cgroup.kill`. Where the host may not
//! create cgroups (an unprivileged user without delegation) there is none, and the
//! result's protections say so.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// What a call's cgroup caps.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Memory of the whole process tree, bytes (no swap beyond it).
    pub memory_bytes: u64,
    /// Tasks (processes and threads) at once.
    pub max_tasks: u64,
    /// CPU, in percent of one core (0: no cap).
    pub cpu_percent: u64,
}

/// The CFS period the CPU cap is counted over, µs: the kernel's default.
const CPU_PERIOD_US: u64 = 100_000;
/// A call's CPU weight beside the host's own work (v2 `cpu.weight`, default 100; v1
/// `cpu.shares`, default 1024): half, so the server answering stays ahead of scripts.
const CPU_WEIGHT: (u64, u64) = (50, 512);

/// The cgroup directories of one call, removed when it ends.
#[derive(Debug)]
pub struct CallCgroup {
    /// Every directory made, to join and to remove.
    dirs: Vec<PathBuf>,
    /// Where the tree's memory is counted, and in which version's files.
    memory: Option<(PathBuf, Version)>,
    /// Whether a `pids` controller caps the tasks.
    pids: bool,
    /// Whether a `cpu` controller caps the CPU.
    cpu: bool,
    /// A v2 directory with `cgroup.kill`.
    killer: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Version {
    V1,
    V2,
}

/// The host's own cgroups, found once.
#[derive(Debug, Default)]
struct Hierarchies {
    /// The host's cgroup in the unified hierarchy.
    unified: Option<PathBuf>,
    /// The host's cgroup in the v1 `memory` hierarchy.
    memory_v1: Option<PathBuf>,
    /// The host's cgroup in the v1 `pids` hierarchy.
    pids_v1: Option<PathBuf>,
    /// The host's cgroup in the v1 `cpu` hierarchy.
    cpu_v1: Option<PathBuf>,
}

static NEXT: AtomicU64 = AtomicU64::new(0);

impl CallCgroup {
    /// Makes the call's cgroups with `limits`; `None` when the host may make none.
    pub fn create(limits: Limits) -> Option<Self> {
        let hierarchies = hierarchies();
        let name = format!(
            "evo-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let mut cgroup = Self {
            dirs: Vec::new(),
            memory: None,
            pids: false,
            cpu: false,
            killer: None,
        };
        let quota = limits.cpu_percent * CPU_PERIOD_US / 100;
        if let Some(base) = &hierarchies.unified {
            let dir = base.join(&name);
            if std::fs::create_dir(&dir).is_ok() {
                let controllers =
                    std::fs::read_to_string(dir.join("cgroup.controllers")).unwrap_or_default();
                let has = |c: &str| controllers.split_whitespace().any(|x| x == c);
                if has("memory")
                    && write(&dir, "memory.max", limits.memory_bytes)
                    && (write(&dir, "memory.swap.max", 0) || !dir.join("memory.swap.max").exists())
                {
                    cgroup.memory = Some((dir.clone(), Version::V2));
                }
                if has("pids") && write(&dir, "pids.max", limits.max_tasks) {
                    cgroup.pids = true;
                }
                if quota > 0 && has("cpu") {
                    cgroup.cpu =
                        std::fs::write(dir.join("cpu.max"), format!("{quota} {CPU_PERIOD_US}"))
                            .is_ok();
                    let _ = write(&dir, "cpu.weight", CPU_WEIGHT.0);
                }
                if dir.join("cgroup.kill").exists() {
                    cgroup.killer = Some(dir.clone());
                }
                cgroup.dirs.push(dir);
            }
        }
        if cgroup.memory.is_none()
            && let Some(base) = &hierarchies.memory_v1
        {
            let dir = base.join(&name);
            if std::fs::create_dir(&dir).is_ok() {
                if write(&dir, "memory.limit_in_bytes", limits.memory_bytes) {
                    // Absent when the kernel does not account swap; then there is none.
                    let _ = write(&dir, "memory.memsw.limit_in_bytes", limits.memory_bytes);
                    cgroup.memory = Some((dir.clone(), Version::V1));
                }
                cgroup.dirs.push(dir);
            }
        }
        if !cgroup.pids
            && let Some(base) = &hierarchies.pids_v1
        {
            let dir = base.join(&name);
            if std::fs::create_dir(&dir).is_ok() {
                cgroup.pids = write(&dir, "pids.max", limits.max_tasks);
                cgroup.dirs.push(dir);
            }
        }
        if quota > 0
            && !cgroup.cpu
            && let Some(base) = &hierarchies.cpu_v1
        {
            let dir = base.join(&name);
            if std::fs::create_dir(&dir).is_ok() {
                cgroup.cpu = write(&dir, "cpu.cfs_period_us", CPU_PERIOD_US)
                    && write(&dir, "cpu.cfs_quota_us", quota);
                let _ = write(&dir, "cpu.shares", CPU_WEIGHT.1);
                cgroup.dirs.push(dir);
            }
        }
        (!cgroup.dirs.is_empty()).then_some(cgroup)
    }

    /// The `cgroup.procs` files the script's launcher joins.
    pub fn procs(&self) -> Vec<PathBuf> {
        self.dirs.iter().map(|d| d.join("cgroup.procs")).collect()
    }

    /// Whether the tree's memory is capped.
    pub fn caps_memory(&self) -> bool {
        self.memory.is_some()
    }

    /// What this cgroup enforces, as protection names.
    pub fn protections(&self) -> Vec<String> {
        let mut names = Vec::new();
        if self.memory.is_some() {
            names.push("cgroup-memory".to_owned());
        }
        if self.pids {
            names.push("cgroup-pids".to_owned());
        }
        if self.cpu {
            names.push("cgroup-cpu".to_owned());
        }
        names.push("cgroup-kill".to_owned());
        names
    }

    /// Whether the kernel killed a member for exceeding the memory cap.
    pub fn oom_killed(&self) -> bool {
        let Some((dir, version)) = &self.memory else {
            return false;
        };
        let file = match version {
            Version::V1 => "memory.oom_control",
            Version::V2 => "memory.events",
        };
        std::fs::read_to_string(dir.join(file))
            .unwrap_or_default()
            .lines()
            .filter_map(|line| line.strip_prefix("oom_kill "))
            .any(|count| count.trim().parse::<u64>().is_ok_and(|n| n > 0))
    }

    /// Kills every member: `cgroup.kill` where there is one, else `SIGKILL` to each
    /// listed process until none is left (bounded: a member can fork only until
    /// `pids.max`).
    pub fn kill(&self) {
        if let Some(dir) = &self.killer
            && std::fs::write(dir.join("cgroup.kill"), "1").is_ok()
        {
            return;
        }
        for _ in 0..64 {
            let members = self.members();
            if members.is_empty() {
                return;
            }
            for pid in members {
                if let Some(pid) = rustix::process::Pid::from_raw(pid) {
                    let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
                }
            }
        }
    }

    /// Kills every member, waits until they are gone (at most a second), and removes the
    /// directories.
    pub async fn remove(mut self) {
        self.kill();
        for _ in 0..100 {
            if self.members().is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        self.remove_dirs();
    }

    fn members(&self) -> Vec<i32> {
        self.dirs
            .iter()
            .flat_map(|d| {
                std::fs::read_to_string(d.join("cgroup.procs"))
                    .unwrap_or_default()
                    .lines()
                    .filter_map(|l| l.trim().parse::<i32>().ok())
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    fn remove_dirs(&mut self) {
        for dir in self.dirs.drain(..) {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

impl Drop for CallCgroup {
    /// A dropped call (cancelled, timed out by its caller) still kills its members; the
    /// directories go once they are empty, here or when the next host starts.
    fn drop(&mut self) {
        if !self.dirs.is_empty() {
            self.kill();
            // Killed members leave within moments; wait for them briefly (this runs when
            // a call is dropped or the host shuts down, not on a call's path).
            for _ in 0..50 {
                if self.members().is_empty() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            self.remove_dirs();
        }
    }
}

fn write(dir: &Path, file: &str, value: u64) -> bool {
    std::fs::write(dir.join(file), value.to_string()).is_ok()
}

fn hierarchies() -> &'static Hierarchies {
    static FOUND: OnceLock<Hierarchies> = OnceLock::new();
    FOUND.get_or_init(|| {
        let (Ok(cgroups), Ok(mounts)) = (
            std::fs::read_to_string("/proc/self/cgroup"),
            std::fs::read_to_string("/proc/self/mountinfo"),
        ) else {
            return Hierarchies::default();
        };
        let found = find(&cgroups, &mounts);
        for base in [
            &found.unified,
            &found.memory_v1,
            &found.pids_v1,
            &found.cpu_v1,
        ]
        .into_iter()
        .flatten()
        {
            remove_stale(base);
        }
        found
    })
}

/// The host's cgroup directories, from `/proc/self/cgroup` and `/proc/self/mountinfo`.
fn find(cgroups: &str, mountinfo: &str) -> Hierarchies {
    // (file-system type, super options, mount root, mount point) of each cgroup mount.
    let mounts: Vec<(&str, &str, &str, &str)> = mountinfo
        .lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let left: Vec<&str> = left.split(' ').collect();
            let right: Vec<&str> = right.split(' ').collect();
            Some((
                *right.first()?,
                *right.get(2)?,
                *left.get(3)?,
                *left.get(4)?,
            ))
        })
        .filter(|(fs, ..)| *fs == "cgroup" || *fs == "cgroup2")
        .collect();
    let dir = |root: &str, point: &str, path: &str| {
        let relative = path.strip_prefix(root).unwrap_or(path);
        Path::new(point).join(relative.trim_start_matches('/'))
    };
    let mut found = Hierarchies::default();
    for line in cgroups.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        if controllers.is_empty() {
            if let Some((_, _, root, point)) = mounts.iter().find(|m| m.0 == "cgroup2") {
                found.unified = Some(dir(root, point, path));
            }
            continue;
        }
        for controller in controllers.split(',') {
            let mount = mounts
                .iter()
                .find(|m| m.0 == "cgroup" && m.1.split(',').any(|o| o == controller));
            let Some((_, _, root, point)) = mount else {
                continue;
            };
            match controller {
                "memory" => found.memory_v1 = Some(dir(root, point, path)),
                "pids" => found.pids_v1 = Some(dir(root, point, path)),
                "cpu" => found.cpu_v1 = Some(dir(root, point, path)),
                _ => {}
            }
        }
    }
    found
}

/// Removes the empty call cgroups of hosts that died without removing theirs.
fn remove_stale(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("evo-"))
            .and_then(|rest| rest.split('-').next())
        else {
            continue;
        };
        if !Path::new("/proc").join(pid).exists() {
            let _ = std::fs::remove_dir(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hybrid_machine_gives_the_unified_directory_and_the_v1_memory_and_pids_ones() {
        let cgroups = "9:name=systemd:/\n8:pids:/\n4:memory:/process_api/e49\n1:cpu:/\n0::/\n";
        let mounts = "\
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";
        let found = find(cgroups, mounts);
        assert_eq!(found.unified, Some(PathBuf::from("/sys/fs/cgroup/unified")));
        assert_eq!(
            found.memory_v1,
            Some(PathBuf::from("/sys/fs/cgroup/memory/process_api/e49"))
        );
        assert_eq!(found.pids_v1, Some(PathBuf::from("/sys/fs/cgroup/pids")));
    }

    #[test]
    fn a_unified_machine_inside_a_delegated_subtree_gives_the_path_below_the_mount_root() {
        let cgroups = "0::/user.slice/user-1000.slice/session-1.scope\n";
        let mounts = "30 23 0:26 /user.slice /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate\n";
        let found = find(cgroups, mounts);
        assert_eq!(
            found.unified,
            Some(PathBuf::from(
                "/sys/fs/cgroup/user-1000.slice/session-1.scope"
            ))
        );
        assert_eq!(found.memory_v1, None);
    }
}
