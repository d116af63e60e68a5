//! How a skill runs: the [`Executor`] trait every kind implements, and what a run
//! returns ([`SkillOutput`], `ToolExecutionResult`).
//!
//! The kernel knows executors only through this trait: built-in tools, Wasm components,
//! Node scripts, prompts, pipelines and instruction-only skills all plug into the same
//! [`SkillContext::call`](crate::skill::kernel::SkillContext::call) and its gates.

use std::fmt;

use serde::Serialize;
use serde_json::Value;

use crate::error::Result;
use crate::skill::exchange::BoxFuture;
pub use crate::skill::exchange::{
    MemoryWrite, MemoryWriteOutcome, SkillOutput, StepTrace, WriteStatus,
};
use crate::skill::kernel::SkillContext;

/// What runs a skill.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ExecutorKind {
    /// In-process Rust code, no IPC.
    Builtin,
    /// A WebAssembly component.
    Wasm,
    /// A Node script in a subprocess sandbox.
    Native,
    /// A prompt for the language model (`mode: llm`).
    Llm,
    /// A pipeline of other skills (`mode: composite`).
    Composite,
    /// Instructions only: returns the SKILL.md body for the model to follow.
    Static,
    /// A skill of another Evo node, called over its `/v1/ws`.
    Remote,
    /// An HTTP endpoint (`mode: service`).
    Service,
}

impl ExecutorKind {
    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Builtin => "builtin",
            Self::Wasm => "wasm",
            Self::Native => "native",
            Self::Llm => "llm",
            Self::Composite => "composite",
            Self::Static => "static",
            Self::Remote => "remote",
            Self::Service => "service",
        }
    }
}

impl fmt::Display for ExecutorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Runs one kind of skill.
pub trait Executor: Send + Sync + fmt::Debug {
    /// Which kind this is.
    fn kind(&self) -> ExecutorKind;

    /// Runs the skill on `input`, which has passed gate 1 (defaults applied). `ctx` is
    /// the skill's own frame: its `call`s run one level deeper, on its behalf.
    fn execute(&self, input: Value, ctx: SkillContext) -> BoxFuture<'_, Result<SkillOutput>>;

    /// Makes the skill ready to run — a Wasm component compiled, or loaded from the
    /// compile cache — before the call's clock starts: compiling has a deadline of its
    /// own, and a 20 MB JavaScript or Python component compiling on a busy machine must
    /// not spend the call's. Ready at once by default.
    fn prepare(&self) -> BoxFuture<'_, Result<()>> {
        Box::pin(std::future::ready(Ok(())))
    }

    /// True when the executor enforces the skill's timeout itself and reports it in its
    /// own words (a native script's `Execution timeout`); the kernel then waits a little
    /// longer before it gives up, so the executor's report is the one the caller sees.
    fn owns_deadline(&self) -> bool {
        false
    }

    /// True when the executor validates its output itself (the llm executor's self-heal
    /// loop); the kernel's gate 2 then leaves the result alone.
    fn validates_output(&self) -> bool {
        false
    }

    /// The level this call needs, when it depends on the input (`git status` reads,
    /// `git commit` writes); `None` for the skill's own level.
    fn permission_for(&self, _input: &Value) -> Option<crate::skill::permission::Permission> {
        None
    }

    /// The executor as [`Any`](std::any::Any), for callers that need a concrete kind
    /// (e.g. to show a Wasm skill's grant); `None` unless the executor opts in.
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        None
    }
}
