//! `text-stats`: counts the lines, words and characters of a text and names its most
//! common words. The same skill as `js-text-stats` and `py-text-stats`, in Rust, so the
//! three languages are compared on the same work (`cargo bench --bench languages`).

use std::collections::HashMap;

use evo_guest::{Error, JsonSchema, Manifest, Skill};
use serde::{Deserialize, Serialize};

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Input {
    /// The text to measure.
    text: String,
    /// How many common words to list.
    #[serde(default = "three")]
    #[schemars(range(min = 1, max = 20))]
    top: usize,
}

fn three() -> usize {
    3
}

#[derive(Serialize, JsonSchema)]
struct Word {
    word: String,
    count: usize,
}

#[derive(Serialize, JsonSchema)]
struct Output {
    lines: usize,
    words: usize,
    characters: usize,
    top: Vec<Word>,
}

struct TextStats;

impl Skill for TextStats {
    type Input = Input;
    type Output = Output;

    fn manifest() -> Manifest {
        Manifest::new(
            "text-stats",
            "Counts the lines, words and characters of a text and lists its most common words.",
        )
        .category("text")
        .tags(["text", "rust"])
        // What a user might say: the skill index finds the skill by these too.
        .requests([
            "how many words are in this paragraph?",
            "which word do I use most here?",
        ])
        .timeout_ms(2_000)
    }

    fn execute(input: Input) -> Result<Output, Error> {
        let text = input.text;
        if text.trim().is_empty() {
            return Err(Error::invalid_input(
                "text: is empty; give some words to count",
            ));
        }
        let lower = text.to_lowercase();
        let words: Vec<&str> = lower
            .split(|c: char| !(c.is_alphanumeric() || c == '\''))
            .filter(|w| !w.is_empty())
            .collect();
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for word in &words {
            *counts.entry(word).or_default() += 1;
        }
        let mut common: Vec<(&str, usize)> = counts.into_iter().collect();
        common.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        common.truncate(input.top);
        Ok(Output {
            lines: text.split('\n').count(),
            words: words.len(),
            characters: text.chars().count(),
            top: common
                .into_iter()
                .map(|(word, count)| Word {
                    word: word.to_owned(),
                    count,
                })
                .collect(),
        })
    }
}

evo_guest::export_skill!(TextStats);
