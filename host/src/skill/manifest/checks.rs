//! The checks of single manifest fields: JSON Schemas, versions, a composite's
//! pipeline and the templates in it. Each pushes what is wrong, with a fix, and returns
//! what to use meanwhile, so that every problem is reported at once.

use super::*;

pub(super) fn problem(field: &str, message: impl Into<String>, fix: impl Into<String>) -> Problem {
    Problem {
        field: field.to_owned(),
        message: message.into(),
        fix: fix.into(),
    }
}

pub(super) fn schema(problems: &mut Vec<Problem>, field: &str, value: Option<Value>) -> Value {
    match value {
        None => serde_json::json!({ "type": "object" }),
        Some(v @ (Value::Object(_) | Value::Bool(_))) => v,
        Some(v) => {
            problems.push(problem(
                field,
                format!("{v} is not a JSON Schema"),
                "give a schema object such as { \"type\": \"object\" }",
            ));
            Value::Null
        }
    }
}

/// The most requests a skill may list, and the longest one, in characters: a few
/// sentences a user would type, not a second description.
const MAX_REQUESTS: usize = 8;
/// See [`MAX_REQUESTS`].
const MAX_REQUEST_CHARS: usize = 200;

/// `requests`: at most [`MAX_REQUESTS`] sentences, none empty or longer than
/// [`MAX_REQUEST_CHARS`].
pub(super) fn requests(problems: &mut Vec<Problem>, requests: Option<Vec<String>>) -> Vec<String> {
    let requests = requests.unwrap_or_default();
    if requests.len() > MAX_REQUESTS {
        problems.push(problem(
            "requests",
            format!(
                "lists {} requests, more than {MAX_REQUESTS}",
                requests.len()
            ),
            format!("keep the {MAX_REQUESTS} that differ most in their words"),
        ));
    }
    for (i, request) in requests.iter().enumerate() {
        let chars = request.chars().count();
        if request.trim().is_empty() {
            problems.push(problem(
                &format!("requests[{i}]"),
                "is empty",
                "write what a user would say when they want the skill, or take it out",
            ));
        } else if chars > MAX_REQUEST_CHARS {
            problems.push(problem(
                &format!("requests[{i}]"),
                format!("is {chars} characters long, more than {MAX_REQUEST_CHARS}"),
                "write one short sentence, as a user would type it",
            ));
        }
    }
    requests
}

pub(super) fn is_semver(version: &str) -> bool {
    let core = version.split(['-', '+']).next().unwrap_or_default();
    let parts: Vec<&str> = core.split('.').collect();
    parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

pub(super) fn pipeline(
    problems: &mut Vec<Problem>,
    value: Option<Value>,
    mode: Mode,
) -> Vec<PipelineStep> {
    let steps: Vec<PipelineStep> = match value {
        None => Vec::new(),
        Some(value) => match serde_json::from_value(value) {
            Ok(steps) => steps,
            Err(e) => {
                problems.push(problem(
                    "pipeline",
                    e.to_string(),
                    "write a list of { \"step\", \"skill\", \"input\", \"condition\"?, \"foreach\"? }",
                ));
                return Vec::new();
            }
        },
    };
    if mode == Mode::Composite && steps.is_empty() {
        problems.push(problem(
            "pipeline",
            "a composite skill needs at least one step",
            "add `pipeline` steps, or use mode \"code\" or \"llm\"",
        ));
    }
    let mut seen = std::collections::HashSet::new();
    for (i, step) in steps.iter().enumerate() {
        let at = format!("pipeline[{i}]");
        if step.step.is_empty()
            || !step
                .step
                .chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '-')
        {
            problems.push(problem(
                &format!("{at}.step"),
                format!("{:?} is not a step label", step.step),
                "use letters, digits, `_` or `-`, so that `steps.<step>` can refer to it",
            ));
        } else if !seen.insert(step.step.as_str()) {
            problems.push(problem(
                &format!("{at}.step"),
                format!("step {:?} appears twice", step.step),
                "give each step its own label",
            ));
        }
        if !is_valid_name(&step.skill) {
            problems.push(problem(
                &format!("{at}.skill"),
                format!("{:?} is not a skill name", step.skill),
                "name a registered skill",
            ));
        }
        check_templates(problems, &format!("{at}.input"), &step.input);
        for (field, expression) in [("condition", &step.condition), ("foreach", &step.foreach)] {
            if let Some(expression) = expression
                && let Err(e) = template::parse_expression(expression)
            {
                problems.push(problem(
                    &format!("{at}.{field}"),
                    e.to_string(),
                    "fix the expression at that offset",
                ));
            }
        }
    }
    steps
}

/// Reports every string in `value` that is not a valid template.
pub(super) fn check_templates(problems: &mut Vec<Problem>, field: &str, value: &Value) {
    if let Err(e) = template::ValueTemplate::compile(value) {
        problems.push(problem(
            field,
            e.to_string(),
            "fix the template at that offset",
        ));
    }
}
