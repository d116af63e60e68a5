//! `py-recall`: a Python skill using the host's context — memory, another skill,
//! scratch, events and the log — through `evo skill run`.

use evo_tests::skills::PY_RECALL;

#[test]
fn a_python_skill_stores_searches_and_calls_another_skill() {
    crate::guests::recall_uses_the_context("py-recall", PY_RECALL);
}

#[test]
fn a_python_skill_without_the_memory_grant_is_denied() {
    crate::guests::recall_without_the_grant_is_denied("py-recall", PY_RECALL);
}
