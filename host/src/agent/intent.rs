//! `intent_recognize`: the built-in llm skill that routes each message,
//! defined by the skill.json and prompt in `intent/`.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::error::{Error, Result};
use crate::llm::{ChatOptions, LlmProvider, Message, Role, collect};
use crate::memory::{MemoryEntry, as_prompt_data};
use crate::skill::composite::llm::LlmExecutor;
use crate::skill::kernel::SkillContext;
use crate::skill::kernel::table::{RegisteredSkill, SkillTable, ToolDefinition};
use crate::skill::manifest::SkillMeta;

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
    /// An answer from the model without tools.
    pub fn direct() -> Self {
        Self {
            strategy: Strategy::DirectAnswer,
            ..Self::fallback()
        }
    }

    /// A `single_skill` call of `skill` with `input`, for `reason`.
    pub fn single(skill: &str, input: Value, reason: String) -> Self {
        Self {
            strategy: Strategy::SingleSkill,
            skills: vec![RoutedSkill {
                name: skill.to_owned(),
                input: Some(input),
                reason,
            }],
            ..Self::fallback()
        }
    }

    /// A direct answer that is `text`, without asking the model.
    pub fn answer(text: String) -> Self {
        Self {
            direct_response: Some(text),
            ..Self::direct()
        }
    }

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

/// The least relevance (the skill index's score, in [0, 1]) at which a small model's
/// run calls the skill ranked first; below it the model answers by itself. Fitted on the
/// fitting half of the routing bench's paraphrases with both embedders together
/// (`./scripts/bench routing` fails if another value would gain more there): each right
/// call counts one, each wrong call or call for a message that needs no skill minus one.
pub const SMALL_MODEL_MIN_SCORE: f32 = 0.42;

/// Tokens a small model may spend on a skill's input.
const SMALL_MODEL_INPUT_TOKENS: u32 = 256;

/// The routing to `skill` that the skill index ranks first at `score` (for a small
/// model always, for a capable one when the ranking is decisive): a `single_skill` call
/// whose input the model writes, held to the skill's input schema.
/// If the model cannot write it, the answer says so: answered by the model instead, the
/// message would get a fact nobody computed.
pub async fn route_to(
    ctx: &SkillContext,
    provider: &dyn LlmProvider,
    options: ChatOptions,
    message: &str,
    skill: &RegisteredSkill,
    score: f32,
) -> Routing {
    let tool = skill.to_tool_definition();
    // The skill's examples are not shown: a model this small copies them verbatim.
    let prompt = format!(
        "Tool {}: {}\nWrite the tool's input for the user's message.\n\nUser: {message}",
        tool.name, tool.description
    );
    let options = ChatOptions {
        max_tokens: Some(SMALL_MODEL_INPUT_TOKENS),
        output_schema: Some(required_only(&tool.parameters)),
        ..options
    };
    let why = match ask_json(provider, prompt, options).await {
        Ok(input) => {
            let input = only_required(&tool.parameters, input);
            match super::small::made_up(&input, message) {
                None => {
                    return Routing::single(
                        &tool.name,
                        input,
                        format!("the skill index ranks it first for the message ({score:.2})"),
                    );
                }
                Some(value) => format!("its input holds {value}, which the message does not"),
            }
        }
        Err(why) => why,
    };
    ctx.log(&format!("no input for {}: {why}", tool.name));
    // The description's first sentence says what the tool needs.
    let needs = tool
        .description
        .split_inclusive(". ")
        .next()
        .unwrap_or_default()
        .trim();
    Routing::answer(format!(
        "I could not do it: {} looked like the tool for this, but the local model could not write its input. Say it with the details the tool needs ({}: {needs})",
        tool.name, tool.name
    ))
}

/// The model's answer to `prompt` (one user message) under `options`, read as JSON; what
/// went wrong otherwise.
async fn ask_json(
    provider: &dyn LlmProvider,
    prompt: String,
    options: ChatOptions,
) -> std::result::Result<Value, String> {
    let answer = collect(
        provider.chat(vec![Message::text(Role::User, prompt)], options),
        |_| {},
    )
    .await;
    match answer.map(|a| serde_json::from_str::<Value>(&a.text)) {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => Err(format!("what the model wrote is not JSON ({e})")),
        Err(e) => Err(format!("the model wrote nothing usable ({e})")),
    }
}

/// Tokens a capable model may spend on the input of the skill the index picked.
const PICK_INPUT_TOKENS: u32 = 512;

/// A capable model's run where the skill index's first pick is decisive (see
/// [`crate::agent::AgentOptions::decisive_margin`]): the model is shown that skill alone
/// and says whether the message asks for it, writing its input (held to its schema) if
/// so. One short request instead of the router's; `None` when the model declines or
/// writes something unusable, and the router decides after all.
pub async fn take_pick(
    ctx: &SkillContext,
    provider: &dyn LlmProvider,
    options: ChatOptions,
    message: &str,
    skill: &RegisteredSkill,
    score: f32,
) -> Option<Routing> {
    let tool = skill.to_tool_definition();
    let prompt = format!(
        "Tool {}: {}\nIf the user's message asks for what this tool does, set use_tool to true and write the tool's input; otherwise set use_tool to false.\n\nUser: {message}",
        tool.name, tool.description
    );
    let options = ChatOptions {
        max_tokens: Some(PICK_INPUT_TOKENS),
        output_schema: Some(json!({
            "type": "object",
            "properties": { "use_tool": { "type": "boolean" }, "input": tool.parameters },
            "required": ["use_tool"]
        })),
        ..options
    };
    let why = match ask_json(provider, prompt, options).await {
        Ok(pick) if pick["use_tool"] == true => {
            return Some(Routing::single(
                &tool.name,
                pick.get("input").cloned().unwrap_or_else(|| json!({})),
                format!(
                    "the skill index ranks it first for the message by a clear lead ({score:.2}), and the model agreed"
                ),
            ));
        }
        Ok(pick) if pick["use_tool"] == false => {
            "the model says the message does not ask for it".to_owned()
        }
        Ok(_) => "the model's answer has no use_tool".to_owned(),
        Err(why) => why,
    };
    ctx.log(&format!(
        "{} not taken: {why}; routing the message",
        tool.name
    ));
    None
}

/// `schema` (a skill's input schema) with only its required properties: a small model
/// fills in what the skill needs, and the skill's defaults stand for the options it
/// would only guess at (date filters, limits, patterns it cannot be held to).
fn required_only(schema: &Value) -> Value {
    let mut schema = schema.clone();
    let required = required(&schema);
    if let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        properties.retain(|name, _| required.contains(name));
    }
    schema
}

/// `input` as a small model wrote it, with only the properties `schema` requires: the
/// model was shown [`required_only`], and what it adds anyway (limits, flags, modes) it
/// made up; the skill's defaults stand for them.
fn only_required(schema: &Value, mut input: Value) -> Value {
    if schema.get("properties").is_some()
        && let Value::Object(fields) = &mut input
    {
        let required = required(schema);
        fields.retain(|name, _| required.contains(name));
    }
    input
}

/// The names `schema` lists as required.
fn required(schema: &Value) -> Vec<String> {
    schema["required"]
        .as_array()
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// Characters of a skill's description the router is shown at most.
const ROUTER_DESCRIPTION_CHARS: usize = 160;

/// What the router is shown of a skill's description: its first sentence (what the
/// skill does; the rest says how to call it, which the tool's own definition says when
/// it is offered), at most [`ROUTER_DESCRIPTION_CHARS`] characters.
fn first_sentence(description: &str) -> String {
    // A sentence ends at a full stop before a capital: `e.g. \`sqrt\`` goes on.
    let end = description
        .match_indices(". ")
        .map(|(i, _)| i + 1)
        .find(|&i| {
            description[i..]
                .trim_start()
                .starts_with(char::is_uppercase)
        })
        .unwrap_or(description.len());
    let first = description[..end].trim();
    if first.chars().count() <= ROUTER_DESCRIPTION_CHARS {
        return first.to_owned();
    }
    let cut: String = first.chars().take(ROUTER_DESCRIPTION_CHARS - 1).collect();
    format!("{}…", cut.trim_end())
}

/// Registers `intent_recognize` in `registry`.
pub fn register(registry: &SkillTable) -> Result<()> {
    let meta = SkillMeta::from_json(SKILL_JSON).map_err(|problems| Error::InvalidManifest {
        skill: SKILL_NAME.into(),
        problems,
    })?;
    // The prompt says what each strategy means and the system message shows an answer;
    // the schema goes to the provider without its descriptions, once.
    let executor = LlmExecutor::new(&meta, PROMPT_MD)?
        .with_terse_schema(&meta)
        .with_example_answer(&json!({
            "intents": [{ "name": "search_memory", "confidence": 0.92 }],
            "entities": { "topic": "database design", "time_reference": "yesterday" },
            "routing": {
                "strategy": "single_skill",
                "skills": [{
                    "name": "memory_search",
                    "input": { "query": "database design discussed yesterday" },
                    "reason": "asks for an earlier discussion"
                }]
            }
        }));
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
        .map(|t| json!({ "name": t.name, "description": first_sentence(&t.description) }))
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn a_small_models_input_keeps_only_what_the_schema_requires() {
        let schema = json!({
            "type": "object",
            "properties": { "pattern": { "type": "string" }, "head_limit": { "type": "integer" } },
            "required": ["pattern"]
        });
        let written = json!({ "pattern": "TODO", "head_limit": 500, "invented": true });
        assert_eq!(
            super::only_required(&schema, written),
            json!({ "pattern": "TODO" })
        );
        // A skill without a schema of properties takes what was written.
        let free = json!({ "anything": 1 });
        assert_eq!(super::only_required(&json!({}), free.clone()), free);
    }

    #[test]
    fn the_router_is_shown_a_descriptions_first_sentence() {
        use super::first_sentence;
        assert_eq!(
            first_sentence(
                "Evaluates an arithmetic expression exactly, e.g. `sqrt(144) + 10` → 22. Use it instead of doing arithmetic in your head."
            ),
            "Evaluates an arithmetic expression exactly, e.g. `sqrt(144) + 10` → 22."
        );
        assert_eq!(first_sentence("Counts words"), "Counts words");
        let long = first_sentence(&"word ".repeat(100));
        assert!(long.ends_with('…') && long.chars().count() <= super::ROUTER_DESCRIPTION_CHARS);
    }
}
