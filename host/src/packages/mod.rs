//! The skill manager: install skills from ZIP archives or
//! directories, uninstall them, change a description, list what is installed.
//!
//! Installing is atomic: the archive is checked entry by entry (no absolute paths, no
//! `..`, no symlinks, caps on entries, sizes and compression ratio), extracted into a
//! temporary directory inside the skills directory, validated and loaded as the host will
//! load it, and only then renamed into place; a failure at any point leaves nothing
//! behind and the previous version (when overwriting) untouched until the new one is
//! complete. A staging directory left by a process that died midway is locked by nobody
//! and is swept by the next install.
//!
//! Each installed skill carries an install record ([`MARKER`]): what was installed (name,
//! description, version, tags, kind), the capabilities it asked for when the operator
//! installed it, and a content digest. Listing reads only these records; the loader
//! refuses an installed skill that later asks for more than its record
//! ([`Error::CapabilitiesChanged`]).

mod archive;
mod as_component;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod index;
#[cfg(not(feature = "internals"))]
pub(crate) mod index;
mod listing;
mod staging;

use staging::{PREVIOUS, lock};
#[cfg(feature = "native")]
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod scripts;
#[cfg(feature = "native")]
#[cfg(not(feature = "internals"))]
pub(crate) mod scripts;
#[cfg(feature = "postgres")]
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod shared;
#[cfg(feature = "postgres")]
#[cfg(not(feature = "internals"))]
pub(crate) mod shared;
mod update;

use std::path::{Path, PathBuf};

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::engine::loader::Loader;
use crate::error::{Error, Result};
use crate::skill::manifest::frontmatter::SkillDoc;
use crate::skill::manifest::package::AUTO_WASM;
pub use crate::skill::manifest::package::{InstallRecord, MARKER};
use crate::skill::manifest::package::{SKILL_JSON, SKILL_MD, SKILL_WASM};
use crate::skill::manifest::{DEFAULT_VERSION, is_valid_name};

use archive::MAX_TOTAL_BYTES;
pub use archive::Progress;
#[cfg(feature = "internals")]
pub use archive::{MAX_ENTRIES, MAX_ENTRY_BYTES, MAX_RATIO};
pub use index::{Indexed, SkillHit, SkillIndex};
pub use listing::{DateCount, ListQuery, ListedSkill, Listing, Statistics};
pub(crate) use listing::{Holds, installed_record};

/// Largest skill archive taken from a registry: as much as a ZIP install extracts.
pub(crate) const MAX_ARCHIVE_BYTES: u64 = MAX_TOTAL_BYTES;

/// The skill directory `dir` as the ZIP archive a registry keeps (without an install
/// record or what an install built).
pub(crate) fn zip_for_publishing(dir: &Path) -> Result<Vec<u8>> {
    archive::zip_dir_except(dir, &[MARKER, ".evo"])
}

/// What install, uninstall and update return.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Outcome {
    /// Always true (failures are errors).
    pub success: bool,
    /// The skill.
    pub name: String,
    /// `Skill installed successfully`, `Skill uninstalled successfully`, `Description updated`.
    pub message: String,
    /// SHA-256 over the skill's files (paths and contents, not ZIP timestamps).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// For an install: what was installed, including the capabilities it asks for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skill: Option<InstallRecord>,
    /// What the user should know: e.g. profiles that list an uninstalled tool.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl Outcome {
    /// What an uninstall of `name` returns.
    pub fn uninstalled(name: &str) -> Self {
        Self {
            success: true,
            name: name.to_owned(),
            message: "Skill uninstalled successfully".into(),
            digest: None,
            skill: None,
            warnings: Vec::new(),
        }
    }
}

/// How to install.
#[derive(Default)]
pub struct InstallOptions<'a> {
    /// Replace an installed skill of the same name.
    pub overwrite: bool,
    /// Told how extraction goes (bytes written, bytes in all), for a progress bar.
    pub progress: Option<Progress<'a>>,
    /// Keep a native script skill a script, without trying to run it as a component.
    pub native: bool,
    /// What the package must be (a package from the shared catalogue): its name and
    /// digest. One that is not is refused before it replaces anything.
    pub expect: Option<Expected<'a>>,
    /// The registry the package was pulled from, kept in its install record.
    pub source: Option<crate::skill::manifest::package::RegistrySource>,
    /// Install under this name instead of the one the skill gives itself (`--as`):
    /// its files are not changed; the install record keeps both names and the host
    /// serves the skill under this one (grants, `[skill_config]`, the index and the
    /// lock file follow it).
    pub name: Option<String>,
}

/// The name and digest a package was stored under.
#[derive(Debug, Clone, Copy)]
pub struct Expected<'a> {
    /// The skill's name.
    pub name: &'a str,
    /// Its digest (see [`Outcome::digest`]).
    pub digest: &'a str,
}

impl std::fmt::Debug for InstallOptions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InstallOptions")
            .field("overwrite", &self.overwrite)
            .field("progress", &self.progress.is_some())
            .field("native", &self.native)
            .field("expect", &self.expect)
            .field("source", &self.source)
            .field("name", &self.name)
            .finish()
    }
}

impl InstallOptions<'_> {
    /// Install, replacing an installed skill of the same name.
    pub fn overwrite() -> Self {
        Self {
            overwrite: true,
            ..Self::default()
        }
    }
}

/// Installs and manages the skills of one data directory (`<data>/skills/<name>/`).
#[derive(Debug)]
pub struct SkillManager {
    root: PathBuf,
    /// Compiled Wasm artifacts ([`crate::paths::wasm_cache_dir`]).
    wasm_cache: PathBuf,
    index: Option<std::sync::Mutex<SkillIndex>>,
    loader: Loader,
    reserved: Vec<String>,
}

fn structure(problem: impl Into<String>) -> Error {
    Error::InvalidSkillStructure(problem.into())
}

impl SkillManager {
    /// The manager of the skills under `data_dir`. It checks skills by loading them with
    /// a loader without the Wasm engine; see `SkillManager::with_loader`.
    pub fn new(data_dir: &Path) -> Self {
        Self {
            root: crate::paths::skills_dir(data_dir),
            wasm_cache: crate::paths::wasm_cache_dir(data_dir),
            index: None,
            loader: Loader::new(),
            reserved: Vec::new(),
        }
    }

    /// Keeps `index` up to date on install, uninstall and description changes.
    pub fn with_index(mut self, index: SkillIndex) -> Self {
        self.index = Some(std::sync::Mutex::new(index));
        self
    }

    internal! {
        /// Checks skills at install by loading them with `loader`, as the host will; a loader
        /// with the Wasm engine is needed to install Wasm skills.
        pub fn with_loader(mut self, loader: Loader) -> Self {
            self.loader = loader;
            self
        }
    }

    /// Refuses to install skills named like one of `names` (the host's built-in tools).
    pub fn with_reserved(mut self, names: Vec<String>) -> Self {
        self.reserved = names;
        self
    }

    fn reindex(&self, name: &str, record: Option<&InstallRecord>) -> Result<()> {
        let Some(index) = &self.index else {
            return Ok(());
        };
        let mut index = index
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match record {
            Some(r) => index.index_skill(Indexed { name, ..r.into() }),
            None => index.remove_package(name),
        }
    }

    /// The skills most relevant to `query` (needs [`SkillManager::with_index`]).
    pub fn search_skills(&self, query: &str, k: usize) -> Result<Vec<SkillHit>> {
        match &self.index {
            Some(index) => index
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .search_skills(query, k),
            None => Ok(Vec::new()),
        }
    }

    /// The skills directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Installs the skill in `zip` (see the module docs). The archive's skill directory
    /// must be named like the skill.
    pub async fn install_skill(&self, zip: &[u8], options: InstallOptions<'_>) -> Result<Outcome> {
        self.install_staged(options, false, |staging, progress| {
            archive::extract(zip, staging, progress)
        })
        .await
    }

    /// Installs the skill in `zip` under the name its manifest gives, whatever its
    /// directory in the archive is called (a skill directory published to a registry).
    pub async fn install_archive(
        &self,
        zip: &[u8],
        options: InstallOptions<'_>,
    ) -> Result<Outcome> {
        self.install_staged(options, true, |staging, progress| {
            archive::extract(zip, staging, progress)
        })
        .await
    }

    /// Installs the skill in directory `dir` as if it were zipped: the same checks, the
    /// same atomic install. Symbolic links in it are refused. It is installed under the
    /// name its manifest gives, whatever the directory is called (as `evo skill run`
    /// runs it).
    pub async fn install_dir(&self, dir: &Path, options: InstallOptions<'_>) -> Result<Outcome> {
        let zip = archive::zip_dir(dir)?;
        self.install_staged(options, true, |staging, progress| {
            archive::extract(&zip, staging, progress)
        })
        .await
    }

    /// Installs a bare component (the bytes of the `.wasm` file `file_name`) as a skill
    /// directory holding only its `skill.wasm`: an Evo skill under the name its manifest
    /// gives, a plain component under its file's name ([`component_name`]).
    ///
    /// [`component_name`]: crate::engine::wasm::component_name
    pub async fn install_component(
        &self,
        component: &[u8],
        file_name: &str,
        options: InstallOptions<'_>,
    ) -> Result<Outcome> {
        // Named as the user named it, not as the `skill.wasm` it would be staged as.
        crate::engine::wasm::check_component_header(file_name, component)?;
        self.install_staged(options, true, |staging, progress| {
            let dir = staging.join(crate::engine::wasm::component_name(file_name));
            std::fs::create_dir(&dir).map_err(Error::io_at(&dir))?;
            let path = dir.join(SKILL_WASM);
            std::fs::write(&path, component).map_err(Error::io_at(&path))?;
            let size = component.len() as u64;
            progress(size, size);
            Ok(dir)
        })
        .await
    }

    /// The install every source shares: `stage` puts the skill's directory in the
    /// staging directory and returns it; it is checked, loaded, and renamed into place.
    /// With `by_manifest_name`, a directory named otherwise than the skill is renamed
    /// to the skill's name first.
    async fn install_staged(
        &self,
        options: InstallOptions<'_>,
        by_manifest_name: bool,
        stage: impl FnOnce(&Path, Progress<'_>) -> Result<PathBuf>,
    ) -> Result<Outcome> {
        std::fs::create_dir_all(&self.root).map_err(Error::io_at(&self.root))?;
        self.sweep();
        // Staging inside the skills directory, so the final rename stays on one file system.
        let staging = tempfile::Builder::new()
            .prefix(".install-")
            .tempdir_in(&self.root)
            .map_err(Error::io_at(&self.root))?;
        let _lock = lock(staging.path())?;
        let mut quiet = |_: u64, _: u64| {};
        let progress = match options.progress {
            Some(progress) => progress,
            None => &mut quiet,
        };
        let mut skill_dir = stage(staging.path(), progress)?;
        // A record inside the archive is not the operator's.
        let _ = std::fs::remove_file(skill_dir.join(MARKER));
        if by_manifest_name {
            skill_dir = self.rename_to_manifest(staging.path(), skill_dir).await?;
        }
        let dir_name = |dir: &Path| {
            dir.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .ok_or_else(|| structure("Invalid ZIP structure: missing root directory"))
        };
        // The name the files give: a SKILL.md or an Evo component names itself.
        let published = dir_name(&skill_dir)?;
        if let Some(wanted) = options.name.as_deref().filter(|n| *n != published) {
            if !is_valid_name(wanted) {
                return Err(crate::skill::manifest::invalid_name(wanted));
            }
            let renamed = staging.path().join(wanted);
            std::fs::rename(&skill_dir, &renamed).map_err(Error::io_at(&renamed))?;
            skill_dir = renamed;
        }
        let name = dir_name(&skill_dir)?;
        if self.reserved.contains(&name) {
            return Err(Error::NameTaken { name });
        }
        let (mut record, plain) = self.check(&skill_dir, &name, &published).await?;
        let target = self.root.join(&name);
        if target.exists() && !options.overwrite {
            return Err(Error::SkillAlreadyExists { name });
        }
        // The digest is of the skill as published, not of what the install builds.
        record.digest = digest(&skill_dir)?;
        if let Some(expected) = options.expect
            && (expected.name != name || expected.digest != record.digest)
        {
            return Err(structure(format!(
                "Package mismatch: stored as {} with digest {}, but it holds {name} with digest {}",
                expected.name, expected.digest, record.digest
            )));
        }
        if record.kind == "native" {
            self.try_as_component(&skill_dir, options.native, &mut record)
                .await;
        }
        record.installed_at = crate::unix_millis();
        record.updated_at = record.installed_at;
        record.source = options.source.clone();
        record.write(&skill_dir)?;
        if target.exists() {
            // Move the old version aside first, so a failed rename can put it back.
            // Named, so that if this process dies between the two renames the next
            // sweep can put the old version back.
            let old = staging.path().join(format!("{PREVIOUS}{name}"));
            std::fs::rename(&target, &old).map_err(Error::io_at(&target))?;
            if let Err(source) = std::fs::rename(&skill_dir, &target) {
                let _ = std::fs::rename(&old, &target);
                return Err(Error::Io {
                    path: target,
                    source,
                });
            }
        } else {
            std::fs::rename(&skill_dir, &target).map_err(Error::io_at(&target))?;
        }
        // A plain component's functions are indexed by the host that loads them.
        if !plain {
            self.reindex(&name, Some(&record))?;
        }
        tracing::info!(skill = %name, version = %record.version, kind = %record.kind, "installed");
        Ok(Outcome {
            success: true,
            name,
            message: "Skill installed successfully".into(),
            digest: Some(record.digest.clone()),
            skill: Some(record),
            warnings: Vec::new(),
        })
    }

    /// Renames the staged `skill_dir` to the name the skill's manifest gives, when that
    /// differs from the directory's (the manifest's name is checked again later).
    async fn rename_to_manifest(&self, staging: &Path, skill_dir: PathBuf) -> Result<PathBuf> {
        let package = self
            .loader
            .load_package(&skill_dir)
            .await
            .map_err(|e| match e {
                Error::InvalidSkillStructure(_) => e,
                other => structure(format!("Invalid skill structure: {other}")),
            })?;
        let name = package.name;
        if skill_dir.file_name().is_some_and(|n| *n == *name) || !is_valid_name(&name) {
            return Ok(skill_dir);
        }
        let renamed = staging.join(&name);
        std::fs::rename(&skill_dir, &renamed).map_err(Error::io_at(&renamed))?;
        Ok(renamed)
    }

    /// Checks the staged skill `dir` for the required layout and metadata, then loads it as the host
    /// will, and returns what it is and whether it is a plain component.
    /// `name` is what it is installed as, `published` the name its files give (the same
    /// unless installed `--as` another).
    async fn check(
        &self,
        dir: &Path,
        name: &str,
        published: &str,
    ) -> Result<(InstallRecord, bool)> {
        let doc = check_structure(dir, published)?;
        let wasm = dir.join(SKILL_WASM).is_file();
        if wasm && self.loader.wasm_engine().is_none() {
            return Err(structure(format!(
                "Invalid skill structure: {name} is a Wasm skill and this host was set up without the Wasm engine to check it"
            )));
        }
        if doc.is_none() && !wasm && !dir.join(SKILL_JSON).is_file() {
            return Err(structure("Invalid skill structure: SKILL.md is missing"));
        }
        let package = self.loader.load_package(dir).await.map_err(|e| match e {
            Error::InvalidSkillStructure(_) => e,
            other => structure(format!("Invalid skill structure: {other}")),
        })?;
        if let (true, Some(engine), false) = (wasm, self.loader.wasm_engine(), package.plain) {
            let path = dir.join(SKILL_WASM);
            let bytes = std::fs::read(&path).map_err(Error::io_at(&path))?;
            engine
                .verify_embedded_manifest(name, bytes)
                .await
                .map_err(|e| structure(format!("Invalid skill structure: {e}")))?;
        }
        // A plain component is named after its directory: renamed, it is the new name.
        if package.meta.name != name && package.meta.name != published {
            return Err(structure(format!(
                "Skill name mismatch: expected \"{published}\", got \"{}\"",
                package.meta.name
            )));
        }
        let kind = package
            .skills
            .first()
            .map_or("wasm", |skill| skill.kind().as_str());
        let mut record = InstallRecord::from_meta(&package.meta, kind);
        if package.meta.name != name {
            record.published_as = std::mem::replace(&mut record.name, name.to_owned());
        }
        Ok((record, package.plain))
    }

    /// Removes skill `name` (`Skills not found: <name>`, `SKILL_NOT_FOUND`, if it is not
    /// installed): its directory, its index entry, and its compiled Wasm artifacts.
    pub fn uninstall_skill(&self, name: &str) -> Result<Outcome> {
        let dir = self.installed(name)?;
        let component = std::fs::read(dir.join(SKILL_WASM))
            .ok()
            .map(|bytes| hex::encode(Sha256::digest(&bytes)));
        // Rename first so a half-deleted skill is never loaded; then delete.
        let doomed = self
            .root
            .join(format!(".uninstall-{name}-{}", crate::unix_millis()));
        std::fs::rename(&dir, &doomed).map_err(Error::io_at(&dir))?;
        std::fs::remove_dir_all(&doomed).map_err(Error::io_at(&doomed))?;
        self.reindex(name, None)?;
        if let Some(digest) = component {
            crate::engine::wasm::ArtifactCache::new(&self.wasm_cache).forget(&digest);
        }
        Ok(Outcome::uninstalled(name))
    }

    fn installed(&self, name: &str) -> Result<PathBuf> {
        let dir = self.root.join(name);
        if is_valid_name(name) && is_skill_dir(&dir) {
            Ok(dir)
        } else {
            Err(Error::SkillNotFound {
                name: name.to_owned(),
            })
        }
    }
}

/// Whether `dir` holds a skill.
fn is_skill_dir(dir: &Path) -> bool {
    [SKILL_MD, SKILL_JSON, SKILL_WASM]
        .iter()
        .any(|f| dir.join(f).is_file())
}

/// Checks what is required of SKILL.md (when there is one) and of the layout,
/// reporting every problem at once; returns the parsed SKILL.md.
fn check_structure(dir: &Path, name: &str) -> Result<Option<SkillDoc>> {
    let mut problems = Vec::new();
    let doc =
        match std::fs::read_to_string(dir.join(SKILL_MD)) {
            Ok(text) => Some(SkillDoc::parse(&text).map_err(|p| {
                structure(format!("Invalid skill structure: SKILL.md: {}", p.message))
            })?),
            Err(_) => None,
        };
    if let Some(doc) = &doc {
        let missing: Vec<&str> = [
            ("name", doc.raw.name.is_none()),
            ("description", doc.raw.description.is_none()),
        ]
        .into_iter()
        .filter_map(|(field, absent)| absent.then_some(field))
        .collect();
        if !missing.is_empty() {
            problems.push(format!("Missing required fields: {}", missing.join(", ")));
        }
        if let Some(declared) = &doc.raw.name
            && declared != name
        {
            return Err(structure(format!(
                "Skill name mismatch: expected \"{name}\", got \"{declared}\""
            )));
        }
    }
    if !is_valid_name(name) {
        problems.push(format!("{name:?} is not a valid skill name (a lowercase letter, then lowercase letters, digits, - or _)"));
    }
    // A `scripts/` without `execute.js` is not refused (as the skill-manager
    // specification would): public Agent Skills ship Python and shell helpers there.
    // Such a skill installs as an instruction skill with its scripts as resources.
    if problems.is_empty() {
        Ok(doc)
    } else {
        Err(structure(format!(
            "Invalid skill structure: {}",
            problems.join("; ")
        )))
    }
}

/// SHA-256 over the skill's files: relative paths and contents, in path order, so the
/// same skill zipped at another time gives the same digest.
fn digest(dir: &Path) -> Result<String> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(current) = stack.pop() {
        let entries = std::fs::read_dir(&current).map_err(Error::io_at(&current))?;
        for entry in entries.flatten() {
            let path = entry.path();
            // The record, and what the install built (`.evo/`), are not the skill.
            if entry.file_name() == MARKER || (current == dir && entry.file_name() == ".evo") {
                continue;
            }
            if path.is_dir() {
                stack.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files.sort();
    let mut hasher = Sha256::new();
    for file in files {
        let relative = file.strip_prefix(dir).unwrap_or(&file);
        hasher.update(relative.to_string_lossy().as_bytes());
        hasher.update([0]);
        let bytes = std::fs::read(&file).map_err(Error::io_at(&file))?;
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(&bytes);
    }
    Ok(hex::encode(hasher.finalize()))
}
