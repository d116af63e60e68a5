//! The example skills written in several languages, run through `evo` as a user runs them:
//! the same behaviour is asked of every language, so the tests are written once here
//! and called from one module per skill (`js_text_stats`, `py_recall`, …).
//!
//! Their components are large (12 MB for JavaScript, 18 MB for Python) and slow to
//! compile in a debug build, so these runs share one compile cache (`EVO_CACHE_DIR`).

use std::path::Path;
use std::process::Output;

use evo_tests::cli::{evo_shared_cache, stderr, stdout};
use serde_json::{Value, json};

/// `evo ARGS` in `home`, with the shared compile cache.
fn evo(home: &Path, args: &[&str]) -> Output {
    evo_shared_cache(home, args)
}

/// Two lines for the text-stats skills to count, and what every language answers.
pub const TEXT_STATS_INPUT: &str = r#"{"text":"the cat and the hat\nthe end","top":2}"#;

/// What the text-stats skills answer to [`TEXT_STATS_INPUT`].
pub fn text_stats_answer() -> Value {
    json!({
        "lines": 2,
        "words": 7,
        "characters": 27,
        "top": [{ "word": "the", "count": 3 }, { "word": "and", "count": 1 }],
    })
}

/// The text-stats skill (`js-text-stats`, `py-text-stats`) at `path` counts words.
pub fn text_stats_counts_words(name: &str, path: &str) {
    let home = tempfile::tempdir().unwrap();
    let out = evo(
        home.path(),
        &["skill", "run", path, "--input", TEXT_STATS_INPUT],
    );
    assert!(out.status.success(), "{name}: {}", stderr(&out));
    let value: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(value, text_stats_answer(), "{name}");
}

/// The text-stats skill's own error keeps its kind and message, and the host refuses
/// input that breaks the schema the skill declared before the skill runs.
pub fn text_stats_errors(name: &str, path: &str) {
    let home = tempfile::tempdir().unwrap();
    let out = evo(
        home.path(),
        &["skill", "run", path, "--input", r#"{"text":"  "}"#],
    );
    assert!(!out.status.success());
    let expected = format!(
        "error[INVALID_INPUT]: {name}: invalid input: text: is empty; give some words to count"
    );
    assert!(stderr(&out).contains(&expected), "{}", stderr(&out));

    let out = evo(
        home.path(),
        &["skill", "run", path, "--input", r#"{"top":2}"#],
    );
    assert!(!out.status.success());
    let err = stderr(&out);
    let expected =
        format!("error[SKILL_VALIDATION_FAILED]: {name} input does not match its schema");
    assert!(err.contains(&expected), "{err}");
    assert!(
        err.contains(r#"[text] required: expected a value for "text", got nothing. Provide `text` (The text to measure.)."#),
        "{err}"
    );
}

/// A data directory with the recall skill installed from `src/NAME` and `grants`.
fn home_with_recall(name: &str, path: &str, grants: &str) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("src").join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(path, dir.join("skill.wasm")).unwrap();
    std::fs::write(
        home.path().join("evo.toml"),
        format!("skill_dirs = [\"src\"]\n{grants}"),
    )
    .unwrap();
    home
}

const RECALL_INPUT: &str =
    r#"{"fact":"The alpha server listens on port 8000","query":"alpha port","a":2,"b":3}"#;

/// The recall skill stores and searches memory, calls `calculate`, keeps scratch, and
/// emits an event and a log line; the fact is there for the next process.
pub fn recall_uses_the_context(name: &str, path: &str) {
    let home = home_with_recall(name, path, "[grants]\nmemory = \"read-write\"\n");
    let out = evo(
        home.path(),
        &["-v", "skill", "run", name, "--input", RECALL_INPUT],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let value: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        value,
        json!({
            "stored": true,
            "found": ["The alpha server listens on port 8000"],
            // Since evo:skill 0.2.0: where each entry came from, and the run's locale.
            "sources": ["user"],
            "locale": "en",
            "sum": 5,
            "runs": 1,
        })
    );
    let err = stderr(&out);
    assert!(
        err.contains("→ calculate {\"expression\":\"2 + 3\"}"),
        "{err}"
    );
    let event = format!(r#"event from {name}: {{"found":1,"type":"recalled"}}"#);
    assert!(err.contains(&event), "{err}");
    assert!(err.contains(r#"found 1 entries for "alpha port""#), "{err}");

    let out = evo(home.path(), &["memory", "search", "alpha port"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("The alpha server listens on port 8000"),
        "{}",
        stdout(&out)
    );
}

/// Without the memory grant the recall skill is denied, and nothing is stored.
pub fn recall_without_the_grant_is_denied(name: &str, path: &str) {
    let home = home_with_recall(name, path, "");
    let out = evo(
        home.path(),
        &["skill", "run", name, "--input", RECALL_INPUT],
    );
    assert!(!out.status.success());
    let expected = format!(
        "error[PERMISSION_DENIED]: {name}: denied: {name} was not granted write access to memory"
    );
    assert!(stderr(&out).contains(&expected), "{}", stderr(&out));
    let out = evo(home.path(), &["memory", "search", "alpha port"]);
    assert!(
        !stdout(&out).contains("alpha server"),
        "nothing was stored: {}",
        stdout(&out)
    );
}

/// The limits skill (`js-limits`, `py-limits`) is stopped by each limit with its own
/// error — `(mode, error)` pairs — and the next call works and its print reaches the
/// log. One data directory, as a user would have.
pub fn limits_stop_each_misbehaviour(name: &str, path: &str, cases: &[(&str, &str)]) {
    let home = tempfile::tempdir().unwrap();
    let run = |mode: &str| {
        let input = format!(r#"{{"mode":"{mode}"}}"#);
        evo(
            home.path(),
            &["-vv", "skill", "run", path, "--input", &input],
        )
    };
    for (mode, error) in cases {
        let out = run(mode);
        assert!(!out.status.success(), "{mode}: {}", stdout(&out));
        let error = format!("error[{error}");
        assert!(stderr(&out).contains(&error), "{mode}: {}", stderr(&out));
        assert!(stdout(&out).is_empty(), "{mode}: {}", stdout(&out));
    }
    let out = run("print");
    assert!(out.status.success(), "{}", stderr(&out));
    let printed = format!("printed by {name}");
    assert!(stderr(&out).contains(&printed), "{}", stderr(&out));
    assert!(
        stdout(&out).contains(r#""mode": "print""#),
        "{}",
        stdout(&out)
    );
}
