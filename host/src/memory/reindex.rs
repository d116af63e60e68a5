//! Re-embedding a memory with another embedder (`evo memory reindex`), and a running
//! host following the switch another process made.

use std::path::Path;
use std::sync::{Arc, Mutex, RwLock};

use super::store::Store;
use super::{Embedder, MemoryConfig, MemoryManager, REINDEX_BATCH, local};
use crate::error::Result;

impl MemoryManager {
    /// Opens the memory of `data_dir` and re-embeds it with `embedder` (see
    /// [`MemoryManager::reindex`]); works whatever embedder the store had, also one
    /// that can no longer be loaded. Returns the memory and how many texts were embedded.
    pub fn reindex_dir(
        data_dir: &Path,
        embedder: Arc<dyn Embedder>,
        progress: &dyn Fn(usize, usize),
    ) -> Result<(Self, usize)> {
        let storage = crate::storage::Storage::Local(data_dir.to_owned());
        Self::reindex_in(&storage, data_dir, embedder, progress)
    }

    /// [`MemoryManager::reindex_dir`] for the memory `storage` keeps (with shared
    /// storage, every node's: restart the others to use the new embedder).
    pub fn reindex_in(
        storage: &crate::storage::Storage,
        data_dir: &Path,
        embedder: Arc<dyn Embedder>,
        progress: &dyn Fn(usize, usize),
    ) -> Result<(Self, usize)> {
        let store = match storage {
            crate::storage::Storage::Local(_) => Store::open(data_dir, embedder.as_ref(), false)?,
            #[cfg(feature = "postgres")]
            crate::storage::Storage::Shared(pg) => {
                Store::open_shared(pg.clone(), embedder.as_ref(), false)?
            }
        };
        let memory = Self {
            data_dir: data_dir.to_owned(),
            embedder: RwLock::new(embedder.clone()),
            config: MemoryConfig::default(),
            store: Mutex::new(store),
            decisions: Default::default(),
        };
        let count = memory.reindex(embedder, progress)?;
        drop(memory.current()?);
        Ok((memory, count))
    }

    /// Re-embeds every entry (and log line) with `embedder` and makes it this memory's
    /// embedder; `progress` hears `(done, total)` as texts are embedded. The vectors are
    /// computed first and written in one transaction, so searches meanwhile use the old
    /// vectors and never a mix. A local embedder is recorded in the store, so later
    /// opens use it (see `configured_embedder`).
    pub fn reindex(
        &self,
        embedder: Arc<dyn Embedder>,
        progress: &dyn Fn(usize, usize),
    ) -> Result<usize> {
        let rows = self.lock().db.texts(None)?;
        let total = rows.len();
        let mut vectors: Vec<Vec<f32>> = Vec::with_capacity(total);
        progress(0, total);
        for chunk in rows.chunks(REINDEX_BATCH) {
            let texts: Vec<&str> = chunk.iter().map(|(_, t)| t.as_str()).collect();
            vectors.extend(embedder.embed(&texts)?);
            progress(vectors.len(), total);
        }
        let mut store = self.lock();
        store.replace_vectors(&rows, &vectors, embedder.as_ref())?;
        local::record(store.db.as_ref(), embedder.as_ref())?;
        *self
            .embedder
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = embedder;
        Ok(total)
    }

    /// Picks up the embedder another process switched this memory to (`evo memory
    /// reindex` while a server runs): when the store records another local embedder
    /// than the one in use, it is loaded, the vectors (which the reindex replaced) are
    /// read again, and it is used from now on. Returns whether it changed. An embedder
    /// configured by the environment (a remote model) is left as it is.
    pub fn follow_reindex(&self) -> Result<bool> {
        let current = self.embedder();
        let Some(in_use) = current.spec() else {
            return Ok(false);
        };
        let recorded = local::recorded_in(self.lock().db.as_ref())?;
        if recorded == in_use {
            return Ok(false);
        }
        let embedder = local::by_name(&recorded, &self.data_dir, None)?;
        let mut store = self.lock();
        store.reload_for(embedder.as_ref())?;
        *self
            .embedder
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = embedder;
        drop(store);
        tracing::info!("memory: now embedding with {recorded}, as `evo memory reindex` chose");
        Ok(true)
    }
}
