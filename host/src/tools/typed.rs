//! Tools written with Rust types: [`TypedTool`]. The manifest's `input` and `output`
//! JSON Schemas are generated from the types (schemars), so what a tool reads and what
//! its schema promises cannot drift apart, and a call's input arrives deserialized.

use std::fmt;

use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema};
use serde::Deserialize as _;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{BoxFuture, Tool, invalid};
use crate::error::{Error, Result};
use crate::skill::kernel::SkillContext;
use crate::skill::permission::Permission;

/// A [`Tool`] whose input and output are Rust types.
///
/// The manifest is [`describe`](Self::describe) with `name` set to [`NAME`](Self::NAME)
/// and `input`/`output` generated from [`Input`](Self::Input) and
/// [`Output`](Self::Output): field doc comments become descriptions, `#[serde(default)]`
/// a schema `default`, `#[schemars(range(min = 1))]` or `length(min = 1)` the bounds,
/// `#[serde(deny_unknown_fields)]` `additionalProperties: false`. Every type implementing
/// `TypedTool` is a [`Tool`].
///
/// ```
/// use evo_host::{tools::BoxFuture, SkillContext, TypedTool};
/// use schemars::JsonSchema;
/// use serde::{Deserialize, Serialize};
/// use serde_json::{Value, json};
///
/// #[derive(Debug)]
/// struct Shout;
///
/// #[derive(Deserialize, JsonSchema)]
/// struct ShoutInput {
///     /// the text to upper-case
///     #[schemars(length(min = 1))]
///     text: String,
/// }
///
/// #[derive(Serialize, JsonSchema)]
/// struct ShoutOutput {
///     /// the text, upper-cased
///     text: String,
/// }
///
/// impl TypedTool for Shout {
///     const NAME: &'static str = "shout";
///     type Input = ShoutInput;
///     type Output = ShoutOutput;
///
///     fn describe(&self) -> Value {
///         json!({ "description": "Upper-cases a text." })
///     }
///
///     fn run(&self, input: ShoutInput, _ctx: SkillContext) -> BoxFuture<'_, evo_host::Result<ShoutOutput>> {
///         Box::pin(async move { Ok(ShoutOutput { text: input.text.to_uppercase() }) })
///     }
/// }
///
/// let manifest = evo_host::Tool::manifest(&Shout);
/// assert_eq!(manifest["input"]["required"], json!(["text"]));
/// assert_eq!(manifest["input"]["properties"]["text"]["minLength"], 1);
/// ```
pub trait TypedTool: Send + Sync + fmt::Debug + 'static {
    /// The tool's name.
    const NAME: &'static str;
    /// What one call is given. The kernel has validated the input against this type's
    /// schema (and applied its defaults) before it is deserialized.
    type Input: DeserializeOwned + JsonSchema + Send + 'static;
    /// What one call returns.
    type Output: Serialize + JsonSchema + Send + 'static;

    /// The manifest, in the `skill.json` shape, without `name`, `input` and `output`
    /// (description, category, tags, permission, timeout, examples, notes, …).
    fn describe(&self) -> Value;

    /// Other names the tool answers to.
    fn aliases(&self) -> &[&'static str] {
        &[]
    }

    /// The input schema generated from [`Input`](Self::Input), refined with what only
    /// this instance knows (a bound set by the host's configuration).
    fn input_schema(&self, generated: Value) -> Value {
        generated
    }

    /// The level one call with `input` needs, when it depends on the input (at most the
    /// manifest's `permission`); `None` for the manifest's level.
    fn permission_for(&self, _input: &Self::Input) -> Option<Permission> {
        None
    }

    /// Runs the tool on `input`. `ctx` is the tool's own frame.
    fn run(&self, input: Self::Input, ctx: SkillContext) -> BoxFuture<'_, Result<Self::Output>>;
}

impl<T: TypedTool> Tool for T {
    fn manifest(&self) -> Value {
        let mut manifest = self.describe();
        if let Some(fields) = manifest.as_object_mut() {
            fields.insert("name".to_owned(), Value::from(T::NAME));
            fields.insert(
                "input".to_owned(),
                self.input_schema(input_schema::<T::Input>()),
            );
            fields.insert("output".to_owned(), output_schema::<T::Output>());
        }
        manifest
    }

    fn aliases(&self) -> &[&'static str] {
        TypedTool::aliases(self)
    }

    fn permission_for(&self, input: &Value) -> Option<Permission> {
        let input = T::Input::deserialize(input).ok()?;
        TypedTool::permission_for(self, &input)
    }

    fn call(&self, input: Value, ctx: SkillContext) -> BoxFuture<'_, Result<Value>> {
        Box::pin(async move {
            let output = self.run(input_of::<T>(input)?, ctx).await?;
            output_of::<T>(&output)
        })
    }
}

/// `input` read as `T`'s input type; a refusal of the input when it does not fit.
pub(crate) fn input_of<T: TypedTool>(input: Value) -> Result<T::Input> {
    serde_json::from_value(input)
        .map_err(|e| invalid(T::NAME, &format!("the input does not fit: {e}")))
}

/// `output` as JSON.
pub(crate) fn output_of<T: TypedTool>(output: &T::Output) -> Result<Value> {
    serde_json::to_value(output)
        .map_err(|e| Error::Engine(format!("{}: its output is not JSON: {e}", T::NAME)))
}

/// The JSON Schema a value of `T` is read from. An optional field (an `Option` with
/// `#[serde(default)]`) is one that may be left out: its schema is its value's, without
/// the `null` a model would otherwise be invited to send.
pub(crate) fn input_schema<T: JsonSchema>() -> Value {
    let mut schema = schema(SchemaSettings::draft2020_12().for_deserialize(), |g| {
        g.into_root_schema_for::<T>()
    });
    drop_optional_nulls(&mut schema);
    schema
}

/// The JSON Schema a value of `T` is written as.
pub(crate) fn output_schema<T: JsonSchema>() -> Value {
    schema(SchemaSettings::draft2020_12().for_serialize(), |g| {
        g.into_root_schema_for::<T>()
    })
}

/// A self-contained schema (subschemas inlined) without what a manifest does not need:
/// the meta-schema, the type's title and doc comment (the manifest describes the tool),
/// and the integer formats schemars adds (`uint64`), which validators ignore.
fn schema(
    settings: SchemaSettings,
    generate: impl FnOnce(schemars::SchemaGenerator) -> Schema,
) -> Value {
    let generator = settings
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator();
    let mut schema = generate(generator).to_value();
    if let Some(root) = schema.as_object_mut() {
        root.remove("title");
        root.remove("description");
    }
    drop_number_formats(&mut schema);
    schema
}

fn drop_optional_nulls(schema: &mut Value) {
    match schema {
        Value::Object(fields) => {
            let required: Vec<String> = fields
                .get("required")
                .and_then(Value::as_array)
                .map(|names| {
                    names
                        .iter()
                        .filter_map(|n| n.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default();
            if let Some(Value::Object(properties)) = fields.get_mut("properties") {
                for (name, property) in properties.iter_mut() {
                    let Some(property) = property.as_object_mut() else {
                        continue;
                    };
                    if required.contains(name) || property.get("default") != Some(&Value::Null) {
                        continue;
                    }
                    property.remove("default");
                    if let Some(Value::Array(types)) = property.get_mut("type") {
                        types.retain(|t| t != "null");
                        if let [only] = types.as_slice() {
                            let only = only.clone();
                            property.insert("type".to_owned(), only);
                        }
                    }
                }
            }
            fields.values_mut().for_each(drop_optional_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_optional_nulls),
        _ => {}
    }
}

fn drop_number_formats(schema: &mut Value) {
    match schema {
        Value::Object(fields) => {
            let numeric = matches!(
                fields.get("type").and_then(Value::as_str),
                Some("integer" | "number")
            ) || fields
                .get("type")
                .and_then(Value::as_array)
                .is_some_and(|types| types.iter().any(|t| t == "integer" || t == "number"));
            if numeric {
                fields.remove("format");
            }
            fields.values_mut().for_each(drop_number_formats);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_number_formats),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::glob::Glob;

    #[test]
    fn a_typed_tools_schemas_say_what_its_types_read_and_write() {
        let manifest = Tool::manifest(&Glob::new("."));
        assert_eq!(manifest["name"], "glob");
        let input = &manifest["input"];
        assert_eq!(input["type"], "object");
        assert_eq!(input["required"], json!(["pattern"]));
        assert_eq!(input["properties"]["pattern"]["minLength"], 1);
        assert_eq!(input["properties"]["limit"]["default"], 1_000);
        assert_eq!(input["properties"]["limit"]["minimum"], 1);
        assert_eq!(input["properties"]["limit"]["maximum"], 10_000);
        assert!(input["properties"]["limit"].get("format").is_none());
        assert_eq!(
            input["properties"]["path"],
            json!({ "type": "string", "description": "the directory to search, relative to the working directory (default: all of it)" }),
            "an optional field may be left out, not sent as null"
        );
        assert!(input.get("$schema").is_none() && input.get("title").is_none());
        let output = &manifest["output"];
        assert_eq!(output["required"], json!(["files", "count", "truncated"]));
        assert_eq!(
            output["properties"]["files"]["description"],
            "paths relative to the working directory, newest first"
        );
    }
}
