//! A WIT value written as JSON.

use base64::Engine as _;
use serde_json::{Map, Value, json};
use wasmtime::component::{Type, Val};

use super::EXACT_INTEGER;

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
    super::base64().encode(bytes).into()
}

fn tagged_json(name: &str, payload: Option<(&Type, &Val)>) -> Value {
    match payload {
        Some((ty, payload)) => json!({ "tag": name, "val": to_json(ty, payload) }),
        None => json!({ "tag": name }),
    }
}
