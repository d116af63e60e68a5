//! `js-limits`: a JavaScript guest under the limits every guest runs under — deadline,
//! memory cap, output cap — through `evo skill run`. (A JavaScript skill has no file
//! API to try: ComponentizeJS gives the module none.)

use evo_tests::skills::JS_LIMITS;

#[test]
fn a_javascript_guest_runs_under_every_limit_and_the_next_call_works() {
    crate::guests::limits_stop_each_misbehaviour(
        "js-limits",
        JS_LIMITS,
        &[
            (
                "loop",
                "SKILL_TIMEOUT]: js-limits: timeout: the call did not finish within 2000 ms",
            ),
            (
                "bomb",
                "MEMORY_LIMIT_EXCEEDED]: js-limits: memory limit of 64 MiB exceeded",
            ),
            (
                "flood",
                "OUTPUT_LIMIT_EXCEEDED]: js-limits: output exceeded 1048576 bytes",
            ),
        ],
    );
}
