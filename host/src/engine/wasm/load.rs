//! Loading a component: describing it (from its embedded manifest, its record, or its
//! `manifest` export), compiling it or loading it from the cache, and linking it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use sha2::{Digest, Sha256};

use super::{
    ComponentInfo, Flavor, HostState, Limits, LoadSource, MANIFEST_SECTION, WasmEngine, WasmSkill,
    bindings, call, inspect, known,
};
use crate::capabilities::Policy;
use crate::error::{Error, Result};
use crate::skill::meta::SkillMeta;

impl WasmEngine {
    /// Loads a skill from a `.wasm` file; see [`WasmEngine::load_bytes`].
    ///
    /// With a compile cache, a file loaded before and unchanged since (its fingerprint:
    /// identity, size, times and sampled bytes) is not read at all: the skill is
    /// described from what was learnt then, and its compiled code is loaded on its first
    /// call ([`WasmSkill::prepare`]).
    pub async fn load_file(&self, path: &Path, policy: &Policy) -> Result<WasmSkill> {
        let label = path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        let Some(known) = &self.inner.known else {
            let bytes = read_file(path).await?;
            return self.load_bytes(&label, bytes, policy).await;
        };
        let path = std::path::absolute(path).map_err(Error::io_at(path))?;
        let fingerprint = known::Fingerprint::of(&path).map_err(Error::io_at(&path))?;
        if let Some(seen) = known.get(&path, &fingerprint)
            && let Ok(meta) = SkillMeta::from_json(&seen.manifest)
        {
            let info = ComponentInfo {
                api_version: seen.api_version,
                sdk: seen.sdk,
                manifest: None,
            };
            let limits = Limits::resolve(&meta, &self.inner.config.limits);
            let origin = call::Origin::File(path);
            return Ok(WasmSkill::new(
                self.clone(),
                meta,
                info,
                seen.digest,
                limits,
                policy,
                origin,
            ));
        }
        let bytes = read_file(&path).await?;
        let (skill, manifest) = self
            .load_described(&label, bytes, policy, Some(&path))
            .await?;
        known.put(
            &path,
            fingerprint,
            known::Known {
                digest: skill.digest().to_owned(),
                api_version: skill.info().api_version.clone(),
                sdk: skill.info().sdk.clone(),
                manifest,
            },
        );
        Ok(skill)
    }

    /// Loads a skill: checks the API version before compiling, reads the manifest (from
    /// its `MANIFEST_SECTION` without instantiating it, else from its `manifest`
    /// export), compiles it or loads it from the cache, and grants capabilities as
    /// requested ∩ `policy`.
    pub async fn load_bytes(
        &self,
        label: &str,
        bytes: Vec<u8>,
        policy: &Policy,
    ) -> Result<WasmSkill> {
        Ok(self.load_described(label, bytes, policy, None).await?.0)
    }

    /// The skill in `bytes` and its manifest's JSON. A component read from `file` that
    /// embeds its manifest is compiled on its first call (from the file, whose digest is
    /// checked then).
    async fn load_described(
        &self,
        label: &str,
        bytes: Vec<u8>,
        policy: &Policy,
        file: Option<&Path>,
    ) -> Result<(WasmSkill, String)> {
        self.check_size(label, bytes.len())?;
        let info = inspect(label, &bytes)?;
        let digest = hex::encode(Sha256::digest(&bytes));
        let bytes: Arc<[u8]> = bytes.into();
        let embedded = match &info.manifest {
            Some(json) => Some((json.clone(), parse_manifest(label, json)?)),
            None => None,
        };
        let (json, meta, prepared) = match embedded {
            Some((json, meta)) => (json, meta, None),
            None => {
                let plain = self
                    .prepare(label, &digest, Code::Bytes(bytes.clone()), false)
                    .await?;
                let (json, meta) = call::read_manifest(self, label, &plain.0).await?;
                (json, meta, Some(plain))
            }
        };
        let limits = Limits::resolve(&meta, &self.inner.config.limits);
        let fuel = limits.fuel.is_some();
        let origin = match (prepared, file) {
            (Some(plain), _) if !fuel => call::Origin::Ready(plain),
            (None, Some(file)) => call::Origin::File(file.to_owned()),
            _ => call::Origin::Ready(
                self.prepare(label, &digest, Code::Bytes(bytes), fuel)
                    .await?,
            ),
        };
        let skill = WasmSkill::new(
            self.clone(),
            meta,
            ComponentInfo {
                manifest: None,
                ..info
            },
            digest,
            limits,
            policy,
            origin,
        );
        Ok((skill, json))
    }

    fn check_size(&self, label: &str, len: usize) -> Result<()> {
        let max = self.inner.config.max_component_bytes;
        if len as u64 > max {
            return Err(Error::ComponentLimit {
                skill: label.to_owned(),
                message: format!(
                    "the component is {:.1} MB; components may be at most {} MiB, so it was not compiled",
                    len as f64 / 1e6,
                    max >> 20
                ),
            });
        }
        Ok(())
    }

    /// The manifest JSON that the component's `manifest` export returns (an instance
    /// with no grants, called once), validated; any embedded manifest is not read. This
    /// is what `evo skill build` embeds.
    pub async fn exported_manifest(&self, label: &str, bytes: Vec<u8>) -> Result<String> {
        self.check_size(label, bytes.len())?;
        inspect(label, &bytes)?;
        let digest = hex::encode(Sha256::digest(&bytes));
        let (pre, _) = self
            .prepare(label, &digest, Code::Bytes(bytes.into()), false)
            .await?;
        Ok(call::read_manifest(self, label, &pre).await?.0)
    }

    /// Refuses a component whose embedded manifest (`MANIFEST_SECTION`) says something
    /// other than its `manifest` export: a host reads the section without instantiating
    /// the component, so the two must tell the same story. The skill manager checks this
    /// at install, where the operator sees what a skill asks for.
    pub async fn verify_embedded_manifest(&self, label: &str, bytes: Vec<u8>) -> Result<()> {
        let Some(embedded) = inspect(label, &bytes)?.manifest else {
            return Ok(());
        };
        let exported = self.exported_manifest(label, bytes).await?;
        let parse = |json: &str| serde_json::from_str::<serde_json::Value>(json).ok();
        if parse(&embedded).is_some() && parse(&embedded) == parse(&exported) {
            return Ok(());
        }
        Err(Error::InvalidManifest {
            skill: label.to_owned(),
            problems: vec![crate::skill::meta::Problem {
                field: format!("({MANIFEST_SECTION})"),
                message: "the manifest embedded in the component is not the one its `manifest` export returns"
                    .to_owned(),
                fix: "build it again with `evo skill build`, which embeds the export's manifest"
                    .to_owned(),
            }],
        })
    }

    /// Compiles `code` (or loads it from the cache) for the flavor with or without
    /// fuel, and links it.
    pub(super) async fn prepare(
        &self,
        label: &str,
        digest: &str,
        code: Code,
        fuel: bool,
    ) -> Result<Prepared> {
        let engine = self.clone();
        let digest = digest.to_owned();
        let label_owned = label.to_owned();
        let deadline = self.inner.config.compile_deadline;
        // A cache hit maps the artifact and links it in about 0.1 ms: less than a trip
        // to the blocking pool and back would add. A compile goes there.
        if let Some(cache) = &self.inner.cache {
            let flavor = self.flavor(fuel)?;
            if let Some(component) = cache.load(&flavor.engine, flavor.key, &digest) {
                return link(flavor, label, component, LoadSource::Cache);
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
            link(flavor, &label_owned, component, LoadSource::Compiled)
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
    component: wasmtime::component::Component,
    source: LoadSource,
) -> Result<Prepared> {
    let instance_pre = flavor.linker.instantiate_pre(&component).map_err(|e| Error::NotASkill {
        skill: label.to_owned(),
        reason: format!("it imports something this host does not provide ({e:#}); skills may import only WASI p2 and evo:skill/context"),
    })?;
    let pre = bindings::PluginPre::new(instance_pre).map_err(|e| Error::NotASkill {
        skill: label.to_owned(),
        reason: format!("{e:#}"),
    })?;
    Ok((pre, source))
}

/// A compiled, linked component and where its code came from.
pub(super) type Prepared = (bindings::PluginPre<HostState>, LoadSource);

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

async fn read_file(path: &Path) -> Result<Vec<u8>> {
    tokio::task::spawn_blocking({
        let path = path.to_owned();
        move || std::fs::read(&path)
    })
    .await
    .map_err(|e| Error::Engine(e.to_string()))?
    .map_err(Error::io_at(path))
}

/// The manifest `json` of the component `label`, validated.
pub(super) fn parse_manifest(label: &str, json: &str) -> Result<SkillMeta> {
    SkillMeta::from_json(json).map_err(|problems| Error::InvalidManifest {
        skill: label.to_owned(),
        problems,
    })
}
