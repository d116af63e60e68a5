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

mod read;
mod schema;
mod write;

use wasmtime::component::Type;

pub use read::to_val;
pub use schema::schema;
pub use write::to_json;

/// The largest integer every JSON reader holds exactly: numbers past it are strings.
use crate::skill::validate::EXACT_INTEGER;

/// The base64 of `list<u8>`: the standard alphabet, padded, read and written by the
/// SIMD engine where the CPU has one (several times the scalar engine's speed, the same
/// text: the crate checks the two against each other).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub(crate) fn base64() -> &'static base64::engine::Simd {
    static ENGINE: std::sync::LazyLock<base64::engine::Simd> = std::sync::LazyLock::new(|| {
        base64::engine::Simd::standard(base64::engine::general_purpose::PAD)
    });
    &ENGINE
}

/// The base64 of `list<u8>`: the standard alphabet, padded.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub(crate) fn base64() -> &'static base64::engine::GeneralPurpose {
    &base64::engine::general_purpose::STANDARD
}

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

/// A value that does not fit its type: where (`a.b[0]`), and what was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// Where in the input, as `a.b[0].c`; `(root)` for the value itself.
    pub path: String,
    /// What the type wants, in words.
    pub expected: String,
}

#[cfg(test)]
mod tests;
