use evo_host::grants::Policy;
use evo_host::skill::kernel::SkillContext;
use evo_tests::{engine, load, skills};
use serde_json::json;

#[tokio::test]
async fn evaluates_the_seed_expression() {
    // sandbox-executor.spec.md: calculate { expression: 'sqrt(144) + 10' } returns 22.
    let engine = engine();
    let skill = load(&engine, skills::CALCULATE, &Policy::default()).await;
    let outcome = skill
        .call(
            r#"{"expression":"sqrt(144) + 10"}"#,
            &SkillContext::detached(),
        )
        .await
        .unwrap();
    assert_eq!(outcome.output, json!({ "result": 22 }));
    assert!(outcome.memory_writes.is_empty());
}

#[tokio::test]
async fn manifest_comes_from_the_component() {
    let engine = engine();
    let skill = load(&engine, skills::CALCULATE, &Policy::default()).await;
    let meta = skill.meta();
    assert_eq!(meta.name, "calculate");
    assert_eq!(meta.category, "math");
    assert_eq!(meta.timeout_ms, 1_000);
    assert_eq!(meta.input["properties"]["expression"]["type"], "string");
    assert_eq!(meta.input["required"], json!(["expression"]));
    assert_eq!(skill.info().api_version, "0.2.0");
    assert!(
        skill
            .info()
            .sdk
            .as_deref()
            .unwrap()
            .starts_with("evo-guest 0.1.0"),
        "{:?}",
        skill.info().sdk
    );
}

#[tokio::test]
async fn bad_expressions_are_invalid_input_with_the_position() {
    let engine = engine();
    let skill = load(&engine, skills::CALCULATE, &Policy::default()).await;
    let err = skill
        .call(r#"{"expression":"2 * (3 +"}"#, &SkillContext::detached())
        .await
        .unwrap_err();
    assert_eq!(err.code(), "INVALID_INPUT");
    assert_eq!(
        err.to_string(),
        "calculate: invalid input: the expression ends too early at position 9"
    );
    let err = skill
        .call(r#"{"expr":"1"}"#, &SkillContext::detached())
        .await
        .unwrap_err();
    assert_eq!(err.code(), "INVALID_INPUT");
    assert!(
        err.to_string().contains("missing field `expression`"),
        "{err}"
    );
}

#[tokio::test]
async fn input_that_is_not_json_never_reaches_the_guest() {
    let engine = engine();
    let skill = load(&engine, skills::CALCULATE, &Policy::default()).await;
    let err = skill
        .call("{expression", &SkillContext::detached())
        .await
        .unwrap_err();
    assert_eq!(err.code(), "INVALID_INPUT");
    assert!(
        err.to_string()
            .starts_with("calculate: invalid input: not valid JSON"),
        "{err}"
    );
}

#[tokio::test]
async fn concurrent_calls_share_one_loaded_skill() {
    let engine = engine();
    let skill = load(&engine, skills::CALCULATE, &Policy::default()).await;
    let calls = (0..32).map(|i| {
        let skill = skill.clone();
        tokio::spawn(async move {
            let input = format!(r#"{{"expression":"{i} * 2"}}"#);
            skill
                .call(&input, &SkillContext::detached())
                .await
                .unwrap()
                .output["result"]
                .as_i64()
                .unwrap()
        })
    });
    let mut results = Vec::new();
    for call in calls {
        results.push(call.await.unwrap());
    }
    assert_eq!(results, (0..32).map(|i| i * 2).collect::<Vec<i64>>());
}

#[tokio::test]
async fn a_second_engine_loads_from_the_disk_cache() {
    use evo_host::engine::wasm::{EngineConfig, LoadSource, WasmEngine};
    let dir = tempfile::tempdir().unwrap();
    let config = EngineConfig {
        cache_dir: Some(dir.path().to_owned()),
        max_concurrent_calls: 2,
        ..EngineConfig::default()
    };
    let first = WasmEngine::new(config.clone()).unwrap();
    let skill = load(&first, skills::CALCULATE, &Policy::default()).await;
    assert_eq!(skill.load_source(), LoadSource::Compiled);
    let mut files: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(
        files.len(),
        3,
        "one artifact, the functions compiled and the record of the file: {files:?}"
    );
    assert!(files[0].ends_with(".cwasm"), "{files:?}");
    assert_eq!(
        files[1..],
        ["functions.sqlite3", "known"],
        "no temp files left behind"
    );

    // The second engine describes the skill from the record, and loads the compiled
    // code from the cache on the first call.
    let second = WasmEngine::new(config).unwrap();
    let skill = load(&second, skills::CALCULATE, &Policy::default()).await;
    assert_eq!(skill.load_source(), LoadSource::Deferred);
    assert_eq!(skill.meta().name, "calculate");
    let outcome = skill
        .call(r#"{"expression":"1 + 1"}"#, &SkillContext::detached())
        .await
        .unwrap();
    assert_eq!(outcome.output, json!({ "result": 2 }));
    assert_eq!(skill.load_source(), LoadSource::Cache);
}

#[tokio::test]
async fn a_corrupt_cache_entry_is_recompiled() {
    use evo_host::engine::wasm::{EngineConfig, LoadSource, WasmEngine};
    let dir = tempfile::tempdir().unwrap();
    let config = EngineConfig {
        cache_dir: Some(dir.path().to_owned()),
        max_concurrent_calls: 2,
        ..EngineConfig::default()
    };
    let engine = WasmEngine::new(config.clone()).unwrap();
    load(&engine, skills::CALCULATE, &Policy::default()).await;
    let artifact = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "cwasm"))
        .unwrap();
    std::fs::write(&artifact, b"garbage").unwrap();

    let engine = WasmEngine::new(config).unwrap();
    let skill = load(&engine, skills::CALCULATE, &Policy::default()).await;
    let outcome = skill
        .call(r#"{"expression":"6 * 7"}"#, &SkillContext::detached())
        .await
        .unwrap();
    assert_eq!(outcome.output, json!({ "result": 42 }));
    assert_eq!(skill.load_source(), LoadSource::Compiled);
}

#[tokio::test]
async fn an_unreservable_pool_falls_back_to_on_demand_allocation() {
    use evo_host::engine::wasm::{Allocator, EngineConfig, WasmEngine};
    // A million slots of 4 GiB reservations cannot fit in a 47-bit address space.
    let engine = WasmEngine::new(EngineConfig {
        max_concurrent_calls: 1_000_000,
        ..EngineConfig::default()
    })
    .unwrap();
    assert_eq!(engine.allocator(), Allocator::OnDemand);
    let skill = load(&engine, skills::CALCULATE, &Policy::default()).await;
    let outcome = skill
        .call(r#"{"expression":"2 ^ 10"}"#, &SkillContext::detached())
        .await
        .unwrap();
    assert_eq!(outcome.output, json!({ "result": 1024 }));
}

#[tokio::test]
async fn the_default_engine_pools_instances() {
    use evo_host::engine::wasm::Allocator;
    assert_eq!(engine().allocator(), Allocator::Pooling);
}

#[tokio::test]
async fn calls_racing_for_one_uncompiled_component_compile_it_once() {
    use evo_host::engine::wasm::{EngineConfig, LoadSource, WasmEngine};
    let dir = tempfile::tempdir().unwrap();
    let config = EngineConfig {
        cache_dir: Some(dir.path().to_owned()),
        max_concurrent_calls: 4,
        ..EngineConfig::default()
    };
    // The file is known (described from its record) but its compiled code is gone.
    load(
        &WasmEngine::new(config.clone()).unwrap(),
        skills::CALCULATE,
        &Policy::default(),
    )
    .await;
    for entry in std::fs::read_dir(dir.path()).unwrap().flatten() {
        if entry.path().extension().is_some_and(|e| e == "cwasm") {
            std::fs::remove_file(entry.path()).unwrap();
        }
    }
    let engine = WasmEngine::new(config).unwrap();
    let (a, b) = (
        load(&engine, skills::CALCULATE, &Policy::default()).await,
        load(&engine, skills::CALCULATE, &Policy::default()).await,
    );
    assert_eq!(
        (a.load_source(), b.load_source()),
        (LoadSource::Deferred, LoadSource::Deferred)
    );
    let input = r#"{"expression":"2 + 2"}"#;
    let (ctx_a, ctx_b) = (SkillContext::detached(), SkillContext::detached());
    let (first, second) = tokio::join!(a.call(input, &ctx_a), b.call(input, &ctx_b));
    assert_eq!(first.unwrap().output, json!({ "result": 4 }));
    assert_eq!(second.unwrap().output, json!({ "result": 4 }));
    // One compiled it; the other waited for it and read what it wrote.
    assert_eq!(engine.loads(), (1, 1));
    let mut sources = [a.load_source(), b.load_source()];
    sources.sort_by_key(|s| format!("{s:?}"));
    assert_eq!(sources, [LoadSource::Cache, LoadSource::Compiled]);
}
