//! What a call returns beside its output, through every front end a user takes (`evo
//! skill run`, the HTTP API, MCP): the memory writes a skill suggested, kept in memory
//! with what became of each, and the steps a failed composite skill ran.

use std::path::Path;

use evo_tests::cli::{HttpServer, evo, stderr, stdout};
use evo_tests::skills;
use serde_json::{Value, json};

use crate::serve::Raw;
use crate::serve_http::http;

/// `notes`' input that adds `text` as an important note, which it suggests for memory.
fn important(text: &str) -> String {
    json!({ "op": "add", "text": text, "important": true }).to_string()
}

/// `evo memory search QUERY --json` in `home`: the texts found.
fn memory_texts(home: &Path, query: &str) -> Vec<String> {
    let out = evo(home, &["memory", "search", query, "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let hits: Value = serde_json::from_str(&stdout(&out)).unwrap();
    hits["results"]
        .as_array()
        .unwrap_or_else(|| panic!("{hits}"))
        .iter()
        .map(|h| h["text"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn through_the_cli_a_skills_memory_writes_are_kept_and_the_result_says_how() {
    // "WHEN a skill execution completes THEN the system SHALL collect memoryWrites from
    // the result AND submit them to IMemoryService.appendMemory."
    let home = tempfile::tempdir().unwrap();
    let run = |text: &str, grant: bool| {
        let input = important(text);
        let mut args = vec!["skill", "run", skills::NOTES, "--input", &input, "--json"];
        if grant {
            args.extend(["--allow-memory", "read-write"]);
        }
        let out = evo(home.path(), &args);
        assert!(out.status.success(), "{}", stderr(&out));
        serde_json::from_str::<Value>(&stdout(&out)).unwrap()
    };

    let first = run("The boiler service code is 4417", true);
    let kept = &first["memory"][0];
    assert_eq!(
        (&kept["text"], &kept["status"]),
        (&json!("The boiler service code is 4417"), &json!("kept")),
        "{first}"
    );
    let id = kept["id"].as_str().expect("a kept write names its entry");
    assert_eq!(
        memory_texts(home.path(), "boiler service code"),
        ["The boiler service code is 4417"]
    );

    // Suggested again: merged into the entry that says it, not stored twice.
    let again = run("The boiler service code is 4417", true);
    assert_eq!(again["memory"][0]["status"], "merged", "{again}");
    assert_eq!(again["memory"][0]["id"], id);

    // Without the grant: refused, with what would allow it, and nothing stored.
    let refused = run("The gate code is 9021", false);
    assert_eq!(refused["memory"][0]["status"], "refused", "{refused}");
    assert!(
        refused["memory"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("--allow-memory read-write"),
        "{refused}"
    );
    assert!(!memory_texts(home.path(), "gate code").contains(&"The gate code is 9021".to_owned()));

    // Without --json the user is told on stderr.
    let input = important("The boiler service code is 4417");
    let out = evo(
        home.path(),
        &[
            "skill",
            "run",
            skills::NOTES,
            "--input",
            &input,
            "--allow-memory",
            "read-write",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!(
            "memory: merged \"The boiler service code is 4417\" into {id}, which already says it"
        )),
        "{}",
        stderr(&out)
    );
}

/// A data directory with `notes` installed and granted memory, and the composite
/// `two-sums` whose second step fails.
fn served_home(root: &Path) -> std::path::PathBuf {
    let home = root.join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        home.join("evo.toml"),
        "[grants.skill.notes]\nmemory = \"read-write\"\n",
    )
    .unwrap();
    let out = evo(&home, &["skill", "install", skills::NOTES]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = evo(
        &home,
        &["skill", "install", two_sums(root).to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    home
}

/// A composite skill whose first step works and whose second cannot.
fn two_sums(root: &Path) -> std::path::PathBuf {
    let dir = root.join("two-sums");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        "---\nname: two-sums\ndescription: Adds two numbers, then adds a broken expression to the sum.\n---\n",
    )
    .unwrap();
    let manifest = json!({
        "name": "two-sums",
        "description": "Adds two numbers, then adds a broken expression to the sum.",
        "input": {
            "type": "object",
            "properties": { "a": { "type": "number" }, "b": { "type": "number" } },
            "required": ["a", "b"]
        },
        "mode": "composite",
        "calls": ["calculate"],
        "pipeline": [
            { "step": "sum", "skill": "calculate", "input": { "expression": "{{input.a}} + {{input.b}}" } },
            { "step": "broken", "skill": "calculate", "input": { "expression": "{{steps.sum.result}} + (" } }
        ]
    });
    std::fs::write(dir.join("skill.json"), manifest.to_string()).unwrap();
    dir
}

/// The steps a failed `two-sums` reports: `sum` with its input and output, then
/// `broken` with its input and error.
fn assert_trail(steps: &Value) {
    let steps = steps
        .as_array()
        .unwrap_or_else(|| panic!("no steps: {steps}"));
    assert_eq!(steps.len(), 2, "{steps:?}");
    assert_eq!(steps[0]["stepName"], "sum (calculate)");
    assert_eq!(steps[0]["input"], json!({ "expression": "2 + 3" }));
    assert_eq!(steps[0]["output"], json!({ "result": 5 }));
    assert!(steps[0].get("error").is_none(), "{steps:?}");
    assert_eq!(steps[1]["stepName"], "broken (calculate)");
    assert_eq!(steps[1]["input"], json!({ "expression": "5 + (" }));
    assert_eq!(steps[1]["output"], Value::Null);
    assert!(steps[1]["error"].is_string(), "{steps:?}");
}

#[test]
fn a_failed_composite_returns_the_steps_that_ran_through_every_front_end() {
    // "each step SHALL be tracked in intermediateSteps with: stepId, stepName, input,
    // output, duration, error?: Optional error if step failed".
    let root = tempfile::tempdir().unwrap();
    let home = served_home(root.path());
    let input = json!({ "a": 2, "b": 3 }).to_string();

    // The CLI: `--json` carries them beside the error; the text says which ran.
    let out = evo(
        &home,
        &["skill", "run", "two-sums", "--input", &input, "--json"],
    );
    assert!(!out.status.success());
    let failed: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(failed["success"], false);
    assert!(
        failed["error"]
            .as_str()
            .unwrap()
            .starts_with("two-sums: step `broken` failed: "),
        "{failed}"
    );
    assert_trail(&failed["intermediateSteps"]);
    let out = evo(&home, &["skill", "run", "two-sums", "--input", &input]);
    let text = stderr(&out);
    assert!(text.contains("steps that ran"), "{text}");
    assert!(text.contains("✓ sum (calculate)"), "{text}");
    assert!(text.contains("✗ broken (calculate)"), "{text}");

    // The HTTP API: in the error body.
    let server = HttpServer::start(&home, &[]);
    let (status, body) = http(
        "POST",
        &format!("{}/v1/skills/two-sums/call", server.base),
        &[],
        Some(&input),
    );
    assert!(status >= 400, "{status} {body}");
    assert_trail(&body["intermediate_steps"]);

    // MCP: the isError result's content, and its _meta.
    let mut raw = Raw::start_in(&home, Path::new("."), &[]);
    raw.call(1, "two-sums", json!({ "a": 2, "b": 3 }));
    let answer = raw.expect_id(1);
    let result = &answer["result"];
    assert_eq!(result["isError"], true, "{answer}");
    let content = result["content"].as_array().unwrap();
    assert!(
        content[0]["text"].as_str().unwrap().starts_with(
            "error[INVALID_INPUT]: two-sums: step `broken` failed: calculate: invalid input"
        ),
        "{answer}"
    );
    let trail: Value = serde_json::from_str(content[1]["text"].as_str().unwrap()).unwrap();
    assert_trail(&trail["intermediateSteps"]);
    assert_trail(&result["_meta"]["evo/intermediateSteps"]);
}

#[test]
fn a_served_skills_memory_writes_are_kept_over_http_and_mcp() {
    let root = tempfile::tempdir().unwrap();
    let home = served_home(root.path());

    // The HTTP API.
    let server = HttpServer::start(&home, &[]);
    let (status, body) = http(
        "POST",
        &format!("{}/v1/skills/notes/call", server.base),
        &[],
        Some(&important("The staging database is called heron")),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["memory"][0]["status"], "kept", "{body}");
    let (_, found) = http(
        "POST",
        &format!("{}/v1/memory/search", server.base),
        &[],
        Some(&json!({ "query": "staging database" }).to_string()),
    );
    assert_eq!(
        found[0]["text"], "The staging database is called heron",
        "{found}"
    );
    assert_eq!(found[0]["source"], "skill");
    drop(server);

    // MCP: the answer's content tells the client's model, `_meta` a program.
    let mut raw = Raw::start_in(&home, Path::new("."), &[]);
    raw.call(
        1,
        "notes",
        json!({ "op": "add", "text": "The release train leaves on Thursdays", "important": true }),
    );
    let answer = raw.expect_id(1);
    let result = &answer["result"];
    assert_eq!(result["isError"], false, "{answer}");
    let content = result["content"].as_array().unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(content[0]["text"].as_str().unwrap()).unwrap(),
        json!({ "notes": ["The release train leaves on Thursdays"] })
    );
    let told: Value = serde_json::from_str(content[1]["text"].as_str().unwrap()).unwrap();
    assert_eq!(told["memory"][0]["status"], "kept", "{answer}");
    assert_eq!(
        result["_meta"]["evo/memory"][0]["status"], "kept",
        "{answer}"
    );
    drop(raw);
    assert!(
        memory_texts(&home, "release train")
            .contains(&"The release train leaves on Thursdays".to_owned())
    );
}
