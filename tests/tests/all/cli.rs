//! The `evo` binary as a user runs it: output, `--json`, error lines and exit codes.

use std::process::{Command, Output};

use evo_tests::{evo_bin, skills};
use serde_json::{Value, json};

fn evo(data_dir: &std::path::Path, args: &[&str]) -> Output {
    Command::new(evo_bin())
        .args(args)
        .env("EVO_HOME", data_dir)
        .env_remove("EVO_LOG")
        .output()
        .expect("evo runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn skill_run_prints_the_output() {
    let home = tempfile::tempdir().unwrap();
    let out = evo(
        home.path(),
        &[
            "skill",
            "run",
            skills::CALCULATE,
            "--input",
            r#"{"expression":"sqrt(144) + 10"}"#,
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let value: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(value, json!({ "result": 22 }));
    assert!(
        home.path()
            .join("cache/wasm")
            .read_dir()
            .unwrap()
            .next()
            .is_some(),
        "compiled component cached in EVO_HOME"
    );
}

#[test]
fn skill_run_json_prints_the_whole_result() {
    let home = tempfile::tempdir().unwrap();
    let out = evo(
        home.path(),
        &[
            "skill",
            "run",
            skills::CALCULATE,
            "--json",
            "--input",
            r#"{"expression":"1+2"}"#,
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let value: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(value["success"], true);
    assert_eq!(value["output"], json!({ "result": 3 }));
    assert!(value["duration"].as_f64().unwrap() > 0.0);
}

#[test]
fn a_failing_skill_exits_1_with_the_code() {
    let home = tempfile::tempdir().unwrap();
    let out = evo(
        home.path(),
        &[
            "skill",
            "run",
            skills::FILE_HEAD,
            "--input",
            r#"{"path":"/data/x"}"#,
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.starts_with("error[PERMISSION_DENIED]: file-head: denied:"),
        "{err}"
    );
    assert!(err.contains("hint: grant the capability"), "{err}");
}

#[test]
fn a_granted_dir_is_readable_from_the_cli() {
    let home = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    std::fs::write(data.path().join("a.txt"), "alpha\nbeta\n").unwrap();
    let grant = format!("{}::/data:ro", data.path().display());
    let out = evo(
        home.path(),
        &[
            "skill",
            "run",
            skills::FILE_HEAD,
            "--dir",
            &grant,
            "--input",
            r#"{"path":"a.txt"}"#,
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let value: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        value,
        json!({ "lines": ["alpha", "beta"], "truncated": false })
    );
}

#[test]
fn bad_input_exits_2() {
    let home = tempfile::tempdir().unwrap();
    let out = evo(
        home.path(),
        &["skill", "run", skills::CALCULATE, "--input", "{not json"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).starts_with("error[INVALID_INPUT]: --input is not valid JSON"),
        "{}",
        stderr(&out)
    );

    let out = evo(home.path(), &["skill", "run", "/no/such.wasm", "--json"]);
    assert_eq!(out.status.code(), Some(2));
    let value: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(value["code"], "SKILL_NOT_FOUND");

    let out = evo(
        home.path(),
        &[
            "skill",
            "run",
            skills::FILE_HEAD,
            "--dir",
            "/no/such/dir::/data",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out)
            .starts_with("error[INVALID_ARGUMENT]: --dir /no/such/dir::/data: /no/such/dir:"),
        "{}",
        stderr(&out)
    );

    let not_wasm = home.path().join("README.md");
    std::fs::write(&not_wasm, "# hello").unwrap();
    let out = evo(home.path(), &["skill", "run", not_wasm.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out)
            .starts_with("error[INVALID_COMPONENT]: README.md: not a WebAssembly component"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn skill_info_shows_what_would_be_granted() {
    let home = tempfile::tempdir().unwrap();
    let out = evo(home.path(), &["skill", "info", skills::FILE_HEAD, "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let value: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(value["manifest"]["name"], "file-head");
    assert_eq!(
        value["manifest"]["capabilities"]["dirs"][0]["path"],
        "/data"
    );
    assert_eq!(value["grant"]["dirs"], json!([]));
    assert_eq!(value["limits"]["timeoutMs"], 5000);
    let human = evo(home.path(), &["skill", "info", skills::FILE_HEAD]);
    assert!(
        stdout(&human).contains("not granted: directory /data"),
        "{}",
        stdout(&human)
    );
}

#[test]
fn help_lists_the_commands() {
    let home = tempfile::tempdir().unwrap();
    let out = evo(home.path(), &["--help"]);
    assert!(out.status.success());
    let help = stdout(&out);
    assert!(
        help.contains("skill") && help.contains("--data-dir") && help.contains("--json"),
        "{help}"
    );
    let out = evo(home.path(), &["skill", "frobnicate"]);
    assert_eq!(out.status.code(), Some(2));
}
