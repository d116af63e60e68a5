//! `py-plain-shapes`: a plain WIT component built with componentize-py against its own
//! world — no Evo SDK, no Evo WIT — runs through `evo` like any skill, with the same
//! answers as its JavaScript twin.

use evo_tests::cli::{evo_shared_cache, stderr, stdout};
use serde_json::{Value, json};

/// The shapes component at `wasm` (built from `skills-wasm/LANG/plain-shapes`) answers
/// every function through `evo`, and fails with its error value.
pub fn shapes_answer(lang: &str, wasm: &str) {
    let home = tempfile::tempdir().unwrap();
    // Named as a user would name the file, so its skills are `shapes__…`.
    let file = home.path().join("shapes.wasm");
    std::fs::copy(wasm, &file).unwrap();
    let file = file.display().to_string();
    let run = |function: &str, input: Value| {
        let skill = format!("{file}#{function}");
        let input = input.to_string();
        evo_shared_cache(home.path(), &["skill", "run", &skill, "--input", &input])
    };
    let cases = [
        ("greet", json!({ "name": "Ada" }), json!("hello, Ada")),
        // A u64 past 2^53 survives JavaScript's BigInt and Python's int both ways.
        (
            "double",
            json!({ "n": "9223372036854775807" }),
            json!("18446744073709551614"),
        ),
        ("double", json!({ "n": "9223372036854775809" }), json!(2)),
        ("double", json!({ "n": 21 }), json!(42)),
        (
            "geometry/area",
            json!({ "s": { "tag": "rect", "val": { "x": 2, "y": -3 } } }),
            json!(6.0),
        ),
        (
            "shapes__geometry__centroid",
            json!({ "points": [{ "x": 0, "y": 0 }, { "x": 2, "y": 4 }] }),
            json!({ "x": 1.0, "y": 2.0 }),
        ),
    ];
    for (function, input, expected) in cases {
        let out = run(function, input.clone());
        assert!(
            out.status.success(),
            "{lang} {function} {input}: {}",
            stderr(&out)
        );
        let value: Value = serde_json::from_str(&stdout(&out)).unwrap();
        assert_eq!(value, expected, "{lang} {function} {input}");
    }
    let out = run("geometry/centroid", json!({ "points": [] }));
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains(
            r#"error[SKILL_FAILED]: shapes__geometry__centroid: failed: "there are no points""#
        ),
        "{lang}: {}",
        stderr(&out)
    );
    let out = run("geometry/area", json!({ "s": { "tag": "triangle" } }));
    assert!(
        stderr(&out).contains("error[SKILL_VALIDATION_FAILED]"),
        "{lang}: {}",
        stderr(&out)
    );
}

#[test]
fn a_python_plain_component_runs_through_evo() {
    shapes_answer("py", evo_tests::skills::PY_PLAIN_SHAPES);
}

#[test]
fn componentize_pys_own_start_up_function_is_not_a_tool() {
    // "componentize-py's `exports/init` is listed as a skill (a ~300-line schema) and
    // traps when called. Recognise toolchain-internal exports and leave them out, with
    // the reason in `skill info`."
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join("shapes.wasm");
    std::fs::copy(evo_tests::skills::PY_PLAIN_SHAPES, &file).unwrap();
    let file = file.display().to_string();
    let out = evo_shared_cache(home.path(), &["--json", "skill", "info", &file]);
    assert!(out.status.success(), "{}", stderr(&out));
    let info: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let skills: Vec<&str> = info["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        skills,
        [
            "shapes__greet",
            "shapes__double",
            "shapes__geometry__area",
            "shapes__geometry__centroid"
        ],
        "{info}"
    );
    let text = stdout(&evo_shared_cache(home.path(), &["skill", "info", &file]));
    assert!(
        text.contains("exports/init") && text.contains("componentize-py's own start-up function"),
        "{text}"
    );
    let out = evo_shared_cache(
        home.path(),
        &[
            "skill",
            "run",
            &format!("{file}#exports/init"),
            "--input",
            "{}",
        ],
    );
    assert!(!out.status.success());
}
