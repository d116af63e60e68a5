//! `skills-wasm/js/limits`: a JavaScript guest under the limits every guest runs under
//! — deadline, memory cap, output cap — through `evo skill run`; and what it prints
//! reaches the log. One data directory, so the 12 MB component is compiled once.

use evo_tests::cli::{evo, stderr, stdout};
use evo_tests::skills;

fn run(home: &std::path::Path, mode: &str) -> std::process::Output {
    evo(
        home,
        &[
            "-vv",
            "skill",
            "run",
            skills::JS_LIMITS,
            "--input",
            &format!(r#"{{"mode":"{mode}"}}"#),
        ],
    )
}

#[test]
fn a_javascript_guest_runs_under_every_limit_and_the_next_call_works() {
    let home = tempfile::tempdir().unwrap();
    for (mode, error) in [
        (
            "loop",
            "error[SKILL_TIMEOUT]: js-limits: timeout: the call did not finish within 2000 ms",
        ),
        (
            "bomb",
            "error[MEMORY_LIMIT_EXCEEDED]: js-limits: memory limit of 64 MiB exceeded",
        ),
        (
            "flood",
            "error[OUTPUT_LIMIT_EXCEEDED]: js-limits: output exceeded 1048576 bytes",
        ),
    ] {
        let out = run(home.path(), mode);
        assert!(!out.status.success(), "{mode}: {}", stdout(&out));
        assert!(stderr(&out).contains(error), "{mode}: {}", stderr(&out));
        assert!(stdout(&out).is_empty(), "{mode}: {}", stdout(&out));
    }
    // After all that, the same component behaves, and what it prints reaches the log.
    let out = run(home.path(), "print");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("printed by js-limits"),
        "{}",
        stderr(&out)
    );
    assert!(
        stdout(&out).contains(r#""mode": "print""#),
        "{}",
        stdout(&out)
    );
}
