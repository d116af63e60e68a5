//! Loading a plain component: what its bytes say (its functions, their types and
//! schemas, its WIT docs and version), put together with what its sidecar says (name,
//! descriptions, limits, capabilities) into its skills. What the bytes said is kept as
//! [`Learnt`], so that a file loaded before and unchanged since is described from it
//! and compiled (or loaded from the cache) only on its first call.

use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::docs::Docs;
use super::{Function, Inner, PlainComponent, Ready, Unusable, component_name, exports, overrides};
use crate::capabilities::Policy;
use crate::engine::wasm::compile::Code;
use crate::engine::wasm::{Limits, WasmEngine};
use crate::error::{Error, Result};
use crate::skill::lanes::Streak;
use crate::skill::manifest::{RawMeta, SkillMeta};

/// What a plain component's bytes said, for the component name its sidecar gave.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(in crate::engine::wasm) struct Learnt {
    /// SHA-256 of the bytes: the compile cache's key.
    pub(in crate::engine::wasm) digest: String,
    /// The WIT package's doc comment.
    package_docs: Option<String>,
    /// The WIT package's version.
    version: Option<String>,
    functions: Vec<Learned>,
    unusable: Vec<Unusable>,
}

/// A function that is a skill, as its types and docs describe it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Learned {
    skill: String,
    path: String,
    description: String,
    input: Value,
    output: Value,
}

impl WasmEngine {
    /// Loads a plain component from `bytes`: its functions become skills of the
    /// component named by `sidecar` (else after `label`, its file name), which also
    /// gives its description, limits and capabilities (granted within `policy`).
    pub async fn load_component(
        &self,
        label: &str,
        bytes: Vec<u8>,
        sidecar: Option<RawMeta>,
        policy: &Policy,
    ) -> Result<PlainComponent> {
        Ok(self.learn_component(label, bytes, sidecar, policy).await?.0)
    }

    /// [`WasmEngine::load_component`], and what the bytes said.
    pub(in crate::engine::wasm) async fn learn_component(
        &self,
        label: &str,
        bytes: Vec<u8>,
        sidecar: Option<RawMeta>,
        policy: &Policy,
    ) -> Result<(PlainComponent, Learnt)> {
        self.check_size(label, bytes.len())?;
        let scan = crate::engine::wasm::inspect::scan(label, &bytes)?;
        if scan.is_evo_skill() {
            return Err(Error::NotASkill {
                skill: label.to_owned(),
                reason: "it exports `evo:skill/skill`: it is an Evo skill, not a plain component"
                    .to_owned(),
            });
        }
        let docs = scan.docs.as_deref().map(Docs::read).unwrap_or_default();
        // The version of its WIT package, as its exported interfaces name it.
        let version = scan
            .exports
            .iter()
            .find_map(|e| e.split_once('@').map(|(_, v)| v.to_owned()));
        let meta = component_meta(
            label,
            sidecar.clone(),
            docs.package.clone(),
            version.clone(),
        )?;
        let limits = Limits::resolve(&meta, &self.inner.config.limits);
        let digest = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&bytes));
        let fuel = limits.fuel.is_some();
        let (pre, source) = self
            .prepare_as(
                &meta.name,
                &digest,
                Code::Bytes(bytes.into()),
                fuel,
                |_, pre| Ok(pre),
            )
            .await?;
        let engine = &self.flavor(fuel)?.engine;
        let (usable, unusable) = exports::exports(engine, pre.component(), &meta.name, &docs);
        if usable.is_empty() {
            let reason = if unusable.is_empty() {
                "it exports no function".to_owned()
            } else {
                let why: Vec<String> = unusable
                    .iter()
                    .map(|u| format!("`{}`: {}", u.function, u.reason))
                    .collect();
                format!("none of its functions can be a skill ({})", why.join("; "))
            };
            return Err(Error::NotASkill {
                skill: meta.name.clone(),
                reason,
            });
        }
        let learnt = Learnt {
            digest,
            package_docs: docs.package.clone(),
            version,
            functions: usable
                .iter()
                .map(|e| Learned {
                    skill: e.skill.clone(),
                    path: e.path.clone(),
                    description: e.description.clone(),
                    input: e.input.clone(),
                    output: e.output.clone(),
                })
                .collect(),
            unusable,
        };
        let ready = Ready {
            pre,
            source,
            exports: usable,
        };
        let component = self.assemble(label, sidecar, &learnt, policy, Origin::Ready(ready))?;
        Ok((component, learnt))
    }

    /// The component `learnt` describes, as its sidecar names and describes it; its
    /// code at hand, or in `file` to be loaded on the first call.
    pub(in crate::engine::wasm) fn assemble(
        &self,
        label: &str,
        sidecar: Option<RawMeta>,
        learnt: &Learnt,
        policy: &Policy,
        origin: Origin,
    ) -> Result<PlainComponent> {
        let mut sidecar = sidecar;
        // A manifest that names no capabilities asks for none: nothing to ask with.
        let asks = sidecar
            .as_ref()
            .is_some_and(|raw| raw.capabilities.is_some());
        let described = sidecar.as_mut().and_then(|raw| raw.functions.take());
        let meta = component_meta(
            label,
            sidecar,
            learnt.package_docs.clone(),
            learnt.version.clone(),
        )?;
        let names: Vec<(&str, &str, &Value)> = learnt
            .functions
            .iter()
            .map(|f| (f.path.as_str(), f.skill.as_str(), &f.input))
            .collect();
        let mut described = overrides::Overrides::read(&meta.name, described, &names)?;
        let functions = learnt
            .functions
            .iter()
            .map(|learned| {
                let mut skill = meta.clone();
                skill.name.clone_from(&learned.skill);
                skill.description.clone_from(&learned.description);
                skill.input = learned.input.clone();
                skill.output = learned.output.clone();
                // The component's examples are its functions' only through `functions`.
                skill.examples = Vec::new();
                described.apply(&learned.path, &learned.skill, &mut skill);
                Function {
                    path: learned.path.clone(),
                    meta: skill,
                    streak: Streak::default(),
                }
            })
            .collect();
        let limits = Limits::resolve(&meta, &self.inner.config.limits);
        let grant = crate::engine::wasm::call::grant_for(&meta, policy, asks);
        let (ready, file) = match origin {
            Origin::Ready(ready) => (tokio::sync::OnceCell::new_with(Some(ready)), None),
            Origin::File(path) => (tokio::sync::OnceCell::new(), Some(path)),
        };
        Ok(PlainComponent {
            inner: Arc::new(Inner {
                engine: self.clone(),
                calls: meta.calls.clone().into(),
                grant: Arc::new(grant),
                asks,
                meta,
                digest: learnt.digest.clone(),
                limits,
                functions,
                unusable: learnt.unusable.clone(),
                ready,
                file,
                parked: Arc::default(),
            }),
        })
    }
}

/// Where a plain component's code is.
pub(in crate::engine::wasm) enum Origin {
    /// Compiled (or loaded from the cache) and linked at load.
    Ready(Ready),
    /// In this file, unchanged since it was loaded before: loaded on the first call.
    File(PathBuf),
}

impl PlainComponent {
    /// The compiled component and its functions' exports, loading them from the file
    /// (whose digest is checked) on the first call when the load deferred them.
    pub(super) async fn ready(&self) -> Result<&Ready> {
        let inner = &self.inner;
        inner
            .ready
            .get_or_try_init(|| async {
                let Some(file) = &inner.file else {
                    return Err(Error::Engine(format!(
                        "{}: the component has no compiled code and no file to load it from",
                        inner.meta.name
                    )));
                };
                let fuel = inner.limits.fuel.is_some();
                let code = Code::File(file.clone());
                let (pre, source) = inner
                    .engine
                    .prepare_as(&inner.meta.name, &inner.digest, code, fuel, |_, pre| {
                        Ok(pre)
                    })
                    .await?;
                let engine = &inner.engine.flavor(fuel)?.engine;
                let (usable, _) =
                    exports::exports(engine, pre.component(), &inner.meta.name, &Docs::default());
                let exports = inner
                    .functions
                    .iter()
                    .map(|function| {
                        usable
                            .iter()
                            .find(|e| e.path == function.path)
                            .cloned()
                            .ok_or_else(|| {
                                Error::Engine(format!(
                                    "{}: the component no longer exports `{}`; load it again",
                                    inner.meta.name, function.path
                                ))
                            })
                    })
                    .collect::<Result<Vec<_>>>()?;
                Ok(Ready {
                    pre,
                    source,
                    exports,
                })
            })
            .await
    }
}

/// The component's manifest: the sidecar's, with its name after the file, its
/// description from its WIT docs and its version its WIT package's when the sidecar
/// gives none.
fn component_meta(
    label: &str,
    sidecar: Option<RawMeta>,
    package_docs: Option<String>,
    version: Option<String>,
) -> Result<SkillMeta> {
    let mut raw = sidecar.unwrap_or_default();
    if raw.version.is_none() {
        // A pre-release or odd version is kept out rather than refusing the component.
        raw.version = version.filter(|v| {
            v.split('.').count() == 3 && v.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        });
    }
    let name = raw
        .name
        .get_or_insert_with(|| component_name(label))
        .clone();
    raw.description.get_or_insert_with(|| {
        package_docs
            .filter(|d| !d.is_empty())
            .unwrap_or_else(|| format!("The WebAssembly component {name}."))
    });
    SkillMeta::from_raw(raw).map_err(|problems| Error::InvalidManifest {
        skill: name.clone(),
        problems,
    })
}
