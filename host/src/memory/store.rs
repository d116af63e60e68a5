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
use super::index::{Meta, VectorIndex};
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

mod files_index;

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
    // 2: the decision of every store, supersede chains, and the indexed daily logs.
    "CREATE INDEX entries_superseded ON entries(superseded_by);
    CREATE TABLE decisions (
        rowid INTEGER PRIMARY KEY,
        at INTEGER NOT NULL,
        action TEXT NOT NULL,
        entry TEXT NOT NULL,
        supersedes TEXT,
        text TEXT NOT NULL,
        reason TEXT NOT NULL
    ) STRICT;
    CREATE INDEX decisions_entry ON decisions(entry);
    CREATE INDEX decisions_supersedes ON decisions(supersedes);
    CREATE TABLE log_files (
        day TEXT PRIMARY KEY,
        len INTEGER NOT NULL,
        mtime INTEGER NOT NULL,
        digest TEXT NOT NULL,
        bullets INTEGER NOT NULL
    ) STRICT;",
];

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
    pub(super) conn: Connection,
    /// Vectors of the active entries.
    pub(super) index: VectorIndex,
    /// Vectors of superseded entries, searched only on request.
    pub(super) retired: VectorIndex,
    data_version: i64,
    path: PathBuf,
    logs_scanned: Option<std::time::Instant>,
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
    /// Opens `memory.db` in `data_dir`, migrates it, re-embeds if the embedder changed
    /// (when `reembed`; else the caller re-embeds, see `MemoryManager::reindex_dir`),
    /// and loads the vector index.
    pub(super) fn open(data_dir: &Path, embedder: &dyn Embedder, reembed: bool) -> Result<Self> {
        std::fs::create_dir_all(data_dir).map_err(Error::io_at(data_dir))?;
        let path = data_dir.join(MEMORY_DB);
        let conn = crate::db::open_sqlite(&path, SCHEMA)?;
        let mut store = Self {
            conn,
            index: VectorIndex::new(embedder.dim()),
            retired: VectorIndex::new(embedder.dim()),
            data_version: 0,
            path,
            logs_scanned: None,
        };
        if reembed {
            store.check_model(embedder)?;
        }
        store.recheck_supersedes()?;
        store.reload()?;
        Ok(store)
    }

    /// Once per store: entries the previous dedup rule (a cosine threshold) marked as
    /// superseded are compared again with [`super::decide`], and those that are a
    /// different fact from the entry that superseded them are searchable again, with
    /// a `restore` decision in their history. The rule that hid them lost facts of one
    /// shape (one server's port superseded by another's).
    fn recheck_supersedes(&mut self) -> Result<()> {
        const DONE: &str = "supersedes_rechecked";
        if self.setting(DONE)?.is_some() {
            return Ok(());
        }
        let path = self.path.clone();
        let fail = |e: rusqlite::Error| db_error(&path, &e);
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(fail)?;
        let pairs: Vec<(i64, String, String, String, String)> = tx
            .prepare(
                "SELECT old.rowid, old.id, old.text, new.id, new.text FROM entries old
                 JOIN entries new ON new.id = old.superseded_by",
            )
            .and_then(|mut q| {
                q.query_map([], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
                })?
                .collect()
            })
            .map_err(fail)?;
        let now = now_ms();
        let mut restored = 0;
        for (rowid, id, text, newer, newer_text) in pairs {
            if let super::decide::Relation::Different(why) =
                super::decide::relate(&text, &newer_text)
            {
                tx.execute(
                    "UPDATE entries SET superseded_by = NULL, updated_at = ?1 WHERE rowid = ?2",
                    params![now, rowid],
                )
                .map_err(fail)?;
                let reason = format!(
                    "restored {id}: an earlier version of Evo took it for an older version of {newer}, but it is a different fact ({why})"
                );
                tx.execute(
                    "INSERT INTO decisions (at, action, entry, supersedes, text, reason)
                     VALUES (?1, 'restore', ?2, NULL, ?3, ?4)",
                    params![now, id, text, reason],
                )
                .map_err(fail)?;
                tracing::warn!("memory: {reason}");
                restored += 1;
            }
        }
        tx.execute(
            "INSERT INTO settings(key, value) VALUES (?1, ?2)",
            params![DONE, restored.to_string()],
        )
        .map_err(fail)?;
        tx.commit().map_err(fail)
    }

    pub(super) fn fail(&self, error: &rusqlite::Error) -> Error {
        db_error(&self.path, error)
    }

    /// The value of a setting, if it is set.
    fn setting(&self, key: &str) -> Result<Option<String>> {
        self.conn
            .query_row("SELECT value FROM settings WHERE key = ?1", [key], |r| {
                r.get(0)
            })
            .optional()
            .map_err(|e| self.fail(&e))
    }

    fn check_model(&mut self, embedder: &dyn Embedder) -> Result<()> {
        let model = embedder.model();
        let stored = self.setting("model")?;
        if stored.as_deref() == Some(model.as_str()) {
            return Ok(());
        }
        let path = self.path.clone();
        let fail = |e: rusqlite::Error| db_error(&path, &e);
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(fail)?;
        if let Some(previous) = &stored {
            tracing::warn!(
                "memory: the embedder changed from {previous} to {model} (dimension {}); re-embedding the entries",
                embedder.dim()
            );
        }
        embed_stale(&tx, embedder, &path)?;
        tx.commit().map_err(fail)
    }

    /// Rebuilds the vector index from the database.
    fn reload(&mut self) -> Result<()> {
        // Read the version first: a commit that lands while the rows are read then
        // shows as a newer version at the next refresh, instead of being missed.
        let version = self.data_version()?;
        let mut index = VectorIndex::new(self.index.dim());
        let mut retired = VectorIndex::new(self.index.dim());
        {
            let mut query = self
                .conn
                .prepare(
                    "SELECT rowid, embedding, source, created_at, superseded_by IS NOT NULL
                     FROM entries",
                )
                .map_err(|e| self.fail(&e))?;
            let mut rows = query.query([]).map_err(|e| self.fail(&e))?;
            while let Some(row) = rows.next().map_err(|e| self.fail(&e))? {
                let read = || -> rusqlite::Result<(i64, Vec<u8>, Meta, bool)> {
                    Ok((
                        row.get(0)?,
                        row.get(1)?,
                        Meta {
                            source: Source::parse(&row.get::<_, String>(2)?),
                            created_at: row.get(3)?,
                        },
                        row.get(4)?,
                    ))
                };
                let (rowid, blob, meta, superseded) = read().map_err(|e| self.fail(&e))?;
                let target = if superseded { &mut retired } else { &mut index };
                target.insert(rowid, &from_blob(&blob), meta);
            }
        }
        self.index = index;
        self.retired = retired;
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

    /// Keyword candidates among the entries `filter` keeps: `(rowid, bm25 score > 0)`,
    /// best first. Without a filter, superseded entries may be among them (`fetch`
    /// drops them); that keeps the common query a plain FTS5 lookup.
    pub(super) fn keyword_candidates(
        &self,
        query: &str,
        n: usize,
        filter: &Filter,
    ) -> Result<Vec<(i64, f32)>> {
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
        let row = |r: &rusqlite::Row<'_>| Ok((r.get::<_, i64>(0)?, r.get::<_, f64>(1)? as f32));
        let found = if filter.is_open() {
            self.conn
                .prepare_cached(
                    "SELECT rowid, -bm25(entries_fts) FROM entries_fts WHERE entries_fts MATCH ?1
                     ORDER BY bm25(entries_fts) LIMIT ?2",
                )
                .and_then(|mut q| {
                    q.query_map(params![expression, n as i64], row)?
                        .collect::<rusqlite::Result<Vec<_>>>()
                })
        } else {
            let sources: String = filter
                .sources
                .iter()
                .map(|s| format!(",{},", s.as_str()))
                .collect();
            self.conn
                .prepare_cached(
                    "SELECT entries_fts.rowid, -bm25(entries_fts) FROM entries_fts
                     JOIN entries e ON e.rowid = entries_fts.rowid
                     WHERE entries_fts MATCH ?1
                       AND (?3 = '' OR instr(?3, ',' || e.source || ',') > 0)
                       AND e.created_at BETWEEN ?4 AND ?5
                       AND (?6 OR e.superseded_by IS NULL)
                     ORDER BY bm25(entries_fts) LIMIT ?2",
                )
                .and_then(|mut q| {
                    q.query_map(
                        params![
                            expression,
                            n as i64,
                            sources,
                            filter.since_ms.unwrap_or(i64::MIN),
                            filter.until_ms.unwrap_or(i64::MAX),
                            filter.include_superseded
                        ],
                        row,
                    )?
                    .collect::<rusqlite::Result<Vec<_>>>()
                })
        };
        found.map_err(|e| self.fail(&e))
    }

    /// The entries among `rowids` (active ones only, unless `include_superseded`), each
    /// with its exact cosine to `query`.
    pub(super) fn fetch(
        &self,
        rowids: &[i64],
        query: &[f32],
        include_superseded: bool,
    ) -> Result<Vec<(i64, MemoryEntry, f32)>> {
        if rowids.is_empty() {
            return Ok(Vec::new());
        }
        let placeholders = vec!["?"; rowids.len()].join(",");
        let active = if include_superseded {
            ""
        } else {
            "superseded_by IS NULL AND"
        };
        let sql = format!(
            "SELECT {ENTRY_COLUMNS}, embedding FROM entries WHERE {active} rowid IN ({placeholders})"
        );
        let mut statement = self.conn.prepare(&sql).map_err(|e| self.fail(&e))?;
        let rows = statement
            .query_map(params_from_iter(rowids), |r| {
                let blob: Vec<u8> = r.get(8)?;
                Ok((
                    r.get::<_, i64>(0)?,
                    entry_row(r)?,
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

    /// Moves the entry `rowid`, just superseded, from the active index to the retired one.
    pub(super) fn reload_one(&mut self, rowid: i64) -> Result<()> {
        let row: Option<(Vec<u8>, String, i64)> = self
            .conn
            .query_row(
                "SELECT embedding, source, created_at FROM entries WHERE rowid = ?1",
                [rowid],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()
            .map_err(|e| self.fail(&e))?;
        self.index.remove(rowid);
        if let Some((blob, source, created_at)) = row {
            let meta = Meta {
                source: Source::parse(&source),
                created_at,
            };
            self.retired.insert(rowid, &from_blob(&blob), meta);
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
        let path = self.path.clone();
        let fail = |e: rusqlite::Error| db_error(&path, &e);
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(fail)?;
        {
            let mut update = tx
                .prepare("UPDATE entries SET model = ?1, embedding = ?2 WHERE rowid = ?3")
                .map_err(fail)?;
            for ((rowid, _), vector) in rows.iter().zip(vectors) {
                update
                    .execute(params![model, to_blob(vector), rowid])
                    .map_err(fail)?;
            }
        }
        // Entries added since the vectors were computed.
        embed_stale(&tx, embedder, &path)?;
        tx.commit().map_err(fail)?;
        self.index = VectorIndex::new(embedder.dim());
        self.retired = VectorIndex::new(embedder.dim());
        self.reload()
    }
}

/// Embeds (in `tx`) every entry whose vector is not `embedder`'s, and records
/// `embedder`'s model as the store's.
fn embed_stale(tx: &Connection, embedder: &dyn Embedder, path: &Path) -> Result<()> {
    let fail = |e: rusqlite::Error| db_error(path, &e);
    let model = embedder.model();
    let rows: Vec<(i64, String)> = tx
        .prepare("SELECT rowid, text FROM entries WHERE model != ?1")
        .and_then(|mut q| {
            q.query_map([&model], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect()
        })
        .map_err(fail)?;
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
    Ok(())
}

/// The columns [`entry_row`] reads, after the rowid.
pub(super) const ENTRY_COLUMNS: &str =
    "rowid, id, text, category, source, created_at, updated_at, superseded_by";

/// A [`MemoryEntry`] from a row of [`ENTRY_COLUMNS`].
pub(super) fn entry_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<MemoryEntry> {
    Ok(MemoryEntry {
        id: r.get(1)?,
        text: r.get(2)?,
        score: 0.0,
        category: Category::parse(&r.get::<_, String>(3)?).unwrap_or(Category::Other),
        source: Source::parse(&r.get::<_, String>(4)?),
        created_at: r.get(5)?,
        updated_at: r.get(6)?,
        superseded_by: r.get(7)?,
    })
}
