//! Keeping the user's files searchable: `MEMORY.md` and the daily logs, indexed as they
//! change (by this process or any other).
//!
//! A memory shared by several nodes indexes neither: the files are one node's, and each
//! node indexing its own into the shared entries would replace the others'.

use super::backend::LogFile;
use super::*;

impl Store {
    /// Re-indexes `MEMORY.md` if it changed since it was last indexed (by any process).
    pub(in crate::memory) fn sync_memory_md(
        &mut self,
        data_dir: &Path,
        embedder: &dyn Embedder,
    ) -> Result<()> {
        if self.db.shared() {
            return Ok(());
        }
        let path = data_dir.join(MEMORY_MD);
        let text = files::load_long_term(data_dir)?;
        let signature = hex::encode(Sha256::digest(text.as_bytes()));
        let stored = self.db.setting("memory_md")?;
        if stored.as_deref() == Some(signature.as_str()) {
            return Ok(());
        }
        let items = files::memory_md_items(&text);
        let texts: Vec<&str> = items.iter().map(String::as_str).collect();
        let vectors = embedder.embed(&texts)?;
        let model = embedder.model();
        let now = now_ms();
        let (removed, added) = self.write(|store| {
            let removed = store.db.delete_source(Source::File, None)?;
            let mut added = Vec::with_capacity(items.len());
            for (item, vector) in items.iter().zip(&vectors) {
                let entry = MemoryEntry {
                    id: new_id(item),
                    text: item.clone(),
                    score: 0.0,
                    category: crate::memory::Category::Other,
                    source: Source::File,
                    created_at: now,
                    updated_at: now,
                    superseded_by: None,
                };
                added.extend(store.db.insert(&entry, &model, vector, false)?);
            }
            store.db.set_setting("memory_md", Some(&signature))?;
            Ok((removed, added))
        })?;
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
        if self.db.shared() {
            return Ok(());
        }
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
        let known = self.db.log_files()?;
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
            let previous = known.iter().find(|k| &k.day == day);
            if previous.is_some_and(|k| k.len == len && k.mtime == mtime) {
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
                usize::try_from(k.len).is_ok_and(|old| {
                    old <= bytes.len() && hex::encode(Sha256::digest(&bytes[..old])) == k.digest
                })
            });
            let start = appended.map_or(0, |k| usize::try_from(k.bullets).unwrap_or(0));
            self.index_log(day, &bytes, start, embedder, (len, mtime))?;
        }
        if full {
            for log in known.iter().filter(|k| !days.contains(&k.day)) {
                self.drop_log(&log.day)?;
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
        let log = LogFile {
            day: day.to_owned(),
            len,
            mtime,
            digest: hex::encode(Sha256::digest(bytes)),
            bullets: i64::try_from(bullets.len()).unwrap_or(i64::MAX),
        };
        let prefix = format!("log-{day}-");
        let (removed, added) = self.write(|store| {
            let removed = if start == 0 {
                store.db.delete_source(Source::Log, Some(&prefix))?
            } else {
                Vec::new()
            };
            let mut added = Vec::with_capacity(chunks.len());
            for ((id, at, chunk), vector) in chunks.iter().zip(&vectors) {
                let entry = MemoryEntry {
                    id: id.clone(),
                    text: chunk.clone(),
                    score: 0.0,
                    category: crate::memory::Category::Other,
                    source: Source::Log,
                    created_at: *at,
                    updated_at: *at,
                    superseded_by: None,
                };
                if let Some(rowid) = store.db.insert(&entry, &model, vector, true)? {
                    added.push((rowid, *at, vector));
                }
            }
            store.db.set_log_file(&log)?;
            Ok((removed, added))
        })?;
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
        let prefix = format!("log-{day}-");
        let removed = self.write(|store| {
            let removed = store.db.delete_source(Source::Log, Some(&prefix))?;
            store.db.delete_log_file(day)?;
            Ok(removed)
        })?;
        for rowid in removed {
            self.index.remove(rowid);
        }
        Ok(())
    }
}
