//! `memory.db`: the memory in SQLite, with an FTS5 keyword index, for one machine.
//! Other processes' commits show as a new `PRAGMA data_version`.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension, params, params_from_iter};

use super::super::index::Meta;
use super::super::{Action, Category, HistoryEvent, MemoryEntry, Source};
use super::backend::{Changes, Decision, Indexed, LogFile, MemoryDb, SupersededPair};
use super::{Filter, from_blob, to_blob};
use crate::db::database_error;
use crate::error::Result;

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

/// The columns [`entry_row`] reads, after the rowid.
const ENTRY_COLUMNS: &str =
    "rowid, id, text, category, source, created_at, updated_at, superseded_by";

/// A [`MemoryEntry`] from a row of [`ENTRY_COLUMNS`].
fn entry_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<MemoryEntry> {
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

/// `memory.db` in a data directory.
#[derive(Debug)]
pub(in crate::memory) struct Sqlite {
    conn: Connection,
    path: PathBuf,
    data_version: i64,
}

impl Sqlite {
    /// Opens (creating and migrating) the file at `path`.
    pub(in crate::memory) fn open(path: &Path) -> Result<Self> {
        Ok(Self {
            conn: crate::db::open_sqlite(path, SCHEMA)?,
            path: path.to_owned(),
            data_version: 0,
        })
    }

    fn fail(&self, error: &rusqlite::Error) -> crate::error::Error {
        database_error(&self.path, error)
    }

    fn data_version(&self) -> Result<i64> {
        self.conn
            .pragma_query_value(None, "data_version", |r| r.get(0))
            .map_err(|e| self.fail(&e))
    }

    fn rows<T>(
        &self,
        sql: &str,
        params: impl rusqlite::Params,
        row: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
    ) -> Result<Vec<T>> {
        self.conn
            .prepare_cached(sql)
            .and_then(|mut q| q.query_map(params, row)?.collect())
            .map_err(|e| self.fail(&e))
    }

    fn run(&self, sql: &str, params: impl rusqlite::Params) -> Result<usize> {
        self.conn
            .prepare_cached(sql)
            .and_then(|mut q| q.execute(params))
            .map_err(|e| self.fail(&e))
    }
}

fn indexed_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Indexed> {
    Ok(Indexed {
        rowid: r.get(0)?,
        vector: from_blob(&r.get::<_, Vec<u8>>(1)?),
        meta: Meta {
            source: Source::parse(&r.get::<_, String>(2)?),
            created_at: r.get(3)?,
        },
        superseded: r.get(4)?,
    })
}

impl MemoryDb for Sqlite {
    fn describe(&self) -> String {
        self.path.display().to_string()
    }

    fn shared(&self) -> bool {
        false
    }

    fn begin(&mut self) -> Result<()> {
        self.conn
            .execute_batch("BEGIN IMMEDIATE")
            .map_err(|e| self.fail(&e))
    }

    fn commit(&mut self) -> Result<()> {
        self.conn.execute_batch("COMMIT").map_err(|e| self.fail(&e))
    }

    fn rollback(&mut self) {
        let _ = self.conn.execute_batch("ROLLBACK");
    }

    fn changes(&mut self) -> Result<Changes> {
        // This connection's own writes do not change `data_version` (SQLite's
        // documented behaviour); the store updates the index for them directly.
        let version = self.data_version()?;
        if version == self.data_version {
            return Ok(Changes::None);
        }
        self.data_version = version;
        Ok(Changes::All)
    }

    fn mark_current(&mut self) -> Result<()> {
        self.data_version = self.data_version()?;
        Ok(())
    }

    fn setting(&self, key: &str) -> Result<Option<String>> {
        self.conn
            .query_row("SELECT value FROM settings WHERE key = ?1", [key], |r| {
                r.get(0)
            })
            .optional()
            .map_err(|e| self.fail(&e))
    }

    fn set_setting(&self, key: &str, value: Option<&str>) -> Result<()> {
        match value {
            Some(value) => self.run(
                "INSERT INTO settings(key, value) VALUES (?1, ?2)
                 ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                [key, value],
            ),
            None => self.run("DELETE FROM settings WHERE key = ?1", [key]),
        }
        .map(drop)
    }

    fn all_vectors(&self) -> Result<Vec<Indexed>> {
        self.rows(
            "SELECT rowid, embedding, source, created_at, superseded_by IS NOT NULL FROM entries",
            [],
            indexed_row,
        )
    }

    fn indexed(&self, rowids: &[i64]) -> Result<Vec<Indexed>> {
        let mut found = Vec::with_capacity(rowids.len());
        for rowid in rowids {
            found.extend(self.rows(
                "SELECT rowid, embedding, source, created_at, superseded_by IS NOT NULL
                 FROM entries WHERE rowid = ?1",
                [rowid],
                indexed_row,
            )?);
        }
        Ok(found)
    }

    fn is_common(&self, term: &str, fraction: f64, total: usize) -> Result<bool> {
        let docs: Option<i64> = self
            .conn
            .prepare_cached("SELECT doc FROM entries_vocab WHERE term = ?1")
            .and_then(|mut q| q.query_row([term], |r| r.get(0)).optional())
            .map_err(|e| self.fail(&e))?;
        Ok(docs.unwrap_or(0) as f64 > fraction * total as f64)
    }

    fn keyword(
        &self,
        terms: &[String],
        n: usize,
        filter: &Filter,
        _total: usize,
    ) -> Result<Vec<(i64, f32)>> {
        let expression = crate::retrieval::rank::fts_any(terms);
        let row = |r: &rusqlite::Row<'_>| Ok((r.get::<_, i64>(0)?, r.get::<_, f64>(1)? as f32));
        let limit = i64::try_from(n).unwrap_or(i64::MAX);
        if filter.is_open() {
            return self.rows(
                "SELECT rowid, -bm25(entries_fts) FROM entries_fts WHERE entries_fts MATCH ?1
                 ORDER BY bm25(entries_fts) LIMIT ?2",
                params![expression, limit],
                row,
            );
        }
        let sources: String = filter
            .sources
            .iter()
            .map(|s| format!(",{},", s.as_str()))
            .collect();
        self.rows(
            "SELECT entries_fts.rowid, -bm25(entries_fts) FROM entries_fts
             JOIN entries e ON e.rowid = entries_fts.rowid
             WHERE entries_fts MATCH ?1
               AND (?3 = '' OR instr(?3, ',' || e.source || ',') > 0)
               AND e.created_at BETWEEN ?4 AND ?5
               AND (?6 OR e.superseded_by IS NULL)
             ORDER BY bm25(entries_fts) LIMIT ?2",
            params![
                expression,
                limit,
                sources,
                filter.since_ms.unwrap_or(i64::MIN),
                filter.until_ms.unwrap_or(i64::MAX),
                filter.include_superseded
            ],
            row,
        )
    }

    fn fetch(
        &self,
        rowids: &[i64],
        include_superseded: bool,
    ) -> Result<Vec<(i64, MemoryEntry, Vec<f32>)>> {
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
                Ok((
                    r.get::<_, i64>(0)?,
                    entry_row(r)?,
                    from_blob(&r.get::<_, Vec<u8>>(8)?),
                ))
            })
            .map_err(|e| self.fail(&e))?;
        rows.collect::<rusqlite::Result<_>>()
            .map_err(|e| self.fail(&e))
    }

    fn entry(&self, id: &str) -> Result<Option<(i64, MemoryEntry)>> {
        Ok(self
            .rows(
                &format!("SELECT {ENTRY_COLUMNS} FROM entries WHERE id = ?1"),
                [id],
                |r| Ok((r.get(0)?, entry_row(r)?)),
            )?
            .pop())
    }

    fn previous_version(&self, id: &str) -> Result<Option<MemoryEntry>> {
        Ok(self
            .rows(
                &format!(
                    "SELECT {ENTRY_COLUMNS} FROM entries WHERE superseded_by = ?1
                     ORDER BY created_at DESC LIMIT 1"
                ),
                [id],
                entry_row,
            )?
            .pop())
    }

    fn superseded_by(&self, id: &str) -> Result<Vec<(i64, String)>> {
        self.rows(
            "SELECT rowid, id FROM entries WHERE superseded_by = ?1",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
    }

    fn decisions_naming(&self, id: &str) -> Result<Vec<(i64, HistoryEvent)>> {
        self.rows(
            "SELECT at, action, entry, supersedes, text, reason, rowid FROM decisions
             WHERE entry = ?1 OR supersedes = ?1",
            [id],
            |r| {
                Ok((
                    r.get(6)?,
                    HistoryEvent {
                        at: r.get(0)?,
                        action: Action::parse(&r.get::<_, String>(1)?),
                        id: r.get(2)?,
                        supersedes: r.get(3)?,
                        text: r.get(4)?,
                        reason: r.get(5)?,
                    },
                ))
            },
        )
    }

    fn texts(&self, not_of_model: Option<&str>) -> Result<Vec<(i64, String)>> {
        self.rows(
            "SELECT rowid, text FROM entries WHERE ?1 IS NULL OR model != ?1",
            [not_of_model],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
    }

    fn superseded_pairs(&self) -> Result<Vec<SupersededPair>> {
        self.rows(
            "SELECT old.rowid, old.id, old.text, new.id, new.text FROM entries old
             JOIN entries new ON new.id = old.superseded_by",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
        )
    }

    fn log_files(&self) -> Result<Vec<LogFile>> {
        self.rows(
            "SELECT day, len, mtime, digest, bullets FROM log_files",
            [],
            |r| {
                Ok(LogFile {
                    day: r.get(0)?,
                    len: r.get(1)?,
                    mtime: r.get(2)?,
                    digest: r.get(3)?,
                    bullets: r.get(4)?,
                })
            },
        )
    }

    fn insert(
        &self,
        entry: &MemoryEntry,
        model: &str,
        vector: &[f32],
        keep_existing: bool,
    ) -> Result<Option<i64>> {
        let sql = if keep_existing {
            "INSERT INTO entries (id, text, category, source, created_at, updated_at, model, embedding)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT(id) DO NOTHING"
        } else {
            "INSERT INTO entries (id, text, category, source, created_at, updated_at, model, embedding)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"
        };
        let changed = self.run(
            sql,
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
        Ok((changed > 0).then(|| self.conn.last_insert_rowid()))
    }

    fn set_superseded(&self, rowid: i64, by: Option<&str>, now: i64) -> Result<()> {
        self.run(
            "UPDATE entries SET superseded_by = ?1, updated_at = ?2 WHERE rowid = ?3",
            params![by, now, rowid],
        )
        .map(drop)
    }

    fn record(&self, d: Decision<'_>) -> Result<()> {
        self.run(
            "INSERT INTO decisions (at, action, entry, supersedes, text, reason)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![d.at, d.action, d.entry, d.supersedes, d.text, d.reason],
        )
        .map(drop)
    }

    fn delete(&self, rowid: i64) -> Result<bool> {
        Ok(self.run("DELETE FROM entries WHERE rowid = ?1", [rowid])? > 0)
    }

    fn delete_source(&self, source: Source, id_prefix: Option<&str>) -> Result<Vec<i64>> {
        let pattern = id_prefix.map_or_else(|| "*".to_owned(), |p| format!("{p}*"));
        self.rows(
            "DELETE FROM entries WHERE source = ?1 AND id GLOB ?2 RETURNING rowid",
            [source.as_str(), pattern.as_str()],
            |r| r.get(0),
        )
    }

    fn set_vector(&self, rowid: i64, model: &str, vector: &[f32]) -> Result<()> {
        self.run(
            "UPDATE entries SET model = ?1, embedding = ?2 WHERE rowid = ?3",
            params![model, to_blob(vector), rowid],
        )
        .map(drop)
    }

    fn set_log_file(&self, log: &LogFile) -> Result<()> {
        self.run(
            "INSERT INTO log_files(day, len, mtime, digest, bullets) VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT(day) DO UPDATE SET len = excluded.len, mtime = excluded.mtime,
                 digest = excluded.digest, bullets = excluded.bullets",
            params![log.day, log.len, log.mtime, log.digest, log.bullets],
        )
        .map(drop)
    }

    fn delete_log_file(&self, day: &str) -> Result<()> {
        self.run("DELETE FROM log_files WHERE day = ?1", [day])
            .map(drop)
    }

    fn optimize(&self) -> Result<()> {
        self.conn
            .execute_batch("INSERT INTO entries_fts(entries_fts) VALUES ('optimize')")
            .map_err(|e| self.fail(&e))
    }
}
