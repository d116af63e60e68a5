//! `cargo bench -p evo-tests --bench plain_call`
//!
//! A plain component's call — JSON in, WIT values across, a fresh instance, WIT values
//! back, JSON out — next to what it is measured against in the same run:
//!
//! - the floor: a bare wasmtime engine of Evo's configuration calling the same function
//!   of the same component through a `TypedFunc` (types known at compile time, no JSON),
//!   from an `InstancePre`, a fresh instance per call. Budget: ≤ 1.3× the floor,
//!   conversion included.
//! - the same work as an Evo-SDK component: `plain-kinds`'s `calculate` and the
//!   `calculate` skill share one evaluator (crate `evo-expr`) and one input.
//!
//! And what the conversion costs per KB: `echo-string`, `echo-bytes` (base64) and
//! `echo-list` (records) of 1 KiB and 64 KiB, Evo against the typed floor; and bulk data
//! (`echo-string` and `echo-bytes`, which take the direct path) of 1 MiB and 10 MiB in
//! and out.

use std::hint::black_box;
use std::path::Path;

use criterion::{Criterion, Throughput, criterion_group};
use evo_host::engine::wasm::{EngineConfig, PlainComponent, WasmEngine, WasmFile};
use evo_host::grants::Policy;
use evo_host::skill::kernel::SkillContext;
use evo_tests::skills;
use serde_json::{Value, json};

#[path = "common/mod.rs"]
mod common;
use common::{TypedFloor, runtime};

const EXPRESSION: &str = "sqrt(144) + 10";

/// Room for the 10 MiB calls: memory for the guest's copies, and the output's base64.
const MEMORY_MIB: u64 = 256;
const OUTPUT_BYTES: u64 = 64 << 20;

fn config() -> EngineConfig {
    let mut config = EngineConfig {
        max_concurrent_calls: 16,
        // Each call instantiates, as the raw wasmtime floor beside it does.
        parked_instances: 0,
        ..EngineConfig::default()
    };
    config.limits.max_memory_mib = MEMORY_MIB;
    config.limits.max_output_bytes = OUTPUT_BYTES;
    config
}

fn plain(rt: &tokio::runtime::Runtime) -> PlainComponent {
    let engine = WasmEngine::new(config()).unwrap();
    // The manifest beside it asks for that room, as an operator's `skill.json` would.
    let sidecar = || {
        Ok(Some(evo_host::skill::manifest::RawMeta {
            limits: Some(json!({ "memoryMib": MEMORY_MIB, "outputBytes": OUTPUT_BYTES })),
            ..Default::default()
        }))
    };
    let loaded = rt
        .block_on(engine.load_any_file(Path::new(skills::PLAIN_KINDS), sidecar, &Policy::default()))
        .unwrap();
    match loaded {
        WasmFile::Component(component) => component,
        WasmFile::Skill(_) => panic!("plain-kinds is a plain component"),
    }
}

fn same_work(c: &mut Criterion) {
    let rt = runtime();
    let component = plain(&rt);
    let bytes = std::fs::read(skills::PLAIN_KINDS).unwrap();
    let floor = TypedFloor::new(&config(), &bytes, None, "calculate");
    let engine = WasmEngine::new(config()).unwrap();
    let sdk = rt
        .block_on(engine.load_file(Path::new(skills::CALCULATE), &Policy::default()))
        .unwrap();
    let run = SkillContext::detached();
    let input = json!({ "expression": EXPRESSION });
    let sdk_input = input.to_string();
    let typed = || async {
        let (result,): (Result<f64, String>,) =
            floor.call((black_box(EXPRESSION.to_owned()),)).await;
        result
    };
    assert_eq!(rt.block_on(typed()), Ok(22.0));
    assert_eq!(
        rt.block_on(component.call("plain-kinds__calculate", &input, &run))
            .unwrap(),
        json!(22.0)
    );
    assert_eq!(
        rt.block_on(sdk.call(&sdk_input, &run)).unwrap().output["result"],
        22
    );
    let mut group = c.benchmark_group("plain_call");
    group.bench_function(
        "floor: wasmtime TypedFunc, fresh instance (calculate)",
        |b| b.iter(|| rt.block_on(typed())),
    );
    group.bench_function("evo: plain component, JSON in and out (calculate)", |b| {
        b.iter(|| {
            rt.block_on(component.call("plain-kinds__calculate", black_box(&input), &run))
                .unwrap()
        })
    });
    group.bench_function("peer: Evo-SDK component, same work (calculate)", |b| {
        b.iter(|| rt.block_on(sdk.call(black_box(&sdk_input), &run)).unwrap())
    });
    group.finish();
}

/// Point records of about `bytes` bytes of JSON in all.
fn points(bytes: usize) -> (Value, Vec<(i32, i32, Option<String>)>) {
    let n = bytes / 32;
    let typed: Vec<(i32, i32, Option<String>)> = (0..n)
        .map(|i| (i as i32, -(i as i32), Some("p".to_owned())))
        .collect();
    let json = typed
        .iter()
        .map(|(x, y, label)| json!({ "x": x, "y": y, "label": label }))
        .collect();
    (json, typed)
}

fn conversion(c: &mut Criterion) {
    use wasmtime::component::{ComponentType, Lift, Lower};

    /// `fixture:plain/kinds`'s `point`, for the typed floor.
    #[derive(ComponentType, Lift, Lower, Clone, Debug, PartialEq)]
    #[component(record)]
    struct Point {
        x: i32,
        y: i32,
        label: Option<String>,
    }

    let rt = runtime();
    let component = plain(&rt);
    let bytes = std::fs::read(skills::PLAIN_KINDS).unwrap();
    let run = SkillContext::detached();
    let mut group = c.benchmark_group("plain_conversion");
    for size in [1 << 10, 64 << 10, 1 << 20, 10 << 20] {
        let kib = size >> 10;
        let bulk = size > 64 << 10;
        if bulk {
            group.sample_size(20);
        }
        group.throughput(Throughput::Bytes(size as u64));

        let text = "x".repeat(size);
        let floor = TypedFloor::new(
            &config(),
            &bytes,
            Some("fixture:plain/kinds@0.1.0"),
            "echo-string",
        );
        let input = json!({ "v": text });
        group.bench_function(format!("floor: echo-string {kib} KiB"), |b| {
            b.iter(|| rt.block_on(floor.call::<(String,), (String,)>((text.clone(),))))
        });
        group.bench_function(format!("evo: echo-string {kib} KiB"), |b| {
            b.iter(|| {
                rt.block_on(component.call("plain-kinds__kinds__echo-string", &input, &run))
                    .unwrap()
            })
        });

        let raw = vec![7u8; size * 3 / 4];
        let floor = TypedFloor::new(
            &config(),
            &bytes,
            Some("fixture:plain/kinds@0.1.0"),
            "echo-bytes",
        );
        let input = json!({ "v": base64_of(&raw) });
        group.bench_function(format!("floor: echo-bytes {kib} KiB"), |b| {
            b.iter(|| rt.block_on(floor.call::<(Vec<u8>,), (Vec<u8>,)>((raw.clone(),))))
        });
        group.bench_function(format!("evo: echo-bytes {kib} KiB (base64)"), |b| {
            b.iter(|| {
                rt.block_on(component.call("plain-kinds__kinds__echo-bytes", &input, &run))
                    .unwrap()
            })
        });

        if bulk {
            // Records are the value path's, not bulk data: measured at 1 and 64 KiB.
            continue;
        }
        let (json_points, typed) = points(size);
        let typed: Vec<Point> = typed
            .into_iter()
            .map(|(x, y, label)| Point { x, y, label })
            .collect();
        let floor = TypedFloor::new(
            &config(),
            &bytes,
            Some("fixture:plain/kinds@0.1.0"),
            "echo-list",
        );
        let input = json!({ "v": json_points });
        assert_eq!(
            rt.block_on(component.call("plain-kinds__kinds__echo-list", &input, &run))
                .unwrap(),
            input["v"]
        );
        group.bench_function(format!("floor: echo-list {kib} KiB"), |b| {
            b.iter(|| rt.block_on(floor.call::<(Vec<Point>,), (Vec<Point>,)>((typed.clone(),))))
        });
        group.bench_function(format!("evo: echo-list {kib} KiB (records)"), |b| {
            b.iter(|| {
                rt.block_on(component.call("plain-kinds__kinds__echo-list", &input, &run))
                    .unwrap()
            })
        });
    }
    group.finish();
}

fn base64_of(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

criterion_group!(benches, same_work, conversion);
/// The code this bench measures: a change under these paths makes its record stale.
const PATHS: &[&str] = &[
    "host/src/engine/wasm",
    "skills-wasm",
    "tests/benches/plain_call.rs",
];

evo_tests::recorded_main!("plain_call", PATHS, benches);
