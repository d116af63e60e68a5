//! llm skills with self-heal and composite pipelines, run
//! through the kernel against a scripted model.

use std::sync::Arc;

use evo_host::Error;
use evo_host::skill::composite::llm::{FIRST_TEMPERATURE, LlmExecutor, RETRY_TEMPERATURE};
use evo_host::skill::composite::pipeline::PipelineExecutor;
use evo_host::skill::kernel::table::{RegisteredSkill, SkillTable};
use evo_host::skill::kernel::{Fallback, Kernel, KernelConfig, RunOptions};
use evo_host::skill::manifest::SkillMeta;
use evo_host::skill::observe::events::RunEvent;
use evo_tests::kernel::{ScriptedLlm, recorder, register};
use serde_json::{Value, json};

fn meta(manifest: &Value) -> SkillMeta {
    SkillMeta::from_json(&manifest.to_string()).unwrap_or_else(|p| panic!("{p:?}"))
}

fn register_llm(registry: &SkillTable, manifest: Value, prompt: &str) {
    let meta = meta(&manifest);
    let executor = LlmExecutor::new(&meta, prompt).unwrap();
    registry.register(RegisteredSkill::new(meta, Arc::new(executor)).unwrap());
}

fn register_composite(registry: &SkillTable, manifest: Value) {
    let meta = meta(&manifest);
    let executor = PipelineExecutor::new(&meta).unwrap();
    registry.register(RegisteredSkill::new(meta, Arc::new(executor)).unwrap());
}

fn intent_manifest() -> Value {
    json!({
        "name": "intent_recognize",
        "description": "Routes a message.",
        "mode": "llm",
        "input": { "type": "object", "properties": { "message": { "type": "string" } }, "required": ["message"] },
        "output": { "type": "object", "properties": {
            "intents": { "type": "array", "items": { "type": "object", "properties": {
                "confidence": { "type": "number", "minimum": 0, "maximum": 1 } } } },
            "routing": { "type": "object", "properties": {
                "strategy": { "type": "string", "enum": ["direct_answer", "single_skill", "multi_skill", "pipeline", "clarify"] } },
                "required": ["strategy"] } },
            "required": ["intents", "routing"] }
    })
}

fn kernel_with(
    registry: Arc<SkillTable>,
    llm: Arc<ScriptedLlm>,
    fallback: Fallback,
) -> Arc<Kernel> {
    Arc::new(
        Kernel::new(registry)
            .with_llm(llm)
            .with_config(KernelConfig {
                fallback,
                ..KernelConfig::default()
            }),
    )
}

#[tokio::test]
async fn an_llm_skill_heals_its_output_on_the_second_attempt() {
    let registry = Arc::new(SkillTable::new());
    register_llm(
        &registry,
        intent_manifest(),
        "Route this message: {{input.message}}",
    );
    // A self-correcting route: "answer_directly" is not a strategy; the model fixes it when told.
    let llm = ScriptedLlm::new([
        r#"{"intents":[{"confidence":"high"}],"routing":{"strategy":"answer_directly"}}"#,
        "```json\n{\"intents\":[{\"confidence\":0.95}],\"routing\":{\"strategy\":\"direct_answer\"}}\n```",
    ]);
    let (sink, events) = recorder();
    let ctx = kernel_with(registry, llm.clone(), Fallback::Throw).context(RunOptions {
        events: Some(sink),
        ..RunOptions::default()
    });
    let out = ctx
        .call("intent_recognize", json!({ "message": "hi" }))
        .await
        .unwrap();
    assert_eq!(out["routing"]["strategy"], "direct_answer");

    let requests = llm.requests();
    assert_eq!(requests.len(), 2);
    // The prompt is the rendered template; the schema is in the system message, the
    // same for every call (the prefix providers cache).
    assert_eq!(requests[0].prompt, "Route this message: hi");
    let system = requests[0].system.as_deref().unwrap();
    assert!(
        system.starts_with(
            "You are the executor of the `intent_recognize` skill. Answer with the JSON object only, no other text. It must match this JSON Schema:\n{"
        ),
        "{system}"
    );
    assert_eq!(requests[1].system, requests[0].system);
    assert_eq!(requests[0].temperature, Some(FIRST_TEMPERATURE));
    assert_eq!(requests[1].temperature, Some(RETRY_TEMPERATURE));
    assert_eq!(requests[1].caller, "intent_recognize");
    let feedback = &requests[1].prompt;
    assert!(
        feedback.contains("--- Validation feedback (attempt 2 of 3) ---"),
        "{feedback}"
    );
    assert!(feedback.contains("[routing.strategy] enum: expected one of: direct_answer, single_skill, multi_skill, pipeline, clarify, got \"answer_directly\". Change 'answer_directly' to 'direct_answer'."), "{feedback}");
    assert!(
        feedback.contains("[intents[0].confidence] type"),
        "{feedback}"
    );

    let retries: Vec<(u32, u32, usize)> = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            RunEvent::SkillValidationRetry {
                attempt,
                max_attempts,
                violations,
                ..
            } => Some((*attempt, *max_attempts, *violations)),
            _ => None,
        })
        .collect();
    assert_eq!(retries, [(1, 3, 2)]);
}

#[tokio::test]
async fn self_heal_gives_up_after_three_attempts_as_the_fallback_says() {
    let bad = r#"{"intents":[],"routing":{"strategy":"answer_directly"}}"#;
    for (fallback, expected) in [
        (Fallback::Throw, None),
        (
            Fallback::ReturnRaw,
            Some(json!({"intents":[],"routing":{"strategy":"answer_directly"}})),
        ),
        (
            Fallback::ReturnPartial,
            Some(json!({"intents":[],"_invalid":["routing.strategy"]})),
        ),
    ] {
        let registry = Arc::new(SkillTable::new());
        register_llm(&registry, intent_manifest(), "{{input.message}}");
        let llm = ScriptedLlm::new(["not json at all", bad, bad]);
        let ctx = kernel_with(registry, llm.clone(), fallback).context(RunOptions::default());
        let result = ctx
            .call("intent_recognize", json!({ "message": "hi" }))
            .await;
        assert_eq!(llm.requests().len(), 3, "{fallback:?}");
        assert!(
            llm.requests()[1]
                .prompt
                .contains("[(root)] format: expected a JSON object, got \"not json at all\"")
        );
        match expected {
            None => {
                let err = result.unwrap_err();
                assert_eq!(err.code(), "SKILL_VALIDATION_FAILED");
                let Error::Validation(report) = &err else {
                    panic!()
                };
                assert_eq!((report.attempt, report.max_attempts), (3, 3));
                assert!(err.to_string().starts_with(
                    "intent_recognize output does not match its schema (attempt 3 of 3)"
                ));
            }
            Some(value) => assert_eq!(result.unwrap(), value, "{fallback:?}"),
        }
    }
}

/// A composite skill as its author writes it, in JSON.
fn research_and_summarize() -> Value {
    json!({
      "name": "research_and_summarize",
      "description": "搜索记忆中的相关内容并总结",
      "category": "workflow",
      "input": { "type": "object", "properties": { "topic": { "type": "string" }, "limit": { "type": "number", "default": 10 } }, "required": ["topic"] },
      "output": { "type": "object", "properties": { "summary": { "type": "string" }, "sources": { "type": "array" }, "count": { "type": "number" } } },
      "mode": "composite",
      "calls": ["memory_search", "summarize"],
      "pipeline": [
        { "step": "search", "skill": "memory_search", "input": { "query": "{{input.topic}}", "limit": "{{input.limit}}" } },
        { "step": "summarize", "skill": "summarize", "input": { "text": "{{steps.search.results | pluck:snippet | join:\\n\\n}}" }, "condition": "{{steps.search.count > 0}}" }
      ],
      "outputMapping": {
        "summary": "{{steps.summarize.summary || '未找到相关内容'}}",
        "sources": "{{steps.search.results}}",
        "count": "{{steps.search.count}}"
      },
      "version": "1.0.0",
      "tags": ["workflow", "research"]
    })
}

/// A memory_search test skill over a fixed list, and a summarize llm skill.
fn research_registry(snippets: &'static [&'static str]) -> Arc<SkillTable> {
    let registry = Arc::new(SkillTable::new());
    register(
        &registry,
        json!({ "name": "memory_search", "description": "Searches memory.",
                "input": { "type": "object", "properties": { "query": { "type": "string" }, "limit": { "type": "number" } }, "required": ["query", "limit"] } }),
        move |input, _ctx| async move {
            assert!(
                input["limit"].is_number(),
                "a single-expression template keeps the number type"
            );
            let limit = input["limit"].as_u64().unwrap_or(0) as usize;
            let results: Vec<Value> = snippets
                .iter()
                .take(limit)
                .enumerate()
                .map(|(i, s)| json!({ "id": format!("m{i}"), "snippet": s, "score": 0.9 }))
                .collect();
            Ok(json!({ "count": results.len(), "results": results }))
        },
    );
    register_llm(
        &registry,
        json!({ "name": "summarize", "description": "总结给定文本", "category": "text", "mode": "llm",
                "input": { "type": "object", "properties": { "text": { "type": "string" }, "maxLength": { "type": "number", "default": 500 } }, "required": ["text"] },
                "output": { "type": "object", "properties": { "summary": { "type": "string" } }, "required": ["summary"] } }),
        "你是一个摘要助手。用中文简洁总结用户提供的文本（不超过 {{input.maxLength}} 字）。\n\n{{input.text}}\n\n以 JSON 返回：{ \"summary\": \"...\" }",
    );
    register_composite(&registry, research_and_summarize());
    registry
}

#[tokio::test]
async fn research_and_summarize_runs_end_to_end() {
    let registry = research_registry(&["方案 A 用 SQLite", "方案 B 用 Postgres", "unused"]);
    let llm = ScriptedLlm::new([r#"{"summary":"两个方案：SQLite 与 Postgres"}"#]);
    let ctx = kernel_with(registry, llm.clone(), Fallback::Throw).context(RunOptions::default());
    let out = ctx
        .call_full(
            "research_and_summarize",
            json!({ "topic": "方案", "limit": 2 }),
        )
        .await
        .unwrap();
    assert_eq!(
        out.output,
        json!({
            "summary": "两个方案：SQLite 与 Postgres",
            "sources": [
                { "id": "m0", "snippet": "方案 A 用 SQLite", "score": 0.9 },
                { "id": "m1", "snippet": "方案 B 用 Postgres", "score": 0.9 }
            ],
            "count": 2
        })
    );
    // The snippets were plucked and joined with a blank line into the prompt.
    assert!(
        llm.requests()[0]
            .prompt
            .contains("（不超过 500 字）。\n\n方案 A 用 SQLite\n\n方案 B 用 Postgres\n\n")
    );
    let steps: Vec<(&str, &str)> = out
        .intermediate_steps
        .iter()
        .map(|s| (s.step_id.as_str(), s.step_name.as_str()))
        .collect();
    assert_eq!(
        steps,
        [
            ("search", "search (memory_search)"),
            ("summarize", "summarize (summarize)")
        ]
    );
    assert_eq!(
        out.intermediate_steps[0].input,
        json!({ "query": "方案", "limit": 2 })
    );
    assert!(out.intermediate_steps.iter().all(|s| s.error.is_none()));
}

#[tokio::test]
async fn a_false_condition_skips_the_step_and_the_mapping_falls_back() {
    let registry = research_registry(&[]);
    let llm = ScriptedLlm::new(Vec::<String>::new());
    let ctx = kernel_with(registry, llm.clone(), Fallback::Throw).context(RunOptions::default());
    let out = ctx
        .call_full("research_and_summarize", json!({ "topic": "nothing" }))
        .await
        .unwrap();
    assert_eq!(
        out.output,
        json!({ "summary": "未找到相关内容", "sources": [], "count": 0 })
    );
    assert!(llm.requests().is_empty(), "summarize never ran");
    assert_eq!(out.intermediate_steps.len(), 1);
    // The default limit (10) reached memory_search as a number.
    assert_eq!(out.intermediate_steps[0].input["limit"], json!(10));
}

#[tokio::test]
async fn foreach_collects_outputs_and_the_last_step_is_the_default_output() {
    let registry = Arc::new(SkillTable::new());
    evo_host::tools::BuiltinTools::default()
        .register(&registry)
        .unwrap();
    register_composite(
        &registry,
        json!({
            "name": "squares", "description": "Squares each number.", "mode": "composite",
            "input": { "type": "object", "properties": { "numbers": { "type": "array", "items": { "type": "number" } } } },
            "pipeline": [
                { "step": "each", "skill": "calculate", "input": { "expression": "{{item}} ^ 2" }, "foreach": "{{input.numbers}}" },
                { "step": "total", "skill": "calculate", "input": { "expression": "{{steps.each | pluck:result | join:' + '}}" } }
            ]
        }),
    );
    let ctx = Arc::new(Kernel::new(registry)).context(RunOptions::default());
    let out = ctx
        .call_full("squares", json!({ "numbers": [1, 2, 3] }))
        .await
        .unwrap();
    assert_eq!(
        out.output,
        json!({ "result": 14 }),
        "no outputMapping: the last step's output"
    );
    let ids: Vec<&str> = out
        .intermediate_steps
        .iter()
        .map(|s| s.step_id.as_str())
        .collect();
    assert_eq!(ids, ["each[0]", "each[1]", "each[2]", "total"]);
    assert_eq!(
        out.intermediate_steps[3].input,
        json!({ "expression": "1 + 4 + 9" })
    );

    let err = ctx
        .call("squares", json!({ "numbers": [1, -0.5, "x"] }))
        .await
        .unwrap_err();
    assert_eq!(
        err.code(),
        "SKILL_VALIDATION_FAILED",
        "gate 1 of the composite itself"
    );

    let err = ctx
        .call("squares", json!({ "numbers": [] }))
        .await
        .unwrap_err();
    // An empty foreach gives []; joining gives "", and calculate refuses an empty expression.
    assert_eq!(err.code(), "SKILL_VALIDATION_FAILED");
    assert!(
        err.to_string()
            .starts_with("squares: step `total` failed: calculate input does not match its schema"),
        "{err}"
    );
}
