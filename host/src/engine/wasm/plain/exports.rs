//! A plain component's exported functions: which can be skills, under which names and
//! schemas, and why the others cannot.

use serde_json::{Map, Value, json};
use wasmtime::Engine;
use wasmtime::component::types::{ComponentFunc, ComponentItem};
use wasmtime::component::{Component, ComponentExportIndex, Type};

use super::docs::Docs;
use crate::engine::wasm::wit_json::{schema, unsupported};
use crate::skill::manifest::MAX_NAME_LEN;

pub use crate::skill::manifest::COMPONENT_SEPARATOR as SEPARATOR;

/// Parts (types, fields, cases) a function's parameters and result may have in all,
/// counted as its JSON Schema spells them out.
pub const MAX_TYPE_PARTS: usize = 10_000;
/// Functions of one component that may be skills: every one is a tool a model reads.
pub const MAX_FUNCTIONS: usize = 256;

/// The parts of `ty` counted as its schema spells them out, if at most `budget`.
fn parts_within(ty: &Type, budget: usize) -> Option<usize> {
    let (own, inner): (usize, Vec<Type>) = match ty {
        Type::List(list) => (1, vec![list.ty()]),
        Type::FixedLengthList(list) => (1, vec![list.ty()]),
        Type::Option(option) => (1, vec![option.ty()]),
        Type::Map(map) => (1, vec![map.key(), map.value()]),
        Type::Record(record) => (
            1 + record.fields().count(),
            record.fields().map(|f| f.ty).collect(),
        ),
        Type::Tuple(tuple) => (1, tuple.types().collect()),
        Type::Variant(variant) => (
            1 + variant.cases().count(),
            variant.cases().filter_map(|c| c.ty).collect(),
        ),
        Type::Enum(cases) => (1 + cases.names().count(), Vec::new()),
        Type::Flags(flags) => (1 + flags.names().count(), Vec::new()),
        Type::Result(result) => (1, result.ok().into_iter().chain(result.err()).collect()),
        _ => (1, Vec::new()),
    };
    let mut used = own;
    if used > budget {
        return None;
    }
    for ty in &inner {
        used += parts_within(ty, budget - used)?;
    }
    Some(used)
}

/// An exported function that is a skill.
#[derive(Debug, Clone)]
pub(super) struct Export {
    /// The skill's name.
    pub(super) skill: String,
    /// How WIT names it: `interface/function` or `function`.
    pub(super) path: String,
    pub(super) index: ComponentExportIndex,
    pub(super) params: Vec<(String, Type)>,
    pub(super) result: Option<Type>,
    /// Its direct path for bulk data, when it has one.
    pub(super) direct: Option<super::direct::Direct>,
    pub(super) description: String,
    pub(super) input: Value,
    pub(super) output: Value,
}

/// An exported function that cannot be a skill, and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Unusable {
    /// How WIT names it: `interface/function` or `function`.
    pub function: String,
    /// Why it is not a skill.
    pub reason: String,
}

/// Every function `component` exports, top-level or in an exported interface, as
/// skills of the component named `name`, or with the reason it cannot be one.
pub(super) fn exports(
    engine: &Engine,
    component: &Component,
    name: &str,
    docs: &Docs,
) -> (Vec<Export>, Vec<Unusable>) {
    let mut usable: Vec<Export> = Vec::new();
    let mut unusable = Vec::new();
    let ty = component.component_type();
    let mut found = |interface: Option<(&str, &ComponentExportIndex)>,
                     func_name: &str,
                     func: &ComponentFunc| {
        let short = interface.map(|(full, _)| short_name(full));
        let path = match short {
            Some(short) => format!("{short}/{func_name}"),
            None => func_name.to_owned(),
        };
        let refuse = |reason: String| Unusable {
            function: path.clone(),
            reason,
        };
        if let Some(reason) = resource_function(func_name) {
            unusable.push(refuse(reason));
            return;
        }
        let params: Vec<(String, Type)> = func.params().map(|(n, t)| (n.to_owned(), t)).collect();
        if let Some(reason) =
            toolchain_internal(interface.map(|(full, _)| full), func_name, &params)
        {
            unusable.push(refuse(reason));
            return;
        }
        let result = func.results().next();
        let no_json = params
            .iter()
            .find_map(|(n, t)| unsupported(t).map(|why| format!("its parameter `{n}` is {why}")))
            .or_else(|| {
                result
                    .as_ref()
                    .and_then(unsupported)
                    .map(|why| format!("its result is {why}"))
            });
        if let Some(reason) = no_json {
            unusable.push(refuse(format!("{reason}, which has no JSON form")));
            return;
        }
        // Types may share parts, and a schema spells every part out: a few kilobytes of
        // WIT could otherwise be gigabytes of schema.
        let parts = params
            .iter()
            .map(|(_, t)| t)
            .chain(result.as_ref())
            .try_fold(0, |sum, t| {
                parts_within(t, MAX_TYPE_PARTS - sum).map(|n| sum + n)
            });
        if parts.is_none() {
            unusable.push(refuse(format!(
                "its parameters and result have more than {MAX_TYPE_PARTS} parts, too many to describe to a caller"
            )));
            return;
        }
        if usable.len() >= MAX_FUNCTIONS {
            unusable.push(refuse(format!(
                "the component has {MAX_FUNCTIONS} functions that are skills already, the most one component may have"
            )));
            return;
        }
        let skill = [Some(name), short, Some(func_name)]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(SEPARATOR)
            .to_ascii_lowercase();
        if skill.len() > MAX_NAME_LEN {
            unusable.push(refuse(format!(
                "its skill name `{skill}` would be longer than {MAX_NAME_LEN} characters; give the component a shorter name (`name` in its skill.json)"
            )));
            return;
        }
        if let Some(taken) = usable.iter().find(|e| e.skill == skill) {
            unusable.push(refuse(format!(
                "its skill name `{skill}` is already `{}`'s (two exported interfaces share the name `{}`)",
                taken.path,
                short.unwrap_or(func_name)
            )));
            return;
        }
        let index = match interface {
            Some((_, instance)) => component.get_export_index(Some(instance), func_name),
            None => component.get_export_index(None, func_name),
        };
        let Some(index) = index else {
            unusable.push(refuse("wasmtime cannot find it by name".to_owned()));
            return;
        };
        let description = docs
            .function(short, func_name)
            .map(str::to_owned)
            .unwrap_or_else(|| match short {
                Some(short) => format!(
                    "Calls `{func_name}` of the `{short}` interface exported by the WebAssembly component {name}."
                ),
                None => format!("Calls `{func_name}` exported by the WebAssembly component {name}."),
            });
        usable.push(Export {
            input: input_schema(&params),
            output: output_schema(result.as_ref()),
            direct: super::direct::Direct::of(&params, result.as_ref()),
            skill,
            path,
            index,
            params,
            result,
            description,
        });
    };
    for (export, item) in ty.exports(engine) {
        match &item.ty {
            ComponentItem::ComponentFunc(func) => found(None, export, func),
            ComponentItem::ComponentInstance(instance) => {
                // The Evo skill interface is not a plain function: a component exporting
                // it is loaded as an Evo skill instead.
                let Some(index) = component.get_export_index(None, export) else {
                    continue;
                };
                for (func_name, item) in instance.exports(engine) {
                    if let ComponentItem::ComponentFunc(func) = &item.ty {
                        found(Some((export, &index)), func_name, func);
                    }
                }
            }
            // Types, resources, modules and components are not callable.
            _ => {}
        }
    }
    (usable, unusable)
}

/// `wasi:http/incoming-handler@0.2.0` → `incoming-handler`; an unqualified name as it is.
fn short_name(interface: &str) -> &str {
    let name = interface.rsplit_once('/').map_or(interface, |(_, n)| n);
    name.split_once('@').map_or(name, |(n, _)| n)
}

/// Why `function` (of the exported `interface`, if any) is not the component's own but
/// its toolchain's, if it is: a tool a model could call only to trap.
///
/// componentize-py exports `exports/init(app-name, symbols, stub-wasi)`, which it calls
/// once while it builds the component (to load the application's code into the
/// snapshot); called again it traps, and its `symbols` parameter alone is a schema of
/// hundreds of lines.
fn toolchain_internal(
    interface: Option<&str>,
    function: &str,
    params: &[(String, Type)],
) -> Option<String> {
    let named = |name: &str| params.iter().any(|(n, _)| n == name);
    (interface == Some("exports") && function == "init" && named("app-name") && named("symbols"))
        .then(|| {
            "it is componentize-py's own start-up function, which it runs while it builds the component (called again, it traps), not one of the application's".to_owned()
        })
}

/// Why a function of a resource (`[method]counter.get`) is not a skill.
fn resource_function(name: &str) -> Option<String> {
    let (kind, rest) = name.strip_prefix('[')?.split_once(']')?;
    let resource = rest.split_once('.').map_or(rest, |(r, _)| r);
    let what = match kind {
        "constructor" => "the constructor",
        "method" => "a method",
        "static" => "a static function",
        _ => "a function",
    };
    Some(format!(
        "it is {what} of the resource `{resource}`: a resource lives in an instance, and every call of a skill gets a fresh one"
    ))
}

/// An object with a property per parameter; those of type `option<T>` may be left out.
fn input_schema(params: &[(String, Type)]) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for (name, ty) in params {
        properties.insert(name.clone(), schema(ty));
        if !matches!(ty, Type::Option(_)) {
            required.push(Value::String(name.clone()));
        }
    }
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

/// The result's schema; of a `result<T, E>`, `T`'s (the error is a failure).
fn output_schema(result: Option<&Type>) -> Value {
    match result {
        None => json!({ "type": "null" }),
        Some(Type::Result(result)) => result
            .ok()
            .map_or_else(|| json!({ "type": "null" }), |ok| schema(&ok)),
        Some(ty) => schema(ty),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interface_names_are_read_without_package_or_version() {
        assert_eq!(
            short_name("wasi:http/incoming-handler@0.2.0"),
            "incoming-handler"
        );
        assert_eq!(short_name("fixture:plain/kinds"), "kinds");
        assert_eq!(short_name("inline"), "inline");
    }

    #[test]
    fn resource_functions_say_which_resource() {
        let reason = resource_function("[method]counter.increment").unwrap();
        assert!(
            reason.starts_with("it is a method of the resource `counter`"),
            "{reason}"
        );
        let reason = resource_function("[constructor]counter").unwrap();
        assert!(
            reason.starts_with("it is the constructor of the resource `counter`"),
            "{reason}"
        );
        assert_eq!(resource_function("add"), None);
    }
}
