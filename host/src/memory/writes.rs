//! Writes to memory: a store's decision (add, update, restatement) and its history,
//! imports, and forgetting.

use super::*;

impl MemoryManager {
    /// Stores `text` from the user and says what was decided (see
    /// [`MemoryManager::decide_from`]).
    pub fn decide(&self, text: &str, category: Category) -> Result<StoreDecision> {
        self.decide_from(text, category, Source::User)
    }

    /// Stores `text` after comparing it with the entries it resembles (see `decide`):
    /// a restatement is not stored, an update supersedes the old entry (kept), anything
    /// else is added. The decision and its reason are recorded (see
    /// [`MemoryManager::history`]). The comparison and the write are one transaction, so
    /// two processes storing the same text at once store it once.
    pub fn decide_from(
        &self,
        text: &str,
        category: Category,
        source: Source,
    ) -> Result<StoreDecision> {
        let text = check_text(text)?;
        // One embedder for the vector and its label, also while a reindex swaps it.
        let embedder = self.embedder();
        let vector = embed_one(embedder.as_ref(), text)?;
        let model = embedder.model();
        let mut store = self.lock();
        // The write lock is taken first: the comparison must see every committed entry.
        let (decision, written) = store.write(|store| {
            store.refresh()?;
            let Comparison {
                noop,
                update: superseded,
                beside,
            } = if self.config.dedup {
                self.compare(store, text, category, &vector)?
            } else {
                Comparison {
                    beside: "deduplication is off".to_owned(),
                    ..Comparison::default()
                }
            };
            if let Some(noop) = noop {
                record(store, &noop, text)?;
                return Ok((noop, None));
            }
            let now = now_ms();
            let entry = MemoryEntry {
                id: new_id(text),
                text: text.to_owned(),
                score: 0.0,
                category,
                source,
                created_at: now,
                updated_at: now,
                superseded_by: None,
            };
            let rowid = store
                .db
                .insert(&entry, &model, &vector, false)?
                .ok_or_else(|| Error::Engine(format!("memory id {} is taken", entry.id)))?;
            let decision = match &superseded {
                Some(Supersede {
                    rowid: old_rowid,
                    id: old_id,
                    change: how,
                }) => {
                    store.db.set_superseded(*old_rowid, Some(&entry.id), now)?;
                    StoreDecision {
                        action: Action::Update,
                        id: entry.id.clone(),
                        supersedes: Some(old_id.clone()),
                        reason: format!(
                            "stored as {}; supersedes {old_id} ({how}), which stays in its history",
                            entry.id
                        ),
                    }
                }
                None => StoreDecision {
                    action: Action::Add,
                    id: entry.id.clone(),
                    supersedes: None,
                    reason: format!("stored as {}: {beside}", entry.id),
                },
            };
            record(store, &decision, text)?;
            let old = superseded.map(|s| s.rowid);
            Ok((decision, Some(Written { rowid, entry, old })))
        })?;
        if let Some(Written { rowid, entry, old }) = written {
            let meta = Meta {
                source: entry.source,
                created_at: entry.created_at,
            };
            store.index.insert(rowid, &vector, meta);
            if let Some(old) = old {
                store.reload_one(old)?;
            }
        }
        self.decisions[decision.action as usize].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        tracing::info!(
            target: "evo::memory",
            action = decision.action.as_str(),
            "memory: {}",
            decision.reason
        );
        Ok(decision)
    }

    /// Compares `text` with the nearest entries (not log lines): a noop decision if one
    /// already says it, else the entry it updates, if any, with what changed.
    fn compare(
        &self,
        store: &Store,
        text: &str,
        category: Category,
        vector: &[f32],
    ) -> Result<Comparison> {
        // A change of state shares its subject and little else with what it changes
        // (`Alice lives in Lisbon` → `Alice moved to Porto`): past the nearest few,
        // which are compared whatever they are, more are compared for an update only.
        let nearest = store
            .index
            .top_k_where(vector, UPDATE_CANDIDATES, &|m| m.source != Source::Log);
        let rowids: Vec<i64> = nearest.iter().map(|(r, _)| *r).collect();
        let threshold = self.config.compare_threshold;
        let mut close: Vec<(i64, MemoryEntry, f32, Relation)> = store
            .fetch(&rowids, vector, false)?
            .into_iter()
            .filter_map(|(rowid, entry, cosine)| {
                let relation = decide::relate(&entry.text, text);
                let compared = cosine >= threshold
                    && nearest[..nearest.len().min(COMPARE_CANDIDATES)]
                        .iter()
                        .any(|(r, _)| *r == rowid);
                (compared || matches!(relation, Relation::Update { .. }))
                    .then_some((rowid, entry, cosine, relation))
            })
            .collect();
        close.sort_by(|a, b| b.2.total_cmp(&a.2));
        let mut update = None;
        let mut beside = match close.first() {
            Some(_) => String::new(),
            None => "no stored entry is close to it".to_owned(),
        };
        for (rowid, entry, cosine, relation) in close {
            match relation {
                Relation::Restatement => {
                    let noop = StoreDecision {
                        action: Action::Noop,
                        id: entry.id.clone(),
                        supersedes: None,
                        reason: format!(
                            "not stored: {} already says this (similarity {cosine:.2}): {:?}",
                            entry.id, entry.text
                        ),
                    };
                    return Ok(Comparison {
                        noop: Some(noop),
                        ..Comparison::default()
                    });
                }
                Relation::Update { from, to }
                    if update.is_none()
                        && entry.source != Source::File
                        && (entry.category == category
                            || Category::Other == category
                            || entry.category == Category::Other) =>
                {
                    update = Some(Supersede {
                        rowid,
                        id: entry.id.clone(),
                        change: format!("{from:?} → {to:?}"),
                    });
                }
                Relation::Different(why) if beside.is_empty() => {
                    beside = format!(
                        "a different fact from {} (similarity {cosine:.2}): {why}",
                        entry.id
                    );
                }
                Relation::Update { .. } | Relation::Different(_) => {}
            }
        }
        if beside.is_empty() {
            beside = "different from the entries close to it".to_owned();
        }
        Ok(Comparison {
            noop: None,
            update,
            beside,
        })
    }

    /// Every version of the fact `id` belongs to, oldest first, and the decisions that
    /// made them (also for versions since forgotten).
    pub fn history(&self, id: &str) -> Result<EntryHistory> {
        let id = id.trim();
        let store = self.current()?;
        let by_id = |id: &str| -> Result<Option<MemoryEntry>> {
            Ok(store.db.entry(id)?.map(|(_, entry)| entry))
        };
        let older = |id: &str| store.db.previous_version(id);
        let mut versions: Vec<MemoryEntry> = Vec::new();
        if let Some(entry) = by_id(id)? {
            let mut cursor = entry.id.clone();
            while let Some(previous) = older(&cursor)? {
                if versions.iter().any(|v| v.id == previous.id) {
                    break;
                }
                cursor = previous.id.clone();
                versions.insert(0, previous);
            }
            let mut next = entry.superseded_by.clone();
            versions.push(entry);
            while let Some(id) = next {
                match by_id(&id)? {
                    Some(newer) if !versions.iter().any(|v| v.id == newer.id) => {
                        next = newer.superseded_by.clone();
                        versions.push(newer);
                    }
                    _ => break,
                }
            }
        }
        let mut ids: Vec<String> = versions.iter().map(|v| v.id.clone()).collect();
        if ids.is_empty() {
            ids.push(id.to_owned());
        }
        // Decisions name the versions they touched, also forgotten ones: follow them.
        let mut events: Vec<(i64, HistoryEvent)> = Vec::new();
        let mut seen = 0;
        while seen < ids.len() {
            let id = ids[seen].clone();
            seen += 1;
            let found = store.db.decisions_naming(&id)?;
            for (rowid, event) in found {
                for linked in [Some(&event.id), event.supersedes.as_ref()]
                    .into_iter()
                    .flatten()
                {
                    if !ids.contains(linked) {
                        ids.push(linked.clone());
                    }
                }
                if !events.iter().any(|(r, _)| *r == rowid) {
                    events.push((rowid, event));
                }
            }
        }
        // Rowids grow with every decision: their order is the order things happened.
        events.sort_by_key(|(rowid, _)| *rowid);
        let events: Vec<HistoryEvent> = events.into_iter().map(|(_, e)| e).collect();
        if versions.is_empty() && events.is_empty() {
            return Err(Error::MemoryEntryNotFound { id: id.to_owned() });
        }
        Ok(EntryHistory { versions, events })
    }

    /// Adds many entries in one transaction, without duplicate checks (for migrating an
    /// existing store or seeding one), then optimises the keyword index. Every text is
    /// checked like [`MemoryManager::store`]'s; one bad text stops the import and nothing
    /// is written. Returns how many entries were added.
    pub fn import(&self, items: &[(&str, Category)], source: Source) -> Result<usize> {
        let texts = items
            .iter()
            .map(|(text, _)| check_text(text))
            .collect::<Result<Vec<_>>>()?;
        let embedder = self.embedder();
        let vectors = embedder.embed(&texts)?;
        let model = embedder.model();
        let mut store = self.lock();
        let now = now_ms();
        let rowids = store.write(|store| {
            let mut rowids = Vec::with_capacity(items.len());
            for ((text, (_, category)), vector) in texts.iter().zip(items).zip(&vectors) {
                let entry = MemoryEntry {
                    id: new_id(text),
                    text: (*text).to_owned(),
                    score: 0.0,
                    category: *category,
                    source,
                    created_at: now,
                    updated_at: now,
                    superseded_by: None,
                };
                rowids.extend(store.db.insert(&entry, &model, vector, false)?);
            }
            store.db.optimize()?;
            Ok(rowids)
        })?;
        let meta = Meta {
            source,
            created_at: now,
        };
        for (rowid, vector) in rowids.into_iter().zip(&vectors) {
            store.index.insert(rowid, vector, meta);
        }
        Ok(items.len())
    }

    /// Forgets the entry with id `query`, or else the entries that match `query` closely
    /// (score ≥ `FORGET_MIN_SCORE`, at most `MAX_FORGET`), each with the older
    /// versions it superseded: a forgotten fact does not come back from its history.
    /// Items of `MEMORY.md` and lines of the daily logs are not forgotten this way: they
    /// live in their files; edit those instead.
    pub fn forget(&self, query: &str) -> Result<ForgetOutcome> {
        let query = query.trim();
        if query.is_empty() {
            return Err(invalid(
                "say what to forget: an id from a search, or a description",
            ));
        }
        let vector = self.embed_one(query)?;
        let mut store = self.current()?;
        let by_id: Option<(i64, String)> = store
            .db
            .entry(query)?
            .filter(|(_, e)| !matches!(e.source, Source::File | Source::Log))
            .map(|(rowid, e)| (rowid, e.id));
        let mut targets: Vec<(i64, String)> = match by_id {
            Some(target) => vec![target],
            None => search_rows(&store, query, &vector, MAX_FORGET, &Filter::default())?
                .into_iter()
                .filter(|(_, e)| e.score >= FORGET_MIN_SCORE && !e.source.is_file())
                .map(|(rowid, e)| (rowid, e.id))
                .collect(),
        };
        let mut next = 0;
        while next < targets.len() {
            let older = store.db.superseded_by(&targets[next].1)?;
            for version in older {
                if !targets.contains(&version) {
                    targets.push(version);
                }
            }
            next += 1;
        }
        let deleted = store.write(|store| {
            let mut deleted = Vec::new();
            for (rowid, id) in &targets {
                if store.db.delete(*rowid)? {
                    deleted.push((*rowid, id.clone()));
                }
            }
            Ok(deleted)
        })?;
        for (rowid, _) in &deleted {
            store.index.remove(*rowid);
            store.retired.remove(*rowid);
        }
        Ok(ForgetOutcome {
            deleted: u32::try_from(deleted.len()).unwrap_or(u32::MAX),
            ids: deleted.into_iter().map(|(_, id)| id).collect(),
        })
    }
}

/// Records a store decision (in the store's transaction).
fn record(store: &Store, decision: &StoreDecision, text: &str) -> Result<()> {
    store.db.record(store::backend::Decision {
        at: now_ms(),
        action: decision.action.as_str(),
        entry: &decision.id,
        supersedes: decision.supersedes.as_deref(),
        text,
        reason: &decision.reason,
    })
}

impl MemoryManager {
    /// Keeps the memory writes skills suggested (`memoryWrites`), under the rule of the
    /// agent's capture: each is compared with what memory holds (see
    /// [`MemoryManager::decide_from`]) and kept, merged into the entry that already
    /// says it, or refused, with the reason. Refused: everything while automatic capture
    /// is off, text that reads as instructions to the model (it would be recalled into
    /// later prompts), text memory cannot hold, and a store that failed.
    pub fn keep_writes(&self, writes: &[MemoryWrite]) -> Vec<MemoryWriteOutcome> {
        writes.iter().map(|write| self.keep_write(write)).collect()
    }

    fn keep_write(&self, write: &MemoryWrite) -> MemoryWriteOutcome {
        if !self.config.auto_capture {
            return MemoryWriteOutcome::refused(
                write,
                "automatic capture is off for this host (`MemoryConfig::auto_capture`): skills' suggestions are not kept; store the text with `evo memory store` if it should be",
            );
        }
        if capture::looks_like_injection(&write.text) {
            return MemoryWriteOutcome::refused(
                write,
                "the text reads as instructions to the model, which memory does not keep: it would be recalled into later prompts",
            );
        }
        let category = write
            .category
            .as_deref()
            .and_then(Category::parse)
            .unwrap_or(Category::Other);
        match self.decide_from(&write.text, category, Source::Skill) {
            Ok(decision) => MemoryWriteOutcome {
                text: write.text.clone(),
                status: if decision.action == Action::Noop {
                    WriteStatus::Merged
                } else {
                    WriteStatus::Kept
                },
                id: Some(decision.id),
                supersedes: decision.supersedes,
                reason: decision.reason,
            },
            Err(e) => MemoryWriteOutcome::refused(write, format!("[{}] {e}", e.code())),
        }
    }
}
