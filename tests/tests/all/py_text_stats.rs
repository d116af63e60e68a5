//! `py-text-stats`: a Python skill counting words, through `evo skill run`.

use evo_tests::skills::PY_TEXT_STATS;

#[test]
fn a_python_skill_counts_words_through_the_cli() {
    crate::guests::text_stats_counts_words("py-text-stats", PY_TEXT_STATS);
}

#[test]
fn a_python_skill_error_keeps_its_kind_and_message() {
    crate::guests::text_stats_errors("py-text-stats", PY_TEXT_STATS);
}
