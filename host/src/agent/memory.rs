//! The run's phases that read and write memory — recall, the prompt's long-term memory
//! and daily log, capture — and how a memory it cannot reach is reported: a warning,
//! and the run goes on.

use super::*;

impl Agent {
    /// Recall: memories relevant to the message, also put in the run's scratch. Memory
    /// that cannot be read is a warning, and the run goes on without recall.
    pub(super) fn recall(&self, ctx: &SkillContext, message: &str) -> Vec<MemoryEntry> {
        let Some(memory) = &self.memory else {
            return Vec::new();
        };
        memory
            .recall_into(ctx.scratch(), message)
            .unwrap_or_else(|e| {
                warn(
                    ctx,
                    "memory could not be read, so this answer has no recall",
                    &e,
                );
                Vec::new()
            })
    }

    /// Prompt: the system prompt from the candidate skills, long-term memory, the
    /// recalled memories and today's log; and the same without the skills, for an
    /// answer offered no tools.
    pub(super) fn compile_prompt(
        &self,
        ctx: &SkillContext,
        candidates: &[ToolDefinition],
        recalled: &[MemoryEntry],
    ) -> (String, String) {
        let (long_term, daily_log) = match &self.memory {
            Some(memory) => {
                let read = |what: &str, text: Result<String>| {
                    text.unwrap_or_else(|e| {
                        warn(
                            ctx,
                            &format!("{what} could not be read, so the prompt leaves it out"),
                            &e,
                        );
                        String::new()
                    })
                };
                (
                    read("MEMORY.md", memory.load_long_term()),
                    read("today's log", memory.load_daily_log(None)),
                )
            }
            None => (String::new(), String::new()),
        };
        let compile = |skills| {
            self.prompt.compile(&PromptInput {
                skills,
                long_term: &long_term,
                recalled,
                daily_log: &daily_log,
            })
        };
        (compile(candidates), compile(&[]))
    }

    /// Capture: what the user stated, kept in memory (what the skills suggested was kept
    /// as their calls returned). Memory that cannot be written is a warning: the answer
    /// stands.
    pub(super) fn capture(
        &self,
        ctx: &SkillContext,
        message: &str,
        response: &str,
        recalled: &[MemoryEntry],
    ) -> Vec<String> {
        let Some(memory) = &self.memory else {
            return Vec::new();
        };
        match memory.capture(message, response, recalled) {
            Ok(outcome) => outcome.entries,
            Err(e) => {
                warn(
                    ctx,
                    "memory could not be written, so nothing of this message was kept",
                    &e,
                );
                Vec::new()
            }
        }
    }
}

/// Something the run goes on without: logged as a warning and sent as a `warning` event,
/// so whoever watches the run (`evo agent run`, an HTTP stream) sees why the answer is
/// poorer (memory that could not be read, an answer without recall).
fn warn(ctx: &SkillContext, what: &str, error: &Error) {
    let message = format!("{what}: [{}] {error}", error.code());
    tracing::warn!(target: "evo::agent", "{message}");
    ctx.emit(RunEvent::warning(message, error));
}
