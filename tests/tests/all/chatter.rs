//! What a guest prints, logs and emits: captured, never inherited, and capped per call
//! (stdout and stderr at 64 KiB, log lines and events at 16 KiB each and 1,000 in all).

use evo_host::grants::Policy;
use evo_host::skill::kernel::SkillContext;
use evo_tests::{engine, load, skills};
use serde_json::json;

#[tokio::test]
async fn stdout_and_stderr_are_captured_not_inherited() {
    let engine = engine();
    let skill = load(&engine, skills::FIXTURE_PROBE, &Policy::default()).await;
    let outcome = skill
        .call(
            r#"{"stdout_bytes":128,"stderr_line":"warming up"}"#,
            &SkillContext::detached(),
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
        .call(r#"{"stdout_bytes":10000000}"#, &SkillContext::detached())
        .await
        .unwrap_err();
    assert_eq!(err.code(), "OUTPUT_LIMIT_EXCEEDED");
    assert_eq!(
        err.to_string(),
        "fixture-probe: stdout exceeded 65536 bytes"
    );
    let outcome = skill
        .call(r#"{"stdout_bytes":64}"#, &SkillContext::detached())
        .await
        .unwrap();
    assert_eq!(
        outcome.output["written"], 64,
        "the next call gets a fresh instance"
    );
}

#[test]
fn flooding_stderr_through_the_cli_hits_the_cap() {
    let home = tempfile::tempdir().unwrap();
    let out = evo_tests::cli::evo(
        home.path(),
        &[
            "skill",
            "run",
            skills::FIXTURE_PROBE,
            "--input",
            r#"{"stderr_bytes":1000000}"#,
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = evo_tests::cli::stderr(&out);
    assert!(
        stderr.starts_with(
            "error[OUTPUT_LIMIT_EXCEEDED]: fixture-probe: stderr exceeded 65536 bytes\n"
        ),
        "{stderr}"
    );
    // What the guest printed is not passed through either.
    assert!(stderr.len() < 4096, "{} bytes on stderr", stderr.len());
}

#[tokio::test]
async fn logs_and_events_are_capped_per_call_in_number_and_size() {
    use std::sync::{Arc, Mutex};

    use evo_host::skill::observe::events::{EventSink, RunEvent};
    let data = tempfile::tempdir().unwrap();
    let host = evo_host::Host::builder()
        .data_dir(data.path())
        .config(evo_tests::config(data.path()))
        .build()
        .await
        .unwrap();
    let name = host.resolve(skills::FIXTURE_PROBE).await.unwrap();
    let events = Arc::new(Mutex::new(Vec::new()));
    let ctx = host.context(Some(EventSink::new({
        let events = events.clone();
        move |event| events.lock().unwrap().push(event)
    })));
    // One log line of 20,000 bytes, one event of 20,000, 600 short lines, 600 events:
    // 1,202 calls, of which the first 1,000 count.
    let input = json!({ "log_bytes": 20_000, "emit_bytes": 20_000, "logs": 600, "emits": 600 });
    let output = ctx.call(&name, input).await.unwrap();
    assert_eq!(output["written"], 0, "the call itself succeeds");
    let events = events.lock().unwrap();
    let logs: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            RunEvent::Log { message, .. } => Some(message.as_str()),
            _ => None,
        })
        .collect();
    let emitted: Vec<&serde_json::Value> = events
        .iter()
        .filter_map(|e| match e {
            RunEvent::Emit { output, .. } => Some(output),
            _ => None,
        })
        .collect();
    // The long line is cut at 16 KiB and says how much went; the long event, JSON that
    // cannot be cut, is dropped (it still counts).
    assert_eq!(
        logs[0],
        format!("{}… (3616 more bytes cut)", "l".repeat(16_384))
    );
    assert_eq!(logs.len(), 601);
    assert_eq!(logs[600], "log 599");
    assert!(emitted.iter().all(|e| e.get("big").is_none()));
    // 1 + 1 + 600 calls before the events: 398 of them fit in the 1,000.
    assert_eq!(emitted.len(), 398);
    assert_eq!(emitted.last().unwrap()["n"], 397);
}
