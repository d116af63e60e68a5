//! `SkillContext::call`: depth limit, lookup, gate 1 with defaults, timeout, retry on
//! transient errors only, gate 2, events and statistics .

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use evo_host::Error;
use evo_host::errors::FailureKind;
use evo_host::skill::kernel::table::SkillTable;
use evo_host::skill::kernel::{Kernel, KernelConfig, RunOptions};
use evo_host::skill::observe::events::{EventKind, RunEvent};
use evo_host::skill::validate::Direction;
use evo_host::tools::BuiltinTools;
use evo_tests::kernel::{recorder, register};
use serde_json::{Value, json};

fn kernel(registry: Arc<SkillTable>) -> Arc<Kernel> {
    Arc::new(Kernel::new(registry).with_config(KernelConfig {
        retry_backoff: Duration::from_millis(1),
        ..KernelConfig::default()
    }))
}

fn memory_search_manifest() -> Value {
    // memory_search's input schema.
    json!({
        "name": "memory_search",
        "description": "Searches long-term memory.",
        "category": "memory",
        "input": { "type": "object", "properties": {
            "query": { "type": "string", "description": "the search query (natural language)" },
            "limit": { "type": "number", "default": 5, "minimum": 1, "maximum": 50 } },
            "required": ["query"] },
        "output": { "type": "object", "properties": {
            "results": { "type": "array" }, "count": { "type": "number" } },
            "required": ["results", "count"] }
    })
}

#[tokio::test]
async fn unknown_skills_are_not_found() {
    let ctx = kernel(Arc::default()).context(RunOptions::default());
    let err = ctx.call("nope", json!({})).await.unwrap_err();
    assert_eq!(err.to_string(), "Skills not found: nope");
    assert_eq!(err.code(), "SKILL_NOT_FOUND");
}

#[tokio::test]
async fn a_skill_calling_itself_stops_at_the_depth_limit() {
    let registry = Arc::new(SkillTable::new());
    let depths = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = depths.clone();
    register(
        &registry,
        json!({ "name": "recurse", "description": "Calls itself.", "calls": ["recurse"] }),
        move |input, ctx| {
            let seen = seen.clone();
            async move {
                seen.lock().unwrap().push(ctx.depth());
                assert_eq!(ctx.parent_skill(), Some("recurse"));
                ctx.call("recurse", input).await
            }
        },
    );
    let ctx = kernel(registry).context(RunOptions::default());
    let err = ctx.call("recurse", json!({})).await.unwrap_err();
    assert_eq!(err.code(), "SKILL_DEPTH_EXCEEDED");
    let mut innermost = &err;
    while let Error::Step { source, .. } = innermost {
        innermost = source;
    }
    assert_eq!(
        innermost.to_string(),
        "recurse: call depth limit reached (10 of 10 frames); a skill is probably calling itself in a loop"
    );
    assert_eq!(*depths.lock().unwrap(), (1..=10).collect::<Vec<u32>>());
}

#[tokio::test]
async fn gate_one_applies_defaults_and_reports_every_violation() {
    let registry = Arc::new(SkillTable::new());
    let calls = Arc::new(AtomicU32::new(0));
    let counter = calls.clone();
    register(&registry, memory_search_manifest(), move |input, _ctx| {
        counter.fetch_add(1, Ordering::SeqCst);
        async move { Ok(json!({ "results": [], "count": input["limit"].clone() })) }
    });
    let ctx = kernel(registry).context(RunOptions::default());

    // The default limit (5) is filled in before the skill runs.
    let out = ctx
        .call("memory_search", json!({ "query": "plans" }))
        .await
        .unwrap();
    assert_eq!(out, json!({ "results": [], "count": 5 }));

    // memory_search's query should be a string, limit a number.
    let err = ctx
        .call("memory_search", json!({ "query": 123, "limit": "five" }))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "SKILL_VALIDATION_FAILED");
    let Error::Validation(report) = &err else {
        panic!("{err:?}")
    };
    assert_eq!(
        (report.direction, report.attempt, report.max_attempts),
        (Direction::Input, 1, 3)
    );
    let paths: Vec<(&str, &str)> = report
        .violations
        .iter()
        .map(|v| (v.path.as_str(), v.rule.as_str()))
        .collect();
    assert_eq!(paths.len(), 2);
    assert!(
        paths.contains(&("query", "type")) && paths.contains(&("limit", "type")),
        "{paths:?}"
    );
    let text = err.to_string();
    assert!(
        text.starts_with("memory_search input does not match its schema (attempt 1 of 3):"),
        "{text}"
    );
    assert!(
        text.contains("[limit] type: expected number (1-50), got \"five\""),
        "{text}"
    );
    assert!(
        text.ends_with("Fix these arguments and call the skill again."),
        "{text}"
    );

    let err = ctx.call("memory_search", json!({})).await.unwrap_err();
    assert!(
        err.to_string().contains("[query] required: expected a value for \"query\", got nothing. Provide `query` (the search query (natural language))."),
        "{err}"
    );
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "the skill never ran on bad input"
    );
}

#[tokio::test]
async fn gate_two_fails_a_code_skill_that_breaks_its_output_schema() {
    let registry = Arc::new(SkillTable::new());
    register(&registry, memory_search_manifest(), |_input, _ctx| async {
        Ok(json!({ "results": "not a list" }))
    });
    let ctx = kernel(registry).context(RunOptions::default());
    let err = ctx
        .call("memory_search", json!({ "query": "q" }))
        .await
        .unwrap_err();
    let Error::Validation(report) = &err else {
        panic!("{err:?}")
    };
    assert_eq!(report.direction, Direction::Output);
    let rules: Vec<(&str, &str)> = report
        .violations
        .iter()
        .map(|v| (v.path.as_str(), v.rule.as_str()))
        .collect();
    assert!(
        rules.contains(&("results", "type")) && rules.contains(&("count", "required")),
        "{rules:?}"
    );
}

#[tokio::test]
async fn transient_errors_are_retried_with_backoff_others_are_not() {
    let registry = Arc::new(SkillTable::new());
    let flaky_calls = Arc::new(AtomicU32::new(0));
    let counter = flaky_calls.clone();
    register(
        &registry,
        json!({ "name": "flaky", "description": "Fails twice, then works.", "retry": 2 }),
        move |_input, _ctx| {
            let n = counter.fetch_add(1, Ordering::SeqCst);
            async move {
                if n < 2 {
                    Err(Error::Database {
                        message: "database is locked".into(),
                        transient: true,
                    })
                } else {
                    Ok(json!({ "ok": true }))
                }
            }
        },
    );
    let broken_calls = Arc::new(AtomicU32::new(0));
    let counter = broken_calls.clone();
    register(
        &registry,
        json!({ "name": "broken", "description": "Always fails.", "retry": 2 }),
        move |_input, _ctx| {
            counter.fetch_add(1, Ordering::SeqCst);
            async {
                Err(Error::Skill {
                    skill: "broken".into(),
                    kind: FailureKind::Failed,
                    message: "no".into(),
                })
            }
        },
    );
    let slow_calls = Arc::new(AtomicU32::new(0));
    let counter = slow_calls.clone();
    register(
        &registry,
        json!({ "name": "slow", "description": "Too slow.", "timeout": 20, "retry": 1 }),
        move |_input, _ctx| {
            counter.fetch_add(1, Ordering::SeqCst);
            async {
                tokio::time::sleep(Duration::from_secs(5)).await;
                Ok(json!({}))
            }
        },
    );
    let ctx = kernel(registry).context(RunOptions::default());

    assert_eq!(
        ctx.call("flaky", json!({})).await.unwrap(),
        json!({ "ok": true })
    );
    assert_eq!(flaky_calls.load(Ordering::SeqCst), 3);

    let err = ctx.call("broken", json!({})).await.unwrap_err();
    assert_eq!(err.code(), "SKILL_FAILED");
    assert_eq!(
        broken_calls.load(Ordering::SeqCst),
        1,
        "a permanent failure is not retried"
    );

    let err = ctx.call("slow", json!({})).await.unwrap_err();
    assert_eq!(err.code(), "SKILL_TIMEOUT");
    assert_eq!(
        err.to_string(),
        "slow: timeout: the call did not finish within 20 ms"
    );
    assert_eq!(
        slow_calls.load(Ordering::SeqCst),
        2,
        "a timeout is transient: retried once"
    );

    let stats = ctx.kernel().stats();
    let flaky = stats.get("flaky").unwrap();
    assert_eq!((flaky.call_count, flaky.success_count), (1, 1));
    let broken = stats.get("broken").unwrap();
    assert_eq!(
        (broken.call_count, broken.success_count, broken.success_rate),
        (1, 0, 0.0)
    );
}

#[tokio::test]
async fn validation_and_depth_errors_are_never_retried() {
    let registry = Arc::new(SkillTable::new());
    let runs = Arc::new(AtomicU32::new(0));
    let counter = runs.clone();
    let mut manifest = memory_search_manifest();
    manifest["retry"] = json!(3);
    register(&registry, manifest, move |_input, _ctx| {
        counter.fetch_add(1, Ordering::SeqCst);
        async { Ok(json!({ "wrong": true })) }
    });
    let ctx = kernel(registry).context(RunOptions::default());
    let err = ctx
        .call("memory_search", json!({ "query": "q" }))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "SKILL_VALIDATION_FAILED");
    assert!(!err.is_transient());
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn calls_emit_events_with_their_depth() {
    let registry = Arc::new(SkillTable::new());
    BuiltinTools::default().register(&registry).unwrap();
    register(
        &registry,
        json!({ "name": "double_sqrt", "description": "Calls calculate.", "calls": ["calculate"] }),
        |input, ctx| async move {
            let out = ctx
                .call(
                    "calculate",
                    json!({ "expression": format!("2 * sqrt({})", input["n"]) }),
                )
                .await?;
            Ok(json!({ "value": out["result"] }))
        },
    );
    let (sink, events) = recorder();
    let ctx = kernel(registry).context(RunOptions {
        events: Some(sink),
        task_id: Some("t1".into()),
        ..RunOptions::default()
    });
    assert_eq!(ctx.task_id(), "t1");
    let out = ctx.call("double_sqrt", json!({ "n": 9 })).await.unwrap();
    assert_eq!(out, json!({ "value": 6 }));

    let events = events.lock().unwrap();
    let summary: Vec<(EventKind, &str, Option<u32>)> = events
        .iter()
        .map(|e| {
            let depth = match e {
                RunEvent::SkillCall { depth, .. } => Some(*depth),
                _ => None,
            };
            (e.kind(), e.skill().unwrap_or(""), depth)
        })
        .collect();
    assert_eq!(
        summary,
        [
            (EventKind::SkillCall, "double_sqrt", Some(1)),
            (EventKind::SkillCall, "calculate", Some(2)),
            (EventKind::SkillResult, "calculate", None),
            (EventKind::SkillResult, "double_sqrt", None),
        ]
    );
    assert!(
        matches!(&events[2], RunEvent::SkillResult { output: Some(out), is_error: false, .. } if *out == json!({ "result": 6 })),
        "{:?}",
        events[2]
    );
    assert!(matches!(
        &events[3],
        RunEvent::SkillResult {
            is_error: false,
            ..
        }
    ));
}

#[tokio::test]
async fn builtins_answer_to_the_seeds_aliases() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("README.md"), "hello").unwrap();
    let registry = Arc::new(SkillTable::new());
    BuiltinTools::new(dir.path()).register(&registry).unwrap();
    let ctx = kernel(registry.clone()).context(RunOptions::default());
    for name in ["read", "file-read", "Read"] {
        let out = ctx
            .call(name, json!({ "file_path": "./README.md" }))
            .await
            .unwrap();
        assert_eq!(out["content"], "     1\thello\n", "{name}");
        assert_eq!(out["file_size_bytes"], 5, "{name}");
    }
    // A built-in executor's direct call keeps its own shape.
    assert_eq!(
        BuiltinTools::new(dir.path())
            .execute("file-read", &json!({ "path": "./README.md" }))
            .unwrap(),
        json!({ "success": true, "content": "hello" })
    );
    assert_eq!(
        ctx.kernel().stats().get("read").unwrap().call_count,
        3,
        "aliases count for the tool"
    );
    let names: Vec<String> = registry
        .list()
        .iter()
        .map(|s| s.meta.name.clone())
        .collect();
    assert_eq!(names, ["calculate", "read"]);
}

/// Answers yes after `wait`, as a user who takes a while to read the question.
#[derive(Debug)]
struct SlowYes {
    wait: Duration,
}

impl evo_host::tools::Confirmer for SlowYes {
    fn confirm<'a>(
        &'a self,
        _request: &'a evo_host::tools::Confirmation,
    ) -> evo_host::tools::BoxFuture<'a, bool> {
        Box::pin(async move {
            tokio::time::sleep(self.wait).await;
            true
        })
    }
}

#[tokio::test]
async fn the_time_a_user_takes_to_answer_is_not_the_calls_time() {
    // A dangerous call waits for the user's confirmation; a call's time limit is for
    // its work, so a user who reads the question for longer than the limit does not
    // turn their yes into a timeout. The work after the answer is still limited.
    let registry = Arc::new(SkillTable::new());
    let manifest = |name: &str| {
        json!({
            "name": name,
            "description": "Replaces a file after asking.",
            "timeout": 300,
            "input": { "type": "object" },
            "output": { "type": "object" }
        })
    };
    let asking = |work: Duration| {
        move |_input: Value, ctx: evo_host::skill::kernel::SkillContext| async move {
            ctx.confirm(evo_host::tools::Confirmation {
                tool: "replace".into(),
                arguments: json!({}),
                risk: evo_host::tools::Risk::Medium,
                warning: "notes.txt will be replaced".into(),
            })
            .await?;
            tokio::time::sleep(work).await;
            Ok(json!({ "replaced": true }))
        }
    };
    register(
        &registry,
        manifest("quick-after"),
        asking(Duration::from_millis(100)),
    );
    register(
        &registry,
        manifest("slow-after"),
        asking(Duration::from_millis(900)),
    );
    let kernel = kernel(registry);
    let options = || RunOptions {
        confirmer: Some(Arc::new(SlowYes {
            wait: Duration::from_millis(700),
        })),
        ..RunOptions::default()
    };
    let out = kernel
        .context(options())
        .call("quick-after", json!({}))
        .await
        .expect("the 700 ms the user took are not counted against the 300 ms limit");
    assert_eq!(out, json!({ "replaced": true }));
    let err = kernel
        .context(options())
        .call("slow-after", json!({}))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "SKILL_TIMEOUT", "{err}");
}
