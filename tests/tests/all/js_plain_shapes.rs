//! `js-plain-shapes`: a plain WIT component built with ComponentizeJS against its own
//! world — no Evo SDK, no Evo WIT — runs through `evo` like any skill.

#[test]
fn a_javascript_plain_component_runs_through_evo() {
    crate::py_plain_shapes::shapes_answer("js", evo_tests::skills::JS_PLAIN_SHAPES);
}
