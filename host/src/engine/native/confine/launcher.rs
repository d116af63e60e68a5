//! The launcher's command line: what the sandbox tells the program it starts for each
//! call (`evo-launcher`, or the `evo` binary itself under the same hidden command
//! names) and how that program reads it. Read by hand, before anything else runs: the
//! launcher is a fresh single-threaded process that confines itself and becomes the
//! script, and every millisecond it takes to start is a millisecond of every call.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt as _;
use std::path::PathBuf;

use super::{Layers, Spec, confine_and_exec, wait_for_job};

/// Joins the given cgroups, enters the namespaces and prepares the root, waits for a
/// job (the program and its directories, as JSON behind its length) on stdin, then
/// finishes confining and becomes the job's program (a launcher started ahead of its
/// call): `WAIT [--cgroup PROCS]…`.
pub const WAIT: &str = "__native-wait";
/// Confines this process and becomes the program after `--`:
/// `EXEC --workspace DIR [--read DIR]… [--cpu-seconds N] [--cgroup PROCS]…
/// [--layers LIST] -- PROGRAM [ARG]…`.
pub const EXEC: &str = "__native-exec";

/// The small launcher's file name, installed beside `evo`.
pub const LAUNCHER: &str = "evo-launcher";

/// The exit status of a launcher whose program could not be started (as a shell's).
const NOT_STARTED: u8 = 127;
/// The exit status of a launcher given a command line it does not understand.
const USAGE: u8 = 2;

/// Whether `arg`, a program's first argument, is one of the launcher's commands.
pub fn is_command(arg: &OsStr) -> bool {
    arg == WAIT || arg == EXEC
}

/// Runs the launcher's command in `args` (the program's own name left out). It becomes
/// the job's program, so it returns only when something failed, with the exit status to
/// end with, after saying why on stderr.
pub fn main(args: impl IntoIterator<Item = OsString>) -> u8 {
    let mut args = args.into_iter();
    let command = args.next().unwrap_or_default();
    let parsed = if command == WAIT {
        Options::parse(args, &["cgroup"], false)
    } else if command == EXEC {
        Options::parse(
            args,
            &["workspace", "read", "cpu-seconds", "cgroup", "layers"],
            true,
        )
    } else if command.is_empty() {
        Err(format!("no command: the commands are {WAIT} and {EXEC}"))
    } else {
        Err(format!(
            "unknown command `{}`: the commands are {WAIT} and {EXEC}",
            command.to_string_lossy()
        ))
    };
    let options = match parsed {
        Ok(options) => options,
        Err(problem) => {
            eprintln!(
                "{LAUNCHER}: {problem}\n\
                 This program is started by Evo's native sandbox, which passes these \
                 arguments; it is not meant to be run by hand."
            );
            return USAGE;
        }
    };
    if command == WAIT {
        // Everything that needs no job first, while the call is not yet there.
        let error = wait_for_job(&options.cgroups);
        eprintln!("Failed to spawn process: {error}");
        return NOT_STARTED;
    }
    let Some(workspace) = options.workspace else {
        eprintln!("{LAUNCHER}: {EXEC} needs --workspace DIR");
        return USAGE;
    };
    let spec = Spec {
        workspace,
        read_only: options.read,
        cpu_seconds: options.cpu_seconds,
        cgroups: options.cgroups,
        layers: options.layers,
    };
    let (program, args) = options
        .program
        .split_first()
        .expect("parse requires a program after --");
    let error = confine_and_exec(&spec, program, args);
    eprintln!(
        "Failed to spawn process: {}: {error}",
        program.to_string_lossy()
    );
    NOT_STARTED
}

/// A launcher command's options.
#[derive(Debug, PartialEq)]
struct Options {
    workspace: Option<PathBuf>,
    read: Vec<PathBuf>,
    cpu_seconds: u64,
    cgroups: Vec<PathBuf>,
    layers: Layers,
    program: Vec<OsString>,
}

impl Options {
    /// Reads `args`: `--NAME VALUE` or `--NAME=VALUE` for each name in `allowed`, then,
    /// if `program`, `--` and a program with its arguments (required).
    fn parse(
        args: impl Iterator<Item = OsString>,
        allowed: &[&str],
        program: bool,
    ) -> Result<Self, String> {
        let mut options = Self {
            workspace: None,
            read: Vec::new(),
            cpu_seconds: 60,
            cgroups: Vec::new(),
            layers: Layers::default(),
            program: Vec::new(),
        };
        let mut args = args.peekable();
        while let Some(arg) = args.next() {
            if arg == "--" && program {
                options.program = args.collect();
                break;
            }
            let bytes = arg.as_bytes();
            let Some(option) = bytes.strip_prefix(b"--") else {
                return Err(format!(
                    "unexpected argument `{}`: options come first, then `--` and the \
                     program",
                    arg.to_string_lossy()
                ));
            };
            let (name, inline) = match option.iter().position(|&b| b == b'=') {
                Some(at) => (&option[..at], Some(&option[at + 1..])),
                None => (option, None),
            };
            let name = String::from_utf8_lossy(name).into_owned();
            if !allowed.contains(&name.as_str()) {
                return Err(format!(
                    "unknown option `--{name}`: expected one of --{}",
                    allowed.join(", --")
                ));
            }
            let value = match inline {
                Some(value) => OsStr::from_bytes(value).to_owned(),
                None => args
                    .next()
                    .ok_or_else(|| format!("`--{name}` needs a value"))?,
            };
            match name.as_str() {
                "workspace" => options.workspace = Some(value.into()),
                "read" => options.read.push(value.into()),
                "cgroup" => options.cgroups.push(value.into()),
                "cpu-seconds" => {
                    options.cpu_seconds =
                        value.to_str().and_then(|n| n.parse().ok()).ok_or_else(|| {
                            format!(
                                "`--cpu-seconds {}` is not a whole number of seconds",
                                value.to_string_lossy()
                            )
                        })?;
                }
                _ => {
                    options.layers = value
                        .to_str()
                        .ok_or_else(|| "`--layers` is not UTF-8".to_owned())?
                        .parse()?;
                }
            }
        }
        if program && options.program.is_empty() {
            return Err("no program: give it after `--`".into());
        }
        Ok(options)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str], program: bool) -> Result<Options, String> {
        let allowed = ["workspace", "read", "cpu-seconds", "cgroup", "layers"];
        Options::parse(args.iter().map(OsString::from), &allowed, program)
    }

    #[test]
    fn the_sandboxs_command_line_is_read_as_it_is_written() {
        let options = parse(
            &[
                "--workspace",
                "/w s",
                "--read=/r1",
                "--read",
                "/r2",
                "--cpu-seconds",
                "7",
                "--cgroup",
                "/c/cgroup.procs",
                "--layers",
                "landlock,seccomp",
                "--",
                "node",
                "--",
                "x.js",
            ],
            true,
        )
        .unwrap();
        assert_eq!(options.workspace, Some(PathBuf::from("/w s")));
        assert_eq!(options.read, [PathBuf::from("/r1"), PathBuf::from("/r2")]);
        assert_eq!(options.cpu_seconds, 7);
        assert_eq!(options.cgroups, [PathBuf::from("/c/cgroup.procs")]);
        assert_eq!(
            options.layers,
            Layers {
                namespaces: false,
                landlock: true,
                seccomp: true
            }
        );
        assert_eq!(
            options.program,
            ["node", "--", "x.js"],
            "all after the first --"
        );
        let defaults = parse(&["--workspace", "/w", "--", "node"], true).unwrap();
        assert_eq!(
            (defaults.cpu_seconds, defaults.layers),
            (60, Layers::default())
        );
    }

    #[test]
    fn a_command_line_it_does_not_understand_says_what_is_wrong() {
        let cases: [(&[&str], bool, &str); 6] = [
            (&["--workspace"], true, "`--workspace` needs a value"),
            (&["--nope", "1"], true, "unknown option `--nope`"),
            (&["stray"], true, "unexpected argument `stray`"),
            (&["--workspace", "/w"], true, "no program"),
            (
                &["--cpu-seconds", "ten", "--", "n"],
                true,
                "not a whole number",
            ),
            (&["--layers", "all", "--", "n"], true, "unknown layer `all`"),
        ];
        for (args, program, expected) in cases {
            let error = parse(args, program).unwrap_err();
            assert!(error.contains(expected), "{args:?}: {error}");
        }
        let wait = Options::parse(
            ["--workspace", "/w"].into_iter().map(OsString::from),
            &["cgroup"],
            false,
        );
        assert!(wait.unwrap_err().contains("unknown option `--workspace`"));
        assert_eq!(main([OsString::from("run")]), USAGE);
        assert_eq!(main([OsString::from(EXEC), "--bad".into()]), USAGE);
    }
}
