//! `git` (alias `Git`): the project's repository, with structured results.
//!
//! `{ action, … }` where `action` is `status`, `diff`, `log`, `show`, `branch`, `add` or
//! `commit`. The git CLI runs in the native sandbox like `bash` (a repository's own
//! configuration can name programs to run — hooks, filters, fsmonitor — so it is not
//! trusted), with hooks and fsmonitor switched off and no pager. The first four read
//! (`read_only`); `add`, `commit` and creating a branch write (`read_write`).
//!
//! Needs the `dev-tools` feature of evo-host (on by default).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::confirm::{Confirmation, Risk};
use super::permission::Permission;
use super::{BoxFuture, TypedTool, invalid};
use crate::engine::native::NativeSandbox;
use crate::error::{Error, FailureKind, Result};
use crate::skill::kernel::SkillContext;

mod parse;

use parse::{parse_commits, parse_diff, parse_status};

/// How long one git command may take: status of a large repository, a big diff.
pub const TIMEOUT: Duration = Duration::from_secs(60);
/// Output kept: a diff larger than this does not fit a model's context anyway.
pub const OUTPUT_CAP: usize = 1 << 20;
/// Commits `log` lists unless asked for more.
pub const DEFAULT_LOG_COUNT: u64 = 10;

const UNIT: char = '\u{1f}';
const RECORD: char = '\u{1e}';

/// What `git` is asked to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// the working tree's state (reads)
    Status,
    /// changes, file by file, with the patch (reads)
    Diff,
    /// commits (reads)
    Log,
    /// one commit with its changes (reads)
    Show,
    /// the branches; with `name`, creates one first (writes)
    Branch,
    /// stages `paths` (writes)
    Add,
    /// commits what is staged (writes)
    Commit,
}

/// `git`'s input.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GitInput {
    /// what to do
    pub action: Action,
    /// diff/log: only this path
    #[serde(default)]
    pub path: Option<String>,
    /// diff: compare with this revision; log: start here; show: this commit (HEAD)
    #[serde(default)]
    pub rev: Option<String>,
    /// diff: the staged changes instead of the working tree's
    #[serde(default)]
    pub staged: Option<bool>,
    /// log: how many commits (10)
    #[serde(default)]
    #[schemars(range(min = 1, max = 1000))]
    pub max_count: Option<u64>,
    /// branch: create this branch
    #[serde(default)]
    pub name: Option<String>,
    /// add: the files to stage
    #[serde(default)]
    pub paths: Option<Vec<String>>,
    /// commit: the message
    #[serde(default)]
    pub message: Option<String>,
    /// commit: stage every tracked change first (-a)
    #[serde(default)]
    pub all: Option<bool>,
}

/// `git`'s output: one shape per action.
#[derive(Debug, PartialEq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum GitOutput {
    /// `status`
    Status(Status),
    /// `diff` and `show` (with its commit)
    Diff(Diff),
    /// `log`
    Log {
        /// newest first
        commits: Vec<Commit>,
    },
    /// `branch`
    Branches {
        /// every local branch
        branches: Vec<Branch>,
    },
    /// `add`
    Added {
        /// the paths staged
        added: Vec<String>,
    },
    /// `commit`
    Committed {
        /// the new commit's hash
        commit: String,
        /// git's one-line summary
        summary: String,
    },
}

/// The working tree's state.
#[derive(Debug, PartialEq, Serialize, JsonSchema)]
pub struct Status {
    /// the current branch
    pub branch: Option<String>,
    /// the branch it tracks
    pub upstream: Option<String>,
    /// commits ahead of the upstream
    pub ahead: i64,
    /// commits behind it
    pub behind: i64,
    /// whether nothing changed and nothing is untracked
    pub clean: bool,
    /// the changed files
    pub files: Vec<Changed>,
    /// files git does not track
    pub untracked: Vec<String>,
}

/// A changed file.
#[derive(Debug, PartialEq, Serialize, JsonSchema)]
pub struct Changed {
    /// the file
    pub path: String,
    /// where a rename or copy came from
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// its state in the index: modified, added, deleted, renamed, copied, unmerged, type_changed or unchanged
    pub index: &'static str,
    /// its state in the working tree, in the same words
    pub worktree: &'static str,
}

/// Changes with their patch.
#[derive(Debug, PartialEq, Serialize, JsonSchema)]
pub struct Diff {
    /// lines added and deleted per file (null for binary files)
    pub files: Vec<FileChange>,
    /// the patch
    pub patch: String,
    /// `show`: the commit
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<Commit>,
}

/// One file's change.
#[derive(Debug, PartialEq, Serialize, JsonSchema)]
pub struct FileChange {
    /// the file
    pub path: String,
    /// lines added (null for a binary file)
    pub added: Option<u64>,
    /// lines deleted (null for a binary file)
    pub deleted: Option<u64>,
}

/// A commit.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Commit {
    /// its hash
    pub hash: String,
    /// its author's name
    pub author: String,
    /// its author's email
    pub email: String,
    /// when it was written (ISO 8601)
    pub date: String,
    /// its subject line
    pub subject: String,
}

/// A branch.
#[derive(Debug, PartialEq, Serialize, JsonSchema)]
pub struct Branch {
    /// its name
    pub name: String,
    /// whether it is checked out
    pub current: bool,
}

/// Git in one project directory.
#[derive(Debug, Clone)]
pub struct Git {
    root: PathBuf,
    sandbox: NativeSandbox,
}

impl Git {
    /// `git` in `root`, running through `sandbox`.
    pub fn new(root: impl Into<PathBuf>, sandbox: NativeSandbox) -> Self {
        Self {
            root: root.into(),
            sandbox,
        }
    }

    async fn git(&self, args: &[&str]) -> Result<String> {
        let root = self.root.canonicalize().map_err(Error::io_at(&self.root))?;
        let mut argv: Vec<String> = [
            "--no-pager",
            "-c",
            "core.hooksPath=/dev/null",
            "-c",
            "core.fsmonitor=false",
            "-c",
            "color.ui=never",
            "-c",
            "commit.gpgsign=false",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        // The sandbox sees neither the user's global configuration nor a usable account;
        // a repository's own `[user]` wins when it has one.
        if !has_own_identity(&root) {
            let (name, email) =
                identity().unwrap_or_else(|| (FALLBACK_NAME.into(), FALLBACK_EMAIL.into()));
            argv.extend(["-c".into(), format!("user.name={name}")]);
            argv.extend(["-c".into(), format!("user.email={email}")]);
        }
        argv.extend(args.iter().map(|s| (*s).to_owned()));
        let result = self
            .sandbox
            .run_in(&root, Path::new("git"), &argv, TIMEOUT, OUTPUT_CAP)
            .await?;
        if result.exit_code == Some(0) {
            return Ok(result.stdout);
        }
        let said = if result.stderr.trim().is_empty() {
            result.error.unwrap_or_else(|| "git failed".into())
        } else {
            result.stderr.trim().to_owned()
        };
        Err(Error::Skill {
            skill: "git".into(),
            kind: if said.contains("not a git repository") {
                FailureKind::InvalidInput
            } else {
                FailureKind::Failed
            },
            message: format!("git {}: {said}", args.first().unwrap_or(&"")),
        })
    }

    async fn execute(&self, input: GitInput) -> Result<GitOutput> {
        let path = input.path.as_deref();
        let format = format!("--format=%H{UNIT}%an{UNIT}%ae{UNIT}%aI{UNIT}%s{RECORD}");
        match input.action {
            Action::Status => Ok(GitOutput::Status(parse_status(
                &self.git(&["status", "--porcelain=v2", "--branch"]).await?,
            ))),
            Action::Diff => {
                let mut args = vec!["diff", "--numstat", "--patch"];
                if input.staged == Some(true) {
                    args.push("--cached");
                }
                args.extend(input.rev.as_deref());
                args.push("--");
                args.extend(path);
                Ok(GitOutput::Diff(parse_diff(&self.git(&args).await?)))
            }
            Action::Log => {
                let count = input.max_count.unwrap_or(DEFAULT_LOG_COUNT).to_string();
                let mut args = vec!["log", "-n", &count, &format];
                args.extend(input.rev.as_deref());
                args.push("--");
                args.extend(path);
                let out = match self.git(&args).await {
                    Err(e) if e.to_string().contains("does not have any commits") => String::new(),
                    other => other?,
                };
                Ok(GitOutput::Log {
                    commits: parse_commits(&out),
                })
            }
            Action::Show => {
                let rev = input.rev.as_deref().unwrap_or("HEAD");
                let out = self
                    .git(&["show", "--numstat", "--patch", &format, rev, "--"])
                    .await?;
                let (head, diff) = out.split_once(RECORD).unwrap_or((&out, ""));
                let mut value = parse_diff(diff.trim_start_matches('\n'));
                value.commit = parse_commits(&format!("{head}{RECORD}")).into_iter().next();
                Ok(GitOutput::Diff(value))
            }
            Action::Branch => {
                if let Some(name) = &input.name {
                    self.git(&["branch", "--", name]).await?;
                }
                let out = self
                    .git(&["branch", &format!("--format=%(HEAD){UNIT}%(refname:short)")])
                    .await?;
                let branches = out
                    .lines()
                    .filter_map(|l| l.split_once(UNIT))
                    .map(|(head, name)| Branch {
                        name: name.to_owned(),
                        current: head == "*",
                    })
                    .collect();
                Ok(GitOutput::Branches { branches })
            }
            Action::Add => {
                let paths = input.paths.unwrap_or_default();
                if paths.is_empty() {
                    return Err(invalid(
                        "git",
                        "add needs `paths`: the files to stage, e.g. [\"src/lib.rs\"] or [\".\"]",
                    ));
                }
                let mut args = vec!["add", "--"];
                args.extend(paths.iter().map(String::as_str));
                self.git(&args).await?;
                Ok(GitOutput::Added { added: paths })
            }
            Action::Commit => {
                let message = input.message.as_deref().unwrap_or_default();
                if message.trim().is_empty() {
                    return Err(invalid("git", "commit needs a `message`"));
                }
                let mut args = vec!["commit", "--no-verify", "-m", message];
                if input.all == Some(true) {
                    args.push("--all");
                }
                let out = self.git(&args).await?;
                let commit = self.git(&["rev-parse", "HEAD"]).await?;
                Ok(GitOutput::Committed {
                    commit: commit.trim().to_owned(),
                    summary: out.lines().next().unwrap_or_default().to_owned(),
                })
            }
        }
    }
}

/// The identity of commits when neither the repository nor the user has one.
const FALLBACK_NAME: &str = "Evo";
/// See [`FALLBACK_NAME`].
const FALLBACK_EMAIL: &str = "evo@localhost";

/// Whether the repository at `root` names its own committer (`[user]` in `.git/config`).
fn has_own_identity(root: &Path) -> bool {
    std::fs::read_to_string(root.join(".git/config"))
        .is_ok_and(|config| config.lines().any(|l| l.trim() == "[user]"))
}

/// The user's own name and email from their global git configuration (the sandbox
/// does not see it), read once.
fn identity() -> Option<(String, String)> {
    static IDENTITY: OnceLock<Option<(String, String)>> = OnceLock::new();
    IDENTITY
        .get_or_init(|| {
            let get = |key: &str| {
                let out = std::process::Command::new("git")
                    .args(["config", "--global", "--get", key])
                    .current_dir("/")
                    .output()
                    .ok()?;
                let value = String::from_utf8(out.stdout).ok()?.trim().to_owned();
                (!value.is_empty()).then_some(value)
            };
            Some((get("user.name")?, get("user.email")?))
        })
        .clone()
}

impl TypedTool for Git {
    const NAME: &'static str = "git";
    type Input = GitInput;
    type Output = GitOutput;

    fn describe(&self) -> Value {
        json!({
            "description": "Git in the project's repository with structured results: status, diff, log, show and branch read; add, commit and creating a branch write.",
            "category": "vcs",
            "tags": ["git", "vcs"],
            "requests": [
                "show me my uncommitted work",
                "which files did I modify?",
                "show me the recent history of the repository",
                "what branch am I on?",
                "stage everything and commit it with a message",
                "who touched this file last?",
                "start a new branch for the login feature",
                "what went into the latest revision?"
            ],
            "permission": "read_write",
            "timeout": 70_000,
            "examples": [
                { "description": "What changed, file by file", "input": { "action": "status" } },
                { "description": "The last five commits", "input": { "action": "log", "max_count": 5 } },
                { "description": "Stage and commit", "input": { "action": "commit", "message": "Fix the parser", "all": true } }
            ],
            "notes": [
                "status, diff, log, show and listing branches need read_only; add, commit and creating a branch need read_write.",
                "add, commit and creating a branch ask the user first (risk low; a commit, medium); where nobody can be asked, they are refused unless [tools] confirm = \"allow\".",
                "Runs in the native sandbox with hooks and fsmonitor off: a repository's configuration cannot run programs outside the sandbox.",
                "Commits use the repository's [user], else your global git identity, else `Evo <evo@localhost>`; no network (push, fetch) is offered."
            ]
        })
    }

    fn aliases(&self) -> &[&'static str] {
        &["Git"]
    }

    fn permission_for(&self, input: &GitInput) -> Option<Permission> {
        let writes = match input.action {
            Action::Add | Action::Commit => true,
            Action::Branch => input.name.is_some(),
            Action::Status | Action::Diff | Action::Log | Action::Show => false,
        };
        Some(if writes {
            Permission::ReadWrite
        } else {
            Permission::ReadOnly
        })
    }

    fn run(&self, input: GitInput, ctx: SkillContext) -> BoxFuture<'_, Result<GitOutput>> {
        Box::pin(async move {
            if let Some(request) = confirmation(&input) {
                ctx.confirm(request).await?;
            }
            self.execute(input).await
        })
    }
}

/// What the user confirms before `input` changes the repository (writes confirm, as
/// `write` and `edit` do; reads do not): staging and a new branch are undone by one
/// command (risk low), a commit enters the history (risk medium).
fn confirmation(input: &GitInput) -> Option<Confirmation> {
    let arguments = json!({
        "action": input.action, "paths": input.paths, "message": input.message,
        "all": input.all, "name": input.name,
    });
    let (risk, warning) = match input.action {
        Action::Add => (
            Risk::Low,
            format!(
                "git add will stage {}",
                input.paths.as_deref().unwrap_or_default().join(", ")
            ),
        ),
        Action::Commit => (
            Risk::Medium,
            format!(
                "git commit{} will record the staged changes as {:?}",
                if input.all == Some(true) {
                    " --all"
                } else {
                    ""
                },
                input.message.as_deref().unwrap_or_default()
            ),
        ),
        Action::Branch => (
            Risk::Low,
            format!("git branch will create {:?}", input.name.as_deref()?),
        ),
        Action::Status | Action::Diff | Action::Log | Action::Show => return None,
    };
    Some(Confirmation {
        tool: "git".into(),
        arguments,
        risk,
        warning,
    })
}
