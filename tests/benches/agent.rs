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

use criterion::{Criterion, criterion_group};
use evo_host::agent::Agent;
use evo_host::agent::AgentOptions;
use evo_host::llm::{
    ChatOptions, EventStream, LlmEvent, LlmProvider, Message, Role, collect, event_channel,
};
use evo_host::memory::{Category, MemoryManager, Source};
use evo_host::skill::kernel::Kernel;
use evo_host::skill::kernel::table::SkillTable;
use evo_host::skill::observe::events::{EventSink, RunEvent};
use evo_host::tools::BuiltinTools;
use evo_tests::catalogue::{catalogue, generated_skill, indexed_agent};
use evo_tests::figures::Recorder;
use serde_json::json;

const MULTI: &str = r#"{"intents":[{"name":"ask_question","confidence":0.9}],"routing":{"strategy":"multi_skill","skills":[]}}"#;
const ROUTING: &str = r#"{"intents":[{"name":"ask_question","confidence":0.9}],"routing":{"strategy":"single_skill","skills":[{"name":"calculate","input":{"expression":"sqrt(144) + 10"},"reason":"math"}]}}"#;

/// A request as the model got it.
type Request = (Vec<Message>, ChatOptions);

/// The input the model writes when it takes `calculate`, the index's decisive pick.
const TAKEN: &str = r#"{"use_tool":true,"input":{"expression":"sqrt(144) + 10"}}"#;

/// A model that answers instantly and forever, each request by its kind: the router's
/// with `routing`, the one offering the index's decisive pick with [`TAKEN`], any other
/// with the answer. Its cost (a look at the request, a channel and two events) is the
/// floor's. With `record`, it keeps every request.
#[derive(Debug)]
struct Instant {
    routing: &'static str,
    record: Option<std::sync::Mutex<Vec<Request>>>,
}

impl Instant {
    fn new(routing: &'static str) -> Self {
        Self {
            routing,
            record: None,
        }
    }

    fn recording(routing: &'static str) -> Self {
        Self {
            routing,
            record: Some(std::sync::Mutex::default()),
        }
    }

    fn requests(&self) -> Vec<Request> {
        self.record
            .as_ref()
            .map(|r| r.lock().expect("lock").clone())
            .unwrap_or_default()
    }
}

impl LlmProvider for Instant {
    fn describe(&self) -> String {
        "bench:instant".into()
    }

    fn chat(&self, messages: Vec<Message>, options: ChatOptions) -> EventStream {
        let properties = options
            .output_schema
            .as_ref()
            .and_then(|s| s.get("properties"));
        let text = match properties {
            Some(p) if p.get("routing").is_some() => self.routing,
            Some(p) if p.get("use_tool").is_some() => TAKEN,
            _ => "It is 22.",
        };
        if let Some(record) = &self.record {
            record.lock().expect("lock").push((messages, options));
        }
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

/// Runs `agent` once and checks it: the answer, and `calculate` called with success.
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
    // Routed by the router, or taken without it where the index's pick is decisive:
    // either way `calculate` answers.
    let results = results.lock().expect("lock");
    assert_eq!(
        results.last(),
        Some(&("calculate".to_owned(), Some(22.0))),
        "{results:?}"
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
        Arc::new(Instant::new(ROUTING)),
    )
    .expect("agent")
    .with_memory(memory);
    let floor = Instant::new(ROUTING);
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
        Arc::new(Instant::new(ROUTING)),
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
        // One run of `message` with `options`, the router answering `routing`: every
        // request the model got.
        let run_once = |options: AgentOptions, routing: &'static str, message: &str| {
            let provider = Arc::new(Instant::recording(routing));
            let agent = indexed_agent(&registry, provider.clone(), options, memory_dir.path());
            rt.block_on(agent.run(message, EventSink::new(|_| {})))
                .expect("runs");
            provider.requests()
        };
        let bytes = |requests: &[Request]| -> usize {
            requests.iter().map(|(m, o)| request_bytes(m, o)).sum()
        };
        // The baseline: the router decides, shown every skill (no progressive
        // disclosure). Evo: the shortlist, and no router request where the index's pick
        // is decisive (the model, shown that skill alone, takes it).
        let every_skill = AgentOptions {
            shortlist: usize::MAX,
            decisive_margin: None,
            ..AgentOptions::default()
        };
        // Each strategy against itself: the same router answer and the same answer
        // path. A `single_skill` answer never carries tools, so comparing it with a
        // `multi_skill` baseline (whose answer carries every tool) would count tools it
        // never sends as saved.
        for (strategy, routing) in [("single_skill", ROUTING), ("multi_skill", MULTI)] {
            let all = run_once(every_skill.clone(), routing, "what is sqrt(144) + 10?");
            let evo = run_once(AgentOptions::default(), routing, "what is sqrt(144) + 10?");
            let (baseline, spent) = (bytes(&all), bytes(&evo));
            let router = request_bytes(&all[0].0, &all[0].1);
            let saved = 100.0 * (1.0 - spent as f64 / baseline as f64);
            println!(
                "tokens, {total} skills, {strategy}: every skill offered {baseline} B (router {router} B) in {} requests; Evo {spent} B in {} requests; saved {saved:.1} %",
                all.len(),
                evo.len(),
            );
            rec.value(
                &format!("bytes-{total}-{strategy}-all"),
                baseline as f64,
                "B",
            );
            rec.value(
                &format!("bytes-{total}-{strategy}-all-router"),
                router as f64,
                "B",
            );
            rec.value(
                &format!("bytes-{total}-{strategy}-shortlist"),
                spent as f64,
                "B",
            );
            rec.value(&format!("saved-{total}-{strategy}"), saved, "%");
        }
        // A message the index is not decisive about (a paraphrase): the router decides,
        // shown the shortlist. Its request alone is compared (what follows depends on
        // whether the routed skill is among those shown).
        let undecided = evo_tests::catalogue::PARAPHRASES[0].1;
        let all = run_once(every_skill.clone(), ROUTING, undecided);
        let evo = run_once(AgentOptions::default(), ROUTING, undecided);
        let is_router = |(_, o): &Request| {
            o.output_schema
                .as_ref()
                .is_some_and(|s| s["properties"].get("routing").is_some())
        };
        assert!(is_router(&evo[0]), "the router decides {undecided:?}");
        let (baseline, router) = (
            request_bytes(&all[0].0, &all[0].1),
            request_bytes(&evo[0].0, &evo[0].1),
        );
        let saved = 100.0 * (1.0 - router as f64 / baseline as f64);
        rec.value(
            &format!("bytes-{total}-undecided-router-all"),
            baseline as f64,
            "B",
        );
        rec.value(
            &format!("bytes-{total}-undecided-router"),
            router as f64,
            "B",
        );
        rec.value(&format!("saved-{total}-undecided-router"), saved, "%");
        println!(
            "tokens, {total} skills, the router's request for a message the index is not decisive about ({undecided:?}): every skill shown {baseline} B, the shortlist {router} B, saved {saved:.1} %"
        );
        // How often the index is decisive on the scenario messages, and how often
        // rightly: the model is offered the pick alone.
        let mut decisive = 0;
        let mut right = 0;
        // Routing accuracy's precondition: the skill a message asks for is shown.
        let scenarios: Vec<usize> = (0..generated).step_by((generated / 40).max(1)).collect();
        let mut shown = 0;
        let router_only = AgentOptions {
            decisive_margin: None,
            ..AgentOptions::default()
        };
        for &i in &scenarios {
            let (name, _, message) = generated_skill(i);
            let requests = run_once(router_only.clone(), MULTI, &message);
            let offered = &requests[1].1.tools;
            shown += usize::from(offered.iter().any(|t| t.name == name));
            let first = &run_once(AgentOptions::default(), MULTI, &message)[0];
            if !is_router(first) {
                decisive += 1;
                let prompt: String = first.0.iter().map(|m| m.joined_text()).collect();
                right += usize::from(prompt.starts_with(&format!("Tool {name}:")));
            }
        }
        rec.value(
            &format!("decisive-{total}"),
            100.0 * decisive as f64 / scenarios.len() as f64,
            "%",
        );
        rec.value(
            &format!("decisive-right-{total}"),
            100.0 * right as f64 / decisive.max(1) as f64,
            "%",
        );
        println!(
            "tokens, {total} skills: the index decisive for {decisive} of {} scenario messages, rightly for {right}",
            scenarios.len()
        );
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
