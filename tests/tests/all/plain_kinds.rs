//! `plain-kinds`: a component built with plain `wit-bindgen` (no Evo SDK, no Evo WIT)
//! whose exported functions are skills. Every WIT type kind goes through `evo` and back
//! unchanged, a bad input for each is refused before an instance exists, an `err` is a
//! failure carrying the error value, and what cannot be a skill is listed with why.

use evo_tests::cli::{evo_shared_cache, stderr, stdout};
use evo_tests::skills::PLAIN_KINDS;
use serde_json::{Value, json};

/// `evo skill run PLAIN_KINDS#function --input INPUT --json`'s output, or its stderr.
fn run(home: &std::path::Path, function: &str, input: &Value) -> Result<Value, String> {
    let skill = format!("{PLAIN_KINDS}#{function}");
    let input = input.to_string();
    let out = evo_shared_cache(home, &["skill", "run", &skill, "--input", &input, "--json"]);
    if out.status.success() {
        let value: Value = serde_json::from_str(&stdout(&out)).map_err(|e| e.to_string())?;
        Ok(value["output"].clone())
    } else {
        Err(stderr(&out))
    }
}

#[test]
fn every_wit_type_kind_goes_through_evo_and_back_unchanged() {
    let home = tempfile::tempdir().unwrap();
    let cases = [
        ("kinds/echo-bool", json!(true)),
        ("kinds/echo-u8", json!(255)),
        ("kinds/echo-s8", json!(-128)),
        ("kinds/echo-u16", json!(65535)),
        ("kinds/echo-s16", json!(-32768)),
        ("kinds/echo-u32", json!(4_294_967_295_u32)),
        ("kinds/echo-s32", json!(-2_147_483_648_i32)),
        // The largest integers JSON readers hold exactly stay numbers…
        ("kinds/echo-u64", json!(9_007_199_254_740_991_u64)),
        ("kinds/echo-s64", json!(-9_007_199_254_740_991_i64)),
        // …and beyond them, decimal strings: "u64/s64 beyond 2^53 must not lose precision".
        ("kinds/echo-u64", json!("18446744073709551615")),
        ("kinds/echo-s64", json!("-9223372036854775808")),
        ("kinds/echo-f32", json!(1.5)),
        ("kinds/echo-f64", json!(-0.1)),
        ("kinds/echo-f64", json!("NaN")),
        ("kinds/echo-f64", json!("-Infinity")),
        ("kinds/echo-char", json!("é")),
        ("kinds/echo-string", json!("hello, wörld")),
        (
            "kinds/echo-point",
            json!({ "x": 1, "y": -2, "label": "here" }),
        ),
        (
            "kinds/echo-point",
            json!({ "x": 1, "y": -2, "label": null }),
        ),
        ("kinds/echo-shape", json!({ "tag": "circle", "val": 2.5 })),
        (
            "kinds/echo-shape",
            json!({ "tag": "square", "val": { "x": 0, "y": 0, "label": null } }),
        ),
        ("kinds/echo-shape", json!({ "tag": "empty" })),
        ("kinds/echo-color", json!("green")),
        ("kinds/echo-perms", json!(["read", "exec"])),
        ("kinds/echo-perms", json!([])),
        ("kinds/echo-option", json!(7)),
        ("kinds/echo-option", json!(null)),
        ("kinds/echo-nested", json!({ "some": "x" })),
        ("kinds/echo-nested", json!({ "some": null })),
        ("kinds/echo-nested", json!(null)),
        ("kinds/echo-tuple", json!([1, "two", true])),
        (
            "kinds/echo-list",
            json!([{ "x": 1, "y": 2, "label": null }, { "x": 3, "y": 4, "label": "b" }]),
        ),
        ("kinds/echo-bytes", json!("AAEC/w==")),
        ("counters/add", json!(null)),
    ];
    for (function, value) in cases {
        let (input, expected) = if function == "counters/add" {
            (json!({ "a": 2, "b": 40 }), json!(42))
        } else {
            (json!({ "v": value }), value.clone())
        };
        let output = run(home.path(), function, &input)
            .unwrap_or_else(|e| panic!("{function} {input}: {e}"));
        assert_eq!(output, expected, "{function} {input}");
    }
    // An option left out is `none`; a function of no parameters returns null.
    assert_eq!(
        run(home.path(), "kinds/echo-option", &json!({})).unwrap(),
        json!(null)
    );
    assert_eq!(
        run(home.path(), "kinds/nothing", &json!({})).unwrap(),
        json!(null)
    );
    assert_eq!(
        run(home.path(), "greet", &json!({ "name": "evo" })).unwrap(),
        json!("hello, evo")
    );
    assert_eq!(
        run(
            home.path(),
            "calculate",
            &json!({ "expression": "sqrt(144) + 10" })
        )
        .unwrap(),
        json!(22.0)
    );
}

#[test]
fn a_bad_input_for_each_kind_is_refused_with_where_and_what_was_expected() {
    let home = tempfile::tempdir().unwrap();
    let cases = [
        ("kinds/echo-bool", json!("yes")),
        ("kinds/echo-u8", json!(256)),
        ("kinds/echo-s8", json!(-129)),
        ("kinds/echo-u16", json!(-1)),
        ("kinds/echo-s16", json!(1.5)),
        ("kinds/echo-u32", json!("12")),
        ("kinds/echo-s32", json!(2_147_483_648_i64)),
        ("kinds/echo-u64", json!("18446744073709551616")),
        ("kinds/echo-s64", json!("1e3")),
        ("kinds/echo-f32", json!("fast")),
        ("kinds/echo-f64", json!(null)),
        ("kinds/echo-char", json!("ab")),
        ("kinds/echo-string", json!(5)),
        ("kinds/echo-point", json!({ "x": 1 })),
        ("kinds/echo-shape", json!({ "tag": "triangle" })),
        ("kinds/echo-color", json!("purple")),
        ("kinds/echo-perms", json!(["fly"])),
        ("kinds/echo-option", json!(-1)),
        ("kinds/echo-tuple", json!([1, "two"])),
        ("kinds/echo-list", json!({ "x": 1 })),
        ("kinds/echo-bytes", json!("not base64!")),
        ("kinds/echo-result", json!({ "tag": "maybe" })),
    ];
    for (function, value) in cases {
        let input = json!({ "v": value });
        let error = run(home.path(), function, &input)
            .expect_err(&format!("{function} {input} is refused"));
        // The schema derived from the WIT types catches it at the kernel's input gate,
        // with the report every skill's input gets; what a schema cannot say (a u64
        // past its range in a decimal string) the conversion catches, at the same place.
        let reported = error.contains("error[SKILL_VALIDATION_FAILED]") && error.contains("[v")
            || error.contains("error[INVALID_INPUT]") && error.contains("at v");
        assert!(reported, "{function} {input}: {error}");
    }
    // "A u64 above 2^53 given as a JSON number ... say to send it as a string"; "a float
    // that overflows f32 becomes Infinity silently; refuse it."
    let error = run(home.path(), "kinds/echo-u64", &json!({ "v": u64::MAX })).unwrap_err();
    assert!(
        error.contains("send it as a decimal string, \"18446744073709551615\""),
        "{error}"
    );
    let error = run(home.path(), "kinds/echo-f32", &json!({ "v": 1e39 })).unwrap_err();
    assert!(
        error.contains("error[SKILL_VALIDATION_FAILED]")
            && error.contains("a number from -3.4028235e38 to 3.4028235e38 (a 32-bit float)"),
        "{error}"
    );
    assert_eq!(
        run(home.path(), "kinds/echo-f32", &json!({ "v": 3.4e38 })).unwrap(),
        json!(3.4e38_f32)
    );
    let error = run(home.path(), "kinds/divide", &json!({ "a": 1 })).unwrap_err();
    assert!(
        error.contains("error[SKILL_VALIDATION_FAILED]") && error.contains("\"b\""),
        "{error}"
    );
    let error = run(
        home.path(),
        "kinds/divide",
        &json!({ "a": 1, "b": 2, "c": 3 }),
    )
    .unwrap_err();
    assert!(
        error.contains("error[SKILL_VALIDATION_FAILED]") && error.contains("c"),
        "{error}"
    );
    eprintln!("{error}");
}

#[test]
fn an_err_result_is_a_failure_carrying_the_error_value() {
    let home = tempfile::tempdir().unwrap();
    assert_eq!(
        run(
            home.path(),
            "kinds/divide",
            &json!({ "a": "-9223372036854775807", "b": 1 })
        )
        .unwrap(),
        json!("-9223372036854775807")
    );
    let error = run(home.path(), "kinds/divide", &json!({ "a": 1, "b": 0 })).unwrap_err();
    assert!(
        error.contains("error[SKILL_FAILED]") && error.contains(r#""cannot divide 1 by 0""#),
        "{error}"
    );
    // A `result` taken as input is read in its tagged form, both cases.
    let ok = json!({ "v": { "tag": "ok", "val": "fine" } });
    assert_eq!(
        run(home.path(), "kinds/echo-result", &ok).unwrap(),
        json!("fine")
    );
    let err = json!({ "v": { "tag": "err", "val": "blue" } });
    let error = run(home.path(), "kinds/echo-result", &err).unwrap_err();
    assert!(
        error.contains("error[SKILL_FAILED]") && error.contains(r#""blue""#),
        "{error}"
    );
}

#[test]
fn a_component_of_many_functions_is_run_by_naming_one() {
    let home = tempfile::tempdir().unwrap();
    let out = evo_shared_cache(home.path(), &["skill", "run", PLAIN_KINDS, "--input", "{}"]);
    assert!(!out.status.success());
    let error = stderr(&out);
    assert!(
        error.contains("error[FUNCTION_NOT_CHOSEN]")
            && error.contains("plain-kinds__kinds__echo-u8")
            && error.contains("#FUNCTION"),
        "{error}"
    );
    // The skill name works as well as the WIT name.
    let by_name = format!("{PLAIN_KINDS}#plain-kinds__greet");
    let out = evo_shared_cache(
        home.path(),
        &["skill", "run", &by_name, "--input", r#"{"name":"x"}"#],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), r#""hello, x""#);
}

#[test]
fn skill_info_lists_every_function_and_why_the_others_are_not_skills() {
    let home = tempfile::tempdir().unwrap();
    let out = evo_shared_cache(home.path(), &["skill", "info", PLAIN_KINDS]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    for line in [
        "plain-kinds__counters__add",
        "plain-kinds__greet",
        "counters/read: its parameter `c` is a resource handle, which has no JSON form",
        "counters/[method]counter.increment: it is a method of the resource `counter`",
    ] {
        assert!(text.contains(line), "{line} in:\n{text}");
    }
    let out = evo_shared_cache(home.path(), &["skill", "info", PLAIN_KINDS, "--json"]);
    let value: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let skills = value["skills"].as_array().unwrap();
    assert_eq!(skills.len(), 30);
    assert_eq!(value["unusable"].as_array().unwrap().len(), 3);
    let divide = skills
        .iter()
        .find(|s| s["function"] == "kinds/divide")
        .unwrap();
    assert_eq!(divide["input"]["required"], json!(["a", "b"]));
    // The version is the WIT package's.
    assert_eq!(value["component"]["version"], "0.1.0");
}

#[test]
fn a_pipeline_step_calls_a_component_function_and_its_calls_are_counted() {
    let root = tempfile::tempdir().unwrap();
    let skills = root.path().join("skills");
    std::fs::create_dir_all(skills.join("kinds")).unwrap();
    std::fs::copy(PLAIN_KINDS, skills.join("kinds/skill.wasm")).unwrap();
    std::fs::create_dir_all(skills.join("halve")).unwrap();
    let manifest = json!({
        "name": "halve",
        "description": "Halves a number with the component's divide, then greets the half.",
        "mode": "composite",
        "calls": ["kinds__kinds__divide", "kinds__greet"],
        "input": {
            "type": "object",
            "properties": { "n": { "type": "integer" } },
            "required": ["n"],
        },
        "pipeline": [
            { "step": "half", "skill": "kinds__kinds__divide", "input": { "a": "{{input.n}}", "b": 2 } },
            { "step": "hello", "skill": "kinds__greet", "input": { "name": "number {{steps.half}}" } },
        ],
        "outputMapping": { "half": "{{steps.half}}", "greeting": "{{steps.hello}}" },
    });
    std::fs::write(skills.join("halve/skill.json"), manifest.to_string()).unwrap();
    let home = root.path().join("home");
    let dir = skills.to_str().unwrap();
    let out = evo_tests::cli::evo(
        &home,
        &[
            "skill",
            "run",
            "halve",
            "--skills-dir",
            dir,
            "--input",
            r#"{"n":10}"#,
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let value: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(value, json!({ "half": 5, "greeting": "hello, number 5" }));
    // Each function's calls are in the statistics and the history.
    let out = evo_tests::cli::evo(&home, &["skill", "stats", "kinds__kinds__divide", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let stats: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(stats["kinds__kinds__divide"]["callCount"], 1, "{stats}");
    assert_eq!(stats["kinds__kinds__divide"]["successCount"], 1, "{stats}");
    let out = evo_tests::cli::evo(&home, &["tool", "history", "--json"]);
    assert!(
        stdout(&out).contains("kinds__greet"),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
}

#[test]
fn the_agent_routes_to_an_installed_components_function() {
    let home = tempfile::tempdir().unwrap();
    let wasm = home.path().join("plain_kinds.wasm");
    std::fs::copy(PLAIN_KINDS, &wasm).unwrap();
    let out = evo_tests::cli::evo(home.path(), &["skill", "install", wasm.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    // What is tested is the router's choice among functions: `calculate`, whose requests
    // include "divide 1000 by 7", would be offered first on its own.
    std::fs::write(
        home.path().join("evo.toml"),
        "[agent]\ndecisive_routing = false\n",
    )
    .unwrap();
    let script = home.path().join("script.json");
    let routing = json!({ "intents": [], "routing": { "strategy": "single_skill",
        "skills": [{ "name": "plain-kinds__kinds__divide", "input": { "a": 7, "b": 2 }, "reason": "division" }] } });
    std::fs::write(
        &script,
        json!({ "responses": [routing.to_string(), "It is 3."] }).to_string(),
    )
    .unwrap();
    let out = evo_tests::cli::command(home.path(), &["agent", "run", "divide 7 by 2", "--json"])
        .env("EVO_LLM", format!("scripted:{}", script.display()))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let events: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let result = events
        .iter()
        .find(|e| e["type"] == "skill_result" && e["skill"] == "plain-kinds__kinds__divide")
        .unwrap_or_else(|| panic!("the function ran: {events:?}"));
    assert_eq!(result["output"], json!(3), "{result}");
}

#[test]
fn a_component_of_one_function_runs_by_its_file_name_alone() {
    // The component of the report that opened this work: `execute: func(input: string)
    // -> string`, which Evo once refused as "not an Evo skill … exports nothing".
    let wit = "package test:echo;\nworld echo { export execute: func(input: string) -> string; }";
    let core = r#"(module
        (memory (export "memory") 1)
        (global $next (mut i32) (i32.const 1024))
        (func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32)
            (local $at i32)
            global.get $next
            local.set $at
            global.get $next
            local.get 3
            i32.add
            global.set $next
            local.get $at)
        (func (export "execute") (param $ptr i32) (param $len i32) (result i32)
            i32.const 0
            local.get $ptr
            i32.store
            i32.const 4
            local.get $len
            i32.store
            i32.const 0))"#;
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join("echo.wasm");
    std::fs::write(&file, evo_tests::component_from_wat(core, wit, "echo")).unwrap();
    let file = file.to_str().unwrap();
    let out = evo_tests::cli::evo(
        home.path(),
        &["skill", "run", file, "--input", r#"{"input":"hi"}"#],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), r#""hi""#);
    let out = evo_tests::cli::evo(home.path(), &["skill", "info", file, "--json"]);
    let value: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(value["manifest"]["name"], "echo__execute");
    assert_eq!(value["function"], "execute");
}

/// `evo skill run PLAIN_KINDS#function --input - --json` with `input` on stdin (an
/// argument holds at most 128 KiB); its output, or its stderr.
fn run_stdin(home: &std::path::Path, function: &str, input: &Value) -> Result<Value, String> {
    use std::io::Write as _;
    let skill = format!("{PLAIN_KINDS}#{function}");
    let mut child =
        evo_tests::cli::command(home, &["skill", "run", &skill, "--input", "-", "--json"])
            .env("EVO_CACHE_DIR", evo_tests::cli::shared_cache_dir())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.to_string().as_bytes()).unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    if out.status.success() {
        let value: Value = serde_json::from_str(&stdout(&out)).map_err(|e| e.to_string())?;
        Ok(value["output"].clone())
    } else {
        Err(stderr(&out))
    }
}

fn base64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// "give byte lists and strings a direct path": a function of strings and byte lists
/// answers exactly as through WIT values, hundreds of kilobytes each way, both cases
/// of a `result`, an input it cannot read refused as before, and the output cap held.
#[test]
fn bulk_strings_and_bytes_go_through_and_back_unchanged() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let bytes: Vec<u8> = (0..600_000u32).map(|i| (i * 7 % 256) as u8).collect();
    let encoded = base64(&bytes);
    assert_eq!(
        run_stdin(home, "kinds/echo-bytes", &json!({ "v": encoded })).unwrap(),
        json!(encoded)
    );
    let text = "é😀\u{1}\"\\ plain ".repeat(30_000);
    assert_eq!(
        run_stdin(home, "kinds/echo-string", &json!({ "v": text })).unwrap(),
        json!(text)
    );
    // Two parameters, and both cases of a `result`.
    let labelled = json!({ "data": base64(b"ab"), "label": "c\u{e9}" });
    assert_eq!(
        run(home, "kinds/label-bytes", &labelled).unwrap(),
        json!(base64("abc\u{e9}".as_bytes()))
    );
    let error = run(
        home,
        "kinds/label-bytes",
        &json!({ "data": "", "label": "" }),
    )
    .unwrap_err();
    assert!(
        error.contains("error[SKILL_FAILED]") && error.contains(r#""the label is empty""#),
        "{error}"
    );
    let text_of = |bytes: &[u8]| {
        run(
            home,
            "kinds/bytes-to-text",
            &json!({ "data": base64(bytes) }),
        )
    };
    assert_eq!(text_of("héllo".as_bytes()).unwrap(), json!("héllo"));
    let error = text_of(&[0x61, 0xff]).unwrap_err();
    assert!(
        error.contains("error[SKILL_FAILED]") && error.contains("not UTF-8"),
        "{error}"
    );
    // What the direct path cannot read is refused as before, by the input schema.
    for (input, code, says) in [
        (
            json!({ "data": 5, "label": "x" }),
            "SKILL_VALIDATION_FAILED",
            "data",
        ),
        (
            json!({ "data": "YQ==" }),
            "SKILL_VALIDATION_FAILED",
            "label",
        ),
        (
            json!({ "data": "YQ==", "label": "x", "more": 1 }),
            "SKILL_VALIDATION_FAILED",
            "more",
        ),
        (
            json!({ "data": "not base64!", "label": "x" }),
            "SKILL_VALIDATION_FAILED",
            "data",
        ),
    ] {
        let error = run(home, "kinds/label-bytes", &input).unwrap_err();
        assert!(
            error.contains(&format!("error[{code}]")) && error.contains(says),
            "{input}: {error}"
        );
    }
    // An output past the cap (1 MiB of JSON) is refused, as on the value path.
    let big = base64(&vec![7u8; 900_000]);
    let error = run_stdin(home, "kinds/echo-bytes", &json!({ "v": big })).unwrap_err();
    assert!(
        error.contains("error[OUTPUT_LIMIT]") || error.contains("OUTPUT"),
        "{error}"
    );
}
