//! What errors carry: manifest problems, template errors and validation reports. They
//! live below the kernel so that [`Error`](super::Error) can hold them without the error
//! type depending on the code that finds them.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One problem in a manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// The field, as a path (`name`, `capabilities.dirs[0].path`).
    pub field: String,
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    pub fix: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} ({})", self.field, self.message, self.fix)
    }
}

/// A problem in a template, at a byte offset of its source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateError {
    /// The template's source (shortened for display).
    pub template: String,
    /// Byte offset of the problem in the source.
    pub offset: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for TemplateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "template error at offset {} of {:?}: {}",
            self.offset, self.template, self.message
        )
    }
}

impl std::error::Error for TemplateError {}

/// Which side of a call failed validation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Gate 1: the arguments, before the skill runs.
    Input,
    /// Gate 2: the result, before it is returned.
    Output,
}

impl Direction {
    /// `input` or `output`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Input => "input",
            Self::Output => "output",
        }
    }
}

/// One way a value breaks its schema.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Violation {
    /// Where, as `a.b[0].c`; `(root)` for the value itself.
    pub path: String,
    /// The JSON Schema keyword that failed (`type`, `required`, `enum`, `minimum`, …).
    pub rule: String,
    /// What the schema wants, in words.
    pub expected: String,
    /// What was there (`null` when missing).
    pub actual: Value,
    /// How to fix it, in one sentence.
    pub suggestion: String,
}

/// Every violation of one validation, with its context.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ValidationReport {
    /// The skill whose schema was checked.
    #[serde(rename = "skillName")]
    pub skill: String,
    /// Input or output.
    pub direction: Direction,
    /// Which attempt this was, from 1.
    pub attempt: u32,
    /// How many attempts are allowed.
    pub max_attempts: u32,
    /// What is wrong.
    pub violations: Vec<Violation>,
}

impl ValidationReport {
    /// A report for `skill`.
    pub fn new(
        skill: impl Into<String>,
        direction: Direction,
        attempt: u32,
        max_attempts: u32,
        violations: Vec<Violation>,
    ) -> Self {
        Self {
            skill: skill.into(),
            direction,
            attempt,
            max_attempts,
            violations,
        }
    }

    /// The report as the model reads it: one line per violation with its suggestion.
    pub fn to_llm_text(&self) -> String {
        let mut text = format!(
            "{} {} does not match its schema",
            self.skill,
            self.direction.as_str()
        );
        // A caller with one try is not told it is on "attempt 1 of 1".
        if self.max_attempts > 1 {
            text.push_str(&format!(
                " (attempt {} of {})",
                self.attempt, self.max_attempts
            ));
        }
        text.push(':');
        for v in &self.violations {
            text.push_str(&format!(
                "\n  • [{}] {}: expected {}, got {}. {}",
                v.path,
                v.rule,
                v.expected,
                short_json(&v.actual),
                v.suggestion
            ));
        }
        text.push_str(match self.direction {
            Direction::Input => "\nFix these arguments and call the skill again.",
            Direction::Output => "\nFix these fields and answer again with the JSON object only.",
        });
        text
    }
}

impl fmt::Display for ValidationReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_llm_text())
    }
}

/// Longest rendering of an actual value in a report; a report is read by a model whose
/// context is precious, and the start of a value is enough to recognise it.
const MAX_ACTUAL_CHARS: usize = 200;

fn short_json(value: &Value) -> String {
    if value.is_null() {
        return "nothing".to_owned();
    }
    let text = value.to_string();
    if text.chars().count() > MAX_ACTUAL_CHARS {
        let cut: String = text.chars().take(MAX_ACTUAL_CHARS).collect();
        format!("{cut}…")
    } else {
        text
    }
}

/// How a native script ended, kept with its error so a caller sees what it printed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScriptRun {
    /// What it printed on stdout (capped).
    pub stdout: String,
    /// What it printed on stderr (capped).
    pub stderr: String,
    /// Its exit code, if it exited.
    pub exit_code: Option<i32>,
    /// Wall-clock time, ms.
    pub duration: u64,
}

/// One step of a skill's work, for debugging and observability.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StepTrace {
    /// Unique within the call.
    pub step_id: String,
    /// Human-readable name.
    pub step_name: String,
    /// The step's input.
    pub input: Value,
    /// The step's output (`null` if it failed or was skipped).
    pub output: Value,
    /// Duration in milliseconds.
    pub duration: u64,
    /// The error, if the step failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}
