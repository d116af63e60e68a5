//! `read` (aliases `Read`, `file-read`, `file_read`): a text file of the project, as
//! numbered lines like `cat -n`.
//!
//! `{ file_path, offset?, limit? }` → `{ content, file_path, start_line, lines,
//! total_lines, truncated, file_size_bytes }`: `limit` lines (2,000 by default) from line
//! `offset` (1 by default), each line cut at [`MAX_LINE_CHARS`]. Binary files are refused.
//! The direct call of a built-in executor (`{ path }` → `{ success, content }`, the whole
//! file, as `BuiltInExecutor.execute('file-read', …)` callers expect) is [`Read::read`].

use std::io::Read as _;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[cfg(any(test, feature = "internals"))]
use super::contained;
use super::permission::Locale;
use super::project::Project;
use super::{BoxFuture, TypedTool, invalid};
use crate::error::Result;
#[cfg(any(test, feature = "internals"))]
use crate::error::{Error, FailureKind};
use crate::skill::kernel::SkillContext;

/// Largest file the direct [`Read::read`] returns whole: a tool result goes into a
/// model's context, and 1 MiB is already far more than a context holds.
#[cfg(any(test, feature = "internals"))]
pub const MAX_READ_BYTES: u64 = 1 << 20;
/// Largest file `read` opens: the window is small, but the file is read to count its
/// lines; past this, `grep` finds what is wanted faster.
pub const MAX_FILE_BYTES: u64 = 256 << 20;
/// Lines returned when the call gives no `limit`: a window a model's context holds, the
/// size coding agents' `Read` tools use.
pub const DEFAULT_LIMIT: u64 = 2_000;
/// Characters kept of one line: minified files have megabyte lines.
pub const MAX_LINE_CHARS: usize = 2_000;
/// Bytes inspected for a NUL to call a file binary (as git and ripgrep do).
const BINARY_SNIFF: usize = 8 << 10;

/// Reads files under one root directory.
#[derive(Debug, Clone)]
pub struct Read {
    project: Project,
}

/// `read`'s input.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadInput {
    /// the file: relative to the project directory, or absolute inside it
    #[schemars(length(min = 1))]
    pub file_path: String,
    /// the first line to return (1-based)
    #[serde(default = "first_line")]
    #[schemars(range(min = 1))]
    pub offset: u64,
    /// how many lines to return
    #[serde(default = "default_limit")]
    #[schemars(range(min = 1))]
    pub limit: u64,
}

fn first_line() -> u64 {
    1
}

fn default_limit() -> u64 {
    DEFAULT_LIMIT
}

/// `read`'s output.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ReadOutput {
    /// the lines, each `<number>\t<text>`
    pub content: String,
    /// the file, as the call named it
    pub file_path: String,
    /// the first line returned
    pub start_line: u64,
    /// lines returned
    pub lines: u64,
    /// lines in the file
    pub total_lines: u64,
    /// true when lines follow the window
    pub truncated: bool,
    /// the file's size
    pub file_size_bytes: usize,
}

impl Read {
    /// `read` confined to `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            project: Project::new(root),
        }
    }

    /// The direct call: `{ path }` → `{ success: true, content }`, the whole file.
    #[cfg(any(test, feature = "internals"))]
    pub fn read(&self, input: &Value) -> Result<Value> {
        let requested = input
            .get("path")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid("read", "`path` must be a string"))?;
        let path = contained("read", self.project.root(), requested.as_ref())?;
        let metadata = std::fs::metadata(&path).map_err(Error::io_at(&path))?;
        if metadata.len() > MAX_READ_BYTES {
            return Err(Error::Skill {
                skill: "read".to_owned(),
                kind: FailureKind::Failed,
                message: format!(
                    "{requested} is {} bytes; read returns files up to {MAX_READ_BYTES} bytes",
                    metadata.len()
                ),
            });
        }
        let bytes = std::fs::read(&path).map_err(Error::io_at(&path))?;
        let content = String::from_utf8(bytes)
            .map_err(|_| invalid("read", &format!("{requested} is not UTF-8 text")))?;
        Ok(json!({ "success": true, "content": content }))
    }

    /// A window of `input.file_path` as numbered lines.
    pub fn lines(&self, input: &ReadInput, locale: Locale) -> Result<ReadOutput> {
        let requested = input.file_path.as_str();
        let offset = input.offset.max(1);
        let limit = input.limit;
        let relative = self.project.relative("read", requested, locale)?;
        let io = |e| self.project.io_error("read", requested, locale, e);
        let dir = self.project.open()?;
        let mut file = dir.open(&relative).map_err(io)?;
        let metadata = file.metadata().map_err(io)?;
        if metadata.is_dir() {
            return Err(invalid(
                "read",
                &format!(
                    "{requested} is a directory; list it with glob (e.g. {{\"pattern\": \"*\", \"path\": \"{requested}\"}})"
                ),
            ));
        }
        if metadata.len() > MAX_FILE_BYTES {
            return Err(invalid(
                "read",
                &format!(
                    "{requested} is {} bytes, over read's {MAX_FILE_BYTES}-byte limit; find what you need with grep",
                    metadata.len()
                ),
            ));
        }
        let mut bytes = Vec::with_capacity(usize::try_from(metadata.len()).unwrap_or(0));
        file.read_to_end(&mut bytes).map_err(io)?;
        let sniff = &bytes[..bytes.len().min(BINARY_SNIFF)];
        let text = match std::str::from_utf8(&bytes) {
            Ok(text) if !sniff.contains(&0) => text,
            _ => {
                return Err(invalid(
                    "read",
                    &format!(
                        "{requested} is a binary file ({} bytes), not text; read shows text files only",
                        bytes.len()
                    ),
                ));
            }
        };
        let total = text.lines().count() as u64;
        let mut content = String::new();
        let mut shown = 0_u64;
        for (n, line) in text
            .lines()
            .enumerate()
            .skip(usize::try_from(offset - 1).unwrap_or(usize::MAX))
            .take(usize::try_from(limit).unwrap_or(usize::MAX))
        {
            let line = match line.char_indices().nth(MAX_LINE_CHARS) {
                Some((cut, _)) => &line[..cut],
                None => line,
            };
            use std::fmt::Write as _;
            let _ = writeln!(content, "{:>6}\t{line}", n + 1);
            shown += 1;
        }
        Ok(ReadOutput {
            content,
            file_path: requested.to_owned(),
            start_line: offset,
            lines: shown,
            total_lines: total,
            truncated: offset - 1 + shown < total,
            file_size_bytes: bytes.len(),
        })
    }
}

impl TypedTool for Read {
    const NAME: &'static str = "read";
    type Input = ReadInput;
    type Output = ReadOutput;

    fn describe(&self) -> Value {
        json!({
            "description": "Reads a text file of the project and returns its lines numbered like `cat -n` (2,000 lines from the start unless offset and limit say otherwise). Use it to look at a file before editing it.",
            "category": "file",
            "tags": ["file", "readonly"],
            "requests": [
                "show me what is in src/main.rs",
                "open the README so I can see it",
                "print the contents of config.yaml",
                "let me look at lines 100 to 150 of server.py",
                "what does package.json say?",
                "display Cargo.toml"
            ],
            "permission": "read_only",
            "timeout": 10_000,
            "examples": [
                { "description": "A whole source file, numbered", "input": { "file_path": "src/main.rs" } },
                { "description": "Twenty lines from line 100 of a long file", "input": { "file_path": "src/main.rs", "offset": 100, "limit": 20 } },
                { "description": "The first five lines of the README", "input": { "file_path": "README.md", "limit": 5 } }
            ],
            "notes": [
                "Paths are resolved inside the project directory; `..`, other absolute paths and symlinks leading out are refused: 文件路径超出项目目录范围.",
                "Binary files (a NUL byte in the first 8 KiB, or not UTF-8) are refused.",
                format!("Files up to {MAX_FILE_BYTES} bytes; lines are cut at {MAX_LINE_CHARS} characters. A 10 MB file is read in well under 100 ms."),
            ]
        })
    }

    fn aliases(&self) -> &[&'static str] {
        &["file-read", "file_read", "Read"]
    }

    fn run(&self, input: ReadInput, ctx: SkillContext) -> BoxFuture<'_, Result<ReadOutput>> {
        Box::pin(std::future::ready(self.lines(&input, ctx.locale())))
    }
}
