//! Embedders turn text into unit vectors for similarity search and deduplication.
//!
//! [`HashEmbedder`], the default, works offline with no model download. It hashes
//! features of the text into [`HASH_DIM`] signed buckets (the "hashing trick") and
//! normalises the result:
//!
//! - words, lower-cased, with a light English stemmer (`prefers` → `prefer`,
//!   `decided` → `decid`), stop words dropped, so word order, case, punctuation,
//!   articles and inflection barely move a vector;
//! - character trigrams of each word, so typos and compound words still overlap;
//! - CJK characters and character pairs, since those scripts do not separate words.
//!
//! What it does not capture: meaning. Synonyms (`car` / `automobile`), paraphrases with
//! different words, and other languages for the same idea look unrelated. Switch to the
//! offline MiniLM embedder (`evo memory reindex --embedder minilm`) or
//! a model server (an OpenAI-compatible `/v1/embeddings`) when that matters.

use std::fmt;

/// The name the built-in [`HashEmbedder`] is recorded under.
pub const HASH: &str = "hash";

/// Dimension of [`HashEmbedder`] vectors: enough buckets that unrelated texts rarely
/// collide, small enough that 100k vectors scan in a few milliseconds.
pub const HASH_DIM: usize = 256;

/// Turns texts into unit vectors.
pub trait Embedder: Send + Sync + fmt::Debug {
    /// Names the model and its version; stored with every vector so that a change of
    /// model is noticed and the store re-embedded.
    fn model(&self) -> String;
    /// Length of every vector.
    fn dim(&self) -> usize;
    /// One unit vector (or all zeros for text with no features) per text.
    fn embed(&self, texts: &[&str]) -> crate::Result<Vec<Vec<f32>>>;
    /// The name of a local embedder (see `super::local`), which a store records so
    /// that later opens use it again; `None` for one configured elsewhere.
    fn spec(&self) -> Option<String> {
        None
    }
}

/// The built-in offline embedder (see the module docs for what it captures).
#[derive(Debug, Clone, Copy, Default)]
pub struct HashEmbedder;

/// Words that carry no topic: dropped so that "the user prefers tea" and "user prefers
/// tea" embed alike, and so that a question's "who", "what" and "does" do not pull it
/// towards every other question.
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "could", "did", "do", "does", "for",
    "from", "has", "have", "how", "i", "in", "is", "it", "its", "me", "my", "of", "on", "or",
    "our", "so", "that", "the", "their", "them", "they", "this", "to", "was", "we", "were", "what",
    "when", "where", "which", "who", "why", "will", "with", "would", "you", "your",
];

/// Weight of a word feature relative to one of its trigrams: words carry most of the
/// meaning, trigrams only smooth over spelling.
const WORD_WEIGHT: f32 = 1.0;
const TRIGRAM_WEIGHT: f32 = 0.25;

impl Embedder for HashEmbedder {
    fn model(&self) -> String {
        format!("evo-hash-v2-{HASH_DIM}")
    }

    fn dim(&self) -> usize {
        HASH_DIM
    }

    fn embed(&self, texts: &[&str]) -> crate::Result<Vec<Vec<f32>>> {
        Ok(texts.iter().map(|text| hash_embed(text)).collect())
    }

    fn spec(&self) -> Option<String> {
        Some(HASH.to_owned())
    }
}

/// The [`HashEmbedder`] vector of `text`.
pub fn hash_embed(text: &str) -> Vec<f32> {
    let mut vector = vec![0.0_f32; HASH_DIM];
    let lower = text.to_lowercase();
    let mut cjk_previous: Option<char> = None;
    let mut word = String::new();
    let flush = |word: &mut String, vector: &mut Vec<f32>| {
        if word.is_empty() || STOP_WORDS.contains(&word.as_str()) {
            word.clear();
            return;
        }
        let stem = stem(word);
        add(vector, &["w:", stem].concat(), WORD_WEIGHT);
        let padded: Vec<char> = format!("^{stem}$").chars().collect();
        for trigram in padded.windows(3) {
            let key: String = trigram.iter().collect();
            add(vector, &["t:", &key].concat(), TRIGRAM_WEIGHT);
        }
        word.clear();
    };
    for c in lower.chars() {
        if is_cjk(c) {
            flush(&mut word, &mut vector);
            add(&mut vector, &format!("c:{c}"), WORD_WEIGHT * 0.5);
            if let Some(previous) = cjk_previous {
                add(&mut vector, &format!("c:{previous}{c}"), WORD_WEIGHT);
            }
            cjk_previous = Some(c);
        } else if c.is_alphanumeric() {
            cjk_previous = None;
            word.push(c);
        } else {
            cjk_previous = None;
            flush(&mut word, &mut vector);
        }
    }
    flush(&mut word, &mut vector);
    normalize(&mut vector);
    vector
}

pub(crate) fn is_cjk(c: char) -> bool {
    matches!(c as u32, 0x3040..=0x30ff | 0x3400..=0x4dbf | 0x4e00..=0x9fff | 0xac00..=0xd7af | 0xf900..=0xfaff)
}

/// A light English suffix stripper: enough that inflections of one word meet.
pub(crate) fn stem(word: &str) -> &str {
    for suffix in ["ingly", "edly", "ing", "ies", "ied", "ed", "es", "ly", "s"] {
        if let Some(base) = word.strip_suffix(suffix)
            && base.chars().count() >= 3
            && !(suffix == "s" && base.ends_with('s'))
        {
            return base;
        }
    }
    word
}

/// Adds `weight` to the bucket of `feature`, with a sign from another hash bit so that
/// collisions cancel out on average instead of piling up.
fn add(vector: &mut [f32], feature: &str, weight: f32) {
    let hash = fnv1a(feature.as_bytes());
    let bucket = (hash % vector.len() as u64) as usize;
    let sign = if hash >> 63 == 0 { 1.0 } else { -1.0 };
    vector[bucket] += sign * weight;
}

/// FNV-1a: stable across platforms and releases, which stored vectors depend on.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    // Mix the high bits down so the modulus and the sign bit see all of the input.
    hash ^ (hash >> 29)
}

/// Scales `vector` to unit length (left at zero if it is zero).
pub fn normalize(vector: &mut [f32]) {
    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        for x in vector {
            *x /= norm;
        }
    }
}

/// Dot product of two equal-length vectors (the cosine, for unit vectors).
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    // Independent accumulators let the compiler vectorise the loop; a single running
    // sum is a dependency chain that does not.
    let mut acc = [0.0_f32; 8];
    let chunks = a.len() / 8 * 8;
    for (ca, cb) in a[..chunks].chunks_exact(8).zip(b[..chunks].chunks_exact(8)) {
        for i in 0..8 {
            acc[i] += ca[i] * cb[i];
        }
    }
    let tail: f32 = a[chunks..]
        .iter()
        .zip(&b[chunks..])
        .map(|(x, y)| x * y)
        .sum();
    acc.iter().sum::<f32>() + tail
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cosine(a: &str, b: &str) -> f32 {
        dot(&hash_embed(a), &hash_embed(b))
    }

    #[test]
    fn rewordings_are_near_duplicates_and_different_facts_are_not() {
        let same = cosine(
            "The user prefers dark mode in the editor.",
            "user prefers dark mode in editor",
        );
        assert!(same > 0.99, "{same}");
        let inflected = cosine(
            "I prefer dark mode for the editor",
            "Prefers dark mode in editors",
        );
        assert!(inflected > 0.92, "{inflected}");
        let different = cosine("The user prefers dark mode", "The user prefers green tea");
        assert!(different < 0.7, "{different}");
        let unrelated = cosine("Deploy on Fridays is forbidden", "My cat is called Miso");
        assert!(unrelated.abs() < 0.3, "{unrelated}");
    }

    #[test]
    fn cjk_text_has_features_and_vectors_are_unit_length() {
        let v = hash_embed("用户喜欢深色模式");
        let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5);
        let close = cosine("用户喜欢深色模式", "用户喜欢深色的模式");
        assert!(close > 0.7, "{close}");
        let far = cosine("用户喜欢深色模式", "周五不发布");
        assert!(far < 0.3, "{far}");
        assert!(hash_embed("!!! ...").iter().all(|x| *x == 0.0));
    }
}
