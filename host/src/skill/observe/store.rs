//! Where call statistics and the call history (with the security log's `blocked` rows)
//! are kept: what [`Stats`](super::stats::Stats) and [`History`](super::history::History)
//! flush to, in SQLite (`evo.db`) or PostgreSQL, and the rows they are made of.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError};

use rusqlite::{Connection, Transaction};
use serde::Serialize;

use crate::db::Db;
use crate::error::Result;

#[cfg(feature = "postgres")]
use crate::storage::Pg;
use crate::storage::Storage;

/// How a call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// It returned a valid result.
    Success,
    /// It failed.
    Error,
    /// It was refused before it ran (permission, confirmation, allowlist, path).
    Blocked,
}

impl Status {
    /// The name stored and shown.
    pub fn name(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::Error => "error",
            Self::Blocked => "blocked",
        }
    }

    /// The status named `name`.
    pub fn parse(name: &str) -> Option<Self> {
        [Self::Success, Self::Error, Self::Blocked]
            .into_iter()
            .find(|s| s.name() == name)
    }
}

/// One call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Record {
    /// Row id (0 until stored).
    pub id: i64,
    /// When it started, Unix milliseconds.
    pub at_ms: i64,
    /// Who called: the agent or front end (`cli`, `agent`, `mcp`, …) for a run's own
    /// calls, the calling skill for nested ones.
    pub caller: String,
    /// The run.
    pub task_id: String,
    /// The tool (canonical name).
    pub tool: String,
    /// The arguments, redacted and cut at `MAX_ARGUMENT_CHARS`.
    pub arguments: String,
    /// How it ended.
    pub status: Status,
    /// How long it took, in milliseconds.
    pub duration_ms: f64,
    /// The error code and message, when it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What to do about the error, when it has a hint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// The node that made the call (`evo serve`'s `host:port`, else the machine's
    /// name); empty for calls recorded before nodes were named.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub node: String,
}

impl Record {
    /// The error's code and message apart (`[CODE] message` as recorded); the whole
    /// text as the message when it has no code; nothing when the call succeeded.
    pub fn error_parts(&self) -> (Option<&str>, Option<&str>) {
        match self.error.as_deref() {
            Some(error) => match error.strip_prefix('[').and_then(|r| r.split_once("] ")) {
                Some((code, message)) => (Some(code), Some(message)),
                None => (None, Some(error)),
            },
            None => (None, None),
        }
    }
}

/// What to list.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Only this tool.
    pub tool: Option<String>,
    /// Only calls by this caller (`cli`, `mcp`, `http`, an agent, a calling skill).
    pub caller: Option<String>,
    /// Only calls that ended so.
    pub status: Option<Status>,
    /// Only calls at or after this time (Unix milliseconds).
    pub since_ms: Option<i64>,
    /// Only calls that failed with this error code (`PERMISSION_DENIED`, …).
    pub code: Option<String>,
    /// At most this many (newest first); all when `None`.
    pub limit: Option<u64>,
}

/// The figures of one skill.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SkillStats {
    /// The skill.
    pub tool_name: String,
    /// Calls that found the skill.
    pub call_count: u64,
    /// Calls that returned a valid result.
    pub success_count: u64,
    /// Sum of durations, in milliseconds.
    pub total_duration: f64,
    /// `total_duration / call_count`.
    pub average_duration: f64,
    /// `success_count / call_count`, in [0, 1].
    pub success_rate: f64,
    /// Longest call, in milliseconds.
    pub max_duration: f64,
}

impl SkillStats {
    pub(crate) fn add(&mut self, other: &Self) {
        self.call_count += other.call_count;
        self.success_count += other.success_count;
        self.total_duration += other.total_duration;
        self.max_duration = self.max_duration.max(other.max_duration);
        self.derive();
    }

    pub(crate) fn derive(&mut self) {
        if self.call_count > 0 {
            let calls = self.call_count as f64;
            self.average_duration = self.total_duration / calls;
            self.success_rate = self.success_count as f64 / calls;
        }
    }
}

/// The call store `storage` keeps: `evo.db` in the data directory, or the shared
/// database.
pub fn store_for(storage: &Storage) -> Arc<dyn CallStore> {
    match storage {
        Storage::Local(dir) => Arc::new(SqliteCalls::new(dir)),
        #[cfg(feature = "postgres")]
        Storage::Shared(pg) => Arc::new(PgCalls::new(pg.clone())),
    }
}

/// One tool's call: `(tool, duration in ms, whether it failed or was blocked)`.
pub type Duration = (String, f64, bool);

/// Where statistics and the call history are kept. Every method is one transaction: a
/// failed write leaves nothing half-written, and the caller keeps what it could not
/// write for the next flush.
pub trait CallStore: Send + Sync + std::fmt::Debug {
    /// Adds `counts` (one entry per skill, named by `tool_name`) to the stored figures.
    fn add_stats(&self, counts: &[SkillStats]) -> Result<()>;
    /// Every skill's stored figures (all nodes, all time), by name.
    fn stats(&self) -> Result<BTreeMap<String, SkillStats>>;
    /// Appends `calls`, then keeps only the newest `cap`.
    fn append_calls(&self, calls: &[Record], cap: u64) -> Result<()>;
    /// The stored calls `filter` selects, newest first.
    fn calls(&self, filter: &Filter) -> Result<Vec<Record>>;
    /// Every stored call's duration (those since `since_ms`, when given), ordered by
    /// tool, then duration.
    fn durations(&self, since_ms: Option<i64>) -> Result<Vec<Duration>>;
}

fn count(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn limit(filter: &Filter) -> i64 {
    filter.limit.map_or(i64::MAX, count)
}

fn stats_row(name: String, calls: i64, successes: i64, total: f64, max: f64) -> SkillStats {
    let mut s = SkillStats {
        tool_name: name,
        call_count: u64::try_from(calls).unwrap_or(0),
        success_count: u64::try_from(successes).unwrap_or(0),
        total_duration: total,
        max_duration: max,
        ..SkillStats::default()
    };
    s.derive();
    s
}

/// `evo.db` in a data directory, through one connection kept open between uses.
///
/// A host writes its buffered calls every [`FLUSH_EVERY`](super::history::FLUSH_EVERY)
/// calls: opening the file for each write (the schema check, the WAL switch) and
/// closing it (the last connection's checkpoint, with its `fsync`) cost more than the
/// rows. The connection is opened afresh when the file at the path is no longer the
/// one it has open (removed, or replaced by a restore), which would otherwise take the
/// writes into a file nobody reads, and after a use that failed.
#[derive(Debug, Clone)]
pub struct SqliteCalls {
    dir: PathBuf,
    db: Arc<std::sync::Mutex<Option<(Db, FileId)>>>,
}

/// Which file a path names: its device and inode.
type FileId = (u64, u64);

fn file_id(path: &Path) -> Option<FileId> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

impl SqliteCalls {
    /// The store of `data_dir`; the file is opened at the first use.
    pub fn new(data_dir: &Path) -> Self {
        Self {
            dir: data_dir.to_owned(),
            db: Arc::default(),
        }
    }

    /// `f` on the kept connection, opened first if there is none or its file is no
    /// longer the one at the path.
    fn with<T>(&self, f: impl FnOnce(&mut Db) -> Result<T>) -> Result<T> {
        let mut kept = self.db.lock().unwrap_or_else(PoisonError::into_inner);
        let path = self.dir.join(crate::db::DB_FILE);
        if kept
            .as_ref()
            .is_some_and(|(_, id)| file_id(&path) != Some(*id))
        {
            *kept = None;
        }
        let (db, _) = match kept.as_mut() {
            Some(kept) => kept,
            None => {
                let db = Db::open(&self.dir)?;
                let id = file_id(db.path()).unwrap_or_default();
                kept.insert((db, id))
            }
        };
        let result = f(db);
        if result.is_err() {
            *kept = None;
        }
        result
    }

    /// `f` in a write transaction on the kept connection.
    fn write<T>(&self, f: impl FnOnce(&Transaction<'_>) -> rusqlite::Result<T>) -> Result<T> {
        self.with(|db| db.transaction(f))
    }

    /// The read-only `f` on the kept connection.
    fn read<T>(&self, f: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> Result<T> {
        self.with(|db| db.read(f))
    }
}

impl CallStore for SqliteCalls {
    fn add_stats(&self, counts: &[SkillStats]) -> Result<()> {
        self.write(|tx| {
            let mut upsert = tx.prepare_cached(
                "INSERT INTO skill_stats (skill, call_count, success_count, total_duration_ms, max_duration_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT(skill) DO UPDATE SET
                   call_count = call_count + excluded.call_count,
                   success_count = success_count + excluded.success_count,
                   total_duration_ms = total_duration_ms + excluded.total_duration_ms,
                   max_duration_ms = max(max_duration_ms, excluded.max_duration_ms)",
            )?;
            for s in counts {
                upsert.execute(rusqlite::params![
                    s.tool_name,
                    count(s.call_count),
                    count(s.success_count),
                    s.total_duration,
                    s.max_duration
                ])?;
            }
            Ok(())
        })
    }

    fn stats(&self) -> Result<BTreeMap<String, SkillStats>> {
        self.read(|conn| {
            let mut query = conn.prepare(
                "SELECT skill, call_count, success_count, total_duration_ms, max_duration_ms
                 FROM skill_stats ORDER BY skill",
            )?;
            let rows = query.query_map([], |row| {
                let name: String = row.get(0)?;
                let s = stats_row(
                    name.clone(),
                    row.get(1)?,
                    row.get(2)?,
                    row.get(3)?,
                    row.get(4)?,
                );
                Ok((name, s))
            })?;
            rows.collect()
        })
    }

    fn append_calls(&self, calls: &[Record], cap: u64) -> Result<()> {
        self.write(|tx| {
            let mut insert = tx.prepare_cached(
                "INSERT INTO tool_history (at_ms, caller, task_id, tool, arguments, status, duration_ms, error, hint, node)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            )?;
            for r in calls {
                insert.execute(rusqlite::params![
                    r.at_ms,
                    r.caller,
                    r.task_id,
                    r.tool,
                    r.arguments,
                    r.status.name(),
                    r.duration_ms,
                    r.error,
                    r.hint,
                    r.node
                ])?;
            }
            tx.execute(
                "DELETE FROM tool_history WHERE id <= (SELECT max(id) FROM tool_history) - ?1",
                [count(cap)],
            )?;
            Ok(())
        })
    }

    fn calls(&self, filter: &Filter) -> Result<Vec<Record>> {
        self.read(|conn| {
            let mut query = conn.prepare(
                "SELECT id, at_ms, caller, task_id, tool, arguments, status, duration_ms, error, hint, node
                 FROM tool_history
                 WHERE (?1 IS NULL OR tool = ?1) AND (?2 IS NULL OR status = ?2)
                   AND (?3 IS NULL OR at_ms >= ?3) AND (?5 IS NULL OR caller = ?5)
                   AND (?6 IS NULL OR substr(error, 1, length(?6) + 2) = '[' || ?6 || ']')
                 ORDER BY at_ms DESC, id DESC LIMIT ?4",
            )?;
            let rows = query.query_map(
                rusqlite::params![
                    filter.tool,
                    filter.status.map(Status::name),
                    filter.since_ms,
                    limit(filter),
                    filter.caller,
                    filter.code
                ],
                |row| {
                    let status: String = row.get(6)?;
                    Ok(Record {
                        id: row.get(0)?,
                        at_ms: row.get(1)?,
                        caller: row.get(2)?,
                        task_id: row.get(3)?,
                        tool: row.get(4)?,
                        arguments: row.get(5)?,
                        status: Status::parse(&status).unwrap_or(Status::Error),
                        duration_ms: row.get(7)?,
                        error: row.get(8)?,
                        hint: row.get(9)?,
                        node: row.get(10)?,
                    })
                },
            )?;
            rows.collect()
        })
    }

    fn durations(&self, since_ms: Option<i64>) -> Result<Vec<Duration>> {
        self.read(|conn| {
            let mut query = conn.prepare(
                "SELECT tool, duration_ms, status FROM tool_history
                 WHERE ?1 IS NULL OR at_ms >= ?1 ORDER BY tool, duration_ms",
            )?;
            let rows = query.query_map([since_ms], |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, f64>(1)?,
                    row.get::<_, String>(2)? != "success",
                ))
            })?;
            rows.collect()
        })
    }
}

/// The shared PostgreSQL database.
#[cfg(feature = "postgres")]
#[derive(Debug, Clone)]
pub struct PgCalls {
    pg: Arc<Pg>,
}

#[cfg(feature = "postgres")]
impl PgCalls {
    /// The store in `pg`.
    pub fn new(pg: Arc<Pg>) -> Self {
        Self { pg }
    }
}

#[cfg(feature = "postgres")]
impl CallStore for PgCalls {
    fn add_stats(&self, counts: &[SkillStats]) -> Result<()> {
        let counts = counts.to_vec();
        self.pg.run(move |mut client| async move {
            let tx = client.transaction().await?;
            let upsert = tx
                .prepare_cached(
                    "INSERT INTO skill_stats AS s (skill, call_count, success_count, total_duration_ms, max_duration_ms)
                     VALUES ($1, $2, $3, $4, $5)
                     ON CONFLICT (skill) DO UPDATE SET
                       call_count = s.call_count + excluded.call_count,
                       success_count = s.success_count + excluded.success_count,
                       total_duration_ms = s.total_duration_ms + excluded.total_duration_ms,
                       max_duration_ms = greatest(s.max_duration_ms, excluded.max_duration_ms)",
                )
                .await?;
            // One order for every node: two flushes touching the same skills cannot
            // deadlock.
            let mut counts = counts;
            counts.sort_by(|a, b| a.tool_name.cmp(&b.tool_name));
            for s in &counts {
                tx.execute(
                    &upsert,
                    &[
                        &s.tool_name,
                        &count(s.call_count),
                        &count(s.success_count),
                        &s.total_duration,
                        &s.max_duration,
                    ],
                )
                .await?;
            }
            tx.commit().await
        })
    }

    fn stats(&self) -> Result<BTreeMap<String, SkillStats>> {
        self.pg.run(|client| async move {
            let rows = client
                .query(
                    "SELECT skill, call_count, success_count, total_duration_ms, max_duration_ms
                     FROM skill_stats ORDER BY skill",
                    &[],
                )
                .await?;
            Ok(rows
                .iter()
                .map(|row| {
                    let name: String = row.get(0);
                    let s = stats_row(name.clone(), row.get(1), row.get(2), row.get(3), row.get(4));
                    (name, s)
                })
                .collect())
        })
    }

    fn append_calls(&self, calls: &[Record], cap: u64) -> Result<()> {
        let calls = calls.to_vec();
        self.pg.run(move |mut client| async move {
            let tx = client.transaction().await?;
            let insert = tx
                .prepare_cached(
                    "INSERT INTO tool_history (at_ms, caller, task_id, tool, arguments, status, duration_ms, error, hint, node)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
                )
                .await?;
            for r in &calls {
                tx.execute(
                    &insert,
                    &[
                        &r.at_ms,
                        &r.caller,
                        &r.task_id,
                        &r.tool,
                        &r.arguments,
                        &r.status.name(),
                        &r.duration_ms,
                        &r.error,
                        &r.hint,
                        &r.node,
                    ],
                )
                .await?;
            }
            tx.execute(
                "DELETE FROM tool_history WHERE id <= (SELECT max(id) FROM tool_history) - $1",
                &[&count(cap)],
            )
            .await?;
            tx.commit().await
        })
    }

    fn calls(&self, filter: &Filter) -> Result<Vec<Record>> {
        let filter = filter.clone();
        self.pg.run(move |client| async move {
            let rows = client
                .query(
                    "SELECT id, at_ms, caller, task_id, tool, arguments, status, duration_ms, error, hint, node
                     FROM tool_history
                     WHERE ($1::TEXT IS NULL OR tool = $1) AND ($2::TEXT IS NULL OR status = $2)
                       AND ($3::BIGINT IS NULL OR at_ms >= $3) AND ($5::TEXT IS NULL OR caller = $5)
                       AND ($6::TEXT IS NULL OR left(error, length($6) + 2) = '[' || $6 || ']')
                     ORDER BY at_ms DESC, id DESC LIMIT $4",
                    &[
                        &filter.tool,
                        &filter.status.map(Status::name),
                        &filter.since_ms,
                        &limit(&filter),
                        &filter.caller,
                        &filter.code,
                    ],
                )
                .await?;
            Ok(rows
                .iter()
                .map(|row| Record {
                    id: row.get(0),
                    at_ms: row.get(1),
                    caller: row.get(2),
                    task_id: row.get(3),
                    tool: row.get(4),
                    arguments: row.get(5),
                    status: Status::parse(row.get(6)).unwrap_or(Status::Error),
                    duration_ms: row.get(7),
                    error: row.get(8),
                    hint: row.get(9),
                    node: row.get(10),
                })
                .collect())
        })
    }

    fn durations(&self, since_ms: Option<i64>) -> Result<Vec<Duration>> {
        self.pg.run(move |client| async move {
            let rows = client
                .query(
                    "SELECT tool, duration_ms, status <> 'success' FROM tool_history
                     WHERE $1::BIGINT IS NULL OR at_ms >= $1 ORDER BY tool COLLATE \"C\", duration_ms",
                    &[&since_ms],
                )
                .await?;
            Ok(rows
                .iter()
                .map(|row| (row.get(0), row.get(1), row.get(2)))
                .collect())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(at_ms: i64, node: &str) -> Record {
        Record {
            id: 0,
            at_ms,
            caller: "cli".into(),
            task_id: "t".into(),
            tool: "calculate".into(),
            arguments: "{}".into(),
            status: Status::Success,
            duration_ms: 1.0,
            error: None,
            hint: None,
            node: node.into(),
        }
    }

    #[test]
    fn stores_that_keep_their_connections_open_see_each_others_writes() {
        // Two processes on one data directory (an `evo serve` and an `evo history`), each
        // keeping its connection between flushes.
        let dir = tempfile::tempdir().unwrap();
        let (serve, cli) = (SqliteCalls::new(dir.path()), SqliteCalls::new(dir.path()));
        serve.append_calls(&[call(1_000, "a")], 100).unwrap();
        assert_eq!(cli.calls(&Filter::default()).unwrap().len(), 1);
        cli.append_calls(&[call(2_000, "b")], 100).unwrap();
        serve.append_calls(&[call(3_000, "a")], 2).unwrap();
        let listed: Vec<i64> = cli
            .calls(&Filter::default())
            .unwrap()
            .iter()
            .map(|r| r.at_ms)
            .collect();
        assert_eq!(listed, [3_000, 2_000], "the cap keeps the newest 2 of both");
        serve
            .add_stats(&[SkillStats {
                tool_name: "calculate".into(),
                call_count: 2,
                success_count: 1,
                total_duration: 3.0,
                max_duration: 2.0,
                ..SkillStats::default()
            }])
            .unwrap();
        assert_eq!(cli.stats().unwrap()["calculate"].call_count, 2);
    }

    #[test]
    fn a_store_whose_database_was_removed_or_replaced_writes_to_the_file_now_there() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteCalls::new(dir.path());
        let ats = |store: &SqliteCalls| -> Vec<i64> {
            let listed = store.calls(&Filter::default()).unwrap();
            listed.iter().map(|r| r.at_ms).collect()
        };
        store.append_calls(&[call(1_000, "a")], 100).unwrap();
        // Removed while the connection is open: the next write makes a new file
        // instead of going into the one removed, which nobody would read again.
        for name in ["evo.db", "evo.db-wal", "evo.db-shm"] {
            let _ = std::fs::remove_file(dir.path().join(name));
        }
        store.append_calls(&[call(2_000, "a")], 100).unwrap();
        assert_eq!(ats(&SqliteCalls::new(dir.path())), [2_000]);
        // Replaced by another (a restored backup): the writes go to the new one.
        let other = tempfile::tempdir().unwrap();
        let backup = SqliteCalls::new(other.path());
        backup.append_calls(&[call(500, "b")], 100).unwrap();
        drop(backup);
        std::fs::rename(other.path().join("evo.db"), dir.path().join("evo.db")).unwrap();
        for name in ["evo.db-wal", "evo.db-shm"] {
            let _ = std::fs::remove_file(dir.path().join(name));
        }
        store.append_calls(&[call(3_000, "a")], 100).unwrap();
        assert_eq!(ats(&store), [3_000, 500]);
        assert_eq!(ats(&SqliteCalls::new(dir.path())), [3_000, 500]);
    }

    #[test]
    fn the_history_is_newest_first_whoever_wrote_last() {
        // Writers flush their buffered calls at their own pace: a node's batch of earlier
        // calls can land after another's later ones.
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteCalls::new(dir.path());
        store
            .append_calls(&[call(3_000, "b"), call(4_000, "b")], 100)
            .unwrap();
        store
            .append_calls(&[call(1_000, "a"), call(5_000, "a")], 100)
            .unwrap();
        let listed: Vec<i64> = store
            .calls(&Filter::default())
            .unwrap()
            .iter()
            .map(|r| r.at_ms)
            .collect();
        assert_eq!(listed, [5_000, 4_000, 3_000, 1_000]);

        let mut denied = call(6_000, "a");
        denied.status = Status::Error;
        denied.error = Some("[PERMISSION_DENIED] fetch: refused".into());
        let mut similar = call(7_000, "a");
        similar.status = Status::Error;
        similar.error = Some("[PERMISSIONXDENIED] not the same code".into());
        store.append_calls(&[denied, similar], 100).unwrap();
        let by_code = store
            .calls(&Filter {
                code: Some("PERMISSION_DENIED".into()),
                ..Filter::default()
            })
            .unwrap();
        assert_eq!(by_code.len(), 1);
        assert_eq!(by_code[0].at_ms, 6_000);
    }
}
