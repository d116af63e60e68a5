//! Output that is always valid: a JSON Schema compiled to a machine that reads JSON one
//! character at a time and says whether what it read so far can still become a document
//! the schema accepts. A local model's sampler asks it, for every token, whether the
//! token's text may come next ([`Vocabulary::allowed`]), so the model can only write
//! JSON the kernel takes.
//!
//! What the machine enforces: `type` (one or several), `enum`, `const`, `properties`
//! with `required` (written in the schema's order, optional ones skippable),
//! `additionalProperties` (an object with no `properties` may hold any keys),
//! `items`, `minItems`/`maxItems`, `anyOf`/`oneOf`, `maxLength`, and numbers that may
//! not be negative when `minimum` is 0 or more. The JSON is compact (no whitespace
//! outside strings). Other keywords (`pattern`, `maximum`, formats) are left to the
//! validation every output goes through anyway.

mod machine;
#[cfg(test)]
mod tests;
mod vocabulary;

use std::rc::Rc;

use serde_json::Value;

pub use self::machine::Machine;
pub use self::vocabulary::Vocabulary;

/// Nesting allowed in a value of any shape (`{}` schemas, `additionalProperties`).
pub(super) const ANY_DEPTH: usize = 4;
/// Characters of a string whose schema sets no `maxLength`.
pub(super) const DEFAULT_MAX_STRING: usize = 2_000;

/// What a value may be.
#[derive(Debug)]
pub(super) enum Node {
    /// Any JSON value, nested at most this deep.
    Any(usize),
    Null,
    Boolean,
    Number {
        integer: bool,
        negative: bool,
    },
    String {
        max: usize,
    },
    /// Exactly one of these texts (JSON-encoded `enum`/`const` values).
    Literals(Vec<String>),
    Object {
        properties: Vec<(String, Rc<Node>, bool)>,
        /// Keys not in `properties`, any value (only for an object without properties).
        open: Option<Rc<Node>>,
    },
    Array {
        items: Rc<Node>,
        min: usize,
        max: usize,
    },
    AnyOf(Vec<Rc<Node>>),
}

/// A compiled schema.
#[derive(Debug, Clone)]
pub struct Grammar {
    root: Rc<Node>,
}

impl Grammar {
    /// Compiles `schema` (a JSON Schema object; `true` or `{}` allows any JSON).
    pub fn new(schema: &Value) -> Self {
        Self {
            root: compile(schema, ANY_DEPTH),
        }
    }

    /// The machine before the first character.
    pub fn start(&self) -> Machine {
        Machine::at(self.root.clone())
    }
}

fn compile(schema: &Value, depth: usize) -> Rc<Node> {
    let Some(object) = schema.as_object() else {
        return Rc::new(Node::Any(depth));
    };
    if let Some(value) = object.get("const") {
        return Rc::new(Node::Literals(vec![value.to_string()]));
    }
    if let Some(values) = object.get("enum").and_then(Value::as_array) {
        return Rc::new(Node::Literals(
            values.iter().map(Value::to_string).collect(),
        ));
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(options) = object.get(key).and_then(Value::as_array) {
            return Rc::new(Node::AnyOf(
                options.iter().map(|o| compile(o, depth)).collect(),
            ));
        }
    }
    let of_type = |kind: &str| -> Rc<Node> {
        Rc::new(match kind {
            "null" => Node::Null,
            "boolean" => Node::Boolean,
            "integer" | "number" => Node::Number {
                integer: kind == "integer",
                negative: !object
                    .get("minimum")
                    .and_then(Value::as_f64)
                    .is_some_and(|m| m >= 0.0),
            },
            "string" => Node::String {
                max: object
                    .get("maxLength")
                    .and_then(Value::as_u64)
                    .map_or(DEFAULT_MAX_STRING, |m| m as usize),
            },
            "array" => Node::Array {
                items: object.get("items").map_or_else(
                    || Rc::new(Node::Any(depth.saturating_sub(1))),
                    |i| compile(i, depth.saturating_sub(1)),
                ),
                min: object.get("minItems").and_then(Value::as_u64).unwrap_or(0) as usize,
                max: object
                    .get("maxItems")
                    .and_then(Value::as_u64)
                    .map_or(usize::MAX, |m| m as usize),
            },
            "object" => {
                let required: Vec<&str> = object
                    .get("required")
                    .and_then(Value::as_array)
                    .map(|r| r.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                let properties: Vec<(String, Rc<Node>, bool)> = object
                    .get("properties")
                    .and_then(Value::as_object)
                    .map(|p| {
                        p.iter()
                            .map(|(k, v)| {
                                (
                                    Value::String(k.clone()).to_string(),
                                    compile(v, depth.saturating_sub(1)),
                                    required.contains(&k.as_str()),
                                )
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                let open =
                    properties
                        .is_empty()
                        .then(|| match object.get("additionalProperties") {
                            Some(Value::Bool(false)) => None,
                            Some(extra @ Value::Object(_)) => {
                                Some(compile(extra, depth.saturating_sub(1)))
                            }
                            _ => (depth > 0).then(|| Rc::new(Node::Any(depth - 1))),
                        });
                Node::Object {
                    properties,
                    open: open.flatten(),
                }
            }
            _ => Node::Any(depth),
        })
    };
    match object.get("type") {
        Some(Value::String(kind)) => of_type(kind),
        Some(Value::Array(kinds)) => Rc::new(Node::AnyOf(
            kinds
                .iter()
                .filter_map(Value::as_str)
                .map(of_type)
                .collect(),
        )),
        _ if object.contains_key("properties") => of_type("object"),
        _ if object.contains_key("items") => of_type("array"),
        _ => Rc::new(Node::Any(depth)),
    }
}
