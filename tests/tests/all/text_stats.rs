//! `text-stats`: the Rust twin of `js-text-stats` and `py-text-stats` gives the same
//! answers and the same errors.

use evo_tests::skills::TEXT_STATS;

#[test]
fn a_rust_skill_counts_words_through_the_cli() {
    crate::guests::text_stats_counts_words("text-stats", TEXT_STATS);
}

#[test]
fn a_rust_skill_error_keeps_its_kind_and_message() {
    crate::guests::text_stats_errors("text-stats", TEXT_STATS);
}
