//! Functions compiled for one component are reused by the next: every JavaScript
//! skill carries the same engine and every Python skill the same interpreter, so a data
//! directory's second skill of a language compiles only what is its own, and runs as
//! if compiled from scratch.

use evo_tests::cli::{allow_slow_compiles, command, stderr, stdout};
use evo_tests::skills;
use serde_json::Value;

/// The functions a run's compile took from the function cache and compiled, from the
/// line `evo -v` prints: "compiled DIGEST in N ms: R functions from the function cache,
/// C compiled".
fn functions(stderr: &str) -> (u64, u64) {
    let line = stderr
        .lines()
        .find(|l| l.contains("functions from the function cache"))
        .unwrap_or_else(|| panic!("no compile was reported: {stderr}"));
    let numbers: Vec<u64> = line
        .rsplit(": ")
        .next()
        .unwrap()
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .collect();
    assert_eq!(numbers.len(), 2, "{line}");
    (numbers[0], numbers[1])
}

#[test]
fn a_second_skill_of_a_language_reuses_the_functions_of_the_first_and_answers_as_if_whole() {
    let home = tempfile::tempdir().unwrap();
    allow_slow_compiles(home.path());
    for (first, second) in [
        (skills::JS_RECALL, skills::JS_TEXT_STATS),
        (skills::PY_RECALL, skills::PY_TEXT_STATS),
    ] {
        // No shared compile cache: the data directory's own, where the first skill of
        // the language (run with an input it refuses: only its compile matters) leaves
        // its functions for the second, run by another process.
        let out = command(home.path(), &["-v", "skill", "run", first, "--input", "{}"])
            .output()
            .unwrap();
        assert!(
            stderr(&out).contains("INVALID_INPUT") || stderr(&out).contains("VALIDATION"),
            "{first}: {}",
            stderr(&out)
        );
        let (_, compiled_first) = functions(&stderr(&out));
        let out = command(
            home.path(),
            &[
                "-v",
                "skill",
                "run",
                second,
                "--input",
                crate::guests::TEXT_STATS_INPUT,
            ],
        )
        .output()
        .unwrap();
        assert!(out.status.success(), "{second}: {}", stderr(&out));
        let (reused, compiled) = functions(&stderr(&out));
        assert!(
            reused >= 9 * compiled && compiled_first >= 9 * compiled,
            "{second}: {reused} functions reused, {compiled} compiled (the first compiled {compiled_first})"
        );
        let value: Value = serde_json::from_str(&stdout(&out)).unwrap();
        assert_eq!(value, crate::guests::text_stats_answer(), "{second}");
    }
}
