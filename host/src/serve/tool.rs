//! A skill as an MCP tool: its schemas (an output that is not an object wrapped as
//! `{ "result": … }`, as MCP's structured content must be an object), the hints a client
//! may rely on, and the text of a failed call.

use std::sync::Arc;

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::{Value, json};

use crate::error::Error;
use crate::host::Host;
use crate::skill::kernel::executor::{ExecutorKind, MemoryWriteOutcome, StepTrace};
use crate::skill::kernel::table::RegisteredSkill;
use crate::skill::permission::Permission;

/// The MCP tool for `skill`: its schemas, and hints from what it is granted.
pub fn tool_of(skill: &RegisteredSkill, host: &Host) -> Tool {
    let meta = &skill.meta;
    let input = object_schema(&meta.input).unwrap_or_else(|| {
        let mut any = JsonObject::new();
        any.insert("type".into(), json!("object"));
        any
    });
    let mut tool = Tool::new(meta.name.clone(), meta.description.clone(), Arc::new(input));
    if let Some(output) = object_schema(&meta.output).or_else(|| wrapped_schema(&meta.output)) {
        tool = tool.with_raw_output_schema(Arc::new(output));
    }
    tool.with_annotations(annotations(skill, host))
}

/// `schema` if it describes a JSON object (what MCP requires of tool schemas).
fn object_schema(schema: &Value) -> Option<JsonObject> {
    schema
        .as_object()
        .filter(|_| is_object_schema(schema))
        .cloned()
}

/// Whether `schema` describes a JSON object.
fn is_object_schema(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("object")
}

/// Whether an output described by `schema` is wrapped ([`wrapped_schema`]).
fn is_wrapped(schema: &Value) -> bool {
    schema.is_object() && !is_object_schema(schema)
}

/// For an output that is not an object (a plain component's function returning a
/// string, a number, a list): MCP's structured content must be an object, so it is
/// `{ "result": output }`, described by this schema.
fn wrapped_schema(schema: &Value) -> Option<JsonObject> {
    if !is_wrapped(schema) {
        return None;
    }
    match json!({
        "type": "object",
        "properties": { "result": schema },
        "required": ["result"],
    }) {
        Value::Object(object) => Some(object),
        _ => None,
    }
}

/// The structured content of `output`, a result of `skill`: the output itself when its
/// schema is an object's, else `{ "result": output }` ([`wrapped_schema`]).
pub(super) fn structured(skill: &RegisteredSkill, output: Value) -> Option<Value> {
    let schema = &skill.meta.output;
    if is_object_schema(schema) {
        return output.is_object().then_some(output);
    }
    is_wrapped(schema).then(|| json!({ "result": output }))
}

/// What a client may assume of `skill`, from its permission level: read-only only
/// at `read_only`, destructive above it; open-world when it reaches the language model.
pub fn annotations(skill: &RegisteredSkill, host: &Host) -> ToolAnnotations {
    let grant = host.granted(skill);
    let read_only = skill.permission() == Permission::ReadOnly;
    let open_world = grant.is_open_world()
        || matches!(
            skill.kind(),
            ExecutorKind::Llm | ExecutorKind::Service | ExecutorKind::Remote
        );
    ToolAnnotations::new()
        .read_only(read_only)
        .destructive(!read_only)
        .open_world(open_world)
}

/// The text a model reads for a failed call: the code, the message (for bad input, the
/// validation report) and what to do.
pub fn failure_text(error: &Error) -> String {
    let mut text = format!("error[{}]: {error}", error.code());
    if let Some(hint) = error.hint() {
        text.push_str("\nhint: ");
        text.push_str(hint);
    }
    text
}

/// What an MCP result adds to a skill's answer: the steps a failed composite ran, and
/// what became of the memory writes the skill suggested, as a JSON text a model can
/// read (`{"intermediateSteps": […]}`, `{"memory": […]}`) and in `_meta` under
/// `evo/intermediateSteps` and `evo/memory` for a program. `None` when there is neither.
pub fn trail(steps: &[StepTrace], memory: &[MemoryWriteOutcome]) -> Option<(String, JsonObject)> {
    let mut fields = JsonObject::new();
    if !steps.is_empty() {
        fields.insert("intermediateSteps".into(), json!(steps));
    }
    if !memory.is_empty() {
        fields.insert("memory".into(), json!(memory));
    }
    if fields.is_empty() {
        return None;
    }
    let text = Value::Object(fields.clone()).to_string();
    let meta = fields
        .into_iter()
        .map(|(key, value)| (format!("evo/{key}"), value))
        .collect();
    Some((text, meta))
}
