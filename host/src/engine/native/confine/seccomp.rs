//! The seccomp filter, a second wall behind the namespaces: system calls a script has no
//! business making fail with `EPERM`, whatever the namespaces allowed.
//!
//! Three stacked filters (each a plain list, so each reads as what it refuses):
//!
//! - refused (`EPERM`): debugging and reading other processes (`ptrace`,
//!   `process_vm_*`, `kcmp`), new namespaces and mounts (`unshare`, `setns`, `mount`,
//!   `pivot_root`, the new mount API, `clone` with a namespace flag), kernel surfaces
//!   (`bpf`, `perf_event_open`, modules, `kexec_*`, keyrings, `userfaultfd`, `syslog`),
//!   and the machine's settings (clock, swap, reboot, accounting, I/O ports);
//! - not there (`ENOSYS`): `clone3` (its flags cannot be inspected, so callers fall back
//!   to `clone`, which is) and `io_uring` (its own path around these rules);
//! - sockets only of the families real scripts use (Unix, IPv4, IPv6, and netlink, which
//!   Node's `os.networkInterfaces()` reads, harmless without capabilities in an empty
//!   network namespace): packet, Bluetooth, vsock and the rest fail with
//!   `EAFNOSUPPORT`.

use std::collections::BTreeMap;

use seccompiler::{
    SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    TargetArch,
};

/// System calls refused outright.
const REFUSED: &[libc::c_long] = &[
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_kcmp,
    libc::SYS_pidfd_getfd,
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_chroot,
    libc::SYS_open_tree,
    libc::SYS_move_mount,
    libc::SYS_fsopen,
    libc::SYS_fsconfig,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_mount_setattr,
    libc::SYS_name_to_handle_at,
    libc::SYS_open_by_handle_at,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_keyctl,
    libc::SYS_userfaultfd,
    libc::SYS_syslog,
    libc::SYS_fanotify_init,
    libc::SYS_quotactl,
    libc::SYS_acct,
    libc::SYS_reboot,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_settimeofday,
    libc::SYS_clock_settime,
    libc::SYS_clock_adjtime,
    libc::SYS_adjtimex,
    libc::SYS_sethostname,
    libc::SYS_setdomainname,
    libc::SYS_vhangup,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_iopl,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_ioperm,
];

/// System calls that report themselves missing, so callers take their fallback.
const MISSING: &[libc::c_long] = &[
    libc::SYS_clone3,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
];

/// Namespace flags `clone` may not carry.
const NAMESPACE_FLAGS: [libc::c_int; 7] = [
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWNS,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWNET,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWCGROUP,
];

/// Socket families a script may open.
const SOCKET_FAMILIES: [libc::c_int; 4] = [
    libc::AF_UNIX,
    libc::AF_INET,
    libc::AF_INET6,
    libc::AF_NETLINK,
];

/// Installs the three filters on the calling thread (inherited by everything it execs
/// and forks). Needs `no_new_privs` set first.
pub(super) fn install() -> Result<(), seccompiler::Error> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)?;
    let cond = |arg: u8, op: SeccompCmpOp, value: libc::c_int| {
        SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value as u64)
    };

    let mut refused: BTreeMap<i64, Vec<SeccompRule>> =
        REFUSED.iter().map(|&call| (call, Vec::new())).collect();
    let clone_rules = NAMESPACE_FLAGS
        .iter()
        .map(|&flag| SeccompRule::new(vec![cond(0, SeccompCmpOp::MaskedEq(flag as u64), flag)?]))
        .collect::<Result<Vec<_>, _>>()?;
    refused.insert(libc::SYS_clone, clone_rules);

    let missing = MISSING.iter().map(|&call| (call, Vec::new())).collect();

    let other_families = SOCKET_FAMILIES
        .iter()
        .map(|&family| cond(0, SeccompCmpOp::Ne, family))
        .collect::<Result<Vec<_>, _>>()?;
    let sockets = BTreeMap::from([(libc::SYS_socket, vec![SeccompRule::new(other_families)?])]);

    for (rules, errno) in [
        (refused, libc::EPERM),
        (missing, libc::ENOSYS),
        (sockets, libc::EAFNOSUPPORT),
    ] {
        let filter = SeccompFilter::new(
            rules,
            SeccompAction::Allow,
            SeccompAction::Errno(errno as u32),
            arch,
        )?;
        let program: seccompiler::BpfProgram = filter.try_into()?;
        seccompiler::apply_filter(&program)?;
    }
    Ok(())
}
