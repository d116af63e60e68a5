//! `cargo bench -p evo-tests --bench kernel`
//!
//! The kernel's own cost, next to its floor in the same run:
//!
//! - `ctx.call` on a no-op built-in (lookup, defaults, gate 1, timeout, gate 2, stats,
//!   events) vs calling the same executor directly. Budget: < 5 µs p50 of overhead.
//! - Rendering the research-and-summarise pipeline's step inputs and output mapping (compiled once).
//! - Validating a 20-field input: gate 1 with its report vs `jsonschema`'s bare
//!   `is_valid` on the same compiled schema.
//!
//! Every row checks its result once before it is timed.

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, criterion_group};
use evo_host::skill::kernel::executor::SkillOutput;
use evo_host::skill::kernel::table::SkillTable;
use evo_host::skill::kernel::{Kernel, RunOptions};
use evo_host::skill::template::ValueTemplate;
use evo_host::skill::validate::Schema;
use evo_tests::kernel::register;
use serde_json::{Value, json};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime")
}

fn call_overhead(c: &mut Criterion) {
    let rt = runtime();
    let registry = Arc::new(SkillTable::new());
    register(
        &registry,
        json!({
            "name": "noop", "description": "Returns its input.",
            "input": { "type": "object", "properties": { "n": { "type": "number", "default": 1 } } },
            "output": { "type": "object", "properties": { "n": { "type": "number" } } }
        }),
        |input, _ctx| async move { Ok(input) },
    );
    let kernel = Arc::new(Kernel::new(registry.clone()));
    let ctx = kernel.context(RunOptions::default());
    let skill = registry.get("noop").expect("registered");
    let input = json!({ "n": 7 });

    let direct = rt
        .block_on(skill.executor.execute(input.clone(), ctx.clone()))
        .expect("runs");
    assert_eq!(direct.output, input);
    assert_eq!(
        rt.block_on(ctx.call("noop", input.clone())).expect("runs"),
        input
    );
    let mut group = c.benchmark_group("ctx_call");
    group.bench_function("floor: executor directly", |b| {
        b.iter(|| {
            let out: SkillOutput = rt
                .block_on(
                    skill
                        .executor
                        .execute(black_box(input.clone()), ctx.clone()),
                )
                .expect("runs");
            black_box(out)
        });
    });
    group.bench_function("evo: ctx.call with gates, stats, events", |b| {
        b.iter(|| {
            black_box(
                rt.block_on(ctx.call("noop", black_box(input.clone())))
                    .expect("runs"),
            )
        });
    });
    group.finish();
}

fn template_render(c: &mut Criterion) {
    // The research_and_summarize pipeline's step inputs and output mapping.
    let pipeline = json!({
        "search": { "query": "{{input.topic}}", "limit": "{{input.limit}}" },
        "summarize": { "text": "{{steps.search.results | pluck:snippet | join:\\n\\n}}" },
        "condition": "{{steps.search.count > 0}}",
        "outputMapping": {
            "summary": "{{steps.summarize.summary || '未找到相关内容'}}",
            "sources": "{{steps.search.results}}",
            "count": "{{steps.search.count}}"
        }
    });
    let results: Vec<Value> = (0..10)
        .map(|i| json!({ "id": format!("m{i}"), "snippet": format!("snippet number {i} about the plan"), "score": 0.5 }))
        .collect();
    let scope = json!({
        "input": { "topic": "the plan", "limit": 10 },
        "steps": { "search": { "results": results, "count": 10 }, "summarize": { "summary": "a summary" } }
    });
    let compiled = ValueTemplate::compile(&pipeline).expect("compiles");
    let rendered = compiled.render(&scope).expect("renders");
    assert_eq!(
        rendered["summarize"]["text"]
            .as_str()
            .map(|t| t.split("\n\n").count()),
        Some(10)
    );
    assert_eq!(rendered["condition"], true);
    assert_eq!(rendered["outputMapping"]["summary"], "a summary");
    assert_eq!(rendered["outputMapping"]["count"], 10);
    let mut group = c.benchmark_group("template");
    group.bench_function("render research_and_summarize (compiled once)", |b| {
        b.iter(|| black_box(compiled.render(black_box(&scope)).expect("renders")));
    });
    group.bench_function("compile + render research_and_summarize", |b| {
        b.iter(|| {
            let compiled = ValueTemplate::compile(black_box(&pipeline)).expect("compiles");
            black_box(compiled.render(&scope).expect("renders"))
        });
    });
    group.finish();
}

fn validation(c: &mut Criterion) {
    let mut properties = serde_json::Map::new();
    let mut input = serde_json::Map::new();
    for i in 0..20 {
        let (schema, value) = match i % 4 {
            0 => (
                json!({ "type": "string", "minLength": 1 }),
                json!(format!("value {i}")),
            ),
            1 => (
                json!({ "type": "number", "minimum": 0, "maximum": 100 }),
                json!(i),
            ),
            2 => (
                json!({ "type": "string", "enum": ["a", "b", "c"] }),
                json!("b"),
            ),
            _ => (
                json!({ "type": "array", "items": { "type": "string" } }),
                json!(["x", "y"]),
            ),
        };
        properties.insert(format!("field{i}"), schema);
        input.insert(format!("field{i}"), value);
    }
    let required: Vec<String> = properties.keys().cloned().collect();
    let schema_json = json!({ "type": "object", "properties": properties, "required": required });
    let schema = Schema::compile(&schema_json).expect("compiles");
    let valid = Value::Object(input);
    let mut invalid = valid.clone();
    invalid["field1"] = json!("not a number");
    invalid["field2"] = json!("d");

    assert!(schema.is_valid(&valid));
    assert!(schema.check(&valid).is_empty());
    assert_eq!(schema.check(&invalid).len(), 2);
    let mut group = c.benchmark_group("validate_20_fields");
    group.bench_function("floor: jsonschema is_valid", |b| {
        b.iter(|| black_box(schema.is_valid(black_box(&valid))));
    });
    group.bench_function("evo: defaults + check (valid)", |b| {
        b.iter(|| {
            let mut value = valid.clone();
            schema.apply_defaults(&mut value);
            black_box(schema.check(&value))
        });
    });
    group.bench_function("evo: check with report (2 violations)", |b| {
        b.iter(|| black_box(schema.check(black_box(&invalid))));
    });
    group.finish();
}

criterion_group!(benches, call_overhead, template_render, validation);
/// The code this bench measures: a change under these paths makes its record stale.
const PATHS: &[&str] = &["host/src/skill", "expr", "tests/benches/kernel.rs"];

evo_tests::recorded_main!("kernel", PATHS, benches);
