//! Built-in tools: Rust code run in-process, with no IPC (seed: sandbox-executor,
//! "内置工具直接调用").
//!
//! - `read` (aliases `file-read`, `file_read`, `Read`): `{ path }` → `{ success, content }`,
//!   for files inside the tools' root directory only.
//! - `calculate`: `{ expression }` → `{ result }`, e.g. `sqrt(144) + 10` → `22`.
//!
//! [`BuiltinTools::execute`] runs one directly (an unknown name is
//! `BuiltIn tool not found: <name>`, code `TOOL_NOT_FOUND`); [`BuiltinTools::register`]
//! puts them in a [`SkillRegistry`] so they go through the kernel's gates like any skill.
//!
//! ```
//! use evo_host::engine::builtin::BuiltinTools;
//! use serde_json::json;
//!
//! let tools = BuiltinTools::default();
//! assert_eq!(tools.execute("calculate", &json!({ "expression": "sqrt(144) + 10" })).unwrap(),
//!            json!({ "result": 22 }));
//! let err = tools.execute("unknown-tool", &json!({})).unwrap_err();
//! assert_eq!(err.to_string(), "BuiltIn tool not found: unknown-tool");
//! assert_eq!(err.code(), "TOOL_NOT_FOUND");
//! ```

pub mod expr;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};

use crate::error::{Error, FailureKind, Result};
use crate::skill::context::BoxFuture;
use crate::skill::executor::{Executor, ExecutorKind, SkillOutput};
use crate::skill::kernel::SkillContext;
use crate::skill::meta::SkillMeta;
use crate::skill::registry::{RegisteredSkill, SkillRegistry};

/// Largest file `read` returns: a tool result goes into a model's context, and 1 MiB is
/// already far more than a context holds.
pub const MAX_READ_BYTES: u64 = 1 << 20;

/// The built-in tools, reading files under one root directory.
#[derive(Debug, Clone)]
pub struct BuiltinTools {
    root: PathBuf,
}

impl Default for BuiltinTools {
    /// Tools rooted at the current directory.
    fn default() -> Self {
        Self {
            root: PathBuf::from("."),
        }
    }
}

/// The tools, with their canonical names and the aliases the seeds use.
const TOOLS: [(&str, &[&str]); 2] = [
    ("read", &["file-read", "file_read", "Read"]),
    ("calculate", &[]),
];

impl BuiltinTools {
    /// Tools that read files under `root` only.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The canonical name of tool `name` (which may be an alias).
    pub fn resolve(name: &str) -> Option<&'static str> {
        TOOLS
            .iter()
            .find(|(canonical, aliases)| *canonical == name || aliases.contains(&name))
            .map(|(canonical, _)| *canonical)
    }

    /// Runs tool `name` on `input` directly (no gates, no statistics).
    pub fn execute(&self, name: &str, input: &Value) -> Result<Value> {
        match Self::resolve(name) {
            Some("read") => self.read(input),
            Some("calculate") => calculate(input),
            _ => Err(Error::ToolNotFound {
                name: name.to_owned(),
            }),
        }
    }

    /// Registers every tool (and its aliases) in `registry`.
    pub fn register(&self, registry: &SkillRegistry) -> Result<()> {
        for (name, aliases) in TOOLS {
            let meta = manifest(name);
            let executor = Arc::new(BuiltinExecutor {
                tools: self.clone(),
                name,
            });
            registry.register(RegisteredSkill::new(meta, executor)?);
            for alias in aliases {
                registry.alias(alias, name);
            }
        }
        Ok(())
    }

    fn read(&self, input: &Value) -> Result<Value> {
        let requested = input
            .get("path")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid("read", "`path` must be a string"))?;
        let path = contained(&self.root, Path::new(requested))?;
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

/// `path` resolved against `root`, refused unless it stays inside `root` once symlinks
/// and `..` are resolved.
fn contained(root: &Path, path: &Path) -> Result<PathBuf> {
    let root = root.canonicalize().map_err(Error::io_at(root))?;
    let joined = root.join(path);
    let resolved = joined.canonicalize().map_err(Error::io_at(&joined))?;
    if resolved.starts_with(&root) {
        Ok(resolved)
    } else {
        Err(Error::Skill {
            skill: "read".to_owned(),
            kind: FailureKind::Denied,
            message: format!(
                "{} is outside the directory read may access ({})",
                path.display(),
                root.display()
            ),
        })
    }
}

fn calculate(input: &Value) -> Result<Value> {
    let expression = input
        .get("expression")
        .and_then(Value::as_str)
        .ok_or_else(|| invalid("calculate", "`expression` must be a string"))?;
    let value = expr::evaluate(expression).map_err(|e| invalid("calculate", &e.to_string()))?;
    Ok(json!({ "result": expr::to_json_number(value) }))
}

fn invalid(skill: &str, message: &str) -> Error {
    Error::Skill {
        skill: skill.to_owned(),
        kind: FailureKind::InvalidInput,
        message: message.to_owned(),
    }
}

fn manifest(name: &str) -> SkillMeta {
    let json = match name {
        "read" => json!({
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
        }),
        _ => json!({
            "name": "calculate",
            "description": "Evaluates an arithmetic expression exactly, e.g. `sqrt(144) + 10` → 22. Use it instead of doing arithmetic in your head.",
            "category": "math",
            "tags": ["math", "readonly"],
            "timeout": 1000,
            "input": { "type": "object", "properties": {
                "expression": { "type": "string", "minLength": 1, "description": "arithmetic with + - * / % ^, parentheses, pi, e, and sqrt, abs, ln, log, exp, sin, cos, tan, floor, ceil, round, min, max, pow" } },
                "required": ["expression"] },
            "output": { "type": "object", "properties": { "result": { "type": "number" } }, "required": ["result"] }
        }),
    };
    // The manifests above are constants checked by the tests, so this cannot fail at
    // run time; a mistake in them fails every test that registers the tools.
    SkillMeta::from_json(&json.to_string())
        .unwrap_or_else(|problems| panic!("built-in manifest of {name} is invalid: {problems:?}"))
}

/// Runs one built-in tool as a skill.
#[derive(Debug)]
struct BuiltinExecutor {
    tools: BuiltinTools,
    name: &'static str,
}

impl Executor for BuiltinExecutor {
    fn kind(&self) -> ExecutorKind {
        ExecutorKind::Builtin
    }

    fn execute(&self, input: Value, _ctx: SkillContext) -> BoxFuture<'_, Result<SkillOutput>> {
        let result = self.tools.execute(self.name, &input).map(SkillOutput::from);
        Box::pin(std::future::ready(result))
    }
}

#[cfg(test)]
mod tests {
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
        // The seed's scenario: BuiltInExecutor.execute('file-read', { path: './README.md' }).
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
