//! Evaluating expressions: truthiness, comparison, and the filters.

use serde_json::Value;

use super::*;

/// Whether a value counts as true in `{{#if}}`, `condition` and `||`: everything but
/// `null`, `false`, `0`, `""` and `[]`.
pub fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|n| n != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(_) => true,
    }
}

/// Text of a value as interpolated into a string.
pub(super) fn push_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => {}
        Value::String(s) => out.push_str(s),
        other => out.push_str(&other.to_string()),
    }
}

pub(super) fn compare(left: &Value, op: CmpOp, right: &Value) -> bool {
    let ordering = match (as_number(left), as_number(right)) {
        (Some(l), Some(r)) => l.partial_cmp(&r),
        _ => match (left, right) {
            (Value::String(l), Value::String(r)) => Some(l.cmp(r)),
            _ => None,
        },
    };
    match op {
        CmpOp::Eq => ordering.map_or_else(|| left == right, Ordering::is_eq),
        CmpOp::Ne => !ordering.map_or_else(|| left == right, Ordering::is_eq),
        CmpOp::Gt => ordering.is_some_and(Ordering::is_gt),
        CmpOp::Lt => ordering.is_some_and(Ordering::is_lt),
        CmpOp::Ge => ordering.is_some_and(Ordering::is_ge),
        CmpOp::Le => ordering.is_some_and(Ordering::is_le),
    }
}

/// Numbers, and strings that hold one (a model often writes `"3"` for `3`).
pub(super) fn as_number(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

pub(super) fn apply(filter: &Filter, value: Value) -> Result<Value, String> {
    Ok(match filter {
        Filter::Pluck(field) => match value {
            Value::Array(items) => Value::Array(
                items
                    .into_iter()
                    .map(|item| item.get(field.as_str()).cloned().unwrap_or(Value::Null))
                    .collect(),
            ),
            Value::Null => Value::Array(Vec::new()),
            other => return Err(format!("pluck needs an array, got {}", type_name(&other))),
        },
        Filter::Join(separator) => match value {
            Value::Array(items) => {
                let mut out = String::new();
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(separator);
                    }
                    push_value(&mut out, item);
                }
                Value::String(out)
            }
            Value::Null => Value::String(String::new()),
            Value::String(s) => Value::String(s),
            other => return Err(format!("join needs an array, got {}", type_name(&other))),
        },
        Filter::Slice(start, end) => match value {
            Value::Array(items) => {
                let (from, to) = bounds(items.len(), *start, *end);
                Value::Array(items[from..to].to_vec())
            }
            Value::String(text) => {
                let chars: Vec<char> = text.chars().collect();
                let (from, to) = bounds(chars.len(), *start, *end);
                Value::String(chars[from..to].iter().collect())
            }
            Value::Null => Value::Null,
            other => {
                return Err(format!(
                    "slice needs an array or a string, got {}",
                    type_name(&other)
                ));
            }
        },
        Filter::Default(fallback) => {
            if matches!(&value, Value::Null) || value.as_str() == Some("") {
                fallback.clone()
            } else {
                value
            }
        }
        Filter::Json => Value::String(value.to_string()),
        Filter::FormatSkills => match value {
            Value::Array(skills) => Value::String(
                skills
                    .iter()
                    .map(|skill| match skill {
                        Value::String(name) => format!("- {name}"),
                        other => {
                            let name = other.get("name").and_then(Value::as_str).unwrap_or("?");
                            match other.get("description").and_then(Value::as_str) {
                                Some(description) => format!("- {name}: {description}"),
                                None => format!("- {name}"),
                            }
                        }
                    })
                    .collect::<Vec<_>>()
                    .join("\n"),
            ),
            Value::Null => Value::String(String::new()),
            Value::String(s) => Value::String(s),
            other => {
                return Err(format!(
                    "format_skills needs an array of skills, got {}",
                    type_name(&other)
                ));
            }
        },
    })
}

/// Clamped `[from, to)` for a slice with JavaScript's negative-index rules.
pub(super) fn bounds(len: usize, start: i64, end: Option<i64>) -> (usize, usize) {
    let len_i = i64::try_from(len).unwrap_or(i64::MAX);
    let clamp = |i: i64| -> usize {
        let i = if i < 0 {
            (len_i + i).max(0)
        } else {
            i.min(len_i)
        };
        usize::try_from(i).unwrap_or(0)
    };
    let from = clamp(start);
    let to = clamp(end.unwrap_or(len_i));
    (from, to.max(from))
}

/// What kind of JSON `value` is, in words (`a string`, `null`).
pub(crate) fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
