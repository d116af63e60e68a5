//! The composite executor: runs a skill's `pipeline`.
//!
//! Steps run in order, each through [`SkillContext::call_full`], so every step passes its
//! own skill's gates. A step's `input` is rendered against the scope
//! `{ input, steps, item, memory }`; `condition` skips a step when false; `foreach` runs
//! it once per element and stores the outputs as an array under `steps.<step>`. The
//! result is `outputMapping` rendered against the final scope, or else the last step's
//! output. Every call made is reported in `intermediateSteps`.
//!
//! `memory.relevant` and `memory.longTerm` read the run's scratch entries
//! `relevantMemories` and `longTermMemory`, which the memory kernel fills at recall.

use std::time::Instant;

use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::skill::exchange::BoxFuture;
use crate::skill::kernel::SkillContext;
use crate::skill::kernel::executor::{Executor, ExecutorKind, SkillOutput, StepTrace};
use crate::skill::manifest::SkillMeta;
use crate::skill::template::{self, Template, TemplateError, ValueTemplate};

/// Scratch key holding memories recalled for the run (`memory.relevant` in templates).
pub const RELEVANT_MEMORIES_KEY: &str = "relevantMemories";
/// Scratch key holding the long-term memory text (`memory.longTerm` in templates).
pub const LONG_TERM_MEMORY_KEY: &str = "longTermMemory";

#[derive(Debug)]
struct Step {
    label: String,
    skill: String,
    input: ValueTemplate,
    condition: Option<Template>,
    foreach: Option<Template>,
}

/// Runs a composite skill.
#[derive(Debug)]
pub struct PipelineExecutor {
    skill: String,
    steps: Vec<Step>,
    output_mapping: Option<ValueTemplate>,
}

impl PipelineExecutor {
    /// Compiles the pipeline of `meta` (already validated by [`SkillMeta::from_raw`]).
    pub fn new(meta: &SkillMeta) -> Result<Self> {
        let fail = |source: TemplateError| Error::Template {
            skill: meta.name.clone(),
            source,
        };
        let optional = |text: &Option<String>| -> Result<Option<Template>> {
            text.as_deref()
                .map(template::parse_expression)
                .transpose()
                .map_err(fail)
        };
        let steps = meta
            .pipeline
            .iter()
            .map(|step| {
                Ok(Step {
                    label: step.step.clone(),
                    skill: step.skill.clone(),
                    input: ValueTemplate::compile(&step.input).map_err(fail)?,
                    condition: optional(&step.condition)?,
                    foreach: optional(&step.foreach)?,
                })
            })
            .collect::<Result<_>>()?;
        let output_mapping = meta
            .output_mapping
            .as_ref()
            .map(|map| ValueTemplate::compile(&Value::Object(map.clone())))
            .transpose()
            .map_err(fail)?;
        Ok(Self {
            skill: meta.name.clone(),
            steps,
            output_mapping,
        })
    }

    fn template_error(&self, step: Option<&str>, source: TemplateError) -> Error {
        let error = Error::Template {
            skill: self.skill.clone(),
            source,
        };
        match step {
            Some(step) => self.step_error(step, error),
            None => error,
        }
    }

    fn step_error(&self, step: &str, source: Error) -> Error {
        Error::Step {
            skill: self.skill.clone(),
            step: step.to_owned(),
            source: Box::new(source),
            steps: Vec::new(),
        }
    }

    /// Runs the steps; a step that fails returns the steps that ran with its error.
    async fn run(&self, input: Value, ctx: SkillContext) -> Result<SkillOutput> {
        let mut traces = Vec::new();
        let result = self.run_steps(input, &ctx, &mut traces).await;
        match result {
            Ok(mut out) => {
                out.intermediate_steps = traces;
                Ok(out)
            }
            Err(Error::Step {
                skill,
                step,
                source,
                ..
            }) => Err(Error::Step {
                skill,
                step,
                source,
                steps: traces,
            }),
            Err(e) => Err(e),
        }
    }

    async fn run_steps(
        &self,
        input: Value,
        ctx: &SkillContext,
        traces: &mut Vec<StepTrace>,
    ) -> Result<SkillOutput> {
        let mut scope = Map::new();
        scope.insert("input".into(), input);
        scope.insert("steps".into(), Value::Object(Map::new()));
        scope.insert("memory".into(), memory_scope(ctx));
        scope.insert("env".into(), ctx.env());
        let mut scope = Value::Object(scope);
        let mut memory_writes = Vec::new();
        let mut memory = Vec::new();
        let mut last = None;

        for step in &self.steps {
            let label = Some(step.label.as_str());
            if let Some(condition) = &step.condition
                && !condition
                    .test(&scope)
                    .map_err(|e| self.template_error(label, e))?
            {
                continue;
            }
            let output = match &step.foreach {
                None => {
                    let input = step
                        .input
                        .render(&scope)
                        .map_err(|e| self.template_error(label, e))?;
                    let out = self
                        .call(step, step.label.clone(), input, ctx, traces)
                        .await?;
                    memory_writes.extend(out.memory_writes);
                    memory.extend(out.memory);
                    out.output
                }
                Some(foreach) => {
                    let items = match foreach
                        .evaluate(&scope)
                        .map_err(|e| self.template_error(label, e))?
                    {
                        Value::Array(items) => items,
                        Value::Null => Vec::new(),
                        other => {
                            return Err(self.step_error(
                                &step.label,
                                Error::InvalidInput {
                                    skill: self.skill.clone(),
                                    reason: format!(
                                        "foreach {:?} gave {other}, not an array",
                                        foreach.source()
                                    ),
                                },
                            ));
                        }
                    };
                    let mut outputs = Vec::with_capacity(items.len());
                    for (i, item) in items.into_iter().enumerate() {
                        set(&mut scope, "item", item);
                        let input = step
                            .input
                            .render(&scope)
                            .map_err(|e| self.template_error(label, e))?;
                        let out = self
                            .call(step, format!("{}[{i}]", step.label), input, ctx, traces)
                            .await?;
                        memory_writes.extend(out.memory_writes);
                        memory.extend(out.memory);
                        outputs.push(out.output);
                    }
                    if let Value::Object(map) = &mut scope {
                        map.remove("item");
                    }
                    Value::Array(outputs)
                }
            };
            if let Some(steps) = scope.get_mut("steps").and_then(Value::as_object_mut) {
                steps.insert(step.label.clone(), output);
            }
            last = Some(step.label.as_str());
        }

        let output = match &self.output_mapping {
            Some(mapping) => mapping
                .render(&scope)
                .map_err(|e| self.template_error(None, e))?,
            None => last
                .and_then(|label| scope.get("steps")?.get(label).cloned())
                .unwrap_or_else(|| Value::Object(Map::new())),
        };
        Ok(SkillOutput {
            output,
            memory_writes,
            memory,
            intermediate_steps: Vec::new(),
        })
    }

    async fn call(
        &self,
        step: &Step,
        step_id: String,
        input: Value,
        ctx: &SkillContext,
        traces: &mut Vec<StepTrace>,
    ) -> Result<SkillOutput> {
        let started = Instant::now();
        let result = ctx.call_full(&step.skill, input.clone()).await;
        let duration = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        traces.push(StepTrace {
            step_id,
            step_name: format!("{} ({})", step.label, step.skill),
            input,
            output: result
                .as_ref()
                .map_or(Value::Null, |out| out.output.clone()),
            duration,
            error: result.as_ref().err().map(ToString::to_string),
        });
        result.map_err(|e| self.step_error(&step.label, e))
    }
}

fn set(scope: &mut Value, key: &str, value: Value) {
    if let Value::Object(map) = scope {
        map.insert(key.to_owned(), value);
    }
}

/// `memory.*` in templates, from what recall put in scratch.
pub fn memory_scope(ctx: &SkillContext) -> Value {
    let scratch = ctx.scratch();
    let mut memory = Map::new();
    memory.insert(
        "relevant".into(),
        scratch.get(RELEVANT_MEMORIES_KEY).unwrap_or(Value::Null),
    );
    memory.insert(
        "longTerm".into(),
        scratch.get(LONG_TERM_MEMORY_KEY).unwrap_or(Value::Null),
    );
    Value::Object(memory)
}

impl Executor for PipelineExecutor {
    fn kind(&self) -> ExecutorKind {
        ExecutorKind::Composite
    }

    fn execute(&self, input: Value, ctx: SkillContext) -> BoxFuture<'_, Result<SkillOutput>> {
        Box::pin(self.run(input, ctx))
    }
}
