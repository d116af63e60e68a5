//! One call of a plain component's function: JSON in, WIT values across, JSON out, in a
//! fresh instance under the component's limits.

use serde_json::{Map, Value};
use wasmtime::component::{Type, Val};

use super::direct::{self, Arg, Direct, Returns};
use super::exports::Export;
use super::{Function, PlainComponent, PlainExecutor};
use crate::engine::wasm::guest::run_guest;
use crate::engine::wasm::limits::{MAX_ERROR_BYTES, cut};
use crate::engine::wasm::wit_json::{Mismatch, to_json, to_val};
use crate::error::{Error, FailureKind, Result};
use crate::skill::exchange::BoxFuture;
use crate::skill::kernel::SkillContext;
use crate::skill::kernel::executor::{Executor, ExecutorKind, SkillOutput};

impl PlainComponent {
    /// Calls the function of skill `name` with `input` (an object of its parameters)
    /// in a fresh instance, and returns its result as JSON.
    pub async fn call(&self, name: &str, input: &Value, ctx: &SkillContext) -> Result<Value> {
        let function = self.position(name).ok_or_else(|| Error::SkillNotFound {
            name: name.to_owned(),
        })?;
        self.call_at(function, input, ctx).await
    }

    async fn call_at(&self, function: usize, input: &Value, ctx: &SkillContext) -> Result<Value> {
        let inner = &self.inner;
        let Function { meta, streak, .. } = &inner.functions[function];
        let skill = meta.name.as_str();
        let ready = self.ready().await?;
        let export = &ready.exports[function];
        // Read before anything is instantiated: a wrong input costs no instance. Bulk
        // data takes the direct path; anything else, or an input the direct path cannot
        // read (the value path says what is wrong with it), WIT values.
        let direct = export.direct.as_ref();
        let args = match direct.and_then(|d| Some((direct_args(export, d, input)?, d.returns))) {
            Some((args, returns)) => Args::Direct(args, returns),
            None => Args::Values(params(export, input).map_err(|reason| Error::InvalidInput {
                skill: skill.to_owned(),
                reason,
            })?),
        };
        let index = export.index;
        let result_type = export.result.clone();
        let cap = inner.limits.output_bytes;
        let (result, guest) = run_guest(
            &inner.engine,
            &ready.pre,
            skill,
            &inner.limits,
            &inner.grant,
            &inner.calls,
            ctx,
            streak,
            Some(&inner.parked),
            move |instance, store| {
                Box::pin(async move {
                    let func = instance.get_func(&mut *store, index).ok_or_else(|| {
                        wasmtime::Error::msg("the instance does not export the function")
                    })?;
                    match args {
                        Args::Direct(args, returns) => {
                            direct::call(func, store, &args, returns, cap).await
                        }
                        Args::Values(params) => {
                            let mut results: Vec<Val> =
                                result_type.iter().map(|_| Val::Bool(false)).collect();
                            func.call_async(&mut *store, &params, &mut results).await?;
                            Ok(outcome(result_type.as_ref(), results.first()))
                        }
                    }
                })
            },
        )
        .await?;
        let (ok, value) = match result {
            Ok(answer) => answer,
            Err(e) => {
                // Refused before it was encoded: the output cap's refusal.
                if let Some(direct::Oversized(len)) = e.downcast_ref() {
                    guest.check_output(*len)?;
                }
                return Err(guest.classify(e));
            }
        };
        if !ok {
            if let Some(exceeded) = guest.stdio_exceeded() {
                return Err(exceeded);
            }
            let mut message = cut(value.to_string(), MAX_ERROR_BYTES);
            // A component's own error says only that a request was denied; the host
            // knows which and why, and the failure is that refusal (PERMISSION_DENIED,
            // as for an Evo skill or a service skill refused the same request).
            let kind = match guest.refusal() {
                Some(reason) => {
                    message.push_str(&format!(" (the host refused a request: {reason})"));
                    FailureKind::Denied
                }
                None => FailureKind::Failed,
            };
            return Err(Error::Skill {
                skill: skill.to_owned(),
                kind,
                message: guest.scrub.text("error", message),
            });
        }
        // Counted, not written: a bulk result is not copied into text to be measured.
        guest.check_output(json_len(&value))?;
        if guest.scrub.secrets().is_empty() {
            return Ok(value);
        }
        let scrubbed = guest.scrub.text("output", value.to_string());
        serde_json::from_str(&scrubbed).map_err(|e| Error::InvalidOutput {
            skill: skill.to_owned(),
            reason: e.to_string(),
        })
    }
}

/// The length of `value` written as JSON (as `to_string` writes it), counted without
/// writing it anywhere.
fn json_len(value: &Value) -> usize {
    // A string with nothing to escape (base64, most text) is itself and two quotes.
    // Checked a block at a time without stopping inside one, which the compiler turns
    // into vector instructions (a byte-by-byte check was a third of a 1 MiB call).
    let plain = |block: &[u8]| {
        block.iter().fold(true, |plain, &b| {
            plain & (b >= 0x20) & (b != b'"') & (b != b'\\')
        })
    };
    if let Value::String(text) = value
        && text.as_bytes().chunks(4096).all(plain)
    {
        return text.len() + 2;
    }
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing a `Value` to a sink that takes everything cannot fail.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// What a call is given: its arguments on the direct path (and what that returns), or
/// as WIT values.
enum Args {
    Direct(Vec<Arg>, Returns),
    Values(Vec<Val>),
}

/// Whether the call succeeded and its result (or error) as JSON, from the value it
/// returned: a `result`'s error is a failure.
fn outcome(ty: Option<&Type>, val: Option<&Val>) -> (bool, Value) {
    match (ty, val) {
        (Some(Type::Result(ty)), Some(Val::Result(outcome))) => match outcome {
            Ok(val) => (true, payload(ty.ok().as_ref(), val.as_deref())),
            Err(val) => (false, payload(ty.err().as_ref(), val.as_deref())),
        },
        (Some(ty), Some(val)) => (true, to_json(ty, val)),
        _ => (true, Value::Null),
    }
}

/// The arguments of `export`'s direct path, read from `input`: `None` unless it is an
/// object holding exactly its parameters, each of the kind the path takes.
fn direct_args(export: &Export, direct: &Direct, input: &Value) -> Option<Vec<Arg>> {
    let object = input.as_object()?;
    if object.len() != export.params.len() {
        return None;
    }
    export
        .params
        .iter()
        .zip(&direct.params)
        .map(|((name, _), kind)| Arg::read(*kind, object.get(name)?))
        .collect()
}

/// The JSON of a `result`'s payload; `null` when its case has none.
fn payload(ty: Option<&Type>, val: Option<&Val>) -> Value {
    match (ty, val) {
        (Some(ty), Some(val)) => to_json(ty, val),
        _ => Value::Null,
    }
}

/// The function's arguments, read from `input`: an object with one property per
/// parameter (one of type `option<T>` may be left out).
fn params(export: &Export, input: &Value) -> std::result::Result<Vec<Val>, String> {
    let empty = Map::new();
    let object = match input {
        Value::Object(object) => object,
        // A function of no parameters may be called with nothing.
        Value::Null if export.params.is_empty() => &empty,
        other => {
            return Err(format!(
                "the input must be an object of the function's parameters ({}), not {}",
                names(export),
                crate::skill::template::type_name(other)
            ));
        }
    };
    if let Some(extra) = object
        .keys()
        .find(|key| !export.params.iter().any(|(name, _)| name == *key))
    {
        return Err(format!(
            "`{extra}` is not a parameter of `{}`; its parameters are {}",
            export.path,
            names(export)
        ));
    }
    export
        .params
        .iter()
        .map(|(name, ty)| match (object.get(name), ty) {
            (Some(json), ty) => to_val(ty, json, name)
                .map_err(|Mismatch { path, expected }| format!("at {path}: expected {expected}")),
            (None, Type::Option(_)) => Ok(Val::Option(None)),
            (None, _) => Err(format!(
                "the parameter `{name}` is missing; `{}` takes {}",
                export.path,
                names(export)
            )),
        })
        .collect()
}

fn names(export: &Export) -> String {
    if export.params.is_empty() {
        return "no parameters".to_owned();
    }
    export
        .params
        .iter()
        .map(|(name, _)| format!("`{name}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl Executor for PlainExecutor {
    fn kind(&self) -> ExecutorKind {
        ExecutorKind::Wasm
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }

    fn prepare(&self) -> BoxFuture<'_, Result<()>> {
        Box::pin(async move { self.component.prepare().await.map(drop) })
    }

    fn execute(&self, input: Value, ctx: SkillContext) -> BoxFuture<'_, Result<SkillOutput>> {
        Box::pin(async move {
            let output = self.component.call_at(self.function, &input, &ctx).await?;
            Ok(SkillOutput::from(output))
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn the_counted_length_is_the_written_one() {
        for value in [
            json!(null),
            json!("é😀\u{1}\"\\"),
            json!({ "a": [1, 2.5, "x"], "b": { "c": false } }),
            json!("x".repeat(70_000)),
            json!("x\u{7f}é"),
        ] {
            assert_eq!(super::json_len(&value), value.to_string().len(), "{value}");
        }
    }
}
