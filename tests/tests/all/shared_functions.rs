//! Functions compiled for one component are reused by the next: every JavaScript
//! skill carries the same engine and every Python skill the same interpreter, so a data
//! directory's second skill of a language compiles only what is its own, and runs as
//! if compiled from scratch.

use evo_host::capabilities::Policy;
use evo_host::engine::wasm::{EngineConfig, WasmEngine};
use evo_tests::cli::{allow_slow_compiles, command, stderr, stdout};
use evo_tests::{load, skills};
use serde_json::Value;

/// What `engine` reused and compiled while `f` ran.
async fn counted<F: Future>(engine: &WasmEngine, f: F) -> (u64, u64) {
    let (reused, compiled) = engine.function_counts().expect("the engine has a cache");
    f.await;
    let (reused_after, compiled_after) = engine.function_counts().unwrap();
    (reused_after - reused, compiled_after - compiled)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_second_skill_of_a_language_reuses_the_functions_of_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let config = EngineConfig {
        cache_dir: Some(dir.path().to_owned()),
        max_concurrent_calls: 2,
        compile_deadline: std::time::Duration::from_secs(900),
        ..EngineConfig::default()
    };
    let engine = WasmEngine::new(config.clone()).unwrap();
    for (first, second) in [
        (skills::JS_RECALL, skills::JS_TEXT_STATS),
        (skills::PY_RECALL, skills::PY_TEXT_STATS),
    ] {
        let (_, compiled_first) = counted(&engine, load(&engine, first, &Policy::default())).await;
        let (reused, compiled) = counted(&engine, load(&engine, second, &Policy::default())).await;
        assert!(
            reused >= 9 * compiled && compiled_first >= 9 * compiled,
            "{second}: {reused} functions reused, {compiled} compiled (the first compiled {compiled_first})"
        );
    }
    // Another engine on the same directory (another process, say) finds them on disk.
    let other = WasmEngine::new(config).unwrap();
    let (reused, compiled) =
        counted(&other, load(&other, skills::JS_LIMITS, &Policy::default())).await;
    assert!(
        reused >= 9 * compiled,
        "{reused} reused, {compiled} compiled"
    );
}

#[test]
fn a_skill_compiled_from_reused_functions_answers_as_one_compiled_whole() {
    let home = tempfile::tempdir().unwrap();
    allow_slow_compiles(home.path());
    for (first, path) in [
        (skills::JS_RECALL, skills::JS_TEXT_STATS),
        (skills::PY_RECALL, skills::PY_TEXT_STATS),
    ] {
        // No shared compile cache: the data directory's own, where the first skill of
        // the language (run with an input it refuses: only its compile matters) leaves
        // its functions for the second.
        let out = command(home.path(), &["skill", "run", first, "--input", "{}"])
            .output()
            .unwrap();
        assert!(
            stderr(&out).contains("INVALID_INPUT") || stderr(&out).contains("VALIDATION"),
            "{first}: {}",
            stderr(&out)
        );
        let out = command(
            home.path(),
            &[
                "skill",
                "run",
                path,
                "--input",
                crate::guests::TEXT_STATS_INPUT,
            ],
        )
        .output()
        .unwrap();
        assert!(out.status.success(), "{path}: {}", stderr(&out));
        let value: Value = serde_json::from_str(&stdout(&out)).unwrap();
        assert_eq!(value, crate::guests::text_stats_answer(), "{path}");
    }
}
