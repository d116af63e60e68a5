//! `read` (aliases `file-read`, `file_read`, `Read`): `{ path }` → `{ success, content }`,
//! for UTF-8 files inside the tool's root directory only.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::{BoxFuture, Tool, contained, invalid};
use crate::error::{Error, FailureKind, Result};
use crate::skill::kernel::SkillContext;

/// Largest file `read` returns: a tool result goes into a model's context, and 1 MiB is
/// already far more than a context holds.
pub const MAX_READ_BYTES: u64 = 1 << 20;

/// Reads files under one root directory.
#[derive(Debug, Clone)]
pub struct Read {
    root: PathBuf,
}

impl Read {
    /// `read` confined to `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// Reads the file `input.path` names.
    pub fn read(&self, input: &Value) -> Result<Value> {
        let requested = input
            .get("path")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid("read", "`path` must be a string"))?;
        let path = contained("read", &self.root, Path::new(requested))?;
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
}

impl Tool for Read {
    fn manifest(&self) -> Value {
        json!({
            "name": "read",
            "description": "Reads a UTF-8 text file inside the working directory and returns its content. Use it to look at a file the user mentions; it cannot read outside the working directory.",
            "category": "file",
            "tags": ["file", "readonly"],
            "timeout": 5000,
            "input": { "type": "object", "properties": {
                "path": { "type": "string", "minLength": 1, "description": "the file, relative to the working directory" } },
                "required": ["path"] },
            "output": { "type": "object", "properties": {
                "success": { "type": "boolean" }, "content": { "type": "string" } },
                "required": ["success", "content"] }
        })
    }

    fn aliases(&self) -> &[&'static str] {
        &["file-read", "file_read", "Read"]
    }

    fn call(&self, input: Value, _ctx: SkillContext) -> BoxFuture<'_, Result<Value>> {
        Box::pin(std::future::ready(self.read(&input)))
    }
}
