//! `intent_recognize`: the built-in llm skill that routes each message,
//! defined by the skill.json and prompt in `intent/`.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::error::{Error, Result};
use crate::llm::{Message, Role};
use crate::memory::{MemoryEntry, as_prompt_data};
use crate::skill::kernel::SkillContext;
use crate::skill::llm_mode::LlmExecutor;
use crate::skill::meta::SkillMeta;
use crate::skill::registry::{RegisteredSkill, SkillRegistry, ToolDefinition};

/// The skill's name.
pub const SKILL_NAME: &str = "intent_recognize";
const SKILL_JSON: &str = include_str!("intent/skill.json");
const PROMPT_MD: &str = include_str!("intent/prompt.md");

/// How to execute a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// Answer without tools.
    DirectAnswer,
    /// Call one skill, then answer with its result.
    SingleSkill,
    /// Let the model call the routed skills as it sees fit.
    MultiSkill,
    /// Call the routed skills in order, each seeing the earlier results.
    Pipeline,
    /// Ask the user a question back.
    Clarify,
}

/// A skill the router chose.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct RoutedSkill {
    /// Its name.
    pub name: String,
    /// Arguments the router extracted.
    #[serde(default)]
    pub input: Option<Value>,
    /// Why.
    #[serde(default)]
    pub reason: String,
}

/// The routing decision.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Routing {
    /// The strategy.
    pub strategy: Strategy,
    /// The skills, in order.
    #[serde(default)]
    pub skills: Vec<RoutedSkill>,
    /// For `direct_answer`: the reply.
    #[serde(default)]
    pub direct_response: Option<String>,
    /// For `clarify`: the question.
    #[serde(default)]
    pub clarification: Option<String>,
}

impl Routing {
    /// What the agent does when routing is off or fails: the tool loop with all tools.
    pub fn fallback() -> Self {
        Self {
            strategy: Strategy::MultiSkill,
            skills: Vec::new(),
            direct_response: None,
            clarification: None,
        }
    }
}

/// Turns of the conversation given to the router, newest last: enough to resolve "it"
/// and "that one", few enough to keep routing fast.
const SUMMARY_TURNS: usize = 6;
/// Characters of one turn in the summary.
const SUMMARY_TURN_CHARS: usize = 300;

fn summary(history: &[Message]) -> String {
    history[history.len().saturating_sub(SUMMARY_TURNS)..]
        .iter()
        .map(|m| {
            let who = if m.role == Role::Assistant {
                "assistant"
            } else {
                "user"
            };
            let text: String = m.joined_text().chars().take(SUMMARY_TURN_CHARS).collect();
            format!("{who}: {text}")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Registers `intent_recognize` in `registry`.
pub fn register(registry: &SkillRegistry) -> Result<()> {
    let meta = SkillMeta::from_json(SKILL_JSON).map_err(|problems| Error::InvalidManifest {
        skill: SKILL_NAME.into(),
        problems,
    })?;
    // The prompt says what each output field means and shows one; the schema's
    // descriptions would say it again in every request.
    let executor = LlmExecutor::new(&meta, PROMPT_MD)?.with_terse_schema(&meta);
    registry.register(RegisteredSkill::new(meta, Arc::new(executor))?);
    Ok(())
}

/// Routes `message` among `candidates`; any failure falls back to [`Routing::fallback`]
/// (logged), so a confused router never stops a run.
pub async fn recognize(
    ctx: &SkillContext,
    message: &str,
    history: &[Message],
    candidates: &[ToolDefinition],
    recalled: &[MemoryEntry],
) -> Routing {
    let available: Vec<Value> = candidates
        .iter()
        .map(|t| json!({ "name": t.name, "description": t.description }))
        .collect();
    let mut input = json!({ "message": message, "available_skills": available });
    if !recalled.is_empty() {
        input["relevant_memories"] = json!(as_prompt_data(recalled));
    }
    if !history.is_empty() {
        input["conversation_summary"] = json!(summary(history));
    }
    match ctx.call(SKILL_NAME, input).await {
        Ok(output) => match serde_json::from_value::<Routing>(output["routing"].clone()) {
            Ok(routing) => routing,
            Err(e) => {
                ctx.log(&format!(
                    "intent_recognize gave an unusable routing ({e}); using multi_skill"
                ));
                Routing::fallback()
            }
        },
        Err(e) => {
            ctx.log(&format!("intent_recognize failed ({e}); using multi_skill"));
            Routing::fallback()
        }
    }
}
