//! The llm executor: a skill whose body is a prompt.
//!
//! The prompt (`prompt.md`, or `prompt` in skill.json) is rendered with the template
//! engine against `{ input, memory }`; the system message says which skill the model
//! executes and gives the output schema the answer must match (compact JSON), so that
//! it is the same for every call of the skill: the prefix providers cache. The model's
//! answer is parsed as JSON, from plain text or a fenced block, and
//! checked against the output schema (gate 2). When it fails, the model is asked again
//! with the validation report appended and a lower temperature, up to
//! [`KernelConfig::max_output_attempts`](crate::skill::kernel::KernelConfig) times; each failed
//! attempt emits `skill_validation_retry`. When every attempt fails, the kernel's
//! [`Fallback`] decides: fail, return the raw answer, or return the valid part.

use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::skill::composite::pipeline::memory_scope;
use crate::skill::exchange::{BoxFuture, LlmRequest};
use crate::skill::kernel::executor::{Executor, ExecutorKind, SkillOutput};
use crate::skill::kernel::{Fallback, SkillContext};
use crate::skill::manifest::SkillMeta;
use crate::skill::observe::events::RunEvent;
use crate::skill::template::Template;
use crate::skill::validate::{Direction, Schema, ValidationReport, Violation};

/// Temperature of the first attempt: low, because the answer must fit a schema.
pub const FIRST_TEMPERATURE: f32 = 0.3;
/// Temperature of later attempts: lower still, so a correction converges.
pub const RETRY_TEMPERATURE: f32 = 0.1;
/// Characters of an unparseable answer quoted back to the model.
const QUOTED_ANSWER_CHARS: usize = 200;

/// The system message of skill `name`: the same on every call (the prefix providers
/// cache), with the output schema as compact JSON unless it is trivial.
fn system_message(name: &str, output: &Value) -> String {
    let mut system = format!(
        "You are the executor of the `{name}` skill. Answer with the JSON object only, no other text."
    );
    if output.as_object().is_some_and(|o| !o.is_empty()) {
        system.push_str(" It must match this JSON Schema:\n");
        system.push_str(&serde_json::to_string(output).unwrap_or_default());
    }
    system
}

/// Removes every `description` keyword from `schema` (a property named `description`
/// stays).
fn strip_descriptions(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            if map.get("description").is_some_and(Value::is_string) {
                map.remove("description");
            }
            for (key, value) in map.iter_mut() {
                if key == "properties" {
                    // Property names are not keywords: keep a property called
                    // `description`, strip inside each property's schema.
                    if let Value::Object(properties) = value {
                        properties.values_mut().for_each(strip_descriptions);
                    }
                } else {
                    strip_descriptions(value);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(strip_descriptions),
        _ => {}
    }
}

/// Runs an llm skill.
#[derive(Debug)]
pub struct LlmExecutor {
    skill: String,
    /// The model the skill asks for (`model` in its manifest).
    model: Option<String>,
    prompt: Template,
    schema: Schema,
    /// The output schema as written (without its descriptions for a terse schema), for
    /// providers that constrain their output to it.
    output: Value,
    /// The system message: the same for every call.
    system: String,
}

impl LlmExecutor {
    /// An executor for `meta` with prompt template `prompt`.
    pub fn new(meta: &SkillMeta, prompt: &str) -> Result<Self> {
        let prompt = Template::parse(prompt).map_err(|source| Error::Template {
            skill: meta.name.clone(),
            source,
        })?;
        let schema = Schema::compile(&meta.output).map_err(|message| Error::InvalidManifest {
            skill: meta.name.clone(),
            problems: vec![crate::skill::manifest::Problem {
                field: "output".into(),
                message,
                fix: "write a draft-7 JSON Schema".into(),
            }],
        })?;
        Ok(Self {
            skill: meta.name.clone(),
            model: meta.model.clone(),
            prompt,
            schema,
            output: meta.output.clone(),
            system: system_message(&meta.name, &meta.output),
        })
    }

    /// Gives the model the output schema without its `description`s (they are still
    /// part of the schema the answer is checked against): for a skill whose prompt
    /// already says what every field means, as the router's does, they would say it
    /// twice in every request.
    pub fn with_terse_schema(mut self, meta: &SkillMeta) -> Self {
        let mut terse = meta.output.clone();
        strip_descriptions(&mut terse);
        self.system = system_message(&meta.name, &terse);
        // The schema a provider constrains the answer to goes without them too.
        self.output = terse;
        self
    }

    /// Shows the model `example`, an answer of the right shape, in the system message
    /// instead of the schema: for a skill whose answer's schema goes to the provider
    /// anyway (it constrains the answer to it) and is still what the answer is checked
    /// against, a second copy in every request is bytes the model reads twice, where one
    /// example line says the shape.
    pub fn with_example_answer(mut self, example: &Value) -> Self {
        self.system = format!(
            "You are the executor of the `{}` skill. Answer with the JSON object only, no other text, shaped like this example: {example}",
            self.skill
        );
        self
    }

    async fn run(&self, input: Value, ctx: SkillContext) -> Result<SkillOutput> {
        let mut scope = Map::new();
        scope.insert("input".into(), input);
        scope.insert("memory".into(), memory_scope(&ctx));
        scope.insert("env".into(), ctx.env());
        let prompt = self
            .prompt
            .render(&Value::Object(scope))
            .map_err(|source| Error::Template {
                skill: self.skill.clone(),
                source,
            })?;
        let config = ctx.kernel().config();
        let max_attempts = config.max_output_attempts.max(1);
        let fallback = config.fallback;
        let system = &self.system;

        let mut last: Option<(String, Option<Value>, Vec<Violation>)> = None;
        for attempt in 1..=max_attempts {
            let mut request_prompt = prompt.clone();
            if let Some((_, _, violations)) = &last {
                let report = ValidationReport::new(
                    &self.skill,
                    Direction::Output,
                    attempt - 1,
                    max_attempts,
                    violations.clone(),
                );
                request_prompt.push_str(&format!(
                    "\n\n--- Validation feedback (attempt {attempt} of {max_attempts}) ---\n{}",
                    report.to_llm_text()
                ));
            }
            let answer = ctx
                .llm(LlmRequest {
                    caller: self.skill.clone(),
                    system: Some(system.clone()),
                    prompt: request_prompt,
                    model: self.model.clone(),
                    output_schema: Some(self.output.clone()),
                    max_tokens: None,
                    temperature: Some(if attempt == 1 {
                        FIRST_TEMPERATURE
                    } else {
                        RETRY_TEMPERATURE
                    }),
                })
                .await?;
            let (parsed, violations) = match extract_json(&answer) {
                Some(value) => {
                    let violations = self.schema.check(&value);
                    if violations.is_empty() {
                        if attempt > 1 {
                            ctx.log(&format!(
                                "{}: output healed on attempt {attempt}",
                                self.skill
                            ));
                        }
                        return Ok(SkillOutput::from(value));
                    }
                    (Some(value), violations)
                }
                None => (None, vec![not_json(&answer)]),
            };
            ctx.log(&format!(
                "{}: output failed validation ({attempt}/{max_attempts}): {} violation(s)",
                self.skill,
                violations.len()
            ));
            ctx.emit(RunEvent::validation_retry(
                &self.skill,
                attempt,
                max_attempts,
                violations.len(),
            ));
            last = Some((answer, parsed, violations));
        }

        let (answer, parsed, violations) = last.unwrap_or_default();
        match fallback {
            Fallback::Throw => Err(Error::Validation(Box::new(ValidationReport::new(
                &self.skill,
                Direction::Output,
                max_attempts,
                max_attempts,
                violations,
            )))),
            Fallback::ReturnRaw => Ok(SkillOutput::from(parsed.unwrap_or(Value::String(answer)))),
            Fallback::ReturnPartial => Ok(SkillOutput::from(partial(parsed, &violations))),
        }
    }
}

fn not_json(answer: &str) -> Violation {
    let quoted: String = answer.chars().take(QUOTED_ANSWER_CHARS).collect();
    Violation {
        path: "(root)".into(),
        rule: "format".into(),
        expected: "a JSON object".into(),
        actual: Value::String(quoted),
        suggestion: "Answer with the JSON object only, without Markdown fences or other text."
            .into(),
    }
}

/// The valid part of `parsed`: top-level fields with a violation are removed and listed
/// under `_invalid`.
fn partial(parsed: Option<Value>, violations: &[Violation]) -> Value {
    let mut invalid: Vec<String> = violations.iter().map(|v| v.path.clone()).collect();
    invalid.dedup();
    let mut object = match parsed {
        Some(Value::Object(object)) => object,
        _ => Map::new(),
    };
    for path in &invalid {
        let top = path.split(['.', '[']).next().unwrap_or_default();
        object.remove(top);
    }
    object.insert(
        "_invalid".into(),
        Value::Array(invalid.into_iter().map(Value::String).collect()),
    );
    Value::Object(object)
}

/// The JSON in a model's answer: the whole text, else the first fenced block that parses,
/// else the outermost `{…}` (or `[…]`) span.
pub fn extract_json(answer: &str) -> Option<Value> {
    let text = answer.trim();
    if let Ok(value) = serde_json::from_str(text) {
        return Some(value);
    }
    let mut rest = text;
    while let Some(open) = rest.find("```") {
        let after = &rest[open + 3..];
        let body_start = after.find('\n').map_or(0, |i| i + 1);
        let Some(close) = after[body_start..].find("```") else {
            break;
        };
        if let Ok(value) = serde_json::from_str(after[body_start..body_start + close].trim()) {
            return Some(value);
        }
        rest = &after[body_start + close + 3..];
    }
    for (open, close) in [('{', '}'), ('[', ']')] {
        if let (Some(start), Some(end)) = (text.find(open), text.rfind(close))
            && start < end
            && let Ok(value) = serde_json::from_str(&text[start..=end])
        {
            return Some(value);
        }
    }
    None
}

impl Executor for LlmExecutor {
    fn kind(&self) -> ExecutorKind {
        ExecutorKind::Llm
    }

    fn execute(&self, input: Value, ctx: SkillContext) -> BoxFuture<'_, Result<SkillOutput>> {
        Box::pin(self.run(input, ctx))
    }

    fn validates_output(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn json_is_found_in_plain_fenced_and_chatty_answers() {
        assert_eq!(extract_json(r#"{"a":1}"#), Some(json!({"a": 1})));
        assert_eq!(
            extract_json("Here you go:\n```json\n{\"summary\": \"x\"}\n```\nAnything else?"),
            Some(json!({"summary": "x"}))
        );
        assert_eq!(
            extract_json("Sure! {\"summary\": \"y\"} Hope that helps."),
            Some(json!({"summary": "y"}))
        );
        assert_eq!(extract_json("no json here"), None);
    }

    #[test]
    fn partial_keeps_the_valid_fields() {
        let violations = vec![Violation {
            path: "routing.strategy".into(),
            rule: "enum".into(),
            expected: String::new(),
            actual: Value::Null,
            suggestion: String::new(),
        }];
        assert_eq!(
            partial(
                Some(json!({ "intents": [], "routing": { "strategy": "x" } })),
                &violations
            ),
            json!({ "intents": [], "_invalid": ["routing.strategy"] })
        );
    }

    #[test]
    fn a_terse_schema_drops_description_keywords_and_keeps_a_property_of_that_name() {
        let mut schema = json!({
            "type": "object",
            "description": "the answer",
            "properties": {
                "description": { "type": "string", "description": "one sentence" },
                "items": { "type": "array", "items": { "type": "object", "description": "x" } }
            },
            "required": ["description"]
        });
        strip_descriptions(&mut schema);
        assert_eq!(
            schema,
            json!({
                "type": "object",
                "properties": {
                    "description": { "type": "string" },
                    "items": { "type": "array", "items": { "type": "object" } }
                },
                "required": ["description"]
            })
        );
    }
}
