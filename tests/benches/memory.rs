//! `cargo bench -p evo-tests --bench memory`
//!
//! Hybrid memory search at 10k and 100k entries (budget at 100k: p50 < 5 ms, p99 < 20 ms,
//! including queries made of very common words), next to its two halves measured in the
//! same run as floors: the FTS5 bm25 query alone and the vector scan alone. Also: store
//! with its duplicate check, and recall for a 50-word message.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_group};
use evo_host::memory::index::VectorIndex;
use evo_host::memory::{Category, MemoryManager, Source};
use evo_host::retrieval::embed::hash_embed;

use evo_tests::shared::zipf_corpus as corpus;

fn populated(n: usize) -> (tempfile::TempDir, MemoryManager) {
    let dir = tempfile::tempdir().expect("tempdir");
    let memory = MemoryManager::open(dir.path()).expect("opens");
    let texts = corpus(n);
    let items: Vec<(&str, Category)> = texts.iter().map(|t| (t.as_str(), Category::Fact)).collect();
    memory.import(&items, Source::User).expect("imports");
    (dir, memory)
}

const QUERIES: [(&str, &str); 3] = [
    ("rare", "w4890x w4711x"),
    ("mid", "w0450x w0777x w1200x"),
    ("common", "project update"),
];

fn search(c: &mut Criterion) {
    for n in [10_000, 100_000] {
        let (dir, memory) = populated(n);
        check_results(&dir, &memory, n);
        let mut group = c.benchmark_group(format!("memory_search_{}k", n / 1000));
        group.sample_size(50);
        for (label, query) in QUERIES {
            group.bench_with_input(
                BenchmarkId::new("evo: hybrid top-10", label),
                query,
                |b, q| {
                    b.iter(|| black_box(memory.search(q, 10).expect("searches")));
                },
            );
        }
        // Floors: each half alone, on the same data, without Evo's code around it.
        let conn = rusqlite::Connection::open(dir.path().join("memory.db")).expect("opens");
        for (label, query) in QUERIES {
            let expression = query
                .split(' ')
                .map(|t| format!("\"{t}\""))
                .collect::<Vec<_>>()
                .join(" OR ");
            group.bench_with_input(BenchmarkId::new("floor: FTS5 bm25 top-10", label), &expression, |b, e| {
                let mut statement = conn
                    .prepare("SELECT rowid FROM entries_fts WHERE entries_fts MATCH ?1 ORDER BY bm25(entries_fts) LIMIT 10")
                    .expect("prepares");
                let rows = statement.query_map([e], |r| r.get::<_, i64>(0)).expect("queries").count();
                assert_eq!(rows, 10, "{label}");
                b.iter(|| {
                    let rows: Vec<i64> = statement
                        .query_map([e], |r| r.get(0))
                        .expect("queries")
                        .collect::<Result<_, _>>()
                        .expect("rows");
                    black_box(rows)
                });
            });
        }
        let mut index = VectorIndex::new(evo_host::retrieval::embed::HASH_DIM);
        for (i, text) in corpus(n).iter().enumerate() {
            index.insert(i as i64, &hash_embed(text), Default::default());
        }
        let query = hash_embed("w0450x w0777x w1200x");
        assert_eq!(index.top_k(&query, 40).len(), 40);
        group.bench_function("floor: vector scan top-40", |b| {
            b.iter(|| black_box(index.top_k(&query, 40)));
        });
        group.finish();

        // p99 is not in criterion's report: measure it directly over many queries.
        let mut times: Vec<Duration> = (0..300)
            .map(|i| {
                let (_, query) = QUERIES[i % QUERIES.len()];
                let started = Instant::now();
                black_box(memory.search(query, 10).expect("searches"));
                started.elapsed()
            })
            .collect();
        times.sort();
        println!(
            "memory_search_{}k mixed queries: p50 {:?}, p99 {:?}",
            n / 1000,
            times[times.len() / 2],
            times[times.len() * 99 / 100]
        );
    }
}

/// Checks Evo's answers once before anything is timed, and prints what skipping the very
/// common words costs in result quality: how many of Evo's top 10 for "project update"
/// contain both words, next to plain bm25 on the full query, and how many of Evo's 10
/// are in bm25's 10.
fn check_results(dir: &tempfile::TempDir, memory: &MemoryManager, n: usize) {
    for (label, query) in &QUERIES[..2] {
        let hits = memory.search(query, 10).expect("searches");
        assert_eq!(hits.len(), 10, "{label}");
        assert!(
            query.split(' ').any(|word| hits[0].text.contains(word)),
            "{label}: the best hit has a query word: {}",
            hits[0].text
        );
    }
    let both = |text: &str| text.contains("project") && text.contains("update");
    let ours: Vec<String> = memory
        .search("project update", 10)
        .expect("searches")
        .into_iter()
        .map(|hit| hit.text)
        .collect();
    assert_eq!(ours.len(), 10);
    let conn = rusqlite::Connection::open(dir.path().join("memory.db")).expect("opens");
    let full: Vec<String> = conn
        .prepare(
            "SELECT e.text FROM entries_fts JOIN entries e ON e.rowid = entries_fts.rowid
             WHERE entries_fts MATCH '\"project\" OR \"update\"' ORDER BY bm25(entries_fts) LIMIT 10",
        )
        .expect("prepares")
        .query_map([], |r| r.get(0))
        .expect("queries")
        .collect::<Result<_, _>>()
        .expect("rows");
    println!(
        "memory_search_{}k common words: {}/10 of Evo's results have both words, {}/10 of plain bm25's; {} of Evo's 10 are in bm25's 10",
        n / 1000,
        ours.iter().filter(|t| both(t)).count(),
        full.iter().filter(|t| both(t)).count(),
        ours.iter().filter(|t| full.contains(t)).count(),
    );
}

fn store_and_recall(c: &mut Criterion) {
    let (_dir, memory) = populated(10_000);
    let mut group = c.benchmark_group("memory_10k");
    let mut i = 0_u64;
    assert!(
        memory
            .store("bench fact number 0 about w0001x", None)
            .expect("stores")
            .stored
    );
    group.bench_function("store with duplicate check", |b| {
        b.iter(|| {
            i += 1;
            black_box(
                memory
                    .store(&format!("bench fact number {i} about w0001x"), None)
                    .expect("stores"),
            )
        });
    });
    let message = "I was wondering whether the project update from last week covered the w0450x \
        migration and whether anyone checked the w0777x numbers before we sent the report to \
        the client because I remember there was a question about w1200x and the deadline that \
        we agreed on in the meeting with the team last Tuesday afternoon please";
    assert!(message.split_whitespace().count() >= 50);
    assert!(!memory.recall(message).expect("recalls").is_empty());
    group.bench_function("recall, 50-word message", |b| {
        b.iter(|| black_box(memory.recall(black_box(message)).expect("recalls")));
    });
    group.finish();
}

criterion_group!(benches, search, store_and_recall);
/// The code this bench measures: a change under these paths makes its record stale.
const PATHS: &[&str] = &[
    "host/src/memory",
    "host/src/db.rs",
    "host/src/storage",
    "tests/benches/memory.rs",
];

evo_tests::recorded_main!("memory", PATHS, benches);
