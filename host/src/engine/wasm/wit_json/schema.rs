//! The JSON Schema (draft 7) of a WIT type's JSON form.

use serde_json::{Map, Value, json};
use wasmtime::component::Type;

use super::EXACT_INTEGER;

/// The JSON Schema (draft 7) of `ty`'s JSON form.
pub fn schema(ty: &Type) -> Value {
    match ty {
        Type::Bool => json!({ "type": "boolean" }),
        Type::U8 => range(0, u8::MAX.into()),
        Type::U16 => range(0, u16::MAX.into()),
        Type::U32 => range(0, u32::MAX.into()),
        Type::S8 => range(i8::MIN.into(), i8::MAX.into()),
        Type::S16 => range(i16::MIN.into(), i16::MAX.into()),
        Type::S32 => range(i32::MIN.into(), i32::MAX.into()),
        Type::U64 => json!({
            "description": "an integer from 0 to 18446744073709551615, or its decimal string",
            "anyOf": [
                { "type": "integer", "minimum": 0, "maximum": EXACT_INTEGER },
                { "type": "string", "pattern": "^[0-9]{1,20}$" }
            ]
        }),
        Type::S64 => json!({
            "description": "an integer from -9223372036854775808 to 9223372036854775807, or its decimal string",
            "anyOf": [
                { "type": "integer", "minimum": -(EXACT_INTEGER as i64), "maximum": EXACT_INTEGER },
                { "type": "string", "pattern": "^-?[0-9]{1,19}$" }
            ]
        }),
        // A finite number past f32's range would become an infinity: refused, as the
        // conversion refuses it.
        Type::Float32 => json!({
            "description": super::read::FLOAT32,
            "anyOf": [
                { "type": "number", "minimum": -f64::from(f32::MAX), "maximum": f64::from(f32::MAX) },
                { "enum": ["NaN", "Infinity", "-Infinity"] }
            ]
        }),
        Type::Float64 => json!({
            "description": super::read::FLOAT,
            "anyOf": [
                { "type": "number" },
                { "enum": ["NaN", "Infinity", "-Infinity"] }
            ]
        }),
        Type::Char => json!({ "type": "string", "minLength": 1, "maxLength": 1 }),
        Type::String => json!({ "type": "string" }),
        Type::List(list) if list.ty() == Type::U8 => {
            json!({ "type": "string", "contentEncoding": "base64" })
        }
        Type::List(list) => json!({ "type": "array", "items": schema(&list.ty()) }),
        Type::FixedLengthList(list) => json!({
            "type": "array",
            "items": schema(&list.ty()),
            "minItems": list.len(),
            "maxItems": list.len()
        }),
        Type::Map(map) if map.key() == Type::String => json!({
            "type": "object",
            "additionalProperties": schema(&map.value())
        }),
        Type::Map(map) => json!({
            "type": "array",
            "items": {
                "type": "array",
                "items": [schema(&map.key()), schema(&map.value())],
                "minItems": 2,
                "maxItems": 2
            }
        }),
        Type::Record(record) => {
            let mut properties = Map::new();
            let mut required = Vec::new();
            for field in record.fields() {
                properties.insert(field.name.to_owned(), schema(&field.ty));
                if !matches!(field.ty, Type::Option(_)) {
                    required.push(Value::from(field.name));
                }
            }
            json!({
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": false
            })
        }
        Type::Tuple(tuple) => {
            let items: Vec<Value> = tuple.types().map(|t| schema(&t)).collect();
            json!({
                "type": "array",
                "items": items,
                "minItems": items.len(),
                "maxItems": items.len()
            })
        }
        Type::Variant(variant) => json!({
            "description": cases_description(variant.cases().map(|c| (c.name, c.ty.is_some()))),
            "oneOf": variant
                .cases()
                .map(|case| tagged(case.name, case.ty.as_ref()))
                .collect::<Vec<_>>()
        }),
        Type::Enum(cases) => json!({ "type": "string", "enum": cases.names().collect::<Vec<_>>() }),
        Type::Flags(flags) => json!({
            "type": "array",
            "items": { "type": "string", "enum": flags.names().collect::<Vec<_>>() },
            "uniqueItems": true
        }),
        Type::Option(option) => {
            let inner = option.ty();
            let some = match inner {
                Type::Option(_) => json!({
                    "type": "object",
                    "properties": { "some": schema(&inner) },
                    "required": ["some"],
                    "additionalProperties": false
                }),
                _ => schema(&inner),
            };
            let description = format!("null, or {}", described(&some));
            json!({ "description": description, "anyOf": [{ "type": "null" }, some] })
        }
        Type::Result(result) => json!({
            "description": cases_description(
                [("ok", result.ok().is_some()), ("err", result.err().is_some())].into_iter()
            ),
            "oneOf": [
                tagged("ok", result.ok().as_ref()),
                tagged("err", result.err().as_ref())
            ]
        }),
        Type::Own(_) | Type::Borrow(_) | Type::Future(_) | Type::Stream(_) | Type::ErrorContext => {
            json!(false)
        }
    }
}

/// What `schema` wants, in words: its description, else its type.
fn described(schema: &Value) -> String {
    if let Some(description) = schema.get("description").and_then(Value::as_str) {
        return description.to_owned();
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("integer") => match (schema.get("minimum"), schema.get("maximum")) {
            (Some(min), Some(max)) => format!("an integer from {min} to {max}"),
            _ => "an integer".to_owned(),
        },
        Some("boolean") => "true or false".to_owned(),
        Some("string") => "a string".to_owned(),
        Some("array") => "an array".to_owned(),
        Some("object") => "an object".to_owned(),
        _ => "a value".to_owned(),
    }
}

/// `{"tag": "circle", "val": …} or {"tag": "empty"}`: the forms of a variant's cases.
fn cases_description<'a>(cases: impl Iterator<Item = (&'a str, bool)>) -> String {
    let forms: Vec<String> = cases
        .map(|(name, payload)| {
            if payload {
                format!("{{\"tag\": \"{name}\", \"val\": …}}")
            } else {
                format!("{{\"tag\": \"{name}\"}}")
            }
        })
        .collect();
    match forms.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => "a case".to_owned(),
    }
}

fn range(min: i64, max: i64) -> Value {
    json!({ "type": "integer", "minimum": min, "maximum": max })
}

/// `{ "tag": name, "val": payload }`, `val` only when the case has a payload.
fn tagged(name: &str, payload: Option<&Type>) -> Value {
    let mut properties = Map::new();
    properties.insert("tag".to_owned(), json!({ "const": name }));
    let mut required = vec![Value::from("tag")];
    if let Some(payload) = payload {
        properties.insert("val".to_owned(), schema(payload));
        required.push(Value::from("val"));
    }
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false
    })
}
