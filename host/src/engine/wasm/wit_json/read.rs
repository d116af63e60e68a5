//! JSON read as a value of a WIT type, or the first place it does not fit.

use base64::Engine as _;
use serde_json::Value;
use wasmtime::component::{Type, Val};

use super::Mismatch;

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
        Type::Float32 => Val::Float32(
            float(json)
                .filter(|f| !f.is_finite() || f.abs() <= f64::from(f32::MAX))
                .ok_or_else(|| wrong(FLOAT32))? as f32,
        ),
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
            let bytes = super::base64()
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

pub(super) const FLOAT: &str = "a number, or \"NaN\", \"Infinity\" or \"-Infinity\"";
pub(super) const FLOAT32: &str = "a number from -3.4028235e38 to 3.4028235e38 (a 32-bit float), or \"NaN\", \"Infinity\" or \"-Infinity\"";
const BASE64: &str = "a base64 string (standard alphabet, padded)";

fn small<T: TryFrom<i64>>(json: &Value) -> Option<T> {
    T::try_from(json.as_i64()?).ok()
}

/// A 64-bit integer from a JSON integer or its decimal string.
fn wide<T: TryFrom<i128> + std::str::FromStr>(json: &Value) -> Option<T> {
    match json {
        Value::Number(n) => {
            let wide = n
                .as_i64()
                .map(i128::from)
                .or_else(|| n.as_u64().map(i128::from))?;
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

fn payload_val(
    ty: Option<&Type>,
    payload: Option<&Value>,
    path: &str,
) -> Result<Option<Val>, Mismatch> {
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
