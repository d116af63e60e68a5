//! A dangerous call over MCP asks the client's user, with the official Python SDK's
//! elicitation callback answering: `elicitation/create` on a 2025-11-25 session, the
//! input-required result and a second `tools/call` on 2026-07-28, and the host's
//! `[tools] confirm` policy for a client that declared no elicitation.

use std::path::Path;

use evo_tests::cli::{HttpServer, command};
use serde_json::Value;

const ORIGINAL: &str = "call Ada on Monday\n";
const REPLACED: &str = "replaced by the model\n";

fn script() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp/confirm.py")
}

/// A project whose notes.txt the model wants to replace, and a data directory.
fn project() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let root = tempfile::tempdir().unwrap();
    let home = root.path().join("home");
    let project = root.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(project.join("notes.txt"), ORIGINAL).unwrap();
    (root, home, project)
}

fn run(args: &[&str]) -> Value {
    crate::serve::run_python(&script(), args)
}

/// Checks what the user was asked (the tool, the risk, the warning, one box to tick)
/// and what became of the call and the file for `answer`.
fn check(report: &Value, project: &Path, protocol: &str, answer: &str) {
    assert_eq!(report["protocol"], protocol, "{report:#}");
    let notes = std::fs::read_to_string(project.join("notes.txt")).unwrap();
    let text = report["text"].as_str().unwrap_or_default();
    if answer == "none" {
        assert_eq!(report["asked"], serde_json::json!([]), "{report:#}");
        assert_eq!(report["isError"], true, "{report:#}");
        assert!(
            text.contains("nobody can be asked here"),
            "a client without elicitation gets the host's policy (deny): {text}"
        );
        assert_eq!(notes, ORIGINAL);
        return;
    }
    let asked = report["asked"].as_array().unwrap();
    assert_eq!(asked.len(), 1, "asked once: {report:#}");
    let message = asked[0]["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "write wants to run (medium risk): notes.txt exists (19 bytes) and will be replaced by 22 bytes"
        ),
        "{message}"
    );
    let schema = &asked[0]["schema"];
    assert_eq!(
        schema["properties"]["confirm"]["type"], "boolean",
        "{schema}"
    );
    assert_eq!(
        schema["required"],
        serde_json::json!(["confirm"]),
        "{schema}"
    );
    if answer == "accept" {
        assert_eq!(report["isError"], false, "{report:#}");
        let output: Value = serde_json::from_str(text).unwrap();
        assert_eq!(output["created"], false, "{output}");
        assert_eq!(notes, REPLACED);
    } else {
        assert_eq!(report["isError"], true, "{report:#}");
        assert!(
            text.starts_with(
                "error[TOOL_BLOCKED]: write: the user declined (medium risk): notes.txt exists (19 bytes)"
            ),
            "{answer}: {text}"
        );
        assert_eq!(notes, ORIGINAL, "{answer} leaves the file as it was");
    }
}

#[test]
fn a_dangerous_call_over_stdio_asks_the_clients_user() {
    // 用户确认机制: a dangerous operation asks the user first, with the tool, its
    // arguments, the risk and a warning, and runs only once confirmed.
    let evo = evo_tests::evo_bin();
    for (mode, protocol) in [("auto", "2026-07-28"), ("legacy", "2025-11-25")] {
        for answer in ["accept", "decline", "cancel", "untick", "none"] {
            let (_root, home, project) = project();
            let report = run(&[
                "stdio",
                evo.to_str().unwrap(),
                home.to_str().unwrap(),
                project.to_str().unwrap(),
                mode,
                answer,
            ]);
            check(&report, &project, protocol, answer);
        }
    }
}

#[test]
fn a_dangerous_call_over_http_asks_the_clients_user() {
    // On 2026-07-28 each round is its own HTTP request: the call waits on the server
    // between the input-required result and the retry that answers it.
    for (mode, protocol, answer) in [
        ("auto", "2026-07-28", "accept"),
        ("auto", "2026-07-28", "decline"),
        ("legacy", "2025-11-25", "accept"),
    ] {
        let (_root, home, project) = project();
        let mut serve = command(&home, &["serve", "--http", "127.0.0.1:0"]);
        serve.current_dir(&project);
        let server = HttpServer::start_command(serve);
        let report = run(&["http", &format!("{}/mcp", server.base), mode, answer]);
        check(&report, &project, protocol, answer);
    }
}

#[test]
fn a_clients_answer_cannot_be_moved_to_another_call_or_forged() {
    // A hostile client driving the rounds itself: the user's yes sent with other
    // arguments, or with a requestState the server never gave, runs nothing; the
    // question still waits for its own call, which the user then declines.
    let (_root, home, project) = project();
    let evo = evo_tests::evo_bin();
    let report = run(&[
        "stdio",
        evo.to_str().unwrap(),
        home.to_str().unwrap(),
        project.to_str().unwrap(),
        "auto",
        "tamper",
    ]);
    assert_eq!(report["first"], "InputRequiredResult", "{report:#}");
    assert_eq!(
        report["asked"],
        serde_json::json!(["confirm"]),
        "{report:#}"
    );
    let error = |name: &str| {
        report["errors"][name]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    assert!(
        error("other-arguments")
            .contains("this requestState belongs to a call of write with other arguments"),
        "{report:#}"
    );
    assert!(
        error("forged-state").contains("no call of write waits for this requestState"),
        "{report:#}"
    );
    assert_eq!(report["isError"], true, "{report:#}");
    assert!(
        report["text"]
            .as_str()
            .unwrap()
            .starts_with("error[TOOL_BLOCKED]: write: the user declined"),
        "{report:#}"
    );
    assert_eq!(
        std::fs::read_to_string(project.join("notes.txt")).unwrap(),
        ORIGINAL,
        "neither the tampered yes nor the no wrote anything"
    );
}
