//! Ranking, shared by memory search, the skill index and the agent's shortlist: query
//! terms for FTS5, and one hybrid score that fuses meaning (cosine of embeddings) with
//! wording (bm25),
//!
//! `score = (1 − KEYWORD_WEIGHT) × max(cosine, 0) + KEYWORD_WEIGHT × bm25 / best bm25`,
//!
//! in [0, 1], so results from different stores compare.

/// Weight of the keyword (bm25) score; the vector similarity has the rest of 1 (0.7:
/// meaning over wording).
pub const KEYWORD_WEIGHT: f32 = 0.3;

/// The hybrid score of a candidate: its cosine and its bm25 relative to the best bm25
/// among the candidates (0 when it had no keyword match), in [0, 1].
pub fn fuse(cosine: f32, bm25: Option<f32>, best_bm25: f32) -> f32 {
    fuse_weighted(cosine, bm25, best_bm25, KEYWORD_WEIGHT)
}

/// [`fuse`] with another weight for the keyword score (the vector's is the rest of 1),
/// for a store whose texts were written to be found by meaning.
pub fn fuse_weighted(cosine: f32, bm25: Option<f32>, best_bm25: f32, keyword_weight: f32) -> f32 {
    let keyword = match bm25 {
        Some(score) if best_bm25 > 0.0 => score / best_bm25,
        _ => 0.0,
    };
    ((1.0 - keyword_weight) * cosine.max(0.0) + keyword_weight * keyword).clamp(0.0, 1.0)
}

/// Words a question is made of that say nothing about its topic: matching "the" or
/// "which" only ranks whatever text happens to hold them.
const QUESTION_STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "could", "did", "do", "does", "for",
    "from", "has", "have", "how", "i", "in", "is", "it", "its", "me", "my", "of", "on", "or",
    "our", "should", "so", "that", "the", "their", "them", "they", "this", "to", "was", "we",
    "were", "what", "when", "where", "which", "who", "whom", "why", "will", "with", "would", "you",
    "your",
];

/// The distinct lower-case words of `query`, in order, without the words every
/// question has (unless nothing else is left).
pub fn query_terms(query: &str) -> Vec<String> {
    let mut terms: Vec<String> = Vec::new();
    for word in query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
    {
        if !terms.contains(&word) {
            terms.push(word);
        }
    }
    let topical: Vec<String> = terms
        .iter()
        .filter(|t| !QUESTION_STOP_WORDS.contains(&t.as_str()))
        .cloned()
        .collect();
    if topical.is_empty() { terms } else { topical }
}

/// An FTS5 `MATCH` expression for any of `terms`, each quoted as a phrase.
pub fn fts_any(terms: &[String]) -> String {
    terms
        .iter()
        .map(|t| format!("\"{}\"", t.replace('"', "\"\"")))
        .collect::<Vec<_>>()
        .join(" OR ")
}

/// `scored` items best first, those scoring 0 left out, at most `limit`.
pub fn top<T>(scored: impl IntoIterator<Item = (f32, T)>, limit: usize) -> Vec<(f32, T)> {
    let mut kept: Vec<(f32, T)> = scored.into_iter().filter(|(s, _)| *s > 0.0).collect();
    kept.sort_by(|a, b| b.0.total_cmp(&a.0));
    kept.truncate(limit);
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fusion_weights_meaning_over_wording_and_stays_in_range() {
        assert_eq!(fuse(1.0, Some(4.0), 4.0), 1.0);
        assert_eq!(fuse(0.0, Some(2.0), 4.0), 0.15);
        assert_eq!(fuse(-0.5, None, 4.0), 0.0);
        assert!((fuse(0.5, None, 0.0) - 0.35).abs() < 1e-6);
    }

    #[test]
    fn terms_are_distinct_lower_case_words_and_quoted_for_fts() {
        let terms = query_terms("Which port? which PORT does \"alpha\" use");
        assert_eq!(terms, ["port", "alpha", "use"]);
        assert_eq!(fts_any(&terms[..2]), "\"port\" OR \"alpha\"");
        assert_eq!(query_terms("the who"), ["the", "who"]);
    }

    #[test]
    fn top_drops_zeros_and_keeps_the_best() {
        let ranked = top([(0.2, "b"), (0.0, "z"), (0.9, "a"), (0.5, "c")], 2);
        assert_eq!(ranked, [(0.9, "a"), (0.5, "c")]);
    }
}
