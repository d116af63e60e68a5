//! `write` (aliases `Write`, `file-write`, `file_write`): creates or replaces a file of
//! the project.
//!
//! `{ file_path, content }` → `{ file_path, bytes_written, created }`. The path is
//! resolved inside the project ([`Project`]); parent directories are created; the
//! write is atomic. Replacing a file that exists needs the user's confirmation
//! (如果文件已存在，询问用户是否覆盖: an agent must not destroy a file unasked).

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::confirm::{Confirmation, Risk};
use super::project::{Project, write_atomic};
use super::{BoxFuture, TypedTool};
use crate::error::Result;
use crate::skill::kernel::SkillContext;

/// Writes files under one root directory.
#[derive(Debug, Clone)]
pub struct Write {
    project: Project,
}

/// `write`'s input.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteInput {
    /// the file: relative to the project directory, or absolute inside it
    #[schemars(length(min = 1))]
    pub file_path: String,
    /// the whole new content
    pub content: String,
}

/// `write`'s output.
#[derive(Debug, Serialize, JsonSchema)]
pub struct WriteOutput {
    /// the file, as the call named it
    pub file_path: String,
    /// the bytes written
    pub bytes_written: usize,
    /// false when an existing file was replaced
    pub created: bool,
}

impl Write {
    /// `write` confined to `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            project: Project::new(root),
        }
    }

    async fn write(&self, input: WriteInput, ctx: SkillContext) -> Result<WriteOutput> {
        let locale = ctx.locale();
        let requested = input.file_path.as_str();
        let content = input.content.as_str();
        let relative = self.project.relative("write", requested, locale)?;
        let io = |e| self.project.io_error("write", requested, locale, e);
        let dir = self.project.open()?;
        let existing = match dir.symlink_metadata(&relative) {
            Ok(meta) => Some(meta),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(io(e)),
        };
        if let Some(meta) = &existing {
            if meta.is_dir() {
                return Err(super::invalid(
                    "write",
                    &format!("{requested} is a directory; give a file path"),
                ));
            }
            ctx.confirm(Confirmation {
                tool: "write".into(),
                arguments: json!({ "file_path": requested, "bytes": content.len() }),
                risk: Risk::Medium,
                warning: format!(
                    "{requested} exists ({} bytes) and will be replaced by {} bytes",
                    meta.len(),
                    content.len()
                ),
            })
            .await?;
        }
        if let Some(parent) = relative.parent().filter(|p| !p.as_os_str().is_empty()) {
            dir.create_dir_all(parent).map_err(io)?;
        }
        write_atomic(&dir, &relative, content.as_bytes()).map_err(io)?;
        Ok(WriteOutput {
            file_path: requested.to_owned(),
            bytes_written: content.len(),
            created: existing.is_none(),
        })
    }
}

impl TypedTool for Write {
    const NAME: &'static str = "write";
    type Input = WriteInput;
    type Output = WriteOutput;

    fn describe(&self) -> Value {
        json!({
            "description": "Creates a file in the project with the given content, or replaces one (after the user confirms). Use edit to change part of an existing file.",
            "category": "file",
            "tags": ["file", "write"],
            "requests": [
                "create main.go with a basic HTTP server",
                "save this text as notes.md",
                "put a .gitignore in the project with target/ in it",
                "put a CONTRIBUTING.md in the repo explaining how to send patches",
                "overwrite settings.json with this content",
                "generate a Dockerfile for the app"
            ],
            "permission": "read_write",
            "timeout": 10_000,
            "examples": [
                { "description": "A new test file", "input": { "file_path": "tests/test_new.rs", "content": "#[test]\nfn it_works() {}\n" } },
                { "description": "A file in a directory that does not exist yet", "input": { "file_path": "docs/notes/todo.md", "content": "- write docs\n" } },
                { "description": "An empty file", "input": { "file_path": ".keep", "content": "" } }
            ],
            "notes": [
                "Paths are resolved inside the project directory; others are refused: 文件路径超出项目目录范围.",
                "Replacing an existing file asks the user first (risk medium); where nobody can be asked, it is refused unless [tools] confirm = \"allow\".",
                "The write is atomic (a temporary file renamed over the old one): a crash leaves the old file or the new one, never half of it."
            ]
        })
    }

    fn aliases(&self) -> &[&'static str] {
        &["Write", "file-write", "file_write"]
    }

    fn run(&self, input: WriteInput, ctx: SkillContext) -> BoxFuture<'_, Result<WriteOutput>> {
        Box::pin(self.write(input, ctx))
    }
}
