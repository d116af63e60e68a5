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

use serde_json::{Value, json};

use super::permission::Permission;
use super::{BoxFuture, Tool, invalid};
use crate::engine::native::NativeSandbox;
use crate::error::{Error, FailureKind, Result};
use crate::skill::kernel::SkillContext;

/// How long one git command may take: status of a large repository, a big diff.
pub const TIMEOUT: Duration = Duration::from_secs(60);
/// Output kept: a diff larger than this does not fit a model's context anyway.
pub const OUTPUT_CAP: usize = 1 << 20;
/// Commits `log` lists unless asked for more.
pub const DEFAULT_LOG_COUNT: u64 = 10;

const UNIT: char = '\u{1f}';
const RECORD: char = '\u{1e}';

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

    async fn run(&self, input: Value) -> Result<Value> {
        let action = input["action"].as_str().unwrap_or_default();
        let path = input["path"].as_str();
        match action {
            "status" => Ok(parse_status(
                &self.git(&["status", "--porcelain=v2", "--branch"]).await?,
            )),
            "diff" => {
                let mut args = vec!["diff", "--numstat", "--patch"];
                if input["staged"].as_bool() == Some(true) {
                    args.push("--cached");
                }
                if let Some(rev) = input["rev"].as_str() {
                    args.push(rev);
                }
                args.push("--");
                args.extend(path);
                Ok(parse_diff(&self.git(&args).await?))
            }
            "log" => {
                let count = input["max_count"]
                    .as_u64()
                    .unwrap_or(DEFAULT_LOG_COUNT)
                    .to_string();
                let format = format!("--format=%H{UNIT}%an{UNIT}%ae{UNIT}%aI{UNIT}%s{RECORD}");
                let mut args = vec!["log", "-n", &count, &format];
                if let Some(rev) = input["rev"].as_str() {
                    args.push(rev);
                }
                args.push("--");
                args.extend(path);
                let out = match self.git(&args).await {
                    Err(e) if e.to_string().contains("does not have any commits") => String::new(),
                    other => other?,
                };
                Ok(json!({ "commits": parse_commits(&out) }))
            }
            "show" => {
                let rev = input["rev"].as_str().unwrap_or("HEAD");
                let format = format!("--format=%H{UNIT}%an{UNIT}%ae{UNIT}%aI{UNIT}%s{RECORD}");
                let out = self
                    .git(&["show", "--numstat", "--patch", &format, rev, "--"])
                    .await?;
                let (head, diff) = out.split_once(RECORD).unwrap_or((&out, ""));
                let commit = parse_commits(&format!("{head}{RECORD}"))
                    .into_iter()
                    .next()
                    .unwrap_or(Value::Null);
                let mut value = parse_diff(diff.trim_start_matches('\n'));
                value["commit"] = commit;
                Ok(value)
            }
            "branch" => {
                if let Some(name) = input["name"].as_str() {
                    self.git(&["branch", "--", name]).await?;
                }
                let out = self
                    .git(&["branch", &format!("--format=%(HEAD){UNIT}%(refname:short)")])
                    .await?;
                let branches: Vec<Value> = out
                    .lines()
                    .filter_map(|l| l.split_once(UNIT))
                    .map(|(head, name)| json!({ "name": name, "current": head == "*" }))
                    .collect();
                Ok(json!({ "branches": branches }))
            }
            "add" => {
                let paths: Vec<&str> = input["paths"]
                    .as_array()
                    .map(|a| a.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                if paths.is_empty() {
                    return Err(invalid(
                        "git",
                        "add needs `paths`: the files to stage, e.g. [\"src/lib.rs\"] or [\".\"]",
                    ));
                }
                let mut args = vec!["add", "--"];
                args.extend(&paths);
                self.git(&args).await?;
                Ok(json!({ "added": paths }))
            }
            "commit" => {
                let message = input["message"].as_str().unwrap_or_default();
                if message.trim().is_empty() {
                    return Err(invalid("git", "commit needs a `message`"));
                }
                let mut args = vec!["commit", "--no-verify", "-m", message];
                if input["all"].as_bool() == Some(true) {
                    args.push("--all");
                }
                let out = self.git(&args).await?;
                let commit = self.git(&["rev-parse", "HEAD"]).await?;
                Ok(json!({
                    "commit": commit.trim(),
                    "summary": out.lines().next().unwrap_or_default(),
                }))
            }
            other => Err(invalid(
                "git",
                &format!(
                    "{other:?} is not an action; use status, diff, log, show, branch, add or commit"
                ),
            )),
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

/// `git status --porcelain=v2 --branch` as `{ branch, upstream, ahead, behind, clean,
/// files: [{ path, index, worktree }], untracked: [...] }`.
fn parse_status(out: &str) -> Value {
    let mut branch = Value::Null;
    let mut upstream = Value::Null;
    let (mut ahead, mut behind) = (0_i64, 0_i64);
    let mut files = Vec::new();
    let mut untracked = Vec::new();
    for line in out.lines() {
        if let Some(head) = line.strip_prefix("# branch.head ") {
            branch = json!(head);
        } else if let Some(up) = line.strip_prefix("# branch.upstream ") {
            upstream = json!(up);
        } else if let Some(ab) = line.strip_prefix("# branch.ab ") {
            let mut parts = ab.split(' ');
            ahead = parts.next().and_then(|a| a.parse().ok()).unwrap_or(0);
            behind = parts
                .next()
                .and_then(|b| b.parse().ok())
                .map_or(0, |b: i64| -b);
        } else if let Some(path) = line.strip_prefix("? ") {
            untracked.push(json!(path));
        } else if line.starts_with("1 ") || line.starts_with("2 ") || line.starts_with("u ") {
            let fields: Vec<&str> = line
                .splitn(if line.starts_with('2') { 10 } else { 9 }, ' ')
                .collect();
            let xy = fields.get(1).copied().unwrap_or("..");
            let path = fields.last().copied().unwrap_or_default();
            let (path, from) = match path.split_once('\t') {
                Some((to, from)) => (to, Some(from)),
                None => (path, None),
            };
            let state = |c: Option<char>| match c {
                Some('M') => "modified",
                Some('A') => "added",
                Some('D') => "deleted",
                Some('R') => "renamed",
                Some('C') => "copied",
                Some('U') => "unmerged",
                Some('T') => "type_changed",
                _ => "unchanged",
            };
            let mut file = json!({
                "path": path,
                "index": state(xy.chars().next()),
                "worktree": state(xy.chars().nth(1)),
            });
            if let Some(from) = from {
                file["from"] = json!(from);
            }
            files.push(file);
        }
    }
    json!({
        "branch": branch,
        "upstream": upstream,
        "ahead": ahead,
        "behind": behind,
        "clean": files.is_empty() && untracked.is_empty(),
        "files": files,
        "untracked": untracked,
    })
}

/// `--numstat --patch` output as `{ files: [{ path, added, deleted }], patch }`.
fn parse_diff(out: &str) -> Value {
    let (stats, patch) = match out.find("diff --git") {
        Some(at) => out.split_at(at),
        None => (out, ""),
    };
    let files: Vec<Value> = stats
        .lines()
        .filter_map(|l| {
            let mut parts = l.splitn(3, '\t');
            let added = parts.next()?;
            let deleted = parts.next()?;
            let path = parts.next()?;
            // Binary files show `-` for both counts.
            Some(json!({
                "path": path,
                "added": added.parse::<u64>().ok(),
                "deleted": deleted.parse::<u64>().ok(),
            }))
        })
        .collect();
    json!({ "files": files, "patch": patch })
}

fn parse_commits(out: &str) -> Vec<Value> {
    out.split(RECORD)
        .filter_map(|record| {
            let record = record.trim_start_matches('\n');
            let mut f = record.splitn(5, UNIT);
            let hash = f.next().filter(|h| !h.is_empty())?;
            Some(json!({
                "hash": hash,
                "author": f.next()?,
                "email": f.next()?,
                "date": f.next()?,
                "subject": f.next()?.trim_end(),
            }))
        })
        .collect()
}

impl Tool for Git {
    fn manifest(&self) -> Value {
        json!({
            "name": "git",
            "description": "Git in the project's repository with structured results: status, diff, log, show and branch read; add, commit and creating a branch write.",
            "category": "vcs",
            "tags": ["git", "vcs"],
            "permission": "read_write",
            "timeout": 70_000,
            "input": { "type": "object", "properties": {
                "action": { "type": "string", "enum": ["status", "diff", "log", "show", "branch", "add", "commit"] },
                "path": { "type": "string", "description": "diff/log: only this path" },
                "rev": { "type": "string", "description": "diff: compare with this revision; log: start here; show: this commit (HEAD)" },
                "staged": { "type": "boolean", "description": "diff: the staged changes instead of the working tree's" },
                "max_count": { "type": "integer", "minimum": 1, "maximum": 1000, "description": "log: how many commits (10)" },
                "name": { "type": "string", "description": "branch: create this branch" },
                "paths": { "type": "array", "items": { "type": "string" }, "description": "add: the files to stage" },
                "message": { "type": "string", "description": "commit: the message" },
                "all": { "type": "boolean", "description": "commit: stage every tracked change first (-a)" } },
                "required": ["action"], "additionalProperties": false },
            "output": { "type": "object" },
            "examples": [
                { "description": "What changed, file by file", "input": { "action": "status" } },
                { "description": "The last five commits", "input": { "action": "log", "max_count": 5 } },
                { "description": "Stage and commit", "input": { "action": "commit", "message": "Fix the parser", "all": true } }
            ],
            "notes": [
                "status, diff, log, show and listing branches need read_only; add, commit and creating a branch need read_write.",
                "Runs in the native sandbox with hooks and fsmonitor off: a repository's configuration cannot run programs outside the sandbox.",
                "Commits use the repository's [user], else your global git identity, else `Evo <evo@localhost>`; no network (push, fetch) is offered."
            ]
        })
    }

    fn aliases(&self) -> &[&'static str] {
        &["Git"]
    }

    fn permission_for(&self, input: &Value) -> Option<Permission> {
        let writes = match input["action"].as_str() {
            Some("add" | "commit") => true,
            Some("branch") => input.get("name").is_some(),
            _ => false,
        };
        Some(if writes {
            Permission::ReadWrite
        } else {
            Permission::ReadOnly
        })
    }

    fn call(&self, input: Value, _ctx: SkillContext) -> BoxFuture<'_, Result<Value>> {
        Box::pin(self.run(input))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_is_structured() {
        let out = "# branch.oid abc\n# branch.head main\n# branch.upstream origin/main\n# branch.ab +2 -1\n1 .M N... 100644 100644 100644 a b src/lib.rs\n1 A. N... 000000 100644 100644 0 b new.rs\n2 R. N... 100644 100644 100644 a b R100 to.rs\tfrom.rs\n? notes.txt\n";
        assert_eq!(
            parse_status(out),
            json!({
                "branch": "main", "upstream": "origin/main", "ahead": 2, "behind": 1, "clean": false,
                "files": [
                    { "path": "src/lib.rs", "index": "unchanged", "worktree": "modified" },
                    { "path": "new.rs", "index": "added", "worktree": "unchanged" },
                    { "path": "to.rs", "from": "from.rs", "index": "renamed", "worktree": "unchanged" }
                ],
                "untracked": ["notes.txt"]
            })
        );
    }

    #[test]
    fn diffs_and_logs_are_structured() {
        let diff = parse_diff(
            "3\t1\tsrc/lib.rs\n-\t-\tlogo.png\ndiff --git a/src/lib.rs b/src/lib.rs\n+x\n",
        );
        assert_eq!(
            diff["files"],
            json!([{ "path": "src/lib.rs", "added": 3, "deleted": 1 }, { "path": "logo.png", "added": null, "deleted": null }])
        );
        assert!(diff["patch"].as_str().unwrap().starts_with("diff --git"));
        let log = parse_commits(
            "h1\u{1f}Ann\u{1f}a@x\u{1f}2026-01-01T00:00:00Z\u{1f}First\u{1e}\nh2\u{1f}Bo\u{1f}b@x\u{1f}2026-01-02T00:00:00Z\u{1f}Second\u{1e}\n",
        );
        assert_eq!(log.len(), 2);
        assert_eq!(log[1]["subject"], "Second");
    }
}
