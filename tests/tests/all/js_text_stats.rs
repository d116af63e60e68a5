//! `js-text-stats`: a JavaScript skill counting words, through `evo skill run`.

use evo_tests::skills::JS_TEXT_STATS;

#[test]
fn a_javascript_skill_counts_words_through_the_cli() {
    crate::guests::text_stats_counts_words("js-text-stats", JS_TEXT_STATS);
}

#[test]
fn a_javascript_skill_error_keeps_its_kind_and_message() {
    crate::guests::text_stats_errors("js-text-stats", JS_TEXT_STATS);
}
