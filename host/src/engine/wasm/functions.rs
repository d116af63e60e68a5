//! Compiled functions shared between components (Cranelift's incremental cache).
//!
//! Every JavaScript skill carries the same engine (StarlingMonkey) and every Python
//! skill the same interpreter; only the snapshot of the skill's own code differs. The
//! compile cache ([`super::ArtifactCache`]) is keyed by the whole component, so each new
//! skill compiled the shared engine again: seconds of a 12 MB component's first load.
//! This cache is keyed by each function's compiled form (its IR, target and settings,
//! hashed with SHA-256 by Cranelift), so a function compiled for one component is
//! reused by the next, and by repeated functions inside one. An entry from another
//! Cranelift version does not match and is compiled again.
//!
//! One SQLite file beside the compiled artifacts. Entries compiled during a compile are
//! written in one transaction when it ends; past [`MAX_BYTES`] the oldest entries go.
//! A cache that cannot be opened, read or written is logged and skipped: it never
//! stops a compile.

use crate::lock;
use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use rusqlite::{Connection, OptionalExtension, params};

/// The most the entries may weigh: one JavaScript engine's functions are ~45 MB and
/// one Python interpreter's ~40 MB, for each engine configuration (with and without
/// fuel) that compiles them.
pub const MAX_BYTES: i64 = 256 << 20;

/// The file, inside the compile cache's directory.
const FILE: &str = "functions.sqlite3";

const SCHEMA: &str = "CREATE TABLE functions (key BLOB PRIMARY KEY, code BLOB NOT NULL);";

/// The function cache of a compile cache directory.
#[derive(Debug)]
pub struct FunctionCache {
    path: PathBuf,
    /// Opened on first use; `None` inside once it could not be.
    db: Mutex<Option<Option<Connection>>>,
    /// Compiled since the last [`FunctionCache::flush`], found by later lookups too.
    pending: Mutex<HashMap<Vec<u8>, Vec<u8>>>,
    /// A failure was logged already (one line, not one per function).
    warned: AtomicBool,
    /// Functions found here, and compiled, since the cache was made.
    reused: AtomicU64,
    compiled: AtomicU64,
}

impl FunctionCache {
    /// The cache of the compile cache directory `dir` (its file is created on first use).
    pub fn new(dir: &Path) -> Self {
        Self {
            path: dir.join(FILE),
            db: Mutex::new(None),
            pending: Mutex::default(),
            warned: AtomicBool::new(false),
            reused: AtomicU64::new(0),
            compiled: AtomicU64::new(0),
        }
    }

    /// Functions found here, and compiled, since the cache was made.
    pub fn counts(&self) -> (u64, u64) {
        (
            self.reused.load(Ordering::Relaxed),
            self.compiled.load(Ordering::Relaxed),
        )
    }

    /// Writes what was compiled since the last flush, drops the oldest entries past
    /// [`MAX_BYTES`], and closes the file until the next compile (no journal files
    /// are left beside the artifacts between compiles).
    pub fn flush(&self) {
        let pending = std::mem::take(&mut *lock(&self.pending));
        if pending.is_empty() {
            *lock(&self.db) = None;
            return;
        }
        let written = self.with_db(|db| {
            let tx = db.transaction()?;
            {
                let mut insert = tx.prepare_cached(
                    "INSERT OR IGNORE INTO functions (key, code) VALUES (?1, ?2)",
                )?;
                for (key, code) in &pending {
                    insert.execute(params![key, code])?;
                }
            }
            evict(&tx, MAX_BYTES)?;
            tx.commit()
        });
        if let Some(Err(e)) = written {
            self.warn(&e);
        }
        *lock(&self.db) = None;
    }

    /// Runs `f` on the open database; `None` when it cannot be opened (logged once).
    fn with_db<T>(&self, f: impl FnOnce(&mut Connection) -> T) -> Option<T> {
        let mut db = lock(&self.db);
        let db = db.get_or_insert_with(|| {
            if let Some(dir) = self.path.parent()
                && let Err(e) = std::fs::create_dir_all(dir)
            {
                tracing::warn!(dir = %dir.display(), error = %e, "could not create the compile cache directory; functions are compiled anew");
                return None;
            }
            crate::db::open_sqlite(&self.path, &[SCHEMA])
                .inspect_err(|e| {
                    tracing::warn!(path = %self.path.display(), error = %e, "could not open the compiled-function cache; functions are compiled anew");
                })
                .ok()
        });
        db.as_mut().map(f)
    }

    fn warn(&self, error: &rusqlite::Error) {
        if !self.warned.swap(true, Ordering::Relaxed) {
            tracing::warn!(path = %self.path.display(), %error, "the compiled-function cache failed; functions are compiled anew");
        }
    }
}

impl wasmtime::CacheStore for FunctionCache {
    fn get(&self, key: &[u8]) -> Option<Cow<'_, [u8]>> {
        if let Some(code) = lock(&self.pending).get(key) {
            self.reused.fetch_add(1, Ordering::Relaxed);
            return Some(Cow::Owned(code.clone()));
        }
        let found = self.with_db(|db| {
            db.prepare_cached("SELECT code FROM functions WHERE key = ?1")?
                .query_row([key], |row| row.get::<_, Vec<u8>>(0))
                .optional()
        })?;
        match found {
            Ok(Some(code)) => {
                self.reused.fetch_add(1, Ordering::Relaxed);
                Some(Cow::Owned(code))
            }
            Ok(None) => None,
            Err(e) => {
                self.warn(&e);
                None
            }
        }
    }

    fn insert(&self, key: &[u8], value: Vec<u8>) -> bool {
        self.compiled.fetch_add(1, Ordering::Relaxed);
        lock(&self.pending).insert(key.to_vec(), value);
        true
    }
}

/// Deletes the oldest entries until the rest weigh at most `max` bytes.
fn evict(db: &Connection, max: i64) -> rusqlite::Result<()> {
    let total: i64 = db.query_row(
        "SELECT COALESCE(SUM(length(key) + length(code)), 0) FROM functions",
        [],
        |row| row.get(0),
    )?;
    if total <= max {
        return Ok(());
    }
    let mut excess = total - max;
    let mut last = None;
    let mut oldest =
        db.prepare("SELECT rowid, length(key) + length(code) FROM functions ORDER BY rowid")?;
    let mut rows = oldest.query([])?;
    while excess > 0
        && let Some(row) = rows.next()?
    {
        last = Some(row.get::<_, i64>(0)?);
        excess -= row.get::<_, i64>(1)?;
    }
    drop(rows);
    if let Some(last) = last {
        db.execute("DELETE FROM functions WHERE rowid <= ?1", [last])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasmtime::CacheStore;

    #[test]
    fn entries_are_found_before_and_after_a_flush_and_by_another_process() {
        let dir = tempfile::tempdir().unwrap();
        let cache = FunctionCache::new(dir.path());
        assert!(cache.get(b"k1").is_none());
        assert!(cache.insert(b"k1", b"code one".to_vec()));
        assert_eq!(cache.get(b"k1").as_deref(), Some(&b"code one"[..]));
        cache.flush();
        assert_eq!(cache.get(b"k1").as_deref(), Some(&b"code one"[..]));
        assert_eq!(cache.counts(), (2, 1));
        let other = FunctionCache::new(dir.path());
        assert_eq!(other.get(b"k1").as_deref(), Some(&b"code one"[..]));
        assert!(other.get(b"k2").is_none());
    }

    #[test]
    fn the_oldest_entries_go_past_the_bound() {
        let db = Connection::open_in_memory().unwrap();
        db.execute_batch(SCHEMA).unwrap();
        for n in 0..10_u8 {
            db.execute(
                "INSERT INTO functions (key, code) VALUES (?1, ?2)",
                params![vec![n], vec![0_u8; 99]],
            )
            .unwrap();
        }
        // Ten entries of 100 bytes, at most 750 kept: the three oldest go.
        evict(&db, 750).unwrap();
        let kept: Vec<u8> = db
            .prepare("SELECT key FROM functions ORDER BY rowid")
            .unwrap()
            .query_map([], |row| row.get::<_, Vec<u8>>(0))
            .unwrap()
            .map(|key| key.unwrap()[0])
            .collect();
        assert_eq!(kept, [3, 4, 5, 6, 7, 8, 9]);
    }

    #[test]
    fn an_unopenable_cache_is_a_miss_never_an_error() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(FILE), b"not a database at all, just text").unwrap();
        let cache = FunctionCache::new(dir.path());
        assert!(cache.get(b"k1").is_none());
        assert!(cache.insert(b"k1", b"code".to_vec()));
        cache.flush();
        assert!(cache.get(b"k1").is_none());
    }
}
