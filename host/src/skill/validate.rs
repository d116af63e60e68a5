//! JSON Schema validation with reports a language model can act on.
//!
//! [`Schema`] compiles a skill's input or output schema once (draft 7 unless the schema
//! names another `$schema`) with the `jsonschema` crate. [`Schema::check`] lists every
//! violation with a readable path (`routing.strategy`, `intents[0].confidence`), the rule
//! that failed, what was expected, what was there, and one suggestion; a
//! [`ValidationReport`] wraps them with the skill, the direction and the attempt, and
//! [`ValidationReport::to_llm_text`] is what goes back to the model.
//!
//! ```
//! use evo_host::skill::validate::{Direction, Schema, ValidationReport};
//! use serde_json::json;
//!
//! let schema = Schema::compile(&json!({
//!     "type": "object",
//!     "properties": { "limit": { "type": "number", "default": 5, "minimum": 1 } },
//! })).unwrap();
//! let mut input = json!({});
//! schema.apply_defaults(&mut input);
//! assert_eq!(input, json!({ "limit": 5 }));
//!
//! let violations = schema.check(&json!({ "limit": 0 }));
//! assert_eq!(violations[0].path, "limit");
//! assert_eq!(violations[0].rule, "minimum");
//! let report = ValidationReport::new("memory_search", Direction::Input, 1, 3, violations);
//! assert!(report.to_llm_text().contains("[limit] minimum"));
//! ```

use std::fmt;
use std::sync::OnceLock;

use jsonschema::Validator;
use serde_json::Value;

pub use crate::error::report::{Direction, ValidationReport, Violation};

/// A compiled JSON Schema.
pub struct Schema {
    source: Value,
    /// Compiled at once by [`Schema::compile`], on first use after [`Schema::deferred`].
    compiled: OnceLock<Compiled>,
    /// Whether [`Schema::apply_defaults`] can change anything (a `default` somewhere).
    has_defaults: bool,
}

enum Compiled {
    /// `{}` or `true`: nothing to check.
    AcceptsAll,
    Validator(Validator),
    /// A deferred schema that did not compile: every value is refused, saying why.
    Broken(String),
}

impl fmt::Debug for Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Schema")
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

impl Schema {
    /// Compiles `schema`. An empty schema (`{}` or `true`) accepts everything and costs
    /// nothing to check.
    pub fn compile(schema: &Value) -> Result<Self, String> {
        let compiled = build(schema)?;
        Ok(Self {
            has_defaults: mentions_default(schema),
            source: schema.clone(),
            compiled: OnceLock::from(compiled),
        })
    }

    /// `schema`, compiled on its first use: for a schema known to compile (it did when
    /// its skill was first loaded). Should it not, every value is refused with a
    /// violation that says so.
    pub(crate) fn deferred(schema: Value) -> Self {
        Self {
            has_defaults: mentions_default(&schema),
            source: schema,
            compiled: OnceLock::new(),
        }
    }

    fn compiled(&self) -> &Compiled {
        self.compiled
            .get_or_init(|| build(&self.source).unwrap_or_else(Compiled::Broken))
    }

    /// Whether [`Schema::apply_defaults`] can change a value.
    pub fn has_defaults(&self) -> bool {
        self.has_defaults
    }

    /// The schema as written.
    pub fn source(&self) -> &Value {
        &self.source
    }

    /// Whether `value` is valid, without building a report.
    pub fn is_valid(&self, value: &Value) -> bool {
        match self.compiled() {
            Compiled::AcceptsAll => true,
            Compiled::Validator(validator) => validator.is_valid(value),
            Compiled::Broken(_) => false,
        }
    }

    /// Every violation in `value`; empty when it is valid.
    pub fn check(&self, value: &Value) -> Vec<Violation> {
        self.violations(value, None)
    }

    /// [`Self::check`] of `value`, which is `sent` with [`Self::apply_defaults`] applied,
    /// reporting what the caller sent as each violation's `actual`: an object is shown
    /// without the defaults the caller never wrote.
    pub fn check_sent(&self, sent: &Value, value: &Value) -> Vec<Violation> {
        self.violations(value, Some(sent))
    }

    fn violations(&self, value: &Value, sent: Option<&Value>) -> Vec<Violation> {
        let validator = match self.compiled() {
            Compiled::AcceptsAll => return Vec::new(),
            Compiled::Validator(validator) => validator,
            Compiled::Broken(message) => {
                return vec![Violation {
                    path: "(root)".to_owned(),
                    rule: "$schema".to_owned(),
                    expected: "a skill whose schema compiles".to_owned(),
                    actual: Value::Null,
                    suggestion: format!(
                        "The skill's own schema is not a valid JSON Schema ({message}); its manifest must be fixed."
                    ),
                }];
            }
        };
        if validator.is_valid(value) {
            return Vec::new();
        }
        validator
            .iter_errors(value)
            .map(|error| self.violation(&error, sent))
            .collect()
    }

    /// Fills in `default` values of missing object properties, recursively through
    /// properties that are present and array items.
    pub fn apply_defaults(&self, value: &mut Value) {
        apply_defaults(&self.source, value, 0);
    }

    fn violation(
        &self,
        error: &jsonschema::ValidationError<'_>,
        sent: Option<&Value>,
    ) -> Violation {
        let rule = error.kind().keyword().to_owned();
        let schema_path = error.schema_path().to_string();
        let parent = schema_path
            .rsplit_once('/')
            .map_or("", |(parent, _)| parent);
        let subschema = self.source.pointer(parent).unwrap_or(&Value::Null);
        let pointer = error.instance_path().to_string();
        let mut path = readable_path(&pointer);
        let mut actual = match sent.and_then(|sent| sent.pointer(&pointer)) {
            Some(as_sent) => as_sent.clone(),
            None => error.instance().clone().into_owned(),
        };

        let (expected, suggestion) = match error.kind() {
            jsonschema::error::ValidationErrorKind::Required { property } => {
                let name = property.as_str().unwrap_or_default().to_owned();
                path = join_path(&path, &name);
                actual = Value::Null;
                let described = subschema
                    .pointer(&format!(
                        "/properties/{}/description",
                        escape_pointer(&name)
                    ))
                    .and_then(Value::as_str);
                (
                    format!("a value for \"{name}\""),
                    match described {
                        Some(description) => format!("Provide `{name}` ({description})."),
                        None => format!("Provide `{name}`."),
                    },
                )
            }
            _ => expectation(&rule, subschema, &actual, &path, &error.to_string()),
        };
        Violation {
            path,
            rule,
            expected,
            actual,
            suggestion,
        }
    }
}

fn build(schema: &Value) -> Result<Compiled, String> {
    let accepts_all = match schema {
        Value::Bool(true) => true,
        Value::Object(map) => map.is_empty(),
        _ => false,
    };
    if accepts_all {
        return Ok(Compiled::AcceptsAll);
    }
    let mut options = jsonschema::options();
    if schema.get("$schema").is_none() {
        options = options.with_draft(jsonschema::Draft::Draft7);
    }
    let validator = options.build(schema).map_err(|e| e.to_string())?;
    Ok(Compiled::Validator(validator))
}

/// Whether a `default` keyword appears anywhere in `schema`.
fn mentions_default(schema: &Value) -> bool {
    match schema {
        Value::Object(map) => map
            .iter()
            .any(|(key, value)| key == "default" || mentions_default(value)),
        Value::Array(items) => items.iter().any(mentions_default),
        _ => false,
    }
}

/// What the schema wants and how to get there, for a violation of `rule`.
fn expectation(
    rule: &str,
    schema: &Value,
    actual: &Value,
    path: &str,
    message: &str,
) -> (String, String) {
    let field = if path == "(root)" { "the value" } else { path };
    let get = |key: &str| schema.get(key).map(Value::to_string).unwrap_or_default();
    match rule {
        "type" => {
            let wanted = match schema.get("type") {
                Some(Value::Array(types)) => types
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(" or "),
                Some(Value::String(t)) => t.clone(),
                _ => "another type".to_owned(),
            };
            let range = match (schema.get("minimum"), schema.get("maximum")) {
                (Some(lo), Some(hi)) => format!(" ({lo}-{hi})"),
                (Some(lo), None) => format!(" (>= {lo})"),
                (None, Some(hi)) => format!(" (<= {hi})"),
                (None, None) => String::new(),
            };
            let example = match wanted.as_str() {
                "number" | "integer" => {
                    match (actual.as_str().map(str::trim), schema.get("minimum")) {
                        (Some(text), _) if text.parse::<f64>().is_ok() => {
                            format!(" Write {text} without quotes.")
                        }
                        (_, Some(lo)) => format!(" For example {lo}."),
                        _ => String::new(),
                    }
                }
                "string" if !actual.is_null() => format!(" For example \"{}\".", plain(actual)),
                _ => String::new(),
            };
            (
                format!("{wanted}{range}"),
                format!("{field} must be {}{range}.{example}", article(&wanted)),
            )
        }
        "enum" => {
            let options: Vec<&Value> = schema
                .get("enum")
                .and_then(Value::as_array)
                .map(|o| o.iter().collect())
                .unwrap_or_default();
            let list = options
                .iter()
                .map(|o| plain(o))
                .collect::<Vec<_>>()
                .join(", ");
            let closest = actual.as_str().and_then(|text| {
                options
                    .iter()
                    .filter_map(|o| o.as_str())
                    .map(|o| (similarity(text, o), o))
                    .filter(|(score, _)| *score > 0.3)
                    .max_by(|a, b| a.0.total_cmp(&b.0))
                    .map(|(_, o)| o)
            });
            (
                format!("one of: {list}"),
                match closest {
                    Some(option) => format!("Change '{}' to '{option}'.", plain(actual)),
                    None => format!("Choose one of [{list}]."),
                },
            )
        }
        "minimum" => (
            format!(">= {}", get("minimum")),
            format!("{field} must not be less than {}.", get("minimum")),
        ),
        "maximum" => (
            format!("<= {}", get("maximum")),
            format!("{field} must not be greater than {}.", get("maximum")),
        ),
        "exclusiveMinimum" => (
            format!("> {}", get("exclusiveMinimum")),
            format!("{field} must be greater than {}.", get("exclusiveMinimum")),
        ),
        "exclusiveMaximum" => (
            format!("< {}", get("exclusiveMaximum")),
            format!("{field} must be less than {}.", get("exclusiveMaximum")),
        ),
        "minLength" => (
            format!("at least {} characters", get("minLength")),
            format!(
                "Make {field} at least {} characters long.",
                get("minLength")
            ),
        ),
        "maxLength" => (
            format!("at most {} characters", get("maxLength")),
            format!(
                "Shorten {field} to at most {} characters.",
                get("maxLength")
            ),
        ),
        "minItems" => (
            format!("at least {} items", get("minItems")),
            format!("Give {field} at least {} items.", get("minItems")),
        ),
        "maxItems" => (
            format!("at most {} items", get("maxItems")),
            format!("Give {field} at most {} items.", get("maxItems")),
        ),
        "pattern" => (
            format!("text matching {}", get("pattern")),
            format!("Rewrite {field} to match the pattern {}.", get("pattern")),
        ),
        "format" => (
            format!(
                "a valid {}",
                plain(schema.get("format").unwrap_or(&Value::Null))
            ),
            format!(
                "Write {field} as a valid {}.",
                plain(schema.get("format").unwrap_or(&Value::Null))
            ),
        ),
        "additionalProperties" => (
            "no other properties".to_owned(),
            format!("Remove the properties the schema does not list from {field}."),
        ),
        "const" => (get("const"), format!("Set {field} to {}.", get("const"))),
        // A choice of schemas says nothing readable by itself; its description does.
        "anyOf" | "oneOf" => match schema.get("description").and_then(Value::as_str) {
            // An integer past 2^53 where its decimal string is also taken (a WIT u64 or
            // s64): in range or not, JSON readers (JavaScript's among them) round such a
            // number, so the schema takes it only as a string.
            Some(description) if past_exact(actual) && takes_a_string(schema) => (
                description.to_owned(),
                format!(
                    "{field} must be {description}. {actual} is past {EXACT_INTEGER}, the largest integer a JSON number carries exactly: send it as a decimal string, \"{actual}\" (a client may already have rounded it)."
                ),
            ),
            Some(description) => (
                description.to_owned(),
                format!("{field} must be {description}."),
            ),
            None => (message.to_owned(), format!("Fix {field}: {message}.")),
        },
        _ => (message.to_owned(), format!("Fix {field}: {message}.")),
    }
}

/// The largest integer every JSON reader holds exactly (2^53 − 1): past it, readers that
/// hold numbers as 64-bit floats (JavaScript's among them) round.
pub(crate) const EXACT_INTEGER: u64 = (1 << 53) - 1;

/// Whether `value` is an integer past 2^53 - 1 either way, where readers that hold
/// numbers as 64-bit floats round (one past u64 or i64 is read as a float, not here).
fn past_exact(value: &Value) -> bool {
    value.as_u64().is_some_and(|n| n > EXACT_INTEGER)
        || value
            .as_i64()
            .is_some_and(|n| n.unsigned_abs() > EXACT_INTEGER)
}

/// Whether one of the schemas of an `anyOf` or `oneOf` takes a string.
fn takes_a_string(schema: &Value) -> bool {
    ["anyOf", "oneOf"]
        .iter()
        .filter_map(|key| schema.get(key).and_then(Value::as_array))
        .flatten()
        .any(|branch| branch.get("type").and_then(Value::as_str) == Some("string"))
}

/// How alike two enum values are, in [0, 1]: the better of edit distance and shared
/// words, so `answer_directly` finds `direct_answer` and `pipeline_mode` finds `pipeline`.
fn similarity(a: &str, b: &str) -> f64 {
    let words = |s: &str| -> Vec<String> {
        s.split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect()
    };
    let (wa, wb) = (words(a), words(b));
    let alike = |x: &String, y: &String| {
        x == y
            || (x.len().min(y.len()) >= 3
                && (x.starts_with(y.as_str()) || y.starts_with(x.as_str())))
    };
    let shared = wa.iter().filter(|x| wb.iter().any(|y| alike(x, y))).count();
    let by_words = shared as f64 / wa.len().max(wb.len()).max(1) as f64;
    by_words.max(strsim::normalized_levenshtein(a, b))
}

fn article(word: &str) -> String {
    match word.chars().next() {
        Some('a' | 'e' | 'i' | 'o' | 'u') => format!("an {word}"),
        _ => format!("a {word}"),
    }
}

/// A value as text without JSON quotes around strings.
fn plain(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `/intents/0/confidence` → `intents[0].confidence`; `` → `(root)`.
fn readable_path(pointer: &str) -> String {
    let mut out = String::new();
    for token in pointer.split('/').skip(1) {
        let token = token.replace("~1", "/").replace("~0", "~");
        if !token.is_empty() && token.bytes().all(|b| b.is_ascii_digit()) {
            out.push_str(&format!("[{token}]"));
        } else {
            out = join_path(&out, &token);
        }
    }
    if out.is_empty() {
        "(root)".to_owned()
    } else {
        out
    }
}

fn join_path(parent: &str, key: &str) -> String {
    if parent.is_empty() || parent == "(root)" {
        key.to_owned()
    } else {
        format!("{parent}.{key}")
    }
}

fn escape_pointer(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// Deepest schema nesting `apply_defaults` follows; schemas deeper than this are not
/// written by hand, and a bound keeps a self-similar schema from recursing forever.
const MAX_DEFAULTS_DEPTH: usize = 32;

fn apply_defaults(schema: &Value, value: &mut Value, depth: usize) {
    if depth > MAX_DEFAULTS_DEPTH {
        return;
    }
    match value {
        Value::Object(object) => {
            let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
                return;
            };
            for (key, property) in properties {
                match object.get_mut(key) {
                    Some(present) => apply_defaults(property, present, depth + 1),
                    None => {
                        if let Some(default) = property.get("default") {
                            object.insert(key.clone(), default.clone());
                        }
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items").filter(|s| s.is_object()) {
                for item in items {
                    apply_defaults(item_schema, item, depth + 1);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests;
