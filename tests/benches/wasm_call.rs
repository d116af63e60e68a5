//! `cargo bench -p evo-tests --bench wasm_call`
//!
//! Evo's Wasm call path next to its floor, measured in the same run: a bare wasmtime
//! engine with the same configuration (pooling, epoch interruption) instantiating the
//! same component from an `InstancePre` and calling it — no Evo code. Budget: Evo's
//! fresh-instance call ≤ 1.3× the floor. The same for `calculate` as `evo skill build`
//! builds it (its manifest embedded, no schema generator). Also: compile vs cache-hit
//! load (a file loaded before: described from its record, its code loaded on the first
//! call; budget ≤ 1.5× `deserialize_file`), and calls on two threads.

use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group};
use evo_host::engine::wasm::{EngineConfig, LoadSource, WasmEngine, WasmSkill};
use evo_host::grants::Policy;
use evo_host::skill::kernel::SkillContext;
use evo_tests::skills;
use wasmtime::Engine;
use wasmtime::component::Component;

const INPUT: &str = r#"{"expression":"sqrt(144) + 10"}"#;

#[path = "common/mod.rs"]
mod common;
use common::{Floor, runtime};

fn config() -> EngineConfig {
    EngineConfig {
        max_concurrent_calls: 16,
        // Each call instantiates, as the raw wasmtime floor beside it does.
        parked_instances: 0,
        ..EngineConfig::default()
    }
}

fn evo_skill(rt: &tokio::runtime::Runtime, config: EngineConfig) -> WasmSkill {
    let engine = WasmEngine::new(config).unwrap();
    rt.block_on(engine.load_file(Path::new(skills::CALCULATE), &Policy::default()))
        .unwrap()
}

/// `skills-wasm/calculate` as `evo skill build` builds it, into `target/evo-built/`: with
/// the release profile of `evo new`'s template (`skills-wasm/.cargo/config.toml`).
fn calculate_built_by_evo() -> std::path::PathBuf {
    let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/evo-built");
    let out = target.join("calculate.wasm");
    let home = tempfile::tempdir().unwrap();
    let built = evo_tests::cli::command(
        home.path(),
        &["skill", "build", "skills-wasm/calculate", "--out"],
    )
    .arg(&out)
    .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
    .env("CARGO_TARGET_DIR", target.join("target"))
    .env_remove("CARGO_ENCODED_RUSTFLAGS")
    .env_remove("RUSTFLAGS")
    .output()
    .unwrap();
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    out
}

fn fresh_instance_call(c: &mut Criterion) {
    let rt = runtime();
    let lean = calculate_built_by_evo();
    let mut group = c.benchmark_group("wasm_call");
    for (label, path) in [
        ("", Path::new(skills::CALCULATE)),
        (" (evo skill build)", lean.as_path()),
    ] {
        let bytes = std::fs::read(path).unwrap();
        println!("calculate{label}: {} bytes", bytes.len());
        let floor = Floor::new(&config(), &bytes, INPUT);
        let engine = WasmEngine::new(config()).unwrap();
        let skill = rt
            .block_on(engine.load_file(path, &Policy::default()))
            .unwrap();
        let run = SkillContext::detached();
        assert_eq!(rt.block_on(floor.call()), r#"{"result":22}"#);
        assert_eq!(
            rt.block_on(skill.call(INPUT, &run)).unwrap().output["result"],
            22
        );
        group.bench_function(format!("floor: wasmtime instantiate + call{label}"), |b| {
            b.iter(|| rt.block_on(floor.call()))
        });
        group.bench_function(format!("evo: WasmSkill::call{label}"), |b| {
            b.iter(|| rt.block_on(skill.call(black_box(INPUT), &run)).unwrap())
        });
    }
    group.finish();
}

fn load(c: &mut Criterion) {
    let rt = runtime();
    let bytes = std::fs::read(skills::CALCULATE).unwrap();
    let cache = tempfile::tempdir().unwrap();
    let cached = WasmEngine::new(EngineConfig {
        cache_dir: Some(cache.path().to_owned()),
        ..config()
    })
    .unwrap();
    rt.block_on(cached.load_bytes("calculate.wasm", bytes.clone(), &Policy::default()))
        .unwrap();
    let uncached = WasmEngine::new(config()).unwrap();
    let artifact = std::fs::read_dir(cache.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "cwasm"))
        .unwrap();
    let engine = Engine::new(&config().wasmtime_config(false)).unwrap();
    let load = |engine: &WasmEngine| {
        rt.block_on(engine.load_bytes("calculate.wasm", bytes.clone(), &Policy::default()))
            .unwrap()
    };
    // Each row loads what it says: a compile, then a cache hit.
    let compiled = load(&uncached);
    assert_eq!(
        (compiled.meta().name.as_str(), compiled.load_source()),
        ("calculate", LoadSource::Compiled)
    );
    let hit = load(&cached);
    assert_eq!(
        (hit.meta().name.as_str(), hit.load_source()),
        ("calculate", LoadSource::Cache)
    );

    let mut group = c.benchmark_group("load");
    group.sample_size(10);
    group.bench_function("floor: Component::new (compile)", |b| {
        b.iter(|| Component::new(&engine, black_box(&bytes)).unwrap())
    });
    group.bench_function("evo: load, cold (compile)", |b| b.iter(|| load(&uncached)));
    group.sample_size(100);
    group.bench_function("floor: Component::deserialize_file", |b| {
        #[expect(
            unsafe_code,
            reason = "the artifact was written by Component::serialize above"
        )]
        // SAFETY: `artifact` is the serialized output of the same engine configuration.
        b.iter(|| unsafe { Component::deserialize_file(&engine, &artifact) }.unwrap())
    });
    let floor = Floor::new(&config(), &bytes, INPUT);
    group.bench_function("floor: deserialize_file + link (instantiate_pre)", |b| {
        #[expect(
            unsafe_code,
            reason = "the artifact was written by Component::serialize above"
        )]
        b.iter(|| {
            // SAFETY: `artifact` is the serialized output of the same engine
            // configuration.
            let component =
                unsafe { Component::deserialize_file(floor.engine(), &artifact) }.unwrap();
            floor.link(&component);
        })
    });
    group.bench_function("evo: load_bytes, cache hit", |b| b.iter(|| load(&cached)));
    // A file loaded before: described from its record; then its code, as its first call
    // loads it.
    let file = Path::new(skills::CALCULATE);
    let described = || {
        rt.block_on(cached.load_file(file, &Policy::default()))
            .unwrap()
    };
    described();
    assert_eq!(described().load_source(), LoadSource::Deferred);
    group.bench_function("evo: load_file, described from its record", |b| {
        b.iter(described)
    });
    group.bench_function("evo: load_file + its code from the cache", |b| {
        b.iter(|| {
            let skill = described();
            assert_eq!(rt.block_on(skill.prepare()).unwrap(), LoadSource::Cache);
            skill
        })
    });
    group.finish();
}

/// Calls per second with two threads, each on its own runtime, sharing one engine.
fn two_threads(c: &mut Criterion) {
    let rt = runtime();
    let bytes = Arc::new(std::fs::read(skills::CALCULATE).unwrap());
    let floor = Arc::new(Floor::new(&config(), &bytes, INPUT));
    let skill = evo_skill(&rt, config());
    // Checked before timing, and on every call in the timed loops: the answer, not only
    // the absence of an error.
    assert_eq!(rt.block_on(floor.call()), r#"{"result":22}"#);

    let mut group = c.benchmark_group("throughput_2_threads");
    group.throughput(Throughput::Elements(2));
    group.bench_function("floor: wasmtime", |b| {
        b.iter_custom(|iters| {
            parallel(iters, {
                let floor = floor.clone();
                move || {
                    let floor = floor.clone();
                    Box::new(move |rt: &tokio::runtime::Runtime| {
                        assert_eq!(rt.block_on(floor.call()), r#"{"result":22}"#);
                    })
                }
            })
        })
    });
    group.bench_function("evo: WasmSkill::call", |b| {
        b.iter_custom(|iters| {
            parallel(iters, {
                let skill = skill.clone();
                move || {
                    let skill = skill.clone();
                    let run = SkillContext::detached();
                    Box::new(move |rt: &tokio::runtime::Runtime| {
                        let out = rt.block_on(skill.call(INPUT, &run)).unwrap();
                        assert_eq!(out.output["result"], 22);
                    })
                }
            })
        })
    });
    group.finish();
}

type Work = Box<dyn FnMut(&tokio::runtime::Runtime) + Send>;

/// Runs `iters` calls on each of two threads and returns the elapsed time.
fn parallel(iters: u64, make: impl Fn() -> Work) -> Duration {
    let barrier = Arc::new(std::sync::Barrier::new(3));
    let threads: Vec<_> = (0..2)
        .map(|_| {
            let mut work = make();
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                let rt = runtime();
                barrier.wait();
                for _ in 0..iters {
                    work(&rt);
                }
            })
        })
        .collect();
    barrier.wait();
    let start = Instant::now();
    for thread in threads {
        thread.join().unwrap();
    }
    start.elapsed()
}

criterion_group!(benches, fresh_instance_call, load, two_threads);
/// The code this bench measures: a change under these paths makes its record stale.
const PATHS: &[&str] = &[
    "host/src/engine/wasm",
    "skills-wasm",
    "tests/benches/wasm_call.rs",
    "tests/benches/common",
];

evo_tests::recorded_main!("wasm_call", PATHS, benches);
