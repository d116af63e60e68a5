//! The on-disk cache of compiled components.
//!
//! Compiling a component takes 50 ms for a small Rust skill and seconds for a JS or
//! Python one; loading a compiled artifact takes tens of microseconds. Artifacts are
//! keyed by the component's SHA-256 and the engine's compatibility hash (wasmtime
//! version, target, and every setting that affects code), so a new evo release or a
//! different configuration never loads a stale artifact.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use wasmtime::Engine;
use wasmtime::component::Component;

use super::functions::FunctionCache;

/// Where compiled artifacts live, one file per (component, engine) pair, beside the
/// functions they were compiled from (shared between components).
#[derive(Debug, Clone)]
pub struct ArtifactCache {
    dir: PathBuf,
    functions: Arc<FunctionCache>,
}

/// Whether a component was compiled now or loaded from the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LoadSource {
    /// Compiled in this process (and stored, when a cache is configured).
    Compiled,
    /// Loaded from the on-disk cache.
    Cache,
    /// Not loaded yet: the skill was described from what was learnt when its file was
    /// loaded before, and its code is loaded on its first call.
    Deferred,
}

impl ArtifactCache {
    /// A cache in `dir` (created on first store).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        let dir = dir.into();
        let functions = Arc::new(FunctionCache::new(&dir));
        Self { dir, functions }
    }

    /// The compiled functions shared between components, for the engines' compilers.
    pub(super) fn functions(&self) -> &Arc<FunctionCache> {
        &self.functions
    }

    /// The cache directory.
    #[cfg(feature = "internals")]
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The key of `engine`'s compatibility (wasmtime version, target, and every setting
    /// that affects code) in artifact names. Hashing the settings takes microseconds:
    /// compute it once per engine.
    pub fn engine_key(engine: &Engine) -> u64 {
        let mut hasher = std::hash::DefaultHasher::new();
        std::hash::Hash::hash(&engine.precompile_compatibility_hash(), &mut hasher);
        std::hash::Hasher::finish(&hasher)
    }

    fn path(&self, engine_key: u64, digest: &str) -> PathBuf {
        self.dir.join(format!("{digest}-{engine_key:016x}.cwasm"))
    }

    /// Compiles `bytes` (the component with SHA-256 `digest`) and stores the result for
    /// `engine`, whose [`ArtifactCache::engine_key`] is `engine_key`.
    ///
    /// A cache that cannot be written is not an error: the problem is logged, because a
    /// cache must never stop a skill from running.
    pub fn compile(
        &self,
        engine: &Engine,
        engine_key: u64,
        digest: &str,
        bytes: &[u8],
    ) -> wasmtime::Result<Component> {
        let (reused, compiled) = self.functions.counts();
        let started = std::time::Instant::now();
        let component = Component::new(engine, bytes);
        // Even a component that failed to compile had functions that did.
        self.functions.flush();
        let (reused_after, compiled_after) = self.functions.counts();
        // Counted across the process's compiles: two at once share the figures.
        tracing::info!(
            target: "evo::skill",
            "compiled {} in {} ms: {} functions from the function cache, {} compiled",
            &digest[..digest.len().min(12)],
            started.elapsed().as_millis(),
            reused_after - reused,
            compiled_after - compiled,
        );
        let component = component?;
        if let Err(e) = self.store(&self.path(engine_key, digest), &component) {
            tracing::warn!(dir = %self.dir.display(), error = %e, "could not cache the compiled component");
        }
        Ok(component)
    }

    /// The stored artifact for `digest`, if there is one that loads (one that does not is
    /// logged and compiled again).
    pub fn load(&self, engine: &Engine, engine_key: u64, digest: &str) -> Option<Component> {
        let path = self.path(engine_key, digest);
        if !path.exists() {
            return None;
        }
        deserialize(engine, &path)
            .inspect_err(|e| {
                tracing::warn!(path = %path.display(), error = %e, "discarding unreadable compiled artifact");
            })
            .ok()
    }

    /// Deletes the artifacts of the component with SHA-256 `digest` (one per engine
    /// configuration that ran it). A failure only costs disk space, so it is logged.
    pub fn forget(&self, digest: &str) {
        let Ok(entries) = fs::read_dir(&self.dir) else {
            return;
        };
        let prefix = format!("{digest}-");
        for entry in entries.flatten() {
            if entry.file_name().to_string_lossy().starts_with(&prefix)
                && let Err(e) = fs::remove_file(entry.path())
            {
                tracing::warn!(path = %entry.path().display(), error = %e, "could not remove a compiled artifact");
            }
        }
    }

    /// Makes the artifacts of the component with SHA-256 `from` (one per engine
    /// configuration that compiled it) serve the component `to` too, as hard links (a
    /// copy where the file system refuses links), each put in place atomically. The
    /// caller vouches that compiling the two gives the same code. A failure costs only a
    /// compile later, so it is logged.
    pub fn share(&self, from: &str, to: &str) {
        let Ok(entries) = fs::read_dir(&self.dir) else {
            return;
        };
        let prefix = format!("{from}-");
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(engine) = name.strip_prefix(&prefix) else {
                continue;
            };
            let target = self.dir.join(format!("{to}-{engine}"));
            if let Err(e) = self.link(&entry.path(), &target) {
                tracing::warn!(path = %target.display(), error = %e, "could not share a compiled artifact");
            }
        }
    }

    /// `target` as a hard link to (or else a copy of) `source`, via a temporary name.
    fn link(&self, source: &Path, target: &Path) -> std::io::Result<()> {
        let tmp = tempfile::Builder::new()
            .prefix(".share")
            .tempfile_in(&self.dir)?
            .into_temp_path();
        fs::remove_file(&tmp)?;
        if fs::hard_link(source, &tmp).is_err() {
            fs::copy(source, &tmp)?;
        }
        tmp.persist(target).map_err(|e| e.error)
    }

    /// Writes atomically (temp file + rename), so a crash or a concurrent writer never
    /// leaves a torn artifact under the final name.
    fn store(&self, path: &Path, component: &Component) -> wasmtime::Result<()> {
        fs::create_dir_all(&self.dir)?;
        let bytes = component.serialize()?;
        let mut tmp = tempfile::NamedTempFile::new_in(&self.dir)?;
        tmp.write_all(&bytes)?;
        tmp.as_file().sync_all()?;
        tmp.persist(path).map_err(|e| e.error)?;
        Ok(())
    }
}

#[expect(
    unsafe_code,
    reason = "loading precompiled code is unsafe by nature; see the SAFETY note"
)]
fn deserialize(engine: &Engine, path: &Path) -> wasmtime::Result<Component> {
    // SAFETY: the file was written by `ArtifactCache::store` from `Component::serialize`
    // with this engine's compatibility hash in its name, and wasmtime checks the
    // artifact's header (version, target, settings) again before using it. The cache
    // directory belongs to the evo data directory of the user running the host; anyone
    // able to write there can already replace the evo binary's inputs.
    unsafe { Component::deserialize_file(engine, path) }
}
