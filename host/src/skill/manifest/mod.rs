//! A skill's manifest: the `skill.json` contract, parsed in two stages; SKILL.md and
//! its [`frontmatter`]; and what a skill [`package`] holds on disk.
//!
//!
//! [`RawMeta`] is exactly what serde reads, with every field optional; [`SkillMeta::from_raw`]
//! checks it and reports every problem at once, each with its field and a fix, so an
//! author fixes a manifest in one round.
//!
//! ```
//! use evo_host::skill::manifest::SkillMeta;
//!
//! let meta = SkillMeta::from_json(r#"{
//!     "name": "calculate",
//!     "description": "Evaluates arithmetic.",
//!     "input": { "type": "object" },
//!     "output": { "type": "object" }
//! }"#).unwrap();
//! assert_eq!(meta.version, "1.0.0");
//! assert_eq!(meta.timeout_ms, 30_000);
//!
//! let problems = SkillMeta::from_json(r#"{ "name": "Bad Name" }"#).unwrap_err();
//! assert!(problems.iter().any(|p| p.field == "description"));
//! ```

use checks::{check_templates, is_semver, pipeline, problem, schema};
use requests::{capabilities, secrets, service};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::capabilities::{
    Access, DirRequest, HostPattern, HostRequest, MemoryAccess, RequestedCapabilities,
    SecretRequest,
};
use crate::skill::permission::Permission;
use crate::skill::template::{self, Template};

/// Default `timeout`: 30 s per call.
pub const DEFAULT_TIMEOUT_MS: u64 = 30_000;
/// Default `version`.
pub const DEFAULT_VERSION: &str = "1.0.0";
/// Longest accepted name; 64 characters fit every LLM tool-name limit.
pub const MAX_NAME_LEN: usize = 64;

pub use crate::error::report::Problem;

/// How a skill executes, as declared in its manifest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Deterministic code (built-in, Wasm or script).
    #[default]
    Code,
    /// A prompt for the language model.
    Llm,
    /// A pipeline of other skills.
    Composite,
    /// An HTTP endpoint (`service` names it).
    Service,
}

/// Where a service skill sends its input (`"service"` in `skill.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ServiceSpec {
    /// The endpoint: `http(s)://host[:port]/path`.
    pub url: String,
    /// The method of the first request (`POST` unless given); polls are `GET`.
    #[serde(default = "ServiceSpec::default_method")]
    pub method: String,
    /// Headers to send; `{{secret:NAME}}` in a value is put in by the host, for a secret
    /// the skill asks for (`capabilities.secrets`) and the operator grants.
    #[serde(default)]
    pub headers: std::collections::BTreeMap<String, String>,
    /// How long to wait between polls of a `202 Accepted` answer that gives no
    /// `Retry-After`, in milliseconds.
    #[serde(default = "ServiceSpec::default_poll_ms")]
    pub poll_ms: u64,
}

impl ServiceSpec {
    fn default_method() -> String {
        "POST".into()
    }

    fn default_poll_ms() -> u64 {
        500
    }
}

pub use evo_manifest::Limits as RequestedLimits;

/// `skill.json` as read, before validation.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RawMeta {
    /// See [`SkillMeta::name`].
    pub name: Option<String>,
    /// See [`SkillMeta::description`].
    pub description: Option<String>,
    /// See [`SkillMeta::category`].
    pub category: Option<String>,
    /// See [`SkillMeta::input`].
    pub input: Option<Value>,
    /// See [`SkillMeta::output`].
    pub output: Option<Value>,
    /// See [`SkillMeta::mode`].
    pub mode: Option<Value>,
    /// See [`SkillMeta::calls`].
    pub calls: Option<Vec<String>>,
    /// See [`SkillMeta::version`].
    pub version: Option<String>,
    /// See [`SkillMeta::tags`].
    pub tags: Option<Vec<String>>,
    /// See [`SkillMeta::requests`].
    pub requests: Option<Vec<String>>,
    /// See [`SkillMeta::author`].
    pub author: Option<String>,
    /// See [`SkillMeta::timeout_ms`].
    pub timeout: Option<Value>,
    /// See [`SkillMeta::retry`].
    pub retry: Option<Value>,
    /// See [`SkillMeta::limits`].
    pub limits: Option<Value>,
    /// See [`SkillMeta::capabilities`].
    pub capabilities: Option<Value>,
    /// See [`SkillMeta::pipeline`].
    pub pipeline: Option<Value>,
    /// See [`SkillMeta::output_mapping`].
    pub output_mapping: Option<Value>,
    /// See [`SkillMeta::prompt`].
    pub prompt: Option<String>,
    /// See [`SkillMeta::model`].
    pub model: Option<String>,
    /// See [`SkillMeta::service`].
    pub service: Option<Value>,
    /// See [`SkillMeta::permission`].
    pub permission: Option<Value>,
    /// See [`SkillMeta::examples`].
    pub examples: Option<Value>,
    /// See [`SkillMeta::notes`].
    pub notes: Option<Vec<String>>,
    /// A plain component's sidecar only: each function's own `description`, `tags`
    /// and `examples`, by its WIT name (`greet`, `kinds/divide`) or skill name.
    pub functions: Option<Value>,
}

/// One example call of a skill, shown in its descriptor and run by the tests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Example {
    /// What the example shows.
    pub description: String,
    /// The arguments.
    pub input: Value,
}

/// One step of a composite skill's pipeline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PipelineStep {
    /// The step's label; later steps read its output as `steps.<step>`.
    pub step: String,
    /// The skill to call.
    pub skill: String,
    /// The input, with `{{ }}` templates.
    #[serde(default = "empty_object")]
    pub input: Value,
    /// Run the step only when this expression is true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
    /// Run the step once per element of this array; the outputs are collected in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub foreach: Option<String>,
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

/// A validated skill manifest.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SkillMeta {
    /// Unique name, `^[a-z][a-z0-9_-]{0,63}$`.
    pub name: String,
    /// What the skill does; the model reads it to choose skills.
    pub description: String,
    /// Grouping for listings and prompts; `general` when not given.
    pub category: String,
    /// JSON Schema of the input.
    pub input: Value,
    /// JSON Schema of the output.
    pub output: Value,
    /// How it executes.
    pub mode: Mode,
    /// Skills it may call.
    pub calls: Vec<String>,
    /// SemVer version.
    pub version: String,
    /// Free-form tags.
    pub tags: Vec<String>,
    /// A few things a user might say when they want the skill, in their words: the
    /// skill index ranks a message by the closest of these and the description
    /// ([`SkillIndex`](crate::packages::index::SkillIndex)).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub requests: Vec<String>,
    /// Author, if given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    /// Wall-clock limit per call, in milliseconds.
    #[serde(rename = "timeout")]
    pub timeout_ms: u64,
    /// Retries on transient errors.
    pub retry: u32,
    /// Resource limits requested.
    pub limits: RequestedLimits,
    /// Capabilities requested.
    pub capabilities: RequestedCapabilities,
    /// The steps of a composite skill.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pipeline: Vec<PipelineStep>,
    /// How a composite skill's output is assembled from its steps (default: the last
    /// step's output).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_mapping: Option<serde_json::Map<String, Value>>,
    /// An llm skill's prompt given inline instead of in `prompt.md`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// The model an llm skill asks for instead of the configured one; the operator must
    /// allow it (`[llm] models`), or its calls fail with `MODEL_NOT_ALLOWED`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// A service skill's endpoint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service: Option<ServiceSpec>,
    /// The level the skill declares (`read_only`, `read_write`, `execute`, `admin`); the
    /// effective level is never below what its capabilities imply
    /// ([`RegisteredSkill::permission`](crate::skill::kernel::table::RegisteredSkill::permission)).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub permission: Option<Permission>,
    /// Example calls.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<Example>,
    /// Limits, performance and security notes.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// Between the parts of a plain component's skill names (`COMPONENT__FUNCTION`,
/// `COMPONENT__INTERFACE__FUNCTION`): WIT names never hold it, and a manifest's name may
/// not, so such a name is always a component's function.
pub const COMPONENT_SEPARATOR: &str = "__";

/// Whether `name` is a valid skill name.
pub fn is_valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some('a'..='z'))
        && name.len() <= MAX_NAME_LEN
        && chars.all(|c| matches!(c, 'a'..='z' | '0'..='9' | '_' | '-'))
}

/// `INVALID_SKILL_NAME` for `name`, a name given for a new skill (`evo new`,
/// `evo skill install --as`), saying what a name may hold.
pub fn invalid_name(name: &str) -> crate::error::Error {
    crate::error::Error::Authoring {
        code: "INVALID_SKILL_NAME",
        message: format!(
            "{name:?} is not a valid skill name: use lowercase letters, digits, `-` and `_`, starting with a letter, at most {MAX_NAME_LEN} characters (e.g. `greet-user`)"
        ),
    }
}

impl SkillMeta {
    /// The manifest of a skill of another node, named `remote/skill` (a name no local
    /// skill can have), with the defaults; the caller fills in what the node described.
    pub fn remote(name: &str) -> Self {
        let mut meta =
            Self::from_json(r#"{"name":"remote","description":"A skill of another node."}"#)
                .unwrap_or_else(|_| unreachable!("a fixed, valid manifest"));
        meta.name = name.to_owned();
        meta
    }

    /// Parses and validates `skill.json` text.
    pub fn from_json(text: &str) -> Result<Self, Vec<Problem>> {
        let raw: RawMeta = serde_json::from_str(text).map_err(|e| {
            vec![problem(
                "(manifest)",
                format!("not a JSON object: {e}"),
                "write the manifest as a JSON object",
            )]
        })?;
        Self::from_raw(raw)
    }

    /// Validates a raw manifest, reporting every problem found.
    pub fn from_raw(raw: RawMeta) -> Result<Self, Vec<Problem>> {
        let mut problems = Vec::new();
        let missing: Vec<&str> = [
            ("name", raw.name.is_none()),
            ("description", raw.description.is_none()),
        ]
        .into_iter()
        .filter_map(|(field, absent)| absent.then_some(field))
        .collect();
        for field in &missing {
            problems.push(problem(
                field,
                format!("Missing required fields: {}", missing.join(", ")),
                format!("add a `{field}` string"),
            ));
        }

        let name = raw.name.unwrap_or_default();
        if !missing.contains(&"name") && !is_valid_name(&name) {
            problems.push(problem(
                "name",
                format!("{name:?} is not a valid skill name"),
                "use 1–64 characters: a lowercase letter, then lowercase letters, digits, `-` or `_`",
            ));
        } else if name.contains(COMPONENT_SEPARATOR) {
            problems.push(problem(
                "name",
                format!("{name:?} holds `{COMPONENT_SEPARATOR}`, which only the skills of a plain component's functions have (COMPONENT__FUNCTION)"),
                "use a single `_` or `-` between words",
            ));
        }
        let description = raw.description.unwrap_or_default();
        if !missing.contains(&"description") && description.trim().is_empty() {
            problems.push(problem(
                "description",
                "is empty",
                "say what the skill does and when to use it",
            ));
        }

        let input = schema(&mut problems, "input", raw.input);
        let output = schema(&mut problems, "output", raw.output);
        let mode = match raw.mode {
            None => Mode::Code,
            Some(v) => serde_json::from_value(v.clone()).unwrap_or_else(|_| {
                problems.push(problem(
                    "mode",
                    format!("{v} is not a mode"),
                    "use \"code\", \"llm\", \"composite\" or \"service\"",
                ));
                Mode::Code
            }),
        };
        match &raw.model {
            Some(model) if mode != Mode::Llm => problems.push(problem(
                "model",
                format!(
                    "{model:?} is a model for an llm skill, and this skill's mode is not \"llm\""
                ),
                "take `model` out, or make the skill an llm skill (mode \"llm\" with a prompt)",
            )),
            Some(model) if model.trim().is_empty() => problems.push(problem(
                "model",
                "the model name is empty".to_owned(),
                "name a model the operator allows (`[llm] models`), or take `model` out",
            )),
            _ => {}
        }
        let calls = raw.calls.unwrap_or_default();
        for (i, callee) in calls.iter().enumerate() {
            if !is_valid_name(callee) {
                problems.push(problem(
                    &format!("calls[{i}]"),
                    format!("{callee:?} is not a skill name"),
                    "list skill names",
                ));
            }
        }
        let requests = checks::requests(&mut problems, raw.requests);
        let version = raw.version.unwrap_or_else(|| DEFAULT_VERSION.to_owned());
        if !is_semver(&version) {
            problems.push(problem(
                "version",
                format!("{version:?} is not MAJOR.MINOR.PATCH"),
                "use a SemVer version such as \"1.0.0\"",
            ));
        }
        let timeout_ms = match raw.timeout {
            None => DEFAULT_TIMEOUT_MS,
            Some(v) => match v.as_u64() {
                Some(ms) if ms > 0 => ms,
                _ => {
                    problems.push(problem(
                        "timeout",
                        format!("{v} is not a positive number of milliseconds"),
                        "use e.g. 30000",
                    ));
                    DEFAULT_TIMEOUT_MS
                }
            },
        };
        let retry = match raw.retry {
            None => 0,
            Some(v) => match v.as_u64().and_then(|r| u32::try_from(r).ok()) {
                Some(r) => r,
                None => {
                    problems.push(problem(
                        "retry",
                        format!("{v} is not a count"),
                        "use a whole number such as 0 or 2",
                    ));
                    0
                }
            },
        };
        let limits = match raw.limits {
            None => RequestedLimits::default(),
            Some(v) => serde_json::from_value(v).unwrap_or_else(|e| {
                problems.push(problem(
                    "limits",
                    e.to_string(),
                    "use { \"memoryMib\": n, \"fuel\": n, \"outputBytes\": n }",
                ));
                RequestedLimits::default()
            }),
        };
        let (mut capabilities, pending_secrets) = capabilities(&mut problems, raw.capabilities);
        let service = service(&mut problems, raw.service, mode, &mut capabilities);
        secrets(&mut problems, pending_secrets, &mut capabilities);
        let pipeline = pipeline(&mut problems, raw.pipeline, mode);
        let output_mapping = match raw.output_mapping {
            None => None,
            Some(Value::Object(map)) => {
                for (key, value) in &map {
                    check_templates(&mut problems, &format!("outputMapping.{key}"), value);
                }
                Some(map)
            }
            Some(other) => {
                problems.push(problem(
                    "outputMapping",
                    format!("{other} is not an object"),
                    "map output fields to templates, e.g. { \"summary\": \"{{steps.summarize.summary}}\" }",
                ));
                None
            }
        };
        if let Some(prompt) = &raw.prompt
            && let Err(e) = Template::parse(prompt)
        {
            problems.push(problem(
                "prompt",
                e.to_string(),
                "fix the template at that offset",
            ));
        }

        let permission = match raw.permission {
            None => None,
            Some(v) => {
                let level = v.as_str().and_then(Permission::parse);
                if level.is_none() {
                    problems.push(problem(
                        "permission",
                        format!("{v} is not a permission level"),
                        "use \"read_only\", \"read_write\", \"execute\" or \"admin\"",
                    ));
                }
                level
            }
        };
        let examples = match raw.examples {
            None => Vec::new(),
            Some(v) => match serde_json::from_value::<Vec<Example>>(v) {
                Ok(examples) => {
                    for (i, example) in examples.iter().enumerate() {
                        if !example.input.is_object() {
                            problems.push(problem(
                                &format!("examples[{i}].input"),
                                "is not an object",
                                "give the example's arguments as a JSON object",
                            ));
                        }
                    }
                    examples
                }
                Err(e) => {
                    problems.push(problem(
                        "examples",
                        e.to_string(),
                        "write a list of { \"description\": \"…\", \"input\": { … } }",
                    ));
                    Vec::new()
                }
            },
        };
        if problems.is_empty() {
            Ok(Self {
                name,
                description,
                category: raw.category.unwrap_or_else(|| "general".to_owned()),
                input,
                output,
                mode,
                calls,
                version,
                tags: raw.tags.unwrap_or_default(),
                requests,
                author: raw.author,
                timeout_ms,
                retry,
                limits,
                capabilities,
                pipeline,
                output_mapping,
                prompt: raw.prompt,
                model: raw.model,
                service,
                permission,
                examples,
                notes: raw.notes.unwrap_or_default(),
            })
        } else {
            Err(problems)
        }
    }
}

mod checks;
pub mod frontmatter;
pub mod package;
mod requests;

#[cfg(test)]
mod tests;
