//! Hybrid search over the store, and memory as the kernel sees it (`ctx.memory()`).

use super::*;
use crate::retrieval::rank;

pub(super) fn search_locked(
    store: &Store,
    query: &str,
    vector: &[f32],
    limit: usize,
    filter: &Filter,
) -> Result<Vec<MemoryEntry>> {
    Ok(search_rows(store, query, vector, limit, filter)?
        .into_iter()
        .map(|(_, e)| e)
        .collect())
}

/// Hybrid search (see [`store`] for the fusion) over the entries `filter` keeps,
/// keeping rowids.
pub(super) fn search_rows(
    store: &Store,
    query: &str,
    vector: &[f32],
    limit: usize,
    filter: &Filter,
) -> Result<Vec<(i64, MemoryEntry)>> {
    let n = store::candidates(limit);
    let keep = |meta: &Meta| filter.keeps(meta);
    let mut by_vector = if filter.is_open() {
        store.index.top_k(vector, n)
    } else {
        store.index.top_k_where(vector, n, &keep)
    };
    if filter.include_superseded {
        by_vector.extend(store.retired.top_k_where(vector, n, &keep));
    }
    let by_keyword = store.keyword_candidates(query, n, filter)?;
    let best_keyword = by_keyword.iter().map(|(_, s)| *s).fold(0.0_f32, f32::max);
    let mut rowids: Vec<i64> = by_vector
        .iter()
        .chain(&by_keyword)
        .map(|(r, _)| *r)
        .collect();
    rowids.sort_unstable();
    rowids.dedup();
    let scored = store
        .fetch(&rowids, vector, filter.include_superseded)?
        .into_iter()
        .filter(|(_, entry, _)| {
            filter.keeps(&Meta {
                source: entry.source,
                created_at: entry.created_at,
            })
        })
        .map(|(rowid, mut entry, cosine)| {
            let bm25 = by_keyword
                .iter()
                .find(|(r, _)| *r == rowid)
                .map(|(_, s)| *s);
            entry.score = rank::fuse(cosine, bm25, best_keyword);
            (entry.score, (rowid, entry))
        });
    Ok(rank::top(scored, limit)
        .into_iter()
        .map(|(_, hit)| hit)
        .collect())
}

/// The kernel's view of memory (what `ctx.memory()` and Wasm skills use). Each operation
/// is a few milliseconds of SQLite and a vector scan, run inline: moving it to a blocking
/// thread would cost about as much as it saves.
impl Memory for MemoryManager {
    fn search(&self, query: String, limit: u32) -> BoxFuture<'_, Result<Vec<MemoryHit>>> {
        Box::pin(async move {
            let limit = usize::try_from(limit).unwrap_or(MAX_SEARCH_LIMIT);
            MemoryManager::search(self, &query, limit)
                .map(|hits| hits.into_iter().map(MemoryHit::from).collect())
        })
    }

    fn search_filtered(
        &self,
        query: String,
        limit: u32,
        filter: MemoryFilter,
    ) -> BoxFuture<'_, Result<Vec<MemoryHit>>> {
        Box::pin(async move {
            let options = SearchOptions {
                limit: usize::try_from(limit).unwrap_or(MAX_SEARCH_LIMIT),
                sources: filter
                    .sources
                    .iter()
                    .map(|s| Source::parse_checked(s))
                    .collect::<Result<_>>()?,
                since: filter.since,
                until: filter.until,
                include_superseded: filter.include_superseded,
            };
            MemoryManager::search_with(self, &query, &options)
                .map(|hits| hits.into_iter().map(MemoryHit::from).collect())
        })
    }

    fn store(&self, text: String, category: Option<String>) -> BoxFuture<'_, Result<StoreOutcome>> {
        Box::pin(async move {
            let category = category
                .as_deref()
                .map(Category::parse_checked)
                .transpose()?;
            MemoryManager::store_from(
                self,
                &text,
                category.unwrap_or(Category::Other),
                Source::User,
            )
        })
    }

    fn forget(&self, query: String) -> BoxFuture<'_, Result<u32>> {
        Box::pin(async move { MemoryManager::forget(self, &query).map(|o| o.deleted) })
    }

    fn keep(&self, writes: Vec<MemoryWrite>) -> BoxFuture<'_, Vec<MemoryWriteOutcome>> {
        Box::pin(async move { self.keep_writes(&writes) })
    }
}
