//! `memory.db`: entries in SQLite with an FTS5 index, and the in-process vector index
//! kept in step with it, also across processes.
//!
//! Search is hybrid. Candidates are the best [`candidates`] of each side: FTS5 by bm25
//! (terms that match more than [`COMMON_TERM_FRACTION`] of a large store are left out
//! of the keyword query, because ranking every row that holds "the" is the slow part and
//! says nothing) and the vector index by cosine. Each candidate's score is
//!
//! [`rank::fuse`](super::rank::fuse) of the two, with the exact cosine from the stored
//! `f32` vector, so scores are in [0, 1]. The
//! vector side always runs: a search never quietly becomes keyword-only.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, OptionalExtension, params, params_from_iter};
use sha2::{Digest, Sha256};

use super::embed::{Embedder, dot};
use super::files::{self, MEMORY_MD};
use super::index::VectorIndex;
use super::{Category, MemoryEntry, Source};
use crate::error::{Error, Result};

/// File name of the memory database in the data directory.
pub const MEMORY_DB: &str = "memory.db";
/// A query term found in more than this share of entries is dropped from the keyword
/// side (once the store has [`COMMON_TERM_MIN_ENTRIES`] entries).
pub const COMMON_TERM_FRACTION: f64 = 0.1;
/// Below this many entries every term is used: small stores are fast anyway.
pub const COMMON_TERM_MIN_ENTRIES: usize = 1_000;

/// Candidates taken from each side for `limit` results.
pub fn candidates(limit: usize) -> usize {
    (limit * 4).max(40)
}

const SCHEMA: &[&str] = &[
    // 1: entries, their full-text index, and settings.
    "CREATE TABLE entries (
        rowid INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        text TEXT NOT NULL,
        category TEXT NOT NULL,
        source TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        superseded_by TEXT,
        model TEXT NOT NULL,
        embedding BLOB NOT NULL
    ) STRICT;
    CREATE INDEX entries_source ON entries(source);
    CREATE VIRTUAL TABLE entries_fts USING fts5(text, content='entries', content_rowid='rowid',
        tokenize='unicode61 remove_diacritics 2');
    CREATE TRIGGER entries_ai AFTER INSERT ON entries BEGIN
        INSERT INTO entries_fts(rowid, text) VALUES (new.rowid, new.text);
    END;
    CREATE TRIGGER entries_ad AFTER DELETE ON entries BEGIN
        INSERT INTO entries_fts(entries_fts, rowid, text) VALUES ('delete', old.rowid, old.text);
    END;
    CREATE TRIGGER entries_au AFTER UPDATE OF text ON entries BEGIN
        INSERT INTO entries_fts(entries_fts, rowid, text) VALUES ('delete', old.rowid, old.text);
        INSERT INTO entries_fts(rowid, text) VALUES (new.rowid, new.text);
    END;
    CREATE VIRTUAL TABLE entries_vocab USING fts5vocab(entries_fts, 'row');
    CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;",
];

/// The database and the vector index, owned by one `MemoryManager` behind a mutex.
#[derive(Debug)]
pub(super) struct Store {
    pub(super) conn: Connection,
    pub(super) index: VectorIndex,
    data_version: i64,
    path: PathBuf,
}

pub(super) fn now_ms() -> i64 {
    i64::try_from(crate::unix_millis()).unwrap_or(i64::MAX)
}

pub(super) use crate::db::database_error as db_error;

/// A vector as stored in SQLite: little-endian `f32`s, shared by every table that keeps
/// embeddings (memory entries, the skill index).
pub fn to_blob(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The vector [`to_blob`] stored.
pub fn from_blob(blob: &[u8]) -> Vec<f32> {
    blob.chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
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
    /// Opens `memory.db` in `data_dir`, migrates it, re-embeds if the embedder changed,
    /// and loads the vector index.
    pub(super) fn open(data_dir: &Path, embedder: &dyn Embedder) -> Result<Self> {
        std::fs::create_dir_all(data_dir).map_err(Error::io_at(data_dir))?;
        let path = data_dir.join(MEMORY_DB);
        let conn = crate::db::open_sqlite(&path, SCHEMA)?;
        let mut store = Self {
            conn,
            index: VectorIndex::new(embedder.dim()),
            data_version: 0,
            path,
        };
        store.check_model(embedder)?;
        store.reload()?;
        Ok(store)
    }

    pub(super) fn fail(&self, error: &rusqlite::Error) -> Error {
        db_error(&self.path, error)
    }

    fn check_model(&mut self, embedder: &dyn Embedder) -> Result<()> {
        let model = embedder.model();
        let stored: Option<String> = self
            .conn
            .query_row("SELECT value FROM settings WHERE key = 'model'", [], |r| {
                r.get(0)
            })
            .optional()
            .map_err(|e| self.fail(&e))?;
        if stored.as_deref() == Some(model.as_str()) {
            return Ok(());
        }
        let path = self.path.clone();
        let fail = |e: rusqlite::Error| db_error(&path, &e);
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(fail)?;
        let rows: Vec<(i64, String)> = tx
            .prepare("SELECT rowid, text FROM entries WHERE model != ?1")
            .and_then(|mut q| {
                q.query_map([&model], |r| Ok((r.get(0)?, r.get(1)?)))?
                    .collect()
            })
            .map_err(fail)?;
        if let Some(previous) = &stored {
            tracing::warn!(
                "memory: the embedder changed from {previous} to {model} (dimension {}); re-embedding {} entries",
                embedder.dim(),
                rows.len()
            );
        }
        for chunk in rows.chunks(256) {
            let texts: Vec<&str> = chunk.iter().map(|(_, t)| t.as_str()).collect();
            let vectors = embedder.embed(&texts)?;
            for ((rowid, _), vector) in chunk.iter().zip(vectors) {
                tx.execute(
                    "UPDATE entries SET model = ?1, embedding = ?2 WHERE rowid = ?3",
                    params![model, to_blob(&vector), rowid],
                )
                .map_err(fail)?;
            }
        }
        tx.execute(
            "INSERT INTO settings(key, value) VALUES ('model', ?1)
             ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            [&model],
        )
        .map_err(fail)?;
        tx.commit().map_err(fail)
    }

    /// Rebuilds the vector index from the database.
    fn reload(&mut self) -> Result<()> {
        // Read the version first: a commit that lands while the rows are read then
        // shows as a newer version at the next refresh, instead of being missed.
        let version = self.data_version()?;
        let mut index = VectorIndex::new(self.index.dim());
        {
            let mut query = self
                .conn
                .prepare("SELECT rowid, embedding FROM entries WHERE superseded_by IS NULL")
                .map_err(|e| self.fail(&e))?;
            let mut rows = query.query([]).map_err(|e| self.fail(&e))?;
            while let Some(row) = rows.next().map_err(|e| self.fail(&e))? {
                let rowid: i64 = row.get(0).map_err(|e| self.fail(&e))?;
                let blob: Vec<u8> = row.get(1).map_err(|e| self.fail(&e))?;
                index.insert(rowid, &from_blob(&blob));
            }
        }
        self.index = index;
        self.data_version = version;
        Ok(())
    }

    fn data_version(&self) -> Result<i64> {
        self.conn
            .pragma_query_value(None, "data_version", |r| r.get(0))
            .map_err(|e| self.fail(&e))
    }

    /// Brings the index up to date with writes of other connections (other processes),
    /// which change `PRAGMA data_version`; this connection's own writes do not change it
    /// (SQLite's documented behaviour), and update the index directly.
    pub(super) fn refresh(&mut self) -> Result<()> {
        if self.data_version()? != self.data_version {
            self.reload()?;
        }
        Ok(())
    }

    /// Re-indexes `MEMORY.md` if it changed since it was last indexed (by any process).
    pub(super) fn sync_memory_md(
        &mut self,
        data_dir: &Path,
        embedder: &dyn Embedder,
    ) -> Result<()> {
        let path = data_dir.join(MEMORY_MD);
        let text = files::load_long_term(data_dir)?;
        let signature = hex::encode(Sha256::digest(text.as_bytes()));
        let stored: Option<String> = self
            .conn
            .query_row(
                "SELECT value FROM settings WHERE key = 'memory_md'",
                [],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.fail(&e))?;
        if stored.as_deref() == Some(signature.as_str()) {
            return Ok(());
        }
        let items = files::memory_md_items(&text);
        let texts: Vec<&str> = items.iter().map(String::as_str).collect();
        let vectors = embedder.embed(&texts)?;
        let model = embedder.model();
        let now = now_ms();
        let db_path = self.path.clone();
        let fail = |e: rusqlite::Error| db_error(&db_path, &e);
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(fail)?;
        let removed: Vec<i64> = tx
            .prepare("DELETE FROM entries WHERE source = 'file' RETURNING rowid")
            .and_then(|mut q| q.query_map([], |r| r.get(0))?.collect())
            .map_err(fail)?;
        let mut added = Vec::with_capacity(items.len());
        for (item, vector) in items.iter().zip(&vectors) {
            tx.execute(
                "INSERT INTO entries (id, text, category, source, created_at, updated_at, model, embedding)
                 VALUES (?1, ?2, 'other', 'file', ?3, ?3, ?4, ?5)",
                params![new_id(item), item, now, model, to_blob(vector)],
            )
            .map_err(fail)?;
            added.push(tx.last_insert_rowid());
        }
        tx.execute(
            "INSERT INTO settings(key, value) VALUES ('memory_md', ?1)
             ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            [&signature],
        )
        .map_err(fail)?;
        tx.commit().map_err(fail)?;
        for rowid in removed {
            self.index.remove(rowid);
        }
        for (rowid, vector) in added.into_iter().zip(&vectors) {
            self.index.insert(rowid, vector);
        }
        tracing::info!(
            "memory: indexed {} items of {}",
            items.len(),
            path.display()
        );
        Ok(())
    }

    /// Keyword candidates: `(rowid, bm25 score > 0)`, best first.
    pub(super) fn keyword_candidates(&self, query: &str, n: usize) -> Result<Vec<(i64, f32)>> {
        let total = self.index.len();
        let mut terms: Vec<String> = Vec::new();
        for word in super::rank::query_terms(query) {
            if total >= COMMON_TERM_MIN_ENTRIES {
                let docs: i64 = self
                    .conn
                    .prepare_cached("SELECT doc FROM entries_vocab WHERE term = ?1")
                    .and_then(|mut q| q.query_row([&word], |r| r.get(0)).optional())
                    .map_err(|e| self.fail(&e))?
                    .unwrap_or(0);
                if docs as f64 > COMMON_TERM_FRACTION * total as f64 {
                    continue;
                }
            }
            terms.push(word);
        }
        if terms.is_empty() {
            return Ok(Vec::new());
        }
        let expression = super::rank::fts_any(&terms);
        let mut query = self
            .conn
            .prepare_cached(
                "SELECT rowid, -bm25(entries_fts) FROM entries_fts WHERE entries_fts MATCH ?1
                 ORDER BY bm25(entries_fts) LIMIT ?2",
            )
            .map_err(|e| self.fail(&e))?;
        let rows = query
            .query_map(params![expression, n as i64], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, f64>(1)? as f32))
            })
            .map_err(|e| self.fail(&e))?;
        rows.collect::<rusqlite::Result<_>>()
            .map_err(|e| self.fail(&e))
    }

    /// The active entries among `rowids`, each with its exact cosine to `query`.
    pub(super) fn fetch(
        &self,
        rowids: &[i64],
        query: &[f32],
    ) -> Result<Vec<(i64, MemoryEntry, f32)>> {
        if rowids.is_empty() {
            return Ok(Vec::new());
        }
        let placeholders = vec!["?"; rowids.len()].join(",");
        let sql = format!(
            "SELECT rowid, id, text, category, source, created_at, updated_at, embedding
             FROM entries WHERE superseded_by IS NULL AND rowid IN ({placeholders})"
        );
        let mut statement = self.conn.prepare(&sql).map_err(|e| self.fail(&e))?;
        let rows = statement
            .query_map(params_from_iter(rowids), |r| {
                let blob: Vec<u8> = r.get(7)?;
                Ok((
                    r.get::<_, i64>(0)?,
                    MemoryEntry {
                        id: r.get(1)?,
                        text: r.get(2)?,
                        score: 0.0,
                        category: Category::parse(&r.get::<_, String>(3)?)
                            .unwrap_or(Category::Other),
                        source: Source::parse(&r.get::<_, String>(4)?),
                        created_at: r.get(5)?,
                        updated_at: r.get(6)?,
                    },
                    dot(&from_blob(&blob), query),
                ))
            })
            .map_err(|e| self.fail(&e))?;
        rows.collect::<rusqlite::Result<_>>()
            .map_err(|e| self.fail(&e))
    }

    /// Inserts an entry (in the caller's transaction) and returns its rowid.
    pub(super) fn insert(
        tx: &Connection,
        entry: &MemoryEntry,
        model: &str,
        vector: &[f32],
    ) -> rusqlite::Result<i64> {
        tx.execute(
            "INSERT INTO entries (id, text, category, source, created_at, updated_at, model, embedding)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                entry.id,
                entry.text,
                entry.category.as_str(),
                entry.source.as_str(),
                entry.created_at,
                entry.updated_at,
                model,
                to_blob(vector)
            ],
        )?;
        Ok(tx.last_insert_rowid())
    }

    /// The database file.
    pub(super) fn path(&self) -> &Path {
        &self.path
    }
}
