//! The memory in PostgreSQL, shared by the nodes: entries with a `tsvector` keyword
//! index (GIN, ranked by `ts_rank`), vectors as `bytea` (no server extension needed),
//! and `memory_changes`, a numbered log of changed entries filled by a trigger.
//!
//! Each node keeps its own in-process vector index. A commit notifies the `evo_memory`
//! channel; a node that heard something since it last looked reads the changes after
//! the last number it applied and reloads those entries' vectors (also after it was
//! disconnected: the numbers are in the database). A notification can come late (or,
//! with a listener cut off unnoticed, never), so a node that heard nothing reads the
//! changes anyway once [`FRESH_FOR`] has passed since it last did: a search never
//! misses a commit made more than that before it began. Writers take one advisory
//! lock, so entries are numbered in the order they commit, and a node that applied
//! number `n` has seen every commit up to it.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::super::index::Meta;
use super::super::{Action, Category, HistoryEvent, MemoryEntry, Source};
use super::backend::{Changes, Decision, Indexed, LogFile, MemoryDb, SupersededPair};
use super::{Filter, from_blob, to_blob};
use crate::error::Result;
use crate::storage::listen::Listening;
use crate::storage::pg::{Conn, Pg};

/// The channel commits are announced on.
pub(in crate::memory) const CHANNEL: &str = "evo_memory";
/// The advisory lock every memory writer holds until it commits ("mem").
const WRITE_LOCK: i64 = 0x006d_656d;
/// Changes kept for nodes catching up; a node further behind reloads everything.
const KEEP_CHANGES: i64 = 100_000;
/// Commits between two trims of the change log.
const TRIM_EVERY: u32 = 1_000;
/// How long a node on a shared database trusts silence: past this since it last read
/// the changes, it reads them again though no notification came. A search never misses
/// a commit another node made more than this before it began.
pub const FRESH_FOR: Duration = Duration::from_millis(50);
/// How long the keyword index's statistics are used before they are read again.
const SHARES_FOR: Duration = Duration::from_secs(10);

const ENTRY_COLUMNS: &str =
    "rowid, id, text, category, source, created_at, updated_at, superseded_by";

fn entry_row(r: &tokio_postgres::Row) -> MemoryEntry {
    MemoryEntry {
        id: r.get(1),
        text: r.get(2),
        score: 0.0,
        category: Category::parse(r.get(3)).unwrap_or(Category::Other),
        source: Source::parse(r.get(4)),
        created_at: r.get(5),
        updated_at: r.get(6),
        superseded_by: r.get(7),
    }
}

fn indexed_row(r: &tokio_postgres::Row) -> Indexed {
    Indexed {
        rowid: r.get(0),
        vector: from_blob(r.get(1)),
        meta: Meta {
            source: Source::parse(r.get(2)),
            created_at: r.get(3),
        },
        superseded: r.get(4),
    }
}

/// A node's view of the shared memory.
#[derive(Debug)]
pub(in crate::memory) struct Postgres {
    pg: Arc<Pg>,
    conn: Conn,
    listening: Listening,
    /// The frequent terms and the share of entries holding each, from the planner's
    /// statistics of the keyword index, and when they were read.
    shares: std::cell::RefCell<Option<(Instant, HashMap<String, f32>)>>,
    /// The last change applied to the index.
    applied: i64,
    /// Notifications heard when the changes were last read.
    heard: u64,
    /// When the changes were last read.
    read_at: Instant,
    commits: u32,
}

impl Postgres {
    /// The memory in `pg`, listening for other nodes' commits.
    pub(in crate::memory) fn open(pg: Arc<Pg>) -> Result<Self> {
        let listening = pg.listen(CHANNEL);
        Ok(Self {
            conn: pg.conn()?,
            pg,
            listening,
            shares: std::cell::RefCell::new(None),
            applied: 0,
            heard: 0,
            read_at: Instant::now(),
            commits: 0,
        })
    }

    /// The connection, opened again if it broke.
    fn reconnect(&mut self) -> Result<()> {
        if self.conn.is_closed() {
            self.conn = self.pg.conn()?;
        }
        Ok(())
    }

    /// [`Postgres::shares`], read again when older than [`SHARES_FOR`].
    fn term_shares(&self) -> Result<std::cell::Ref<'_, HashMap<String, f32>>> {
        let stale = self
            .shares
            .borrow()
            .as_ref()
            .is_none_or(|(read, _)| read.elapsed() > SHARES_FOR);
        if stale {
            // `most_common_elems` of the tsvector column: the lexemes in more than a
            // small share of the entries, kept current by ANALYZE (after an import, and
            // by autovacuum as entries change). A term not among them is not common.
            let shares: HashMap<String, f32> = self
                .conn
                .query_opt(
                    "SELECT most_common_elems::TEXT::TEXT[], most_common_elem_freqs FROM pg_stats
                     WHERE schemaname = current_schema() AND tablename = 'memory_entries'
                       AND attname = 'tsv'",
                    &[],
                )?
                .and_then(|r| {
                    let elems: Option<Vec<String>> = r.get(0);
                    let freqs: Option<Vec<f32>> = r.get(1);
                    elems.zip(freqs)
                })
                .map(|(elems, freqs)| elems.into_iter().zip(freqs).collect())
                .unwrap_or_default();
            *self.shares.borrow_mut() = Some((Instant::now(), shares));
        }
        Ok(std::cell::Ref::map(self.shares.borrow(), |s| {
            &s.as_ref().expect("read just now").1
        }))
    }

    fn latest(&self) -> Result<i64> {
        Ok(self
            .conn
            .query_opt("SELECT coalesce(max(seq), 0) FROM memory_changes", &[])?
            .map_or(0, |r| r.get(0)))
    }
}

impl MemoryDb for Postgres {
    fn describe(&self) -> String {
        self.pg.describe()
    }

    fn shared(&self) -> bool {
        true
    }

    fn begin(&mut self) -> Result<()> {
        self.reconnect()?;
        self.conn.batch("BEGIN")?;
        let locked = self
            .conn
            .execute("SELECT pg_advisory_xact_lock($1)", &[&WRITE_LOCK]);
        if locked.is_err() {
            self.rollback();
        }
        locked.map(drop)
    }

    fn commit(&mut self) -> Result<()> {
        self.commits = self.commits.wrapping_add(1);
        if self.commits.is_multiple_of(TRIM_EVERY) {
            self.conn.execute(
                "DELETE FROM memory_changes WHERE seq <= (SELECT max(seq) FROM memory_changes) - $1",
                &[&KEEP_CHANGES],
            )?;
        }
        self.conn.batch("COMMIT")
    }

    fn rollback(&mut self) {
        let _ = self.conn.batch("ROLLBACK");
    }

    fn changes(&mut self) -> Result<Changes> {
        let notices = self.listening.notices();
        let heard = notices.heard();
        if notices.live() && heard == self.heard && self.read_at.elapsed() < FRESH_FOR {
            return Ok(Changes::None);
        }
        self.reconnect()?;
        // Before the query: a commit made from here on may be missed by it.
        let read_at = Instant::now();
        let before = self.applied;
        let rows = self.conn.query(
            "SELECT seq, entry, (SELECT min(seq) FROM memory_changes) FROM memory_changes
             WHERE seq > $1 ORDER BY seq",
            &[&self.applied],
        )?;
        self.heard = heard;
        self.read_at = read_at;
        let Some(last) = rows.last() else {
            return Ok(Changes::None);
        };
        let oldest: i64 = last.get(2);
        self.applied = last.get(0);
        // Changes after ours were trimmed away (or numbers were skipped by a rollback):
        // what changed is unknown.
        if oldest > before + 1 {
            return Ok(Changes::All);
        }
        let mut entries: Vec<i64> = rows.iter().map(|r| r.get(1)).collect();
        entries.sort_unstable();
        entries.dedup();
        Ok(Changes::Rows(entries))
    }

    fn mark_current(&mut self) -> Result<()> {
        self.reconnect()?;
        self.heard = self.listening.notices().heard();
        self.read_at = Instant::now();
        self.applied = self.latest()?;
        Ok(())
    }

    fn setting(&self, key: &str) -> Result<Option<String>> {
        Ok(self
            .conn
            .query_opt("SELECT value FROM memory_settings WHERE key = $1", &[&key])?
            .map(|r| r.get(0)))
    }

    fn set_setting(&self, key: &str, value: Option<&str>) -> Result<()> {
        match value {
            Some(value) => self.conn.execute(
                "INSERT INTO memory_settings (key, value) VALUES ($1, $2)
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                &[&key, &value],
            ),
            None => self
                .conn
                .execute("DELETE FROM memory_settings WHERE key = $1", &[&key]),
        }
        .map(drop)
    }

    fn all_vectors(&self) -> Result<Vec<Indexed>> {
        Ok(self
            .conn
            .query(
                "SELECT rowid, embedding, source, created_at, superseded_by IS NOT NULL
                 FROM memory_entries",
                &[],
            )?
            .iter()
            .map(indexed_row)
            .collect())
    }

    fn indexed(&self, rowids: &[i64]) -> Result<Vec<Indexed>> {
        Ok(self
            .conn
            .query(
                "SELECT rowid, embedding, source, created_at, superseded_by IS NOT NULL
                 FROM memory_entries WHERE rowid = ANY($1)",
                &[&rowids],
            )?
            .iter()
            .map(indexed_row)
            .collect())
    }

    fn is_common(&self, term: &str, fraction: f64, _total: usize) -> Result<bool> {
        Ok(self
            .term_shares()?
            .get(term)
            .is_some_and(|share| f64::from(*share) > fraction))
    }

    fn keyword(
        &self,
        terms: &[String],
        n: usize,
        filter: &Filter,
        total: usize,
    ) -> Result<Vec<(i64, f32)>> {
        let sources: Option<Vec<&str>> = (!filter.sources.is_empty())
            .then(|| filter.sources.iter().map(|s| s.as_str()).collect());
        // Each term's rank weighted by its inverse document frequency (as bm25 weighs
        // terms; `ts_rank` alone does not): the statistics' share for a frequent term,
        // else the GIN index's count of its entries (few, for a term that is not), and
        // divided by 1 + the log of the entry's length (normalization 1), as bm25
        // favours short entries: the fused ranking then puts the same entry first as
        // SQLite's for 99 % of the retrieval set's questions.
        let shares = self.term_shares()?;
        let known: Vec<Option<f64>> = terms
            .iter()
            .map(|t| shares.get(t).map(|share| f64::from(*share) * total as f64))
            .collect();
        drop(shares);
        let rows = self.conn.query(
            // Materialised: each term's count runs once, and the join below looks each
            // term up in the GIN index instead of filtering every entry.
            "WITH given AS MATERIALIZED (
                SELECT query, coalesce(known, (SELECT count(*)::FLOAT8 FROM memory_entries
                                               WHERE tsv @@ query)) AS docs
                FROM unnest($1::TEXT[], $8::FLOAT8[]) AS g (term, known),
                     LATERAL to_tsquery('simple', quote_literal(term)) query
             ), terms AS MATERIALIZED (
                SELECT query, ln(1 + ($7 - docs + 0.5) / (docs + 0.5)) AS idf FROM given
             )
             SELECT e.rowid, sum(terms.idf * ts_rank(e.tsv, terms.query, 1))::REAL AS score
             FROM memory_entries e JOIN terms ON e.tsv @@ terms.query
             WHERE ($3::TEXT[] IS NULL OR e.source = ANY($3))
               AND e.created_at BETWEEN $4 AND $5
               AND ($6 OR e.superseded_by IS NULL)
             GROUP BY e.rowid ORDER BY score DESC, e.rowid LIMIT $2",
            &[
                &terms,
                &i64::try_from(n).unwrap_or(i64::MAX),
                &sources,
                &filter.since_ms.unwrap_or(i64::MIN),
                &filter.until_ms.unwrap_or(i64::MAX),
                &filter.include_superseded,
                &(total as f64),
                &known,
            ],
        )?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
    }

    fn fetch(
        &self,
        rowids: &[i64],
        include_superseded: bool,
    ) -> Result<Vec<(i64, MemoryEntry, Vec<f32>)>> {
        if rowids.is_empty() {
            return Ok(Vec::new());
        }
        let rows = self.conn.query(
            &format!(
                "SELECT {ENTRY_COLUMNS}, embedding FROM memory_entries
                 WHERE rowid = ANY($1) AND ($2 OR superseded_by IS NULL)"
            ),
            &[&rowids, &include_superseded],
        )?;
        Ok(rows
            .iter()
            .map(|r| (r.get(0), entry_row(r), from_blob(r.get(8))))
            .collect())
    }

    fn entry(&self, id: &str) -> Result<Option<(i64, MemoryEntry)>> {
        Ok(self
            .conn
            .query_opt(
                &format!("SELECT {ENTRY_COLUMNS} FROM memory_entries WHERE id = $1"),
                &[&id],
            )?
            .map(|r| (r.get(0), entry_row(&r))))
    }

    fn previous_version(&self, id: &str) -> Result<Option<MemoryEntry>> {
        Ok(self
            .conn
            .query_opt(
                &format!(
                    "SELECT {ENTRY_COLUMNS} FROM memory_entries WHERE superseded_by = $1
                     ORDER BY created_at DESC LIMIT 1"
                ),
                &[&id],
            )?
            .map(|r| entry_row(&r)))
    }

    fn superseded_by(&self, id: &str) -> Result<Vec<(i64, String)>> {
        Ok(self
            .conn
            .query(
                "SELECT rowid, id FROM memory_entries WHERE superseded_by = $1",
                &[&id],
            )?
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect())
    }

    fn decisions_naming(&self, id: &str) -> Result<Vec<(i64, HistoryEvent)>> {
        Ok(self
            .conn
            .query(
                "SELECT at, action, entry, supersedes, text, reason, rowid FROM memory_decisions
                 WHERE entry = $1 OR supersedes = $1",
                &[&id],
            )?
            .iter()
            .map(|r| {
                (
                    r.get(6),
                    HistoryEvent {
                        at: r.get(0),
                        action: Action::parse(r.get(1)),
                        id: r.get(2),
                        supersedes: r.get(3),
                        text: r.get(4),
                        reason: r.get(5),
                    },
                )
            })
            .collect())
    }

    fn texts(&self, not_of_model: Option<&str>) -> Result<Vec<(i64, String)>> {
        Ok(self
            .conn
            .query(
                "SELECT rowid, text FROM memory_entries WHERE $1::TEXT IS NULL OR model <> $1",
                &[&not_of_model],
            )?
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect())
    }

    fn superseded_pairs(&self) -> Result<Vec<SupersededPair>> {
        Ok(self
            .conn
            .query(
                "SELECT old.rowid, old.id, old.text, new.id, new.text FROM memory_entries old
                 JOIN memory_entries new ON new.id = old.superseded_by",
                &[],
            )?
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4)))
            .collect())
    }

    fn log_files(&self) -> Result<Vec<LogFile>> {
        Ok(self
            .conn
            .query(
                "SELECT day, len, mtime, digest, bullets FROM memory_log_files",
                &[],
            )?
            .iter()
            .map(|r| LogFile {
                day: r.get(0),
                len: r.get(1),
                mtime: r.get(2),
                digest: r.get(3),
                bullets: r.get(4),
            })
            .collect())
    }

    fn insert(
        &self,
        entry: &MemoryEntry,
        model: &str,
        vector: &[f32],
        keep_existing: bool,
    ) -> Result<Option<i64>> {
        let conflict = if keep_existing {
            "ON CONFLICT (id) DO NOTHING"
        } else {
            ""
        };
        Ok(self
            .conn
            .query_opt(
                &format!(
                    "INSERT INTO memory_entries
                       (id, text, category, source, created_at, updated_at, model, embedding)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) {conflict} RETURNING rowid"
                ),
                &[
                    &entry.id,
                    &entry.text,
                    &entry.category.as_str(),
                    &entry.source.as_str(),
                    &entry.created_at,
                    &entry.updated_at,
                    &model,
                    &to_blob(vector),
                ],
            )?
            .map(|r| r.get(0)))
    }

    fn set_superseded(&self, rowid: i64, by: Option<&str>, now: i64) -> Result<()> {
        self.conn
            .execute(
                "UPDATE memory_entries SET superseded_by = $1, updated_at = $2 WHERE rowid = $3",
                &[&by, &now, &rowid],
            )
            .map(drop)
    }

    fn record(&self, d: Decision<'_>) -> Result<()> {
        self.conn
            .execute(
                "INSERT INTO memory_decisions (at, action, entry, supersedes, text, reason)
                 VALUES ($1, $2, $3, $4, $5, $6)",
                &[
                    &d.at,
                    &d.action,
                    &d.entry,
                    &d.supersedes,
                    &d.text,
                    &d.reason,
                ],
            )
            .map(drop)
    }

    fn delete(&self, rowid: i64) -> Result<bool> {
        Ok(self
            .conn
            .execute("DELETE FROM memory_entries WHERE rowid = $1", &[&rowid])?
            > 0)
    }

    fn delete_source(&self, source: Source, id_prefix: Option<&str>) -> Result<Vec<i64>> {
        Ok(self
            .conn
            .query(
                "DELETE FROM memory_entries
                 WHERE source = $1 AND ($2::TEXT IS NULL OR starts_with(id, $2)) RETURNING rowid",
                &[&source.as_str(), &id_prefix],
            )?
            .iter()
            .map(|r| r.get(0))
            .collect())
    }

    fn set_vector(&self, rowid: i64, model: &str, vector: &[f32]) -> Result<()> {
        self.conn
            .execute(
                "UPDATE memory_entries SET model = $1, embedding = $2 WHERE rowid = $3",
                &[&model, &to_blob(vector), &rowid],
            )
            .map(drop)
    }

    fn set_log_file(&self, log: &LogFile) -> Result<()> {
        self.conn
            .execute(
                "INSERT INTO memory_log_files (day, len, mtime, digest, bullets)
                 VALUES ($1, $2, $3, $4, $5)
                 ON CONFLICT (day) DO UPDATE SET len = excluded.len, mtime = excluded.mtime,
                     digest = excluded.digest, bullets = excluded.bullets",
                &[&log.day, &log.len, &log.mtime, &log.digest, &log.bullets],
            )
            .map(drop)
    }

    fn delete_log_file(&self, day: &str) -> Result<()> {
        self.conn
            .execute("DELETE FROM memory_log_files WHERE day = $1", &[&day])
            .map(drop)
    }

    fn optimize(&self) -> Result<()> {
        // Entries a GIN index holds in its pending list (an older schema's, before
        // `fastupdate` was turned off) are scanned by every search: merge them; and
        // fresh statistics give the frequent terms.
        self.conn
            .batch("SELECT gin_clean_pending_list('memory_entries_tsv'); ANALYZE memory_entries")
    }
}
