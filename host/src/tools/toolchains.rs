//! Which programs a `bash` command line can reach inside the sandbox, and the
//! toolchains the operator makes reachable (`[tools] toolchains`).
//!
//! The sandbox shows the system's programs (`/usr`, `/bin`, `/lib*`, …), Node's
//! installation and the project. A toolchain installed in a home directory (`rustup`'s
//! `~/.cargo` and `~/.rustup`, `nvm`, a Go root) is on the operator's `PATH` but not
//! there, so an allowed `cargo` would answer `command not found` with nothing saying
//! why. Before a line runs, each of its commands is looked up as the sandbox would see
//! it; one that is allowed but cannot be reached is refused with `TOOL_UNAVAILABLE`,
//! naming the setting that makes it reachable. The toolchains are bound read-only: a
//! build writes only under the project (its `target/`, its `node_modules/`).

use std::path::{Path, PathBuf};

use crate::engine::native::Toolchains;
use crate::engine::native::confine::namespaces::SYSTEM_DIRS;

/// Bash's builtins and keywords among the allowlist's words: they are never looked up.
const BUILTINS: &[&str] = &[
    "cd", "echo", "printf", "pwd", "true", "false", "test", "[", "wait", "exit", "export", "set",
    "unset", "read", "type", "source", ".", "eval", "exec", "kill", "let", "local", "declare",
    "trap", "umask", "ulimit", "shift", "return", "break", "continue", "command", "builtin",
    "hash", "jobs", "alias", "readonly", "getopts", "shopt", "times", "[[",
];

/// Variables passed to a command line when toolchains are configured, so that a tool
/// finds its own directories (rustup's proxies read `RUSTUP_HOME` or `$HOME/.rustup`)
/// and the toolchain `evo` itself was started with (`RUSTUP_TOOLCHAIN`, when set).
const TOOLCHAIN_VARS: &[&str] = &[
    "HOME",
    "CARGO_HOME",
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
    "GOROOT",
    "GOPATH",
];

/// The toolchain directories `dirs` (each absolute, as the configuration checked) and
/// the variables of this process that point tools at them; nothing when `dirs` is empty.
pub fn toolchains(dirs: &[PathBuf]) -> Toolchains {
    if dirs.is_empty() {
        return Toolchains::default();
    }
    Toolchains {
        dirs: dirs
            .iter()
            .map(|d| d.canonicalize().unwrap_or_else(|_| d.clone()))
            .collect(),
        env: TOOLCHAIN_VARS
            .iter()
            .filter_map(|name| {
                let value = std::env::var(name).ok()?;
                (!value.is_empty()).then(|| ((*name).to_owned(), value))
            })
            .collect(),
    }
}

/// Why `command` cannot run inside the sandbox, if it cannot: not on `PATH` at all, or
/// only somewhere the sandbox does not show (`visible` besides the system directories).
pub fn unreachable(command: &str, visible: &[PathBuf]) -> Option<String> {
    unreachable_on(
        command,
        &std::env::var_os("PATH").unwrap_or_default(),
        visible,
    )
}

fn unreachable_on(command: &str, path: &std::ffi::OsStr, visible: &[PathBuf]) -> Option<String> {
    if BUILTINS.contains(&command) || command.contains('/') {
        return None;
    }
    let Some(found) = on_path(command, path) else {
        return Some(format!(
            "`{command}` is allowed ([tools] bash_allow) but is not installed: no `{command}` on PATH"
        ));
    };
    let real = found.canonicalize().unwrap_or_else(|_| found.clone());
    let shown = |dir: &Path| real.starts_with(dir);
    if SYSTEM_DIRS.iter().any(|d| shown(Path::new(d))) || visible.iter().any(|d| shown(d)) {
        return None;
    }
    // The toolchain's own directory (`~/.cargo` for `~/.cargo/bin/cargo`), and rustup's
    // beside cargo's: its proxies need both.
    let mut suggested: Vec<PathBuf> = real
        .ancestors()
        .nth(2)
        .map(Path::to_owned)
        .into_iter()
        .collect();
    if let Some(cargo) = suggested.first().filter(|d| d.ends_with(".cargo")) {
        suggested.push(cargo.with_file_name(".rustup"));
    }
    let suggested: Vec<String> = suggested
        .iter()
        .map(|d| format!("{:?}", d.display().to_string()))
        .collect();
    Some(format!(
        "`{command}` is allowed ([tools] bash_allow) but is not inside the sandbox: it is {}, outside the system directories the sandbox shows. Make its toolchain reachable, read-only, with [tools] toolchains in evo.toml, e.g. toolchains = [{}]",
        found.display(),
        suggested.join(", ")
    ))
}

/// `command` as `PATH` finds it here (skipping version managers' shims, as the sandbox's
/// launcher does).
fn on_path(command: &str, path: &std::ffi::OsStr) -> Option<PathBuf> {
    std::env::split_paths(path)
        .filter(|dir| !dir.ends_with("shims"))
        .map(|dir| dir.join(command))
        .find(|candidate| candidate.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_programs_and_builtins_are_reachable() {
        assert_eq!(unreachable("ls", &[]), None);
        assert_eq!(unreachable("cd", &[]), None);
        assert_eq!(unreachable("[", &[]), None);
    }

    #[test]
    fn a_program_that_is_not_installed_says_so() {
        let why = unreachable("evo-no-such-program", &[]).unwrap();
        assert!(why.contains("is not installed"), "{why}");
    }

    #[test]
    fn a_program_outside_the_system_directories_needs_its_toolchain() {
        let dir = tempfile::tempdir().unwrap();
        let toolchain = dir.path().canonicalize().unwrap().join(".cargo");
        let bin = toolchain.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(bin.join("evo-test-tool"), "#!/bin/sh\n").unwrap();
        let path = std::env::join_paths([bin.clone(), PathBuf::from("/usr/bin")]).unwrap();

        let why = unreachable_on("evo-test-tool", &path, &[]).unwrap();
        assert!(
            why.contains("is not inside the sandbox")
                && why.contains("[tools] toolchains")
                && why.contains(&format!(
                    "toolchains = [\"{}\", \"{}\"]",
                    toolchain.display(),
                    toolchain.with_file_name(".rustup").display()
                )),
            "{why}"
        );
        assert_eq!(unreachable_on("evo-test-tool", &path, &[toolchain]), None);
        assert_eq!(unreachable_on("ls", &path, &[]), None);
    }
}
