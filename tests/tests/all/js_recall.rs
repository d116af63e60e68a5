//! `js-recall`: a JavaScript skill using the host's context — memory, another skill,
//! scratch, events and the log — through `evo skill run`.

use evo_tests::skills::JS_RECALL;

#[test]
fn a_javascript_skill_stores_searches_and_calls_another_skill() {
    crate::guests::recall_uses_the_context("js-recall", JS_RECALL);
}

#[test]
fn a_javascript_skill_without_the_memory_grant_is_denied() {
    crate::guests::recall_without_the_grant_is_denied("js-recall", JS_RECALL);
}
