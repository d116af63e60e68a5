//! `cargo bench -p evo-tests --bench routing`
//!
//! Routing on words a skill's description does not use (`evo_tests::routing`): 63
//! paraphrases asking for the built-in tools and the example skills, 20 messages that
//! need no skill, 10 adversarial ones. For each embedder the skill index can rank with
//! (the built-in hash, MiniLM): the index's top-1 and top-3 on the paraphrases; then the
//! margin between its first and second pick at which the agent routes without asking
//! the model: fitted on one half of the set (the smallest margin at which no message of
//! that half is routed wrongly; the bench fails if it is above the agent's
//! `DECISIVE_MARGIN`), and the agent's margin measured on the other half: how many
//! paraphrases it routes, how many of those rightly, and how many messages that need no
//! skill or are adversarial it routes (and to a tool that changes something, which the
//! agent's rule, only skills that read, should never allow).
//!
//! Then the agent itself, end to end, on the measuring half with the local model
//! (SmolLM2, `scripts/smollm.sh`) and MiniLM: the skill each message got run, whether
//! the answer states that skill's result (every field of it), and whether any
//! adversarial message got a tool that changes something run. The catalogue's skills
//! answer with their input, so a result is what the model wrote for it; the example
//! skills are listed without their input schemas (the catalogue is built without
//! compiling them), so what the model writes for them is a guess the agent refuses.
//!
//! The MiniLM rows need the weights (`scripts/minilm.sh`, which `./scripts/bench` runs);
//! without them those rows say so and are skipped.

use std::sync::Arc;

use evo_host::agent::DECISIVE_MARGIN;
use evo_host::agent::intent::SMALL_MODEL_MIN_SCORE;
use evo_host::retrieval::embed::{Embedder, HashEmbedder};
use evo_host::skill::kernel::table::SkillTable;
use evo_host::skill::permission::Permission;
use evo_tests::figures::Recorder;
use evo_tests::routing::{self, DANGEROUS, Half, Want};

/// The code this bench measures: a change under these paths makes its record stale.
const PATHS: &[&str] = &[
    "host/src/packages/index.rs",
    "host/src/retrieval",
    "host/src/memory/minilm.rs",
    "host/src/agent/rank.rs",
    "host/src/agent/mod.rs",
    "host/src/agent/options.rs",
    "host/src/agent/intent.rs",
    "host/src/agent/small",
    "host/src/llm/local",
    "host/src/tools",
    "tests/src/routing",
    "tests/benches/routing.rs",
];

/// The index's ranking of one message: `(skill, score)`, best first.
type Ranked = Vec<(String, f32)>;

/// The skill the agent takes without asking the model (see
/// `AgentOptions::decisive_margin`): the first pick, when it leads the second by
/// `margin` and only reads.
fn routed<'a>(table: &SkillTable, ranked: &'a Ranked, margin: f32) -> Option<&'a str> {
    let first = ranked.first()?;
    let second = ranked.get(1).map_or(0.0, |s| s.1);
    let reads = table
        .get(&first.0)
        .is_some_and(|s| s.permission() <= Permission::ReadOnly);
    (first.1 - second >= margin && reads).then_some(first.0.as_str())
}

/// The smallest margin at which the agent routes no message of `fit` wrongly.
fn fit_margin(table: &SkillTable, fit: &[(Want, Ranked)]) -> f32 {
    let mut margin = 0.0_f32;
    for (want, ranked) in fit {
        let Some(first) = ranked.first() else {
            continue;
        };
        let gap = first.1 - ranked.get(1).map_or(0.0, |s| s.1);
        if routed(table, ranked, 0.0).is_some() && *want != Want::Skill(leak(&first.0)) {
            // Routing this one is wrong: the margin must be above its gap.
            margin = margin.max(gap + 1e-4);
        }
    }
    margin
}

/// What a small model's run gains on `fit` when it calls the first pick from
/// `threshold` up (see `SMALL_MODEL_MIN_SCORE`): each right call counts one, each call of
/// the wrong skill or for a message that needs none minus one (adversarial messages are
/// the permissions' to stop).
fn small_model_net(fit: &[(Want, Ranked)], threshold: f32) -> i32 {
    fit.iter()
        .filter_map(|(want, ranked)| Some((want, ranked.first()?)))
        .filter(|(_, first)| first.1 >= threshold)
        .map(|(want, first)| match want {
            Want::Skill(skill) if first.0 == *skill => 1,
            Want::Adversarial => 0,
            _ => -1,
        })
        .sum()
}

/// The threshold that gains the most on the fitting halves of every embedder together
/// (one constant serves them all), and that gain; of equal gains, the highest.
fn fit_min_score(fits: &[Vec<(Want, Ranked)>]) -> (f32, i32) {
    let net = |threshold: f32| fits.iter().map(|fit| small_model_net(fit, threshold)).sum();
    let candidates = fits
        .iter()
        .flatten()
        .filter_map(|(_, ranked)| ranked.first().map(|first| first.1));
    let mut best = (1.0_f32, net(1.0));
    for at in candidates {
        let gain = net(at);
        if gain > best.1 || (gain == best.1 && at > best.0) {
            best = (at, gain);
        }
    }
    best
}

/// A skill name as the set spells it (the set's names are `'static`).
fn leak(name: &str) -> &'static str {
    routing::KEY_WORDS
        .iter()
        .map(|(n, _)| *n)
        .find(|n| *n == name)
        .unwrap_or("")
}

/// Measures the index with `embedder`; the ranked fitting half, for the small model's
/// threshold.
fn measure(recorder: &Recorder, name: &str, embedder: Arc<dyn Embedder>) -> Vec<(Want, Ranked)> {
    let table = routing::catalogue();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut index = routing::index(&table, embedder.clone(), dir.path());
    let rank = |index: &mut evo_host::packages::index::SkillIndex, message: &str| -> Ranked {
        index
            .search_skills(message, 3)
            .expect("ranks")
            .into_iter()
            .map(|h| (h.name, h.score))
            .collect()
    };
    // Checked before anything is counted: every skill a message asks for is in the
    // catalogue, and the index ranks it first for its own description.
    for (name, _) in routing::KEY_WORDS {
        let skill = table
            .get(name)
            .unwrap_or_else(|| panic!("{name} is missing"));
        let first = rank(&mut index, &skill.meta.description);
        assert_eq!(first[0].0, name, "{first:?}");
    }
    // Each half ranked once: what a weight or threshold of the index is chosen on, and
    // what it is measured on.
    let mut ranked_half = |half| {
        routing::half(half)
            .map(|(message, want)| {
                let ranked = rank(&mut index, message);
                if std::env::var_os("EVO_BENCH_SHOW").is_some() {
                    println!("{name} {want:?} <- {message:?}: {ranked:?}");
                }
                (want, ranked)
            })
            .collect::<Vec<_>>()
    };
    let fit = ranked_half(Half::Fit);
    let measured = ranked_half(Half::Measure);
    // Each half's top-1 and top-3, and the whole set's.
    let picks = [&fit, &measured].map(|half| {
        let mut row = [0_usize; 3];
        for (want, ranked) in half.iter() {
            let Want::Skill(skill) = want else { continue };
            row[0] += 1;
            row[1] += usize::from(ranked.first().is_some_and(|r| r.0 == *skill));
            row[2] += usize::from(ranked.iter().any(|r| r.0 == *skill));
        }
        row
    });
    let [fit_picks, measure_picks] = picks;
    let [asked, top1, top3] = [0, 1, 2].map(|i| fit_picks[i] + measure_picks[i]);
    let share = |n: usize, of: usize| 100.0 * n as f64 / of.max(1) as f64;
    recorder.value(&format!("{name}: index top-1"), share(top1, asked), "%");
    recorder.value(&format!("{name}: index top-3"), share(top3, asked), "%");
    for (half, [n, one, three]) in [("fitting", fit_picks), ("measuring", measure_picks)] {
        recorder.value(
            &format!("{name}: index top-1, {half} half"),
            share(one, n),
            "%",
        );
        recorder.value(
            &format!("{name}: index top-3, {half} half"),
            share(three, n),
            "%",
        );
    }
    recorder.value(&format!("{name}: paraphrases"), asked as f64, "count");

    let fitted = fit_margin(&table, &fit);
    // The agent's margin must be at least what this half asks for.
    assert!(
        fitted <= DECISIVE_MARGIN,
        "{name}: the fitting half needs a margin of {fitted:.3}, above the agent's {DECISIVE_MARGIN}: raise DECISIVE_MARGIN"
    );
    let margin = DECISIVE_MARGIN;
    let (mut skills, mut decided, mut right, mut wrong_free, mut dangerous) = (0, 0, 0, 0, 0);
    for (want, ranked) in &measured {
        let pick = routed(&table, ranked, margin);
        match want {
            Want::Skill(skill) => {
                skills += 1;
                decided += usize::from(pick.is_some());
                right += usize::from(pick == Some(*skill));
            }
            Want::Nothing | Want::Adversarial => {
                wrong_free += usize::from(pick.is_some());
                if pick.is_some() && std::env::var_os("EVO_BENCH_SHOW").is_some() {
                    println!("{name}: {want:?} routed to {pick:?}: {ranked:?}");
                }
                dangerous += usize::from(
                    *want == Want::Adversarial && pick.is_some_and(|p| DANGEROUS.contains(&p)),
                );
            }
        }
    }
    // A small model's run: the first pick when it scores at least the threshold.
    let (mut small_called, mut small_right, mut small_free) = (0, 0, 0);
    for (want, ranked) in &measured {
        let pick = ranked
            .first()
            .filter(|first| first.1 >= SMALL_MODEL_MIN_SCORE);
        match want {
            Want::Skill(skill) => {
                small_called += usize::from(pick.is_some());
                small_right += usize::from(pick.is_some_and(|p| p.0 == *skill));
            }
            Want::Nothing => small_free += usize::from(pick.is_some()),
            Want::Adversarial => {}
        }
    }
    recorder.value(
        &format!("{name}: small model calls a skill"),
        share(small_called, skills),
        "%",
    );
    recorder.value(
        &format!("{name}: small model calls the right skill"),
        share(small_right, skills),
        "%",
    );
    recorder.value(
        &format!("{name}: small model calls a skill for a message that needs none"),
        small_free as f64,
        "count",
    );
    recorder.value(
        &format!("{name}: decisive margin (fitted)"),
        f64::from(fitted),
        "count",
    );
    recorder.value(
        &format!("{name}: routed without the model"),
        share(decided, skills),
        "%",
    );
    recorder.value(
        &format!("{name}: routed rightly, of those routed"),
        share(right, decided),
        "%",
    );
    recorder.value(
        &format!("{name}: no-skill or adversarial messages routed"),
        wrong_free as f64,
        "count",
    );
    recorder.value(
        &format!("{name}: adversarial messages routed to a tool that changes something"),
        dangerous as f64,
        "count",
    );
    println!(
        "| {name} | {:.0} % ({:.0} / {:.0} %) | {:.0} % ({:.0} / {:.0} %) | {fitted:.3} | {decided} of {skills} ({:.0} %) | {right} of {decided} | {wrong_free} | {dangerous} | {small_right} of {small_called} of {skills} | {small_free} |",
        share(top1, asked),
        share(fit_picks[1], fit_picks[0]),
        share(measure_picks[1], measure_picks[0]),
        share(top3, asked),
        share(fit_picks[2], fit_picks[0]),
        share(measure_picks[2], measure_picks[0]),
        share(decided, skills),
    );
    fit
}

/// The agent with the local model, end to end on the measuring half (see the module's
/// documentation), ranking with `embedder`.
fn end_to_end(recorder: &Recorder, name: &str, embedder: Arc<dyn Embedder>) {
    use evo_host::agent::Agent;
    use evo_host::skill::kernel::Kernel;
    use evo_host::skill::observe::events::{EventSink, RunEvent};

    let Some(weights) = evo_tests::smollm_weights() else {
        println!(
            "{name}, the agent with the local model: not measured (EVO_TEST_SMOLLM_BIN is not set; ./scripts/bench installs the model)"
        );
        return;
    };
    let local = Arc::new(evo_host::llm::local::LocalProvider::new(weights).expect("the weights"));
    let table = routing::catalogue();
    let dir = tempfile::tempdir().expect("tempdir");
    let agent = Agent::new(Kernel::new(table.clone()), local)
        .expect("agent")
        .with_skill_index(routing::index(&table, embedder, dir.path()))
        .expect("index");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut asked = 0;
    // The right skill chosen (run, or refused for want of someone to confirm it), run,
    // and its result stated in the answer.
    let (mut chose, mut ran_right, mut stated) = (0, 0, 0);
    let (mut no_input, mut free_calls, mut dangerous) = (0, 0, 0);
    for (message, want) in routing::half(Half::Measure) {
        let events = Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = events.clone();
        let sink = EventSink::new(move |e| seen.lock().expect("events").push(e));
        let outcome = rt.block_on(agent.run(message, sink)).expect("runs");
        // The skills the run chose: each with its output when it ran and answered.
        let chosen: Vec<(String, Option<serde_json::Value>)> = events
            .lock()
            .expect("events")
            .iter()
            .filter_map(|e| match e {
                RunEvent::SkillResult {
                    skill,
                    is_error,
                    output,
                    ..
                } => Some((
                    skill.clone(),
                    (!is_error).then(|| output.clone().unwrap_or_default()),
                )),
                _ => None,
            })
            .collect();
        if std::env::var_os("EVO_BENCH_SHOW").is_some() {
            println!(
                "{name} end to end {want:?} <- {message:?}: {chosen:?}; {:?}",
                outcome.response
            );
        }
        let ran = |name: &str| chosen.iter().any(|(s, out)| s == name && out.is_some());
        match want {
            Want::Skill(skill) => {
                asked += 1;
                no_input += usize::from(outcome.response.starts_with("I could not do it: "));
                // Chosen: run, refused for want of a confirmation, or its input not written.
                chose += usize::from(
                    chosen.iter().any(|(s, _)| s == skill)
                        || outcome
                            .response
                            .starts_with(&format!("I could not do it: {skill} looked")),
                );
                let Some((_, Some(output))) =
                    chosen.iter().find(|(s, out)| s == skill && out.is_some())
                else {
                    continue;
                };
                ran_right += 1;
                // The answer states the result: every field's value is in it.
                let fields: Vec<String> = match output {
                    serde_json::Value::Object(fields) => fields
                        .values()
                        .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
                        .collect(),
                    other => vec![other.to_string()],
                };
                stated += usize::from(fields.iter().all(|f| outcome.response.contains(f.as_str())));
            }
            Want::Nothing => free_calls += usize::from(chosen.iter().any(|(s, _)| ran(s))),
            Want::Adversarial => {
                dangerous += usize::from(DANGEROUS.iter().any(|s| ran(s)));
            }
        }
    }
    let share = |n: usize, of: usize| 100.0 * n as f64 / of.max(1) as f64;
    let local = |what: &str| format!("{name}: the agent with the local model {what}");
    recorder.value(&local("chooses the right skill"), share(chose, asked), "%");
    recorder.value(&local("runs the right skill"), share(ran_right, asked), "%");
    recorder.value(
        &local("cannot write the input of the skill it chose"),
        share(no_input, asked),
        "%",
    );
    recorder.value(
        &local("states the result, of the right runs"),
        share(stated, ran_right),
        "%",
    );
    recorder.value(
        &local("runs a skill for a message that needs none"),
        free_calls as f64,
        "count",
    );
    recorder.value(
        &local("runs a tool that changes something for an adversarial message"),
        dangerous as f64,
        "count",
    );
    println!(
        "{name}, the agent with the local model on the measuring half: the right skill chosen for {chose} of {asked} paraphrases ({:.0} %), run for {ran_right} (the others change something and nobody can confirm them, or the model wrote no usable input: {no_input}), its result stated in {stated} of those; a skill run for {free_calls} messages that need none; {dangerous} adversarial messages got a tool that changes something run",
        share(chose, asked)
    );
}

fn main() {
    let recorder = Recorder::new("routing", "./scripts/bench routing", PATHS);
    recorder.value(
        "the agent's decisive margin",
        f64::from(DECISIVE_MARGIN),
        "count",
    );
    println!(
        "| embedder | index top-1 (fitting / measuring half) | top-3 (fitting / measuring) | margin fitted on one half | paraphrases of the other routed without the model | rightly | no-skill/adversarial routed | dangerous | small model: right picks, of its calls, of the paraphrases | its calls for no-skill messages |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let mut fits = vec![measure(&recorder, "hash", Arc::new(HashEmbedder))];
    match evo_host::memory::local::find_minilm()
        .and_then(|dir| evo_host::memory::minilm::MiniLmEmbedder::load(&dir))
    {
        Ok(minilm) => {
            let minilm: Arc<dyn Embedder> = Arc::new(minilm);
            fits.push(measure(&recorder, "MiniLM", minilm.clone()));
            end_to_end(&recorder, "MiniLM", minilm);
        }
        Err(e) => println!("MiniLM: not measured ({e})"),
    }
    let (fitted, gain) = fit_min_score(&fits);
    let at_constant: i32 = fits
        .iter()
        .map(|fit| small_model_net(fit, SMALL_MODEL_MIN_SCORE))
        .sum();
    println!(
        "small model's least score fitted on the fitting halves: {fitted:.3} (gain {gain}); the agent's {SMALL_MODEL_MIN_SCORE} gains {at_constant}"
    );
    recorder.value(
        "small model's least score (fitted)",
        f64::from(fitted),
        "count",
    );
    recorder.value(
        "the agent's small model's least score",
        f64::from(SMALL_MODEL_MIN_SCORE),
        "count",
    );
    assert_eq!(
        at_constant, gain,
        "SMALL_MODEL_MIN_SCORE gains less on the fitting halves than {fitted:.3}: set it to that"
    );
}
