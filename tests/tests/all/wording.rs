//! What `evo` prints, read the way a user reads it: whole sentences, the whole manual,
//! reports that show what was sent, statistics of use rather than of rehearsals, and
//! warnings about what is actually wrong.

use evo_tests::cli::{evo, stderr, stdout};
use evo_tests::skills;
use serde_json::Value;

#[test]
fn the_man_page_covers_every_subcommand() {
    let home = tempfile::tempdir().unwrap();
    let out = evo(home.path(), &["man"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let page = stdout(&out);
    for section in [
        ".SH \"EVO SKILL RUN\"",
        ".SH \"EVO SKILL INSTALL\"",
        ".SH \"EVO TOOL CALL\"",
        ".SH \"EVO MEMORY SEARCH\"",
        ".SH \"EVO SERVE\"",
        ".SH \"EVO CONFIG SHOW\"",
    ] {
        assert!(page.contains(section), "{section} is missing");
    }
    // A subcommand's own options, not only the top-level ones.
    assert!(
        page.contains("allow\\-host"),
        "evo skill run's --allow-host"
    );
    assert!(!page.contains("__native"), "internal commands stay out");
}

#[test]
fn tool_list_keeps_a_description_whole_up_to_its_sentence_end() {
    let home = tempfile::tempdir().unwrap();
    let out = evo(home.path(), &["tool", "list"]);
    let list = stdout(&out);
    let calculate = list
        .lines()
        .find(|l| l.starts_with("calculate "))
        .unwrap_or_else(|| panic!("{list}"));
    assert!(
        calculate
            .ends_with("Evaluates an arithmetic expression exactly, e.g. `sqrt(144) + 10` → 22."),
        "{calculate}"
    );
}

#[test]
fn a_schema_report_shows_what_was_sent_not_the_defaults() {
    let home = tempfile::tempdir().unwrap();
    let skill = home.path().join("convert");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("skill.json"),
        r#"{
          "name": "convert",
          "description": "Converts a length.",
          "mode": "composite",
          "calls": ["calculate"],
          "input": {
            "type": "object",
            "properties": {
              "n": { "type": "number" },
              "unit": { "type": "string", "default": "cm" }
            },
            "required": ["n"],
            "additionalProperties": false
          },
          "pipeline": [{ "step": "a", "skill": "calculate", "input": { "expression": "1 + 1" } }]
        }"#,
    )
    .unwrap();
    let out = evo(
        home.path(),
        &[
            "skill",
            "run",
            skill.to_str().unwrap(),
            "--input",
            r#"{"n":1,"x":2}"#,
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    // A one-off call has one try: no "attempt 1 of 3".
    assert!(
        err.starts_with(
            "error[SKILL_VALIDATION_FAILED]: convert input does not match its schema:\n"
        ),
        "{err}"
    );
    assert!(err.contains(r#"got {"n":1,"x":2}"#), "{err}");
    assert!(
        !err.contains(r#""unit":"cm""#),
        "a default it never sent: {err}"
    );
}

#[test]
fn skill_test_cases_that_expect_an_error_are_not_failures_in_the_statistics() {
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join("calc");
    std::fs::create_dir_all(project.join("tests")).unwrap();
    std::fs::copy(skills::CALCULATE, project.join("skill.wasm")).unwrap();
    std::fs::write(
        project.join("tests/adds.json"),
        r#"{ "input": { "expression": "1 + 1" }, "output": { "result": 2 } }"#,
    )
    .unwrap();
    std::fs::write(
        project.join("tests/refuses.json"),
        r#"{ "input": { "expression": "1 +" }, "error": "INVALID_INPUT" }"#,
    )
    .unwrap();
    let out = evo(
        home.path(),
        &["skill", "test", project.to_str().unwrap(), "--no-build"],
    );
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert!(
        stdout(&out).contains("2 passed, 0 failed"),
        "{}",
        stdout(&out)
    );

    let out = evo(home.path(), &["skill", "stats", "--json"]);
    let stats: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let text = stats.to_string();
    assert!(
        !text.contains("\"calculate\""),
        "a rehearsal is not use: {stats:#}"
    );
    // A real call is.
    let out = evo(
        home.path(),
        &[
            "skill",
            "run",
            skills::CALCULATE,
            "--input",
            r#"{"expression":"1 +"}"#,
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    let out = evo(home.path(), &["skill", "stats", "--json"]);
    assert!(stdout(&out).contains("\"calculate\""), "{}", stdout(&out));
}

#[test]
fn a_slow_call_is_not_a_warning_without_verbose() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let args = [
        "tool",
        "call",
        "bash",
        "--input",
        r#"{"command":"sleep 0.6"}"#,
    ];
    let out = evo_tests::cli::command(home.path(), &args)
        .current_dir(project.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("took"), "{}", stderr(&out));
    let mut verbose = args.to_vec();
    verbose.push("-v");
    let out = evo_tests::cli::command(home.path(), &verbose)
        .current_dir(project.path())
        .output()
        .unwrap();
    assert!(stderr(&out).contains("bash took"), "{}", stderr(&out));
}

#[test]
fn one_remote_that_does_not_answer_is_named_alone() {
    let home = tempfile::tempdir().unwrap();
    for (name, url) in [("b", "http://127.0.0.1:9"), ("c", "http://127.0.0.1:10")] {
        let mut args = vec!["remote", "add", name, url];
        if name == "b" {
            args.extend(["--token-secret", "B_TOKEN"]);
        }
        let out = evo(home.path(), &args);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let out = evo(home.path(), &["skill", "list"]);
    let err = stderr(&out);
    assert!(
        err.contains(
            "warning: remote b: its skills are left out: [REMOTE_UNAVAILABLE] b: its token, secret B_TOKEN, is not set"
        ),
        "{err}"
    );
    assert!(
        err.contains("warning: remote c: its skills are left out:"),
        "{err}"
    );
    assert!(!err.contains("skipped"), "not the whole file: {err}");
    // The built-in tools are listed all the same.
    assert!(stdout(&out).contains("calculate"), "{}", stdout(&out));
}
