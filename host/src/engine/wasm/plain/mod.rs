//! Plain components: components that do not export `evo:skill/skill`, built with any
//! toolchain (`wit-bindgen`, `cargo component`, ComponentizeJS, componentize-py, …)
//! against any WIT. Each exported function — top-level, or in an exported interface —
//! is a skill named `COMPONENT__FUNCTION` or `COMPONENT__INTERFACE__FUNCTION`; its
//! input is an object of its parameters, its output its result, both as the JSON the
//! WIT types map to (see `wit_json`). A `result<T, E>` that is `err` is a failure
//! carrying the error value. Functions whose types have no JSON form (resources,
//! streams, futures) are listed, with the reason, and not callable.
//!
//! Each call runs in a fresh instance under the same limits, WASI grants and gates as
//! an Evo skill's; what the component may do beyond computing comes only from its
//! sidecar manifest (`skill.json` or `SKILL.md` beside it), as the component itself
//! declares nothing.

mod call;
mod direct;
mod docs;
mod exports;
mod load;
mod overrides;

use std::sync::Arc;

use wasmtime::component::InstancePre;

pub use exports::{SEPARATOR, Unusable};
pub(super) use load::{Learnt, Origin};

use super::{HostState, Limits, LoadSource, WasmEngine};
use crate::capabilities::Grant;
use crate::error::Result;
use crate::skill::lanes::Streak;
use crate::skill::manifest::SkillMeta;

/// A loaded plain component: its functions are skills. Cheap to clone.
#[derive(Clone)]
pub struct PlainComponent {
    inner: Arc<Inner>,
}

struct Inner {
    engine: WasmEngine,
    meta: SkillMeta,
    digest: String,
    limits: Limits,
    grant: Arc<Grant>,
    /// Whether its manifest names capabilities: without, it has nothing to ask with
    /// and gets only what is granted to it by name.
    asks: bool,
    calls: Arc<[String]>,
    functions: Vec<Function>,
    unusable: Vec<Unusable>,
    /// The compiled component, linked, with each function's export: at load, or on
    /// the first call.
    ready: tokio::sync::OnceCell<Ready>,
    /// The file it is loaded from on its first call, when not at load.
    file: Option<std::path::PathBuf>,
    /// Its next instance, made ahead (see [`super::parked`]); any function's call
    /// takes it.
    parked: Arc<super::parked::Spot<wasmtime::component::Instance>>,
}

/// A function that is a skill.
struct Function {
    /// How WIT names it.
    path: String,
    meta: SkillMeta,
    /// Whether its last calls ran long (they start in the long lane).
    streak: Streak,
}

/// A compiled, linked component, with the export of each of its [`Function`]s, in order.
pub(super) struct Ready {
    pre: InstancePre<HostState>,
    source: LoadSource,
    exports: Vec<exports::Export>,
}

impl std::fmt::Debug for PlainComponent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlainComponent")
            .field("name", &self.inner.meta.name)
            .field("digest", &self.inner.digest)
            .field("functions", &self.inner.functions.len())
            .finish_non_exhaustive()
    }
}

impl PlainComponent {
    /// The component's own manifest: its name, and what its sidecar declares (limits,
    /// capabilities, tags). Its functions' manifests are [`PlainComponent::skills`].
    pub fn meta(&self) -> &SkillMeta {
        &self.inner.meta
    }

    /// The manifest of each function that is a skill, in export order.
    pub fn skills(&self) -> impl Iterator<Item = &SkillMeta> {
        self.inner.functions.iter().map(|f| &f.meta)
    }

    /// How WIT names the function of skill `name` (`interface/function` or
    /// `function`).
    pub fn function_of(&self, name: &str) -> Option<&str> {
        self.position(name)
            .map(|i| self.inner.functions[i].path.as_str())
    }

    /// The exported functions that are not skills, and why.
    pub fn unusable(&self) -> &[Unusable] {
        &self.inner.unusable
    }

    /// The limits each call runs under.
    pub fn limits(&self) -> &Limits {
        &self.inner.limits
    }

    /// The capabilities granted (and refused).
    pub fn grant(&self) -> &Grant {
        &self.inner.grant
    }

    /// Whether it can ask for capabilities (its manifest names them); one that cannot
    /// gets only what is granted to it by name.
    pub fn asks(&self) -> bool {
        self.inner.asks
    }

    /// SHA-256 of the component bytes.
    pub fn digest(&self) -> &str {
        &self.inner.digest
    }

    /// Whether the component was compiled or loaded from the cache, or is still to be
    /// loaded on its first call.
    pub fn load_source(&self) -> LoadSource {
        self.inner
            .ready
            .get()
            .map_or(LoadSource::Deferred, |ready| ready.source)
    }

    /// Loads the compiled component now if it was deferred to the first call, and says
    /// where it came from.
    pub async fn prepare(&self) -> Result<LoadSource> {
        Ok(self.ready().await?.source)
    }

    fn position(&self, name: &str) -> Option<usize> {
        self.inner
            .functions
            .iter()
            .position(|f| f.meta.name == name)
    }

    /// An executor for the kernel calling the function of skill `name`.
    pub fn executor(&self, name: &str) -> Option<PlainExecutor> {
        Some(PlainExecutor {
            function: self.position(name)?,
            component: self.clone(),
        })
    }
}

/// The name a component file gets when no sidecar names it: its file name without
/// `.wasm`, lower-cased, with what a skill name cannot hold turned into `-`.
pub fn component_name(label: &str) -> String {
    let stem = label.strip_suffix(".wasm").unwrap_or(label);
    let mut name = String::with_capacity(stem.len());
    for c in stem.chars() {
        let c = c.to_ascii_lowercase();
        let c = if c.is_ascii_lowercase() || c.is_ascii_digit() {
            c
        } else {
            '-'
        };
        // Never `__` (the separator), nor a run of dashes.
        if c == '-' && name.ends_with('-') {
            continue;
        }
        name.push(c);
    }
    let name = name.trim_matches('-');
    match name.chars().next() {
        Some(first) if first.is_ascii_lowercase() => name.to_owned(),
        _ => format!("component-{name}").trim_end_matches('-').to_owned(),
    }
}

/// Runs one function of a [`PlainComponent`] for the kernel.
#[derive(Debug, Clone)]
pub struct PlainExecutor {
    component: PlainComponent,
    function: usize,
}

impl PlainExecutor {
    /// The component the function belongs to.
    pub fn component(&self) -> &PlainComponent {
        &self.component
    }

    /// How WIT names the function (`interface/function` or `function`).
    pub fn function(&self) -> &str {
        &self.component.inner.functions[self.function].path
    }
}

/// A component built from WIT text (`world` of package `wit`), its core module a stub
/// that traps if run; with `docs`, carrying the package's doc comments as
/// `wit-component` writes them for a WIT package (a `package-docs` section).
#[cfg(test)]
pub(crate) fn test_component(wit: &str, world: &str, docs: bool) -> Vec<u8> {
    let mut resolve = wit_parser::Resolve::default();
    let package = resolve.push_str("test.wit", wit).unwrap();
    let world = resolve.select_world(&[package], Some(world)).unwrap();
    let mut module =
        wit_component::dummy_module(&resolve, world, wit_parser::ManglingAndAbi::Standard32);
    wit_component::embed_component_metadata(
        &mut module,
        &resolve,
        world,
        wit_component::StringEncoding::UTF8,
    )
    .unwrap();
    let mut bytes = wit_component::ComponentEncoder::default()
        .module(&module)
        .unwrap()
        .validate(true)
        .encode()
        .unwrap();
    if docs {
        let section = wit_parser::PackageMetadata::extract(&resolve, package)
            .encode()
            .unwrap();
        let name = wit_parser::PackageMetadata::SECTION_NAME;
        let mut body = vec![u8::try_from(name.len()).unwrap()];
        body.extend_from_slice(name.as_bytes());
        body.extend_from_slice(&section);
        bytes.push(0);
        super::inspect::leb128(&mut bytes, body.len());
        bytes.extend_from_slice(&body);
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::component_name;
    use crate::capabilities::Policy;
    use crate::engine::wasm::{EngineConfig, WasmEngine};

    const DESCRIBED: &str = r#"
        /// Plane geometry, described.
        package test:described;

        interface points {
            /// The distance between two points.
            distance: func(x1: f64, y1: f64, x2: f64, y2: f64) -> f64;
        }

        world geometry {
            export points;
            /// Says hello.
            export hello: func(name: string) -> string;
        }
    "#;

    const IMPORTS_MISSING: &str = r#"
        package test:needy;

        interface api { ping: func() -> u32; }

        world needy {
            import api;
            export pong: func() -> u32;
        }
    "#;

    fn engine() -> WasmEngine {
        WasmEngine::new(EngineConfig {
            pooling: false,
            ..EngineConfig::default()
        })
        .unwrap()
    }

    #[tokio::test]
    async fn wit_doc_comments_describe_the_component_and_its_functions() {
        let bytes = super::test_component(DESCRIBED, "geometry", true);
        let component = engine()
            .load_component("geometry.wasm", bytes, None, &Policy::default())
            .await
            .unwrap();
        assert_eq!(component.meta().description, "Plane geometry, described.");
        let described: Vec<(&str, &str)> = component
            .skills()
            .map(|m| (m.name.as_str(), m.description.as_str()))
            .collect();
        assert_eq!(
            described,
            [
                ("geometry__hello", "Says hello."),
                (
                    "geometry__points__distance",
                    "The distance between two points."
                ),
            ]
        );
    }

    #[tokio::test]
    async fn types_too_large_to_describe_and_functions_past_the_cap_are_not_skills() {
        // Each type twice the one before: small in WIT, 2^15 parts spelt out.
        let mut wit =
            String::from("package test:big;\ninterface huge {\n  type t0 = tuple<u8, u8>;\n");
        for i in 1..15 {
            wit.push_str(&format!("  type t{i} = tuple<t{0}, t{0}>;\n", i - 1));
        }
        wit.push_str("  big: func(v: t14);\n  small: func(v: u8) -> u8;\n}\n");
        wit.push_str("interface many {\n");
        for i in 0..260 {
            wit.push_str(&format!("  fn{i}: func();\n"));
        }
        wit.push_str("}\nworld w { export huge; export many; }\n");
        let bytes = super::test_component(&wit, "w", false);
        let component = engine()
            .load_component("big.wasm", bytes, None, &Policy::default())
            .await
            .unwrap();
        let unusable = component.unusable();
        let big = unusable.iter().find(|u| u.function == "huge/big").unwrap();
        assert!(
            big.reason.contains("more than 10000 parts"),
            "{}",
            big.reason
        );
        assert!(component.skills().any(|m| m.name == "big__huge__small"));
        assert_eq!(component.skills().count(), super::exports::MAX_FUNCTIONS);
        let capped = unusable
            .iter()
            .filter(|u| u.reason.contains("the most one component may have"));
        assert_eq!(capped.count(), 260 + 1 - super::exports::MAX_FUNCTIONS);
    }

    #[tokio::test]
    async fn a_component_importing_what_the_host_lacks_is_refused_with_the_import_named() {
        let bytes = super::test_component(IMPORTS_MISSING, "needy", false);
        let error = engine()
            .load_component("needy.wasm", bytes, None, &Policy::default())
            .await
            .unwrap_err();
        assert_eq!(error.code(), "NOT_A_SKILL");
        assert!(error.to_string().contains("test:needy/api"), "{error}");
    }

    #[test]
    fn a_file_name_becomes_a_component_name() {
        assert_eq!(component_name("echo.wasm"), "echo");
        assert_eq!(component_name("Plain_Kinds.wasm"), "plain-kinds");
        assert_eq!(component_name("my__tool.wasm"), "my-tool");
        assert_eq!(component_name("2fa.wasm"), "component-2fa");
        assert_eq!(component_name("--.wasm"), "component");
    }
}
