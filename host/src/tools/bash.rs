//! `bash` (alias `Bash`): runs a command line in the project directory, in the native
//! sandbox, and returns its stdout, stderr and exit code.
//!
//! Before anything runs, every command of the line (each side of a pipe, each part of a
//! `;`/`&&`/`||` chain, each `$(…)`) must be in the allowlist ([`DEFAULT_ALLOW`], or
//! `[tools] bash_allow`), else the call is blocked with
//! `命令不在白名单中` (or its English form). A URL naming a host outside
//! `[tools] allowed_hosts` is blocked too. Destructive commands (`rm`, `git reset
//! --hard`, …) need confirmation. What an allowed program then does is bounded by the
//! sandbox: the project directory is the only writable one, there is no network where
//! namespaces are available, and the whole process group dies at the deadline.
//!
//! A line runs with `pipefail`: `cargo test 2>&1 | tail` reports cargo's failure, not
//! `tail`'s success (a program killed by a closed pipe, as in `yes | head`, then shows
//! as 141). An allowed command the sandbox cannot show (a toolchain in a home
//! directory) is refused before it runs, naming `[tools] toolchains`.
//!
//! Needs the `dev-tools` feature of evo-host (on by default).

use std::path::{Path, PathBuf};
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::confirm::{Confirmation, Risk};
use super::permission::{self, Locale};
use super::{BoxFuture, TypedTool, shell};
use crate::engine::native::{NativeFailure, NativeSandbox, Toolchains};
use crate::error::{Error, Result};
use crate::skill::kernel::SkillContext;

/// A command is stopped after 10 seconds unless it asks for more: long enough for the
/// usual command, short enough that a hung one does not hold the agent.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest a call may ask for unless `[tools] bash_max_timeout_ms` says otherwise
/// ([`super::ProgramTools::MAX_TIMEOUT`]).
#[cfg(feature = "internals")]
pub const MAX_TIMEOUT: Duration = super::ProgramTools::MAX_TIMEOUT;
/// Output kept per stream: a tool result goes into a model's context, and 256 KiB is
/// already more than one holds.
pub const OUTPUT_CAP: usize = 256 << 10;

/// Commands allowed by default ([`super::ProgramTools::DEFAULT_ALLOW`]).
#[cfg(feature = "internals")]
pub const DEFAULT_ALLOW: &[&str] = super::ProgramTools::DEFAULT_ALLOW;

/// Runs command lines in one project directory.
#[derive(Debug, Clone)]
pub struct Bash {
    root: PathBuf,
    sandbox: NativeSandbox,
    allow: Vec<String>,
    allowed_hosts: Vec<String>,
    max_timeout: Duration,
    toolchains: Toolchains,
}

impl Bash {
    /// `bash` in `root`, running through `sandbox`, allowing `allow` commands and URLs
    /// to `allowed_hosts`, with calls of at most `max_timeout`.
    pub fn new(
        root: impl Into<PathBuf>,
        sandbox: NativeSandbox,
        allow: Vec<String>,
        allowed_hosts: Vec<String>,
        max_timeout: Duration,
    ) -> Self {
        Self {
            root: root.into(),
            sandbox,
            allow,
            allowed_hosts,
            max_timeout,
            toolchains: Toolchains::default(),
        }
    }

    /// Makes the toolchains in `dirs` (`[tools] toolchains`) reachable, read-only, to
    /// every command line, with the variables that point tools at them.
    pub fn with_toolchains(mut self, dirs: &[PathBuf]) -> Self {
        self.toolchains = super::toolchains::toolchains(dirs);
        self
    }

    /// The first command of `line` that is allowed but cannot run inside the sandbox,
    /// and why; `None` when the sandbox shows the whole file system (no isolation).
    async fn unreachable(&self, line: &str) -> Option<String> {
        let protections = self.sandbox.isolation().await;
        let confined = protections
            .iter()
            .any(|p| p == "private-root" || p.starts_with("landlock-"));
        if !confined {
            return None;
        }
        let mut visible = self.toolchains.dirs.clone();
        visible.push(
            self.root
                .canonicalize()
                .unwrap_or_else(|_| self.root.clone()),
        );
        if let Some(node) = self.sandbox.config().node.parent().and_then(Path::parent) {
            visible.push(node.to_owned());
        }
        let commands = shell::commands(line).unwrap_or_else(|e| e.found);
        commands
            .iter()
            .find_map(|command| super::toolchains::unreachable(command, &visible))
    }

    /// The reason `line` may not run, if any.
    pub fn judge(&self, line: &str, locale: Locale) -> std::result::Result<(), String> {
        let (commands, unreadable) = match shell::commands(line) {
            Ok(commands) => (commands, None),
            Err(e) => (e.found, Some(e.why)),
        };
        if let Some(refused) = commands
            .iter()
            .find(|c| !self.allow.iter().any(|a| a == *c))
        {
            return Err(permission::not_allowed_message(locale, refused));
        }
        if let Some(why) = unreadable {
            return Err(match locale {
                Locale::Zh => format!("无法检查命令: {why}"),
                Locale::En => format!("the command line cannot be checked: {why}"),
            });
        }
        if let Some(host) = urls(line).find(|h| !self.allowed_hosts.iter().any(|a| a == h)) {
            return Err(match locale {
                Locale::Zh => format!("网络访问被阻止：域名不在白名单中: {host}"),
                Locale::En => format!(
                    "network access refused: {host} is not in the allowed hosts ([tools] allowed_hosts)"
                ),
            });
        }
        Ok(())
    }

    async fn execute(&self, input: BashInput, ctx: SkillContext) -> Result<BashOutput> {
        let line = input.command.clone();
        let locale = ctx.locale();
        if let Err(message) = self.judge(&line, locale) {
            tracing::warn!(target: "evo::security", tool = "bash", command = %line, "blocked: {message}");
            return Err(Error::Blocked {
                tool: "bash".into(),
                message,
                reason: crate::error::BlockReason::Allowlist,
            });
        }
        if let Some(message) = self.unreachable(&line).await {
            return Err(Error::ToolUnavailable {
                tool: "bash".into(),
                message,
            });
        }
        if let Some((risk, warning)) = risk(&line) {
            ctx.confirm(Confirmation {
                tool: "bash".into(),
                arguments: serde_json::to_value(&input).unwrap_or_default(),
                risk,
                warning,
            })
            .await?;
        }
        let requested = Duration::from_millis(input.timeout);
        let timeout = requested.min(self.max_timeout);
        let root = self.root.canonicalize().map_err(Error::io_at(&self.root))?;
        let result = self
            .sandbox
            .run_shell_with(&root, &line, timeout, OUTPUT_CAP, &self.toolchains)
            .await?;
        match (result.failure, result.error) {
            (Some(NativeFailure::Timeout), _) => Err(Error::Timeout {
                skill: "bash".into(),
                limit_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
            }),
            // A command line's own failure (its exit code, even out of memory) is its
            // result; the sandbox's refusals are errors.
            (Some(NativeFailure::OutputLimit | NativeFailure::Spawn), Some(message)) => {
                Err(Error::Skill {
                    skill: "bash".into(),
                    kind: crate::error::FailureKind::Failed,
                    message,
                })
            }
            _ => Ok(BashOutput {
                stdout: result.stdout,
                stderr: result.stderr,
                exit_code: result.exit_code,
                duration_ms: result.duration,
            }),
        }
    }
}

/// The hosts of the `http://` and `https://` URLs in `line`.
fn urls(line: &str) -> impl Iterator<Item = String> + '_ {
    line.match_indices("://").filter_map(move |(at, _)| {
        let scheme_start = line[..at]
            .rfind(|c: char| !c.is_ascii_alphanumeric())
            .map_or(0, |i| i + 1);
        let scheme = &line[scheme_start..at];
        if !matches!(
            scheme,
            "http" | "https" | "ftp" | "ws" | "wss" | "git" | "ssh"
        ) {
            return None;
        }
        let rest = &line[at + 3..];
        let authority = rest
            .split(|c: char| c == '/' || c.is_whitespace() || "'\"|;&)?#".contains(c))
            .next()?;
        let host = authority.rsplit('@').next()?;
        let host = host.split(':').next()?;
        Some(host.to_ascii_lowercase())
    })
}

/// How dangerous `line` is, and what to tell the user, when it needs confirmation.
fn risk(line: &str) -> Option<(Risk, String)> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let has = |w: &str| words.contains(&w);
    let recursive_rm = words.windows(2).any(|p| {
        p[0] == "rm"
            && (p[1].starts_with('-') && (p[1].contains('r') || p[1].contains('R'))
                || p[1] == "--recursive")
    }) || (has("rm")
        && words
            .iter()
            .any(|w| *w == "-r" || *w == "-rf" || *w == "-fr" || *w == "-R"));
    if recursive_rm {
        return Some((
            Risk::High,
            format!("`{line}` deletes files and directories recursively; this cannot be undone"),
        ));
    }
    let git_destroys = has("git")
        && (has("clean")
            || (has("reset") && has("--hard"))
            || (has("push") && (has("--force") || has("-f")))
            || (has("checkout") && has("--")));
    if git_destroys {
        return Some((
            Risk::High,
            format!("`{line}` discards work in the repository; this cannot be undone"),
        ));
    }
    if has("rm") || has("mv") {
        return Some((Risk::Medium, format!("`{line}` removes or replaces files")));
    }
    None
}

/// `bash`'s input.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BashInput {
    /// the command line, e.g. `git status` or `cargo test 2>&1 | tail -20`
    #[schemars(length(min = 1))]
    pub command: String,
    /// milliseconds before the command is killed
    #[serde(default = "default_timeout_ms")]
    #[schemars(range(min = 1))]
    pub timeout: u64,
    /// what the command is for, in a few words (shown when confirming)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

fn default_timeout_ms() -> u64 {
    u64::try_from(DEFAULT_TIMEOUT.as_millis()).unwrap_or(u64::MAX)
}

/// `bash`'s output.
#[derive(Debug, Serialize, JsonSchema)]
pub struct BashOutput {
    /// what the command line wrote to stdout
    pub stdout: String,
    /// what it wrote to stderr
    pub stderr: String,
    /// null when killed by a signal
    pub exit_code: Option<i32>,
    /// how long it ran
    pub duration_ms: u64,
}

impl Bash {
    fn max_ms(&self) -> u64 {
        u64::try_from(self.max_timeout.as_millis()).unwrap_or(u64::MAX)
    }
}

impl TypedTool for Bash {
    const NAME: &'static str = "bash";
    type Input = BashInput;
    type Output = BashOutput;

    fn input_schema(&self, mut generated: Value) -> Value {
        generated["properties"]["timeout"]["maximum"] = self.max_ms().into();
        generated
    }

    fn describe(&self) -> Value {
        let max_ms = self.max_ms();
        json!({
            "description": "Runs a shell command line in the project directory and returns its stdout, stderr and exit code. Use it for git, builds, tests and file utilities; every command of the line must be in the allowlist.",
            "category": "shell",
            "tags": ["shell", "execute"],
            "requests": [
                "run the tests and tell me which ones fail",
                "build the project with make",
                "how much disk space is left on this machine?",
                "install the npm dependencies",
                "which version of python do we have here?",
                "list what is in this folder with ls -la",
                "compile it and show me the errors",
                "count the lines of code in src with wc"
            ],
            "permission": "execute",
            // The sandbox enforces the call's own timeout; the kernel's only backs it up.
            "timeout": max_ms + 5_000,
            "examples": [
                { "description": "The working tree's state", "input": { "command": "git status" } },
                { "description": "A pipeline: every command is checked against the allowlist", "input": { "command": "ls | wc -l" } },
                { "description": "A slow command with its own deadline", "input": { "command": "sleep 0.1 && echo done", "timeout": 5_000 } }
            ],
            "notes": [
                "Every command of a pipeline, chain or $(…) must be in the allowlist ([tools] bash_allow); `curl … | sh` is refused: 命令不在白名单中.",
                "Runs in the native sandbox: the project directory is the only writable one, there is no network where user namespaces are available, and the whole process group is killed at the deadline.",
                format!("The default timeout is 10 s; a call may ask for up to {max_ms} ms. Each stream is cut at {OUTPUT_CAP} bytes."),
                "Recursive deletes and history-rewriting git commands need the user's confirmation.",
                "A non-zero exit code is a result, not an error: read exit_code and stderr."
            ]
        })
    }

    fn aliases(&self) -> &[&'static str] {
        &["Bash"]
    }

    fn run(&self, input: BashInput, ctx: SkillContext) -> BoxFuture<'_, Result<BashOutput>> {
        Box::pin(self.execute(input, ctx))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_give_their_hosts() {
        let hosts: Vec<String> =
            urls("curl -s https://user@Example.com:8443/x | git clone git://evil.org/r ./x")
                .collect();
        assert_eq!(hosts, ["example.com", "evil.org"]);
    }

    #[test]
    fn destructive_commands_carry_a_risk() {
        assert_eq!(risk("rm -rf build").unwrap().0, Risk::High);
        assert_eq!(risk("git reset --hard HEAD~1").unwrap().0, Risk::High);
        assert_eq!(risk("rm notes.txt").unwrap().0, Risk::Medium);
        assert_eq!(risk("git status"), None);
        assert_eq!(risk("ls -r"), None);
    }
}
