//! Fixtures for the storage tests and benches: fresh PostgreSQL databases on the
//! throwaway cluster `scripts/postgres.sh` starts, and the memory benches' corpus.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use evo_host::memory::{HashEmbedder, MemoryConfig, MemoryManager};
use evo_host::storage::{Pg, Storage};

/// The URL of a fresh, empty database on the cluster `EVO_TEST_POSTGRES` names.
pub fn postgres_url() -> String {
    let admin = std::env::var("EVO_TEST_POSTGRES").expect(
        "EVO_TEST_POSTGRES is not set: this needs PostgreSQL; run ./scripts/test (or ./scripts/nodes --bench), or `source scripts/postgres.sh` first",
    );
    evo_host::storage::pg::scratch_database(&admin).expect("a scratch database")
}

/// SQLite in `dir`, then PostgreSQL on a fresh database, each with its name: the
/// backends the storage tests and benches run on.
pub fn backends(dir: &Path) -> [(&'static str, Storage); 2] {
    [
        ("sqlite", Storage::Local(dir.to_owned())),
        (
            "postgres",
            Storage::Shared(Pg::connect(&postgres_url(), None).expect("connects")),
        ),
    ]
}

/// A memory on `storage` with the built-in embedder. Each call opens another, with its
/// own connection, listener and vector index, as a second node (or process) would.
pub fn memory(storage: &Storage, dir: &Path) -> MemoryManager {
    MemoryManager::open_in(
        storage,
        dir,
        Arc::new(HashEmbedder),
        MemoryConfig::default(),
    )
    .expect("memory opens")
}

/// A component answering `{"n": answer}`, written as `dir/NAME.wasm` (`answer` takes
/// one or two digits).
pub fn answer_component(dir: &Path, name: &str, answer: u8) -> PathBuf {
    assert!(answer < 100);
    let manifest = serde_json::json!({ "name": name, "description": format!("answers {answer}") });
    // Ok(skill-output { output: the text at 1024, no memory writes, no steps }).
    let text = format!("{{\"n\":{answer}}}");
    let mut word = [b' '; 8];
    word[..text.len()].copy_from_slice(text.as_bytes());
    let body = format!(
        "(i32.store8 (i32.const 0) (i32.const 0))
         (i64.store (i32.const 1024) (i64.const {}))
         (i32.store (i32.const 4) (i32.const 1024))
         (i32.store (i32.const 8) (i32.const 8))
         (i64.store (i32.const 12) (i64.const 0))
         (i64.store (i32.const 20) (i64.const 0))
         (i32.const 0)",
        i64::from_le_bytes(word)
    );
    let path = dir.join(format!("{name}.wasm"));
    std::fs::write(&path, crate::wat_skill(&manifest.to_string(), &body)).expect("writes");
    path
}

/// The memory benches' corpus: `n` sentences of words drawn with a Zipf-like skew from
/// a 5,000-word vocabulary, and two words ("project", "update") in 40 % of them, the
/// case that makes plain bm25 slow. The same every run.
pub fn zipf_corpus(n: usize) -> Vec<String> {
    let vocabulary: Vec<String> = (0..5000).map(|i| format!("w{i:04}x")).collect();
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    (0..n)
        .map(|i| {
            let mut words = Vec::new();
            if i % 5 < 2 {
                words.push("project".to_owned());
                words.push("update".to_owned());
            }
            for _ in 0..10 {
                // Squaring a uniform draw skews towards low ranks, like word frequencies.
                let u = (next() % 10_000) as f64 / 10_000.0;
                words.push(vocabulary[(u * u * 5000.0) as usize].clone());
            }
            format!("entry {i}: {}", words.join(" "))
        })
        .collect()
}

/// How long a change may take to reach another node before a test gives up: a guard
/// against a test hanging forever, never a speed check (how soon is measured by the
/// storage bench and `./scripts/nodes --bench`: ~4 ms at the median, BENCHMARKS.md).
pub const HANG_GUARD: Duration = Duration::from_secs(20);

/// Polls `probe` until it gives `Some` and returns that; fails the test, naming
/// `what`, if it has not after [`HANG_GUARD`].
pub fn eventually<T>(what: &str, mut probe: impl FnMut() -> Option<T>) -> T {
    let start = std::time::Instant::now();
    loop {
        if let Some(found) = probe() {
            return found;
        }
        assert!(
            start.elapsed() < HANG_GUARD,
            "{what}: not after {HANG_GUARD:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}
