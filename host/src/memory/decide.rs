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
//! - anything else (two places differ, words added, the subject changed, a name
//!   replaced: `lunch with Sven` / `lunch with Bianca`): **different facts**; both stay.
//!
//! When in doubt the rule keeps both texts: a duplicate costs a line in a search result,
//! a lost fact costs the user.

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

/// Words that add nothing to a fact's identity: articles, auxiliaries, and the words
/// people use to announce a change ("now", "actually").
const FILLER: &[&str] = &[
    "a",
    "an",
    "the",
    "and",
    "as",
    "at",
    "be",
    "been",
    "being",
    "by",
    "for",
    "from",
    "in",
    "into",
    "of",
    "on",
    "onto",
    "to",
    "with",
    "is",
    "are",
    "was",
    "were",
    "am",
    "do",
    "does",
    "did",
    "has",
    "have",
    "had",
    "will",
    "would",
    "shall",
    "should",
    "can",
    "could",
    "may",
    "might",
    "that",
    "this",
    "it",
    "its",
    "i",
    "me",
    "my",
    "we",
    "our",
    "you",
    "your",
    "so",
    "also",
    "now",
    "currently",
    "actually",
    "really",
    "still",
    "just",
    "always",
    "anymore",
    "any",
    "longer",
    "new",
    "instead",
    "here",
    "there",
    "then",
    "use",
    "uses",
    "used",
    "using",
    "what",
    "which",
    "who",
];

/// Words that turn a statement into its opposite.
const NEGATIONS: &[&str] = &[
    "not", "no", "never", "none", "nobody", "nothing", "neither", "nor", "cannot", "without",
    "dont", "doesnt", "didnt", "isnt", "arent", "wasnt", "werent", "wont", "cant", "couldnt",
    "shouldnt", "wouldnt", "hasnt", "havent", "hadnt", "mustnt",
];

/// Capitalised words that are values, not names.
const CALENDAR: &[&str] = &[
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// CJK characters that negate.
const CJK_NEGATIONS: &[char] = &['不', '没', '沒', '无', '無', '非', '别', '別', '未', '勿'];

/// A word of a text: its key for comparison and how it was written.
#[derive(Debug, Clone)]
struct Word {
    key: String,
    written: String,
    negation: bool,
    /// Written with a capital and not a day or month: a name, which identifies what a
    /// fact is about rather than giving it a value.
    name: bool,
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
            if !trimmed.is_empty() {
                let lower = trimmed.to_lowercase().replace(['\'', '’'], "");
                let key = normalise(&lower);
                if !FILLER.contains(&key.as_str()) && !FILLER.contains(&lower.as_str()) {
                    out.push(Word {
                        name: trimmed.starts_with(char::is_uppercase)
                            && !CALENDAR.contains(&lower.as_str()),
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
mod tests {
    use super::*;

    fn is_update(old: &str, new: &str) -> bool {
        matches!(relate(old, new), Relation::Update { .. })
    }

    fn is_different(old: &str, new: &str) -> bool {
        matches!(relate(old, new), Relation::Different(_))
    }

    #[test]
    fn restatements_are_the_same_words_in_any_form() {
        for (old, new) in [
            (
                "The user prefers dark mode in the editor.",
                "user prefers dark mode in editors",
            ),
            ("I like green tea", "I really like green tea"),
            (
                "Dark mode is what the user prefers",
                "The user prefers dark mode",
            ),
            ("用户喜欢深色模式", "用户喜欢深色模式。"),
        ] {
            assert_eq!(relate(old, new), Relation::Restatement, "{old} / {new}");
        }
    }

    #[test]
    fn a_new_value_of_the_same_attribute_is_an_update() {
        assert_eq!(
            relate("My phone number is 555-1234", "My phone number is 555-9876"),
            Relation::Update {
                from: "555-1234".into(),
                to: "555-9876".into()
            }
        );
        assert!(is_update(
            "Deploys happen on Tuesday afternoons",
            "Deploys happen on Thursday afternoons"
        ));
        assert!(is_update(
            "The user prefers dark mode",
            "The user now prefers light mode"
        ));
        assert!(is_update(
            "The alpha server listens on port 8000",
            "The alpha server listens on port 9000"
        ));
    }

    #[test]
    fn facts_of_one_shape_about_different_things_are_different() {
        let relation = relate(
            "The alpha server listens on port 8000",
            "The bravo server listens on port 8001",
        );
        assert_eq!(
            relation,
            Relation::Different(
                "a different subject: \"alpha\" → \"bravo\", \"8000\" → \"8001\"".into()
            )
        );
        assert!(is_different("Alice leads payments", "Bob leads payments"));
        assert!(is_different(
            "The config lives in /etc/evo/a.toml",
            "The config lives in /etc/evo/a.toml and /srv/b.toml"
        ));
        assert!(is_different(
            "The user prefers dark mode",
            "The user prefers green tea"
        ));
        assert!(is_update("端口是8000", "端口是8001"));
        // A name replaced is another subject, wherever it stands.
        assert!(is_different(
            "I had lunch with Sven today, the soup was cold",
            "I had lunch with Bianca today, the soup was cold"
        ));
        assert!(is_different(
            "I had lunch with Sven",
            "I had lunch with Bianca"
        ));
        assert!(is_different(
            "Alice lives in Lisbon",
            "Alice now lives in Porto"
        ));
        // A change in the middle of a statement is not its value.
        assert!(is_different(
            "Zara said the search dashboard looks slow again",
            "Zara said the inventory dashboard looks slow again"
        ));
    }

    #[test]
    fn negation_makes_a_different_fact() {
        assert_eq!(
            relate(
                "Deploys are allowed on Friday",
                "Deploys are not allowed on Friday"
            ),
            Relation::Different("one says no where the other does not".into())
        );
        assert!(is_different(
            "The user likes coffee",
            "The user doesn't like coffee"
        ));
        assert!(is_different("用户喜欢咖啡", "用户不喜欢咖啡"));
    }
}
