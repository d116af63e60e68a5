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

use serde_json::{Value, json};

use super::permission::Locale;
use super::project::Project;
#[cfg(any(test, feature = "internals"))]
use super::contained;
use super::{BoxFuture, Tool, invalid};
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
    pub fn lines(&self, input: &Value, locale: Locale) -> Result<Value> {
        let requested = input["file_path"].as_str().unwrap_or_default();
        let offset = input["offset"].as_u64().unwrap_or(1).max(1);
        let limit = input["limit"].as_u64().unwrap_or(DEFAULT_LIMIT);
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
        Ok(json!({
            "content": content,
            "file_path": requested,
            "start_line": offset,
            "lines": shown,
            "total_lines": total,
            "truncated": offset - 1 + shown < total,
            "file_size_bytes": bytes.len(),
        }))
    }
}

impl Tool for Read {
    fn manifest(&self) -> Value {
        json!({
            "name": "read",
            "description": "Reads a text file of the project and returns its lines numbered like `cat -n` (2,000 lines from the start unless offset and limit say otherwise). Use it to look at a file before editing it.",
            "category": "file",
            "tags": ["file", "readonly"],
            "permission": "read_only",
            "timeout": 10_000,
            "input": { "type": "object", "properties": {
                "file_path": { "type": "string", "minLength": 1, "description": "the file: relative to the project directory, or absolute inside it" },
                "offset": { "type": "integer", "minimum": 1, "default": 1, "description": "the first line to return (1-based)" },
                "limit": { "type": "integer", "minimum": 1, "default": DEFAULT_LIMIT, "description": "how many lines to return" } },
                "required": ["file_path"], "additionalProperties": false },
            "output": { "type": "object", "properties": {
                "content": { "type": "string", "description": "the lines, each `<number>\\t<text>`" },
                "file_path": { "type": "string" },
                "start_line": { "type": "integer" },
                "lines": { "type": "integer", "description": "lines returned" },
                "total_lines": { "type": "integer" },
                "truncated": { "type": "boolean", "description": "true when lines follow the window" },
                "file_size_bytes": { "type": "integer" } },
                "required": ["content", "file_path", "start_line", "lines", "total_lines", "truncated", "file_size_bytes"] },
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

    fn call(&self, input: Value, ctx: SkillContext) -> BoxFuture<'_, Result<Value>> {
        Box::pin(std::future::ready(self.lines(&input, ctx.locale())))
    }
}
