//! In-process tools: Rust code a host runs without a sandbox process or a Wasm instance.
//!
//! Evo's own are registered in one place, `register_builtins`: `read::Read`,
//! `glob::Glob`, `grep::Grep`, `calculate::Calculate` and the `memory` tools. `BuiltinTools::execute` runs
//! `read` or `calculate` directly, without the kernel (an unknown name is
//! `BuiltIn tool not found: <name>`, code `TOOL_NOT_FOUND`).
//!
//! A [`Tool`] is a manifest (the `skill.json` shape: name, description, input and output
//! JSON Schema) and an async function. Registered in a host (with
//! [`HostBuilder::tool`](crate::HostBuilder::tool)) it is a skill like any other: the
//! agent, `evo skill run` and every other front end see it, and its calls go through the
//! kernel's gates (input validation, timeout, output validation, statistics, events).
//! Every built-in tool is a [`TypedTool`]: its input and output are Rust types, and the
//! manifest's schemas are generated from them. Implement [`Tool`] itself only for a tool
//! whose schema is known at run time alone (one read from a file, say).

#[cfg(feature = "dev-tools")]
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod bash;
#[cfg(feature = "dev-tools")]
#[cfg(not(feature = "internals"))]
pub(crate) mod bash;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod calculate;
#[cfg(not(feature = "internals"))]
pub(crate) mod calculate;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod descriptor;
#[cfg(not(feature = "internals"))]
pub(crate) mod descriptor;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod edit;
#[cfg(not(feature = "internals"))]
pub(crate) mod edit;
#[cfg(feature = "dev-tools")]
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod git;
#[cfg(feature = "dev-tools")]
#[cfg(not(feature = "internals"))]
pub(crate) mod git;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod glob;
#[cfg(not(feature = "internals"))]
pub(crate) mod glob;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod grep;
#[cfg(not(feature = "internals"))]
pub(crate) mod grep;
#[cfg(feature = "dev-tools")]
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod lsp;
#[cfg(feature = "dev-tools")]
#[cfg(not(feature = "internals"))]
pub(crate) mod lsp;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod memory;
#[cfg(not(feature = "internals"))]
pub(crate) mod memory;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod project;
#[cfg(not(feature = "internals"))]
pub(crate) mod project;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod read;
#[cfg(not(feature = "internals"))]
pub(crate) mod read;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod search;
#[cfg(not(feature = "internals"))]
pub(crate) mod search;
#[cfg(feature = "dev-tools")]
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod shell;
#[cfg(feature = "dev-tools")]
#[cfg(not(feature = "internals"))]
pub(crate) mod shell;
#[cfg(feature = "dev-tools")]
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod terminal;
#[cfg(feature = "dev-tools")]
#[cfg(not(feature = "internals"))]
pub(crate) mod terminal;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod write;
#[cfg(not(feature = "internals"))]
pub(crate) mod write;
internal! {
    /// Confirmation of dangerous calls (defined with the kernel, which asks).
    pub use crate::skill::kernel::confirm;
}
internal! {
    /// The call history (defined with the kernel, which records it).
    pub use crate::skill::observe::history;
}
internal! {
    /// Permission levels and profiles (defined with the kernel, which checks them).
    pub use crate::skill::permission;
}
mod settings;
#[cfg(feature = "dev-tools")]
mod toolchains;
mod typed;

pub use crate::skill::kernel::confirm::{Always, Confirmation, Confirmer, Risk};
pub use descriptor::{ToolDescriptor, ToolRequest, ToolResult};

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use crate::error::{Error, FailureKind, Result};
pub use crate::skill::exchange::BoxFuture;
use crate::skill::kernel::SkillContext;
use crate::skill::kernel::executor::{Executor, ExecutorKind, SkillOutput};
use crate::skill::kernel::table::{RegisteredSkill, SkillTable};
use crate::skill::manifest::SkillMeta;
use permission::Permission;
pub use settings::ToolsSettings;
pub use typed::TypedTool;

/// A skill written in Rust and run in-process.
pub trait Tool: Send + Sync + fmt::Debug + 'static {
    /// The manifest, in the `skill.json` shape. It is validated when the tool is
    /// registered; a bad one is [`Error::InvalidManifest`].
    fn manifest(&self) -> Value;

    /// Other names the tool answers to.
    fn aliases(&self) -> &[&'static str] {
        &[]
    }

    /// The level one call with `input` needs, when it depends on the input (at most the
    /// manifest's `permission`); `None` for the manifest's level.
    fn permission_for(&self, _input: &Value) -> Option<Permission> {
        None
    }

    /// Runs the tool on `input`, which has passed the input schema (defaults applied).
    /// `ctx` is the tool's own frame: what it `call`s runs on its behalf.
    fn call(&self, input: Value, ctx: SkillContext) -> BoxFuture<'_, Result<Value>>;
}

internal! {
    /// Registers `tool` (and its aliases) in `registry`, replacing a skill of the same name.
    pub fn register(registry: &SkillTable, tool: Arc<dyn Tool>) -> Result<()> {
        let manifest = tool.manifest();
        let meta =
            SkillMeta::from_json(&manifest.to_string()).map_err(|problems| Error::InvalidManifest {
                skill: manifest["name"].as_str().unwrap_or("tool").to_owned(),
                problems,
            })?;
        let name = meta.name.clone();
        let aliases = tool.aliases();
        registry.register(RegisteredSkill::new(
            meta,
            Arc::new(ToolExecutor(tool.clone())),
        )?);
        for alias in aliases {
            registry.alias(alias, &name);
        }
        Ok(())
    }
}

#[derive(Debug)]
struct ToolExecutor(Arc<dyn Tool>);

impl Executor for ToolExecutor {
    fn kind(&self) -> ExecutorKind {
        ExecutorKind::Builtin
    }

    fn execute(&self, input: Value, ctx: SkillContext) -> BoxFuture<'_, Result<SkillOutput>> {
        Box::pin(async move { self.0.call(input, ctx).await.map(SkillOutput::from) })
    }

    fn permission_for(&self, input: &Value) -> Option<Permission> {
        self.0.permission_for(input)
    }
}

internal! {
    /// Registers every built-in tool that needs no sandbox in `registry`: the file tools
    /// (`read`, `write`, `edit`, `glob`, `grep`, `search`, confined to the project at
    /// `root`), `calculate`, and the memory tools.
    pub fn register_builtins(registry: &SkillTable, root: impl Into<PathBuf>) -> Result<()> {
        let root = root.into();
        BuiltinTools::new(root.clone()).register(registry)?;
        register(registry, Arc::new(write::Write::new(root.clone())))?;
        register(registry, Arc::new(edit::Edit::new(root.clone())))?;
        register(registry, Arc::new(glob::Glob::new(root.clone())))?;
        register(registry, Arc::new(grep::Grep::new(root.clone())))?;
        register(registry, Arc::new(search::Search::new(root)))?;
        memory::register(registry)
    }
}

internal! {
/// How the tools that run programs are set up (from `[tools]`; what the builder
/// hands the registration of `bash`, `terminal`, `git` and `lsp`).
#[derive(Debug, Clone)]
pub struct ProgramTools {
    /// The commands `bash` (and a terminal's prompt) may run.
    pub allow: Vec<String>,
    /// Hosts a command line may name in a URL.
    pub allowed_hosts: Vec<String>,
    /// The longest a `bash` call may ask for.
    pub max_timeout: std::time::Duration,
    /// How long a language server may sit unused.
    pub lsp_idle: std::time::Duration,
    /// Toolchain directories `bash` may use, read-only (`[tools] toolchains`).
    pub toolchains: Vec<PathBuf>,
}
}

impl ProgramTools {
    /// Commands allowed by default: version control, builds and package managers (which
    /// run offline in the sandbox), and the read-mostly file utilities a coding agent
    /// uses.
    pub const DEFAULT_ALLOW: &[&str] = &[
        "git", "cargo", "rustc", "npm", "node", "python3", "python", "pip", "make", "go", "ls",
        "cat", "head", "tail", "wc", "grep", "rg", "find", "sort", "uniq", "cut", "tr", "diff",
        "echo", "printf", "pwd", "cd", "mkdir", "touch", "cp", "mv", "rm", "sed", "awk", "true",
        "false", "test", "[", "sleep", "date", "basename", "dirname", "file", "stat", "du", "tree",
        "which", "wait", "exit",
    ];
    /// The longest a `bash` call may ask for unless `[tools] bash_max_timeout_ms` says
    /// otherwise: long enough for a build or a test suite, short enough that a hung call
    /// ends.
    pub const MAX_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);
    /// A language server unused this long is shut down: long enough to keep it across a
    /// task's calls, short enough not to hold a gigabyte of index for an idle host.
    pub const LSP_IDLE: std::time::Duration = std::time::Duration::from_secs(300);
}

internal! {
    /// Registers the tools that run programs for the project at `root`: `bash`, `terminal`
    /// and `git` in `sandbox`, and `lsp`'s language servers (the `dev-tools` feature).
    #[cfg(feature = "dev-tools")]
    pub fn register_programs(
        registry: &SkillTable,
        root: impl Into<PathBuf>,
        sandbox: &crate::engine::native::NativeSandbox,
        settings: ProgramTools,
    ) -> Result<()> {
        let root = root.into();
        let bash = bash::Bash::new(
            root.clone(),
            sandbox.clone(),
            settings.allow,
            settings.allowed_hosts,
            settings.max_timeout,
        )
        .with_toolchains(&settings.toolchains);
        let launcher = sandbox.config().launcher.clone();
        let terminal = terminal::Terminal::new(root.clone(), launcher, bash.clone())
            .with_cgroup_limits(sandbox.config().cgroup_limits());
        register(registry, Arc::new(bash))?;
        register(registry, Arc::new(terminal))?;
        register(
            registry,
            Arc::new(git::Git::new(root.clone(), sandbox.clone())),
        )?;
        let lsp = lsp::Lsp::new(root).with_idle_timeout(settings.lsp_idle);
        register(registry, Arc::new(lsp))
    }
}

internal! {
    /// `read` and `calculate`, reading files under one root directory.
    #[derive(Debug, Clone)]
    pub struct BuiltinTools {
        read: read::Read,
    }
}

impl Default for BuiltinTools {
    /// Tools rooted at the current directory.
    fn default() -> Self {
        Self::new(".")
    }
}

impl BuiltinTools {
    /// Tools that read files under `root` only.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            read: read::Read::new(root),
        }
    }

    /// The canonical name of tool `name` (which may be an alias).
    #[cfg(any(test, feature = "internals"))]
    pub fn resolve(name: &str) -> Option<&'static str> {
        match name {
            "read" | "file-read" | "file_read" | "Read" => Some("read"),
            "calculate" => Some("calculate"),
            _ => None,
        }
    }

    /// Runs tool `name` on `input` directly (no gates, no statistics).
    #[cfg(any(test, feature = "internals"))]
    pub fn execute(&self, name: &str, input: &Value) -> Result<Value> {
        match Self::resolve(name) {
            Some("read") => self.read.read(input),
            Some("calculate") => {
                let input = typed::input_of::<calculate::Calculate>(input.clone())?;
                typed::output_of::<calculate::Calculate>(&calculate::Calculate::evaluate(&input)?)
            }
            _ => Err(Error::ToolNotFound {
                name: name.to_owned(),
            }),
        }
    }

    /// Registers `read` and `calculate` (and their aliases) in `registry`.
    pub fn register(&self, registry: &SkillTable) -> Result<()> {
        register(registry, Arc::new(self.read.clone()))?;
        register(registry, Arc::new(calculate::Calculate))
    }
}

/// `path` resolved against `root`, refused unless it stays inside `root` once symlinks
/// and `..` are resolved.
pub(crate) fn contained(tool: &str, root: &Path, path: &Path) -> Result<PathBuf> {
    let root = root.canonicalize().map_err(Error::io_at(root))?;
    let joined = root.join(path);
    let resolved = joined.canonicalize().map_err(Error::io_at(&joined))?;
    if resolved.starts_with(&root) {
        Ok(resolved)
    } else {
        Err(Error::Skill {
            skill: tool.to_owned(),
            kind: FailureKind::Denied,
            message: format!(
                "{} is outside the directory {tool} may access ({})",
                path.display(),
                root.display()
            ),
        })
    }
}

/// The walk the file tools share, as ripgrep walks: `.gitignore` (inside a git
/// repository or not), hidden files skipped, symlinks not followed (a link out of the
/// project is not entered).
pub(crate) fn walk(base: &Path) -> ignore::WalkBuilder {
    let mut walk = ignore::WalkBuilder::new(base);
    walk.require_git(false).follow_links(false);
    walk
}

/// A tool's refusal of its input.
fn invalid(skill: &str, message: &str) -> Error {
    Error::Skill {
        skill: skill.to_owned(),
        kind: FailureKind::InvalidInput,
        message: message.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn read_returns_content_inside_the_root_only() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("README.md"), "# hello\n").unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(outside.path().join("secret"), dir.path().join("link")).unwrap();

        let tools = BuiltinTools::new(dir.path());
        // A built-in executor's direct call: execute('file-read', { path: './README.md' }).
        assert_eq!(
            tools
                .execute("file-read", &json!({ "path": "./README.md" }))
                .unwrap(),
            json!({ "success": true, "content": "# hello\n" })
        );
        for escape in [
            "../secret",
            "link",
            outside.path().join("secret").to_str().unwrap(),
        ] {
            let err = tools
                .execute("read", &json!({ "path": escape }))
                .unwrap_err();
            assert!(
                matches!(
                    &err,
                    Error::Skill {
                        kind: FailureKind::Denied,
                        ..
                    }
                ) || matches!(&err, Error::Io { .. }),
                "{escape}: {err}"
            );
        }
        let err = tools
            .execute("read", &json!({ "path": "link" }))
            .unwrap_err();
        assert_eq!(err.code(), "PERMISSION_DENIED");
        let err = tools
            .execute("Read", &json!({ "path": "missing.md" }))
            .unwrap_err();
        assert_eq!(err.code(), "IO_ERROR");
    }

    #[test]
    fn glob_lists_matches_newest_first_without_ignored_or_outside_files() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for (file, age_secs) in [
            ("src/main.rs", 30),
            ("src/lib.rs", 10),
            ("tests/it.rs", 20),
            ("README.md", 5),
            ("target/debug/build.rs", 1),
            (".hidden/x.rs", 1),
        ] {
            let path = root.join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, "").unwrap();
            let when = std::time::SystemTime::now() - std::time::Duration::from_secs(age_secs);
            std::fs::File::options()
                .write(true)
                .open(&path)
                .unwrap()
                .set_modified(when)
                .unwrap();
        }
        std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
        let glob = glob::Glob::new(root);
        let find = |input: Value| {
            glob.find(&serde_json::from_value(input).unwrap())
                .map(|out| serde_json::to_value(out).unwrap())
        };
        // `{ "pattern": "**/*.rs" }`, sorted by modification time.
        assert_eq!(
            find(json!({ "pattern": "**/*.rs" })).unwrap(),
            json!({ "files": ["src/lib.rs", "tests/it.rs", "src/main.rs"], "count": 3, "truncated": false })
        );
        assert_eq!(
            find(json!({ "pattern": "*.rs", "path": "src", "limit": 1 })).unwrap(),
            json!({ "files": ["src/lib.rs"], "count": 2, "truncated": true })
        );
        assert_eq!(
            find(json!({ "pattern": "*.rs" })).unwrap()["files"],
            json!([]),
            "`*` does not cross directories"
        );
        let err = find(json!({ "pattern": "*", "path": ".." })).unwrap_err();
        assert_eq!(err.code(), "PERMISSION_DENIED");
        assert!(
            err.to_string()
                .contains("is outside the directory glob may access"),
            "{err}"
        );
        let err = find(json!({ "pattern": "a[" })).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("glob: invalid input: \"a[\" is not a glob pattern"),
            "{err}"
        );
    }

    #[test]
    fn grep_finds_lines_files_and_counts_like_ripgrep() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for (file, text) in [
            (
                "src/main.rs",
                "fn main() {\n    // TODO: parse args\n    run();\n}\n",
            ),
            (
                "src/lib.rs",
                "// TODO: docs\npub fn run() {}\n// todo: lower\n",
            ),
            ("notes.md", "TODO: write notes\n"),
            ("target/gen.rs", "// TODO: generated\n"),
        ] {
            std::fs::create_dir_all(root.join(file).parent().unwrap()).unwrap();
            std::fs::write(root.join(file), text).unwrap();
        }
        std::fs::write(root.join("src/blob.bin"), b"TODO:\0\x01binary").unwrap();
        std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
        let grep = grep::Grep::new(root);
        let search = |input: Value| {
            grep.search(&serde_json::from_value(input).unwrap())
                .map(|out| serde_json::to_value(out).unwrap())
        };
        // Every matching line, with its path and line number.
        assert_eq!(
            search(json!({ "pattern": "TODO:", "path": "src/", "output_mode": "content" }))
                .unwrap(),
            json!({ "results": ["src/lib.rs:1:// TODO: docs", "src/main.rs:2:    // TODO: parse args"], "truncated": false })
        );
        assert_eq!(
            search(json!({ "pattern": "todo", "case_insensitive": true, "output_mode": "count" }))
                .unwrap()["results"],
            json!(["notes.md:1", "src/lib.rs:2", "src/main.rs:1"])
        );
        assert_eq!(
            search(json!({ "pattern": "TODO", "type": "rust" })).unwrap()["results"],
            json!(["src/lib.rs", "src/main.rs"])
        );
        assert_eq!(
            search(json!({ "pattern": "TODO", "glob": "*.md" })).unwrap()["results"],
            json!(["notes.md"])
        );
        assert_eq!(
            search(json!({ "pattern": "parse", "output_mode": "content", "context": 1 })).unwrap()
                ["results"],
            json!([
                "src/main.rs-1-fn main() {",
                "src/main.rs:2:    // TODO: parse args",
                "src/main.rs-3-    run();"
            ])
        );
        assert_eq!(
            search(json!({ "pattern": "TODO", "head_limit": 1 })).unwrap(),
            json!({ "results": ["notes.md"], "truncated": true })
        );
        let err = search(json!({ "pattern": "x", "path": "../" })).unwrap_err();
        assert_eq!(err.code(), "PERMISSION_DENIED");
        let err = search(json!({ "pattern": "(" })).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("grep: invalid input: \"(\" is not a regular expression"),
            "{err}"
        );
    }

    #[test]
    fn calculate_follows_the_seed() {
        let tools = BuiltinTools::default();
        assert_eq!(
            tools
                .execute("calculate", &json!({ "expression": "sqrt(144) + 10" }))
                .unwrap(),
            json!({ "result": 22 })
        );
        let err = tools
            .execute("calculate", &json!({ "expression": "1 / 0" }))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "calculate: invalid input: division by zero at position 5"
        );
    }
}
