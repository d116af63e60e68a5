//! `./scripts/nodes --bench` (or, with a cluster of your own,
//! `EVO_TEST_POSTGRES=postgres://… cargo bench -p evo-tests --bench storage`)
//!
//! Memory on SQLite next to memory on PostgreSQL, in the same run on the same corpus:
//! hybrid search at 100k entries (p50 and p99 over mixed queries, rare to very
//! common words), a store with its duplicate check, and the time until a store on one
//! node is found by a search on another (the NOTIFY path; for SQLite, another process's
//! connection on the same file), idle and while two more nodes store without pause:
//! its p50 and p99 are recorded in bench-results/storage.json.

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_group};
use evo_host::memory::{Category, Source};

use evo_tests::shared::{backends, memory as open, zipf_corpus as corpus};

const QUERIES: [(&str, &str); 3] = [
    ("rare", "w4890x w4711x"),
    ("mid", "w0450x w0777x w1200x"),
    ("common", "project update"),
];

fn search(c: &mut Criterion) {
    let n = 100_000;
    let dir = tempfile::tempdir().expect("tempdir");
    let texts = corpus(n);
    let items: Vec<(&str, Category)> = texts.iter().map(|t| (t.as_str(), Category::Fact)).collect();
    let mut group = c.benchmark_group("storage_memory_search_100k");
    group.sample_size(30);
    for (name, storage) in backends(dir.path()) {
        let memory = open(&storage, dir.path());
        let started = Instant::now();
        for chunk in items.chunks(10_000) {
            memory.import(chunk, Source::User).expect("imports");
        }
        println!("{name}: imported {n} entries in {:?}", started.elapsed());
        // A second manager opening the store, in this process, on its own connection (as
        // a second node would): its index loads from the database.
        let started = Instant::now();
        let other = open(&storage, dir.path());
        println!(
            "{name}: a second manager loaded the index of {n} in {:?}",
            started.elapsed()
        );
        for (label, query) in QUERIES {
            assert_eq!(
                other.search(query, 10).expect("searches").len(),
                10,
                "{name} {label}"
            );
            group.bench_with_input(BenchmarkId::new(name, label), query, |b, q| {
                b.iter(|| black_box(memory.search(q, 10).expect("searches")));
            });
        }
        let times = (0..300)
            .map(|i| {
                let started = Instant::now();
                black_box(memory.search(QUERIES[i % 3].1, 10).expect("searches"));
                started.elapsed()
            })
            .collect();
        let (p50, p99) = evo_tests::percentiles(times);
        println!("{name}: memory search at 100k, mixed queries: p50 {p50:?}, p99 {p99:?}");
    }
    group.finish();
}

fn store(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let texts = corpus(10_000);
    let items: Vec<(&str, Category)> = texts.iter().map(|t| (t.as_str(), Category::Fact)).collect();
    let mut group = c.benchmark_group("storage_memory_10k");
    for (name, storage) in backends(dir.path()) {
        let memory = open(&storage, dir.path());
        memory.import(&items, Source::User).expect("imports");
        let mut i = 0_u64;
        group.bench_function(BenchmarkId::new("store with duplicate check", name), |b| {
            b.iter(|| {
                i += 1;
                black_box(
                    memory
                        .store(&format!("bench fact number {i} about w0001x"), None)
                        .expect("stores"),
                )
            });
        });
        // From a store through one manager to a search through another (same process,
        // own connections) that finds it: on an otherwise idle store, then (PostgreSQL,
        // the store several nodes share) while two more nodes store as fast as they can,
        // each write another notification every node hears and another commit in the
        // log the searching node follows. SQLite is one machine's store: its writers
        // take turns on one file, and three writing without pause starve one past the
        // busy timeout (an error marked transient, saying to try again).
        let other = open(&storage, dir.path());
        let mut runs = vec![("idle", visibility(&memory, &other, "w4999x"))];
        if name == "postgres" {
            runs.push((
                "loaded",
                under_load(&storage, dir.path(), &memory, &other, name),
            ));
        }
        for (load, times) in runs {
            let (p50, p99) = evo_tests::percentiles(times);
            println!(
                "{name}: store on one node until found on another, {load}: p50 {p50:?}, p99 {p99:?}"
            );
            let rec = recorder();
            rec.value(
                &format!("{name}-visible-{load}-p50"),
                p50.as_nanos() as f64,
                "ns",
            );
            rec.value(
                &format!("{name}-visible-{load}-p99"),
                p99.as_nanos() as f64,
                "ns",
            );
        }
    }
    group.finish();
}

/// [`visibility`] while two more nodes on `storage` store without pause.
fn under_load(
    storage: &evo_host::storage::Storage,
    dir: &std::path::Path,
    from: &evo_host::memory::MemoryManager,
    to: &evo_host::memory::MemoryManager,
    name: &str,
) -> Vec<Duration> {
    let stop = AtomicBool::new(false);
    let writes = AtomicU64::new(0);
    std::thread::scope(|scope| {
        for node in 0..2 {
            let (stop, writes) = (&stop, &writes);
            scope.spawn(move || {
                let writer = open(storage, dir);
                let mut i = 0_u64;
                while !stop.load(Ordering::Relaxed) {
                    i += 1;
                    writer
                        .store(&format!("load {node} fact {i} about w00{node}1x"), None)
                        .expect("stores");
                    writes.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        let started = Instant::now();
        let times = visibility(from, to, "w4998x");
        stop.store(true, Ordering::Relaxed);
        let rate = writes.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64();
        println!("{name}: {rate:.0} stores/s from two other nodes meanwhile");
        recorder().value(&format!("{name}-background-stores-per-second"), rate, "/s");
        times
    })
}

/// How long each of 100 stores through `from` takes to be found by a search through
/// `to`, searching every 100 µs until it is; each store is the only text with its word
/// (`word` and a number).
fn visibility(
    from: &evo_host::memory::MemoryManager,
    to: &evo_host::memory::MemoryManager,
    word: &str,
) -> Vec<Duration> {
    (0..100)
        .map(|k| {
            let text = format!("seen elsewhere {k} {word}{k}");
            let started = Instant::now();
            from.store(&text, None).expect("stores");
            let query = format!("{word}{k}");
            while to
                .search(&query, 1)
                .expect("searches")
                .first()
                .is_none_or(|h| h.text != text)
            {
                std::thread::sleep(Duration::from_micros(100));
            }
            started.elapsed()
        })
        .collect()
}

/// Where this bench's printed figures are recorded: `bench-results/storage.json`.
fn recorder() -> evo_tests::figures::Recorder {
    evo_tests::figures::Recorder::new("storage", "./scripts/bench storage", PATHS)
}

criterion_group!(benches, search, store);
/// The code this bench measures: a change under these paths makes its record stale.
const PATHS: &[&str] = &[
    "host/src/storage",
    "host/src/memory",
    "tests/benches/storage.rs",
];

evo_tests::recorded_main!("storage", PATHS, benches);
