//! Installing and uninstalling through the host: the skill manager does the files and
//! the catalogue, the host makes the change callable (or not) at once.

use std::path::Path;
use std::sync::PoisonError;

use super::{Host, Loaded};
use crate::error::{Error, Result};
use crate::packages::{InstallOptions, Outcome};

impl Host {
    /// Installs a skill from a ZIP archive, a directory or a bare `.wasm` component and
    /// makes it callable at once.
    pub async fn install(&self, source: &Path, options: InstallOptions<'_>) -> Result<Outcome> {
        let manager = self.manager()?;
        let outcome = if source.is_dir() {
            manager.install_dir(source, options).await?
        } else {
            let bytes = std::fs::read(source).map_err(Error::io_at(source))?;
            if bytes.starts_with(b"\0asm") {
                let file_name = source
                    .file_name()
                    .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
                manager
                    .install_component(&bytes, &file_name, options)
                    .await?
            } else {
                manager.install_skill(&bytes, options).await?
            }
        };
        // What the lock file pinned under this name was replaced by a local file.
        self.unlock(&outcome.name);
        self.installed(outcome).await
    }

    /// Makes a skill the manager just installed callable (registered, in the catalogue
    /// and the index), and stores it for the other nodes.
    pub(super) async fn installed(&self, outcome: Outcome) -> Result<Outcome> {
        let dir = crate::paths::skills_dir(&self.inner.data_dir).join(&outcome.name);
        let (loaded, package) = Loaded::load(&self.inner.loader, &dir).await;
        match package {
            Ok(package) => {
                if package.plain {
                    // Each function is a skill of its own to find (`evo skill search`).
                    self.skill_index()?
                        .sync(package.skills.iter().map(|s| (&s.meta).into()))?;
                }
                for skill in package.skills {
                    self.registry().register(skill);
                }
            }
            Err(e) => tracing::warn!("installed {} but could not load it: {e}", outcome.name),
        }
        let skills = loaded.skills.clone();
        self.inner
            .catalogue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(dir, loaded);
        self.changed();
        #[cfg(feature = "postgres")]
        if let (Some(shared), Some(record)) = (&self.inner.shared_catalogue, &outcome.skill)
            && let Err(e) = shared.publish(record)
        {
            // Installed on this node only, the nodes would disagree: undo it.
            let _ = self.uninstall_here(&outcome.name);
            return Err(Error::Database {
                message: format!(
                    "{} was not installed: it could not be stored for the other nodes ({e})",
                    outcome.name
                ),
                transient: e.is_transient(),
            });
        }
        // A composite calling a skill that is not here works once the callee arrives:
        // said now, not at the first run.
        let mut outcome = outcome;
        for skill in &skills {
            for callee in self.registry().missing_callees(skill) {
                outcome
                    .warnings
                    .push(crate::skill::kernel::table::missing_callee(skill, &callee));
            }
        }
        Ok(outcome)
    }

    /// Uninstalls skill `name`; it is no longer callable (with shared storage, on any
    /// node).
    pub fn uninstall(&self, name: &str) -> Result<Outcome> {
        #[cfg(not(feature = "postgres"))]
        let mut outcome = self.uninstall_here(name)?;
        #[cfg(feature = "postgres")]
        let mut outcome = match &self.inner.shared_catalogue {
            None => self.uninstall_here(name)?,
            Some(shared) => {
                let withdrawn = shared.withdraw(name)?;
                // Still listed as taken from the shared catalogue until it is gone
                // here: a sync after a failed removal removes it again.
                let outcome = match self.uninstall_here(name) {
                    Err(Error::SkillNotFound { .. }) if withdrawn => Outcome::uninstalled(name),
                    other => other?,
                };
                shared.note_seen(name, false)?;
                outcome
            }
        };
        self.unlock(name);
        for profile in self.profiles_listing(name) {
            let warning = format!(
                "profile {profile:?} lists {name}; its agents can no longer call it (remove it from [tools.profiles.{profile}] tools)"
            );
            tracing::warn!("{warning}");
            outcome.warnings.push(warning);
        }
        self.changed();
        Ok(outcome)
    }

    /// Uninstalls skill `name` from this node's skills directory and catalogue.
    pub(super) fn uninstall_here(&self, name: &str) -> Result<Outcome> {
        let outcome = self.manager()?.uninstall_skill(name)?;
        self.registry().unregister(name);
        let dir = crate::paths::skills_dir(&self.inner.data_dir).join(name);
        let loaded = self
            .inner
            .catalogue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&dir);
        // A plain component's functions go with it.
        let functions: Vec<String> = loaded
            .map(|l| l.skills)
            .unwrap_or_default()
            .into_iter()
            .filter(|skill| skill != name)
            .collect();
        for skill in &functions {
            self.registry().unregister(skill);
        }
        Ok(outcome)
    }
}
