//! Instances made ahead of their calls. After a call answers, the engine makes the
//! component's next instance off the critical path and parks it; the next call takes
//! it instead of instantiating. "A parked instance is indistinguishable from a fresh
//! one (memory, globals, tables, WASI state)": every example skill answers the same
//! from one as from an instance made for the call, the probe finds the same bytes in
//! its whole linear memory, and nothing a call leaves behind reaches the next.

use std::path::Path;
use std::time::Duration;

use evo_host::engine::wasm::{EngineConfig, WasmEngine, WasmFile};
use evo_host::grants::Policy;
use evo_host::skill::kernel::SkillContext;
use evo_tests::skills;
use proptest::prelude::*;
use serde_json::{Value, json};

/// An engine that parks up to `parked_instances`, compiling through the tests' shared
/// cache (the JS and Python examples take seconds to compile).
fn engine(parked_instances: u32) -> WasmEngine {
    WasmEngine::new(EngineConfig {
        max_concurrent_calls: 4,
        parked_instances,
        cache_dir: Some(evo_tests::cli::shared_cache_dir()),
        ..EngineConfig::default()
    })
    .expect("the engine builds")
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime")
}

/// Waits until the engine has made (and parked, or not) every instance it set out to
/// make: a condition rather than a guess of time.
fn settle(rt: &tokio::runtime::Runtime, engine: &WasmEngine) {
    rt.block_on(async {
        while engine.parking_pending() > 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    });
}

async fn load(engine: &WasmEngine, path: &str) -> WasmFile {
    engine
        .load_any_file(Path::new(path), || Ok(None), &Policy::default())
        .await
        .unwrap_or_else(|e| panic!("{path} loads: {e}"))
}

/// What a call of `skill` on `input` answered, without what varies from call to call
/// whatever the instance (the time it took).
async fn answer(file: &WasmFile, skill: &str, input: &Value) -> Result<Value, String> {
    let ctx = SkillContext::detached();
    match file {
        WasmFile::Skill(s) => s
            .call(&input.to_string(), &ctx)
            .await
            .map(|outcome| {
                let mut value = serde_json::to_value(&outcome).expect("an outcome is JSON");
                value["duration"] = Value::Null;
                for step in value["intermediateSteps"]
                    .as_array_mut()
                    .into_iter()
                    .flatten()
                {
                    step["duration"] = Value::Null;
                }
                value
            })
            .map_err(|e| e.to_string()),
        WasmFile::Component(c) => c.call(skill, input, &ctx).await.map_err(|e| e.to_string()),
    }
}

/// Every skill of the file with an input to call it on: its manifest's first example,
/// or else one its input schema accepts.
fn calls(file: &WasmFile) -> Vec<(String, Value)> {
    file.skills()
        .map(|meta| {
            let input = meta
                .examples
                .first()
                .map_or_else(|| sample(&meta.input), |example| example.input.clone());
            (meta.name.clone(), input)
        })
        .collect()
}

/// A value `schema` accepts, of the schemas a plain component's functions have: the
/// first of each choice, every required property, the smallest number in range.
fn sample(schema: &Value) -> Value {
    if let Some(first) = ["oneOf", "anyOf"]
        .iter()
        .find_map(|choice| schema[choice].get(0))
    {
        return sample(first);
    }
    if let Some(first) = schema["enum"].get(0) {
        return first.clone();
    }
    match schema["type"].as_str() {
        Some("object") => {
            let mut object = serde_json::Map::new();
            for name in schema["required"].as_array().into_iter().flatten() {
                let name = name.as_str().unwrap_or_default();
                object.insert(name.to_owned(), sample(&schema["properties"][name]));
            }
            Value::Object(object)
        }
        Some("array") => match &schema["items"] {
            Value::Array(items) => Value::Array(items.iter().map(sample).collect()),
            _ => json!([]),
        },
        Some("string") => json!("a"),
        Some("integer") => json!(1),
        Some("number") => json!(1.5),
        Some("boolean") => json!(true),
        Some("null") => Value::Null,
        _ => json!({}),
    }
}

/// The example skills of `skills-wasm/`, Rust, JS and Python, Evo skills and plain
/// components.
const EXAMPLES: [&str; 10] = [
    skills::CALCULATE,
    skills::TEXT_STATS,
    skills::NOTES,
    skills::FILE_HEAD,
    skills::FETCH,
    skills::FIXTURE_PROBE,
    skills::PLAIN_KINDS,
    skills::PLAIN_IO,
    skills::JS_TEXT_STATS,
    skills::PY_TEXT_STATS,
];

#[test]
fn every_example_skill_answers_the_same_from_a_parked_instance_as_from_a_fresh_one() {
    let rt = runtime();
    let (parking, fresh) = (engine(8), engine(0));
    let mut not_parked = Vec::new();
    for path in EXAMPLES {
        let (file, control) =
            rt.block_on(async { (load(&parking, path).await, load(&fresh, path).await) });
        for (skill, input) in calls(&file) {
            // The first calls instantiate; from the second on, once a call has answered,
            // the next instance is made and parked.
            let first = rt.block_on(answer(&file, &skill, &input));
            let second = rt.block_on(answer(&file, &skill, &input));
            settle(&rt, &parking);
            if parking.parked_instances() == 0 {
                not_parked.push(skill.clone());
            }
            let from_parked = rt.block_on(answer(&file, &skill, &input));
            settle(&rt, &parking);
            let from_fresh = rt.block_on(answer(&control, &skill, &input));
            assert_eq!(from_parked, from_fresh, "{skill} on {input}");
            assert_eq!(first, from_fresh, "{skill} on {input}");
            assert_eq!(second, from_fresh, "{skill} on {input}");
        }
        drop(file);
        assert_eq!(
            parking.parked_instances(),
            0,
            "{path}: dropping a component drops its parked instance"
        );
        assert_eq!(parking.live_instances(), 0);
    }
    assert_eq!(
        fresh.parked_instances(),
        0,
        "parked_instances = 0 parks nothing"
    );
    // Every example initializes without asking the host anything, so each was parked.
    assert_eq!(not_parked, Vec::<String>::new());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Whatever an earlier call did to its instance (text left in a static, output
    /// written, steps recorded, a failure), the parked instance the next call takes
    /// holds, byte for byte, what a fresh instance holds.
    #[test]
    fn a_parked_instance_holds_what_a_fresh_one_holds_whatever_the_call_before_did(
        leave in "[a-z ]{1,40}",
        stdout_bytes in 0usize..4_096,
        steps in 0u32..4,
        error_bytes in prop_oneof![Just(0usize), 1usize..64],
    ) {
        let rt = runtime();
        let (parking, fresh) = (engine(8), engine(0));
        let (probe, control) = rt.block_on(async {
            (load(&parking, skills::FIXTURE_PROBE).await, load(&fresh, skills::FIXTURE_PROBE).await)
        });
        let before = json!({
            "leave": leave,
            "stdout_bytes": stdout_bytes,
            "steps": steps,
            "step_bytes": 16,
            "error_bytes": error_bytes,
        });
        for _ in 0..2 {
            let _ = rt.block_on(answer(&probe, "fixture-probe", &before));
        }
        settle(&rt, &parking);
        prop_assert_eq!(parking.parked_instances(), 1);
        // On this multi-thread runtime the making gave the last call's store back to
        // the pool: none is left once no making is pending.
        prop_assert_eq!(parking.live_instances(), 0);
        let look = json!({ "fingerprint": true });
        let parked = rt.block_on(answer(&probe, "fixture-probe", &look)).expect("the probe answers");
        let fresh = rt.block_on(answer(&control, "fixture-probe", &look)).expect("the probe answers");
        prop_assert!(parked["output"]["memory"].is_string());
        prop_assert_eq!(&parked["output"]["memory"], &fresh["output"]["memory"]);
        prop_assert_eq!(&parked["output"]["left"], &Value::Null);
        prop_assert_eq!(parked, fresh);
    }
}

#[test]
fn the_probe_fingerprint_tells_an_instance_that_ran_from_one_that_did_not() {
    // The fingerprint above would prove nothing if it missed bytes: the same look in
    // two fresh instances matches, and a look whose input differs (its bytes are in
    // memory when the look is taken) does not.
    let rt = runtime();
    let fresh = engine(0);
    let probe = rt.block_on(load(&fresh, skills::FIXTURE_PROBE));
    let look = |input: Value| {
        rt.block_on(answer(&probe, "fixture-probe", &input))
            .expect("the probe answers")["output"]["memory"]
            .clone()
    };
    let a = look(json!({ "fingerprint": true }));
    let b = look(json!({ "fingerprint": true }));
    assert_eq!(a, b, "two fresh instances hold the same bytes");
    assert!(a.as_str().is_some_and(|a| a.contains(" pages, ")), "{a}");
    let other = look(json!({ "fingerprint": true, "leave": "x".repeat(40) }));
    assert_ne!(a, other, "a different input is found in memory");
}

#[test]
fn parking_starts_at_the_second_call_holds_at_most_its_places_and_goes_with_its_component() {
    let rt = runtime();
    let parking = engine(1);
    let first = rt.block_on(load(&parking, skills::CALCULATE));
    let input = json!({ "expression": "1 + 1" });
    let calculate = || {
        rt.block_on(answer(&first, "calculate", &input))
            .expect("calculate answers")["output"]
            .clone()
    };
    assert_eq!(calculate(), json!({ "result": 2 }));
    settle(&rt, &parking);
    assert_eq!(
        parking.parked_instances(),
        0,
        "a one-shot call parks nothing"
    );
    assert_eq!(calculate(), json!({ "result": 2 }));
    settle(&rt, &parking);
    assert_eq!(parking.parked_instances(), 1);
    // One place: parking another component's instance evicts the first's.
    let second = rt.block_on(load(&parking, skills::TEXT_STATS));
    for _ in 0..2 {
        rt.block_on(answer(&second, "text-stats", &json!({ "text": "a b" })))
            .expect("text-stats answers");
    }
    settle(&rt, &parking);
    assert_eq!(
        parking.parked_instances(),
        1,
        "at most parked_instances are parked"
    );
    // The evicted one answers from an instance of its own, and parks again.
    assert_eq!(calculate(), json!({ "result": 2 }));
    settle(&rt, &parking);
    assert_eq!(parking.parked_instances(), 1);
    drop((first, second));
    assert_eq!(
        parking.parked_instances(),
        0,
        "a component dropped takes its instance"
    );
    assert_eq!(parking.live_instances(), 0);
}

/// A plain component whose core module's start function sets a global: with `reach`,
/// to the monotonic clock's `now` (asking the host while it is made), else to 7.
fn initializing_component(reach: bool) -> Vec<u8> {
    let (import, init, with) = if reach {
        (
            r#"(import "wasi:clocks/monotonic-clock@0.2.0" (instance $clock
                 (export "now" (func (result u64)))))
               (core func $now (canon lower (func $clock "now")))
               (core instance $host (export "now" (func $now)))"#,
            r#"(import "host" "now" (func $now (result i64)))
               (func $init (global.set $t (call $now)))"#,
            r#"(with "host" (instance $host))"#,
        )
    } else {
        ("", r#"(func $init (global.set $t (i64.const 7)))"#, "")
    };
    let text = format!(
        r#"(component
             {import}
             (core module $m
               {init}
               (global $t (mut i64) (i64.const 0))
               (start $init)
               (func (export "answer") (result i32) i32.const 42))
             (core instance $i (instantiate $m {with}))
             (func (export "answer") (result s32) (canon lift (core func $i "answer"))))"#
    );
    wat::parse_str(text).expect("the component is valid")
}

#[test]
fn a_component_whose_making_asks_the_host_anything_is_never_parked() {
    let rt = runtime();
    let dir = tempfile::tempdir().expect("a temporary directory");
    for (reach, parked) in [(true, 0), (false, 1)] {
        let engine = engine(8);
        let path = dir.path().join(format!("init-{reach}.wasm"));
        std::fs::write(&path, initializing_component(reach)).expect("the component is written");
        let file = rt.block_on(load(&engine, path.to_str().expect("a UTF-8 path")));
        let skill = calls(&file).remove(0).0;
        for _ in 0..3 {
            assert_eq!(
                rt.block_on(answer(&file, &skill, &json!({}))),
                Ok(json!(42)),
                "{skill}"
            );
            settle(&rt, &engine);
        }
        assert_eq!(
            engine.parked_instances(),
            parked,
            "a start function that reads the clock {} parked",
            if reach {
                "is never"
            } else {
                "that asks nothing is"
            }
        );
    }
}

#[test]
fn through_evo_serve_each_call_finds_a_fresh_instance_whether_made_ahead_or_not() {
    use std::io::{BufReader, Write as _};

    use super::serve_stdio::{answer as reply, initialize, line};

    // The path users take: `evo serve` over stdio, its calls spaced out by the client's
    // round trips, so from the third call on each takes an instance made ahead. Every
    // call leaves a secret in the instance's memory and looks at all of it first: none
    // finds what an earlier call left, and each finds the bytes the first found.
    let root = tempfile::tempdir().expect("a temporary directory");
    let skills = root.path().join("skills");
    std::fs::create_dir_all(skills.join("probe")).expect("a skill directory");
    std::fs::copy(skills::FIXTURE_PROBE, skills.join("probe/skill.wasm")).expect("copied");
    let mut child = evo_tests::cli::command(&root.path().join("home"), &["serve", "--skills-dir"])
        .arg(&skills)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("evo serve starts");
    let mut to_server = child.stdin.take().expect("its input");
    let mut from_server = BufReader::new(child.stdout.take().expect("its output"));
    to_server.write_all(&initialize()).expect("written");
    reply(&mut from_server, 1);
    let mut looks = Vec::new();
    for id in 2..10 {
        let call = json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "fixture-probe",
            "arguments": { "fingerprint": true, "leave": "the secret of a call" },
        } });
        to_server.write_all(&line(&call)).expect("written");
        let answer = reply(&mut from_server, id);
        let output = &answer["result"]["structuredContent"];
        assert_eq!(
            output["left"],
            Value::Null,
            "call {id} found what another left: {answer}"
        );
        assert_eq!(output["env"], json!([]), "{answer}");
        looks.push(output["memory"].clone());
    }
    assert!(looks[0].is_string(), "{looks:?}");
    assert!(looks.iter().all(|look| *look == looks[0]), "{looks:?}");
    drop(to_server);
    assert!(child.wait().expect("evo serve exits").success());
}

/// A store whose call ended waits to be given back: on a current-thread runtime driven
/// by `block_on` from outside, until the next call's `block_on` runs its task. "The
/// thread that advances the Wasm engine's epoch ticks only while a call's guest code may
/// run, or an instance is being made ahead": so an embedder's idle host, between two
/// calls, keeps no ticker awake.
#[test]
fn a_call_that_ended_keeps_no_ticker_awake_while_its_store_waits_to_be_dropped() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    for parked_instances in [0, 8] {
        let engine = engine(parked_instances);
        let file = rt.block_on(load(&engine, skills::CALCULATE));
        let input = json!({ "expression": "1 + 1" });
        for call in 0..3 {
            let out = rt.block_on(answer(&file, "calculate", &input));
            assert!(out.is_ok(), "{out:?}");
            assert!(
                !engine.epoch_ticking(),
                "call {call} (parked_instances = {parked_instances}) left the epoch ticking"
            );
        }
    }
}
