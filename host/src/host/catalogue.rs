//! Keeping a long-running host's skills in step with its directories: what each skill
//! directory looked like when loaded, and [`Host::refresh`], which reloads what changed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::PoisonError;

use super::Host;
use crate::engine::loader::{Loader, Package};
use crate::error::Result;
use crate::packages::{InstallRecord, ListQuery, Listing};

/// A skill directory as last loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Loaded {
    pub(super) stamp: u64,
    /// The skills it holds (none when it did not load).
    pub(super) skills: Vec<String>,
    /// Its install record, read with it (`None`: a directory of skills the host was
    /// pointed at, or one copied in by hand).
    pub(super) record: Option<InstallRecord>,
}

impl Loaded {
    /// Loads the skill directory `dir`: what it looks like and its install record are
    /// taken before the load, so a change made while it runs is seen by the next
    /// reload. Returns the entry (with the names of the skills it loaded) and the load.
    pub(super) async fn load(loader: &Loader, dir: &Path) -> (Self, Result<Package>) {
        let stamp = stamp(dir);
        let record = InstallRecord::read(dir);
        let package = loader.load_recorded(dir, record.as_ref()).await;
        let skills = package
            .as_ref()
            .map(|p| p.skills.iter().map(|s| s.meta.name.clone()).collect())
            .unwrap_or_default();
        let loaded = Self {
            stamp,
            skills,
            record,
        };
        (loaded, package)
    }
}

impl Host {
    /// Rescans the installed skills and the configured skill directories, and loads
    /// what changed since (installed, uninstalled or edited by another process): a
    /// long-running host (`evo serve`) calls this to keep its catalogue live. Returns
    /// whether any skill changed; [`Host::changes`] then ticks.
    pub async fn refresh(&self) -> Result<bool> {
        if self.inner.follows_reindex {
            // A reindex by another process changed the store's embedder: use it too, or
            // searches here would compare vectors of two models (and fall back to words).
            let memory = self.inner.memory.clone();
            match tokio::task::spawn_blocking(move || memory.follow_reindex()).await {
                Ok(Err(e)) => {
                    tracing::warn!("memory: could not follow a reindex: [{}] {e}", e.code())
                }
                Err(e) => tracing::warn!("memory: could not follow a reindex: {e}"),
                Ok(Ok(_)) => {}
            }
        }
        #[cfg(feature = "postgres")]
        if let Some(shared) = &self.inner.shared_catalogue
            && shared.stale()
        {
            self.sync_shared(shared).await?;
        }
        let inner = &self.inner;
        let mut roots = vec![crate::paths::skills_dir(&inner.data_dir)];
        roots.extend(inner.config.skill_dirs.iter().cloned());
        let mut now = BTreeMap::new();
        for root in roots.iter().filter(|r| r.is_dir()) {
            for dir in crate::engine::skill_dirs(root)? {
                let stamp = stamp(&dir);
                now.insert(dir, stamp);
            }
        }
        let (changed, gone) = {
            let catalogue = inner
                .catalogue
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let changed: Vec<PathBuf> = now
                .iter()
                .filter(|(dir, stamp)| catalogue.get(*dir).is_none_or(|l| l.stamp != **stamp))
                .map(|(dir, _)| dir.clone())
                .collect();
            let gone: Vec<(PathBuf, Vec<String>)> = catalogue
                .iter()
                .filter(|(dir, _)| !now.contains_key(*dir))
                .map(|(dir, loaded)| (dir.clone(), loaded.skills.clone()))
                .collect();
            (changed, gone)
        };
        if changed.is_empty() && gone.is_empty() {
            return Ok(false);
        }
        for (dir, skills) in gone {
            for name in skills {
                self.registry().unregister(&name);
                tracing::info!(skill = %name, "removed from the catalogue");
            }
            inner
                .catalogue
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&dir);
        }
        let _batch = inner
            .loader
            .wasm_engine()
            .map(crate::engine::wasm::WasmEngine::batch);
        for dir in changed {
            self.reload_dir(&dir).await;
        }
        self.changed();
        Ok(true)
    }

    /// Loads the skill directory `dir` again and puts what it holds now in the
    /// catalogue in place of what it held (a skill that failed to load is left out,
    /// with a warning).
    pub(super) async fn reload_dir(&self, dir: &Path) {
        let inner = &self.inner;
        let before = inner
            .catalogue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(dir)
            .map(|l| l.skills.clone())
            .unwrap_or_default();
        let (loaded, package) = Loaded::load(&inner.loader, dir).await;
        match package {
            Ok(package) => {
                for skill in package.skills {
                    tracing::info!(skill = %skill.meta.name, "loaded into the catalogue");
                    self.registry().register(skill);
                }
            }
            Err(e) => tracing::warn!("skipped {}: [{}] {e}", dir.display(), e.code()),
        }
        for old in before.iter().filter(|old| !loaded.skills.contains(old)) {
            self.registry().unregister(old);
        }
        inner
            .catalogue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(dir.to_owned(), loaded);
    }

    /// The installed skills, filtered and paged, as
    /// [`SkillManager::list_skills`](crate::packages::SkillManager::list_skills) lists
    /// them, from the install records this host read when it loaded them (or last
    /// reloaded them: [`Host::refresh`]) rather than from the disk again. A host built
    /// without its installed skills asks the skill manager.
    pub fn list_installed(&self, query: &ListQuery) -> Result<Listing> {
        let root = crate::paths::skills_dir(&self.inner.data_dir);
        let installed: Vec<crate::packages::ListedSkill> = self
            .inner
            .catalogue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter(|(dir, _)| dir.parent() == Some(root.as_path()))
            .filter_map(|(dir, loaded)| {
                let name = dir.file_name()?.to_string_lossy().into_owned();
                // A directory that loaded skills is one; one that did not may still be.
                let record = crate::packages::installed_record(
                    dir,
                    &name,
                    loaded.record.clone(),
                    !loaded.skills.is_empty(),
                )?;
                Some(crate::packages::ListedSkill::of(name, record))
            })
            .collect();
        if installed.is_empty() {
            return self.manager()?.list_skills(query);
        }
        Ok(Listing::of(installed, query))
    }

    /// The catalogue's directory that holds skill `name`.
    pub(super) fn dir_of(&self, name: &str) -> Option<PathBuf> {
        self.inner
            .catalogue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .find(|(_, loaded)| loaded.skills.iter().any(|s| s == name))
            .map(|(dir, _)| dir.clone())
    }

    /// Ticks whenever the skills change (an install, an uninstall, a [`Host::refresh`]
    /// that found a change).
    pub fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.inner.changes.subscribe()
    }

    pub(super) fn changed(&self) {
        self.inner
            .changes
            .send_modify(|generation| *generation += 1);
    }
}

/// What a skill directory looks like now: a hash of its own metadata and of the names,
/// sizes and modification times of its top-level files. An install (an atomic rename)
/// or an edit of the manifest, SKILL.md or component changes it.
fn stamp(dir: &Path) -> u64 {
    use std::hash::{Hash, Hasher};
    use std::os::unix::fs::MetadataExt;
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    let mut describe = |name: Option<&std::ffi::OsStr>, meta: &std::fs::Metadata| {
        name.hash(&mut hasher);
        meta.len().hash(&mut hasher);
        meta.modified().ok().hash(&mut hasher);
        meta.ino().hash(&mut hasher);
    };
    if let Ok(meta) = std::fs::metadata(dir) {
        describe(dir.file_name(), &meta);
    }
    if let Ok(entries) = std::fs::read_dir(dir) {
        let mut files: Vec<(std::ffi::OsString, std::fs::Metadata)> = entries
            .filter_map(|e| {
                let e = e.ok()?;
                // A link is described by what it leads to; anything else by the entry,
                // looked up beside the listing rather than by its whole path.
                let meta = match e.file_type() {
                    Ok(t) if !t.is_symlink() => e.metadata(),
                    _ => std::fs::metadata(e.path()),
                };
                Some((e.file_name(), meta.ok()?))
            })
            .collect();
        files.sort_by(|a, b| a.0.cmp(&b.0));
        for (name, meta) in &files {
            describe(Some(name), meta);
        }
    }
    hasher.finish()
}
