//! Mistakes in a catalogue surface when it loads, not at the first run: a composite
//! calling a skill that is not there, and skills kept in category folders.

use std::path::Path;

use evo_tests::cli::{evo, stderr, stdout};
use serde_json::{Value, json};

/// A skill directory `name` at `dir` with `manifest` (name and description added) and a
/// SKILL.md.
fn skill_dir(dir: &Path, name: &str, description: &str, manifest: Value) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: {description}\n---\n{description}\n"),
    )
    .unwrap();
    let mut manifest = manifest;
    manifest["name"] = json!(name);
    manifest["description"] = json!(description);
    std::fs::write(dir.join("skill.json"), manifest.to_string()).unwrap();
}

/// A composite that squares with `calculate`, then hands the result to `tidy`.
fn square_and_tidy(dir: &Path) {
    skill_dir(
        dir,
        "square-and-tidy",
        "Squares a number, then tidies the result.",
        json!({
            "mode": "composite",
            "input": { "type": "object", "properties": { "n": { "type": "number" } }, "required": ["n"] },
            "calls": ["calculate", "tidy"],
            "pipeline": [
                { "step": "square", "skill": "calculate", "input": { "expression": "{{input.n}} ^ 2" } },
                { "step": "tidy", "skill": "tidy", "input": { "value": "{{steps.square.result}}" } }
            ]
        }),
    );
}

#[test]
fn a_composite_calling_a_skill_that_is_not_there_is_told_at_install_and_load() {
    let root = tempfile::tempdir().unwrap();
    let home = root.path().join("home");
    let composite = root.path().join("square-and-tidy");
    square_and_tidy(&composite);

    // At install: installed (the callee may come later), with a warning.
    let out = evo(&home, &["skill", "install", composite.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let warning = "square-and-tidy calls tidy, which is not loaded: the call fails (SKILL_NOT_FOUND) until a skill named tidy is installed (`evo skill install`) or its skill directory is loaded";
    assert!(stderr(&out).contains(warning), "{}", stderr(&out));

    // At load: every command that loads the skills says it.
    let out = evo(&home, &["skill", "list"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!("warning: {warning}")),
        "{}",
        stderr(&out)
    );
    let out = evo(
        &home,
        &["skill", "run", "square-and-tidy", "--input", r#"{"n":3}"#],
    );
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("step `tidy` failed: Skills not found: tidy"),
        "{}",
        stderr(&out)
    );

    // Once the callee arrives, the warning goes and the composite runs.
    let tidy = root.path().join("tidy");
    skill_dir(
        &tidy,
        "tidy",
        "Returns the value it is given, as a tidy object.",
        json!({
            "mode": "composite",
            "input": { "type": "object", "properties": { "value": {} } },
            "calls": ["calculate"],
            "pipeline": [
                { "step": "same", "skill": "calculate", "input": { "expression": "{{input.value}} + 0" } }
            ],
            "outputMapping": { "tidy": "{{steps.same.result}}" }
        }),
    );
    let out = evo(&home, &["skill", "install", tidy.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = evo(
        &home,
        &[
            "skill",
            "run",
            "square-and-tidy",
            "--input",
            r#"{"n":3}"#,
            "--json",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("not loaded"), "{}", stderr(&out));
    let result: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(result["output"], json!({ "tidy": 9 }), "{result}");
}

#[test]
fn skills_in_category_folders_load_to_a_depth_bound_without_following_links_out() {
    // "The system SHALL load skills recursively": a tree organised by category.
    let root = tempfile::tempdir().unwrap();
    let tree = root.path().join("skills");
    let simple = |dir: &Path, name: &str| {
        skill_dir(dir, name, &format!("The {name} skill."), json!({}));
    };
    simple(&tree.join("text/summarize"), "summarize");
    simple(&tree.join("text/short/tldr"), "tldr");
    simple(&tree.join("code/review"), "review");
    simple(&tree.join("flat"), "flat");
    // Past the bound: three folders of categories, then the skill.
    simple(&tree.join("deep/a/b/buried"), "buried");
    // A category folder that is a link out of the tree is not entered.
    let outside = root.path().join("elsewhere");
    simple(&outside.join("stranger"), "stranger");
    std::os::unix::fs::symlink(&outside, tree.join("linked")).unwrap();
    // A link to a skill directory is a skill of the tree, as at the top.
    simple(&root.path().join("kept/linked-skill"), "linked-skill");
    std::os::unix::fs::symlink(
        root.path().join("kept/linked-skill"),
        tree.join("code/linked-skill"),
    )
    .unwrap();

    let home = root.path().join("home");
    let out = evo(
        &home,
        &[
            "skill",
            "list",
            "--skills-dir",
            tree.to_str().unwrap(),
            "--json",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let listed: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let names: Vec<&str> = listed["skills"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["kind"] != "builtin")
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["flat", "linked-skill", "review", "summarize", "tldr"],
        "{listed}"
    );
    let errors: Vec<(String, String)> = listed["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let path = e["path"].as_str().unwrap();
            let relative = Path::new(path).strip_prefix(&tree).unwrap();
            (
                relative.display().to_string(),
                e["error"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert_eq!(errors[0].0, "deep/a/b");
    assert!(
        errors[0].1.contains(
            "skills in category folders are found up to 3 folders below a skills directory"
        ),
        "{errors:?}"
    );
    assert_eq!(errors[1].0, "linked");
}

#[test]
fn hundreds_of_skills_load_every_one_and_report_each_broken_one() {
    // Enough directories to be loaded on several threads at once.
    let root = tempfile::tempdir().unwrap();
    let home = root.path().join("home");
    let skills = root.path().join("skills");
    let mut expected = Vec::new();
    let mut broken = Vec::new();
    for i in 0..300 {
        let name = format!("skill-{i:03}");
        let dir = skills.join(&name);
        std::fs::create_dir_all(&dir).unwrap();
        let description = if i % 37 == 5 {
            broken.push(dir.display().to_string());
            String::new()
        } else {
            expected.push(name.clone());
            format!("description: Skill number {i}.\n")
        };
        std::fs::write(
            dir.join("SKILL.md"),
            format!("---\nname: {name}\n{description}---\nSay {i}.\n"),
        )
        .unwrap();
    }
    let out = evo(
        &home,
        &[
            "skill",
            "list",
            "--skills-dir",
            skills.to_str().unwrap(),
            "--json",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let value: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let listed: Vec<&str> = value["skills"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["kind"] == "static")
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(listed, expected);
    let errors: Vec<&str> = value["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(errors, broken);
    assert_eq!(broken.len(), 8);

    // Polled outside any Tokio runtime (an embedder's own executor), the same
    // directories load, one after another, in the same order.
    let loaded = poll_to_end(evo_host::engine::loader::Loader::new().load_all(&skills)).unwrap();
    let names: Vec<String> = loaded
        .iter()
        .filter_map(|(_, package)| Some(package.as_ref().ok()?.name.clone()))
        .collect();
    assert_eq!(names, expected);
    assert_eq!(
        loaded.iter().filter(|(_, p)| p.is_err()).count(),
        broken.len()
    );
}

/// `future` polled on this thread until it is ready, with no runtime around it.
fn poll_to_end<F: Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    loop {
        if let std::task::Poll::Ready(value) = future.as_mut().poll(&mut cx) {
            return value;
        }
        std::thread::yield_now();
    }
}
