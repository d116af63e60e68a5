//! What the memory store asks of its database: [`MemoryDb`], with SQLite
//! ([`super::sqlite`]) and PostgreSQL ([`super::postgres`]) behind it.
//!
//! Reads run anywhere; writes run between [`MemoryDb::begin`] and
//! [`MemoryDb::commit`], one writer at a time (SQLite's `BEGIN IMMEDIATE`, an advisory
//! lock in PostgreSQL), so that a store's comparison and its write see the same entries
//! on every node.

use super::super::index::Meta;
use super::super::{HistoryEvent, MemoryEntry, Source};
use super::Filter;
use crate::error::Result;

/// An entry as the in-process vector index holds it.
#[derive(Debug, Clone)]
pub(in crate::memory) struct Indexed {
    pub(in crate::memory) rowid: i64,
    pub(in crate::memory) vector: Vec<f32>,
    pub(in crate::memory) meta: Meta,
    pub(in crate::memory) superseded: bool,
}

/// What changed since the index was last brought up to date.
#[derive(Debug, PartialEq, Eq)]
pub(in crate::memory) enum Changes {
    /// Nothing.
    None,
    /// Something, unknown what: reload every vector.
    All,
    /// These entries were added, changed or deleted.
    #[cfg_attr(
        not(feature = "postgres"),
        expect(dead_code, reason = "only the shared store knows which rows changed")
    )]
    Rows(Vec<i64>),
}

/// A superseded entry with its successor: `(rowid, id, text, newer id, newer text)`.
pub(in crate::memory) type SupersededPair = (i64, String, String, String, String);

/// A daily log as last indexed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::memory) struct LogFile {
    pub(in crate::memory) day: String,
    pub(in crate::memory) len: i64,
    pub(in crate::memory) mtime: i64,
    pub(in crate::memory) digest: String,
    pub(in crate::memory) bullets: i64,
}

/// A store decision as recorded.
#[derive(Debug, Clone, Copy)]
pub(in crate::memory) struct Decision<'a> {
    pub(in crate::memory) at: i64,
    pub(in crate::memory) action: &'a str,
    pub(in crate::memory) entry: &'a str,
    pub(in crate::memory) supersedes: Option<&'a str>,
    pub(in crate::memory) text: &'a str,
    pub(in crate::memory) reason: &'a str,
}

/// The memory's database.
pub(in crate::memory) trait MemoryDb: Send + std::fmt::Debug {
    /// Where it is: the file, or the URL without its password.
    fn describe(&self) -> String;
    /// Whether other nodes share it (then `MEMORY.md` and the daily logs of one node's
    /// data directory are not indexed into it).
    fn shared(&self) -> bool;

    /// Starts a write transaction, waiting for any other writer.
    fn begin(&mut self) -> Result<()>;
    /// Commits it.
    fn commit(&mut self) -> Result<()>;
    /// Rolls it back (best effort: a broken connection rolls back by itself).
    fn rollback(&mut self);

    /// What other connections (processes, nodes) changed since the last call (or
    /// since [`MemoryDb::mark_current`]).
    fn changes(&mut self) -> Result<Changes>;
    /// Notes that the index now reflects everything committed so far; called before
    /// the rows are read, so a commit meanwhile shows at the next [`MemoryDb::changes`].
    fn mark_current(&mut self) -> Result<()>;

    /// A setting's value.
    fn setting(&self, key: &str) -> Result<Option<String>>;
    /// Sets (or, with `None`, clears) a setting.
    fn set_setting(&self, key: &str, value: Option<&str>) -> Result<()>;

    /// Every entry's vector.
    fn all_vectors(&self) -> Result<Vec<Indexed>>;
    /// The vectors of those of `rowids` that exist (a missing one was deleted).
    fn indexed(&self, rowids: &[i64]) -> Result<Vec<Indexed>>;
    /// Whether `term` occurs in more than `fraction` of the `total` entries.
    fn is_common(&self, term: &str, fraction: f64, total: usize) -> Result<bool>;
    /// Keyword candidates among the entries `filter` keeps: `(rowid, score > 0)`, best
    /// first, among `total` entries. Without a filter, superseded entries may be among
    /// them.
    fn keyword(
        &self,
        terms: &[String],
        n: usize,
        filter: &Filter,
        total: usize,
    ) -> Result<Vec<(i64, f32)>>;
    /// The entries among `rowids` (active ones only, unless `include_superseded`), each
    /// with its stored vector.
    fn fetch(
        &self,
        rowids: &[i64],
        include_superseded: bool,
    ) -> Result<Vec<(i64, MemoryEntry, Vec<f32>)>>;
    /// The entry with id `id`.
    fn entry(&self, id: &str) -> Result<Option<(i64, MemoryEntry)>>;
    /// The newest entry `id` superseded.
    fn previous_version(&self, id: &str) -> Result<Option<MemoryEntry>>;
    /// Every entry `id` superseded: `(rowid, id)`.
    fn superseded_by(&self, id: &str) -> Result<Vec<(i64, String)>>;
    /// The decisions naming `id` (as the entry or the one superseded), each with a
    /// number that orders them as they happened.
    fn decisions_naming(&self, id: &str) -> Result<Vec<(i64, HistoryEvent)>>;
    /// Every entry's text (those not embedded with `model`, when given).
    fn texts(&self, not_of_model: Option<&str>) -> Result<Vec<(i64, String)>>;
    /// Each superseded entry with its successor.
    fn superseded_pairs(&self) -> Result<Vec<SupersededPair>>;
    /// The daily logs as last indexed.
    fn log_files(&self) -> Result<Vec<LogFile>>;

    /// Inserts `entry`; with `keep_existing`, an entry of the same id stays and `None`
    /// is returned.
    fn insert(
        &self,
        entry: &MemoryEntry,
        model: &str,
        vector: &[f32],
        keep_existing: bool,
    ) -> Result<Option<i64>>;
    /// Marks the entry `rowid` as superseded by `by` (or active again, with `None`).
    fn set_superseded(&self, rowid: i64, by: Option<&str>, now: i64) -> Result<()>;
    /// Records a store decision.
    fn record(&self, decision: Decision<'_>) -> Result<()>;
    /// Deletes an entry; false when it was gone already.
    fn delete(&self, rowid: i64) -> Result<bool>;
    /// Deletes the entries from `source` (whose id starts with `id_prefix`, when
    /// given) and returns their rowids.
    fn delete_source(&self, source: Source, id_prefix: Option<&str>) -> Result<Vec<i64>>;
    /// Replaces an entry's vector.
    fn set_vector(&self, rowid: i64, model: &str, vector: &[f32]) -> Result<()>;
    /// Records a daily log as indexed.
    fn set_log_file(&self, log: &LogFile) -> Result<()>;
    /// Forgets a daily log.
    fn delete_log_file(&self, day: &str) -> Result<()>;
    /// Compacts the keyword index after a bulk insert.
    fn optimize(&self) -> Result<()>;
}
