//! WIT values as JSON, both ways, and the JSON Schema of a WIT type: what lets a plain
//! component's exported functions be called as skills.
//!
//! | WIT | JSON |
//! | --- | --- |
//! | `bool` | `true` / `false` |
//! | `u8` … `u32`, `s8` … `s32` | an integer in the type's range |
//! | `u64`, `s64` | an integer; beyond ±(2^53 − 1), where JavaScript loses digits, a decimal string (`"18446744073709551615"`); either form is read |
//! | `f32`, `f64` | a number; `"NaN"`, `"Infinity"`, `"-Infinity"` for what JSON has no number for |
//! | `char` | a string of one Unicode scalar value |
//! | `string` | a string |
//! | `list<u8>` | a base64 string (standard alphabet, padded) |
//! | `list<T>`, `list<T, N>` | an array (of exactly N items) |
//! | `map<string, V>` | an object; `map<K, V>` for other keys: an array of `[key, value]` pairs |
//! | `record` | an object with every field; a field of type `option<T>` may be left out |
//! | `tuple<…>` | an array, one item per element |
//! | `variant` | `{ "tag": "case", "val": payload }` (`val` left out for a case without one), as jco writes it |
//! | `enum` | the case's name |
//! | `flags` | an array of the names set |
//! | `option<T>` | `null` or T; `option<option<T>>`'s inner `some` is `{ "some": T }` |
//! | `result<T, E>` | `{ "tag": "ok", "val": T }` or `{ "tag": "err", "val": E }` |
//!
//! Resources, futures, streams and error contexts have no JSON form: a function that
//! takes or returns one is not callable as a skill ([`unsupported`] says why).

use base64::Engine as _;
use serde_json::{Map, Value, json};
use wasmtime::component::{Type, Val};

/// The largest integer every JSON reader holds exactly (2^53 − 1).
const EXACT_INTEGER: u64 = (1 << 53) - 1;

/// Why `ty` has no JSON form, if it has none (it or a type inside it).
pub fn unsupported(ty: &Type) -> Option<String> {
    let inner = |ty: &Type| unsupported(ty);
    match ty {
        Type::Own(_) | Type::Borrow(_) => Some("a resource handle".to_owned()),
        Type::Future(_) => Some("a future".to_owned()),
        Type::Stream(_) => Some("a stream".to_owned()),
        Type::ErrorContext => Some("an error context".to_owned()),
        Type::List(list) => inner(&list.ty()),
        Type::FixedLengthList(list) => inner(&list.ty()),
        Type::Map(map) => inner(&map.key()).or_else(|| inner(&map.value())),
        Type::Record(record) => record.fields().find_map(|f| inner(&f.ty)),
        Type::Tuple(tuple) => tuple.types().find_map(|t| inner(&t)),
        Type::Variant(variant) => variant.cases().find_map(|c| c.ty.as_ref().and_then(inner)),
        Type::Option(option) => inner(&option.ty()),
        Type::Result(result) => result
            .ok()
            .as_ref()
            .and_then(inner)
            .or_else(|| result.err().as_ref().and_then(inner)),
        _ => None,
    }
}

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
            "anyOf": [
                { "type": "integer", "minimum": 0, "maximum": EXACT_INTEGER },
                { "type": "string", "pattern": "^[0-9]{1,20}$" }
            ]
        }),
        Type::S64 => json!({
            "anyOf": [
                { "type": "integer", "minimum": -(EXACT_INTEGER as i64), "maximum": EXACT_INTEGER },
                { "type": "string", "pattern": "^-?[0-9]{1,19}$" }
            ]
        }),
        Type::Float32 | Type::Float64 => json!({
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
            json!({ "anyOf": [{ "type": "null" }, some] })
        }
        Type::Result(result) => json!({
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

/// A value that does not fit its type: where (`a.b[0]`), and what was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// Where in the input, as `a.b[0].c`; `(root)` for the value itself.
    pub path: String,
    /// What the type wants, in words.
    pub expected: String,
}

/// Reads `json` as a value of `ty`; `path` names where it is, for the error.
pub fn to_val(ty: &Type, json: &Value, path: &str) -> Result<Val, Mismatch> {
    let wrong = |expected: &str| Mismatch {
        path: path.to_owned(),
        expected: expected.to_owned(),
    };
    let at = |key: &str| {
        if path == "(root)" {
            key.to_owned()
        } else {
            format!("{path}.{key}")
        }
    };
    let index = |i: usize| format!("{}[{i}]", if path == "(root)" { "" } else { path });
    Ok(match ty {
        Type::Bool => Val::Bool(json.as_bool().ok_or_else(|| wrong("true or false"))?),
        Type::U8 => Val::U8(small(json).ok_or_else(|| wrong("an integer from 0 to 255"))?),
        Type::U16 => Val::U16(small(json).ok_or_else(|| wrong("an integer from 0 to 65535"))?),
        Type::U32 => Val::U32(small(json).ok_or_else(|| wrong("an integer from 0 to 4294967295"))?),
        Type::S8 => Val::S8(small(json).ok_or_else(|| wrong("an integer from -128 to 127"))?),
        Type::S16 => Val::S16(small(json).ok_or_else(|| wrong("an integer from -32768 to 32767"))?),
        Type::S32 => Val::S32(
            small(json).ok_or_else(|| wrong("an integer from -2147483648 to 2147483647"))?,
        ),
        Type::U64 => Val::U64(
            wide(json).ok_or_else(|| wrong("an integer from 0 to 18446744073709551615, or its decimal string"))?,
        ),
        Type::S64 => Val::S64(wide(json).ok_or_else(|| {
            wrong("an integer from -9223372036854775808 to 9223372036854775807, or its decimal string")
        })?),
        Type::Float32 => Val::Float32(float(json).ok_or_else(|| wrong(FLOAT))? as f32),
        Type::Float64 => Val::Float64(float(json).ok_or_else(|| wrong(FLOAT))?),
        Type::Char => {
            let text = json.as_str().unwrap_or_default();
            let mut chars = text.chars();
            match (chars.next(), chars.next()) {
                (Some(c), None) => Val::Char(c),
                _ => return Err(wrong("a string of one character")),
            }
        }
        Type::String => Val::String(json.as_str().ok_or_else(|| wrong("a string"))?.to_owned()),
        Type::List(list) if list.ty() == Type::U8 => {
            let text = json.as_str().ok_or_else(|| wrong(BASE64))?;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(text)
                .map_err(|_| wrong(BASE64))?;
            Val::List(bytes.into_iter().map(Val::U8).collect())
        }
        Type::List(list) => {
            let items = json.as_array().ok_or_else(|| wrong("an array"))?;
            let ty = list.ty();
            Val::List(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| to_val(&ty, item, &index(i)))
                    .collect::<Result<_, _>>()?,
            )
        }
        Type::FixedLengthList(list) => {
            let expected = format!("an array of {} items", list.len());
            let items = json
                .as_array()
                .filter(|items| items.len() == list.len() as usize)
                .ok_or_else(|| wrong(&expected))?;
            let ty = list.ty();
            Val::FixedLengthList(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| to_val(&ty, item, &index(i)))
                    .collect::<Result<_, _>>()?,
            )
        }
        Type::Map(map) if map.key() == Type::String => {
            let entries = json.as_object().ok_or_else(|| wrong("an object"))?;
            let ty = map.value();
            Val::Map(
                entries
                    .iter()
                    .map(|(key, value)| Ok((Val::String(key.clone()), to_val(&ty, value, &at(key))?)))
                    .collect::<Result<_, _>>()?,
            )
        }
        Type::Map(map) => {
            let pairs = json.as_array().ok_or_else(|| wrong("an array of [key, value] pairs"))?;
            let (key_ty, value_ty) = (map.key(), map.value());
            Val::Map(
                pairs
                    .iter()
                    .enumerate()
                    .map(|(i, pair)| {
                        let here = index(i);
                        match pair.as_array().map(Vec::as_slice) {
                            Some([key, value]) => Ok((
                                to_val(&key_ty, key, &format!("{here}[0]"))?,
                                to_val(&value_ty, value, &format!("{here}[1]"))?,
                            )),
                            _ => Err(Mismatch {
                                path: here,
                                expected: "a [key, value] pair".to_owned(),
                            }),
                        }
                    })
                    .collect::<Result<_, _>>()?,
            )
        }
        Type::Record(record) => {
            let fields = json.as_object().ok_or_else(|| wrong("an object"))?;
            let mut values = Vec::new();
            for field in record.fields() {
                let here = at(field.name);
                let value = match (fields.get(field.name), &field.ty) {
                    (Some(value), ty) => to_val(ty, value, &here)?,
                    (None, Type::Option(_)) => Val::Option(None),
                    (None, _) => {
                        return Err(Mismatch {
                            path: here,
                            expected: "a value (the field is required)".to_owned(),
                        });
                    }
                };
                values.push((field.name.to_owned(), value));
            }
            if let Some(extra) = fields
                .keys()
                .find(|key| !record.fields().any(|f| f.name == key.as_str()))
            {
                return Err(Mismatch {
                    path: at(extra),
                    expected: format!(
                        "no such field; the record has {}",
                        record.fields().map(|f| f.name).collect::<Vec<_>>().join(", ")
                    ),
                });
            }
            Val::Record(values)
        }
        Type::Tuple(tuple) => {
            let expected = format!("an array of {} items", tuple.types().len());
            let items = json
                .as_array()
                .filter(|items| items.len() == tuple.types().len())
                .ok_or_else(|| wrong(&expected))?;
            Val::Tuple(
                tuple
                    .types()
                    .zip(items)
                    .enumerate()
                    .map(|(i, (ty, item))| to_val(&ty, item, &index(i)))
                    .collect::<Result<_, _>>()?,
            )
        }
        Type::Variant(variant) => {
            let names: Vec<&str> = variant.cases().map(|c| c.name).collect();
            let (name, payload) = tag(json, &names).ok_or_else(|| {
                wrong(&format!("{{\"tag\": one of {}, \"val\": …}}", names.join(", ")))
            })?;
            let case = variant.cases().find(|c| c.name == name).expect("tag checked the name");
            Val::Variant(
                name.to_owned(),
                payload_val(case.ty.as_ref(), payload, &at("val"))?.map(Box::new),
            )
        }
        Type::Enum(cases) => {
            let name = json
                .as_str()
                .filter(|name| cases.names().any(|n| n == *name))
                .ok_or_else(|| wrong(&format!("one of {}", cases.names().collect::<Vec<_>>().join(", "))))?;
            Val::Enum(name.to_owned())
        }
        Type::Flags(flags) => {
            let expected = format!(
                "an array of flags from {}",
                flags.names().collect::<Vec<_>>().join(", ")
            );
            let items = json.as_array().ok_or_else(|| wrong(&expected))?;
            let mut set = Vec::new();
            for item in items {
                let name = item
                    .as_str()
                    .filter(|name| flags.names().any(|n| n == *name))
                    .ok_or_else(|| wrong(&expected))?;
                if !set.iter().any(|s| s == name) {
                    set.push(name.to_owned());
                }
            }
            Val::Flags(set)
        }
        Type::Option(option) => match (json, option.ty()) {
            (Value::Null, _) => Val::Option(None),
            (Value::Object(fields), inner @ Type::Option(_)) => {
                let some = fields
                    .get("some")
                    .filter(|_| fields.len() == 1)
                    .ok_or_else(|| wrong("null, or {\"some\": …} for a value of the inner option"))?;
                Val::Option(Some(Box::new(to_val(&inner, some, &at("some"))?)))
            }
            (_, Type::Option(_)) => {
                return Err(wrong("null, or {\"some\": …} for a value of the inner option"));
            }
            (value, inner) => Val::Option(Some(Box::new(to_val(&inner, value, path)?))),
        },
        Type::Result(result) => {
            let (name, payload) = tag(json, &["ok", "err"])
                .ok_or_else(|| wrong("{\"tag\": \"ok\" or \"err\", \"val\": …}"))?;
            let here = at("val");
            if name == "ok" {
                Val::Result(Ok(payload_val(result.ok().as_ref(), payload, &here)?.map(Box::new)))
            } else {
                Val::Result(Err(payload_val(result.err().as_ref(), payload, &here)?.map(Box::new)))
            }
        }
        Type::Own(_) | Type::Borrow(_) | Type::Future(_) | Type::Stream(_) | Type::ErrorContext => {
            return Err(wrong("nothing: this type has no JSON form"));
        }
    })
}

const FLOAT: &str = "a number, or \"NaN\", \"Infinity\" or \"-Infinity\"";
const BASE64: &str = "a base64 string (standard alphabet, padded)";

fn small<T: TryFrom<i64>>(json: &Value) -> Option<T> {
    T::try_from(json.as_i64()?).ok()
}

/// A 64-bit integer from a JSON integer or its decimal string.
fn wide<T: TryFrom<i128> + std::str::FromStr>(json: &Value) -> Option<T> {
    match json {
        Value::Number(n) => {
            let wide = n.as_i64().map(i128::from).or_else(|| n.as_u64().map(i128::from))?;
            T::try_from(wide).ok()
        }
        Value::String(text) if !text.starts_with('+') => text.parse().ok(),
        _ => None,
    }
}

fn float(json: &Value) -> Option<f64> {
    match json {
        Value::Number(n) => n.as_f64(),
        Value::String(text) => match text.as_str() {
            "NaN" => Some(f64::NAN),
            "Infinity" => Some(f64::INFINITY),
            "-Infinity" => Some(f64::NEG_INFINITY),
            _ => None,
        },
        _ => None,
    }
}

/// The tag (one of `names`) and payload of `{ "tag": …, "val": … }`.
fn tag<'a>(json: &'a Value, names: &[&str]) -> Option<(&'a str, Option<&'a Value>)> {
    let fields = json.as_object()?;
    let name = fields.get("tag")?.as_str()?;
    let allowed = fields.keys().all(|k| k == "tag" || k == "val");
    (allowed && names.contains(&name)).then(|| (name, fields.get("val")))
}

fn payload_val(ty: Option<&Type>, payload: Option<&Value>, path: &str) -> Result<Option<Val>, Mismatch> {
    match (ty, payload) {
        (None, None) => Ok(None),
        (Some(ty), Some(value)) => Ok(Some(to_val(ty, value, path)?)),
        (None, Some(_)) => Err(Mismatch {
            path: path.to_owned(),
            expected: "nothing: this case has no payload".to_owned(),
        }),
        (Some(_), None) => Err(Mismatch {
            path: path.to_owned(),
            expected: "a payload for this case".to_owned(),
        }),
    }
}

/// `val`, a value of `ty`, as JSON: the inverse of [`to_val`]. A resource, future or
/// stream (which [`unsupported`] keeps out of skills) becomes `null`.
pub fn to_json(ty: &Type, val: &Val) -> Value {
    match (ty, val) {
        (_, Val::Bool(b)) => Value::Bool(*b),
        (_, Val::U8(n)) => (*n).into(),
        (_, Val::U16(n)) => (*n).into(),
        (_, Val::U32(n)) => (*n).into(),
        (_, Val::S8(n)) => (*n).into(),
        (_, Val::S16(n)) => (*n).into(),
        (_, Val::S32(n)) => (*n).into(),
        (_, Val::U64(n)) if *n <= EXACT_INTEGER => (*n).into(),
        (_, Val::U64(n)) => n.to_string().into(),
        (_, Val::S64(n)) if n.unsigned_abs() <= EXACT_INTEGER => (*n).into(),
        (_, Val::S64(n)) => n.to_string().into(),
        (_, Val::Float32(f)) => float_json(f64::from(*f)),
        (_, Val::Float64(f)) => float_json(*f),
        (_, Val::Char(c)) => c.to_string().into(),
        (_, Val::String(s)) => s.clone().into(),
        (Type::List(list), Val::List(items)) if list.ty() == Type::U8 => bytes_json(items),
        (Type::List(list), Val::List(items)) => {
            let ty = list.ty();
            items.iter().map(|item| to_json(&ty, item)).collect()
        }
        (Type::FixedLengthList(list), Val::FixedLengthList(items)) => {
            let ty = list.ty();
            items.iter().map(|item| to_json(&ty, item)).collect()
        }
        (Type::Tuple(tuple), Val::Tuple(items)) => tuple
            .types()
            .zip(items)
            .map(|(ty, item)| to_json(&ty, item))
            .collect(),
        (Type::Map(map), Val::Map(entries)) if map.key() == Type::String => {
            let ty = map.value();
            entries
                .iter()
                .filter_map(|(k, v)| match k {
                    Val::String(key) => Some((key.clone(), to_json(&ty, v))),
                    _ => None,
                })
                .collect::<Map<_, _>>()
                .into()
        }
        (Type::Map(map), Val::Map(entries)) => {
            let (key_ty, value_ty) = (map.key(), map.value());
            entries
                .iter()
                .map(|(k, v)| json!([to_json(&key_ty, k), to_json(&value_ty, v)]))
                .collect()
        }
        (Type::Record(record), Val::Record(fields)) => record
            .fields()
            .zip(fields)
            .map(|(field, (name, value))| (name.clone(), to_json(&field.ty, value)))
            .collect::<Map<_, _>>()
            .into(),
        (Type::Variant(variant), Val::Variant(name, payload)) => {
            let case = variant.cases().find(|c| c.name == name.as_str());
            let ty = case.and_then(|c| c.ty);
            tagged_json(name, ty.as_ref().zip(payload.as_deref()))
        }
        (_, Val::Enum(name)) => name.clone().into(),
        (_, Val::Flags(names)) => names.iter().cloned().collect(),
        (_, Val::Option(None)) => Value::Null,
        (Type::Option(option), Val::Option(Some(inner))) => {
            let ty = option.ty();
            match ty {
                Type::Option(_) => json!({ "some": to_json(&ty, inner) }),
                _ => to_json(&ty, inner),
            }
        }
        (Type::Result(result), Val::Result(Ok(payload))) => {
            tagged_json("ok", result.ok().as_ref().zip(payload.as_deref()))
        }
        (Type::Result(result), Val::Result(Err(payload))) => {
            tagged_json("err", result.err().as_ref().zip(payload.as_deref()))
        }
        // A value that does not match its type: what the guest gave cannot have come
        // from it (wasmtime lifts values by their type), so this is never reached.
        _ => Value::Null,
    }
}

fn float_json(f: f64) -> Value {
    if f.is_nan() {
        "NaN".into()
    } else if f.is_infinite() {
        if f > 0.0 { "Infinity" } else { "-Infinity" }.into()
    } else {
        json!(f)
    }
}

fn bytes_json(items: &[Val]) -> Value {
    let bytes: Vec<u8> = items
        .iter()
        .filter_map(|v| match v {
            Val::U8(b) => Some(*b),
            _ => None,
        })
        .collect();
    base64::engine::general_purpose::STANDARD.encode(bytes).into()
}

fn tagged_json(name: &str, payload: Option<(&Type, &Val)>) -> Value {
    match payload {
        Some((ty, payload)) => json!({ "tag": name, "val": to_json(ty, payload) }),
        None => json!({ "tag": name }),
    }
}

#[cfg(test)]
mod tests {
    use wasmtime::component::types::ComponentItem;
    use wasmtime::{Config, Engine};

    use super::*;

    /// One function whose parameters are every kind of WIT type.
    const EVERY_KIND: &str = r#"
        package test:kinds;

        interface all {
            record point { x: s32, y: s32, label: option<string> }
            variant shape { circle(f64), square(u32), empty }
            enum color { red, green, blue }
            flags perms { read, write, exec }
            every: func(
                flag: bool, tiny: u8, short: u16, word: u32, big: u64,
                stiny: s8, sshort: s16, sword: s32, sbig: s64,
                single: f32, double: f64, letter: char, text: string,
                bytes: list<u8>, words: list<string>, at: point, pair: tuple<u8, string>,
                sh: shape, col: color, perm: perms, maybe: option<u32>,
                maybe-maybe: option<option<u32>>, outcome: result<string, u32>,
            ) -> result<point, string>;
        }

        world kinds { export all; }
    "#;

    /// The parameters and result of `every`, read from a component built from the WIT
    /// above (its core module a stub that is never run).
    fn every_kind() -> (Vec<(String, Type)>, Type) {
        let mut resolve = wit_parser::Resolve::default();
        let package = resolve.push_str("kinds.wit", EVERY_KIND).unwrap();
        let world = resolve.select_world(&[package], Some("kinds")).unwrap();
        let mut module =
            wit_component::dummy_module(&resolve, world, wit_parser::ManglingAndAbi::Standard32);
        wit_component::embed_component_metadata(
            &mut module,
            &resolve,
            world,
            wit_component::StringEncoding::UTF8,
        )
        .unwrap();
        let bytes = wit_component::ComponentEncoder::default()
            .module(&module)
            .unwrap()
            .validate(true)
            .encode()
            .unwrap();
        let mut config = Config::new();
        config.wasm_component_model(true);
        let engine = Engine::new(&config).unwrap();
        let component = wasmtime::component::Component::new(&engine, &bytes).unwrap();
        let ty = component.component_type();
        let ComponentItem::ComponentInstance(all) =
            ty.get_export(&engine, "test:kinds/all").unwrap().ty
        else {
            panic!("the interface is exported");
        };
        let ComponentItem::ComponentFunc(every) = all.get_export(&engine, "every").unwrap().ty
        else {
            panic!("the function is exported");
        };
        let params = every
            .params()
            .map(|(name, ty)| (name.to_owned(), ty))
            .collect();
        let result = every.results().next().unwrap();
        (params, result)
    }

    fn param(params: &[(String, Type)], name: &str) -> Type {
        params.iter().find(|(n, _)| n == name).unwrap().1.clone()
    }

    #[test]
    fn every_kind_round_trips_and_fits_its_schema() {
        let (params, result) = every_kind();
        let cases = [
            ("flag", json!(true)),
            ("tiny", json!(255)),
            ("short", json!(65535)),
            ("word", json!(4_294_967_295_u32)),
            ("big", json!(9_007_199_254_740_991_u64)),
            ("big", json!("18446744073709551615")),
            ("stiny", json!(-128)),
            ("sshort", json!(-32768)),
            ("sword", json!(-2_147_483_648_i32)),
            ("sbig", json!("-9223372036854775808")),
            ("single", json!(1.5)),
            ("single", json!("NaN")),
            ("double", json!("-Infinity")),
            ("double", json!(0.1)),
            ("letter", json!("é")),
            ("text", json!("hello")),
            ("bytes", json!("AAEC/w==")),
            ("bytes", json!("")),
            ("words", json!(["a", "b"])),
            ("at", json!({ "x": 1, "y": -2, "label": "origin" })),
            ("at", json!({ "x": 1, "y": -2, "label": null })),
            ("pair", json!([7, "seven"])),
            ("sh", json!({ "tag": "circle", "val": 2.5 })),
            ("sh", json!({ "tag": "empty" })),
            ("col", json!("green")),
            ("perm", json!(["read", "exec"])),
            ("maybe", json!(null)),
            ("maybe", json!(3)),
            ("maybe-maybe", json!({ "some": null })),
            ("maybe-maybe", json!({ "some": 4 })),
            ("outcome", json!({ "tag": "ok", "val": "fine" })),
            ("outcome", json!({ "tag": "err", "val": 500 })),
        ];
        for (name, value) in cases {
            let ty = param(&params, name);
            let val = to_val(&ty, &value, "(root)").unwrap_or_else(|e| panic!("{name}: {e:?}"));
            assert_eq!(to_json(&ty, &val), value, "{name} round trip");
            // Draft 7, as the kernel reads a schema without `$schema`.
            let validator = jsonschema::options()
                .with_draft(jsonschema::Draft::Draft7)
                .build(&schema(&ty))
                .unwrap();
            assert!(validator.is_valid(&value), "{name}: {value} fits {}", schema(&ty));
            assert_eq!(unsupported(&ty), None, "{name}");
        }
        let ok = json!({ "tag": "ok", "val": { "x": 0, "y": 0, "label": null } });
        assert_eq!(to_json(&result, &to_val(&result, &ok, "(root)").unwrap()), ok);
    }

    #[test]
    fn a_record_field_of_option_type_may_be_left_out() {
        let (params, _) = every_kind();
        let at = param(&params, "at");
        let val = to_val(&at, &json!({ "x": 1, "y": 2 }), "(root)").unwrap();
        assert_eq!(to_json(&at, &val), json!({ "x": 1, "y": 2, "label": null }));
    }

    #[test]
    fn a_value_that_does_not_fit_says_where_and_what_was_expected() {
        let (params, _) = every_kind();
        for (name, value, path, expected) in [
            ("tiny", json!(256), "(root)", "an integer from 0 to 255"),
            ("big", json!(-1), "(root)", "an integer from 0 to 18446744073709551615, or its decimal string"),
            ("big", json!("18446744073709551616"), "(root)", "an integer from 0 to 18446744073709551615, or its decimal string"),
            ("letter", json!("ab"), "(root)", "a string of one character"),
            ("bytes", json!("not base64!"), "(root)", "a base64 string (standard alphabet, padded)"),
            ("at", json!({ "x": 1 }), "y", "a value (the field is required)"),
            ("at", json!({ "x": 1, "y": 2, "z": 3 }), "z", "no such field; the record has x, y, label"),
            ("at", json!({ "x": "1", "y": 2 }), "x", "an integer from -2147483648 to 2147483647"),
            ("words", json!(["a", 2]), "[1]", "a string"),
            ("sh", json!({ "tag": "triangle" }), "(root)", "{\"tag\": one of circle, square, empty, \"val\": …}"),
            ("sh", json!({ "tag": "empty", "val": 1 }), "val", "nothing: this case has no payload"),
            ("col", json!("purple"), "(root)", "one of red, green, blue"),
            ("perm", json!(["read", "fly"]), "(root)", "an array of flags from read, write, exec"),
            ("pair", json!([1]), "(root)", "an array of 2 items"),
        ] {
            let ty = param(&params, name);
            let error = to_val(&ty, &value, "(root)").unwrap_err();
            assert_eq!(
                (error.path.as_str(), error.expected.as_str()),
                (path, expected),
                "{name}: {value}"
            );
        }
    }

    #[test]
    fn wide_integers_beyond_what_javascript_holds_are_strings() {
        assert_eq!(to_json(&Type::U64, &Val::U64(1 << 53)), json!("9007199254740992"));
        assert_eq!(to_json(&Type::U64, &Val::U64((1 << 53) - 1)), json!(9_007_199_254_740_991_u64));
        assert_eq!(to_json(&Type::S64, &Val::S64(i64::MIN)), json!("-9223372036854775808"));
        assert_eq!(to_val(&Type::S64, &json!("+5"), "(root)").map(|_| ()), Err(Mismatch {
            path: "(root)".into(),
            expected: "an integer from -9223372036854775808 to 9223372036854775807, or its decimal string".into(),
        }));
    }
}
