//! The sandbox as a guest sees it: stdout and stderr captured and capped, no
//! environment, no arguments, no network, and panics explained.

use evo_host::capabilities::Policy;
use evo_host::skill::context::RunContext;
use evo_tests::{engine, load, skills};
use serde_json::json;

#[tokio::test]
async fn stdout_and_stderr_are_captured_not_inherited() {
    let engine = engine();
    let skill = load(&engine, skills::FIXTURE_PROBE, &Policy::default()).await;
    let outcome = skill
        .call(
            r#"{"stdout_bytes":128,"stderr_line":"warming up"}"#,
            &RunContext::default(),
        )
        .await
        .unwrap();
    assert_eq!(outcome.output["written"], 128);
    assert_eq!(outcome.stdout, format!("{0}\n{0}\n", "x".repeat(63)));
    assert_eq!(outcome.stderr, "warming up\n");
}

#[tokio::test]
async fn flooding_stdout_hits_the_cap() {
    let engine = engine();
    let skill = load(&engine, skills::FIXTURE_PROBE, &Policy::default()).await;
    let err = skill
        .call(r#"{"stdout_bytes":10000000}"#, &RunContext::default())
        .await
        .unwrap_err();
    assert_eq!(err.code(), "OUTPUT_LIMIT_EXCEEDED");
    assert_eq!(
        err.to_string(),
        "fixture-probe: stdout exceeded 65536 bytes"
    );
    let outcome = skill
        .call(r#"{"stdout_bytes":64}"#, &RunContext::default())
        .await
        .unwrap();
    assert_eq!(
        outcome.output["written"], 64,
        "the next call gets a fresh instance"
    );
}

#[tokio::test]
async fn a_panic_reports_its_message() {
    let engine = engine();
    let skill = load(&engine, skills::FIXTURE_PROBE, &Policy::default()).await;
    let err = skill
        .call(r#"{"panic":"the gizmo broke"}"#, &RunContext::default())
        .await
        .unwrap_err();
    assert_eq!(err.code(), "SKILL_TRAPPED");
    let message = err.to_string();
    assert!(
        message.contains("panicked at skills-wasm/fixture-probe/src/lib.rs"),
        "{message}"
    );
    assert!(message.contains("the gizmo broke"), "{message}");
    assert!(!message.contains("RUST_BACKTRACE"), "{message}");
    assert!(message.contains("unreachable"), "{message}");
}

#[tokio::test]
async fn no_environment_arguments_or_network() {
    // The test process has PATH, HOME and more; none of it may reach the guest.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let engine = engine();
    let skill = load(&engine, skills::FIXTURE_PROBE, &Policy::default()).await;
    let input = json!({ "connect": address }).to_string();
    let outcome = skill.call(&input, &RunContext::default()).await.unwrap();
    assert_eq!(outcome.output["env"], json!([]));
    assert_eq!(outcome.output["args"], json!([]));
    let connect = outcome.output["connect"].as_str().unwrap();
    assert_ne!(connect, "connected");
    assert!(
        connect.to_lowercase().contains("denied") || connect.contains("not permitted"),
        "{connect}"
    );
    assert!(listener.accept().is_err(), "nothing reached the listener");
}
