//! A plain component's sidecar `functions`: what it says of each function, over what
//! the component says (its WIT docs) or Evo makes up.
//!
//! ```json
//! "functions": {
//!   "greet": { "description": "Greets someone by name.", "tags": ["demo"],
//!              "examples": [{ "description": "Greet Ada", "input": { "name": "Ada" } }] },
//!   "kinds/divide": { "description": "Divides two integers.",
//!                     "parameters": { "a": "The dividend.", "b": "The divisor; not zero." } }
//! }
//! ```

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use crate::error::{Error, Result};
use crate::skill::manifest::{Example, Problem, SkillMeta};

/// What the sidecar says of one function.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Function {
    description: Option<String>,
    tags: Option<Vec<String>>,
    examples: Option<Vec<Example>>,
    /// Each parameter's description (WIT has no doc comments on parameters).
    parameters: Option<BTreeMap<String, String>>,
}

/// The sidecar's `functions`, by WIT name or skill name.
#[derive(Debug, Default)]
pub(super) struct Overrides(BTreeMap<String, Function>);

impl Overrides {
    /// Reads `functions` (of the component `component`), refusing a function the
    /// component does not export as a skill, or a field it does not know.
    /// `exports` names each function that is a skill: its WIT name, skill name and
    /// input schema.
    pub(super) fn read(
        component: &str,
        functions: Option<Value>,
        exports: &[(&str, &str, &Value)],
    ) -> Result<Self> {
        let Some(functions) = functions else {
            return Ok(Self::default());
        };
        let invalid = |field: String, message: String, fix: String| Error::InvalidManifest {
            skill: component.to_owned(),
            problems: vec![Problem {
                field,
                message,
                fix,
            }],
        };
        let map: BTreeMap<String, Function> = serde_json::from_value(functions).map_err(|e| {
            invalid(
                "functions".into(),
                e.to_string(),
                "give an object of functions, each { \"description\", \"tags\", \"examples\" }"
                    .into(),
            )
        })?;
        for (name, function) in &map {
            let Some((_, _, input)) = exports
                .iter()
                .find(|(path, skill, _)| path == name || skill == name)
            else {
                let known: Vec<&str> = exports.iter().map(|(path, _, _)| *path).collect();
                return Err(invalid(
                    format!("functions.{name}"),
                    format!("the component exports no function `{name}` that is a skill"),
                    format!("name one of {}", known.join(", ")),
                ));
            };
            let params: Vec<&String> = input["properties"]
                .as_object()
                .map(|p| p.keys().collect())
                .unwrap_or_default();
            for parameter in function.parameters.iter().flat_map(BTreeMap::keys) {
                if !params.contains(&parameter) {
                    let known: Vec<String> = params.iter().map(|p| format!("`{p}`")).collect();
                    return Err(invalid(
                        format!("functions.{name}.parameters.{parameter}"),
                        format!("`{name}` has no parameter `{parameter}`"),
                        format!("describe its parameters: {}", known.join(", ")),
                    ));
                }
            }
            for (i, example) in function.examples.iter().flatten().enumerate() {
                if !example.input.is_object() {
                    return Err(invalid(
                        format!("functions.{name}.examples[{i}].input"),
                        "is not an object".into(),
                        "give the example's arguments as a JSON object of the function's parameters".into(),
                    ));
                }
            }
        }
        Ok(Self(map))
    }

    /// Applies what the sidecar says of the function `path` (skill `name`) to its
    /// manifest `skill`.
    pub(super) fn apply(&mut self, path: &str, name: &str, skill: &mut SkillMeta) {
        let found = self.0.remove(path).or_else(|| self.0.remove(name));
        let Some(function) = found else {
            return;
        };
        if let Some(description) = function.description.filter(|d| !d.trim().is_empty()) {
            skill.description = description;
        }
        if let Some(tags) = function.tags {
            skill.tags.extend(tags);
        }
        if let Some(examples) = function.examples {
            skill.examples = examples;
        }
        for (parameter, description) in function.parameters.into_iter().flatten() {
            if let Some(property) = skill.input["properties"].get_mut(&parameter) {
                // A type's own description says which forms it takes (`an integer …, or
                // its decimal string`): kept after the parameter's.
                let forms = property["description"].as_str().map(str::to_owned);
                property["description"] = Value::String(match forms {
                    Some(forms) => format!("{description} ({forms})"),
                    None => description,
                });
            }
        }
    }
}
