//! Bulk data at memory speed: a function whose one or two parameters are each a `string`
//! or a `list<u8>`, and whose result is one of those (or a `result` of one with a
//! `string` error), is called through a typed function instead of WIT values. A byte
//! list goes from the input's base64 into one buffer that is copied into the guest's
//! memory, and back into one buffer that becomes base64; a string is copied each way.
//! The value path builds a WIT value per byte, about a hundred times slower.
//!
//! What goes in and comes out is what the value path takes and gives (the same JSON,
//! the same errors: a parameter of the wrong kind is read by the value path to say
//! what is wrong).

use serde_json::Value;
use wasmtime::Store;
use wasmtime::component::{ComponentNamedList, Func, Lift, Lower, Type};

use crate::engine::wasm::state::HostState;

/// What a parameter or a result is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Bulk {
    /// `string`.
    Text,
    /// `list<u8>`.
    Bytes,
}

impl Bulk {
    fn of(ty: &Type) -> Option<Self> {
        match ty {
            Type::String => Some(Self::Text),
            Type::List(list) if list.ty() == Type::U8 => Some(Self::Bytes),
            _ => None,
        }
    }
}

/// What a function on the direct path returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Returns {
    /// The value itself.
    Value(Bulk),
    /// `result<T, string>`.
    Result(Bulk),
}

/// A function the direct path calls: its parameters' kinds, in order, and its result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Direct {
    pub(super) params: Vec<Bulk>,
    pub(super) returns: Returns,
}

impl Direct {
    /// The direct path for a function of `params` returning `result`, when it has one.
    pub(super) fn of(params: &[(String, Type)], result: Option<&Type>) -> Option<Self> {
        if params.is_empty() || params.len() > 2 {
            return None;
        }
        let params = params
            .iter()
            .map(|(_, ty)| Bulk::of(ty))
            .collect::<Option<Vec<_>>>()?;
        let returns = match result? {
            Type::Result(result) => match (result.ok(), result.err()) {
                (Some(ok), Some(Type::String)) => Returns::Result(Bulk::of(&ok)?),
                _ => return None,
            },
            ty => Returns::Value(Bulk::of(ty)?),
        };
        Some(Self { params, returns })
    }
}

/// An argument read for the direct path.
#[derive(Debug)]
pub(super) enum Arg {
    Text(String),
    Bytes(Vec<u8>),
}

impl Arg {
    /// `json` as a `kind` argument; `None` when it is not one (the value path then says
    /// what is wrong with it).
    pub(super) fn read(kind: Bulk, json: &Value) -> Option<Self> {
        use base64::Engine as _;
        let text = json.as_str()?;
        match kind {
            Bulk::Text => Some(Self::Text(text.to_owned())),
            Bulk::Bytes => crate::engine::wasm::wit_json::base64()
                .decode(text)
                .ok()
                .map(Self::Bytes),
        }
    }
}

/// A result longer, as JSON, than the call's output cap: refused before it is encoded
/// (the caller answers it as the cap's refusal).
#[derive(Debug)]
pub(super) struct Oversized(pub(super) usize);

impl std::fmt::Display for Oversized {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the result is {} bytes of JSON, over the output cap",
            self.0
        )
    }
}

impl std::error::Error for Oversized {}

/// Calls `func` with `args` through a typed function; returns whether it succeeded and
/// its result (or error) as JSON. A successful result longer than `cap` bytes of JSON
/// is [`Oversized`], not encoded.
pub(super) async fn call(
    func: Func,
    store: &mut Store<HostState>,
    args: &[Arg],
    returns: Returns,
    cap: u64,
) -> wasmtime::Result<(bool, Value)> {
    use Arg::{Bytes, Text};
    let call = Call {
        func,
        returns,
        cap: usize::try_from(cap).unwrap_or(usize::MAX),
    };
    match args {
        [Text(a)] => call.returning(store, (a.as_str(),)).await,
        [Bytes(a)] => call.returning(store, (a.as_slice(),)).await,
        [Text(a), Text(b)] => call.returning(store, (a.as_str(), b.as_str())).await,
        [Text(a), Bytes(b)] => call.returning(store, (a.as_str(), b.as_slice())).await,
        [Bytes(a), Text(b)] => call.returning(store, (a.as_slice(), b.as_str())).await,
        [Bytes(a), Bytes(b)] => call.returning(store, (a.as_slice(), b.as_slice())).await,
        _ => Err(wasmtime::Error::msg(
            "the direct path takes one or two parameters",
        )),
    }
}

/// One call on the direct path.
struct Call {
    func: Func,
    returns: Returns,
    /// The output cap, in bytes of JSON.
    cap: usize,
}

impl Call {
    async fn returning<P>(
        &self,
        store: &mut Store<HostState>,
        params: P,
    ) -> wasmtime::Result<(bool, Value)>
    where
        P: ComponentNamedList + Lower + Send + Sync,
    {
        let (func, cap) = (self.func, self.cap);
        // Lifted as owned values: the function's post-return runs inside the call, so
        // the guest's result memory is free again when it returns (a `WasmStr` or
        // `WasmList` read then may see the allocator's writes). A byte list is one copy
        // either way.
        Ok(match self.returns {
            Returns::Value(Bulk::Text) => {
                let (text,) = typed::<P, (String,)>(func, store, params).await?;
                (true, text_json(text, cap)?)
            }
            Returns::Value(Bulk::Bytes) => {
                let (bytes,) = typed::<P, (Vec<u8>,)>(func, store, params).await?;
                (true, bytes_json(&bytes, cap)?)
            }
            Returns::Result(Bulk::Text) => {
                match typed::<P, (Result<String, String>,)>(func, store, params).await? {
                    (Ok(text),) => (true, text_json(text, cap)?),
                    (Err(error),) => (false, Value::String(error)),
                }
            }
            Returns::Result(Bulk::Bytes) => {
                match typed::<P, (Result<Vec<u8>, String>,)>(func, store, params).await? {
                    (Ok(bytes),) => (true, bytes_json(&bytes, cap)?),
                    (Err(error),) => (false, Value::String(error)),
                }
            }
        })
    }
}

/// The text as JSON; [`Oversized`] when even unescaped it is over `cap`.
fn text_json(text: String, cap: usize) -> wasmtime::Result<Value> {
    let least = text.len().saturating_add(2);
    if least > cap {
        return Err(Oversized(least).into());
    }
    Ok(Value::String(text))
}

/// The bytes as base64; [`Oversized`] when that is over `cap`, before it is written.
fn bytes_json(bytes: &[u8], cap: usize) -> wasmtime::Result<Value> {
    use base64::Engine as _;
    let len = bytes.len().div_ceil(3).saturating_mul(4).saturating_add(2);
    if len > cap {
        return Err(Oversized(len).into());
    }
    Ok(Value::String(
        crate::engine::wasm::wit_json::base64().encode(bytes),
    ))
}

async fn typed<P, R>(func: Func, store: &mut Store<HostState>, params: P) -> wasmtime::Result<R>
where
    P: ComponentNamedList + Lower + Send + Sync,
    R: ComponentNamedList + Lift + Send + Sync + 'static,
{
    func.typed::<P, R>(&*store)?
        .call_async(&mut *store, params)
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_over_the_cap_is_refused_at_its_exact_length_before_it_is_encoded() {
        for n in 0..10 {
            let bytes = vec![0xffu8; n];
            let json = bytes_json(&bytes, usize::MAX).unwrap().to_string();
            assert_eq!(
                bytes_json(&bytes, json.len()).unwrap().to_string(),
                json,
                "{n}"
            );
            let refused = bytes_json(&bytes, json.len() - 1).unwrap_err();
            let Some(Oversized(len)) = refused.downcast_ref() else {
                panic!("{refused}");
            };
            assert_eq!(*len, json.len(), "{n}");
        }
        assert_eq!(
            text_json("abc".into(), 5).unwrap(),
            Value::String("abc".into())
        );
        assert!(
            text_json("abc".into(), 4)
                .unwrap_err()
                .downcast_ref::<Oversized>()
                .is_some()
        );
    }

    #[test]
    fn only_strings_and_byte_lists_take_the_direct_path() {
        let bytes = Bulk::of(&Type::String);
        assert_eq!(bytes, Some(Bulk::Text));
        assert_eq!(Bulk::of(&Type::U8), None);
        let none: &[(String, Type)] = &[];
        assert_eq!(Direct::of(none, Some(&Type::String)), None);
        let one = [("v".to_owned(), Type::String)];
        assert_eq!(
            Direct::of(&one, Some(&Type::String)),
            Some(Direct {
                params: vec![Bulk::Text],
                returns: Returns::Value(Bulk::Text)
            })
        );
        assert_eq!(Direct::of(&one, Some(&Type::U32)), None);
        assert_eq!(Direct::of(&one, None), None);
        let three = [
            ("a".to_owned(), Type::String),
            ("b".to_owned(), Type::String),
            ("c".to_owned(), Type::String),
        ];
        assert_eq!(Direct::of(&three, Some(&Type::String)), None);
    }
}
