//! The doc comments of a component's WIT package, from its `package-docs` section (a
//! version byte, 0 or 1, then JSON), where the toolchain kept them: what describes a
//! plain component's functions when no sidecar does.

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::Value;

/// The doc comments found: the package's, and each function's by its path.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(super) struct Docs {
    /// The package's own docs, or its world's.
    pub(super) package: Option<String>,
    /// Keyed `interface/function` for a function of an exported interface, `function`
    /// for a function the world exports itself.
    functions: HashMap<String, String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Package {
    docs: Option<String>,
    worlds: HashMap<String, World>,
    interfaces: HashMap<String, Interface>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct World {
    docs: Option<String>,
    funcs: HashMap<String, Value>,
    func_exports: HashMap<String, Value>,
    interfaces: HashMap<String, Interface>,
    interface_exports: HashMap<String, Interface>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Interface {
    funcs: HashMap<String, Value>,
}

impl Docs {
    /// Reads a `package-docs` section; one it cannot read gives no docs (they only
    /// describe, and a description is never required).
    pub(super) fn read(section: &[u8]) -> Self {
        let Some((&(0 | 1), json)) = section.split_first() else {
            return Self::default();
        };
        let Ok(package) = serde_json::from_slice::<Package>(json) else {
            return Self::default();
        };
        let mut functions = HashMap::new();
        let mut keep = |key: String, value: &Value| {
            // A function's entry is its docs, or `{ "docs": …, "stability": … }`.
            let text = value
                .as_str()
                .or_else(|| value.get("docs").and_then(Value::as_str));
            if let Some(text) = text.map(str::trim).filter(|t| !t.is_empty()) {
                functions.insert(key, text.to_owned());
            }
        };
        let interfaces = package.interfaces.iter().chain(
            package
                .worlds
                .values()
                .flat_map(|w| w.interfaces.iter().chain(&w.interface_exports)),
        );
        for (interface, docs) in interfaces {
            for (func, value) in &docs.funcs {
                keep(format!("{interface}/{func}"), value);
            }
        }
        for world in package.worlds.values() {
            for (func, value) in world.funcs.iter().chain(&world.func_exports) {
                keep(func.clone(), value);
            }
        }
        let world_docs = package.worlds.values().find_map(|w| w.docs.clone());
        Self {
            package: package.docs.or(world_docs).map(|d| d.trim().to_owned()),
            functions,
        }
    }

    /// The docs of `function`, in `interface` (its short name) or the world's own.
    pub(super) fn function(&self, interface: Option<&str>, function: &str) -> Option<&str> {
        let key = match interface {
            Some(interface) => format!("{interface}/{function}"),
            None => function.to_owned(),
        };
        self.functions.get(&key).map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn function_docs_are_read_in_either_form_and_by_their_interface() {
        let json = serde_json::json!({
            "docs": "Geometry.",
            "worlds": { "shapes": { "func_exports": { "area": "The area." } } },
            "interfaces": { "points": { "funcs": {
                "distance": { "docs": "The distance between two points.", "stability": "unknown" },
                "origin": "The origin.",
            } } },
        });
        let mut section = vec![1];
        section.extend(serde_json::to_vec(&json).unwrap());
        let docs = Docs::read(&section);
        assert_eq!(docs.package.as_deref(), Some("Geometry."));
        assert_eq!(
            docs.function(Some("points"), "distance"),
            Some("The distance between two points.")
        );
        assert_eq!(docs.function(Some("points"), "origin"), Some("The origin."));
        assert_eq!(docs.function(None, "area"), Some("The area."));
        assert_eq!(docs.function(None, "distance"), None);
    }

    #[test]
    fn a_section_of_an_unknown_version_or_not_json_gives_no_docs() {
        assert_eq!(Docs::read(b"\x02{}"), Docs::default());
        assert_eq!(Docs::read(b"\x01not json"), Docs::default());
        assert_eq!(Docs::read(b""), Docs::default());
    }
}
