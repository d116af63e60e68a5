//! What `evo` prints, read the way a user reads it: whole sentences, the whole manual,
//! reports that show what was sent, statistics of use rather than of rehearsals, and
//! warnings about what is actually wrong.

use std::path::Path;

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
    // One page: no pointer at pages that are not installed, no `help` sections that
    // repeat the others, and the examples as lines, not one filled paragraph.
    assert!(!page.contains("(1)"), "a reference to another man page");
    assert!(page.contains("\\fBevo skill\\fR (section EVO SKILL below)"));
    assert!(!page.contains(" HELP"), "help sections");
    let examples = page
        .split(".SH EXAMPLES\n")
        .nth(1)
        .expect("an EXAMPLES section");
    assert!(examples.starts_with(".nf\n"), "{examples}");
    assert!(
        examples
            .split(".SH ")
            .next()
            .unwrap()
            .trim_end()
            .ends_with(".fi"),
        "{examples}"
    );
    let sections = page.matches("\n.SH ").count();
    assert!(sections < 80, "{sections} sections");
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

/// The hints a new user meets in the first hour, each saying what fits the case.
#[test]
fn the_first_hours_mistakes_get_hints_that_fit_them() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let out = evo_tests::cli::command(home.path(), args)
            .current_dir(work.path())
            .output()
            .unwrap();
        (out.status.code(), stderr(&out), stdout(&out))
    };

    // A core module is named as the user named it, with how to make it a component.
    std::fs::write(work.path().join("core.wasm"), b"\0asm\x01\0\0\0").unwrap();
    let (code, err, _) = run(&["skill", "install", "core.wasm"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.starts_with("error[INVALID_COMPONENT]: core.wasm: "),
        "{err}"
    );
    assert!(err.contains("wasm-tools component new"), "{err}");
    assert!(!err.contains("SKILL.md"), "{err}");
    // A directory with nothing of a skill: every file that would make one is named.
    std::fs::create_dir(work.path().join("empty")).unwrap();
    let (_, err, _) = run(&["skill", "install", "empty"]);
    for file in ["SKILL.md", "skill.json", "prompt.md", "skill.wasm"] {
        assert!(err.contains(file), "{file}: {err}");
    }
    // Not installed at all is not "not installed from a registry".
    let (code, err, _) = run(&["skill", "update", "nosuch"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.starts_with("error[SKILL_NOT_FOUND]"), "{err}");
    // Each of these has a hint.
    for args in [
        &["skill", "list", "--skills-dir", "nowhere"][..],
        &["secret", "set", "lower"],
    ] {
        let (_, err, _) = run(args);
        assert!(err.contains("\n  hint: "), "{args:?}: {err}");
    }
    // Input read from stdin is not quoted for a shell.
    let mut child =
        evo_tests::cli::command(home.path(), &["skill", "run", "calculate", "--input", "-"])
            .stdin(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
    {
        use std::io::Write as _;
        child.stdin.take().unwrap().write_all(b"{bad").unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert!(stderr(&out).contains("stdin"), "{}", stderr(&out));
    assert!(!stderr(&out).contains("quote the JSON"), "{}", stderr(&out));

    // What a skill uses by being what it is: git-commit runs programs, an llm skill the
    // model; and `digest:` is the same line in `install` and `info`.
    let git_commit = Path::new(env!("CARGO_MANIFEST_DIR")).join("../skills-native/git-commit");
    let (code, err, out) = run(&["skill", "install", git_commit.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    assert!(!out.contains("nothing (pure computation)"), "{out}");
    assert!(out.contains("requests:   a Node process"), "{out}");
    let tagline = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/authoring/examples/tagline");
    let (code, err, out) = run(&["skill", "install", tagline.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("requests:   the language model"), "{out}");
    let (code, err, out) = run(&["skill", "install", skills::FILE_HEAD]);
    assert_eq!(code, Some(0), "{err}");
    let digest = |text: &str| {
        text.lines()
            .find_map(|l| l.trim().strip_prefix("digest:"))
            .map(|d| d.trim().to_owned())
    };
    let installed = digest(&out).unwrap_or_else(|| panic!("{out}"));
    let (_, _, info) = run(&["skill", "info", "file-head"]);
    assert_eq!(digest(&info), Some(installed), "{info}");
}
