//! The host database: one SQLite file (`evo.db`) in the data directory, in WAL mode, with
//! numbered migrations recorded in `PRAGMA user_version`.
//!
//! Several `evo` processes may use one data directory: WAL lets readers run beside a
//! writer, and [`BUSY_TIMEOUT`] makes a writer wait for another instead of failing.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::{Connection, Transaction};

use crate::error::{Error, Result};

/// File name of the database inside the data directory.
pub const DB_FILE: &str = "evo.db";
/// How long a write waits for another process's write to finish. Writes are short
/// (milliseconds); five seconds covers a busy machine without hanging a CLI forever.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Schema changes, in order; entry `i` moves the database from version `i` to `i + 1`.
/// Released entries are never edited, only appended to.
const MIGRATIONS: &[&str] = &[
    // 1: per-skill call statistics.
    "CREATE TABLE skill_stats (
        skill TEXT PRIMARY KEY,
        call_count INTEGER NOT NULL,
        success_count INTEGER NOT NULL,
        total_duration_ms REAL NOT NULL,
        max_duration_ms REAL NOT NULL
    ) STRICT;",
    // 2: the skill index (packages::index).
    "CREATE TABLE skill_index (
        name TEXT PRIMARY KEY,
        text TEXT NOT NULL,
        model TEXT NOT NULL,
        embedding BLOB NOT NULL
    ) STRICT;
    CREATE VIRTUAL TABLE skill_index_fts USING fts5(name UNINDEXED, text);",
    // 3: the call history (tools::history).
    "CREATE TABLE tool_history (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        at_ms INTEGER NOT NULL,
        caller TEXT NOT NULL,
        task_id TEXT NOT NULL,
        tool TEXT NOT NULL,
        arguments TEXT NOT NULL,
        status TEXT NOT NULL,
        duration_ms REAL NOT NULL,
        error TEXT
    ) STRICT;
    CREATE INDEX tool_history_tool ON tool_history (tool, id);",
    // 4: which node made a call, and the error's hint (for the console's history).
    "ALTER TABLE tool_history ADD COLUMN node TEXT NOT NULL DEFAULT '';
    ALTER TABLE tool_history ADD COLUMN hint TEXT;
    CREATE INDEX tool_history_at ON tool_history (at_ms);",
];

/// An open host database.
#[derive(Debug)]
pub struct Db {
    conn: Connection,
    path: PathBuf,
}

impl Db {
    /// Opens (creating if needed) `evo.db` in `data_dir` and brings its schema up to date.
    pub fn open(data_dir: &Path) -> Result<Self> {
        std::fs::create_dir_all(data_dir).map_err(Error::io_at(data_dir))?;
        let path = data_dir.join(DB_FILE);
        let conn = open_sqlite(&path, MIGRATIONS)?;
        Ok(Self { conn, path })
    }

    /// The database file.
    #[cfg_attr(
        not(feature = "internals"),
        allow(dead_code, reason = "Evo's own tests use it")
    )]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `f` in a write transaction (`BEGIN IMMEDIATE`, so concurrent writers queue
    /// instead of failing halfway), committing if it succeeds.
    pub fn transaction<T>(
        &mut self,
        f: impl FnOnce(&Transaction<'_>) -> rusqlite::Result<T>,
    ) -> Result<T> {
        let path = self.path.clone();
        let fail = |e: rusqlite::Error| database_error(&path, &e);
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(fail)?;
        let value = f(&tx).map_err(fail)?;
        tx.commit().map_err(fail)?;
        Ok(value)
    }

    /// Runs a read-only `f`.
    pub fn read<T>(&self, f: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> Result<T> {
        f(&self.conn).map_err(|e| database_error(&self.path, &e))
    }
}

/// Opens the SQLite file at `path` the way every Evo database is used: WAL, a
/// [`BUSY_TIMEOUT`] for writers, `synchronous=NORMAL` (durable at each checkpoint, safe
/// against corruption), and `migrations` applied in order (entry `i` moves
/// `PRAGMA user_version` from `i` to `i + 1`).
pub(crate) fn open_sqlite(path: &Path, migrations: &[&str]) -> Result<Connection> {
    let fail = |e: rusqlite::Error| database_error(path, &e);
    let mut conn = Connection::open(path).map_err(fail)?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(fail)?;
    use_wal(&conn).map_err(fail)?;
    conn.pragma_update(None, "synchronous", "NORMAL")
        .map_err(fail)?;
    migrate(&mut conn, migrations).map_err(fail)?;
    Ok(conn)
}

/// Switches the file to WAL. SQLite answers a switch that meets another connection's
/// lock (two `evo` opening a new data directory at once) with "database is locked"
/// straight away, without the busy handler, so the switch is tried again until
/// [`BUSY_TIMEOUT`]. A file already in WAL stays as it is.
fn use_wal(conn: &Connection) -> rusqlite::Result<()> {
    let deadline = Instant::now() + BUSY_TIMEOUT;
    let mut pause = Duration::from_millis(1);
    loop {
        match conn.pragma_update(None, "journal_mode", "WAL") {
            Err(e)
                if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy)
                    && Instant::now() + pause < deadline =>
            {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            done => return done,
        }
    }
}

fn migrate(conn: &mut Connection, migrations: &[&str]) -> rusqlite::Result<()> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let version: i64 = tx.pragma_query_value(None, "user_version", |row| row.get(0))?;
    let applied = usize::try_from(version).unwrap_or(0);
    for (i, migration) in (1_i64..).zip(migrations).skip(applied) {
        tx.execute_batch(migration)?;
        tx.pragma_update(None, "user_version", i)?;
    }
    tx.commit()
}

/// An SQLite error as Evo's [`Error::Database`], transient when the file was busy.
pub(crate) fn database_error(path: &Path, error: &rusqlite::Error) -> Error {
    let transient = matches!(
        error.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    );
    let what_to_do = match error.sqlite_error_code() {
        Some(rusqlite::ErrorCode::NotADatabase | rusqlite::ErrorCode::DatabaseCorrupt) => format!(
            "; the file is damaged or is not one of Evo's: move it aside (`mv {0} {0}.damaged`) and Evo starts an empty one",
            path.display()
        ),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) => {
            "; another process holds it (another evo, or a program with the file open): try again when it is done".into()
        }
        Some(rusqlite::ErrorCode::ReadOnly) => {
            "; the data directory is read-only: give Evo a writable one (--data-dir or EVO_HOME)".into()
        }
        Some(rusqlite::ErrorCode::DiskFull) => {
            "; the disk is full: free some space and try again (the change was rolled back, nothing is half-written)".into()
        }
        Some(rusqlite::ErrorCode::CannotOpen) => {
            "; check that its directory exists and is writable".into()
        }
        // A full disk often shows as an I/O error: SQLite could not create or grow the
        // file beside the database that its write-ahead log needs.
        Some(rusqlite::ErrorCode::SystemIoFailure) if disk_is_full(path) => {
            "; the disk holding it is full: free some space and try again (nothing was lost)"
                .into()
        }
        Some(rusqlite::ErrorCode::SystemIoFailure) => {
            "; the disk failed to read or write it: check that it has room and is healthy (`df`, `dmesg`)".into()
        }
        _ => String::new(),
    };
    Error::Database {
        message: format!("{}: {error}{what_to_do}", path.display()),
        transient,
    }
}

/// Whether the file system holding `path` has (almost) no room left for an ordinary user.
fn disk_is_full(path: &Path) -> bool {
    let dir = path.parent().unwrap_or(path);
    rustix::fs::statvfs(dir).is_ok_and(|fs| fs.f_bavail.saturating_mul(fs.f_frsize) < 64 << 10)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opening_twice_migrates_once() {
        let dir = tempfile::tempdir().unwrap();
        drop(Db::open(dir.path()).unwrap());
        let db = Db::open(dir.path()).unwrap();
        let version: i64 = db
            .read(|c| c.pragma_query_value(None, "user_version", |r| r.get(0)))
            .unwrap();
        assert_eq!(version, MIGRATIONS.len() as i64);
        let mode: String = db
            .read(|c| c.pragma_query_value(None, "journal_mode", |r| r.get(0)))
            .unwrap();
        assert_eq!(mode, "wal");
    }

    #[test]
    fn processes_opening_a_new_database_at_once_all_open_it() {
        // Two `evo` started together on a new data directory both switch the new file
        // to WAL; SQLite answers the second "database is locked" at once, without waiting.
        for _ in 0..20 {
            let dir = tempfile::tempdir().unwrap();
            let start = std::sync::Barrier::new(4);
            std::thread::scope(|scope| {
                let opened: Vec<_> = (0..4)
                    .map(|_| {
                        scope.spawn(|| {
                            start.wait();
                            Db::open(dir.path()).map(drop)
                        })
                    })
                    .collect();
                for open in opened {
                    open.join().unwrap().unwrap();
                }
            });
        }
    }
}
