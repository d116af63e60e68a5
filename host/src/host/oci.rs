//! Skills from OCI registries: publish, install (by tag, by digest, or exactly as the
//! lock file pins), and update by following a tag.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::json;

use super::Host;
use crate::error::{Error, Result};
use crate::oci::lock::{LOCK_FILE, Lock, Locked};
use crate::oci::{Kind, Reference, Registries, Registry, RegistrySource, Signer};
use crate::packages::{InstallOptions, InstallRecord, Outcome, SkillManager};
use crate::skill::observe::store::{Record, Status};

/// How to install from a registry.
#[derive(Default)]
pub struct RegistryInstall {
    /// Replace an installed skill of the same name.
    pub overwrite: bool,
    /// Install the digest the lock file pins for the reference's repository, whatever
    /// its tag names now.
    pub locked: bool,
    /// Told how the download goes (bytes so far, bytes in all).
    pub progress: Option<DownloadProgress>,
    /// The manifest digest the reference must name (what a user was shown and
    /// confirmed): another is refused with `TAG_MOVED` and nothing is installed.
    pub expect_digest: Option<String>,
    /// Install under this name instead of the skill's own (`--as`); with `locked`
    /// and none given, the name the lock file pins it under.
    pub name: Option<String>,
}

/// Where a pulled skill goes: over an installed one or not, under which name (its own
/// when `None`).
#[derive(Debug, Clone, Default)]
pub(super) struct Target {
    pub(super) overwrite: bool,
    pub(super) name: Option<String>,
}

/// Called as a download goes: bytes so far, bytes in all.
pub type DownloadProgress = Box<dyn FnMut(u64, u64) + Send>;

impl std::fmt::Debug for RegistryInstall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegistryInstall")
            .field("overwrite", &self.overwrite)
            .field("locked", &self.locked)
            .field("expect_digest", &self.expect_digest)
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// What an install from a registry did.
#[derive(Debug, Clone, Serialize)]
pub struct RegistryInstalled {
    /// The install itself.
    #[serde(flatten)]
    pub outcome: Outcome,
    /// Where it came from, as the install record keeps it.
    pub source: RegistrySource,
    /// With `--locked`, the digest the tag names now when it is not the one installed:
    /// reported, not followed.
    #[serde(rename = "tagMovedTo", skip_serializing_if = "Option::is_none")]
    pub tag_moved_to: Option<String>,
}

/// What installing a reference would install: pulled, its signature checked under
/// `[trust]`, and checked as an install is, in a scratch directory.
#[derive(Debug, Clone, Serialize)]
pub struct Preview {
    /// The skill (or component) it installs as.
    pub name: String,
    /// Where it comes from: the reference, the manifest digest it names now, the signer.
    pub source: RegistrySource,
    /// What would be installed, with what it asks for.
    pub skill: InstallRecord,
}

/// Runs `work` (blocking network I/O) off the async threads.
pub(super) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| Error::Engine(format!("a registry transfer stopped: {e}")))?
}

impl Host {
    /// The lock file: beside `evo.toml` when one was read, else in the data directory.
    pub fn lock_path(&self) -> PathBuf {
        self.config()
            .file
            .as_deref()
            .and_then(Path::parent)
            .unwrap_or(&self.inner.data_dir)
            .join(LOCK_FILE)
    }

    /// Forgets an uninstalled skill in the lock file (`--locked` would bring it back);
    /// a lock file that cannot be read or written is left as it is, with a warning.
    pub(super) fn unlock(&self, name: &str) {
        let path = self.lock_path();
        let result = Lock::read(&path).and_then(|mut lock| {
            if lock.remove(name) {
                lock.write(&path)?;
            }
            Ok(())
        });
        if let Err(e) = result {
            tracing::warn!("{name} was uninstalled but stays in the lock file: {e}");
        }
    }

    /// The keys `[trust] keys` lists, as the signers they would name; an error names a
    /// key that does not read.
    pub fn trusted_keys(&self) -> Result<Vec<Signer>> {
        Ok(crate::oci::TrustedKey::read_all(&self.config().trust.keys)?
            .into_iter()
            .map(|key| Signer {
                key: key.name,
                fingerprint: key.fingerprint,
            })
            .collect())
    }

    pub(super) fn registry_session(&self) -> Result<Registry> {
        let config = self.config();
        Registry::new(
            Registries::new(config.registries.clone(), self.secrets()),
            &config.trust,
        )
    }

    /// Largest component accepted from a registry (`[engine] max_component_mb`).
    fn component_cap(&self) -> u64 {
        self.config()
            .engine
            .max_component_mb
            .saturating_mul(1 << 20)
    }

    /// Installs the skill `reference` names (`oci://REGISTRY/REPOSITORY[:TAG|@DIGEST]`)
    /// and pins it in the lock file. A tag the lock file pins at another digest is not
    /// followed (`TAG_MOVED`); `evo skill update` follows it. With `locked`, the pinned
    /// digest is installed and a moved tag is reported.
    pub async fn install_from_registry(
        &self,
        reference: &str,
        options: RegistryInstall,
    ) -> Result<RegistryInstalled> {
        let r = Reference::parse(reference)?;
        let lock_path = self.lock_path();
        let lock = Lock::read(&lock_path)?;
        let pinned = lock.installed_from(&r.name()).cloned();
        if options.locked && pinned.is_none() {
            return Err(Error::Registry {
                code: "NOT_LOCKED",
                message: format!(
                    "{} is not in the lock file {}: --locked installs only what it pins",
                    r.name(),
                    lock_path.display()
                ),
                transient: false,
            });
        }
        let session = self.registry_session()?;
        let now = match r.digest {
            Some(_) => None,
            None => {
                let (session, asked) = (session.clone(), r.clone());
                Some(blocking(move || session.resolve(&asked)).await?)
            }
        };
        let (digest, moved) = match (&pinned, options.locked) {
            (Some(entry), true) => {
                if let Some(asked) = r.digest.as_deref().filter(|d| *d != entry.digest) {
                    return Err(moved_error(&r, &entry.digest, asked, &lock_path));
                }
                let locked_tag = Reference::parse(&entry.reference).ok().and_then(|l| l.tag);
                if r.tag.is_some() && r.tag != locked_tag {
                    return Err(Error::Registry {
                        code: "NOT_LOCKED",
                        message: format!(
                            "the lock file {} pins {}, not {r}: --locked installs only what it pins",
                            lock_path.display(),
                            entry.reference
                        ),
                        transient: false,
                    });
                }
                let moved = now.filter(|d| *d != entry.digest);
                (entry.digest.clone(), moved)
            }
            (entry, _) => {
                let digest = r.digest.clone().or(now).unwrap_or_default();
                if let Some(entry) = entry
                    && entry.reference == r.to_string()
                    && entry.digest != digest
                {
                    return Err(moved_error(&r, &entry.digest, &digest, &lock_path));
                }
                (digest, None)
            }
        };
        if let Some(expected) = options.expect_digest.as_deref().filter(|e| *e != digest) {
            return Err(Error::Registry {
                code: "TAG_MOVED",
                message: format!(
                    "{r} names {digest} now, not {expected}, the one shown before the install: nothing was installed"
                ),
                transient: false,
            });
        }
        if options.locked
            && let Some(already) = self.installed_at(&r, &digest, moved.as_deref())
        {
            return Ok(already);
        }
        // A locked install keeps the name the lock file has it under.
        let name = options.name.or_else(|| {
            pinned
                .as_ref()
                .filter(|_| options.locked)
                .map(|entry| entry.name.clone())
        });
        let target = Target {
            overwrite: options.overwrite,
            name,
        };
        let installed = self
            .pull_and_install(session, &r, &digest, target, options.progress)
            .await?;
        let mut lock = Lock::read(&lock_path)?;
        lock.put(Locked {
            name: installed.name.clone(),
            reference: installed_reference(&r, pinned.as_ref(), options.locked),
            digest: digest.clone(),
            signer: installed.source.signer.as_ref().map(|s| s.key.clone()),
        });
        lock.write(&lock_path)?;
        let mut outcome = installed.outcome;
        if let Some(now) = &moved {
            let warning = format!(
                "{} now names {now}; installed {digest}, as the lock file pins (`evo skill update {}` follows the tag)",
                r, outcome.name
            );
            tracing::warn!("{warning}");
            outcome.warnings.push(warning);
        }
        Ok(RegistryInstalled {
            outcome,
            source: installed.source,
            tag_moved_to: moved,
        })
    }

    /// The skill `r` installed, when it is installed at `digest` already: what a
    /// `--locked` install of it answers, changing nothing (`moved`: the digest the tag
    /// names now, when another).
    fn installed_at(
        &self,
        r: &Reference,
        digest: &str,
        moved: Option<&str>,
    ) -> Option<RegistryInstalled> {
        let lock = Lock::read(&self.lock_path()).ok()?;
        let name = lock.installed_from(&r.name())?.name.clone();
        let dir = crate::paths::skills_dir(&self.inner.data_dir).join(&name);
        let record = InstallRecord::read(&dir)?;
        let source = record.source.clone().filter(|s| s.digest == digest)?;
        let mut warnings = Vec::new();
        if let Some(now) = moved {
            warnings.push(format!(
                "{r} now names {now}; {digest} stays installed, as the lock file pins (`evo skill update {name}` follows the tag)"
            ));
        }
        Some(RegistryInstalled {
            outcome: Outcome {
                success: true,
                name,
                message: "Skill already installed at its pinned digest: nothing changed".into(),
                digest: Some(record.digest.clone()),
                skill: Some(record),
                warnings,
            },
            source,
            tag_moved_to: moved.map(str::to_owned),
        })
    }

    /// What installing `reference` would install, without installing it (see
    /// [`Preview`]): shown to a user before they confirm an install, which then names
    /// the digest shown ([`RegistryInstall::expect_digest`]).
    pub async fn preview_from_registry(&self, reference: &str) -> Result<Preview> {
        let r = Reference::parse(reference)?;
        let session = self.registry_session()?;
        let digest = match &r.digest {
            Some(digest) => digest.clone(),
            None => {
                let (session, asked) = (session.clone(), r.clone());
                blocking(move || session.resolve(&asked)).await?
            }
        };
        let scratch = tempfile::tempdir().map_err(Error::io_at(&std::env::temp_dir()))?;
        let checker = SkillManager::new(scratch.path()).with_loader(self.inner.loader.clone());
        let (outcome, source) = self
            .pull_into(
                &checker,
                session,
                &r,
                &digest,
                InstallOptions::default(),
                None,
            )
            .await?;
        Ok(Preview {
            name: outcome.name,
            source,
            skill: outcome.skill.unwrap_or_default(),
        })
    }

    /// Pulls `digest` from `r`'s repository and installs it, writing what happened (or
    /// why it was refused) to the security log.
    pub(super) async fn pull_and_install(
        &self,
        session: Registry,
        r: &Reference,
        digest: &str,
        target: Target,
        progress: Option<DownloadProgress>,
    ) -> Result<Installing> {
        let result = async {
            let options = InstallOptions {
                overwrite: target.overwrite,
                name: target.name,
                ..InstallOptions::default()
            };
            let (outcome, source) = self
                .pull_into(&self.manager()?, session, r, digest, options, progress)
                .await?;
            let outcome = self.installed(outcome).await?;
            Ok(Installing {
                name: outcome.name.clone(),
                outcome,
                source,
            })
        }
        .await;
        self.log_install(
            r,
            digest,
            result
                .as_ref()
                .map(|done| (done.name.as_str(), done.source.signer.as_ref())),
        );
        result
    }

    /// Pulls `digest` from `r`'s repository and installs it with `manager` (not yet
    /// registered with this host); returns the outcome and the source recorded.
    async fn pull_into(
        &self,
        manager: &SkillManager,
        session: Registry,
        r: &Reference,
        digest: &str,
        options: InstallOptions<'_>,
        progress: Option<DownloadProgress>,
    ) -> Result<(Outcome, RegistrySource)> {
        let pinned = r.at(digest);
        let caps = crate::oci::Caps {
            component: self.component_cap(),
            archive: crate::packages::MAX_ARCHIVE_BYTES,
        };
        let mut progress = progress;
        let pulled = blocking(move || {
            let progress = progress
                .as_mut()
                .map(|p| p.as_mut() as crate::oci::client::Progress<'_>);
            session.pull(&pinned, caps, progress)
        })
        .await?;
        let source = RegistrySource {
            reference: r.to_string(),
            digest: pulled.digest.clone(),
            signer: pulled.signer.clone(),
        };
        let options = InstallOptions {
            source: Some(source.clone()),
            ..options
        };
        let mut outcome = match pulled.kind {
            Kind::Component => {
                let file_name = format!("{}.wasm", r.basename());
                manager
                    .install_component(&pulled.bytes, &file_name, options)
                    .await?
            }
            Kind::Skill => manager.install_archive(&pulled.bytes, options).await?,
        };
        outcome.warnings.extend(pulled.warnings);
        Ok((outcome, source))
    }

    /// Installs a skill another node installed from a registry by pulling the same
    /// manifest digest, refused unless it is the skill and package digest the shared
    /// catalogue holds.
    #[cfg(feature = "postgres")]
    pub(super) async fn materialise_pulled(
        &self,
        manager: &SkillManager,
        source: &RegistrySource,
        expect: crate::packages::Expected<'_>,
    ) -> Result<()> {
        let r = Reference::parse(&source.reference)?;
        let options = InstallOptions {
            overwrite: true,
            expect: Some(expect),
            // Under the name the catalogue has it (the skill's own, or given `--as`).
            name: Some(expect.name.to_owned()),
            ..InstallOptions::default()
        };
        let session = self.registry_session()?;
        let result = self
            .pull_into(manager, session, &r, &source.digest, options, None)
            .await;
        self.log_install(
            &r,
            &source.digest,
            result
                .as_ref()
                .map(|(outcome, source)| (outcome.name.as_str(), source.signer.as_ref())),
        );
        result.map(drop)
    }

    /// Writes an install from a registry (the skill and its signer), or why it failed,
    /// to the security log: the `evo::security` target and a `skill_install` row of the
    /// call history (`blocked` for a refusal of the artifact itself).
    fn log_install(
        &self,
        r: &Reference,
        digest: &str,
        result: std::result::Result<(&str, Option<&Signer>), &Error>,
    ) {
        let (status, error) = match result {
            Ok((name, signer)) => {
                let signer = signer.map_or("unsigned", |s| s.key.as_str());
                tracing::info!(target: "evo::security", skill = %name, reference = %r, %digest, signer, "installed from a registry");
                (Status::Success, None)
            }
            Err(e) => {
                let refusal = matches!(
                    e.code(),
                    "SIGNATURE_REQUIRED"
                        | "SIGNATURE_UNTRUSTED"
                        | "SIGNATURE_MISMATCH"
                        | "DIGEST_MISMATCH"
                        | "ARTIFACT_INVALID"
                        | "ARTIFACT_TOO_LARGE"
                        | "INVALID_SKILL_STRUCTURE"
                );
                if refusal {
                    tracing::warn!(target: "evo::security", reference = %r, %digest, "blocked: [{}] {e}", e.code());
                }
                let status = if refusal {
                    Status::Blocked
                } else {
                    Status::Error
                };
                (status, Some((format!("[{}] {e}", e.code()), e.hint())))
            }
        };
        let (error, hint) = error.map_or((None, None), |(error, hint)| (Some(error), hint));
        self.inner.kernel.record(Record {
            id: 0,
            at_ms: crate::unix_millis() as i64,
            caller: "registry".into(),
            task_id: String::new(),
            tool: "skill_install".into(),
            arguments: crate::skill::observe::history::redact(
                &json!({ "reference": r.to_string(), "digest": digest }),
            ),
            status,
            duration_ms: 0.0,
            error,
            hint: hint.map(str::to_owned),
            node: String::new(),
        });
        // Installs are rare and the CLI process ends next: stored now, not at a flush.
        if let Err(e) = self.flush_history() {
            tracing::warn!("the install could not be written to the call history: {e}");
        }
    }
}

/// An install from a registry, before the lock file is written.
pub(super) struct Installing {
    pub(super) name: String,
    pub(super) outcome: Outcome,
    pub(super) source: RegistrySource,
}

/// The reference the lock file keeps: the one given, or the pinned one's with `--locked`.
fn installed_reference(r: &Reference, pinned: Option<&Locked>, locked: bool) -> String {
    match pinned {
        Some(entry) if locked => entry.reference.clone(),
        _ => r.to_string(),
    }
}

fn moved_error(r: &Reference, pinned: &str, now: &str, lock: &Path) -> Error {
    Error::Registry {
        code: "TAG_MOVED",
        message: format!(
            "{r} names {now} now, but the lock file {} pins {pinned}: a moved tag is not followed without being asked",
            lock.display()
        ),
        transient: false,
    }
}
