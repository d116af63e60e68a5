//! The WIT `context` imports as the calling frame answers them.

use serde_json::Value;

use super::SkillContext;
use crate::error::{Error, FailureKind};
use crate::skill::exchange::{ContextError, LlmRequest, MemoryFilter, MemoryHit, StoreOutcome};
use crate::skill::validate::Direction;

/// What a guest asks through the WIT `context` imports, answered by the calling frame.
/// The engine checks the skill's grant first; these decide the rest (depth, lookup,
/// validation, deduplication) and return expected failures as `ContextError`s.
impl SkillContext {
    /// `context.call`: runs `skill` on JSON text `input`.
    pub async fn guest_call(&self, skill: String, input: String) -> Result<String, ContextError> {
        let input: Value = serde_json::from_str(&input).map_err(|e| {
            ContextError::new(
                FailureKind::InvalidInput,
                format!("the input for {skill} is not JSON: {e}"),
            )
        })?;
        let mut out = self
            .call_full(&skill, input)
            .await
            .map_err(to_context_error)?;
        // The guest sees only the output: what the callee suggested for memory is kept
        // here, or it would be lost.
        self.keep_memory_writes(&skill, &mut out).await;
        Ok(out.output.to_string())
    }

    /// `context.llm`.
    pub async fn guest_llm(&self, request: LlmRequest) -> Result<String, ContextError> {
        if self.kernel.llm.is_none() {
            return Err(ContextError::new(
                FailureKind::Denied,
                "no language model is configured for this host",
            ));
        }
        self.llm(request).await.map_err(to_context_error)
    }

    /// `context.memory-search`.
    pub async fn guest_memory_search(
        &self,
        query: String,
        limit: u32,
    ) -> Result<Vec<MemoryHit>, ContextError> {
        let memory = self.memory().ok_or_else(no_memory)?;
        memory.search(query, limit).await.map_err(to_context_error)
    }

    /// `context.memory-query` (since evo:skill 0.2.0): a search kept to `filter`.
    pub async fn guest_memory_query(
        &self,
        query: String,
        limit: u32,
        filter: MemoryFilter,
    ) -> Result<Vec<MemoryHit>, ContextError> {
        let memory = self.memory().ok_or_else(no_memory)?;
        memory
            .search_filtered(query, limit, filter)
            .await
            .map_err(to_context_error)
    }

    /// `context.memory-store`.
    pub async fn guest_memory_store(
        &self,
        text: String,
        category: Option<String>,
    ) -> Result<StoreOutcome, ContextError> {
        let memory = self.memory().ok_or_else(no_memory)?;
        memory.store(text, category).await.map_err(to_context_error)
    }

    /// `context.memory-forget`.
    pub async fn guest_memory_forget(&self, query: String) -> Result<u32, ContextError> {
        let memory = self.memory().ok_or_else(no_memory)?;
        memory.forget(query).await.map_err(to_context_error)
    }
}

fn no_memory() -> ContextError {
    ContextError::new(FailureKind::Denied, "no memory is attached to this host")
}

/// How a kernel error looks to a guest: the WIT `skill-error` case closest to it, with
/// the full message (a validation report stays readable).
fn to_context_error(error: Error) -> ContextError {
    let kind = match &error {
        Error::SkillNotFound { .. } | Error::ToolNotFound { .. } => FailureKind::NotFound,
        Error::SkillDepth { .. } => FailureKind::Denied,
        Error::Validation(report) if report.direction == Direction::Input => {
            FailureKind::InvalidInput
        }
        Error::InvalidInput { .. } => FailureKind::InvalidInput,
        Error::Timeout { .. } => FailureKind::Timeout,
        Error::Skill { kind, .. } | Error::Script { kind, .. } => *kind,
        _ => FailureKind::Failed,
    };
    ContextError::new(kind, error.to_string())
}
