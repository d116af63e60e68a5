//! `glob` (aliases `Glob`, `file-glob`, `file_glob`): the files under the tool's root
//! whose path matches a pattern (`**/*.rs`), newest first, with `.gitignore` and hidden
//! files left out — the walk is the `ignore` crate's, as in ripgrep.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{BoxFuture, TypedTool, contained, invalid};
use crate::error::{Error, Result};
use crate::skill::kernel::SkillContext;

/// Files listed unless `limit` says otherwise.
pub const DEFAULT_LIMIT: usize = 1_000;
/// The most files one call lists.
pub const MAX_LIMIT: usize = 10_000;

/// Finds files by pattern under one root directory.
#[derive(Debug, Clone)]
pub struct Glob {
    root: PathBuf,
}

/// `glob`'s input.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct GlobInput {
    /// a glob: `*` within a directory, `**` across directories, `?`, `[abc]`, `{a,b}`
    #[schemars(length(min = 1))]
    pub pattern: String,
    /// the directory to search, relative to the working directory (default: all of it)
    #[serde(default)]
    pub path: Option<String>,
    /// the most files to list
    #[serde(default = "default_limit")]
    #[schemars(range(min = 1, max = MAX_LIMIT))]
    pub limit: usize,
}

fn default_limit() -> usize {
    DEFAULT_LIMIT
}

/// `glob`'s output.
#[derive(Debug, PartialEq, Serialize, JsonSchema)]
pub struct GlobOutput {
    /// paths relative to the working directory, newest first
    pub files: Vec<String>,
    /// how many files matched
    pub count: usize,
    /// whether more matched than `limit`
    pub truncated: bool,
}

impl Glob {
    /// `glob` confined to `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The files matching `input.pattern` under `input.path` (default: the root).
    pub fn find(&self, input: &GlobInput) -> Result<GlobOutput> {
        let pattern = &input.pattern;
        let limit = input.limit.clamp(1, MAX_LIMIT);
        let root = self.root.canonicalize().map_err(Error::io_at(&self.root))?;
        let base = match &input.path {
            Some(path) => contained("glob", &self.root, Path::new(path))?,
            None => root.clone(),
        };
        if !base.is_dir() {
            return Err(invalid(
                "glob",
                &format!("{} is not a directory", base.display()),
            ));
        }
        let matcher = globset::GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
            .map_err(|e| invalid("glob", &format!("{pattern:?} is not a glob pattern: {e}")))?
            .compile_matcher();
        let mut found: Vec<(SystemTime, String)> = Vec::new();
        let walk = super::walk(&base).build();
        for entry in walk.flatten() {
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let Ok(relative) = entry.path().strip_prefix(&base) else {
                continue;
            };
            if !matcher.is_match(relative) {
                continue;
            }
            let modified = entry
                .metadata()
                .ok()
                .and_then(|m| m.modified().ok())
                .unwrap_or(SystemTime::UNIX_EPOCH);
            let shown = entry.path().strip_prefix(&root).unwrap_or(entry.path());
            found.push((modified, shown.to_string_lossy().replace('\\', "/")));
        }
        // Newest first; the path breaks ties so the order is stable.
        found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        let count = found.len();
        let files: Vec<String> = found.into_iter().take(limit).map(|(_, p)| p).collect();
        Ok(GlobOutput {
            files,
            count,
            truncated: count > limit,
        })
    }
}

impl TypedTool for Glob {
    const NAME: &'static str = "glob";
    type Input = GlobInput;
    type Output = GlobOutput;

    fn describe(&self) -> Value {
        json!({
            "description": "Finds files by path pattern (e.g. `**/*.rs`, `src/**/test_*.py`) under the working directory, newest first; files ignored by .gitignore and hidden files are left out. Use it to find files by name; use a search tool for their contents.",
            "category": "file",
            "tags": ["file", "readonly"],
            "requests": [
                "list all the python files in the project",
                "where are the test files?",
                "which markdown documents are under docs?",
                "show every .rs file in src",
                "are there any files named config.*?",
                "what yaml files does this repo have?",
                "locate the files ending in .json"
            ],
            "timeout": 10000,
            "examples": [
                { "description": "Every Rust file, newest first", "input": { "pattern": "**/*.rs" } },
                { "description": "Only under one directory", "input": { "pattern": "*.rs", "path": "src" } },
                { "description": "Several extensions, the ten newest", "input": { "pattern": "**/*.{md,toml}", "limit": 10 } }
            ],
            "notes": [
                "`*` stays within a directory; `**` crosses directories.",
                "Files ignored by .gitignore and hidden files are left out, as ripgrep leaves them out.",
                "Paths are resolved inside the project directory."
            ]
        })
    }

    fn aliases(&self) -> &[&'static str] {
        &["Glob", "file-glob", "file_glob"]
    }

    fn run(&self, input: GlobInput, _ctx: SkillContext) -> BoxFuture<'_, Result<GlobOutput>> {
        let glob = self.clone();
        // A walk of a large tree is blocking I/O.
        Box::pin(async move {
            tokio::task::spawn_blocking(move || glob.find(&input))
                .await
                .map_err(|e| Error::Engine(format!("glob stopped: {e}")))?
        })
    }
}
