//! `skills-wasm/js/recall`: a JavaScript skill using the host's context — memory,
//! another skill, scratch, events and the log — through `evo skill run`.

use evo_tests::cli::{evo, stderr, stdout};
use evo_tests::skills;
use serde_json::{Value, json};

fn home_with_recall(grants: &str) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("src/js-recall");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(skills::JS_RECALL, dir.join("skill.wasm")).unwrap();
    std::fs::write(
        home.path().join("evo.toml"),
        format!("skill_dirs = [\"src\"]\n{grants}"),
    )
    .unwrap();
    home
}

const INPUT: &str =
    r#"{"fact":"The alpha server listens on port 8000","query":"alpha port","a":2,"b":3}"#;

#[test]
fn a_javascript_skill_stores_searches_and_calls_another_skill() {
    let home = home_with_recall("[grants]\nmemory = \"read-write\"\n");
    let out = evo(
        home.path(),
        &["-v", "skill", "run", "js-recall", "--input", INPUT],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let value: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        value,
        json!({
            "stored": true,
            "found": ["The alpha server listens on port 8000"],
            "sum": 5,
            "runs": 1,
        })
    );
    let err = stderr(&out);
    assert!(
        err.contains("→ calculate {\"expression\":\"2 + 3\"}"),
        "{err}"
    );
    assert!(
        err.contains(r#"event from js-recall: {"found":1,"type":"recalled"}"#),
        "{err}"
    );
    assert!(err.contains(r#"found 1 entries for "alpha port""#), "{err}");

    // The fact is in the store for the next process.
    let out = evo(home.path(), &["memory", "search", "alpha port"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("The alpha server listens on port 8000"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn a_javascript_skill_without_the_memory_grant_is_denied() {
    let home = home_with_recall("");
    let out = evo(
        home.path(),
        &["skill", "run", "js-recall", "--input", INPUT],
    );
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains(
            "error[PERMISSION_DENIED]: js-recall: denied: js-recall was not granted write access to memory"
        ),
        "{}",
        stderr(&out)
    );
    let out = evo(home.path(), &["memory", "search", "alpha port"]);
    assert!(
        !stdout(&out).contains("alpha server"),
        "nothing was stored: {}",
        stdout(&out)
    );
}
