//! `cargo bench -p evo-tests --bench routing`
//!
//! Routing on words a skill's description does not use (`evo_tests::routing`): 63
//! paraphrases asking for the built-in tools and the example skills, 20 messages that
//! need no skill, 10 adversarial ones. For each embedder the skill index can rank with
//! (the built-in hash, MiniLM): the index's top-1 and top-3 on the paraphrases; then the
//! margin between its first and second pick at which the agent routes without asking
//! the model, fitted on one half of the set (the smallest margin at which no message of
//! that half is routed wrongly) and measured on the other: how many paraphrases it
//! routes, how many of those rightly, and how many messages that need no skill or are
//! adversarial it routes (and to a tool that changes something).
//!
//! The MiniLM rows need the weights (`scripts/minilm.sh`, which `./scripts/bench` runs);
//! without them those rows say so and are skipped.

use std::sync::Arc;

use evo_host::retrieval::embed::{Embedder, HashEmbedder};
use evo_tests::figures::Recorder;
use evo_tests::routing::{self, DANGEROUS, Half, MESSAGES, Want};

/// The code this bench measures: a change under these paths makes its record stale.
const PATHS: &[&str] = &[
    "host/src/packages/index.rs",
    "host/src/retrieval",
    "host/src/memory/minilm.rs",
    "host/src/agent/rank.rs",
    "tests/src/routing.rs",
    "tests/benches/routing.rs",
];

/// The index's ranking of one message: `(skill, score)`, best first.
type Ranked = Vec<(String, f32)>;

/// Whether routing `ranked`'s first pick at `margin` is wrong for `want`, and whether it
/// would run a tool that changes something where nothing should run.
fn routed(ranked: &Ranked, margin: f32) -> Option<&str> {
    let first = ranked.first()?;
    let second = ranked.get(1).map_or(0.0, |s| s.1);
    (first.1 - second >= margin).then_some(first.0.as_str())
}

/// The smallest margin at which no message of `fit` is routed wrongly.
fn fit_margin(fit: &[(Want, Ranked)]) -> f32 {
    let mut margin = 0.0_f32;
    for (want, ranked) in fit {
        let Some(first) = ranked.first() else {
            continue;
        };
        let gap = first.1 - ranked.get(1).map_or(0.0, |s| s.1);
        if *want != Want::Skill(leak(&first.0)) {
            // Routing this one is wrong: the margin must be above its gap.
            margin = margin.max(gap + 1e-4);
        }
    }
    margin
}

/// A skill name as the set spells it (the set's names are `'static`).
fn leak(name: &str) -> &'static str {
    routing::KEY_WORDS
        .iter()
        .map(|(n, _)| *n)
        .find(|n| *n == name)
        .unwrap_or("")
}

fn measure(recorder: &Recorder, name: &str, embedder: Arc<dyn Embedder>) {
    let table = routing::catalogue();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut index = routing::index(&table, embedder.clone(), dir.path());
    if std::env::var_os("EVO_BENCH_EXP").is_some() {
        let skills: Vec<(String, String)> = table
            .list()
            .into_iter()
            .filter(|s| s.is_exposed())
            .map(|s| {
                (
                    s.meta.name.clone(),
                    format!(
                        "{} {}",
                        s.meta.name.replace(['-', '_'], " "),
                        s.meta.description
                    ),
                )
            })
            .collect();
        let whole: Vec<Vec<f32>> = skills
            .iter()
            .map(|(_, t)| embedder.embed(&[t.as_str()]).unwrap().remove(0))
            .collect();
        let sentences: Vec<Vec<Vec<f32>>> = skills
            .iter()
            .map(|(n, t)| {
                let mut parts: Vec<String> = t
                    .split(|c| c == '.' || c == ';' || c == ':')
                    .map(str::trim)
                    .filter(|p| p.len() > 3)
                    .map(|p| format!("{} {p}", n.replace(['-', '_'], " ")))
                    .collect();
                parts.push(t.clone());
                parts
                    .iter()
                    .map(|p| embedder.embed(&[p.as_str()]).unwrap().remove(0))
                    .collect()
            })
            .collect();
        let (mut a1, mut b1, mut b3, mut n) = (0, 0, 0, 0);
        for (message, want) in MESSAGES {
            let Want::Skill(skill) = want else { continue };
            n += 1;
            let q = embedder.embed(&[message]).unwrap().remove(0);
            let mut by_whole: Vec<(f32, &str)> = skills
                .iter()
                .zip(&whole)
                .map(|((name, _), v)| (evo_host::retrieval::embed::dot(&q, v), name.as_str()))
                .collect();
            by_whole.sort_by(|a, b| b.0.total_cmp(&a.0));
            let mut by_max: Vec<(f32, &str)> = skills
                .iter()
                .zip(&sentences)
                .map(|((name, _), vs)| {
                    (
                        vs.iter()
                            .map(|v| evo_host::retrieval::embed::dot(&q, v))
                            .fold(-1.0, f32::max),
                        name.as_str(),
                    )
                })
                .collect();
            by_max.sort_by(|a, b| b.0.total_cmp(&a.0));
            a1 += usize::from(by_whole[0].1 == skill);
            b1 += usize::from(by_max[0].1 == skill);
            b3 += usize::from(by_max[..3].iter().any(|x| x.1 == skill));
        }
        println!("EXP {name}: whole top1 {a1}/{n}, max-sentence top1 {b1}/{n} top3 {b3}/{n}");
    }

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
    let (mut top1, mut top3, mut asked) = (0, 0, 0);
    for (message, want) in MESSAGES {
        let Want::Skill(skill) = want else { continue };
        let ranked = rank(&mut index, message);
        asked += 1;
        if std::env::var_os("EVO_BENCH_SHOW").is_some() {
            println!("{name} {skill:>16} <- {message:?}: {ranked:?}");
        }
        top1 += usize::from(ranked.first().is_some_and(|r| r.0 == skill));
        top3 += usize::from(ranked.iter().any(|r| r.0 == skill));
    }
    let share = |n: usize, of: usize| 100.0 * n as f64 / of.max(1) as f64;
    recorder.value(&format!("{name}: index top-1"), share(top1, asked), "%");
    recorder.value(&format!("{name}: index top-3"), share(top3, asked), "%");
    recorder.value(&format!("{name}: paraphrases"), asked as f64, "count");

    let ranked_half = |index: &mut evo_host::packages::index::SkillIndex, half| {
        routing::half(half)
            .map(|(message, want)| (want, rank(index, message)))
            .collect::<Vec<_>>()
    };
    let fit = ranked_half(&mut index, Half::Fit);
    let margin = fit_margin(&fit);
    let measured = ranked_half(&mut index, Half::Measure);
    let (mut skills, mut decided, mut right, mut wrong_free, mut dangerous) = (0, 0, 0, 0, 0);
    for (want, ranked) in &measured {
        let pick = routed(ranked, margin);
        match want {
            Want::Skill(skill) => {
                skills += 1;
                decided += usize::from(pick.is_some());
                right += usize::from(pick == Some(*skill));
            }
            Want::Nothing | Want::Adversarial => {
                wrong_free += usize::from(pick.is_some());
                dangerous += usize::from(
                    *want == Want::Adversarial && pick.is_some_and(|p| DANGEROUS.contains(&p)),
                );
            }
        }
    }
    recorder.value(
        &format!("{name}: decisive margin (fitted)"),
        f64::from(margin),
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
        "| {name} | {:.0} % | {:.0} % | {margin:.3} | {decided} of {skills} ({:.0} %) | {right} of {decided} | {wrong_free} | {dangerous} |",
        share(top1, asked),
        share(top3, asked),
        share(decided, skills),
    );
}

fn main() {
    let recorder = Recorder::new("routing", "./scripts/bench routing", PATHS);
    println!(
        "| embedder | index top-1 | top-3 | margin fitted on one half | paraphrases of the other routed without the model | rightly | no-skill/adversarial routed | dangerous |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    measure(&recorder, "hash", Arc::new(HashEmbedder));
    match evo_host::memory::local::find_minilm()
        .and_then(|dir| evo_host::memory::minilm::MiniLmEmbedder::load(&dir))
    {
        Ok(minilm) => measure(&recorder, "MiniLM", Arc::new(minilm)),
        Err(e) => println!("MiniLM: not measured ({e})"),
    }
}
