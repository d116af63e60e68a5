//! The embedding examples in `host/examples/` run as a reader would run them, so they
//! cannot rot.

use std::process::Command;

use evo_tests::{evo_bin, skills};

fn example(name: &str, args: &[&str]) -> (String, String) {
    let bin = evo_bin()
        .parent()
        .expect("target/<profile>")
        .join("examples")
        .join(name);
    assert!(
        bin.exists(),
        "{} is missing: ./scripts/test builds it (`cargo build -p evo-host --examples`)",
        bin.display()
    );
    let mut command = Command::new(&bin);
    for var in evo_tests::HOST_SETTINGS {
        command.env_remove(var);
    }
    let out = command.args(args).output().expect("the example runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{name}: {stderr}");
    (stdout, stderr)
}

#[test]
fn embed_wasm_calls_a_component_with_every_feature_and_with_none() {
    // `embed_wasm-minimal` is the same example against `evo-host` with
    // `default-features = false`, as an embedder who wants only Wasm skills builds it
    // (./scripts/test keeps it under that name).
    for name in ["embed_wasm", "embed_wasm-minimal"] {
        let (out, _) = example(name, &[skills::CALCULATE, r#"{"expression":"2 ^ 10"}"#]);
        // The component, not the built-in `calculate` it shares a name with.
        assert_eq!(out, "calculate (wasm) → {\"result\":1024}\n", "{name}");
    }
}

#[test]
fn custom_tool_is_a_skill_with_gates() {
    let (out, _) = example("custom_tool", &[]);
    assert_eq!(
        out,
        "word_count → {\"words\":7}\nword_count with a number → error[SKILL_VALIDATION_FAILED]\n"
    );
}

#[test]
fn scripted_agent_calls_a_skill_and_answers() {
    let (out, err) = example("scripted_agent", &[]);
    // What the scripted model says proves nothing; what the real skill answered does.
    assert_eq!(
        err,
        "→ calculate {\"expression\":\"sqrt(144) + 10\"}\n← calculate {\"result\":22}\n"
    );
    assert_eq!(out, "The answer is 22.\n");
}

#[test]
fn recall_tool_reads_the_hosts_memory_through_the_namespaces() {
    let (out, _) = example("recall_tool", &[]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        "recall — Answers a question from what the memory holds about the user."
    );
    let answer: serde_json::Value = serde_json::from_str(lines[1]).unwrap();
    assert_eq!(
        answer["fact"], "The user's favourite editor is Helix",
        "{out}"
    );
    assert_eq!(lines[2], "SKILL_VALIDATION_FAILED");
    // It names nothing but the root and the namespaces (the layering test checks every
    // example for that); the three it was written to show are these.
    let source = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../host/examples/recall_tool.rs"),
    )
    .unwrap();
    for namespace in [
        "evo_host::memory::",
        "evo_host::skills::",
        "evo_host::tools::",
    ] {
        assert!(source.contains(namespace), "{namespace}");
    }
}
