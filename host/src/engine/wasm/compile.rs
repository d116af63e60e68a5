//! Compiling a component (or loading it from the compile cache) and linking it to the
//! host's imports: what loading a skill and its first call both need.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use sha2::{Digest, Sha256};

use wasmtime::component::InstancePre;

use super::contract::SkillPre;
use super::{Flavor, HostState, LoadSource, WasmEngine};
use crate::error::{Error, Result};

impl WasmEngine {
    /// Compiles `code` (or loads it from the cache) for the flavor with or without
    /// fuel, and links it as an Evo skill.
    pub(super) async fn prepare(
        &self,
        label: &str,
        digest: &str,
        code: Code,
        fuel: bool,
    ) -> Result<Prepared> {
        self.prepare_as(label, digest, code, fuel, as_skill).await
    }

    /// Compiles `code` (or loads it from the cache) for the flavor with or without
    /// fuel, links it to the host's imports, and makes it ready with `ready` (which
    /// checks the exports the caller needs).
    pub(super) async fn prepare_as<P: Send + 'static>(
        &self,
        label: &str,
        digest: &str,
        code: Code,
        fuel: bool,
        ready: fn(&str, InstancePre<HostState>) -> Result<P>,
    ) -> Result<(P, LoadSource)> {
        let deadline = self.inner.config.compile_deadline;
        if let Some(hit) = self.cached(label, digest, fuel, ready)? {
            return Ok(hit);
        }
        let gate = self.inner.compiling.gate(fuel, digest);
        let (engine, label_owned, digest_owned) =
            (self.clone(), label.to_owned(), digest.to_owned());
        let compile = async move {
            let turn = gate.lock_owned().await;
            // Whoever held the turn before may have compiled these very bytes.
            if let Some(hit) = engine.cached(&label_owned, &digest_owned, fuel, ready)? {
                return Ok(hit);
            }
            engine
                .inner
                .config
                .on_compile
                .tell(&label_owned, code.len());
            tokio::task::spawn_blocking(move || {
                // Held until the compile ends, even past the deadline: the next caller
                // then reads what it wrote to the cache instead of compiling again.
                let _turn = turn;
                let flavor = engine.flavor(fuel)?;
                let compiled =
                    code.bytes(&digest_owned)
                        .and_then(|bytes| match &engine.inner.cache {
                            Some(cache) => {
                                cache.compile(&flavor.engine, flavor.key, &digest_owned, &bytes)
                            }
                            None => wasmtime::component::Component::new(&flavor.engine, &bytes[..]),
                        });
                let max_instances = engine.inner.config.limits.max_instances;
                let component = compiled.map_err(|e| refused(&label_owned, &e, max_instances))?;
                let linked = link(flavor, &label_owned, &component)?;
                let loaded = ready(&label_owned, linked)?;
                engine.inner.compiled.fetch_add(1, Ordering::Relaxed);
                Ok((loaded, LoadSource::Compiled))
            })
            .await
            .map_err(|e| Error::Engine(e.to_string()))?
        };
        let outcome = match tokio::time::timeout(deadline, compile).await {
            Ok(outcome) => outcome,
            Err(_) => Err(Error::ComponentLimit {
                skill: label.to_owned(),
                message: format!(
                    "compiling the component took longer than the compile deadline ({} ms); the compilation finishes in the background into the compile cache, so a later load may succeed",
                    deadline.as_millis()
                ),
            }),
        };
        self.inner.compiling.done(fuel, digest);
        outcome
    }

    /// The component from the compile cache, linked and made ready, if it is there.
    /// A hit maps the artifact and links it in about 0.1 ms: less than a trip to the
    /// blocking pool and back would add.
    fn cached<P>(
        &self,
        label: &str,
        digest: &str,
        fuel: bool,
        ready: fn(&str, InstancePre<HostState>) -> Result<P>,
    ) -> Result<Option<(P, LoadSource)>> {
        let Some(cache) = &self.inner.cache else {
            return Ok(None);
        };
        let flavor = self.flavor(fuel)?;
        let Some(component) = cache.load(&flavor.engine, flavor.key, digest) else {
            return Ok(None);
        };
        let loaded = ready(label, link(flavor, label, &component)?)?;
        self.inner.from_cache.fetch_add(1, Ordering::Relaxed);
        Ok(Some((loaded, LoadSource::Cache)))
    }
}

/// One turn to compile: whoever holds it compiles, the others wait, then read the cache.
type Turn = Arc<tokio::sync::Mutex<()>>;

/// The turns to compile, one per flavor (with fuel or not) and digest being compiled.
#[derive(Default)]
pub(super) struct Gates(std::sync::Mutex<HashMap<(bool, String), Turn>>);

impl Gates {
    /// The turn to compile the component `digest` with or without fuel.
    fn gate(&self, fuel: bool, digest: &str) -> Turn {
        let mut gates = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        gates.entry((fuel, digest.to_owned())).or_default().clone()
    }

    /// Forgets the turn once nobody waits for it or holds it.
    fn done(&self, fuel: bool, digest: &str) {
        let mut gates = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let key = (fuel, digest.to_owned());
        if gates
            .get(&key)
            .is_some_and(|gate| Arc::strong_count(gate) == 1)
        {
            gates.remove(&key);
        }
    }
}

/// Why a component did not compile: past the engine's cap on core instances or tables
/// (the pool's words for it), else invalid.
fn refused(label: &str, error: &wasmtime::Error, max_instances: u32) -> Error {
    let text = format!("{error:#}");
    match ["core module instances", "tables"]
        .into_iter()
        .find(|what| text.contains(&format!("{what}, which exceeds the configured maximum")))
    {
        Some(what) => Error::ComponentLimit {
            skill: label.to_owned(),
            message: format!(
                "the component creates more {} than the {max_instances} one component may have ({text})",
                if what == "tables" {
                    "tables"
                } else {
                    "core instances"
                }
            ),
        },
        None => Error::InvalidComponent {
            skill: label.to_owned(),
            reason: text,
        },
    }
}

/// Links `component` to the host's imports, ready to instantiate.
fn link(
    flavor: &Flavor,
    label: &str,
    component: &wasmtime::component::Component,
) -> Result<InstancePre<HostState>> {
    flavor
        .linker
        .instantiate_pre(component)
        .map_err(|e| Error::NotASkill {
            skill: label.to_owned(),
            reason: unprovided(&format!("{e:#}")),
        })
}

/// Why a component could not be linked (wasmtime's `error`), with the versions Evo has
/// of the interface it lacks when Evo has any.
fn unprovided(error: &str) -> String {
    let named = error
        .split('`')
        .skip(1)
        .step_by(2)
        .find(|name| name.contains(':') && name.contains('/'));
    let versions = named
        .and_then(|name| name.split_once('/'))
        .map(|(package, _)| {
            super::config_store::PROVIDED
                .iter()
                .filter(|provided| provided.starts_with(&format!("{package}/")))
                .copied()
                .collect::<Vec<_>>()
        })
        .filter(|versions| !versions.is_empty())
        .map(|versions| format!("; of that package Evo provides {}", versions.join(", ")))
        .unwrap_or_default();
    format!(
        "it imports something this host does not provide ({error}){versions}; components may import only WASI 0.2 (filesystem, clocks, random, cli, sockets, http, at any 0.2.x), wasi:config and evo:skill/context"
    )
}

/// An Evo skill's linked component with its `evo:skill/skill` export resolved (of any
/// supported version).
fn as_skill(label: &str, pre: InstancePre<HostState>) -> Result<SkillPre> {
    SkillPre::new(pre).map_err(|e| Error::NotASkill {
        skill: label.to_owned(),
        reason: format!("{e:#}"),
    })
}

/// A compiled, linked component and where its code came from.
pub(super) type Prepared = (SkillPre, LoadSource);

/// A component's bytes, in hand or in a file loaded before.
pub(super) enum Code {
    Bytes(Arc<[u8]>),
    File(PathBuf),
}

impl Code {
    fn len(&self) -> usize {
        match self {
            Self::Bytes(bytes) => bytes.len(),
            Self::File(path) => std::fs::metadata(path).map_or(0, |m| m.len() as usize),
        }
    }

    /// The bytes; a file's must still have the SHA-256 it was loaded with.
    fn bytes(&self, digest: &str) -> wasmtime::Result<Arc<[u8]>> {
        match self {
            Self::Bytes(bytes) => Ok(bytes.clone()),
            Self::File(path) => {
                let bytes = std::fs::read(path)
                    .map_err(|e| wasmtime::Error::msg(format!("{}: {e}", path.display())))?;
                if hex::encode(Sha256::digest(&bytes)) != digest {
                    return Err(wasmtime::Error::msg(format!(
                        "{} changed after it was loaded; load it again (restart the host, or `evo serve` picks it up at its next refresh)",
                        path.display()
                    )));
                }
                Ok(bytes.into())
            }
        }
    }
}
