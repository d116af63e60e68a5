//! Keeping the user's files searchable: `MEMORY.md` and the daily logs, indexed as they
//! change (by this process or any other).

use super::*;

impl Store {
    /// Re-indexes `MEMORY.md` if it changed since it was last indexed (by any process).
    pub(in crate::memory) fn sync_memory_md(
        &mut self,
        data_dir: &Path,
        embedder: &dyn Embedder,
    ) -> Result<()> {
        let path = data_dir.join(MEMORY_MD);
        let text = files::load_long_term(data_dir)?;
        let signature = hex::encode(Sha256::digest(text.as_bytes()));
        let stored = self.setting("memory_md")?;
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
        let meta = Meta {
            source: Source::File,
            created_at: now,
        };
        for (rowid, vector) in added.into_iter().zip(&vectors) {
            self.index.insert(rowid, vector, meta);
        }
        tracing::info!(
            "memory: indexed {} items of {}",
            items.len(),
            path.display()
        );
        Ok(())
    }

    /// Indexes what changed in the daily logs: today's log always, every log when
    /// [`LOG_SCAN_INTERVAL`] has passed since the last full look (or `all`). Logs are
    /// append-only, so a log that grew has only its new lines embedded; one edited by
    /// hand is indexed again whole, and the lines of a deleted log leave the index.
    pub(in crate::memory) fn sync_logs(
        &mut self,
        data_dir: &Path,
        embedder: &dyn Embedder,
        all: bool,
    ) -> Result<()> {
        let dir = data_dir.join(files::DAILY_DIR);
        let full = all
            || self
                .logs_scanned
                .is_none_or(|t| t.elapsed() >= LOG_SCAN_INTERVAL);
        let days = if full {
            self.logs_scanned = Some(std::time::Instant::now());
            files::log_days(&dir)?
        } else {
            vec![files::today()]
        };
        let known: Vec<(String, i64, i64, String, i64)> = self
            .conn
            .prepare_cached("SELECT day, len, mtime, digest, bullets FROM log_files")
            .and_then(|mut q| {
                q.query_map([], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
                })?
                .collect()
            })
            .map_err(|e| self.fail(&e))?;
        for day in &days {
            let path = files::daily_log_path(data_dir, day);
            let Ok(metadata) = std::fs::metadata(&path) else {
                continue;
            };
            let len = i64::try_from(metadata.len()).unwrap_or(i64::MAX);
            let mtime = metadata
                .modified()
                .ok()
                .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
            let previous = known.iter().find(|k| &k.0 == day);
            if previous.is_some_and(|k| k.1 == len && k.2 == mtime) {
                continue;
            }
            if metadata.len() > files::MAX_LOG_FILE_BYTES {
                // Recorded as seen, so the warning comes once per change of the file.
                tracing::warn!(
                    "memory: {} is {} MiB; daily logs above {} MiB are not searched — move old entries to another file",
                    path.display(),
                    metadata.len() >> 20,
                    files::MAX_LOG_FILE_BYTES >> 20
                );
                self.index_log(day, b"", 0, embedder, (len, mtime))?;
                continue;
            }
            let bytes = std::fs::read(&path).map_err(Error::io_at(&path))?;
            let appended = previous.filter(|k| {
                usize::try_from(k.1).is_ok_and(|old| {
                    old <= bytes.len() && hex::encode(Sha256::digest(&bytes[..old])) == k.3
                })
            });
            let start = appended.map_or(0, |k| usize::try_from(k.4).unwrap_or(0));
            self.index_log(day, &bytes, start, embedder, (len, mtime))?;
        }
        if full {
            for (day, ..) in known.iter().filter(|k| !days.contains(&k.0)) {
                self.drop_log(day)?;
            }
        }
        Ok(())
    }

    /// Indexes the bullets of one day's log from bullet `start` on (all of them, after
    /// dropping the day's lines, when `start` is 0).
    fn index_log(
        &mut self,
        day: &str,
        bytes: &[u8],
        start: usize,
        embedder: &dyn Embedder,
        (len, mtime): (i64, i64),
    ) -> Result<()> {
        let text = String::from_utf8_lossy(bytes);
        let bullets = files::log_bullets(&text);
        let mut chunks: Vec<(String, i64, String)> = Vec::new();
        for (number, bullet) in bullets.iter().enumerate().skip(start) {
            let at = files::log_time(day, bullet.time.as_deref());
            for (part, chunk) in files::chunks(&bullet.text, crate::memory::MAX_TEXT_BYTES)
                .into_iter()
                .enumerate()
            {
                let id = match part {
                    0 => format!("log-{day}-{}", number + 1),
                    _ => format!("log-{day}-{}.{part}", number + 1),
                };
                chunks.push((id, at, chunk));
            }
        }
        let texts: Vec<&str> = chunks.iter().map(|c| c.2.as_str()).collect();
        let vectors = if texts.is_empty() {
            Vec::new()
        } else {
            embedder.embed(&texts)?
        };
        let model = embedder.model();
        let path = self.path.clone();
        let fail = |e: rusqlite::Error| db_error(&path, &e);
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(fail)?;
        let removed: Vec<i64> = if start == 0 {
            tx.prepare("DELETE FROM entries WHERE source = 'log' AND id GLOB ?1 RETURNING rowid")
                .and_then(|mut q| {
                    q.query_map([format!("log-{day}-*")], |r| r.get(0))?
                        .collect()
                })
                .map_err(fail)?
        } else {
            Vec::new()
        };
        let mut added = Vec::with_capacity(chunks.len());
        for ((id, at, chunk), vector) in chunks.iter().zip(&vectors) {
            tx.execute(
                "INSERT INTO entries (id, text, category, source, created_at, updated_at, model, embedding)
                 VALUES (?1, ?2, 'other', 'log', ?3, ?3, ?4, ?5)
                 ON CONFLICT(id) DO NOTHING",
                params![id, chunk, at, model, to_blob(vector)],
            )
            .map_err(fail)?;
            if tx.changes() > 0 {
                added.push((tx.last_insert_rowid(), *at, vector));
            }
        }
        tx.execute(
            "INSERT INTO log_files(day, len, mtime, digest, bullets) VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT(day) DO UPDATE SET len = excluded.len, mtime = excluded.mtime,
                 digest = excluded.digest, bullets = excluded.bullets",
            params![
                day,
                len,
                mtime,
                hex::encode(Sha256::digest(bytes)),
                i64::try_from(bullets.len()).unwrap_or(i64::MAX)
            ],
        )
        .map_err(fail)?;
        tx.commit().map_err(fail)?;
        for rowid in removed {
            self.index.remove(rowid);
        }
        for (rowid, created_at, vector) in added {
            let meta = Meta {
                source: Source::Log,
                created_at,
            };
            self.index.insert(rowid, vector, meta);
        }
        Ok(())
    }

    /// Removes the lines of a log whose file is gone.
    fn drop_log(&mut self, day: &str) -> Result<()> {
        let path = self.path.clone();
        let fail = |e: rusqlite::Error| db_error(&path, &e);
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(fail)?;
        let removed: Vec<i64> = tx
            .prepare("DELETE FROM entries WHERE source = 'log' AND id GLOB ?1 RETURNING rowid")
            .and_then(|mut q| {
                q.query_map([format!("log-{day}-*")], |r| r.get(0))?
                    .collect()
            })
            .map_err(fail)?;
        tx.execute("DELETE FROM log_files WHERE day = ?1", [day])
            .map_err(fail)?;
        tx.commit().map_err(fail)?;
        for rowid in removed {
            self.index.remove(rowid);
        }
        Ok(())
    }
}
