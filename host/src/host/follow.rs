//! Following what was installed from a registry: the lock file's pins installed as
//! they are (`evo skill install --locked`), and the tags skills came from followed
//! (`evo skill update`).

use serde::Serialize;

use super::Host;
use super::oci::{RegistryInstall, RegistryInstalled, Target, blocking};
use crate::error::{Error, Result};
use crate::oci::lock::{Lock, Locked};
use crate::oci::{Reference, Signer};
use crate::packages::InstallRecord;

/// What following a tag did.
#[derive(Debug, Clone, Serialize)]
pub struct Updated {
    /// The skill.
    pub name: String,
    /// The reference followed.
    pub reference: String,
    /// The digest installed before.
    pub from: String,
    /// The digest installed now (the same when the tag had not moved).
    pub to: String,
    /// Who signed what is installed now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signer: Option<Signer>,
}

impl Host {
    /// Installs every skill the lock file pins, at its pinned digest; those installed
    /// at that digest already are left as they are.
    pub async fn install_locked(&self) -> Result<Vec<RegistryInstalled>> {
        let lock = Lock::read(&self.lock_path())?;
        let root = crate::paths::skills_dir(&self.inner.data_dir);
        let mut done = Vec::new();
        for entry in lock.skills() {
            let current = InstallRecord::read(&root.join(&entry.name));
            if current
                .as_ref()
                .and_then(|r| r.source.as_ref())
                .is_some_and(|s| s.digest == entry.digest)
            {
                continue;
            }
            let options = RegistryInstall {
                overwrite: true,
                locked: true,
                ..RegistryInstall::default()
            };
            done.push(
                self.install_from_registry(&entry.reference, options)
                    .await?,
            );
        }
        Ok(done)
    }

    /// Follows the tag skill `name` was installed from: when it names another digest
    /// now, that is pulled (signature checked), installed over the old one, and pinned.
    pub async fn update_from_registry(&self, name: &str) -> Result<Updated> {
        let dir = crate::paths::skills_dir(&self.inner.data_dir).join(name);
        if !crate::skill::manifest::is_valid_name(name) || !dir.is_dir() {
            return Err(Error::SkillNotFound {
                name: name.to_owned(),
            });
        }
        let source = InstallRecord::read(&dir)
            .and_then(|record| record.source)
            .ok_or_else(|| Error::Registry {
                code: "NOT_FROM_REGISTRY",
                message: format!(
                    "{name} was not installed from a registry: there is no tag to follow"
                ),
                transient: false,
            })?;
        let r = Reference::parse(&source.reference)?;
        if r.tag.is_none() && r.digest.is_some() {
            return Ok(Updated {
                name: name.to_owned(),
                reference: source.reference.clone(),
                from: source.digest.clone(),
                to: source.digest,
                signer: source.signer,
            });
        }
        let session = self.registry_session()?;
        let (resolver, asked) = (session.clone(), r.clone());
        let now = blocking(move || resolver.resolve(&asked)).await?;
        if now == source.digest {
            return Ok(Updated {
                name: name.to_owned(),
                reference: source.reference.clone(),
                from: source.digest.clone(),
                to: now,
                signer: source.signer,
            });
        }
        // Under the name it is installed as (its own, or the one given `--as`).
        let target = Target {
            overwrite: true,
            name: Some(name.to_owned()),
        };
        let installed = self
            .pull_and_install(session, &r, &now, target, None)
            .await?;
        let lock_path = self.lock_path();
        let mut lock = Lock::read(&lock_path)?;
        lock.put(Locked {
            name: installed.name.clone(),
            reference: r.to_string(),
            digest: now.clone(),
            signer: installed.source.signer.as_ref().map(|s| s.key.clone()),
        });
        lock.write(&lock_path)?;
        tracing::info!(target: "evo::security", skill = %name, reference = %r, from = %source.digest, to = %now, "followed the tag");
        Ok(Updated {
            name: installed.name,
            reference: r.to_string(),
            from: source.digest,
            to: now,
            signer: installed.source.signer,
        })
    }
}
