//! `cargo bench -p evo-tests --bench agent`
//!
//! The agent kernel's own cost per run, model time excluded: a `single_skill` run
//! (routing, one built-in call, the answer) with recall and capture on a 10k-entry memory,
//! against a model that answers instantly. Floor, in the same run: the two model requests
//! alone, answered instantly by the same in-memory model. Budget: run − floor < 2 ms p50.
//!
//! Each run is checked once before it is timed (the answer, and `calculate`'s result).
//!
//! Also prints the router prompt's size with and without the skill shortlist for a host
//! with 60 skills: what progressive disclosure saves per message.

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use criterion::{Criterion, criterion_group, criterion_main};
use evo_host::agent::{Agent, AgentOptions};
use evo_host::llm::scripted::ScriptedProvider;
use evo_host::llm::{
    ChatOptions, EventStream, LlmEvent, LlmProvider, Message, Role, collect, event_channel,
};
use evo_host::memory::{Category, MemoryManager, Source};
use evo_host::skill::events::{EventSink, RunEvent};
use evo_host::skill::kernel::Kernel;
use evo_host::skill::registry::SkillRegistry;
use evo_host::tools::BuiltinTools;
use serde_json::json;

const ROUTING: &str = r#"{"intents":[{"name":"ask_question","confidence":0.9}],"routing":{"strategy":"single_skill","skills":[{"name":"calculate","input":{"expression":"sqrt(144) + 10"},"reason":"math"}]}}"#;

fn script(runs: usize) -> Arc<ScriptedProvider> {
    let responses: Vec<&str> = (0..runs).flat_map(|_| [ROUTING, "It is 22."]).collect();
    ScriptedProvider::from_json("bench", &json!({ "responses": responses }).to_string())
        .expect("script")
}

/// A model that answers instantly and forever: the routing, then the answer, in turn.
/// Its cost (a channel and two events) is the floor's.
#[derive(Debug, Default)]
struct Alternating(AtomicUsize);

impl LlmProvider for Alternating {
    fn describe(&self) -> String {
        "bench:alternating".into()
    }

    fn chat(&self, _: Vec<Message>, _: ChatOptions) -> EventStream {
        let text = if self.0.fetch_add(1, Ordering::Relaxed).is_multiple_of(2) {
            ROUTING
        } else {
            "It is 22."
        };
        let (tx, rx) = event_channel();
        let _ = tx.try_send(LlmEvent::Token {
            content: text.to_owned(),
        });
        let _ = tx.try_send(LlmEvent::Done {
            full_response: text.to_owned(),
        });
        rx
    }
}

/// Runs `agent` once and checks it: the answer, the router's call, and `calculate`
/// called with success.
fn check_run(rt: &tokio::runtime::Runtime, agent: &Agent) {
    let results = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = {
        let results = results.clone();
        EventSink::new(move |event| {
            if let RunEvent::SkillResult { skill, output, .. } = event {
                let result = output.and_then(|o| o["result"].as_f64());
                results.lock().expect("lock").push((skill, result));
            }
        })
    };
    let outcome = rt
        .block_on(agent.run("what is sqrt(144) + 10?", sink))
        .expect("runs");
    assert_eq!(outcome.response, "It is 22.");
    assert_eq!(
        *results.lock().expect("lock"),
        [
            ("intent_recognize".to_owned(), None),
            ("calculate".to_owned(), Some(22.0))
        ]
    );
}

fn run_overhead(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("tempdir");
    let memory = Arc::new(MemoryManager::open(dir.path()).expect("memory"));
    let texts: Vec<String> = (0..10_000)
        .map(|i| format!("fact {i}: project w{} uses w{}", i % 97, i % 89))
        .collect();
    let items: Vec<(&str, Category)> = texts.iter().map(|t| (t.as_str(), Category::Fact)).collect();
    memory.import(&items, Source::User).expect("imports");

    let registry = Arc::new(SkillRegistry::new());
    BuiltinTools::default()
        .register(&registry)
        .expect("builtins");
    let agent = Agent::new(
        Kernel::new(registry).with_memory(memory.clone()),
        Arc::new(Alternating::default()),
    )
    .expect("agent")
    .with_memory(memory);
    let floor = Alternating::default();
    check_run(&rt, &agent);

    let mut group = c.benchmark_group("agent_run");
    group.bench_function("floor: two requests to an instant model", |b| {
        b.iter(|| {
            rt.block_on(async {
                for _ in 0..2 {
                    let stream =
                        floor.chat(vec![Message::text(Role::User, "q")], ChatOptions::default());
                    black_box(collect(stream, |_| {}).await.expect("answers"));
                }
            });
        });
    });
    group.bench_function(
        "evo: single_skill run with recall and capture (10k memory)",
        |b| {
            b.iter(|| {
                let outcome = rt
                    .block_on(agent.run("what is sqrt(144) + 10?", EventSink::new(|_| {})))
                    .expect("runs");
                black_box(outcome)
            });
        },
    );

    // The same run on a host with 1,000 more skills, shortlisted by the skill index.
    let registry = Arc::new(SkillRegistry::new());
    BuiltinTools::default()
        .register(&registry)
        .expect("builtins");
    for i in 0..1_000 {
        evo_tests::kernel::register(
            &registry,
            json!({ "name": format!("skill-{i:04}"), "description": format!("Handles task {i} about topic w{} and w{}.", i % 97, i % 89) }),
            |_, _| async { Ok(json!({})) },
        );
    }
    let index = evo_host::packages::index::SkillIndex::new(
        evo_host::db::Db::open(dir.path()).expect("db"),
        Arc::new(evo_host::memory::HashEmbedder),
    );
    let memory = Arc::new(MemoryManager::open(dir.path()).expect("memory"));
    let big = Agent::new(
        Kernel::new(registry).with_memory(memory.clone()),
        Arc::new(Alternating::default()),
    )
    .expect("agent")
    .with_memory(memory)
    .with_skill_index(index)
    .expect("index syncs");
    check_run(&rt, &big);
    group.bench_function(
        "evo: same, 1,000 more skills shortlisted by the skill index",
        |b| {
            b.iter(|| {
                let outcome = rt
                    .block_on(big.run("what is sqrt(144) + 10?", EventSink::new(|_| {})))
                    .expect("runs");
                black_box(outcome)
            });
        },
    );
    group.finish();
}

fn shortlist_savings(_: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let registry = Arc::new(SkillRegistry::new());
    BuiltinTools::default()
        .register(&registry)
        .expect("builtins");
    for i in 0..58 {
        evo_tests::kernel::register(
            &registry,
            json!({ "name": format!("tool_{i:02}"), "description": format!(
                "Handles task family {i}: reads, transforms and reports data of kind {i} for the user's projects, with options for format and detail.") }),
            |input, _ctx| async move { Ok(input) },
        );
    }
    let mut sizes = Vec::new();
    for shortlist in [usize::MAX, evo_host::agent::DEFAULT_SHORTLIST] {
        let provider = script(1);
        let agent = Agent::new(Kernel::new(registry.clone()), provider.clone())
            .expect("agent")
            .with_options(AgentOptions {
                shortlist,
                ..AgentOptions::default()
            });
        rt.block_on(agent.run("what is sqrt(144) + 10?", EventSink::new(|_| {})))
            .expect("runs");
        let requests = provider.requests();
        let router = requests[0]
            .0
            .iter()
            .map(|m| m.joined_text().len())
            .sum::<usize>();
        let answer = requests[1]
            .0
            .iter()
            .map(|m| m.joined_text().len())
            .sum::<usize>();
        sizes.push((shortlist, router, answer));
    }
    for (shortlist, router, answer) in &sizes {
        let label = if *shortlist == usize::MAX {
            "all 60 skills".to_owned()
        } else {
            format!("shortlist of {shortlist}")
        };
        println!(
            "prompt size, {label}: router {router} chars (~{} tokens), answer {answer} chars (~{} tokens)",
            router / 4,
            answer / 4
        );
    }
}

criterion_group!(benches, run_overhead, shortlist_savings);
criterion_main!(benches);
