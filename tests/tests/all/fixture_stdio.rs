//! Guest stdout and stderr: captured, capped, and used to explain traps.

use evo_host::capabilities::Policy;
use evo_host::skill::context::RunContext;
use evo_tests::{engine, load, skills};
use serde_json::json;

#[tokio::test]
async fn stdout_and_stderr_are_captured_not_inherited() {
    let engine = engine();
    let skill = load(&engine, skills::FIXTURE_STDIO, &Policy::default()).await;
    let outcome = skill
        .call(
            r#"{"stdout_bytes":128,"stderr_line":"warming up"}"#,
            &RunContext::default(),
        )
        .await
        .unwrap();
    assert_eq!(outcome.output, json!({ "written": 128 }));
    assert_eq!(outcome.stdout, format!("{0}\n{0}\n", "x".repeat(63)));
    assert_eq!(outcome.stderr, "warming up\n");
}

#[tokio::test]
async fn flooding_stdout_hits_the_cap() {
    let engine = engine();
    let skill = load(&engine, skills::FIXTURE_STDIO, &Policy::default()).await;
    let err = skill
        .call(r#"{"stdout_bytes":10000000}"#, &RunContext::default())
        .await
        .unwrap_err();
    assert_eq!(err.code(), "OUTPUT_LIMIT_EXCEEDED");
    assert_eq!(
        err.to_string(),
        "fixture-stdio: stdout exceeded 65536 bytes"
    );
    let outcome = skill
        .call(r#"{"stdout_bytes":64}"#, &RunContext::default())
        .await
        .unwrap();
    assert_eq!(
        outcome.output,
        json!({ "written": 64 }),
        "the next call gets a fresh instance"
    );
}

#[tokio::test]
async fn a_panic_reports_its_message() {
    let engine = engine();
    let skill = load(&engine, skills::FIXTURE_STDIO, &Policy::default()).await;
    let err = skill
        .call(r#"{"panic":"the gizmo broke"}"#, &RunContext::default())
        .await
        .unwrap_err();
    assert_eq!(err.code(), "SKILL_TRAPPED");
    let message = err.to_string();
    assert!(
        message.contains("panicked at skills-wasm/fixture-stdio/src/lib.rs"),
        "{message}"
    );
    assert!(message.contains("the gizmo broke"), "{message}");
    assert!(!message.contains("RUST_BACKTRACE"), "{message}");
    assert!(message.contains("unreachable"), "{message}");
}
