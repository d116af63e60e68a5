//! A Wasm skill as a kernel [`Executor`]: each call runs in a fresh instance with the
//! calling frame's scratch, events, skill calls, model and memory behind the WIT
//! `context` imports.

use serde_json::Value;

use super::WasmSkill;
use crate::error::Result;
use crate::skill::exchange::BoxFuture;
use crate::skill::kernel::SkillContext;
use crate::skill::kernel::executor::{Executor, ExecutorKind, SkillOutput};

/// Runs a loaded [`WasmSkill`] for the kernel.
#[derive(Debug, Clone)]
pub struct WasmExecutor {
    skill: WasmSkill,
}

impl WasmExecutor {
    /// Wraps `skill`.
    pub fn new(skill: WasmSkill) -> Self {
        Self { skill }
    }

    /// The loaded component.
    pub fn skill(&self) -> &WasmSkill {
        &self.skill
    }
}

impl Executor for WasmExecutor {
    fn kind(&self) -> ExecutorKind {
        ExecutorKind::Wasm
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }

    fn prepare(&self) -> BoxFuture<'_, Result<()>> {
        Box::pin(async move { self.skill.prepare().await.map(drop) })
    }

    fn execute(&self, input: Value, ctx: SkillContext) -> BoxFuture<'_, Result<SkillOutput>> {
        Box::pin(async move {
            let outcome = self.skill.call(&input.to_string(), &ctx).await?;
            Ok(SkillOutput {
                output: outcome.output,
                memory_writes: outcome.memory_writes,
                memory: outcome.memory,
                intermediate_steps: outcome.intermediate_steps,
            })
        })
    }
}
