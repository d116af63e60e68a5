//! `evo.toml` and the CLI's edges, through the real `evo` binary: standing grants per
//! skill, persistent skill directories, `evo config show`, a bad file's error, closed
//! pipes, exit codes, completions, the man page and `evo doctor`.

use std::io::Read as _;
use std::process::Stdio;

use evo_tests::cli::{command as evo_cmd, evo, stderr, stdout};
use evo_tests::skills;
use serde_json::{Value, json};

fn probe_host_calls(home: &std::path::Path, extra: &[&str]) -> Value {
    let mut args = vec![
        "skill",
        "run",
        skills::FIXTURE_PROBE,
        "--json",
        "--input",
        r#"{"host_calls":true}"#,
    ];
    args.extend_from_slice(extra);
    let out = evo(home, &args);
    assert!(out.status.success(), "{}", stderr(&out));
    let value: Value = serde_json::from_str(&stdout(&out)).unwrap();
    value["output"]["host_calls"].clone()
}

#[test]
fn evo_toml_grants_memory_to_one_skill_and_flags_add_for_one_run() {
    let home = tempfile::tempdir().unwrap();
    let denied = "denied: fixture-probe was not granted read access to memory; the skill must request it in its manifest and the operator must allow it";
    assert_eq!(probe_host_calls(home.path(), &[])["memory-search"], denied);

    std::fs::write(
        home.path().join("evo.toml"),
        "[grants.skill.fixture-probe]\nmemory = \"read-write\"\n",
    )
    .unwrap();
    let calls = probe_host_calls(home.path(), &[]);
    assert_eq!(calls["memory-store"], "ok: stored: true", "{calls}");
    assert_eq!(calls["memory-search"], "ok: [\"a fact\"]", "{calls}");
    assert!(
        calls["llm"]
            .as_str()
            .unwrap()
            .contains("not granted the language model"),
        "the entry grants memory only: {calls}"
    );

    std::fs::remove_file(home.path().join("evo.toml")).unwrap();
    let calls = probe_host_calls(home.path(), &["--allow-memory", "read"]);
    // It reads (the fact the last run stored it also forgot), and may not write.
    assert_eq!(calls["memory-search"], "ok: []", "{calls}");
    assert!(
        calls["memory-store"]
            .as_str()
            .unwrap()
            .contains("not granted write access to memory"),
        "{calls}"
    );
}

#[test]
fn skill_dirs_in_evo_toml_persist_and_config_show_says_where_values_came_from() {
    let home = tempfile::tempdir().unwrap();
    let skills = home.path().join("my-skills/shout");
    std::fs::create_dir_all(&skills).unwrap();
    std::fs::write(
        skills.join("SKILL.md"),
        "---\nname: shout\ndescription: Says things loudly.\n---\nSay it in capitals.\n",
    )
    .unwrap();
    std::fs::write(
        home.path().join("evo.toml"),
        "skill_dirs = [\"my-skills\"]\n\n[engine]\npool_slots = 4\n",
    )
    .unwrap();
    let out = evo(home.path(), &["skill", "list", "--name", "shout"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).starts_with("shout"), "{}", stdout(&out));

    let out = evo_cmd(home.path(), &["config", "show", "--json", "--allow-llm"])
        .env("EVO_LLM", "ollama:llama3.2")
        .output()
        .unwrap();
    // `--allow-llm` is not a `config show` flag: clap refuses it (exit 2).
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));

    let out = evo_cmd(home.path(), &["config", "show", "--json"])
        .env("EVO_LLM", "ollama:llama3.2")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let shown: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let file = home.path().join("evo.toml");
    let settings = &shown["settings"];
    assert_eq!(
        settings["engine.pool_slots"],
        json!({ "value": 4, "source": format!("{}:4", file.display()) })
    );
    assert_eq!(
        settings["llm.model"],
        json!({ "value": "ollama:llama3.2", "source": "env EVO_LLM" })
    );
    assert_eq!(
        settings["native.timeout_ms"],
        json!({ "value": 60000, "source": "default" })
    );
}

#[test]
fn a_grant_the_operator_misspelt_or_mistyped_runs_nothing() {
    // Each kind of capability reads its own `[grants]` key: a key none of them owns, or
    // a value of the wrong type, must stop the run, never leave the skill with less (or
    // more) than the operator meant.
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join("evo.toml");
    for (text, key, message) in [
        (
            "[grants.skill.fixture-probe]\nmemroy = \"read-write\"\n",
            "grants.skill.fixture-probe.memroy",
            "unknown field `memroy`; a grant is one of dirs, llm, memory, exec, hosts, secrets",
        ),
        (
            "[grants]\nllm = \"yes\"\n",
            "grants.llm",
            "expected true or false, found a string",
        ),
        (
            "[grants]\nhosts = \"https://api.example.com\"\n",
            "grants.hosts",
            "expected a list of strings, e.g. [\"…\"], found a string",
        ),
        (
            "[agent]\ndecisive_margin = 0.0\n",
            "agent.decisive_margin",
            "0 is out of range; use more than 0 and at most 1 (or decisive_routing = false to always ask the model)",
        ),
    ] {
        std::fs::write(&file, text).unwrap();
        let out = evo(
            home.path(),
            &[
                "skill",
                "run",
                skills::FIXTURE_PROBE,
                "--input",
                r#"{"host_calls":true}"#,
            ],
        );
        assert_eq!(out.status.code(), Some(2), "{text}: {}", stderr(&out));
        assert_eq!(stdout(&out), "", "{text}: nothing ran");
        assert!(
            stderr(&out).starts_with(&format!(
                "error[CONFIG_INVALID]: {} line 2, key {key}: {message}",
                file.display()
            )),
            "{text}: {}",
            stderr(&out)
        );
    }
    std::fs::remove_file(&file).unwrap();
    // A flag's bad value is refused the same way, before anything runs.
    let out = evo(
        home.path(),
        &[
            "skill",
            "run",
            skills::FIXTURE_PROBE,
            "--input",
            r#"{"host_calls":true}"#,
            "--allow-memory",
            "all",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(stdout(&out), "");
    assert!(
        stderr(&out).starts_with("error[INVALID_ARGUMENT]: --allow-memory all: \"all\" is not a memory access\n  hint: use none, read or read-write"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_bad_evo_toml_names_file_line_and_key_and_exits_2() {
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join("evo.toml");
    std::fs::write(&file, "[engine]\npool_slots = 4\npool_sots = 5\n").unwrap();
    for args in [&["skill", "list"][..], &["config", "show"]] {
        let out = evo(home.path(), args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.starts_with(&format!(
                "error[CONFIG_INVALID]: {} line 3, key engine.pool_sots: unknown field `pool_sots`",
                file.display()
            )),
            "{args:?}: {err}"
        );
        assert!(err.contains("hint: fix the value"), "{err}");
    }
    let out = evo(home.path(), &["skill", "list", "--json"]);
    let value: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(value["code"], "CONFIG_INVALID");
    // The hint sends the user to a command that works with the file broken, not to
    // `config show`, which fails the same way.
    assert!(
        value["hint"].as_str().unwrap().contains("evo doctor"),
        "{value}"
    );

    // `evo doctor` lists the file as a broken part (exit 1, like any broken part), with
    // the checks that need no configuration.
    let out = evo(home.path(), &["doctor"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let report = stdout(&out);
    assert!(
        report.contains(&format!(
            "FAIL  configuration      {} line 3, key engine.pool_sots: unknown field `pool_sots`",
            file.display()
        )),
        "{report}"
    );
    assert!(report.contains("data directory"), "{report}");
    let out = evo(home.path(), &["doctor", "--json"]);
    let value: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(value["ok"], false);
    assert_eq!(value["checks"]["configuration"]["broken"], true);
}

#[test]
fn config_show_aligns_comments_without_a_long_value_pushing_them_out() {
    let home = tempfile::tempdir().unwrap();
    let out = evo(home.path(), &["config", "show"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    // `tools.bash_allow` is a long list; the other lines stay within a terminal.
    let wide: Vec<&&str> = lines
        .iter()
        .filter(|l| l.chars().count() > 100 && !l.starts_with("tools.bash_allow"))
        .collect();
    assert!(wide.is_empty(), "{wide:#?}");
    assert!(
        lines.iter().any(|l| l.starts_with("engine.pool_slots = ")),
        "{text}"
    );

    // One table, or one key.
    let out = evo(home.path(), &["config", "show", "engine"]);
    let text = stdout(&out);
    assert!(
        text.lines().skip(1).all(|l| l.starts_with("engine.")),
        "{text}"
    );
    assert!(text.contains("engine.pool_slots = "), "{text}");
    let out = evo(home.path(), &["config", "show", "engine.nothing"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).starts_with("error[CONFIG_INVALID]: there is no setting `engine.nothing`"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_closed_stdout_ends_the_command_quietly() {
    let home = tempfile::tempdir().unwrap();
    for args in [&["skill", "list"][..], &["man"], &["config", "show"]] {
        let mut child = evo_cmd(home.path(), args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The reader goes away before evo writes a byte.
        drop(child.stdout.take());
        let mut err = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(0), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn a_skill_refusing_its_input_exits_2() {
    let home = tempfile::tempdir().unwrap();
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
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).starts_with("error[INVALID_INPUT]: calculate: invalid input:"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn skill_info_shows_the_schemas() {
    let home = tempfile::tempdir().unwrap();
    let out = evo(home.path(), &["skill", "info", skills::CALCULATE]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let input = text.find("input schema:").expect("input schema shown");
    let output = text.find("output schema:").expect("output schema shown");
    assert!(text[input..output].contains("\"expression\""), "{text}");
    assert!(text[output..].contains("\"result\""), "{text}");
}

#[test]
fn completions_and_man_page_describe_every_command() {
    let home = tempfile::tempdir().unwrap();
    let out = evo(home.path(), &["completions", "bash"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let script = stdout(&out);
    assert!(script.contains("_evo()"), "{script}");
    for command in ["skill", "memory", "agent", "config", "doctor"] {
        assert!(script.contains(command), "{command} missing");
    }
    let out = evo(home.path(), &["man"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let page = stdout(&out);
    assert!(page.starts_with(".ie"), "roff: {}", &page[..40]);
    assert!(page.contains(".TH evo 1"), "{page}");
    let out = evo(home.path(), &["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn doctor_fails_when_the_configured_model_is_unreachable() {
    let home = tempfile::tempdir().unwrap();
    // Port 1 on loopback: nothing listens there.
    let out = evo_cmd(home.path(), &["doctor", "--json"])
        .env("EVO_LLM", "openai:gpt-4o-mini")
        .env("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let report: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(report["ok"], false);
    let llm = &report["checks"]["language model"];
    assert_eq!(llm["broken"], true, "{report}");
    assert!(
        llm["detail"]
            .as_str()
            .unwrap()
            .starts_with("http://127.0.0.1:1/v1/models is not reachable"),
        "{llm}"
    );

    let out = evo(home.path(), &["doctor"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("note  language model     none configured"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn doctor_on_a_fresh_data_directory_says_all_of_this() {
    let home = tempfile::tempdir().unwrap();
    let out = evo(home.path(), &["doctor"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let printed = stdout(&out);
    let lines: Vec<&str> = printed.lines().collect();
    let home = home.path().display();
    let exact = [
        format!("ok    data directory     {home} (writable)"),
        "ok    configuration      defaults and environment (no evo.toml)".to_owned(),
        "ok    wasm engine        pooling allocator, 16 pool slots".to_owned(),
        format!("ok    compile cache      {home}/cache/wasm (0 components)"),
        format!(
            "ok    storage            SQLite in {home} (one machine; [storage] url shares it between nodes)"
        ),
        format!(
            "ok    memory             0 entries in {home}/memory.db; embedder evo-hash-v2-256 (256 dimensions), vector search in-process exact scan (int8-quantised, rescored exactly)"
        ),
        "note  language model     none configured (the agent and llm skills need one; EVO_LLM or [llm] in evo.toml)".to_owned(),
    ];
    assert_eq!(lines.len(), 12, "{printed}");
    assert_eq!(lines[..7], exact, "{printed}");
    // What the machine has: its node's version, and how far it can confine a script.
    let node_version = std::process::Command::new("node")
        .arg("--version")
        .output()
        .unwrap();
    assert_eq!(
        lines[7],
        format!(
            "ok    node               node {}",
            String::from_utf8_lossy(&node_version.stdout).trim()
        )
    );
    // The small launcher native calls start, built beside `evo`.
    assert_eq!(
        lines[8],
        format!(
            "ok    native launcher    {}",
            evo_tests::evo_bin()
                .with_file_name("evo-launcher")
                .display()
        ),
        "{printed}"
    );
    assert!(
        lines[9].starts_with("ok    native isolation   ")
            || lines[9].starts_with("note  native isolation   "),
        "{printed}"
    );
    assert_eq!(
        lines[10],
        "note  trust              no [trust] keys: skills from registries install unsigned, with a warning",
        "{printed}"
    );
    assert_eq!(
        lines[11], "ok    skills             15 available",
        "{printed}"
    );
}

#[test]
fn the_data_directory_is_the_flag_else_evo_home_else_the_platform_default() {
    let root = tempfile::tempdir().unwrap();
    let (flag, home, xdg) = (
        root.path().join("flag"),
        root.path().join("home"),
        root.path().join("xdg"),
    );
    let data_dir = |command: &mut std::process::Command| {
        let out = command.env("XDG_DATA_HOME", &xdg).output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let printed = stdout(&out);
        let first = printed.lines().next().unwrap_or_default().to_owned();
        first
            .strip_prefix("ok    data directory     ")
            .and_then(|rest| rest.strip_suffix(" (writable)"))
            .unwrap_or_else(|| panic!("{printed}"))
            .to_owned()
    };
    let flag_arg = flag.to_string_lossy().into_owned();
    assert_eq!(
        data_dir(&mut evo_cmd(&home, &["--data-dir", &flag_arg, "doctor"])),
        flag.display().to_string()
    );
    assert_eq!(
        data_dir(&mut evo_cmd(&home, &["doctor"])),
        home.display().to_string()
    );
    // An empty EVO_HOME (or EVO_CONFIG) is no choice, not an error about a flag.
    assert_eq!(
        data_dir(
            evo_cmd(&home, &["doctor"])
                .env("EVO_HOME", "")
                .env("EVO_CONFIG", "")
        ),
        xdg.join("evo").display().to_string()
    );
    assert_eq!(
        data_dir(evo_cmd(&home, &["doctor"]).env_remove("EVO_HOME")),
        xdg.join("evo").display().to_string()
    );
}

#[test]
fn verbosity_shows_logs_at_v_and_what_a_skill_prints_at_vv_or_evo_log() {
    let home = tempfile::tempdir().unwrap();
    let input = r#"{"stderr_line":"warming up","stdout_bytes":64}"#;
    let logs = |flags: &[&str], evo_log: Option<&str>| {
        let mut args = flags.to_vec();
        args.extend(["skill", "run", skills::FIXTURE_PROBE, "--input", input]);
        let mut command = evo_cmd(home.path(), &args);
        if let Some(level) = evo_log {
            command.env("EVO_LOG", level);
        }
        let out = command.output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        stderr(&out)
    };
    let granted = "INFO not granted: llm: the host policy does not allow the language model skill=fixture-probe";
    let printed = "DEBUG warming up skill=fixture-probe stream=\"stderr\"";
    let printed_out = format!(
        "DEBUG {} skill=fixture-probe stream=\"stdout\"",
        "x".repeat(63)
    );
    // Log lines without their timestamps; plain text, as stderr is not a terminal here.
    let lines = |err: String| -> Vec<String> {
        assert!(
            !err.contains('\u{1b}'),
            "no colour codes in a pipe: {err:?}"
        );
        err.lines()
            .map(|l| {
                l.split_once(' ')
                    .map_or(l, |(_, rest)| rest)
                    .trim()
                    .to_owned()
            })
            .collect()
    };

    let quiet = lines(logs(&[], None));
    assert!(
        !quiet.iter().any(|l| l == granted || l == printed),
        "{quiet:?}"
    );
    let info = lines(logs(&["-v"], None));
    assert!(info.iter().any(|l| l == granted), "{info:?}");
    assert!(!info.iter().any(|l| l == printed), "{info:?}");
    for debug in [lines(logs(&["-vv"], None)), lines(logs(&[], Some("debug")))] {
        assert!(debug.iter().any(|l| l == granted), "{debug:?}");
        assert!(debug.iter().any(|l| l == printed), "{debug:?}");
        assert!(debug.contains(&printed_out), "{debug:?}");
    }
}
