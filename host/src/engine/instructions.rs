//! Instruction-only skills (the public Agent Skills format: a SKILL.md and the files it
//! names): their answer is their own text, read level by level on request.

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::error::{Error, Result};
use crate::skill::exchange::BoxFuture;
use crate::skill::kernel::SkillContext;
use crate::skill::kernel::executor::{Executor, ExecutorKind, SkillOutput};
use crate::skill::manifest::package::disclosure::SkillFiles;

/// The input an instruction-only skill takes: nothing, or a file to read.
pub(super) fn static_input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "resource": {
                "type": "string",
                "description": "A file of this skill to read, as its instructions name it (e.g. reference.md). Leave out to get the instructions."
            }
        }
    })
}

/// What an instruction-only skill answers: its instructions, or a file.
pub(super) fn static_output_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "instructions": { "type": "string" },
            "sections": { "type": "array" },
            "resources": { "type": "array" },
            "path": { "type": "string" },
            "content": { "type": "string" }
        }
    })
}

/// An instruction-only skill (the public Agent Skills format), loaded level by level
/// (`SkillFiles`): called with `{}` it returns its SKILL.md body, the body's section
/// headings and the files the body refers to; called with `{ "resource": "<path>" }` it
/// returns that file. Nothing past the frontmatter is read until the first call, so the
/// instructions enter the model's context only when needed.
#[derive(Debug)]
pub struct StaticExecutor {
    files: SkillFiles,
}

impl StaticExecutor {
    /// The instruction-only skill in `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            files: SkillFiles::new(dir),
        }
    }

    /// Its files, level by level.
    pub fn files(&self) -> &SkillFiles {
        &self.files
    }

    fn run(&self, input: &Value) -> Result<Value> {
        if let Some(path) = input.get("resource").and_then(Value::as_str) {
            let resource = self.files.resource(path)?;
            return serde_json::to_value(&*resource).map_err(|e| Error::Engine(e.to_string()));
        }
        let instructions = self.files.instructions()?;
        let sections: Vec<Value> = instructions
            .sections
            .iter()
            .map(|s| json!({ "heading": s.heading, "level": s.level }))
            .collect();
        Ok(json!({
            "instructions": instructions.body,
            "sections": sections,
            "resources": instructions.resources,
        }))
    }
}

impl Executor for StaticExecutor {
    fn kind(&self) -> ExecutorKind {
        ExecutorKind::Static
    }

    fn execute(&self, input: Value, _ctx: SkillContext) -> BoxFuture<'_, Result<SkillOutput>> {
        Box::pin(std::future::ready(self.run(&input).map(SkillOutput::from)))
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
}
