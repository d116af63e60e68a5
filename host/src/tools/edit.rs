//! `edit` (aliases `Edit`, `file-edit`, `file_edit`): an exact string replacement in a
//! file of the project.
//!
//! `{ file_path, old_string, new_string, replace_all? }` → `{ file_path, replacements }`.
//! `old_string` must occur exactly once unless `replace_all` is set; otherwise the error
//! says how many times it was found, so the caller can add context. An edit changes a
//! file that exists, so it needs the user's confirmation as `write`'s replacing one
//! does (risk medium; refused where nobody can be asked unless `[tools] confirm =
//! "allow"`). The write is atomic.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::confirm::{Confirmation, Risk};
use super::project::{Project, write_atomic};
use super::{BoxFuture, TypedTool, invalid};
use crate::error::Result;
use crate::skill::kernel::SkillContext;

/// Edits files under one root directory.
#[derive(Debug, Clone)]
pub struct Edit {
    project: Project,
}

/// `edit`'s input.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditInput {
    /// the file: relative to the project directory, or absolute inside it
    #[schemars(length(min = 1))]
    pub file_path: String,
    /// the exact text to replace
    #[schemars(length(min = 1))]
    pub old_string: String,
    /// the text to put in its place
    pub new_string: String,
    /// replace every occurrence instead of requiring exactly one
    #[serde(default)]
    pub replace_all: bool,
}

/// `edit`'s output.
#[derive(Debug, Serialize, JsonSchema)]
pub struct EditOutput {
    /// the file, as the call named it
    pub file_path: String,
    /// how many times old_string was replaced
    pub replacements: usize,
}

impl Edit {
    /// `edit` confined to `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            project: Project::new(root),
        }
    }

    /// Applies the replacement `input` describes, once the user confirms it.
    async fn edit(&self, input: &EditInput, ctx: &SkillContext) -> Result<EditOutput> {
        let locale = ctx.locale();
        let requested = input.file_path.as_str();
        let old = input.old_string.as_str();
        let new = input.new_string.as_str();
        let all = input.replace_all;
        if old.is_empty() {
            return Err(invalid(
                "edit",
                "old_string is empty; give the exact text to replace (use write to create a file)",
            ));
        }
        if old == new {
            return Err(invalid(
                "edit",
                "old_string and new_string are the same; nothing would change",
            ));
        }
        let relative = self.project.relative("edit", requested, locale)?;
        let io = |e| self.project.io_error("edit", requested, locale, e);
        let dir = self.project.open()?;
        let text = dir.read_to_string(&relative).map_err(io)?;
        let found = text.matches(old).count();
        let replaced = match (found, all) {
            (0, _) => {
                return Err(invalid(
                    "edit",
                    &format!(
                        "old_string was found 0 times in {requested}; read the file and copy the text exactly, whitespace included"
                    ),
                ));
            }
            (1, _) | (_, true) => text.replace(old, new),
            (n, false) => {
                return Err(invalid(
                    "edit",
                    &format!(
                        "old_string was found {n} times in {requested}; include more of the surrounding lines to make it unique, or set replace_all to replace every one"
                    ),
                ));
            }
        };
        ctx.confirm(Confirmation {
            tool: "edit".into(),
            arguments: json!({ "file_path": requested, "old_string": old, "new_string": new, "replace_all": all }),
            risk: Risk::Medium,
            warning: format!(
                "{requested} will be changed: {found} occurrence{} of {} replaced by {}",
                if found == 1 { "" } else { "s" },
                preview(old),
                preview(new)
            ),
        })
        .await?;
        write_atomic(&dir, &relative, replaced.as_bytes()).map_err(io)?;
        Ok(EditOutput {
            file_path: requested.to_owned(),
            replacements: found,
        })
    }
}

impl TypedTool for Edit {
    const NAME: &'static str = "edit";
    type Input = EditInput;
    type Output = EditOutput;

    fn describe(&self) -> Value {
        json!({
            "description": "Replaces an exact piece of text in a project file with new text (after the user confirms). old_string must occur exactly once (copy it from read's output, with enough surrounding lines to be unique) unless replace_all is true.",
            "category": "file",
            "tags": ["file", "write"],
            "requests": [
                "set max_connections to 200 instead of 100 in settings.py",
                "rename the variable foo to bar in main.rs",
                "correct the misspelled word in the docstring of parse()",
                "swap the old import for the new one in app.py",
                "bump the version in Cargo.toml to 0.3.0",
                "take the debug print out of the handler",
                "make this function return early when the list is empty"
            ],
            "permission": "read_write",
            "timeout": 10_000,
            "examples": [
                { "description": "Change one statement", "input": { "file_path": "src/lib.rs", "old_string": "let x = 10;", "new_string": "let x = 20;" } },
                { "description": "Rename everywhere in a file", "input": { "file_path": "src/lib.rs", "old_string": "old_name", "new_string": "new_name", "replace_all": true } },
                { "description": "Delete a line", "input": { "file_path": "src/lib.rs", "old_string": "    dbg!(x);\n", "new_string": "" } }
            ],
            "notes": [
                "An old_string found more than once is an error that says how many times it was found, unless replace_all is set; one found 0 times is an error too.",
                "Paths are resolved inside the project directory; others are refused: 文件路径超出项目目录范围.",
                "An edit changes an existing file, so it asks the user first (risk medium); where nobody can be asked, it is refused unless [tools] confirm = \"allow\".",
                "The write is atomic: a crash leaves the old file or the new one."
            ]
        })
    }

    fn aliases(&self) -> &[&'static str] {
        &["Edit", "file-edit", "file_edit"]
    }

    fn run(&self, input: EditInput, ctx: SkillContext) -> BoxFuture<'_, Result<EditOutput>> {
        Box::pin(async move { self.edit(&input, &ctx).await })
    }
}

/// Characters of old and new text a confirmation shows: enough to recognise the change
/// on one terminal line.
const PREVIEW_CHARS: usize = 60;

/// `text` quoted for a confirmation, cut to [`PREVIEW_CHARS`].
fn preview(text: &str) -> String {
    let mut shown: String = text.chars().take(PREVIEW_CHARS).collect();
    if shown.len() < text.len() {
        shown.push('…');
    }
    format!("{shown:?}")
}
