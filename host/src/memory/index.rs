//! The in-process vector index: every active entry's vector, quantised to `i8`, scanned
//! in full for each query.
//!
//! A scan is exact over the whole store (no approximate graph that can miss entries) and
//! cheap: 100k vectors of 256 dimensions are 25 MiB as `i8`, a quarter of the memory
//! traffic of `f32`. Quantisation moves a cosine by about 0.01; callers that compare
//! against a threshold (deduplication) re-score the top candidates exactly.

use std::collections::HashMap;

/// Top-k candidates by approximate cosine, best first: `(rowid, score)`.
pub type Scored = Vec<(i64, f32)>;

/// What a filtered search ([`VectorIndex::top_k_where`]) may look at besides the vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meta {
    /// Where the entry came from.
    pub source: super::Source,
    /// Creation time, ms since the Unix epoch.
    pub created_at: i64,
}

impl Default for Meta {
    fn default() -> Self {
        Self {
            source: super::Source::User,
            created_at: 0,
        }
    }
}

/// Quantised unit vectors by rowid.
#[derive(Debug, Default)]
pub struct VectorIndex {
    dim: usize,
    rowids: Vec<i64>,
    codes: Vec<i8>,
    scales: Vec<f32>,
    metas: Vec<Meta>,
    slots: HashMap<i64, usize>,
}

impl VectorIndex {
    /// An empty index of `dim`-dimensional vectors.
    pub fn new(dim: usize) -> Self {
        Self {
            dim,
            ..Self::default()
        }
    }

    /// Length of the vectors held.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Number of vectors.
    pub fn len(&self) -> usize {
        self.rowids.len()
    }

    /// Whether the index is empty.
    pub fn is_empty(&self) -> bool {
        self.rowids.is_empty()
    }

    /// Adds (or replaces) the vector of `rowid`. Vectors of the wrong length are ignored.
    pub fn insert(&mut self, rowid: i64, vector: &[f32], meta: Meta) {
        if vector.len() != self.dim {
            return;
        }
        self.remove(rowid);
        let (codes, scale) = quantize(vector);
        self.slots.insert(rowid, self.rowids.len());
        self.rowids.push(rowid);
        self.codes.extend_from_slice(&codes);
        self.scales.push(scale);
        self.metas.push(meta);
    }

    /// Whether `rowid` is held.
    #[cfg(feature = "internals")]
    pub fn contains(&self, rowid: i64) -> bool {
        self.slots.contains_key(&rowid)
    }

    /// How many vectors have `meta` passing `keep`.
    pub fn count_where(&self, keep: impl Fn(&Meta) -> bool) -> usize {
        self.metas.iter().filter(|m| keep(m)).count()
    }

    /// Removes the vector of `rowid`, if present.
    pub fn remove(&mut self, rowid: i64) {
        let Some(slot) = self.slots.remove(&rowid) else {
            return;
        };
        let last = self.rowids.len() - 1;
        if slot != last {
            let moved = self.rowids[last];
            self.rowids.swap(slot, last);
            self.scales.swap(slot, last);
            self.metas.swap(slot, last);
            let (head, tail) = self.codes.split_at_mut(last * self.dim);
            head[slot * self.dim..(slot + 1) * self.dim].copy_from_slice(&tail[..self.dim]);
            self.slots.insert(moved, slot);
        }
        self.rowids.truncate(last);
        self.scales.truncate(last);
        self.metas.truncate(last);
        self.codes.truncate(last * self.dim);
    }

    /// The `k` vectors most similar to `query` (a unit vector), best first.
    pub fn top_k(&self, query: &[f32], k: usize) -> Scored {
        self.scan(query, k, None)
    }

    /// The `k` vectors most similar to `query` among those whose [`Meta`] passes
    /// `keep`, best first.
    pub fn top_k_where(
        &self,
        query: &[f32],
        k: usize,
        keep: &(dyn Fn(&Meta) -> bool + Sync),
    ) -> Scored {
        self.scan(query, k, Some(keep))
    }

    fn scan(
        &self,
        query: &[f32],
        k: usize,
        keep: Option<&(dyn Fn(&Meta) -> bool + Sync)>,
    ) -> Scored {
        let threads = if self.rowids.len() >= PARALLEL_SCAN_MIN_ROWS {
            std::thread::available_parallelism().map_or(1, |n| n.get().min(MAX_SCAN_THREADS))
        } else {
            1
        };
        self.scan_on(query, k, keep, threads)
    }

    /// [`Self::scan`] on `threads` threads, each over its share of the rows.
    fn scan_on(
        &self,
        query: &[f32],
        k: usize,
        keep: Option<&(dyn Fn(&Meta) -> bool + Sync)>,
        threads: usize,
    ) -> Scored {
        if query.len() != self.dim || k == 0 || self.is_empty() {
            return Vec::new();
        }
        let (q, q_scale) = quantize(query);
        let rows = self.rowids.len();
        let per_thread = rows.div_ceil(threads);
        let scan = |start: usize| {
            let end = (start + per_thread).min(rows);
            let codes = &self.codes[start * self.dim..end * self.dim];
            let mut scored: Vec<(i64, f32)> = codes
                .chunks_exact(self.dim)
                .zip(&self.rowids[start..end])
                .zip(&self.scales[start..end])
                .zip(&self.metas[start..end])
                .filter(|(_, meta)| keep.is_none_or(|keep| keep(meta)))
                .map(|(((codes, &rowid), &scale), _)| {
                    (rowid, dot_i8(codes, &q) as f32 * scale * q_scale)
                })
                .collect();
            best_k(&mut scored, k);
            scored
        };
        let mut scored = if threads == 1 {
            scan(0)
        } else {
            // The scan is bound by memory bandwidth; each core streams its own share.
            std::thread::scope(|scope| {
                let handles: Vec<_> = (1..threads)
                    .map(|t| scope.spawn(move || scan(t * per_thread)))
                    .collect();
                let mut merged = scan(0);
                for handle in handles {
                    merged.extend(handle.join().unwrap_or_default());
                }
                merged
            })
        };
        best_k(&mut scored, k);
        scored.sort_unstable_by(|a, b| b.1.total_cmp(&a.1));
        scored
    }
}

/// Below this many vectors a scan takes well under a millisecond on one core, less than
/// starting threads would save.
const PARALLEL_SCAN_MIN_ROWS: usize = 32_768;
/// Threads one scan may use; more only contend for the same memory bandwidth.
const MAX_SCAN_THREADS: usize = 4;

/// Keeps the `k` best of `scored` (in no particular order).
fn best_k(scored: &mut Vec<(i64, f32)>, k: usize) {
    if scored.len() > k {
        scored.select_nth_unstable_by(k - 1, |a, b| b.1.total_cmp(&a.1));
        scored.truncate(k);
    }
}

/// Symmetric `i8` quantisation with a per-vector scale.
fn quantize(vector: &[f32]) -> (Vec<i8>, f32) {
    let max = vector.iter().fold(0.0_f32, |m, x| m.max(x.abs()));
    if max == 0.0 {
        return (vec![0; vector.len()], 0.0);
    }
    let scale = max / 127.0;
    let codes = vector.iter().map(|x| (x / scale).round() as i8).collect();
    (codes, scale)
}

fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    // Sixteen independent lanes so the compiler emits packed multiply-adds.
    let mut acc = [0_i32; 16];
    let chunks = a.len() / 16 * 16;
    for (ca, cb) in a[..chunks]
        .chunks_exact(16)
        .zip(b[..chunks].chunks_exact(16))
    {
        for i in 0..16 {
            acc[i] += i32::from(ca[i]) * i32::from(cb[i]);
        }
    }
    let tail: i32 = a[chunks..]
        .iter()
        .zip(&b[chunks..])
        .map(|(x, y)| i32::from(*x) * i32::from(*y))
        .sum();
    acc.iter().sum::<i32>() + tail
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retrieval::embed::hash_embed;

    #[test]
    fn a_scan_split_across_threads_finds_what_one_thread_finds() {
        // Pseudo-random unit vectors from a fixed seed: the same data every run.
        let dim = 64;
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        };
        let mut unit = || {
            let v: Vec<f32> = (0..dim).map(|_| next()).collect();
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            v.into_iter().map(|x| x / norm).collect::<Vec<f32>>()
        };
        let mut index = VectorIndex::new(dim);
        let rows = PARALLEL_SCAN_MIN_ROWS + 7_001;
        for id in 0..rows {
            let source = if id % 3 == 0 {
                crate::memory::Source::Log
            } else {
                crate::memory::Source::User
            };
            let meta = Meta {
                source,
                created_at: 0,
            };
            index.insert(id as i64, &unit(), meta);
        }
        let not_logs = |m: &Meta| m.source != crate::memory::Source::Log;
        for _ in 0..5 {
            let query = unit();
            let serial = index.scan_on(&query, 10, None, 1);
            assert_eq!(serial.len(), 10);
            // What a search takes on this machine, and the splits other machines take.
            assert_eq!(index.top_k(&query, 10), serial);
            for threads in 2..=MAX_SCAN_THREADS {
                assert_eq!(
                    index.scan_on(&query, 10, None, threads),
                    serial,
                    "{threads}"
                );
            }
            let serial = index.scan_on(&query, 10, Some(&not_logs), 1);
            assert!(serial.iter().all(|(id, _)| id % 3 != 0));
            for threads in 2..=MAX_SCAN_THREADS {
                let split = index.scan_on(&query, 10, Some(&not_logs), threads);
                assert_eq!(split, serial, "{threads}");
            }
        }
    }

    #[test]
    fn finds_the_nearest_and_forgets_removed_vectors() {
        let texts = [
            "user prefers dark mode",
            "deploys happen on tuesday",
            "the cat is called miso",
        ];
        let mut index = VectorIndex::new(crate::retrieval::embed::HASH_DIM);
        for (i, text) in texts.iter().enumerate() {
            let meta = Meta {
                source: if i == 2 {
                    crate::memory::Source::Log
                } else {
                    crate::memory::Source::User
                },
                created_at: 0,
            };
            index.insert(i as i64 + 1, &hash_embed(text), meta);
        }
        let top = index.top_k(&hash_embed("what mode does the user prefer"), 2);
        assert_eq!(top[0].0, 1);
        let exact = crate::retrieval::embed::dot(
            &hash_embed("user prefers dark mode"),
            &hash_embed("user prefers dark mode"),
        );
        let self_score = index.top_k(&hash_embed("user prefers dark mode"), 1)[0].1;
        assert!((self_score - exact).abs() < 0.02, "{self_score} vs {exact}");

        index.remove(1);
        index.remove(1);
        assert_eq!(index.len(), 2);
        let top = index.top_k(&hash_embed("user prefers dark mode"), 3);
        assert!(top.iter().all(|(id, _)| *id != 1));
        assert_eq!(index.top_k(&hash_embed("miso the cat"), 1)[0].0, 3);
        let not_logs = index.top_k_where(&hash_embed("miso the cat"), 3, &|m| {
            m.source != crate::memory::Source::Log
        });
        assert_eq!(not_logs.iter().map(|(r, _)| *r).collect::<Vec<_>>(), [2]);
        assert_eq!(
            index.count_where(|m| m.source == crate::memory::Source::Log),
            1
        );
    }
}
