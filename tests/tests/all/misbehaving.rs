//! Guests that misbehave, written in WAT so each does exactly one bad thing. Each must
//! produce its own clear error, and the engine must keep serving other calls.

use std::time::Duration;

use evo_host::engine::wasm::WasmEngine;
use evo_host::grants::Policy;
use evo_host::skill::kernel::SkillContext;
use evo_host::{Error, Result};
use evo_tests::{engine, load, skills, wat_skill};
use serde_json::json;

async fn call_wat(
    engine: &WasmEngine,
    manifest: serde_json::Value,
    body: &str,
) -> Result<serde_json::Value> {
    let bytes = wat_skill(&manifest.to_string(), body);
    let skill = engine
        .load_bytes("fixture.wasm", bytes, &Policy::default())
        .await?;
    skill
        .call("{}", &SkillContext::detached())
        .await
        .map(|o| o.output)
}

/// Runs `body` twice (a dead instance must not be reused) and checks that a real skill
/// still works on the same engine afterwards.
async fn misbehave(manifest: serde_json::Value, body: &str) -> Error {
    let engine = engine();
    let first = call_wat(&engine, manifest.clone(), body).await.unwrap_err();
    let second = call_wat(&engine, manifest, body).await.unwrap_err();
    // The same error, but for the guest backtrace's offsets: on a loaded machine one run
    // placed the same trap one byte apart in the two calls (0x1fa and 0x1fb).
    let headline = |err: &Error| err.to_string().lines().next().map(str::to_owned);
    assert_eq!(first.code(), second.code());
    assert_eq!(headline(&first), headline(&second));
    let calculate = load(&engine, skills::CALCULATE, &Policy::default()).await;
    let outcome = calculate
        .call(r#"{"expression":"2 + 2"}"#, &SkillContext::detached())
        .await
        .unwrap();
    assert_eq!(outcome.output, json!({ "result": 4 }));
    first
}

#[tokio::test]
async fn an_infinite_loop_times_out() {
    let err = misbehave(
        json!({ "name": "looper", "description": "loops", "timeout": 200 }),
        "(loop $l (br $l)) unreachable",
    )
    .await;
    assert_eq!(err.code(), "SKILL_TIMEOUT");
    assert_eq!(
        err.to_string(),
        "looper: timeout: the call did not finish within 200 ms"
    );
}

#[tokio::test]
async fn an_infinite_loop_runs_out_of_fuel_when_metered() {
    let manifest =
        json!({ "name": "burner", "description": "burns fuel", "limits": { "fuel": 100000 } });
    let err = misbehave(manifest, "(loop $l (br $l)) unreachable").await;
    assert_eq!(err.code(), "FUEL_EXHAUSTED");
    assert_eq!(
        err.to_string(),
        "burner: fuel exhausted: the call used all 100000 units of fuel"
    );
}

#[tokio::test]
async fn a_memory_bomb_hits_the_memory_limit() {
    let manifest = json!({ "name": "bomb", "description": "grows", "limits": { "memoryMib": 16 } });
    let body =
        "(loop $l (br_if $l (i32.ne (memory.grow (i32.const 16)) (i32.const -1)))) unreachable";
    let err = misbehave(manifest, body).await;
    assert_eq!(err.code(), "MEMORY_LIMIT_EXCEEDED");
    assert_eq!(err.to_string(), "bomb: memory limit of 16 MiB exceeded");
}

#[tokio::test]
async fn a_trap_reports_the_trap() {
    let err = misbehave(
        json!({ "name": "trapper", "description": "traps" }),
        "unreachable",
    )
    .await;
    assert_eq!(err.code(), "SKILL_TRAPPED");
    let message = err.to_string();
    assert!(message.starts_with("trapper: trapped: "), "{message}");
    assert!(
        message
            .starts_with("trapper: trapped: wasm trap: wasm `unreachable` instruction executed\n"),
        "{message}"
    );
    assert!(message.contains("guest backtrace:"), "{message}");
}

#[tokio::test]
async fn output_over_the_limit_is_refused() {
    let manifest =
        json!({ "name": "flood", "description": "floods", "limits": { "outputBytes": 1024 } });
    // Ok(skill-output { output: 4096 NUL bytes at 1024, memory-writes: [], steps: [] }).
    let body = "(i32.store8 (i32.const 0) (i32.const 0))
                (i32.store (i32.const 4) (i32.const 1024))
                (i32.store (i32.const 8) (i32.const 4096))
                (i64.store (i32.const 12) (i64.const 0))
                (i64.store (i32.const 20) (i64.const 0))
                (i32.const 0)";
    let err = misbehave(manifest, body).await;
    assert_eq!(err.code(), "OUTPUT_LIMIT_EXCEEDED");
    assert_eq!(err.to_string(), "flood: output exceeded 1024 bytes");
}

#[tokio::test]
async fn a_failure_returned_as_a_value_keeps_its_message() {
    let manifest = json!({ "name": "refuser", "description": "refuses" });
    // Err(skill-error::failed("no")): the message "no" is written at 32.
    let body = "(i32.store8 (i32.const 0) (i32.const 1))
                (i32.store8 (i32.const 4) (i32.const 4))
                (i32.store (i32.const 8) (i32.const 32))
                (i32.store (i32.const 12) (i32.const 2))
                (i32.store16 (i32.const 32) (i32.const 0x6f6e))
                (i32.const 0)";
    let err = misbehave(manifest, body).await;
    assert_eq!(err.code(), "SKILL_FAILED");
    assert_eq!(err.to_string(), "refuser: failed: no");
}

#[tokio::test]
async fn output_that_is_not_json_is_refused() {
    let manifest = json!({ "name": "garbler", "description": "garbles" });
    let body = "(i32.store8 (i32.const 0) (i32.const 0))
                (i32.store (i32.const 4) (i32.const 1024))
                (i32.store (i32.const 8) (i32.const 3))
                (i64.store (i32.const 12) (i64.const 0))
                (i64.store (i32.const 20) (i64.const 0))
                (i32.const 0)";
    let err = misbehave(manifest, body).await;
    assert_eq!(err.code(), "INVALID_OUTPUT");
}

#[tokio::test]
async fn an_invalid_manifest_lists_every_problem() {
    let engine = engine();
    let bytes = wat_skill(r#"{"name":"Bad Name","version":"x"}"#, "unreachable");
    let err = engine
        .load_bytes("bad.wasm", bytes, &Policy::default())
        .await
        .unwrap_err();
    assert_eq!(err.code(), "INVALID_MANIFEST");
    let message = err.to_string();
    assert!(
        message.contains("description: Missing required fields: description"),
        "{message}"
    );
    assert!(
        message.contains("name: \"Bad Name\" is not a valid skill name"),
        "{message}"
    );
    assert!(
        message.contains("version: \"x\" is not MAJOR.MINOR.PATCH"),
        "{message}"
    );
}

/// Waits until `host` has `n` Wasm instances alive: the runaways started before are
/// running, whatever the machine's load (an order, not a guess at a time).
async fn until_running(host: &evo_host::Host, n: usize) {
    let engine = host.loader().wasm_engine().expect("a Wasm engine");
    let start = std::time::Instant::now();
    while engine.live_instances() < n {
        assert!(
            start.elapsed() < evo_tests::shared::HANG_GUARD,
            "{n} instances never ran"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// A Host over the runaway skills (`spin`, `bomb`) with deadlines of `timeout_ms`, and
/// `engine` (TOML lines) in the `[engine]` section of its configuration.
async fn runaway_host(
    root: &std::path::Path,
    timeout_ms: u64,
    engine: &str,
) -> std::sync::Arc<evo_host::Host> {
    let skills_dir = evo_tests::runaway_skills(&root.join("skills"), timeout_ms);
    std::fs::write(
        root.join("evo.toml"),
        format!(
            "skill_dirs = [{:?}]\n\n[engine]\n{engine}\n",
            skills_dir.display().to_string()
        ),
    )
    .unwrap();
    let host = evo_host::Host::builder()
        .data_dir(root)
        .config(evo_tests::config(root))
        .build()
        .await
        .unwrap();
    std::sync::Arc::new(host)
}

#[tokio::test(flavor = "current_thread")]
async fn a_runaway_guest_holds_no_runtime_thread() {
    // One runtime thread, as a busy server's threads all may be: through the public
    // Host, a guest that computes without end must still let other calls run before its
    // deadline (found by the load harness: two such guests stalled a two-core
    // `evo serve` for their whole timeout).
    let root = tempfile::tempdir().unwrap();
    let host = runaway_host(root.path(), 3000, "").await;
    // The component, not the built-in of the same name: it needs the Wasm engine too.
    let calculate = host.resolve(skills::CALCULATE).await.unwrap();
    let spinning = tokio::spawn({
        let host = host.clone();
        async move { host.call("spin", json!({})).await.unwrap_err() }
    });
    // Let the spin start, then call beside it.
    tokio::task::yield_now().await;
    let answer = host
        .call(&calculate, json!({ "expression": "6*7" }))
        .await
        .unwrap();
    assert_eq!(answer, json!({ "result": 42 }));
    assert!(!spinning.is_finished(), "answered while the spin still ran");
    assert_eq!(spinning.await.unwrap().code(), "SKILL_TIMEOUT");
}

/// CPU time the calling thread has used.
fn thread_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap();
    let nanos: u64 = stat.split_whitespace().next().unwrap().parse().unwrap();
    Duration::from_nanos(nanos)
}

#[tokio::test(flavor = "current_thread")]
async fn a_runaway_guest_keeps_its_thread_alone_and_leaves_it_when_short_calls_come() {
    // Alone, a guest past its first milliseconds keeps computing where it started, at
    // its priority: lowered, it lost the CPU to every other process on the machine and
    // a 10 MB JavaScript flood met its 2 s deadline during a test run. Once a short call
    // waits, it moves off the caller's runtime, so the short calls there never queue
    // behind its slices (the load harness: five runaways in a hundred calls made the
    // good calls' p99 2,199× their clean run on two cores).
    let root = tempfile::tempdir().unwrap();
    let host = runaway_host(root.path(), 3000, "pool_slots = 1").await;
    let calculate = host.resolve(skills::CALCULATE).await.unwrap();
    let before = thread_cpu();
    let spinning = tokio::spawn({
        let host = host.clone();
        async move { host.call("spin", json!({})).await.unwrap_err() }
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    let alone = thread_cpu() - before;
    assert!(
        alone > Duration::from_millis(100),
        "alone, the runaway computed {alone:?} of 500 ms on its caller's thread"
    );
    // The short call waits for the runaway's slot: the runaway moves, and gives it up.
    let before = thread_cpu();
    let answer = host
        .call(&calculate, json!({ "expression": "6*7" }))
        .await
        .unwrap();
    assert_eq!(answer, json!({ "result": 42 }));
    let error = spinning.await.unwrap();
    assert_eq!(error.code(), "SKILL_TIMEOUT", "{error}");
    // The short call and at most a slice of the runaway run here; the rest of its
    // 2.5 s of spinning runs elsewhere.
    let used = thread_cpu() - before;
    assert!(
        used < Duration::from_millis(200),
        "the caller's thread spent {used:?} of CPU on a runaway beside a short call"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn runaways_beside_each_other_leave_the_callers_thread() {
    // Each runaway is a call in flight beside the other, so both move. Counting only the
    // calls that had not turned long left them on the caller's runtime: through `evo
    // serve` the good calls spend microseconds in the engine and the rest of their time
    // queued behind the runaways, so at a tick there was rarely one to see (the load
    // harness: the good calls' p99 39× the clean run's).
    let root = tempfile::tempdir().unwrap();
    let host = runaway_host(root.path(), 1000, "").await;
    let before = thread_cpu();
    let (first, second) = tokio::join!(host.call("spin", json!({})), host.call("spin", json!({})));
    for result in [first, second] {
        assert_eq!(result.unwrap_err().code(), "SKILL_TIMEOUT");
    }
    // Instantiating and a slice or two of each run here; the rest of two seconds of
    // spinning runs elsewhere.
    let used = thread_cpu() - before;
    assert!(
        used < Duration::from_millis(200),
        "the caller's thread spent {used:?} of CPU on two runaways"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_runs_long_gives_its_slot_to_short_calls() {
    // One slot: the runaway takes it, and past its first milliseconds moves to the
    // long lane, so a short call runs beside it instead of waiting out its 3 s.
    let root = tempfile::tempdir().unwrap();
    let host = runaway_host(root.path(), 3000, "pool_slots = 1").await;
    let calculate = host.resolve(skills::CALCULATE).await.unwrap();
    let spinning = tokio::spawn({
        let host = host.clone();
        async move { host.call("spin", json!({})).await.unwrap_err() }
    });
    until_running(&host, 1).await;
    let answer = host
        .call(&calculate, json!({ "expression": "6*7" }))
        .await
        .unwrap();
    assert_eq!(answer, json!({ "result": 42 }));
    assert!(
        !spinning.is_finished(),
        "the short call waited for the runaway"
    );
    assert_eq!(spinning.await.unwrap().code(), "SKILL_TIMEOUT");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_top_level_call_waits_for_the_pool_not_the_nested_reserve() {
    // One slot, and the long lane's one slot taken: a second runaway keeps the pool's.
    // A short call then waits for it: the reserve is for skills called by skills, and
    // top-level calls taking it made a pool of 16 run 26 at once (and the reserve was
    // gone when a nested call needed it).
    let root = tempfile::tempdir().unwrap();
    let host = runaway_host(root.path(), 3000, "pool_slots = 1").await;
    let calculate = host.resolve(skills::CALCULATE).await.unwrap();
    let spin = |host: std::sync::Arc<evo_host::Host>| async move {
        host.call("spin", json!({})).await.unwrap_err()
    };
    let first = tokio::spawn(spin(host.clone()));
    until_running(&host, 1).await;
    let second = tokio::spawn(spin(host.clone()));
    until_running(&host, 2).await;
    // It waits, within its own deadline (a second), for the slot the runaway holds.
    let error = host
        .call(&calculate, json!({ "expression": "6*7" }))
        .await
        .unwrap_err();
    assert_eq!(error.code(), "SKILL_TIMEOUT", "{error}");
    assert!(!second.is_finished(), "the runaway ended first");
    assert_eq!(first.await.unwrap().code(), "SKILL_TIMEOUT");
    assert_eq!(second.await.unwrap().code(), "SKILL_TIMEOUT");
}

/// An embedder that drives its own runtime with `block_on` per call, as a program
/// without an async main does: between calls nothing runs, and the finished call's store
/// waits for the next `block_on` to be dropped without keeping the epoch's ticker awake.
/// A runaway that comes after such an idle spell is still stopped by its deadline ("a
/// guest that computes without end" ends with `SKILL_TIMEOUT`; a ticker left asleep
/// would leave it spinning and this test hanging), and a memory bomb by the memory limit,
/// on either kind of runtime.
#[test]
fn after_an_embedders_idle_spell_a_runaway_is_still_stopped_by_its_deadline() {
    for multi_thread in [false, true] {
        let rt = if multi_thread {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
        } else {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
        }
        .unwrap();
        let root = tempfile::tempdir().unwrap();
        let host = rt.block_on(runaway_host(root.path(), 500, ""));
        let calculate = rt.block_on(host.resolve(skills::CALCULATE)).unwrap();
        // Twice, so that the second call's instance is made ahead and parked.
        for _ in 0..2 {
            let answer = rt
                .block_on(host.call(&calculate, json!({ "expression": "6*7" })))
                .unwrap();
            assert_eq!(answer, json!({ "result": 42 }));
        }
        // Idle: long enough for the ticker to find nothing held and wait.
        std::thread::sleep(Duration::from_millis(100));
        let error = rt.block_on(host.call("spin", json!({}))).unwrap_err();
        assert_eq!(
            error.code(),
            "SKILL_TIMEOUT",
            "multi_thread = {multi_thread}: {error}"
        );
        std::thread::sleep(Duration::from_millis(100));
        let error = rt.block_on(host.call("bomb", json!({}))).unwrap_err();
        assert_eq!(
            error.code(),
            "MEMORY_LIMIT_EXCEEDED",
            "multi_thread = {multi_thread}: {error}"
        );
        // And the host still answers.
        let answer = rt
            .block_on(host.call(&calculate, json!({ "expression": "6*7" })))
            .unwrap();
        assert_eq!(answer, json!({ "result": 42 }));
    }
}
