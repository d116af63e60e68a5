//! The memory's entries in a database (`memory.db` in SQLite with an FTS5 index, or
//! PostgreSQL shared by several nodes, behind one internal trait), and the in-process
//! vector index kept in step with it, also across processes and nodes.
//!
//! Search is hybrid. Candidates are the best [`candidates`] of each side: FTS5 by bm25
//! (terms that match more than [`COMMON_TERM_FRACTION`] of a large store are left out
//! of the keyword query, because ranking every row that holds "the" is the slow part and
//! says nothing) and the vector index by cosine. Each candidate's score is
//!
//! [`rank::fuse`](crate::retrieval::rank::fuse) of the two, with the exact cosine from the stored
//! `f32` vector, so scores are in [0, 1]. The
//! vector side always runs: a search never quietly becomes keyword-only.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};

use super::files::{self, MEMORY_MD};
use super::index::{Meta, VectorIndex};
use super::{MemoryEntry, Source};
use crate::error::{Error, Result};
use crate::retrieval::embed::Embedder;
pub(super) use crate::retrieval::{from_blob, to_blob};

/// File name of the memory database in the data directory.
pub const MEMORY_DB: &str = "memory.db";
/// A query term found in more than this share of entries is dropped from the keyword
/// side (once the store has [`COMMON_TERM_MIN_ENTRIES`] entries).
pub const COMMON_TERM_FRACTION: f64 = 0.1;
/// Below this many entries every term is used: small stores are fast anyway.
pub const COMMON_TERM_MIN_ENTRIES: usize = 1_000;
/// Changed entries (written by other processes or nodes) read one by one into the
/// index; more, and the index is read again whole.
pub const RELOAD_ALL_AFTER: usize = 1_000;

/// Candidates taken from each side for `limit` results.
pub fn candidates(limit: usize) -> usize {
    (limit * 4).max(40)
}

pub(super) mod backend;
mod files_index;
#[cfg(feature = "postgres")]
mod postgres;
mod sqlite;

#[cfg(all(feature = "postgres", feature = "internals"))]
pub use postgres::FRESH_FOR as SHARED_FRESH_FOR;

use backend::{Changes, Decision, MemoryDb};

/// How often a search looks at every daily log for changes made by hand or by another
/// process; today's log is looked at on every search.
pub const LOG_SCAN_INTERVAL: std::time::Duration = std::time::Duration::from_secs(2);

/// Which entries a search or a duplicate check may return.
#[derive(Debug, Clone, Default)]
pub(super) struct Filter {
    pub(super) sources: Vec<Source>,
    pub(super) since_ms: Option<i64>,
    pub(super) until_ms: Option<i64>,
    pub(super) include_superseded: bool,
}

impl Filter {
    pub(super) fn keeps(&self, meta: &Meta) -> bool {
        (self.sources.is_empty() || self.sources.contains(&meta.source))
            && self.since_ms.is_none_or(|t| meta.created_at >= t)
            && self.until_ms.is_none_or(|t| meta.created_at <= t)
    }

    /// Whether it lets everything through but superseded entries (the fast path).
    pub(super) fn is_open(&self) -> bool {
        self.sources.is_empty() && self.since_ms.is_none() && self.until_ms.is_none()
    }
}

/// The database and the vector index, owned by one `MemoryManager` behind a mutex.
#[derive(Debug)]
pub(super) struct Store {
    pub(super) db: Box<dyn MemoryDb>,
    /// Vectors of the active entries.
    pub(super) index: VectorIndex,
    /// Vectors of superseded entries, searched only on request.
    pub(super) retired: VectorIndex,
    logs_scanned: Option<std::time::Instant>,
}

pub(super) fn now_ms() -> i64 {
    i64::try_from(crate::unix_millis()).unwrap_or(i64::MAX)
}

/// A new stable id: `mem-` and 16 hex digits of a hash of the text, the time and a
/// process-wide counter.
pub(super) fn new_id(text: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mut hasher = Sha256::new();
    hasher.update(text.as_bytes());
    hasher.update(nanos.to_le_bytes());
    hasher.update(COUNTER.fetch_add(1, Ordering::Relaxed).to_le_bytes());
    hasher.update(std::process::id().to_le_bytes());
    format!("mem-{}", &hex::encode(hasher.finalize())[..16])
}

impl Store {
    /// Opens `memory.db` in `data_dir`, migrates it, re-embeds if the embedder changed
    /// (when `reembed`; else the caller re-embeds, see `MemoryManager::reindex_dir`),
    /// and loads the vector index.
    pub(super) fn open(data_dir: &Path, embedder: &dyn Embedder, reembed: bool) -> Result<Self> {
        std::fs::create_dir_all(data_dir).map_err(Error::io_at(data_dir))?;
        let db = sqlite::Sqlite::open(&data_dir.join(MEMORY_DB))?;
        Self::open_in(Box::new(db), embedder, reembed)
    }

    /// Opens the memory shared by the nodes on `pg`, as [`Store::open`] does.
    #[cfg(feature = "postgres")]
    pub(super) fn open_shared(
        pg: std::sync::Arc<crate::storage::Pg>,
        embedder: &dyn Embedder,
        reembed: bool,
    ) -> Result<Self> {
        let db = postgres::Postgres::open(pg)?;
        Self::open_in(Box::new(db), embedder, reembed)
    }

    fn open_in(db: Box<dyn MemoryDb>, embedder: &dyn Embedder, reembed: bool) -> Result<Self> {
        let mut store = Self {
            db,
            index: VectorIndex::new(embedder.dim()),
            retired: VectorIndex::new(embedder.dim()),
            logs_scanned: None,
        };
        if reembed {
            store.check_model(embedder)?;
        }
        store.recheck_supersedes()?;
        store.reload()?;
        Ok(store)
    }

    /// Runs `f` in a write transaction: committed if it succeeds, rolled back if not.
    pub(super) fn write<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        self.db.begin()?;
        match f(self) {
            Ok(value) => {
                self.db.commit()?;
                Ok(value)
            }
            Err(e) => {
                self.db.rollback();
                Err(e)
            }
        }
    }

    /// Once per store: entries the previous dedup rule (a cosine threshold) marked as
    /// superseded are compared again with [`super::decide`], and those that are a
    /// different fact from the entry that superseded them are searchable again, with
    /// a `restore` decision in their history. The rule that hid them lost facts of one
    /// shape (one server's port superseded by another's).
    fn recheck_supersedes(&mut self) -> Result<()> {
        const DONE: &str = "supersedes_rechecked";
        if self.db.setting(DONE)?.is_some() {
            return Ok(());
        }
        self.write(|store| {
            let db = &store.db;
            if db.setting(DONE)?.is_some() {
                return Ok(());
            }
            let now = now_ms();
            let mut restored = 0;
            for (rowid, id, text, newer, newer_text) in db.superseded_pairs()? {
                if let super::decide::Relation::Different(why) =
                    super::decide::relate(&text, &newer_text)
                {
                    db.set_superseded(rowid, None, now)?;
                    let reason = format!(
                        "restored {id}: an earlier version of Evo took it for an older version of {newer}, but it is a different fact ({why})"
                    );
                    db.record(Decision {
                        at: now,
                        action: "restore",
                        entry: &id,
                        supersedes: None,
                        text: &text,
                        reason: &reason,
                    })?;
                    tracing::warn!("memory: {reason}");
                    restored += 1;
                }
            }
            db.set_setting(DONE, Some(&restored.to_string()))
        })
    }

    /// Where the entries are: the file, or the shared database's URL.
    pub(super) fn describe(&self) -> String {
        self.db.describe()
    }

    fn check_model(&mut self, embedder: &dyn Embedder) -> Result<()> {
        let model = embedder.model();
        let stored = self.db.setting("model")?;
        if stored.as_deref() == Some(model.as_str()) {
            return Ok(());
        }
        if let Some(previous) = stored.as_ref().filter(|_| self.db.shared()) {
            // Re-embedding here would undo what other nodes embedded, and they would
            // redo it when they next start.
            return Err(Error::Database {
                message: format!(
                    "the shared memory in {} is embedded with {previous}, and this node embeds with {model}: give every node the same embedder (EVO_EMBED_MODEL, or none), or switch all of them with `evo memory reindex --embedder NAME` on one node",
                    self.db.describe()
                ),
                transient: false,
            });
        }
        if let Some(previous) = &stored {
            tracing::warn!(
                "memory: the embedder changed from {previous} to {model} (dimension {}); re-embedding the entries",
                embedder.dim()
            );
        }
        self.write(|store| embed_stale(store.db.as_ref(), embedder))
    }

    /// Rebuilds the vector index from the database.
    fn reload(&mut self) -> Result<()> {
        // Mark first: a commit that lands while the rows are read then shows as a
        // change at the next refresh, instead of being missed.
        self.db.mark_current()?;
        let mut index = VectorIndex::new(self.index.dim());
        let mut retired = VectorIndex::new(self.index.dim());
        for row in self.db.all_vectors()? {
            let target = if row.superseded {
                &mut retired
            } else {
                &mut index
            };
            target.insert(row.rowid, &row.vector, row.meta);
        }
        self.index = index;
        self.retired = retired;
        Ok(())
    }

    /// Brings the index up to date with writes of other connections (other processes
    /// or nodes); this store's own writes update the index directly.
    pub(super) fn refresh(&mut self) -> Result<()> {
        match self.db.changes()? {
            Changes::None => Ok(()),
            Changes::All => self.reload(),
            // Past this many, one pass over every vector is quicker.
            Changes::Rows(rowids) if rowids.len() > RELOAD_ALL_AFTER => self.reload(),
            Changes::Rows(rowids) => self.reload_rows(&rowids),
        }
    }

    /// Keyword candidates among the entries `filter` keeps: `(rowid, score > 0)`,
    /// best first. Without a filter, superseded entries may be among them (`fetch`
    /// drops them); that keeps the common query a plain index lookup.
    pub(super) fn keyword_candidates(
        &self,
        query: &str,
        n: usize,
        filter: &Filter,
    ) -> Result<Vec<(i64, f32)>> {
        let total = self.index.len();
        let mut terms: Vec<String> = Vec::new();
        for word in crate::retrieval::rank::query_terms(query) {
            if total >= COMMON_TERM_MIN_ENTRIES
                && self.db.is_common(&word, COMMON_TERM_FRACTION, total)?
            {
                continue;
            }
            terms.push(word);
        }
        if terms.is_empty() {
            return Ok(Vec::new());
        }
        let total = total + self.retired.len();
        self.db.keyword(&terms, n, filter, total)
    }

    /// The entries among `rowids` (active ones only, unless `include_superseded`), each
    /// with its exact cosine to `query`.
    pub(super) fn fetch(
        &self,
        rowids: &[i64],
        query: &[f32],
        include_superseded: bool,
    ) -> Result<Vec<(i64, MemoryEntry, f32)>> {
        Ok(self
            .db
            .fetch(rowids, include_superseded)?
            .into_iter()
            .map(|(rowid, entry, vector)| {
                (rowid, entry, crate::retrieval::embed::dot(&vector, query))
            })
            .collect())
    }

    /// Puts the entry `rowid` where it now belongs in the index: active, retired
    /// (superseded), or gone (deleted).
    pub(super) fn reload_one(&mut self, rowid: i64) -> Result<()> {
        self.reload_rows(&[rowid])
    }

    /// [`Store::reload_one`] for each of `rowids`, reading them in one query.
    fn reload_rows(&mut self, rowids: &[i64]) -> Result<()> {
        let rows = self.db.indexed(rowids)?;
        for rowid in rowids {
            self.index.remove(*rowid);
            self.retired.remove(*rowid);
        }
        for row in rows {
            let target = if row.superseded {
                &mut self.retired
            } else {
                &mut self.index
            };
            target.insert(row.rowid, &row.vector, row.meta);
        }
        Ok(())
    }

    /// Writes `vectors` (of `embedder`) for `rows` in one transaction, embeds any entry
    /// added meanwhile inside it, records the model, and rebuilds the index.
    pub(super) fn replace_vectors(
        &mut self,
        rows: &[(i64, String)],
        vectors: &[Vec<f32>],
        embedder: &dyn Embedder,
    ) -> Result<()> {
        let model = embedder.model();
        self.write(|store| {
            for ((rowid, _), vector) in rows.iter().zip(vectors) {
                store.db.set_vector(*rowid, &model, vector)?;
            }
            // Entries added since the vectors were computed.
            embed_stale(store.db.as_ref(), embedder)
        })?;
        self.reload_for(embedder)
    }

    /// Loads every vector again into indexes of `embedder`'s dimension: after its
    /// vectors replaced another model's (here or in another process).
    pub(super) fn reload_for(&mut self, embedder: &dyn Embedder) -> Result<()> {
        self.index = VectorIndex::new(embedder.dim());
        self.retired = VectorIndex::new(embedder.dim());
        self.reload()
    }
}

/// Embeds (in the caller's transaction) every entry whose vector is not `embedder`'s,
/// and records `embedder`'s model as the store's.
fn embed_stale(db: &dyn MemoryDb, embedder: &dyn Embedder) -> Result<()> {
    let model = embedder.model();
    let rows = db.texts(Some(&model))?;
    for chunk in rows.chunks(256) {
        let texts: Vec<&str> = chunk.iter().map(|(_, t)| t.as_str()).collect();
        let vectors = embedder.embed(&texts)?;
        for ((rowid, _), vector) in chunk.iter().zip(vectors) {
            db.set_vector(*rowid, &model, &vector)?;
        }
    }
    db.set_setting("model", Some(&model))
}
