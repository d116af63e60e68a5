//! Loading a component: describing it (from its embedded manifest, its record, or its
//! `manifest` export), compiling it or loading it from the cache, and linking it.

use std::path::Path;
use std::sync::Arc;

use sha2::{Digest, Sha256};

use super::compile::Code;
use super::contract::SkillPre;
use super::guest::run_guest;
use super::{ComponentInfo, Limits, MANIFEST_SECTION, WasmEngine, WasmSkill, call, inspect, known};
use crate::capabilities::{Grant, Policy};
use crate::error::{Error, Result};
use crate::skill::kernel::SkillContext;
use crate::skill::lanes::Streak;
use crate::skill::manifest::SkillMeta;
use crate::skill::validate::Schema;

impl WasmEngine {
    /// Loads a skill from a `.wasm` file; see [`WasmEngine::load_bytes`].
    ///
    /// With a compile cache, a file loaded before and unchanged since (its fingerprint:
    /// identity, size, times and sampled bytes) is not read at all: the skill is
    /// described from what was learnt then, and its compiled code is loaded on its first
    /// call ([`WasmSkill::prepare`]).
    pub async fn load_file(&self, path: &Path, policy: &Policy) -> Result<WasmSkill> {
        let label = label_of(path);
        let Some(known) = &self.inner.known else {
            let bytes = read_file(path).await?;
            return self.load_bytes(&label, bytes, policy).await;
        };
        let path = std::path::absolute(path).map_err(Error::io_at(path))?;
        let fingerprint = known::Fingerprint::of(&path).map_err(Error::io_at(&path))?;
        let seen = known.get(&path, &fingerprint);
        self.load_seen(known, &label, path, fingerprint, seen, policy)
            .await
    }

    /// [`WasmEngine::load_file`] of the file at `path` (absolute) with `fingerprint`,
    /// of which `seen` is what was learnt before, if anything.
    async fn load_seen(
        &self,
        known: &known::KnownFiles,
        label: &str,
        path: std::path::PathBuf,
        fingerprint: known::Fingerprint,
        seen: Option<known::Known>,
        policy: &Policy,
    ) -> Result<WasmSkill> {
        if let Some(seen) = seen
            && seen.plain.is_none()
            && let Some(manifest) = &seen.manifest
            && let Ok(meta) = SkillMeta::from_json(manifest.get())
        {
            let info = ComponentInfo {
                api_version: seen.api_version,
                sdk: seen.sdk,
                manifest: None,
            };
            let limits = Limits::resolve(&meta, &self.inner.config.limits);
            let origin = call::Origin::Record(path);
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
            .load_described(label, bytes, policy, Some(&path))
            .await?;
        // A record stands for a skill that registers: its schemas are compiled when it
        // is, which a later load from the record takes for granted (and defers).
        let meta = skill.meta();
        if Schema::compile(&meta.input).is_err() || Schema::compile(&meta.output).is_err() {
            return Ok(skill);
        }
        known.put(
            &path,
            fingerprint,
            known::Known {
                digest: skill.digest().to_owned(),
                api_version: skill.info().api_version.clone(),
                sdk: skill.info().sdk.clone(),
                manifest: known::Manifest::new(manifest),
                plain: None,
            },
        );
        Ok(skill)
    }

    /// Loads what a `.wasm` file holds: an Evo skill, or else a plain component whose
    /// functions are skills (described by what `sidecar` reads, the manifest beside it,
    /// read only for a plain component).
    ///
    /// With a compile cache, a plain component loaded before, unchanged since and with
    /// the same sidecar is described from what was learnt then, as an Evo skill is
    /// ([`WasmEngine::load_file`]), and compiled or loaded from the cache on its first
    /// call ([`PlainComponent::prepare`](super::PlainComponent::prepare)).
    pub async fn load_any_file(
        &self,
        path: &Path,
        sidecar: impl FnOnce() -> Result<Option<crate::skill::manifest::RawMeta>>,
        policy: &Policy,
    ) -> Result<super::WasmFile> {
        self.load_any_open(path, None, sidecar, policy).await
    }

    /// [`WasmEngine::load_any_file`] of the file at `path`, which `open` is when given
    /// (opened by the listing of its directory): its fingerprint is taken from it.
    pub(crate) async fn load_any_open(
        &self,
        path: &Path,
        open: Option<super::OpenComponent>,
        sidecar: impl FnOnce() -> Result<Option<crate::skill::manifest::RawMeta>>,
        policy: &Policy,
    ) -> Result<super::WasmFile> {
        let label = label_of(path);
        let mut sidecar = Some(sidecar);
        let mut read_sidecar = || sidecar.take().map_or(Ok(None), |read| read());
        let mut read_before = None;
        let known_at = match &self.inner.known {
            Some(known) => {
                let path = std::path::absolute(path).map_err(Error::io_at(path))?;
                let fingerprint = match &open {
                    Some(open) => known::Fingerprint::of_open(open),
                    None => known::Fingerprint::of(&path),
                }
                .map_err(Error::io_at(&path))?;
                drop(open);
                let seen = known.get(&path, &fingerprint);
                if let Some(plain) = seen.as_ref().and_then(|s| s.plain.as_ref()) {
                    let raw = read_sidecar()?;
                    if plain.sidecar == known::sidecar_key(raw.as_ref()) {
                        let component = self.assemble(
                            &label,
                            raw,
                            &plain.learnt,
                            policy,
                            super::plain::Origin::File(path),
                        )?;
                        return Ok(super::WasmFile::Component(component));
                    }
                    read_before = Some(raw);
                }
                Some((known, path, fingerprint, seen))
            }
            None => None,
        };
        let loaded = match &known_at {
            Some((known, path, fingerprint, seen)) => {
                let seen = seen.clone().filter(|s| s.plain.is_none());
                self.load_seen(
                    known,
                    &label,
                    path.clone(),
                    fingerprint.clone(),
                    seen,
                    policy,
                )
                .await
            }
            None => self.load_file(path, policy).await,
        };
        let not_evo = match loaded {
            Ok(skill) => return Ok(super::WasmFile::Skill(skill)),
            Err(e @ Error::NotASkill { .. }) => e,
            Err(e) => return Err(e),
        };
        let bytes = read_file(path).await?;
        if inspect::scan(&label, &bytes)?.is_evo_skill() {
            return Err(not_evo);
        }
        let raw = match read_before {
            Some(raw) => raw,
            None => read_sidecar()?,
        };
        let key = known::sidecar_key(raw.as_ref());
        let (component, learnt) = self.learn_component(&label, bytes, raw, policy).await?;
        if let Some((known, path, fingerprint, _)) = known_at {
            known.put(
                &path,
                fingerprint,
                known::Known {
                    digest: learnt.digest.clone(),
                    api_version: String::new(),
                    sdk: None,
                    manifest: None,
                    plain: Some(known::KnownPlain {
                        sidecar: key,
                        learnt,
                    }),
                },
            );
        }
        Ok(super::WasmFile::Component(component))
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
                let (json, meta) = read_manifest(self, label, &plain.0).await?;
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

    pub(super) fn check_size(&self, label: &str, len: usize) -> Result<()> {
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
        Ok(read_manifest(self, label, &pre).await?.0)
    }

    /// Lets the code compiled for `compiled` serve `described`, the same component with
    /// its manifest embedded ([`super::with_manifest`]), so that a build compiles what
    /// it writes once: the manifest is a custom section, which compiled code never
    /// reads. Does nothing when the two differ in anything else, or without a compile
    /// cache.
    pub(crate) fn share_compiled(
        &self,
        label: &str,
        compiled: &[u8],
        described: &[u8],
    ) -> Result<()> {
        let Some(cache) = &self.inner.cache else {
            return Ok(());
        };
        if inspect::without_manifest(label, compiled, 0)?
            != inspect::without_manifest(label, described, 0)?
        {
            return Ok(());
        }
        let digest = |bytes: &[u8]| hex::encode(Sha256::digest(bytes));
        cache.share(&digest(compiled), &digest(described));
        Ok(())
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
            problems: vec![crate::skill::manifest::Problem {
                field: format!("({MANIFEST_SECTION})"),
                message: "the manifest embedded in the component is not the one its `manifest` export returns"
                    .to_owned(),
                fix: "build it again with `evo skill build`, which embeds the export's manifest"
                    .to_owned(),
            }],
        })
    }
}

/// A file's name, for messages and as a component's name when nothing else names it.
fn label_of(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
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

/// Calls the `manifest` export of a component not yet described, with no grants: its
/// JSON, and the manifest it describes.
pub(super) async fn read_manifest(
    engine: &WasmEngine,
    label: &str,
    pre: &SkillPre,
) -> Result<(String, SkillMeta)> {
    let limits = Limits::for_manifest();
    let grant = Arc::new(Grant::default());
    let (result, guest) = run_guest(
        engine,
        pre,
        label,
        &limits,
        &grant,
        &[],
        &SkillContext::detached(),
        &Streak::default(),
        None,
        |plugin, store| Box::pin(async move { plugin.manifest(store).await }),
    )
    .await?;
    let json = result.map_err(|e| guest.classify(e))?;
    guest.check_output(json.len())?;
    let meta = parse_manifest(label, &json)?;
    Ok((json, meta))
}
