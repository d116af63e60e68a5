//! What a new text is to an entry it resembles: the same fact said again, a new value of
//! the same fact, or a different fact.
//!
//! Similarity alone cannot tell: to any embedder, `The alpha server listens on port
//! 8000` and `The bravo server listens on port 8001` are close, yet they are two facts,
//! and merging them loses one. So a candidate (an entry whose cosine to the new text
//! passes [`super::DEFAULT_COMPARE_THRESHOLD`]) is compared word by word:
//!
//! - both texts reduce to the same words (case, punctuation, articles, inflection and
//!   word order aside): a **restatement**, not stored again;
//! - one side says no/not/never/不 and the other does not: **different facts**; both stay
//!   (a contradiction is kept for a person to settle, never resolved by dropping one);
//! - exactly one short run of words was replaced, after at least one shared word (the
//!   subject) and at the end of the statement (at most one shared word after it: the
//!   value slot), the shared words outweigh it, and it holds no name: an **update** of
//!   the same subject and attribute (`my phone number is 555-1234` → `… 555-9876`,
//!   `deploys happen on Tuesday afternoons` → `… Thursday afternoons`); the new entry
//!   supersedes the old one, which stays reachable;
//! - the new text keeps the old one's subject (its first word) and gives a new value of
//!   the same kind (a name for a name, a number for a number, a day or month for a day
//!   or month) for the same attribute, either announcing the change (`now`, `moved`,
//!   `switched`, `since`, …) or, when the subject is a name, in the same words around
//!   the value: a **change of state** and an update too (`Alice lives in Lisbon` →
//!   `Alice moved to Porto last month`, `The billing service listens on port 8000` →
//!   `We switched the billing service over to port 9000`). The attribute is the same
//!   when the words the old text loses are none, or the two share a second word besides
//!   the subject, or a lost word and a word of the new text name one attribute (the
//!   lists of `decide/lexicon.rs`: `lives` and `moved`, `works` and `joined`,
//!   `deadline` and `due`);
//!   and every word the new text adds must be the change's own (a cue, a word of the
//!   same attribute, a time such as `last month`, or the subject's title: `Project
//!   Atlas`). So `Alice joined the Porto office` does not replace where Alice lives,
//!   and `Alice moved the Atlas deadline to November 9` does not either;
//! - anything else (two places differ, words added, the subject changed, a name
//!   replaced in an event: `I had lunch with Sven` / `I had lunch with Bianca`):
//!   **different facts**; both stay.
//!
//! When in doubt the rule keeps both texts: a duplicate costs a line in a search result,
//! a lost fact costs the user.

mod lexicon;

use std::collections::HashSet;
use std::sync::LazyLock;

use crate::retrieval::embed::stem;

/// How a new text relates to one stored entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Relation {
    /// The same words: the entry already says it.
    Restatement,
    /// The same subject and attribute with a new value: `from` was replaced by `to`.
    Update {
        /// The words of the entry that changed.
        from: String,
        /// The words of the new text in their place.
        to: String,
    },
    /// A different fact, with what tells them apart.
    Different(String),
}

use lexicon::{ATTRIBUTES, CALENDAR, CHANGE_CUES, CHANGE_WORDS, CJK_NEGATIONS, FILLER, NEGATIONS};

/// A word of a text: its key for comparison and how it was written.
#[derive(Debug, Clone)]
struct Word {
    key: String,
    written: String,
    negation: bool,
    /// Written with a capital and not a day or month: a name, which identifies what a
    /// fact is about rather than giving it a value.
    name: bool,
    /// What kind of value the word can be, if any.
    kind: Option<Kind>,
}

/// The kinds of value a fact holds: a change of state replaces one with the same kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A name: `Lisbon`, `Initech`.
    Name,
    /// Anything with a digit: `8000`, `555-1234`, `v1.2.3`.
    Number,
    /// A day or a month.
    Calendar,
}

/// The content words of `text`, in order. Words keep inner punctuation, so
/// `555-1234`, `staging.example.com`, `v1.2.3` and `/etc/hosts` are one word each;
/// CJK characters are one word each.
fn words(text: &str) -> Vec<Word> {
    let mut out = Vec::new();
    for raw in text.split_whitespace() {
        let mut run = String::new();
        let flush = |run: &mut String, out: &mut Vec<Word>| {
            let trimmed = run.trim_matches(|c: char| !c.is_alphanumeric() && c != '/');
            // A possessive is its owner: `Alice's home` is about Alice.
            let trimmed = ["'s", "’s"]
                .iter()
                .find_map(|s| trimmed.strip_suffix(s))
                .unwrap_or(trimmed);
            if !trimmed.is_empty() {
                let lower = trimmed.to_lowercase().replace(['\'', '’'], "");
                let key = normalise(&lower);
                if !FILLER.contains(&key.as_str()) && !FILLER.contains(&lower.as_str()) {
                    let calendar = CALENDAR.contains(&lower.as_str());
                    let name = trimmed.starts_with(char::is_uppercase) && !calendar;
                    out.push(Word {
                        name,
                        kind: if trimmed.chars().any(|c| c.is_ascii_digit()) {
                            Some(Kind::Number)
                        } else if calendar {
                            Some(Kind::Calendar)
                        } else if name {
                            Some(Kind::Name)
                        } else {
                            None
                        },
                        key,
                        written: trimmed.to_owned(),
                        negation: NEGATIONS.contains(&lower.as_str()),
                    });
                }
            }
            run.clear();
        };
        for c in raw.chars() {
            if crate::retrieval::embed::is_cjk(c) {
                flush(&mut run, &mut out);
                out.push(Word {
                    key: c.to_string(),
                    written: c.to_string(),
                    negation: CJK_NEGATIONS.contains(&c),
                    name: false,
                    kind: None,
                });
            } else {
                run.push(c);
            }
        }
        flush(&mut run, &mut out);
    }
    out
}

/// The comparison key of a lower-case word: plain words are stemmed (and lose a final
/// `e`, so `like`/`likes`/`liked` meet); words with digits or inner punctuation are
/// values and compared exactly.
fn normalise(lower: &str) -> String {
    if !lower.chars().all(char::is_alphabetic) {
        return lower.to_owned();
    }
    let stemmed = stem(lower);
    stemmed
        .strip_suffix('e')
        .filter(|s| s.chars().count() >= 2)
        .unwrap_or(stemmed)
        .to_owned()
}

fn negated(words: &[Word]) -> bool {
    words.iter().any(|w| w.negation)
}

/// How `new` relates to the stored `old`.
pub fn relate(old: &str, new: &str) -> Relation {
    let a = words(old);
    let b = words(new);
    if negated(&a) != negated(&b) {
        return Relation::Different("one says no where the other does not".into());
    }
    let mut sorted_a: Vec<&str> = a.iter().map(|w| w.key.as_str()).collect();
    let mut sorted_b: Vec<&str> = b.iter().map(|w| w.key.as_str()).collect();
    sorted_a.sort_unstable();
    sorted_b.sort_unstable();
    if sorted_a == sorted_b {
        return Relation::Restatement;
    }
    let spans = diff(&a, &b);
    let common = a.len() - spans.iter().map(|s| s.old.len()).sum::<usize>();
    let describe = |words: &[Word]| {
        words
            .iter()
            .map(|w| w.written.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    };
    if let [span] = spans.as_slice()
        && !span.old.is_empty()
        && !span.new.is_empty()
        && span.start > 0
        && a.len() - (span.start + span.old.len()) <= 1
        && span.old.len().max(span.new.len()) * 2 <= common.max(2)
        && !span.old.iter().chain(&span.new).any(|w| w.name)
    {
        return Relation::Update {
            from: describe(&span.old),
            to: describe(&span.new),
        };
    }
    if let Some((from, to)) = state_change(&a, &b, announces_change(new)) {
        return Relation::Update {
            from: describe(&from),
            to: describe(&to),
        };
    }
    let shown: Vec<String> = spans
        .iter()
        .take(3)
        .map(|s| match (s.old.is_empty(), s.new.is_empty()) {
            (false, false) => format!("{:?} → {:?}", describe(&s.old), describe(&s.new)),
            (true, _) => format!("adds {:?}", describe(&s.new)),
            (_, true) => format!("drops {:?}", describe(&s.old)),
        })
        .collect();
    let subject = spans.first().is_some_and(|s| s.start == 0);
    Relation::Different(format!(
        "{}{}",
        if subject { "a different subject: " } else { "" },
        shown.join(", ")
    ))
}

/// Whether `text` says that something changed: a word of [`CHANGE_CUES`], or `these
/// days`.
fn announces_change(text: &str) -> bool {
    let lower = text.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    words.iter().any(|w| CHANGE_CUES.contains(w))
        || words.windows(2).any(|pair| pair == ["these", "days"])
}

/// The words of a change as keys, made once: [`CHANGE_CUES`] and [`CHANGE_WORDS`]
/// together, and each list of [`ATTRIBUTES`].
struct ChangeKeys {
    cues: HashSet<String>,
    attributes: Vec<HashSet<String>>,
}

static CHANGE_KEYS: LazyLock<ChangeKeys> = LazyLock::new(|| {
    let keys = |words: &[&str]| words.iter().map(|w| normalise(w)).collect::<HashSet<_>>();
    let mut cues = keys(CHANGE_CUES);
    cues.extend(keys(CHANGE_WORDS));
    ChangeKeys {
        cues,
        attributes: ATTRIBUTES.iter().map(|family| keys(family)).collect(),
    }
});

/// Whether two keys name one attribute ([`ATTRIBUTES`]).
fn one_attribute(a: &str, b: &str) -> bool {
    CHANGE_KEYS
        .attributes
        .iter()
        .any(|family| family.contains(a) && family.contains(b))
}

/// A change of state (see the module's rules): the values of `old` that `new`
/// replaces, and the values it gives instead.
fn state_change(old: &[Word], new: &[Word], cue: bool) -> Option<(Vec<Word>, Vec<Word>)> {
    // The subject: the first word that is not the announcement of an earlier change
    // (`We switched the gateway service …` is about the gateway).
    let is_cue = |w: &Word| CHANGE_KEYS.cues.contains(&w.key);
    let start = old.iter().position(|w| !is_cue(w))?;
    let subject = &old[start];
    let at = new.iter().position(|w| w.key == subject.key)?;
    // A name or a number right after it is part of it: `Project Meridian` is not
    // `Project Atlas`, `Service 12` is not `Service 13`.
    let named = old[start + 1..]
        .iter()
        .take_while(|w| matches!(w.kind, Some(Kind::Name | Kind::Number)));
    if named.clone().any(|w| !new.iter().any(|x| x.key == w.key)) {
        return None;
    }
    let in_new = |w: &Word| new.iter().any(|x| x.key == w.key);
    let in_old = |w: &Word| old.iter().any(|x| x.key == w.key);
    let lost: Vec<&Word> = old.iter().filter(|w| !in_new(w)).collect();
    let added: Vec<&Word> = new.iter().filter(|w| !in_old(w)).collect();
    let shared = old.len() - lost.len();
    let from: Vec<Word> = lost
        .iter()
        .filter(|w| w.kind.is_some())
        .map(|w| (*w).clone())
        .collect();
    let to: Vec<Word> = added
        .iter()
        .filter(|w| w.kind.is_some())
        .map(|w| (*w).clone())
        .collect();
    if !from.iter().any(|f| to.iter().any(|t| t.kind == f.kind)) {
        return None;
    }
    let lost_words: Vec<&&Word> = lost.iter().filter(|w| w.kind.is_none()).collect();
    let same_attribute = lost_words.is_empty()
        || shared >= 2
        || lost_words
            .iter()
            .any(|w| new.iter().any(|x| one_attribute(&w.key, &x.key)));
    // The subject's title (`Project Atlas`) stands beside it.
    let beside_subject = |w: &Word| {
        new.iter()
            .position(|x| std::ptr::eq(x, w))
            .is_some_and(|i| i + 1 == at || i == at + 1)
    };
    let added_words: Vec<&&Word> = added.iter().filter(|w| w.kind.is_none()).collect();
    let unexplained = added_words
        .iter()
        .filter(|w| {
            !(is_cue(w) || old.iter().any(|x| one_attribute(&x.key, &w.key)) || beside_subject(w))
        })
        .count();
    // Where the attribute's own word is kept, the value may be more than a name or a
    // number (`as a nurse` → `as a pilot`): as many words as it lost.
    let only_the_change = unexplained == 0 || (shared >= 2 && unexplained <= lost_words.len());
    let in_place = lost_words.is_empty() && added_words.is_empty() && subject.name;
    (same_attribute && only_the_change && (cue || in_place)).then_some((from, to))
}

/// A run of words that differs between two texts.
#[derive(Debug)]
struct Span {
    /// Index in the old text where it starts.
    start: usize,
    old: Vec<Word>,
    new: Vec<Word>,
}

/// The runs that differ between `a` and `b`, from a longest common subsequence of their
/// keys (texts are short: a memory holds at most 4 KiB).
fn diff(a: &[Word], b: &[Word]) -> Vec<Span> {
    let (n, m) = (a.len(), b.len());
    let mut lcs = vec![vec![0_u16; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if a[i].key == b[j].key {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let mut spans: Vec<Span> = Vec::new();
    let (mut i, mut j) = (0, 0);
    let mut open: Option<Span> = None;
    while i < n || j < m {
        if i < n && j < m && a[i].key == b[j].key {
            spans.extend(open.take());
            i += 1;
            j += 1;
            continue;
        }
        let span = open.get_or_insert_with(|| Span {
            start: i,
            old: Vec::new(),
            new: Vec::new(),
        });
        if j < m && (i == n || lcs[i][j + 1] >= lcs[i + 1][j]) {
            span.new.push(b[j].clone());
            j += 1;
        } else {
            span.old.push(a[i].clone());
            i += 1;
        }
    }
    spans.extend(open);
    spans
}

#[cfg(test)]
mod tests;
