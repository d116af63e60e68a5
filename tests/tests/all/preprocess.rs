//! Preprocessors (`[preprocess]`): skills that transform an agent's message before
//! recall and routing, or a skill's input before its gates — here, a redaction of card
//! numbers, as an operator would set one up.

use std::path::Path;

use evo_tests::cli::{evo, stderr, stdout};
use evo_tests::native_skill;
use serde_json::{Value, json};

use crate::per_run::{evo_with_model, model_server, requests};

/// Redacts runs of 12 to 19 digits: in `message` (answering the language too), or in
/// every string of `input`.
const REDACT: &str = r#"
let data = '';
process.stdin.on('data', c => data += c);
process.stdin.on('end', () => {
  const asked = JSON.parse(data);
  const redact = s => s.replace(/\d{12,19}/g, '[redacted]');
  const walk = v => typeof v === 'string' ? redact(v)
    : Array.isArray(v) ? v.map(walk)
    : v && typeof v === 'object' ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]))
    : v;
  if ('message' in asked) console.log(JSON.stringify({ message: redact(asked.message), language: 'en' }));
  else console.log(JSON.stringify({ input: walk(asked.input) }));
});
"#;

/// Returns its input.
const ECHO: &str = r#"
let data = '';
process.stdin.on('data', c => data += c);
process.stdin.on('end', () => console.log(data));
"#;

/// A data directory whose `evo.toml` loads `skills` and sets `preprocess`.
fn home_with(root: &Path, preprocess: &str) -> std::path::PathBuf {
    let skills = root.join("skills");
    let open = json!({ "input": { "type": "object" }, "output": { "type": "object" } });
    native_skill(
        &skills,
        "redact-cards",
        "Redacts card numbers.",
        open.clone(),
        REDACT,
    );
    native_skill(&skills, "echo", "Returns its input.", open.clone(), ECHO);
    native_skill(
        &skills,
        "broken",
        "Fails.",
        open,
        "process.stderr.write('no rules file'); process.exit(3);",
    );
    let home = root.join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        home.join("evo.toml"),
        format!(
            "skill_dirs = [{:?}]\n\n{preprocess}",
            skills.display().to_string()
        ),
    )
    .unwrap();
    home
}

#[test]
fn an_input_preprocessor_redacts_before_the_skill_sees_it_and_a_failing_one_stops_the_call() {
    let root = tempfile::tempdir().unwrap();
    let home = home_with(
        root.path(),
        "[preprocess.input]\n\"*\" = [\"redact-cards\"]\n",
    );
    let input = json!({ "note": "card 4111111111111111, exp 12/29" }).to_string();
    let out = evo(
        &home,
        &["skill", "run", "echo", "--input", &input, "--json"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let result: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        result["output"],
        json!({ "note": "card [redacted], exp 12/29" }),
        "{result}"
    );
    // The call history keeps what the skill was given, and withholds what the
    // preprocessor was asked to clean: the number is nowhere on record.
    let out = evo(&home, &["tool", "history", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let history = stdout(&out);
    assert!(history.contains("redact-cards"), "{history}");
    assert!(history.contains("card [redacted], exp 12/29"), "{history}");
    assert!(!history.contains("4111111111111111"), "{history}");

    // A preprocessor that fails stops the call: nothing unredacted gets through.
    std::fs::write(
        home.join("evo.toml"),
        format!(
            "skill_dirs = [{:?}]\n\n[preprocess.input]\necho = [\"broken\"]\n",
            root.path().join("skills").display().to_string()
        ),
    )
    .unwrap();
    let out = evo(&home, &["skill", "run", "echo", "--input", &input]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("error[PREPROCESSOR_FAILED]: preprocessor broken failed on echo, which did not run: broken: failed: the script exited with code 3"),
        "{}",
        stderr(&out)
    );
    assert!(!stdout(&out).contains("4111"), "{}", stdout(&out));

    // One that is not there is said at load.
    std::fs::write(
        home.join("evo.toml"),
        "[preprocess]\nmessage = [\"scrub\"]\n",
    )
    .unwrap();
    let out = evo(&home, &["skill", "list"]);
    assert!(
        stderr(&out).contains("warning: [preprocess] names scrub, which is not loaded"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_message_preprocessor_redacts_before_recall_routing_the_model_and_memory() {
    let root = tempfile::tempdir().unwrap();
    let home = home_with(root.path(), "[preprocess]\nmessage = [\"redact-cards\"]\n");
    let (base, seen) = model_server();
    let out = evo_with_model(
        &home,
        &base,
        &[
            "agent",
            "run",
            "My card is 4111111111111111, remember that I prefer tea",
            "--json",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let sent = requests(&seen);
    assert!(!sent.is_empty());
    for (_, text) in &sent {
        assert!(!text.contains("4111111111111111"), "{text}");
    }
    assert!(
        sent.iter()
            .any(|(_, text)| text.contains("My card is [redacted]")),
        "{sent:?}"
    );
    // The events show the preprocessor's call; the daily log keeps the redacted text.
    assert!(
        stdout(&out)
            .lines()
            .any(|l| l.contains("\"skill_call\"") && l.contains("redact-cards")),
        "{}",
        stdout(&out)
    );
    let logs: String = std::fs::read_dir(home.join("memory"))
        .unwrap()
        .flatten()
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect();
    assert!(logs.contains("My card is [redacted]"), "{logs}");
    assert!(!logs.contains("4111111111111111"), "{logs}");
}
