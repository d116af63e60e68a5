//! Staging directories: each install works in one of its own, locked while it runs, and
//! an overwrite moves the installed version aside there; what a process that died midway
//! left behind is swept away, and a version it had moved aside put back.

use std::fs::File;
use std::path::Path;
use std::time::Duration;

use super::SkillManager;
use crate::error::{Error, Result};
use crate::skill::manifest::is_valid_name;

/// A staging directory whose lock is older than this and not held is abandoned.
const STAGING_GRACE: Duration = Duration::from_secs(60);

/// The lock file of a staging directory, held while the install runs.
pub(super) const LOCK: &str = ".lock";

/// Where an overwrite moves the installed version inside its staging directory:
/// `.previous-<name>`.
pub(super) const PREVIOUS: &str = ".previous-";

/// Creates the lock file of `staging` and holds it.
pub(super) fn lock(staging: &Path) -> Result<File> {
    let path = staging.join(LOCK);
    let file = File::create(&path).map_err(Error::io_at(&path))?;
    file.lock().map_err(Error::io_at(&path))?;
    Ok(file)
}

impl SkillManager {
    /// Removes staging directories that processes which died midway left behind.
    pub(super) fn sweep(&self) {
        let Ok(entries) = std::fs::read_dir(&self.root) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            let abandoned = if name.starts_with(".install-") {
                match File::open(path.join(LOCK)) {
                    Ok(file) => file.try_lock().is_ok(),
                    // Not locked yet: a process may be creating it right now.
                    Err(_) => entry
                        .metadata()
                        .and_then(|m| m.modified())
                        .ok()
                        .and_then(|t| t.elapsed().ok())
                        .is_some_and(|age| age > STAGING_GRACE),
                }
            } else {
                // An uninstall renames the skill here before deleting it.
                name.starts_with(".uninstall-")
            };
            if abandoned {
                self.restore_previous(&path);
                tracing::info!(path = %path.display(), "removing an abandoned staging directory");
                let _ = std::fs::remove_dir_all(&path);
            }
        }
    }

    /// Puts back a skill an overwrite moved aside in `staging` when its process died
    /// before the new version was renamed into place.
    fn restore_previous(&self, staging: &Path) {
        let Ok(entries) = std::fs::read_dir(staging) else {
            return;
        };
        for entry in entries.flatten() {
            let file_name = entry.file_name().to_string_lossy().into_owned();
            let Some(name) = file_name.strip_prefix(PREVIOUS) else {
                continue;
            };
            let target = self.root.join(name);
            if is_valid_name(name) && !target.exists() {
                match std::fs::rename(entry.path(), &target) {
                    Ok(()) => {
                        tracing::warn!(skill = %name, "restored the version an interrupted overwrite had moved aside")
                    }
                    Err(e) => {
                        tracing::warn!(skill = %name, error = %e, "could not restore the version an interrupted overwrite had moved aside")
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sweep_puts_back_what_a_dead_overwrite_moved_aside() {
        let data = tempfile::tempdir().unwrap();
        let manager = SkillManager::new(data.path());
        let staging = manager.root().join(".install-dead");
        let previous = staging.join(".previous-git-commit");
        std::fs::create_dir_all(&previous).unwrap();
        std::fs::write(previous.join("SKILL.md"), "---\nname: git-commit\n---\n").unwrap();
        std::fs::write(staging.join(LOCK), "").unwrap();
        // A live install: its lock is held, so it is left alone.
        let live = manager.root().join(".install-live");
        std::fs::create_dir_all(&live).unwrap();
        let _held = lock(&live).unwrap();

        manager.sweep();
        assert!(manager.root().join("git-commit/SKILL.md").is_file());
        assert!(!staging.exists());
        assert!(live.exists());
    }
}
