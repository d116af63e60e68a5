//! The call store in `evo.db`, through one connection kept open between uses.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError};

use rusqlite::{Connection, Transaction};

use super::{CallStore, Duration, Filter, Record, SkillStats, Status, count, limit, stats_row};
use crate::db::Db;
use crate::error::Result;

/// `evo.db` in a data directory, through one connection kept open between uses.
///
/// A host writes its buffered calls every [`FLUSH_EVERY`](crate::skill::observe::history::FLUSH_EVERY)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// When each stored call started, newest first.
    fn listed(store: &SqliteCalls) -> Vec<i64> {
        let calls = store.calls(&Filter::default()).unwrap();
        calls.iter().map(|r| r.at_ms).collect()
    }

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
        assert_eq!(
            listed(&cli),
            [3_000, 2_000],
            "the cap keeps the newest 2 of both"
        );
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
        store.append_calls(&[call(1_000, "a")], 100).unwrap();
        // Removed while the connection is open: the next write makes a new file
        // instead of going into the one removed, which nobody would read again.
        for name in ["evo.db", "evo.db-wal", "evo.db-shm"] {
            let _ = std::fs::remove_file(dir.path().join(name));
        }
        store.append_calls(&[call(2_000, "a")], 100).unwrap();
        assert_eq!(listed(&SqliteCalls::new(dir.path())), [2_000]);
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
        assert_eq!(listed(&store), [3_000, 500]);
        assert_eq!(listed(&SqliteCalls::new(dir.path())), [3_000, 500]);
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
        assert_eq!(listed(&store), [5_000, 4_000, 3_000, 1_000]);

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
