//! The tool registry's view of the skills: descriptors, `execute_tool` and `ToolResult`.
//!
//! Every skill — built-in tool, Wasm component, script, prompt — is a tool with a
//! [`ToolDescriptor`]: name, aliases, description, parameter and return schemas,
//! examples, notes, permission level. [`Host::list_tools`](crate::Host::list_tools),
//! [`Host::tool_descriptor`](crate::Host::tool_descriptor) and
//! [`Host::execute_tool`](crate::Host::execute_tool) are `list_tools`,
//! `get_tool_descriptor` and `execute_tool`; the CLI (`evo tool …`), `evo serve` and the
//! agent all go through them or the kernel beneath.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::permission::{Locale, Permission, missing_parameter_message};
use crate::error::Error;
use crate::skill::kernel::table::{RegisteredSkill, SkillTable};
use crate::skill::manifest::Example;

/// A tool as the registry describes it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolDescriptor {
    /// The canonical name.
    pub name: String,
    /// Other names it answers to (`Read`, `file-read`, …).
    pub aliases: Vec<String>,
    /// What it does and when to use it.
    pub description: String,
    /// Grouping (`file`, `system`, `vcs`, …).
    pub category: String,
    /// What runs it: `builtin`, `wasm`, `native`, `llm`, `composite`, `static`.
    pub kind: String,
    /// The level its worst call needs.
    pub permission: Permission,
    /// JSON Schema of the arguments (types, required, defaults).
    pub parameters: Value,
    /// JSON Schema of the result.
    pub returns: Value,
    /// Example calls.
    pub examples: Vec<Example>,
    /// Limits, performance and security notes.
    pub notes: Vec<String>,
    /// Wall-clock limit per call, ms.
    pub timeout_ms: u64,
}

impl ToolDescriptor {
    /// The descriptor of `skill` in `registry`.
    pub fn of(skill: &RegisteredSkill, registry: &SkillTable) -> Self {
        let meta = &skill.meta;
        Self {
            name: meta.name.clone(),
            aliases: registry.aliases_of(&meta.name),
            description: meta.description.clone(),
            category: meta.category.clone(),
            kind: format!("{:?}", skill.kind()).to_lowercase(),
            permission: skill.permission(),
            parameters: meta.input.clone(),
            returns: meta.output.clone(),
            examples: meta.examples.clone(),
            notes: meta.notes.clone(),
            timeout_ms: meta.timeout_ms,
        }
    }

    /// The tool's documentation page, with its sections (description,
    /// parameters, return value, examples, notes) in `locale`.
    pub fn markdown(&self, locale: Locale) -> String {
        use std::fmt::Write as _;
        let zh = locale == Locale::Zh;
        let heading = |en: &'static str, cn: &'static str| if zh { cn } else { en };
        let mut page = format!("# {}\n\n", self.name);
        if !self.aliases.is_empty() {
            let _ = writeln!(
                page,
                "{}: {}\n",
                heading("Aliases", "别名"),
                self.aliases
                    .iter()
                    .map(|a| format!("`{a}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        let _ = writeln!(
            page,
            "## {}\n\n{}\n\n{}: `{}` · {}: {} ms · {}: {}\n",
            heading("Description", "描述"),
            self.description,
            heading("Permission", "权限"),
            self.permission,
            heading("Timeout", "超时"),
            self.timeout_ms,
            heading("Runs as", "执行方式"),
            self.kind
        );
        let _ = writeln!(page, "## {}\n", heading("Parameters", "参数"));
        let required: Vec<&str> = self.parameters["required"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        match self.parameters["properties"].as_object() {
            Some(properties) if !properties.is_empty() => {
                let _ = writeln!(
                    page,
                    "| {} | {} | {} | {} | {} |\n| --- | --- | --- | --- | --- |",
                    heading("Name", "名称"),
                    heading("Type", "类型"),
                    heading("Required", "必需"),
                    heading("Default", "默认值"),
                    heading("Description", "说明"),
                );
                for (name, schema) in properties {
                    let _ = writeln!(
                        page,
                        "| `{name}` | {} | {} | {} | {} |",
                        type_of(schema),
                        if required.contains(&name.as_str()) {
                            heading("yes", "是")
                        } else {
                            heading("no", "否")
                        },
                        schema
                            .get("default")
                            .map_or_else(|| "—".to_owned(), |d| format!("`{d}`")),
                        cell(schema["description"].as_str().unwrap_or_default()),
                    );
                }
            }
            _ => page.push_str(heading("None.", "无。")),
        }
        let _ = writeln!(page, "\n## {}\n", heading("Returns", "返回值"));
        match self.returns["properties"].as_object() {
            Some(properties) if !properties.is_empty() => {
                for (name, schema) in properties {
                    let description = schema["description"].as_str().unwrap_or_default();
                    let _ = writeln!(
                        page,
                        "- `{name}` ({}){}",
                        type_of(schema),
                        if description.is_empty() {
                            String::new()
                        } else {
                            format!(": {description}")
                        }
                    );
                }
            }
            _ => {
                let _ = writeln!(page, "```json\n{:#}\n```", self.returns);
            }
        }
        let _ = writeln!(page, "\n## {}\n", heading("Examples", "示例"));
        if self.examples.is_empty() {
            page.push_str(heading("None given.\n", "无。\n"));
        }
        for example in &self.examples {
            let _ = writeln!(
                page,
                "{}\n\n```json\n{}\n```\n",
                example.description, example.input
            );
        }
        let _ = writeln!(page, "## {}\n", heading("Notes", "注意事项"));
        if self.notes.is_empty() {
            page.push_str(heading("None.\n", "无。\n"));
        }
        for note in &self.notes {
            let _ = writeln!(page, "- {note}");
        }
        page
    }
}

fn type_of(schema: &Value) -> String {
    match &schema["type"] {
        Value::String(t) => t.clone(),
        Value::Array(types) => types
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(" | "),
        _ if schema.get("enum").is_some() => "enum".into(),
        _ => "any".into(),
    }
}

/// `text` safe inside a Markdown table cell.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// An `execute_tool` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolRequest {
    /// The caller's id for the call, echoed as `call_id`.
    #[serde(default)]
    pub id: String,
    /// The tool (a name or an alias).
    pub tool_name: String,
    /// The arguments.
    #[serde(default = "empty_object")]
    pub arguments: Value,
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

/// How a call ended.
pub use super::history::Status;

/// What `execute_tool` answers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolResult {
    /// The request's `id`.
    pub call_id: String,
    /// `success`, `error` or `blocked`.
    pub status: Status,
    /// The tool's result (`null` unless it succeeded).
    pub output: Value,
    /// What went wrong, when it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The error's stable code, when it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// What to do about the failure, when it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// Whether the caller's request was at fault (an unknown tool, a missing
    /// parameter, a refusal), rather than the tool's run; see [`Error::is_bad_input`].
    #[serde(skip)]
    pub bad_input: bool,
    /// `execution_time_ms`, the tool's canonical name, and what the tool reports of its
    /// work (`file_size_bytes` for `read`).
    pub metadata: serde_json::Map<String, Value>,
}

/// Output fields lifted into [`ToolResult::metadata`] as well.
const METADATA_FIELDS: &[&str] = &["file_size_bytes", "total_lines", "exit_code", "duration_ms"];

impl ToolResult {
    /// The result of call `call_id` of `tool` that took `elapsed_ms`.
    pub fn new(call_id: String, tool: &str, result: Result<Value, Error>, elapsed_ms: f64) -> Self {
        let mut metadata = serde_json::Map::new();
        metadata.insert(
            "execution_time_ms".into(),
            serde_json::json!(elapsed_ms.round() as u64),
        );
        metadata.insert("tool".into(), Value::String(tool.to_owned()));
        match result {
            Ok(output) => {
                for field in METADATA_FIELDS {
                    if let Some(value) = output.get(*field) {
                        metadata.insert((*field).to_owned(), value.clone());
                    }
                }
                Self {
                    call_id,
                    status: Status::Success,
                    output,
                    error: None,
                    code: None,
                    hint: None,
                    bad_input: false,
                    metadata,
                }
            }
            Err(error) => {
                let status = if matches!(error, Error::Blocked { .. }) {
                    Status::Blocked
                } else {
                    Status::Error
                };
                let message = match &error {
                    Error::Blocked { message, .. } => message.clone(),
                    other => other.to_string(),
                };
                Self {
                    call_id,
                    status,
                    output: Value::Null,
                    error: Some(message),
                    code: Some(error.code().to_owned()),
                    hint: error.hint().map(str::to_owned),
                    bad_input: error.is_bad_input(),
                    metadata,
                }
            }
        }
    }
}

/// The first parameter `schema` requires that `arguments` lack, worded as
/// `缺少必需参数: file_path` (in `locale`).
pub fn missing_parameter(schema: &Value, arguments: &Value, locale: Locale) -> Option<String> {
    let required = schema["required"].as_array()?;
    required
        .iter()
        .filter_map(Value::as_str)
        .find(|name| arguments.get(*name).is_none_or(Value::is_null))
        .map(|name| missing_parameter_message(locale, name))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_missing_parameter_is_named_as_the_seed_words_it() {
        let schema = json!({ "type": "object", "required": ["file_path"] });
        assert_eq!(
            missing_parameter(&schema, &json!({}), Locale::Zh).as_deref(),
            Some("缺少必需参数: file_path")
        );
        assert_eq!(
            missing_parameter(&schema, &json!({ "file_path": null }), Locale::En).as_deref(),
            Some("missing required parameter: file_path")
        );
        assert_eq!(
            missing_parameter(&schema, &json!({ "file_path": "a" }), Locale::En),
            None
        );
    }
}
