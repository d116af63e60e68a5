//! `cargo bench -p evo-tests --bench languages`
//!
//! The same small skill — `text-stats`: count lines, words and characters and list the
//! most common words — written in Rust, JavaScript (ComponentizeJS) and Python
//! (componentize-py), each called on a fresh instance through Evo next to the raw
//! wasmtime floor for that component, and the same logic as a Node subprocess (what a
//! native script skill costs at the least). Budgets: JS ≤ 200 µs p50, Python ≤ 1.5 ms
//! p50.
//!
//! Then a Node script skill (docs/authoring/examples/word-count) called through the
//! public `Host` twice: installed as it comes (componentized at install) and installed
//! with `--native` (a confined Node process per call). Budget: the component ≥ 100×
//! faster. Needs `EVO_COMPONENTIZE_JS` (`source scripts/componentize-js.sh`) and the
//! `evo` binary next to the bench (`cargo build --release -p evo-cli`).

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use criterion::{Criterion, criterion_group};
use evo_host::Host;
use evo_host::engine::wasm::{EngineConfig, WasmEngine};
use evo_host::grants::Policy;
use evo_host::packages::InstallOptions;
use evo_host::skill::kernel::SkillContext;
use evo_tests::skills;
use serde_json::{Value, json};

#[path = "common/mod.rs"]
mod common;
use common::{Floor, runtime};

const TEXT: &str = "The quick brown fox jumps over the lazy dog.\nThe dog sleeps; the fox runs on.\nA fox is quick, a dog is lazy, and the day is long.";

/// The same logic as the skills, as a script a Node process runs on stdin.
const NODE_SCRIPT: &str = r#"
let data = '';
process.stdin.on('data', (c) => (data += c));
process.stdin.on('end', () => {
  const { text, top = 3 } = JSON.parse(data);
  const words = text.toLowerCase().match(/[a-z0-9'\u00c0-\uffff]+/g) ?? [];
  const counts = new Map();
  for (const w of words) counts.set(w, (counts.get(w) ?? 0) + 1);
  const common = [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, top)
    .map(([word, count]) => ({ word, count }));
  process.stdout.write(JSON.stringify({ lines: text.split('\n').length, words: words.length,
    characters: [...text].length, top: common }));
});
"#;

fn expected() -> Value {
    json!({
        "lines": 3,
        "words": 29,
        "characters": 129,
        "top": [
            { "word": "the", "count": 5 },
            { "word": "dog", "count": 3 },
            { "word": "fox", "count": 3 },
        ],
    })
}

/// Each call instantiates, as the floor beside it does; `parked_instances` more makes
/// each next instance ahead, off the call's path.
fn config(parked_instances: u32) -> EngineConfig {
    EngineConfig {
        max_concurrent_calls: 4,
        // Compiling the JS and Python components takes seconds: keep them across runs.
        cache_dir: Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench-cache")),
        parked_instances,
        ..EngineConfig::default()
    }
}

fn languages(c: &mut Criterion) {
    let rt = runtime();
    let input = json!({ "text": TEXT }).to_string();
    let engine = WasmEngine::new(config(0)).unwrap();
    let parking = WasmEngine::new(config(1)).unwrap();
    // Instances made ahead are made on a worker of a runtime with threads, as on `evo
    // serve`'s HTTP runtime; on this bench's one thread they would be made between the
    // calls the loop times.
    let threads = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let run = SkillContext::detached();
    let mut group = c.benchmark_group("languages");
    group.warm_up_time(Duration::from_secs(1));
    for (lang, path) in [
        ("rust", skills::TEXT_STATS),
        ("js", skills::JS_TEXT_STATS),
        ("python", skills::PY_TEXT_STATS),
    ] {
        let bytes = std::fs::read(path).unwrap();
        let floor = Floor::new(&config(0), &bytes, &input);
        let skill = rt
            .block_on(engine.load_file(Path::new(path), &Policy::default()))
            .unwrap();
        // Both answer, and answer right, before anything is timed.
        let floor_output: Value = serde_json::from_str(&rt.block_on(floor.call())).unwrap();
        assert_eq!(floor_output, expected(), "{lang} floor");
        let output = rt.block_on(skill.call(&input, &run)).unwrap().output;
        assert_eq!(output, expected(), "{lang} through evo");
        let parked = threads
            .block_on(parking.load_file(Path::new(path), &Policy::default()))
            .unwrap();
        for _ in 0..3 {
            let output = threads.block_on(parked.call(&input, &run)).unwrap().output;
            assert_eq!(output, expected(), "{lang} through evo, made ahead");
        }

        group.bench_function(format!("{lang}: floor, wasmtime instantiate only"), |b| {
            b.iter(|| rt.block_on(floor.instantiate()))
        });
        group.bench_function(format!("{lang}: floor, wasmtime instantiate + call"), |b| {
            b.iter(|| rt.block_on(floor.call()))
        });
        group.bench_function(format!("{lang}: evo, WasmSkill::call"), |b| {
            b.iter(|| rt.block_on(skill.call(&input, &run)).unwrap())
        });
        // The same calls with each next instance made ahead (`[engine]
        // parked_instances`), as `evo serve` makes them: the instantiation moves off
        // the call's path onto another worker, so this is the latency a caller sees,
        // not less work.
        group.bench_function(
            format!("{lang}: evo, WasmSkill::call, its instance made ahead"),
            |b| b.iter(|| threads.block_on(parked.call(&input, &run)).unwrap()),
        );
        // What reusing an instance could save at most: the same
        // instance called again, its answer still right on the third call.
        let mut warm = rt.block_on(floor.warm());
        for _ in 0..3 {
            let output: Value = serde_json::from_str(&rt.block_on(warm.call())).unwrap();
            assert_eq!(output, expected(), "{lang} warm floor");
        }
        group.bench_function(
            format!("{lang}: floor, a further call on one instance"),
            |b| b.iter(|| rt.block_on(warm.call())),
        );
    }

    // What the language runtime costs on its own: a call that does nothing.
    for (lang, path) in [("js", skills::JS_LIMITS), ("python", skills::PY_LIMITS)] {
        let input = r#"{"mode":"ok"}"#;
        let floor = Floor::new(&config(0), &std::fs::read(path).unwrap(), input);
        assert_eq!(
            rt.block_on(floor.call()),
            r#"{"mode": "ok"}"#.replace(": ", if lang == "js" { ":" } else { ": " })
        );
        group.bench_function(format!("{lang}: floor, a call that does nothing"), |b| {
            b.iter(|| rt.block_on(floor.call()))
        });
    }

    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("text-stats.mjs");
    std::fs::write(&script, NODE_SCRIPT).unwrap();
    let node = || {
        // Spawned as the native bench spawns its floor: PATH only.
        let mut child = Command::new("node")
            .arg(&script)
            .env_clear()
            .envs(evo_tests::peer_env())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("node runs");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        out.stdout
    };
    let output: Value = serde_json::from_slice(&node()).unwrap();
    assert_eq!(output, expected(), "node");
    group.sample_size(20);
    group.bench_function("node subprocess (same logic, bare node)", |b| b.iter(node));
    group.finish();
}

/// A `Host` on a fresh data directory in `root` with the word-count example installed,
/// as a component or (`native`) as its script, and the `runs as` its record gives.
fn word_count_host(rt: &tokio::runtime::Runtime, root: &Path, native: bool) -> (Host, String) {
    let evo = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.join("evo")))
        .filter(|path| path.is_file())
        .expect("the evo binary is built next to this bench: cargo build --release -p evo-cli");
    let example =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/authoring/examples/word-count");
    rt.block_on(async {
        let host = Host::builder()
            .data_dir(root.join(if native { "native" } else { "wasm" }))
            .native_launcher(evo)
            .build()
            .await
            .expect("host");
        let options = InstallOptions {
            native,
            ..InstallOptions::default()
        };
        let outcome = host.install(&example, options).await.expect("installs");
        (host, outcome.skill.expect("an install record").runs_as)
    })
}

fn node_script(c: &mut Criterion) {
    let rt = runtime();
    let root = tempfile::tempdir().unwrap();
    let input = json!({ "text": TEXT });
    let answer = json!({ "lines": 3, "words": 29, "top": "the" });
    let mut group = c.benchmark_group("node_script");
    group.warm_up_time(Duration::from_secs(1));
    for (label, native) in [
        ("component built at install, Host::call", false),
        ("script in the native sandbox (--native), Host::call", true),
    ] {
        let (host, runs_as) = word_count_host(&rt, root.path(), native);
        assert_eq!(runs_as, if native { "native" } else { "wasm" });
        let output = rt.block_on(host.call("word-count", input.clone())).unwrap();
        assert_eq!(output, answer, "{label}");
        if native {
            group.sample_size(20);
        }
        group.bench_function(label, |b| {
            b.iter(|| rt.block_on(host.call("word-count", input.clone())).unwrap())
        });
    }
    group.finish();
}

criterion_group!(benches, languages, node_script);
/// The code this bench measures: a change under these paths makes its record stale.
const PATHS: &[&str] = &[
    "host/src/engine",
    "host/src/skill",
    "skills-wasm",
    "guest-sdk",
    "scripts/componentize-js.sh",
    "scripts/componentize-py.sh",
    "tests/benches/languages.rs",
    "tests/benches/common",
];

evo_tests::recorded_main!("languages", PATHS, benches);
