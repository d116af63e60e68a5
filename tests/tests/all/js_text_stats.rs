//! `skills-wasm/js/text-stats`: a JavaScript skill (ComponentizeJS + evo-skill.js) run
//! through `evo skill run`, as a user runs it.

use evo_tests::cli::{evo, stderr, stdout};
use evo_tests::skills;
use serde_json::{Value, json};

#[test]
fn a_javascript_skill_counts_words_through_the_cli() {
    let home = tempfile::tempdir().unwrap();
    let out = evo(
        home.path(),
        &[
            "skill",
            "run",
            skills::JS_TEXT_STATS,
            "--input",
            r#"{"text":"the cat and the hat\nthe end","top":2}"#,
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let value: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        value,
        json!({
            "lines": 2,
            "words": 7,
            "characters": 27,
            "top": [{ "word": "the", "count": 3 }, { "word": "and", "count": 1 }],
        })
    );
}

#[test]
fn a_javascript_skill_error_keeps_its_kind_and_message() {
    let home = tempfile::tempdir().unwrap();
    // Thrown by the skill (`SkillError.invalidInput`).
    let out = evo(
        home.path(),
        &[
            "skill",
            "run",
            skills::JS_TEXT_STATS,
            "--input",
            r#"{"text":"  "}"#,
        ],
    );
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains(
            "error[INVALID_INPUT]: js-text-stats: invalid input: text: is empty; give some words to count"
        ),
        "{}",
        stderr(&out)
    );
    // Refused by the host against the schema the skill declared, before it runs.
    let out = evo(
        home.path(),
        &[
            "skill",
            "run",
            skills::JS_TEXT_STATS,
            "--input",
            r#"{"top":2}"#,
        ],
    );
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains(
            "error[SKILL_VALIDATION_FAILED]: js-text-stats input does not match its schema"
        ),
        "{err}"
    );
    assert!(
        err.contains(r#"[text] required: expected a value for "text", got nothing. Provide `text` (The text to measure.)."#),
        "{err}"
    );
}
