//! Keeping a long-running host's skills in step with its directories: what each skill
//! directory looked like when loaded, and [`Host::refresh`], which reloads what changed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::PoisonError;

use super::Host;
use crate::engine::loader::{Listed, Loader, Package};
use crate::error::Result;
use crate::packages::{InstallRecord, ListQuery, Listing};
use crate::skill::manifest::package::{MARKER, SKILL_MD, SKILL_WASM};

/// A skill directory as last loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Loaded {
    /// How it looked when loaded.
    pub(super) look: Look,
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
        let (look, listed) = Look::opening(dir);
        let record = if look.record {
            InstallRecord::read(dir)
        } else {
            None
        };
        let package = loader.load_recorded(dir, record.as_ref(), listed).await;
        let skills = package
            .as_ref()
            .map(|p| p.skills.iter().map(|s| s.meta.name.clone()).collect())
            .unwrap_or_default();
        let loaded = Self {
            look,
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
                let stamp = Look::of(&dir).stamp;
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
                .filter(|(dir, stamp)| catalogue.get(*dir).is_none_or(|l| l.look.stamp != **stamp))
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
                    crate::packages::Holds {
                        skill_md: loaded.look.skill_md,
                        marker: loaded.look.record,
                    },
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

/// What a skill directory looks like now: a stamp that changes with it, and which of
/// the files a listing reads it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Look {
    /// A hash of the directory's own metadata and of the names, sizes, modification
    /// times and inodes of its top-level entries: an install (an atomic rename) or an
    /// edit of the manifest, SKILL.md or component changes it.
    pub(super) stamp: u64,
    /// It holds an install record.
    pub(super) record: bool,
    /// It holds a SKILL.md.
    pub(super) skill_md: bool,
    /// It holds a component (`skill.wasm`, a file or a link to one).
    pub(super) component: bool,
}

impl Look {
    /// How `dir` looks now: one open of the directory, its entries read into a buffer on
    /// the stack, and a `statx` of each beside the listing (a host starting with a
    /// thousand skills does this a thousand times, so nothing is allocated). A link is
    /// described by what it leads to. A directory that cannot be read has the stamp of
    /// nothing, and holds nothing.
    pub(super) fn of(dir: &Path) -> Self {
        Self::taken(dir, false).0
    }

    /// [`Look::of`] `dir`, and what it found of the component, kept open for the load
    /// that follows when the listing names a regular file (described by a `statx` of the
    /// open file rather than of its name): its fingerprint then costs two reads, not
    /// another open and `statx` by path.
    pub(super) fn opening(dir: &Path) -> (Self, Listed) {
        let (look, open) = Self::taken(dir, true);
        let listed = if look.component {
            Listed::Component(open)
        } else {
            Listed::NoComponent
        };
        (look, listed)
    }

    fn taken(dir: &Path, keep: bool) -> (Self, Option<crate::engine::wasm::OpenComponent>) {
        use rustix::fs::{AtFlags, FileType, Mode, OFlags, RawDir, StatxFlags};
        use std::hash::{Hash, Hasher};
        let describe = |name: &[u8], st: &rustix::fs::Statx| {
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            name.hash(&mut hasher);
            st.stx_size.hash(&mut hasher);
            (st.stx_mtime.tv_sec, st.stx_mtime.tv_nsec).hash(&mut hasher);
            st.stx_ino.hash(&mut hasher);
            hasher.finish()
        };
        let mut look = Self {
            stamp: 0,
            record: false,
            skill_md: false,
            component: false,
        };
        let mut open = None;
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let Ok(fd) = rustix::fs::open(dir, flags, Mode::empty()) else {
            return (look, open);
        };
        let stat = |name: &std::ffi::CStr, follow: bool| {
            let at = match (name.is_empty(), follow) {
                (true, _) => AtFlags::EMPTY_PATH,
                (false, true) => AtFlags::empty(),
                (false, false) => AtFlags::SYMLINK_NOFOLLOW,
            };
            rustix::fs::statx(&fd, name, at, StatxFlags::BASIC_STATS)
        };
        // The component opened (never waiting, should it have become a FIFO since it was
        // listed), and described as the open file: what is sampled is what was described.
        let open_component = |name: &std::ffi::CStr| {
            let flags = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NONBLOCK | OFlags::NOCTTY;
            let file = rustix::fs::openat(&fd, name, flags, Mode::empty()).ok()?;
            let st =
                rustix::fs::statx(&file, c"", AtFlags::EMPTY_PATH, StatxFlags::BASIC_STATS).ok()?;
            Some((std::fs::File::from(file), st))
        };
        // Entries are summed rather than sorted: the order the file system lists them
        // in does not matter, and a change to any one changes the sum.
        let mut sum = match stat(c"", true) {
            Ok(st) => describe(dir.as_os_str().as_encoded_bytes(), &st),
            Err(_) => return (look, open),
        };
        let mut buf = [std::mem::MaybeUninit::<u8>::uninit(); 4096];
        let mut entries = RawDir::new(&fd, &mut buf);
        while let Some(Ok(entry)) = entries.next() {
            let name = entry.file_name();
            let bytes = name.to_bytes();
            if bytes == b"." || bytes == b".." {
                continue;
            }
            let component = bytes == SKILL_WASM.as_bytes();
            // Only what the listing names a regular file: opening a link could reach a
            // device, which opening alone may act on.
            let opened = (keep && component && entry.file_type() == FileType::RegularFile)
                .then(|| open_component(name))
                .flatten();
            let st = match opened {
                Some((file, st)) => {
                    if FileType::from_raw_mode(st.stx_mode.into()) == FileType::RegularFile {
                        open = crate::engine::wasm::OpenComponent::new(file, &st);
                    }
                    st
                }
                None => {
                    let link = matches!(entry.file_type(), FileType::Symlink | FileType::Unknown);
                    let Ok(mut st) = stat(name, false) else {
                        continue;
                    };
                    if link && FileType::from_raw_mode(st.stx_mode.into()) == FileType::Symlink {
                        match stat(name, true) {
                            Ok(target) => st = target,
                            Err(_) => continue,
                        }
                    }
                    st
                }
            };
            sum = sum.wrapping_add(describe(bytes, &st));
            look.record |= bytes == MARKER.as_bytes();
            look.skill_md |= bytes == SKILL_MD.as_bytes();
            look.component |=
                component && FileType::from_raw_mode(st.stx_mode.into()) == FileType::RegularFile;
        }
        look.stamp = sum;
        (look, open)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sets `file`'s modification time `secs` seconds after the epoch.
    fn touch(file: &Path, secs: u64) {
        let time = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs);
        std::fs::File::options()
            .write(true)
            .open(file)
            .unwrap()
            .set_modified(time)
            .unwrap();
    }

    #[test]
    fn a_look_changes_with_any_top_level_entry_and_says_what_the_listing_reads() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("skill");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("skill.wasm"), b"one").unwrap();
        touch(&dir.join("skill.wasm"), 1_000);
        let first = Look::of(&dir);
        assert_eq!(Look::of(&dir), first, "nothing changed, the same look");
        assert!(!first.record && !first.skill_md);
        assert!(first.component);

        // Rewritten in place, same length: only its modification time tells.
        std::fs::write(dir.join("skill.wasm"), b"two").unwrap();
        touch(&dir.join("skill.wasm"), 2_000);
        let rewritten = Look::of(&dir);
        assert_ne!(rewritten.stamp, first.stamp);

        std::fs::write(dir.join(SKILL_MD), "---\nname: s\n---\n").unwrap();
        std::fs::write(dir.join(MARKER), "{}").unwrap();
        let described = Look::of(&dir);
        assert_ne!(described.stamp, rewritten.stamp);
        assert!(described.record && described.skill_md);

        // A link is described by what it leads to.
        let target = root.path().join("prompt.md");
        std::fs::write(&target, "a prompt").unwrap();
        std::os::unix::fs::symlink(&target, dir.join("prompt.md")).unwrap();
        let linked = Look::of(&dir);
        std::fs::write(&target, "another prompt").unwrap();
        assert_ne!(Look::of(&dir).stamp, linked.stamp);

        // A directory that is not there holds nothing.
        let gone = Look::of(&root.path().join("gone"));
        assert!(!gone.record && !gone.skill_md && !gone.component);

        // A folder named like a component is none.
        let other = root.path().join("other");
        std::fs::create_dir_all(other.join(SKILL_WASM)).unwrap();
        assert!(!Look::of(&other).component);
        assert_ne!(gone.stamp, linked.stamp);
    }

    #[test]
    fn a_look_that_keeps_the_component_open_is_the_same_look() {
        let root = tempfile::tempdir().unwrap();
        let plain = root.path().join("plain");
        std::fs::create_dir(&plain).unwrap();
        std::fs::write(plain.join(SKILL_WASM), b"a component").unwrap();
        std::fs::write(plain.join(SKILL_MD), "---\nname: s\n---\n").unwrap();
        let (look, listed) = Look::opening(&plain);
        assert_eq!(look, Look::of(&plain));
        assert!(matches!(listed, Listed::Component(Some(_))), "{listed:?}");
        // A link is a component all the same, but not opened: it could lead to a device,
        // which opening alone may act on. Its load opens it by path, as before.
        let linked = root.path().join("linked");
        std::fs::create_dir(&linked).unwrap();
        std::os::unix::fs::symlink(plain.join(SKILL_WASM), linked.join(SKILL_WASM)).unwrap();
        let (look, listed) = Look::opening(&linked);
        assert_eq!(look, Look::of(&linked));
        assert!(matches!(listed, Listed::Component(None)), "{listed:?}");

        // Neither a folder nor a FIFO in its place is a component (nor waited on); a
        // broken link is left out, as by `Look::of`.
        let odd = root.path().join("odd");
        std::fs::create_dir_all(odd.join(SKILL_WASM)).unwrap();
        let fifo = root.path().join("fifo");
        std::fs::create_dir(&fifo).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            fifo.join(SKILL_WASM),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
            0,
        )
        .unwrap();
        let broken = root.path().join("broken");
        std::fs::create_dir(&broken).unwrap();
        std::os::unix::fs::symlink(root.path().join("nowhere"), broken.join(SKILL_WASM)).unwrap();
        for dir in [&odd, &fifo, &broken] {
            let (look, listed) = Look::opening(dir);
            assert_eq!(look, Look::of(dir), "{}", dir.display());
            assert!(matches!(listed, Listed::NoComponent), "{}", dir.display());
        }
    }
}
