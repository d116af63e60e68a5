//! Compiling a component (or loading it from the compile cache) and linking it to the
//! host's imports: what loading a skill and its first call both need.

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
        let engine = self.clone();
        let digest = digest.to_owned();
        let label_owned = label.to_owned();
        let deadline = self.inner.config.compile_deadline;
        // A cache hit maps the artifact and links it in about 0.1 ms: less than a trip
        // to the blocking pool and back would add. A compile goes there.
        if let Some(cache) = &self.inner.cache {
            let flavor = self.flavor(fuel)?;
            if let Some(component) = cache.load(&flavor.engine, flavor.key, &digest) {
                let loaded = ready(label, link(flavor, label, &component)?)?;
                self.inner.from_cache.fetch_add(1, Ordering::Relaxed);
                return Ok((loaded, LoadSource::Cache));
            }
        }
        self.inner.config.on_compile.tell(label, code.len());
        let compile = tokio::task::spawn_blocking(move || {
            let flavor = engine.flavor(fuel)?;
            let compiled = code
                .bytes(&digest)
                .and_then(|bytes| match &engine.inner.cache {
                    Some(cache) => cache.compile(&flavor.engine, flavor.key, &digest, &bytes),
                    None => wasmtime::component::Component::new(&flavor.engine, &bytes[..]),
                });
            let component = compiled.map_err(|e| Error::InvalidComponent {
                skill: label_owned.clone(),
                reason: format!("{e:#}"),
            })?;
            let linked = link(flavor, &label_owned, &component)?;
            let loaded = ready(&label_owned, linked)?;
            engine.inner.compiled.fetch_add(1, Ordering::Relaxed);
            Ok((loaded, LoadSource::Compiled))
        });
        match tokio::time::timeout(deadline, compile).await {
            Ok(joined) => joined.map_err(|e| Error::Engine(e.to_string()))?,
            Err(_) => Err(Error::ComponentLimit {
                skill: label.to_owned(),
                message: format!(
                    "compiling the component took longer than the compile deadline ({} ms); the compilation finishes in the background into the compile cache, so a later load may succeed",
                    deadline.as_millis()
                ),
            }),
        }
    }
}

/// Links `component` to the host's imports, ready to instantiate.
fn link(
    flavor: &Flavor,
    label: &str,
    component: &wasmtime::component::Component,
) -> Result<InstancePre<HostState>> {
    flavor.linker.instantiate_pre(component).map_err(|e| Error::NotASkill {
        skill: label.to_owned(),
        reason: format!("it imports something this host does not provide ({e:#}); components may import only WASI p2 (filesystem, clocks, random, cli, sockets, http), wasi:config and evo:skill/context"),
    })
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

