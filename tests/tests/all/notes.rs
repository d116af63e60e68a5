use std::sync::{Arc, Mutex};

use evo_host::grants::Policy;
use evo_host::skill::kernel::table::SkillTable;
use evo_host::skill::kernel::{Kernel, RunOptions, SkillContext};
use evo_host::skill::observe::events::{EventSink, RunEvent};
use evo_tests::{engine, load, skills};
use serde_json::json;

#[tokio::test]
async fn notes_live_in_scratch_across_calls_of_one_run() {
    let engine = engine();
    let write = Policy {
        memory: evo_host::grants::MemoryAccess::ReadWrite,
        ..Policy::default()
    };
    let skill = load(&engine, skills::NOTES, &write).await;
    let events = Arc::new(Mutex::new(Vec::<RunEvent>::new()));
    let sink = events.clone();
    let run = Arc::new(Kernel::new(Arc::new(SkillTable::new()))).context(RunOptions {
        events: Some(EventSink::new(move |e| sink.lock().unwrap().push(e))),
        ..RunOptions::default()
    });

    skill
        .call(r#"{"op":"add","text":"buy milk"}"#, &run)
        .await
        .unwrap();
    let outcome = skill
        .call(r#"{"op":"add","text":"call Ada","important":true}"#, &run)
        .await
        .unwrap();
    assert_eq!(outcome.output, json!({ "notes": ["buy milk", "call Ada"] }));
    assert_eq!(
        run.scratch().get("notes"),
        Some(json!(["buy milk", "call Ada"]))
    );

    let all = events.lock().unwrap().clone();
    // What the skill logs reaches the run's listener too (an MCP client shows it).
    let logged: Vec<(&str, &str)> = all
        .iter()
        .filter_map(|e| match e {
            RunEvent::Log { level, message, .. } => Some((*level, message.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(logged, [("info", "added note 1"), ("info", "added note 2")]);
    let events: Vec<RunEvent> = all
        .into_iter()
        .filter(|e| !matches!(e, RunEvent::Log { .. }))
        .collect();
    assert_eq!(events.len(), 2);
    assert_eq!(
        events[1],
        RunEvent::Emit {
            timestamp: match events[1] {
                RunEvent::Emit { timestamp, .. } => timestamp,
                _ => 0,
            },
            skill: "notes".into(),
            output: json!({ "type": "note_added", "count": 2 }),
        }
    );

    assert_eq!(
        outcome.memory_writes.len(),
        1,
        "only the important note is suggested for memory"
    );
    assert_eq!(outcome.memory_writes[0].text, "call Ada");
    assert_eq!(outcome.memory_writes[0].category.as_deref(), Some("fact"));

    let other_run = SkillContext::detached();
    let outcome = skill.call(r#"{"op":"list"}"#, &other_run).await.unwrap();
    assert_eq!(
        outcome.output,
        json!({ "notes": [] }),
        "scratch belongs to one run"
    );
}

#[tokio::test]
async fn adding_without_text_is_invalid_input() {
    let engine = engine();
    let skill = load(&engine, skills::NOTES, &Policy::default()).await;
    let err = skill
        .call(r#"{"op":"add"}"#, &SkillContext::detached())
        .await
        .unwrap_err();
    assert_eq!(err.code(), "INVALID_INPUT");
    assert_eq!(
        err.to_string(),
        "notes: invalid input: `text` is required to add a note"
    );
}

#[tokio::test]
async fn memory_suggestions_need_the_write_grant() {
    let engine = engine();
    let skill = load(&engine, skills::NOTES, &Policy::default()).await;
    assert_eq!(
        skill.grant().refused,
        ["memory: requested read-write access, the host policy allows none"]
    );
    let outcome = skill
        .call(
            r#"{"op":"add","text":"call Ada","important":true}"#,
            &SkillContext::detached(),
        )
        .await
        .unwrap();
    assert_eq!(outcome.output, json!({ "notes": ["call Ada"] }));
    assert!(
        outcome.memory_writes.is_empty(),
        "without the grant the suggestion is dropped"
    );
}
