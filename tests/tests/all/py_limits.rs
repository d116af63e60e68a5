//! `py-limits`: a Python guest under the limits every guest runs under — deadline,
//! memory cap, output cap, no file access — through `evo skill run`.

use evo_tests::skills::PY_LIMITS;

#[test]
fn a_python_guest_runs_under_every_limit_and_the_next_call_works() {
    crate::guests::limits_stop_each_misbehaviour(
        "py-limits",
        PY_LIMITS,
        &[
            (
                "loop",
                "SKILL_TIMEOUT]: py-limits: timeout: the call did not finish within 2000 ms",
            ),
            (
                "bomb",
                "MEMORY_LIMIT_EXCEEDED]: py-limits: memory limit of 64 MiB exceeded",
            ),
            (
                "flood",
                "OUTPUT_LIMIT_EXCEEDED]: py-limits: output exceeded 1048576 bytes",
            ),
            (
                "read",
                "SKILL_FAILED]: py-limits: failed: FileNotFoundError: [Errno 44] No such file or directory: '/etc/passwd'",
            ),
        ],
    );
}
