//! Components built against the first contract, `evo:skill@0.1.0`, run unchanged: their
//! `context` imports are answered by the current ones (what 0.2.0 added is left out of
//! the answers, and a 0.1.0 request asks for no model), and their exports' results are
//! read as the current types. Each call of either version is the same call to the
//! host: the same grants, checks, limits and scrubbing.

use wasmtime::component::{HasSelf, Linker};

use super::bindings::evo::skill::{context, types};
use super::bindings_v0_1_0::evo::skill::{context as old_context, types as old};
use super::state::HostState;

/// Adds the 0.1.0 `context` interface to `linker`.
pub(super) fn add_to_linker(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    old_context::add_to_linker::<HostState, HasSelf<HostState>>(linker, super::state::reached)
}

/// A 0.1.0 `execute` result as the current type.
pub(super) fn output(out: old::SkillOutput) -> types::SkillOutput {
    types::SkillOutput {
        output: out.output,
        memory_writes: out
            .memory_writes
            .into_iter()
            .map(|w| types::MemoryWrite {
                text: w.text,
                category: w.category,
            })
            .collect(),
        intermediate_steps: out
            .intermediate_steps
            .into_iter()
            .map(|s| types::StepTrace {
                step_id: s.step_id,
                step_name: s.step_name,
                input: s.input,
                output: s.output,
                duration_ms: s.duration_ms,
                error: s.error,
            })
            .collect(),
    }
}

/// A 0.1.0 `skill-error` as the current type.
pub(super) fn error(error: old::SkillError) -> types::SkillError {
    match error {
        old::SkillError::InvalidInput(m) => types::SkillError::InvalidInput(m),
        old::SkillError::NotFound(m) => types::SkillError::NotFound(m),
        old::SkillError::Denied(m) => types::SkillError::Denied(m),
        old::SkillError::Timeout(m) => types::SkillError::Timeout(m),
        old::SkillError::Failed(m) => types::SkillError::Failed(m),
    }
}

fn old_error(error: types::SkillError) -> old::SkillError {
    match error {
        types::SkillError::InvalidInput(m) => old::SkillError::InvalidInput(m),
        types::SkillError::NotFound(m) => old::SkillError::NotFound(m),
        types::SkillError::Denied(m) => old::SkillError::Denied(m),
        types::SkillError::Timeout(m) => old::SkillError::Timeout(m),
        types::SkillError::Failed(m) => old::SkillError::Failed(m),
    }
}

fn old_entry(entry: types::MemoryEntry) -> old::MemoryEntry {
    old::MemoryEntry {
        id: entry.id,
        text: entry.text,
        score: entry.score,
        category: entry.category,
        created_at: entry.created_at,
    }
}

impl old::Host for HostState {}

impl old_context::Host for HostState {
    async fn call(&mut self, skill: String, input: String) -> Result<String, old::SkillError> {
        context::Host::call(self, skill, input)
            .await
            .map_err(old_error)
    }

    async fn llm(&mut self, request: old::LlmRequest) -> Result<String, old::SkillError> {
        let request = types::LlmRequest {
            system: request.system,
            prompt: request.prompt,
            max_tokens: request.max_tokens,
            temperature: request.temperature,
            model: None,
        };
        context::Host::llm(self, request).await.map_err(old_error)
    }

    async fn memory_search(
        &mut self,
        query: String,
        limit: u32,
    ) -> Result<Vec<old::MemoryEntry>, old::SkillError> {
        context::Host::memory_search(self, query, limit)
            .await
            .map(|entries| entries.into_iter().map(old_entry).collect())
            .map_err(old_error)
    }

    async fn memory_store(
        &mut self,
        text: String,
        category: Option<String>,
    ) -> Result<old::StoreOutcome, old::SkillError> {
        context::Host::memory_store(self, text, category)
            .await
            .map(|outcome| old::StoreOutcome {
                stored: outcome.stored,
                reason: outcome.reason,
            })
            .map_err(old_error)
    }

    async fn memory_forget(&mut self, query: String) -> Result<u32, old::SkillError> {
        context::Host::memory_forget(self, query)
            .await
            .map_err(old_error)
    }

    async fn scratch_get(&mut self, key: String) -> Option<String> {
        context::Host::scratch_get(self, key).await
    }

    async fn scratch_set(&mut self, key: String, value: String) {
        context::Host::scratch_set(self, key, value).await;
    }

    async fn emit(&mut self, event: String) {
        context::Host::emit(self, event).await;
    }

    async fn log(&mut self, level: old::LogLevel, message: String) {
        let level = match level {
            old::LogLevel::Trace => types::LogLevel::Trace,
            old::LogLevel::Debug => types::LogLevel::Debug,
            old::LogLevel::Info => types::LogLevel::Info,
            old::LogLevel::Warn => types::LogLevel::Warn,
            old::LogLevel::Error => types::LogLevel::Error,
        };
        context::Host::log(self, level, message).await;
    }
}
