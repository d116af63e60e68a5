//! `evo-launcher`: the program Evo's native sandbox starts for each call of a script
//! skill (and for the terminal). It confines itself — cgroup, namespaces and a private
//! root, Landlock, seccomp, rlimits — and becomes the script's interpreter. It does only
//! that, so it starts in a fraction of the time the whole `evo` binary takes, which is on
//! the path of every native call; `evo` falls back to running itself under the same
//! hidden commands when this program is not installed beside it.

fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(evo_host::sandbox::launcher_main(
        std::env::args_os().skip(1),
    ))
}
