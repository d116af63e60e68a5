//! Writing skills as a user does: `evo new` in each language, then `evo skill build`,
//! `test`, `run`, `pack` and `install`; a bare component and a directory named
//! otherwise installed under the skill's own name; and the errors a new author meets.

use std::path::Path;
use std::process::Output;

use evo_tests::cli::{author_command, command, stderr, stdout};
use evo_tests::skills;

/// `evo ARGS` in `cwd`, with `EVO_HOME=home`, as an author runs it.
fn evo_in(cwd: &Path, home: &Path, args: &[&str]) -> Output {
    author_command(cwd, home, args).output().expect("evo runs")
}

/// `evo new greet --lang LANG`, then everything a user does next.
fn new_project_round_trip(lang: &str) {
    let work = tempfile::tempdir().unwrap();
    let home = work.path().join("home");
    let out = evo_in(work.path(), &home, &["new", "greet", "--lang", lang]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains(&format!("created ./greet ({lang} skill `greet`)")),
        "{}",
        stdout(&out)
    );
    let project = work.path().join("greet");

    let out = evo_in(&project, &home, &["-v", "skill", "build"]);
    assert!(out.status.success(), "{lang}: {}", stderr(&out));
    assert!(
        stdout(&out).starts_with("built ./skill.wasm ("),
        "{}",
        stdout(&out)
    );
    // Reading the manifest compiled the code written, and nothing else: at most once per
    // run of the toolchain (Rust builds twice, the second time with the manifest as
    // text); none when the shared compile cache already has the same bytes.
    let builds = if lang == "rust" { 2 } else { 1 };
    let compiles = stderr(&out)
        .matches("later loads come from the compile cache")
        .count();
    assert!(compiles <= builds, "{lang}: {}", stderr(&out));
    // The build embedded the manifest, so that hosts describe the skill without
    // instantiating it (install checks it is the export's own).
    let built = std::fs::read(project.join("skill.wasm")).unwrap();
    let info = evo_host::engine::wasm::inspect("skill.wasm", &built).unwrap();
    let manifest: serde_json::Value = serde_json::from_str(&info.manifest.unwrap()).unwrap();
    assert_eq!(manifest["name"], "greet");
    // The build compiled the very bytes it wrote: the first run reads them from the
    // compile cache.
    let out = evo_in(
        &project,
        &home,
        &[
            "-v",
            "--json",
            "skill",
            "run",
            ".",
            "--input",
            r#"{"name":"Ada"}"#,
        ],
    );
    assert!(out.status.success(), "{lang}: {}", stderr(&out));
    assert!(
        !stderr(&out).contains("later loads come from the compile cache"),
        "{lang}: the first run after the build compiled: {}",
        stderr(&out)
    );
    let warm: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let call_ms = warm["duration"]
        .as_f64()
        .expect("the result has its duration");
    // Compiling never counts against a call's deadline: with no compiled code at hand
    // (another data directory, its own cache) and calls cut at ten times what the call
    // took with its code compiled (a JavaScript or Python component takes far longer
    // to compile), the first call compiles, then runs in time.
    let cold = work.path().join("cold-home");
    std::fs::create_dir_all(&cold).unwrap();
    let limit_ms = (call_ms * 10.0).ceil().max(200.0) as u64;
    std::fs::write(
        cold.join("evo.toml"),
        format!("[engine]\nmax_timeout_ms = {limit_ms}\ncompile_deadline_ms = 900000\n"),
    )
    .unwrap();
    let out = author_command(
        &project,
        &cold,
        &["-v", "skill", "run", ".", "--input", r#"{"name":"Ada"}"#],
    )
    .env_remove("EVO_CACHE_DIR")
    .output()
    .unwrap();
    assert!(out.status.success(), "{lang}: {}", stderr(&out));
    assert_eq!(
        stderr(&out)
            .matches("later loads come from the compile cache")
            .count(),
        1,
        "{lang}: compiled once: {}",
        stderr(&out)
    );
    if lang == "rust" {
        // Built a second time with the manifest as text, without the schema generator:
        // the issue's bound for a hello-world Rust skill.
        assert!(
            built.len() <= 150_000,
            "a new Rust skill is {} bytes",
            built.len()
        );
        // Its functions are named as a trap shows them, not as rustc mangled them.
        let names = crate::short_names::function_names(&built);
        assert!(names.iter().any(|n| n.contains("::")), "{names:?}");
        assert!(
            !names.iter().any(|n| crate::short_names::mangled(n)),
            "{names:?}"
        );
    }

    let out = evo_in(&project, &home, &["skill", "test", "--no-build"]);
    assert!(
        out.status.success(),
        "{lang}: {}{}",
        stdout(&out),
        stderr(&out)
    );
    assert_eq!(
        stdout(&out),
        "ok    Greets Ada by name\nok    An empty name is the caller's mistake\ngreet: 2 passed, 0 failed\n"
    );

    let out = evo_in(
        &project,
        &home,
        &["skill", "run", ".", "--input", r#"{"name":"Ada"}"#],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "{\n  \"greeting\": \"Hello, Ada!\"\n}\n");
    // The skill's own refusal reads as one sentence after the kind, in every language.
    let out = evo_in(
        &project,
        &home,
        &["skill", "run", ".", "--input", r#"{"name":" "}"#],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).starts_with(
            "error[INVALID_INPUT]: greet: invalid input: the name is empty: say who to greet\n  hint: "
        ),
        "{}",
        stderr(&out)
    );

    // A case that does not hold fails the run and says how.
    std::fs::write(
        project.join("tests/wrong.json"),
        r#"{"input":{"name":"Bo"},"output":{"greeting":"Hi, Bo!"}}"#,
    )
    .unwrap();
    let out = evo_in(&project, &home, &["skill", "test", "--no-build"]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(
        stdout(&out).contains(
            r#"FAIL  wrong: expected output {"greeting":"Hi, Bo!"}, got {"greeting":"Hello, Bo!"}"#
        ),
        "{}",
        stdout(&out)
    );
    assert!(
        stdout(&out).ends_with("greet: 2 passed, 1 failed\n"),
        "{}",
        stdout(&out)
    );

    let out = evo_in(&project, &home, &["skill", "pack"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = evo_in(work.path(), &home, &["skill", "install", "greet/greet.zip"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("greet: Skill installed successfully"),
        "{}",
        stdout(&out)
    );
    let out = evo_in(
        work.path(),
        &home,
        &["skill", "run", "greet", "--input", r#"{"name":"Cy"}"#],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "{\n  \"greeting\": \"Hello, Cy!\"\n}\n");
    // Only the component and the README went into the archive, not the sources.
    let installed = home.join("skills/greet");
    assert!(installed.join("skill.wasm").is_file());
    assert!(!installed.join("tests").exists());

    if lang == "js" {
        // A skill that calls one that is not there fails its test run before any case,
        // naming what it calls.
        let source = std::fs::read_to_string(project.join("skill.js")).unwrap();
        let calling = source.replace(
            "description: 'Greets someone by name.',",
            "description: 'Greets someone by name.',\n    calls: ['polish-greeting'],",
        );
        assert_ne!(source, calling, "the template's manifest changed");
        std::fs::write(project.join("skill.js"), calling).unwrap();
        let out = evo_in(&project, &home, &["skill", "test"]);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{}{}",
            stdout(&out),
            stderr(&out)
        );
        assert!(
            stderr(&out).contains(
                "error[SKILL_NOT_FOUND]: greet calls polish-greeting, which is not loaded\n  hint: install what it calls"
            ),
            "{}",
            stderr(&out)
        );
    }
}

#[test]
fn a_new_rust_skill_builds_tests_runs_packs_and_installs() {
    new_project_round_trip("rust");
}

#[test]
fn a_new_javascript_skill_builds_tests_runs_packs_and_installs() {
    new_project_round_trip("js");
}

#[test]
fn a_new_python_skill_builds_tests_runs_packs_and_installs() {
    new_project_round_trip("python");
}

#[test]
fn a_new_c_skill_builds_tests_runs_packs_and_installs() {
    new_project_round_trip("c");
}

#[test]
fn a_new_cpp_skill_builds_tests_runs_packs_and_installs() {
    new_project_round_trip("cpp");
}

/// A C skill reads every kind of field through `evo_skill.h` (escapes, surrogate pairs,
/// fields after nested values), answers with what it read, and reaches the host.
#[test]
fn a_c_skill_reads_its_input_with_the_helper_and_reaches_the_host() {
    let work = tempfile::tempdir().unwrap();
    let home = work.path().join("home");
    let out = evo_in(work.path(), &home, &["new", "probe", "--lang", "c"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let project = work.path().join("probe");
    std::fs::write(
        project.join("manifest.json"),
        r#"{"name": "probe", "description": "Says what it read.",
            "input": {"type": "object"}, "output": {"type": "object"}}"#,
    )
    .unwrap();
    std::fs::write(project.join("skill.c"), C_PROBE).unwrap();
    let out = evo_in(&project, &home, &["skill", "build"]);
    assert!(out.status.success(), "{}", stderr(&out));
    // Escapes, and the field after nested values that hold the same name and a bracket
    // in a string.
    let input = r#"{"nested": {"text": "not me", "list": [1, {"text": "nor me"}, "]}"]},
        "text": "tab\t \"quoted\" \\ \u00e9 \ud83d\ude00 \u0001 \/", "count": -12.5e1, "flag": true}"#;
    let out = evo_in(&project, &home, &["skill", "run", ".", "--input", input]);
    assert!(out.status.success(), "{}", stderr(&out));
    let output: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        output,
        serde_json::json!({
            "text": "tab\t \"quoted\" \\ é 😀 \u{1} /",
            "count": -125,
            "flag": true,
            "missing": null,
            "locale": "en",
            "pair": "😀 é/",
        })
    );
    // A field of the wrong kind reads as missing, and the skill says so.
    let out = evo_in(
        &project,
        &home,
        &["skill", "run", ".", "--input", r#"{"text": 5}"#],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("error[INVALID_INPUT]: probe: invalid input: text is not a string"),
        "{}",
        stderr(&out)
    );
}

/// The skill `a_c_skill_reads_its_input…` builds: echoes `text`, `count` and `flag`,
/// says whether `missing` is there, asks the host for its environment (`env`) and reads
/// a string of escapes of its own.
const C_PROBE: &str = r#"
#include "evo_skill.h"

bool exports_evo_skill_skill_execute(evo_json_t *input, evo_output_t *ret, evo_error_t *err) {
    char *text = evo_json_string(input, "text");
    if (!text) {
        return evo_fail(err, EVO_INVALID_INPUT, "text is not a string");
    }
    double count = 0;
    bool flag = false;
    if (!evo_json_number(input, "count", &count) || !evo_json_bool(input, "flag", &flag)) {
        free(text);
        return evo_fail(err, EVO_INVALID_INPUT, "count or flag is missing");
    }
    char *missing = evo_json_string(input, "missing");
    evo_json_t env;
    evo_skill_context_env(&env);
    char *locale = evo_json_string(&env, "locale");
    evo_skill_types_json_free(&env);
    // The host sends characters as they are; JSON from elsewhere may spell them as
    // escapes, a character outside the BMP as a surrogate pair.
    static const char RAW[] = "{\"pair\": \"\\ud83d\\ude00 \\u00e9\\/\"}";
    evo_json_t raw = {(uint8_t *)RAW, sizeof RAW - 1};
    char *pair = evo_json_string(&raw, "pair");
    char *quoted_text = evo_json_quote(text);
    char *quoted_locale = evo_json_quote(locale ? locale : "");
    char *quoted_pair = evo_json_quote(pair ? pair : "");
    char output[4096];
    snprintf(output, sizeof output,
             "{\"text\":%s,\"count\":%g,\"flag\":%s,\"missing\":%s,\"locale\":%s,\"pair\":%s}",
             quoted_text, count, flag ? "true" : "false", missing ? "\"there\"" : "null",
             quoted_locale, quoted_pair);
    free(text);
    free(missing);
    free(locale);
    free(pair);
    free(quoted_text);
    free(quoted_locale);
    free(quoted_pair);
    return evo_ok(ret, output);
}
"#;

#[test]
fn a_bare_component_and_a_directory_named_otherwise_install_under_the_skills_name() {
    let work = tempfile::tempdir().unwrap();
    let home = work.path().join("home");
    let out = evo_in(work.path(), &home, &["skill", "install", skills::NOTES]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("notes: Skill installed successfully"),
        "{}",
        stdout(&out)
    );
    assert!(home.join("skills/notes/skill.wasm").is_file());

    // `evo skill run` runs a directory whatever it is called; install agrees.
    let dir = work.path().join("my-checkout");
    std::fs::create_dir(&dir).unwrap();
    std::fs::copy(skills::FILE_HEAD, dir.join("skill.wasm")).unwrap();
    let out = evo_in(work.path(), &home, &["skill", "install", "my-checkout"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("file-head: Skill installed successfully"),
        "{}",
        stdout(&out)
    );
    assert!(home.join("skills/file-head/skill.wasm").is_file());
    assert!(!home.join("skills/my-checkout").exists());
}

#[test]
fn a_new_author_is_told_what_is_wrong_and_what_to_do() {
    let work = tempfile::tempdir().unwrap();
    let home = work.path().join("home");
    let out = evo_in(work.path(), &home, &["new", "Greet Me", "--lang", "js"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains(r#"error[INVALID_SKILL_NAME]: "Greet Me" is not a valid skill name"#),
        "{}",
        stderr(&out)
    );
    let out = evo_in(work.path(), &home, &["skill", "build"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("error[NOT_A_SKILL_PROJECT]: . is not a skill project: it has no Cargo.toml, skill.js, skill.py, skill.c or skill.cpp; `evo new NAME --lang rust|js|python|c|cpp` creates one"),
        "{}",
        stderr(&out)
    );
    let out = evo_in(work.path(), &home, &["new", "greet", "--lang", "python"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let project = work.path().join("greet");
    let out = evo_in(&project, &home, &["skill", "pack"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out)
            .contains("error[NOT_BUILT]: . has no skill.wasm yet: run `evo skill build` first"),
        "{}",
        stderr(&out)
    );
    let out = command(&home, &["skill", "build"])
        .current_dir(&project)
        .env("EVO_COMPONENTIZE_PY", "")
        .env("PATH", "/nonexistent")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("error[TOOLCHAIN_MISSING]: componentize-py is not installed for .: run `python3 -m venv .venv && .venv/bin/pip install -r requirements.txt` there, or set EVO_COMPONENTIZE_PY"),
        "{}",
        stderr(&out)
    );
    assert!(!project.join("skill.wasm").exists());

    // A build that fails leaves nothing half-written.
    std::fs::write(project.join("skill.py"), "def execute(:\n").unwrap();
    let out = evo_in(&project, &home, &["skill", "build"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("error[BUILD_FAILED]: the build of . failed"),
        "{}",
        stderr(&out)
    );
    assert!(!project.join("skill.wasm").exists());
    assert!(!project.join(".skill.wasm.tmp").exists());

    // A C project without clang, or with a manifest that is not JSON, is told which.
    let out = evo_in(work.path(), &home, &["new", "greet-c", "--lang", "c"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let project = work.path().join("greet-c");
    let install = "install clang, lld and wasi-libc (Debian or Ubuntu: `apt install clang lld wasi-libc libclang-rt-dev-wasm32`, and `libc++-dev-wasm32` for C++), or set WASI_SDK_PATH to a wasi-sdk";
    let out = command(&home, &["skill", "build"])
        .current_dir(&project)
        .env("PATH", "/nonexistent")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(&format!("error[TOOLCHAIN_MISSING]: a C or C++ skill is built by clang, which is not on PATH: {install}")),
        "{}",
        stderr(&out)
    );
    let out = command(&home, &["skill", "build"])
        .current_dir(&project)
        .env("EVO_CLANG", "/nonexistent/clang")
        .output()
        .unwrap();
    assert!(
        stderr(&out).contains(&format!(
            "error[TOOLCHAIN_MISSING]: there is no clang at /nonexistent/clang: {install}"
        )),
        "{}",
        stderr(&out)
    );
    std::fs::write(project.join("manifest.json"), "{\"name\": ").unwrap();
    let out = evo_in(&project, &home, &["skill", "build"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("error[BUILD_FAILED]: ./manifest.json is not JSON: EOF while parsing a value at line 1 column 9; fix it and build again"),
        "{}",
        stderr(&out)
    );
    assert!(!project.join("skill.wasm").exists());
}

#[test]
fn the_helpers_evo_new_copies_are_the_ones_the_examples_are_built_with() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for (vendored, canonical) in [
        ("host/templates/evo-skill.js", "guest-sdk/js/evo-skill.js"),
        (
            "host/templates/evo_skill.py",
            "guest-sdk/python/evo_skill.py",
        ),
        ("host/templates/evo_skill.h", "guest-sdk/c/evo_skill.h"),
    ] {
        assert!(
            std::fs::read(root.join(vendored)).unwrap()
                == std::fs::read(root.join(canonical)).unwrap(),
            "{vendored} differs from {canonical}: copy {canonical} over it"
        );
    }
}

#[test]
fn installing_a_skill_named_like_a_built_in_tool_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("calculate");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        "---\nname: calculate\ndescription: Shadows the built-in.\n---\nNo.\n",
    )
    .unwrap();
    let out = command(
        &root.path().join("home"),
        &["skill", "install", dir.to_str().unwrap()],
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).starts_with(
            "error[SKILL_NAME_TAKEN]: Skill calculate cannot be installed: a built-in tool is already called calculate\n  hint: install it under another name (`evo skill install SOURCE --as NAME`)"
        ),
        "{}",
        stderr(&out)
    );
}

/// "let an install rename (`--as NAME`)": a skill whose name a built-in tool has, or
/// that is installed twice, is served, granted and described under the name given.
#[test]
fn a_skill_installed_as_another_name_is_served_and_granted_under_it() {
    let root = tempfile::tempdir().unwrap();
    let home = root.path().join("home");
    let evo_ok = |args: &[&str]| {
        let out = command(&home, args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        stdout(&out)
    };
    let text = evo_ok(&["skill", "install", skills::CALCULATE, "--as", "calc"]);
    assert!(
        text.starts_with("calc: Skill installed successfully"),
        "{text}"
    );
    let text = evo_ok(&["skill", "run", "calc", "--input", r#"{"expression":"2+3"}"#]);
    assert_eq!(text, "{\n  \"result\": 5\n}\n");
    // Its own errors carry the name it is installed as.
    let out = command(
        &home,
        &["skill", "run", "calc", "--input", r#"{"expression":"2+"}"#],
    )
    .output()
    .unwrap();
    assert!(
        stderr(&out).starts_with("error[INVALID_INPUT]: calc: invalid input: "),
        "{}",
        stderr(&out)
    );
    let text = evo_ok(&["skill", "info", "calc"]);
    assert!(
        text.contains("named:      calculate by its author, installed as calc (`--as`)"),
        "{text}"
    );
    // The built-in keeps its name.
    let text = evo_ok(&[
        "skill",
        "run",
        "calculate",
        "--input",
        r#"{"expression":"1+1"}"#,
    ]);
    assert!(text.contains('2'), "{text}");

    // Grants follow the name installed, not the name the skill gives itself.
    evo_ok(&["skill", "install", skills::FILE_HEAD, "--as", "head"]);
    let data = root.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("present.txt"), "here\n").unwrap();
    let input = [
        "skill",
        "run",
        "head",
        "--input",
        r#"{"path":"present.txt"}"#,
    ];
    for (granted, reads) in [("file-head", false), ("head", true)] {
        std::fs::write(
            home.join("evo.toml"),
            format!(
                "[grants.skill.{granted}]\ndirs = [\"{}::/data:ro\"]\n",
                data.display()
            ),
        )
        .unwrap();
        let out = command(&home, &input).output().unwrap();
        assert_eq!(out.status.success(), reads, "{granted}: {}", stderr(&out));
    }
    // A second copy beside the first; then names a skill cannot have, and a built-in's.
    evo_ok(&["skill", "install", skills::FILE_HEAD, "--as", "head-2"]);
    evo_ok(&["skill", "uninstall", "head"]);
    let text = evo_ok(&["skill", "list"]);
    assert!(
        text.contains("head-2") && !text.contains("file-head"),
        "{text}"
    );
    for (name, code) in [
        ("Bad Name", "INVALID_SKILL_NAME"),
        ("bash", "SKILL_NAME_TAKEN"),
    ] {
        let out = command(
            &home,
            &["skill", "install", skills::FILE_HEAD, "--as", name],
        )
        .output()
        .unwrap();
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(
            stderr(&out).starts_with(&format!("error[{code}]")),
            "{}",
            stderr(&out)
        );
    }
    assert!(!home.join("skills/bash").exists());
}
