//! The routing set's own checks: its paraphrases and requests are what the bench says.

use super::*;

#[test]
fn paraphrases_use_neither_the_name_nor_the_key_words_of_their_skill() {
    for (message, want) in MESSAGES {
        let Want::Skill(skill) = want else { continue };
        let words: Vec<String> = message
            .split(|c: char| !c.is_alphanumeric() && c != '_' && c != '-')
            .map(str::to_lowercase)
            .collect();
        let (_, key) = KEY_WORDS
            .iter()
            .find(|(name, _)| *name == skill)
            .expect("listed");
        for word in key.iter().copied().chain([skill]) {
            assert!(
                !words.iter().any(|w| w == word),
                "{message:?} uses {word:?}, a word of {skill}"
            );
        }
    }
}

#[test]
fn example_skills_are_listed_as_their_manifests_say() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for (name, description, requests) in EXAMPLE_SKILLS {
        let native = root.join("skills-native").join(name).join("skill.json");
        if native.exists() {
            let manifest: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(native).unwrap()).unwrap();
            assert_eq!(manifest["description"], description, "{name}");
            assert_eq!(manifest["requests"], json!(requests), "{name}");
        } else {
            // A component's manifest is Rust code: its strings are there as written.
            let source = root.join("skills-wasm").join(name).join("src/lib.rs");
            let source = std::fs::read_to_string(source).unwrap();
            for text in std::iter::once(description).chain(requests.iter().copied()) {
                let literal = serde_json::to_string(text).unwrap();
                assert!(
                    source.contains(&literal),
                    "{name}: {literal} is not in its manifest"
                );
            }
        }
    }
}

/// The words of `text` that carry meaning: lower case, three letters or more.
fn content_words(text: &str) -> std::collections::BTreeSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.len() >= 3)
        .map(str::to_lowercase)
        .collect()
}

#[test]
fn no_request_of_a_skill_is_a_message_of_the_set() {
    // Requests are written as users would ask, not copied from the messages the
    // bench measures with: no request shares half its words with a message.
    let table = catalogue();
    let requests: Vec<(String, String)> = table
        .list()
        .into_iter()
        .flat_map(|s| {
            let name = s.meta.name.clone();
            s.meta
                .requests
                .clone()
                .into_iter()
                .map(move |r| (name.clone(), r))
        })
        .collect();
    assert!(
        requests.len() >= 100,
        "every skill has requests: {}",
        requests.len()
    );
    let mut close = Vec::new();
    for (message, _) in MESSAGES {
        let message_words = content_words(message);
        for (skill, request) in &requests {
            let words = content_words(request);
            let shared = words.intersection(&message_words).count();
            let all = words.union(&message_words).count();
            if 2 * shared >= all.max(1) {
                close.push(format!("{skill}'s request {request:?} ~ {message:?}"));
            }
        }
    }
    assert!(
        close.is_empty(),
        "requests too close to a message: {close:#?}"
    );
}

#[test]
fn the_set_has_what_the_bench_reports_on() {
    let count = |f: fn(&Want) -> bool| MESSAGES.iter().filter(|(_, w)| f(w)).count();
    assert!(count(|w| matches!(w, Want::Skill(_))) >= 60);
    assert_eq!(count(|w| *w == Want::Nothing), 20);
    assert_eq!(count(|w| *w == Want::Adversarial), 10);
    for (name, _) in KEY_WORDS {
        let asked = MESSAGES
            .iter()
            .filter(|(_, w)| *w == Want::Skill(name))
            .count();
        assert!(asked >= 3, "{name}: {asked}");
    }
    assert_eq!(
        half(Half::Fit).count() + half(Half::Measure).count(),
        MESSAGES.len()
    );
}
