//! `grep` (aliases `Grep`, `file-grep`, `file_grep`): a regular expression over the files
//! under the tool's root, with ripgrep's own crates (`grep-regex`, `grep-searcher`, and
//! the `ignore` walk: `.gitignore`, hidden files, binary files skipped).
//!
//! Output modes, as ripgrep prints them: `content` (`path:line:text`, context lines as
//! `path-line-text`), `files_with_matches` (paths), `count` (`path:count`).

use std::path::{Path, PathBuf};

use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{BoxFuture, TypedTool, contained, invalid};
use crate::error::{Error, Result};
use crate::skill::kernel::SkillContext;

/// Result lines unless `head_limit` says otherwise.
pub const DEFAULT_LIMIT: usize = 500;
/// The most result lines one call returns.
pub const MAX_LIMIT: usize = 10_000;
/// The most context lines on either side of a match.
pub const MAX_CONTEXT: u64 = 20;

/// How results are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// `path:line:text`, context lines as `path-line-text`
    Content,
    /// the paths of files with a match
    #[default]
    #[serde(rename = "files_with_matches")]
    Files,
    /// `path:count`
    Count,
}

/// `grep`'s input.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct GrepInput {
    /// a regular expression (Rust regex syntax)
    #[schemars(length(min = 1))]
    pub pattern: String,
    /// the directory to search, relative to the working directory (default: all of it)
    #[serde(default)]
    pub path: Option<String>,
    /// how results are shown
    #[serde(default)]
    pub output_mode: Mode,
    /// only files matching this glob, e.g. `*.rs` or `src/**/*.ts`
    #[serde(default)]
    pub glob: Option<String>,
    /// only files of this type, as ripgrep names them: rust, py, js, ts, md, …
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    /// match regardless of case
    #[serde(default)]
    pub case_insensitive: bool,
    /// lines of context around each match (content mode)
    #[serde(default)]
    #[schemars(range(max = MAX_CONTEXT))]
    pub context: Option<u64>,
    /// lines before each match (content mode)
    #[serde(default)]
    #[schemars(range(max = MAX_CONTEXT))]
    pub before: Option<u64>,
    /// lines after each match (content mode)
    #[serde(default)]
    #[schemars(range(max = MAX_CONTEXT))]
    pub after: Option<u64>,
    /// the most result lines
    #[serde(default = "default_limit")]
    #[schemars(range(min = 1, max = MAX_LIMIT))]
    pub head_limit: usize,
}

fn default_limit() -> usize {
    DEFAULT_LIMIT
}

/// `grep`'s output.
#[derive(Debug, PartialEq, Serialize, JsonSchema)]
pub struct GrepOutput {
    /// paths, `path:line:text` lines or `path:count`, as output_mode says
    pub results: Vec<String>,
    /// whether results were cut at head_limit
    pub truncated: bool,
}

/// Searches file contents under one root directory.
#[derive(Debug, Clone)]
pub struct Grep {
    root: PathBuf,
}

/// Collects one file's lines.
struct Lines<'a> {
    path: &'a str,
    mode: Mode,
    out: &'a mut Vec<String>,
    matches: u64,
    room: usize,
}

impl Sink for Lines<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, found: &SinkMatch<'_>) -> std::io::Result<bool> {
        self.matches += 1;
        if self.mode == Mode::Content {
            let text = String::from_utf8_lossy(found.bytes());
            self.out.push(format!(
                "{}:{}:{}",
                self.path,
                found.line_number().unwrap_or(0),
                text.trim_end_matches(['\n', '\r'])
            ));
        }
        // Files and counts need one match, or all of them; lines stop at the limit.
        Ok(match self.mode {
            Mode::Files => false,
            Mode::Count => true,
            Mode::Content => self.out.len() < self.room,
        })
    }

    fn context(&mut self, _: &Searcher, line: &SinkContext<'_>) -> std::io::Result<bool> {
        let text = String::from_utf8_lossy(line.bytes());
        self.out.push(format!(
            "{}-{}-{}",
            self.path,
            line.line_number().unwrap_or(0),
            text.trim_end_matches(['\n', '\r'])
        ));
        Ok(self.out.len() < self.room)
    }
}

impl Grep {
    /// `grep` confined to `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// Runs the search `input` describes.
    pub fn search(&self, input: &GrepInput) -> Result<GrepOutput> {
        let bad = |message: String| invalid("grep", &message);
        let pattern = &input.pattern;
        let mode = input.output_mode;
        let limit = input.head_limit.clamp(1, MAX_LIMIT);
        let lines = |n: Option<u64>| n.map(|n| n.min(MAX_CONTEXT));
        let context = lines(input.context).unwrap_or(0);
        let before = lines(input.before).unwrap_or(context);
        let after = lines(input.after).unwrap_or(context);
        let matcher = RegexMatcherBuilder::new()
            .case_insensitive(input.case_insensitive)
            .build(pattern)
            .map_err(|e| bad(format!("{pattern:?} is not a regular expression: {e}")))?;
        let root = self.root.canonicalize().map_err(Error::io_at(&self.root))?;
        let base = match &input.path {
            Some(path) => contained("grep", &self.root, Path::new(path))?,
            None => root.clone(),
        };
        let mut walk = super::walk(&base);
        if let Some(glob) = &input.glob {
            let mut overrides = ignore::overrides::OverrideBuilder::new(&base);
            overrides
                .add(glob)
                .map_err(|e| bad(format!("glob {glob:?}: {e}")))?;
            walk.overrides(
                overrides
                    .build()
                    .map_err(|e| bad(format!("glob {glob:?}: {e}")))?,
            );
        }
        if let Some(kind) = &input.kind {
            let mut types = ignore::types::TypesBuilder::new();
            types.add_defaults();
            types.select(kind);
            walk.types(types.build().map_err(|e| {
                bad(format!(
                    "type {kind:?}: {e} (types are ripgrep's: rust, py, js, md, …)"
                ))
            })?);
        }
        let mut searcher = SearcherBuilder::new()
            .line_number(true)
            .binary_detection(BinaryDetection::quit(0))
            .before_context(if mode == Mode::Content {
                before as usize
            } else {
                0
            })
            .after_context(if mode == Mode::Content {
                after as usize
            } else {
                0
            })
            .build();
        let mut results = Vec::new();
        let mut truncated = false;
        let mut entries: Vec<PathBuf> = walk
            .build()
            .flatten()
            .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
            .map(ignore::DirEntry::into_path)
            .collect();
        entries.sort();
        for file in entries {
            if results.len() >= limit {
                truncated = true;
                break;
            }
            let shown = file
                .strip_prefix(&root)
                .unwrap_or(&file)
                .to_string_lossy()
                .replace('\\', "/");
            let mut lines = Lines {
                path: &shown,
                mode,
                out: &mut results,
                matches: 0,
                room: limit,
            };
            // An unreadable file is skipped, as ripgrep does.
            if searcher.search_path(&matcher, &file, &mut lines).is_err() {
                continue;
            }
            let matches = lines.matches;
            match mode {
                Mode::Files if matches > 0 => results.push(shown),
                Mode::Count if matches > 0 => results.push(format!("{shown}:{matches}")),
                _ => {}
            }
        }
        if results.len() > limit {
            results.truncate(limit);
            truncated = true;
        }
        Ok(GrepOutput { results, truncated })
    }
}

impl TypedTool for Grep {
    const NAME: &'static str = "grep";
    type Input = GrepInput;
    type Output = GrepOutput;

    fn describe(&self) -> Value {
        json!({
            "description": "Searches file contents under the working directory for a regular expression (ripgrep's engine; .gitignore, hidden and binary files skipped). output_mode: files_with_matches (default; paths), content (path:line:text, with context lines), count (path:count). Filter with glob (`*.rs`) or type (rust, py, js, …).",
            "category": "file",
            "tags": ["file", "readonly", "search"],
            "requests": [
                "where is TODO written in the code?",
                "which files mention API_KEY?",
                "show every line that contains unwrap(",
                "look for lines matching fn main",
                "find occurrences of the message 'permission denied'",
                "which source files call connect(",
                "grep for the word deprecated"
            ],
            "timeout": 30000,
            "examples": [
                { "description": "TODO comments with their lines", "input": { "pattern": "TODO:", "path": "src/", "output_mode": "content" } },
                { "description": "Files that define a function, Rust only", "input": { "pattern": "fn \\w+\\(", "type": "rust" } },
                { "description": "Matches per file, any case", "input": { "pattern": "error", "case_insensitive": true, "output_mode": "count" } }
            ],
            "notes": [
                "Uses ripgrep's own crates: .gitignore respected, hidden and binary files skipped.",
                "Results stop at head_limit (500 by default); `truncated` says when more matched.",
                "Paths are resolved inside the project directory."
            ]
        })
    }

    fn aliases(&self) -> &[&'static str] {
        &["Grep", "file-grep", "file_grep"]
    }

    fn run(&self, input: GrepInput, _ctx: SkillContext) -> BoxFuture<'_, Result<GrepOutput>> {
        let grep = self.clone();
        // Reading many files is blocking I/O.
        Box::pin(async move {
            tokio::task::spawn_blocking(move || grep.search(&input))
                .await
                .map_err(|e| Error::Engine(format!("grep stopped: {e}")))?
        })
    }
}
