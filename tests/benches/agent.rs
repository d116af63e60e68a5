//! `cargo bench -p evo-tests --bench agent`
//!
//! The agent kernel's own cost per run, model time excluded: a `single_skill` run
//! (routing, one built-in call, the answer) with recall and capture on a 10k-entry memory,
//! against a model that answers instantly. Floor, in the same run: the two model requests
//! alone, answered instantly by the same in-memory model. Budget: run − floor < 2 ms p50.
//!
//! Each run is checked once before it is timed (the answer, and `calculate`'s result).
//!
//! Also prints the bytes a message costs (router request + answer request, tool
//! definitions included) at 60 and 1,000 skills, every skill offered next to the
//! shortlist, and how often the skill a message asks for is on the shortlist.

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use criterion::{Criterion, criterion_group};
use evo_host::agent::Agent;
use evo_host::llm::scripted::ScriptedProvider;
use evo_host::llm::{
    ChatOptions, EventStream, LlmEvent, LlmProvider, Message, Role, collect, event_channel,
};
use evo_host::memory::{Category, MemoryManager, Source};
use evo_host::skill::kernel::Kernel;
use evo_host::skill::kernel::table::SkillTable;
use evo_host::skill::observe::events::{EventSink, RunEvent};
use evo_host::tools::BuiltinTools;
use evo_tests::catalogue::{catalogue, generated_skill, shortlisting_agent};
use evo_tests::figures::Recorder;
use serde_json::json;

const ROUTING: &str = r#"{"intents":[{"name":"ask_question","confidence":0.9}],"routing":{"strategy":"single_skill","skills":[{"name":"calculate","input":{"expression":"sqrt(144) + 10"},"reason":"math"}]}}"#;

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

    let registry = Arc::new(SkillTable::new());
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
    let registry = Arc::new(SkillTable::new());
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

/// The code this bench measures: a change under these paths makes its record stale.
const PATHS: &[&str] = &[
    "host/src/agent",
    "host/src/llm",
    "host/src/skill",
    "host/src/memory",
    "host/src/packages/index",
    "tests/benches/agent.rs",
    "tests/src/catalogue.rs",
];

/// Where this bench's printed figures are recorded: `bench-results/agent.json`.
fn recorder() -> Recorder {
    Recorder::new("agent", "./scripts/bench agent", PATHS)
}

/// Bytes of one request as it goes on the wire: every message's text, the tool
/// definitions (name, description, input schema) offered with it, and the output
/// schema a request without tools carries (as the OpenAI-compatible provider sends it,
/// `response_format`).
fn request_bytes(messages: &[Message], options: &ChatOptions) -> usize {
    let text: usize = messages.iter().map(|m| m.joined_text().len()).sum();
    let tools: usize = options
        .tools
        .iter()
        .map(|t| {
            json!({ "name": t.name, "description": t.description, "input_schema": t.parameters })
                .to_string()
                .len()
        })
        .sum();
    let schema = options
        .output_schema
        .as_ref()
        .filter(|_| options.tools.is_empty())
        .map_or(0, |schema| {
            json!({ "type": "json_schema", "json_schema": { "name": "output", "schema": schema, "strict": false } })
                .to_string()
                .len()
        });
    text + tools + schema
}

/// Progressive disclosure, in bytes per message (router request + answer request), at
/// 60 and 1,000 skills: every skill offered next to the shortlist; and how often the
/// skill a message asks for is on the shortlist (the router can only route to what it
/// is shown).
fn tokens(_: &mut Criterion) {
    let rec = recorder();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    for total in [60usize, 1_000] {
        let (registry, generated) = catalogue(total);
        let memory_dir = tempfile::tempdir().expect("tempdir");
        // One run with a shortlist of `shortlist`, the router answering `routing`: the
        // requests the model got.
        let run_once = |shortlist: usize, routing: &str, message: &str| {
            let provider = ScriptedProvider::from_json(
                "bench",
                &json!({ "responses": [routing, "It is 22."] }).to_string(),
            )
            .expect("script");
            let agent =
                shortlisting_agent(&registry, provider.clone(), shortlist, memory_dir.path());
            rt.block_on(agent.run(message, EventSink::new(|_| {})))
                .expect("runs");
            provider.requests()
        };
        // Each strategy against itself: the same router answer and the same answer path,
        // with every skill offered and with the shortlist. A `single_skill` answer never
        // carries tools, so comparing it with a `multi_skill` baseline (whose answer
        // carries every tool) would count tools it never sends as saved.
        let multi = r#"{"intents":[{"name":"ask_question","confidence":0.9}],"routing":{"strategy":"multi_skill","skills":[]}}"#;
        for (strategy, routing) in [("single_skill", ROUTING), ("multi_skill", multi)] {
            let mut baseline = 0;
            for (label, shortlist) in [
                ("every skill offered", usize::MAX),
                ("shortlist", evo_host::agent::DEFAULT_SHORTLIST),
            ] {
                let requests = run_once(shortlist, routing, "what is sqrt(144) + 10?");
                let router = request_bytes(&requests[0].0, &requests[0].1);
                let answer = request_bytes(&requests[1].0, &requests[1].1);
                if baseline == 0 {
                    baseline = router + answer;
                }
                let saved = 100.0 * (1.0 - (router + answer) as f64 / baseline as f64);
                println!(
                    "tokens, {total} skills, {strategy}, {label}: router {router} B, answer {answer} B (tools: {}), total {} B, saved {saved:.1} % against {strategy} with every skill offered",
                    requests[1].1.tools.len(),
                    router + answer,
                );
                let key = format!(
                    "bytes-{total}-{strategy}-{}",
                    if shortlist == usize::MAX {
                        "all"
                    } else {
                        "shortlist"
                    }
                );
                rec.value(&key, (router + answer) as f64, "B");
                rec.value(&format!("{key}-router"), router as f64, "B");
                if shortlist != usize::MAX {
                    rec.value(&format!("saved-{total}-{strategy}"), saved, "%");
                }
            }
        }
        // Routing accuracy's precondition: the skill a message asks for is shown.
        let scenarios: Vec<usize> = (0..generated).step_by((generated / 40).max(1)).collect();
        let mut shown = 0;
        for &i in &scenarios {
            let (name, _, message) = generated_skill(i);
            let requests = run_once(evo_host::agent::DEFAULT_SHORTLIST, multi, &message);
            let offered = &requests[1].1.tools;
            shown += usize::from(offered.iter().any(|t| t.name == name));
        }
        rec.value(
            &format!("shown-{total}"),
            100.0 * shown as f64 / scenarios.len() as f64,
            "%",
        );
        println!(
            "tokens, {total} skills: the asked-for skill on the shortlist of {} for {shown} of {} scenario messages ({:.0} %)",
            evo_host::agent::DEFAULT_SHORTLIST,
            scenarios.len(),
            100.0 * shown as f64 / scenarios.len() as f64
        );
    }
}

criterion_group!(benches, run_overhead, tokens);
evo_tests::recorded_main!("agent", PATHS, benches);
