//! `plain-io`: a plain WIT component (plain `wit-bindgen` and the `wasip2` crate, no
//! Evo SDK) that reads files through `wasi:filesystem` and fetches through `wasi:http`.
//! A component declares nothing: what it may reach comes from the manifest beside it
//! (`skill.json`), within what the operator grants, as for any skill.

use std::path::{Path, PathBuf};

use evo_tests::cli::{evo, stderr, stdout};
use evo_tests::skills::PLAIN_IO;
use serde_json::{Value, json};

/// A skill directory holding the component as `skill.wasm`, with `manifest` as its
/// `skill.json` when given.
fn component_dir(root: &Path, manifest: Option<&Value>) -> PathBuf {
    let dir = root.join("io");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(PLAIN_IO, dir.join("skill.wasm")).unwrap();
    if let Some(manifest) = manifest {
        std::fs::write(dir.join("skill.json"), manifest.to_string()).unwrap();
    }
    dir
}

fn run(home: &Path, skill: &str, input: &Value, flags: &[&str]) -> Result<Value, String> {
    let input = input.to_string();
    let mut args = vec!["skill", "run", skill, "--input", &input, "--json"];
    args.extend(flags);
    let out = evo(home, &args);
    if out.status.success() {
        let value: Value = serde_json::from_str(&stdout(&out)).unwrap();
        Ok(value["output"].clone())
    } else {
        Err(stderr(&out))
    }
}

#[test]
fn a_plain_component_reads_a_granted_directory_and_nothing_without_the_grant() {
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::write(data.join("notes.txt"), "the plan").unwrap();
    let manifest = json!({
        "name": "io",
        "description": "Reads files and fetches pages.",
        "capabilities": { "dirs": [{ "path": "/data", "access": "read" }] },
    });
    let dir = component_dir(root.path(), Some(&manifest));
    let skill = format!("{}#read-file", dir.display());
    let bind = format!("{}::/data", data.display());
    let input = json!({ "path": "/data/notes.txt" });
    let home = root.path().join("home");
    assert_eq!(
        run(&home, &skill, &input, &["--dir", &bind]).unwrap(),
        json!("the plan")
    );
    // Asked for but not granted: the directory is not there.
    let error = run(&home, &skill, &input, &[]).unwrap_err();
    assert!(
        error.contains("error[SKILL_FAILED]") && !error.contains("the plan"),
        "{error}"
    );
    // A component without a manifest asks for nothing: what the run gives it by name
    // (the flags of `evo skill run` on it) it gets in full.
    std::fs::remove_file(dir.join("skill.json")).unwrap();
    assert_eq!(
        run(&home, &skill, &input, &["--dir", &bind]).unwrap(),
        json!("the plan")
    );
    // A directory every skill shares ([grants] dirs) does not reach it, and says so.
    let config = home.join("evo.toml");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(&config, format!("[grants]\ndirs = [{bind:?}]\n")).unwrap();
    let error = run(&home, &skill, &input, &[]).unwrap_err();
    assert!(
        error.contains("error[SKILL_FAILED]") && !error.contains("the plan"),
        "{error}"
    );
    let out = evo(&home, &["skill", "info", &skill]);
    assert!(
        stdout(&out).contains("not granted: the [grants] every skill shares do not reach io: a component without a manifest asks for nothing"),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    // Named for it in evo.toml, it does.
    std::fs::write(&config, format!("[grants.skill.io]\ndirs = [{bind:?}]\n")).unwrap();
    assert_eq!(run(&home, &skill, &input, &[]).unwrap(), json!("the plan"));
    std::fs::remove_file(&config).unwrap();
    // What a manifest does not ask for is not granted, and the run says so.
    std::fs::write(dir.join("skill.json"), manifest.to_string()).unwrap();
    let out = evo(
        &home,
        &[
            "skill",
            "run",
            &skill,
            "--input",
            &input.to_string(),
            "--dir",
            &bind,
            "--allow-host",
            "https://api.example.com",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("warning: outbound host https://api.example.com was not granted to io__read-file: io__read-file gets only what its manifest asks for"),
        "{}",
        stderr(&out)
    );
    // What `skill info` says of it.
    let out = evo(&home, &["skill", "info", &skill]);
    let text = stdout(&out);
    assert!(
        text.contains("requests:   directory /data (read-only)")
            && text.contains("not granted: directory /data"),
        "{text}{}",
        stderr(&out)
    );
}

#[test]
fn a_plain_component_fetches_inside_the_host_allowlist_only() {
    let (base, seen) = evo_tests::http::serve(|_| (200, r#"{"pong":true}"#.to_owned()));
    let root = tempfile::tempdir().unwrap();
    let manifest = json!({
        "name": "io",
        "description": "Reads files and fetches pages.",
        "capabilities": { "hosts": ["http://127.0.0.1:*"] },
    });
    let dir = component_dir(root.path(), Some(&manifest));
    let skill = format!("{}#fetch", dir.display());
    let home = root.path().join("home");
    let input = json!({ "url": format!("{base}/ping") });
    let allow = "http://127.0.0.1:*";
    assert_eq!(
        run(&home, &skill, &input, &["--allow-host", allow]).unwrap(),
        json!(r#"200 {"pong":true}"#)
    );
    assert_eq!(seen.lock().unwrap().len(), 1);
    // Not granted by the operator: refused before a connection is made, and the
    // failure is that refusal.
    let error = run(&home, &skill, &input, &[]).unwrap_err();
    assert!(error.contains("error[PERMISSION_DENIED]"), "{error}");
    // Outside what the manifest asks for, even when the operator allows any host.
    let elsewhere = json!({ "url": "http://localhost:9/x" });
    let error = run(&home, &skill, &elsewhere, &["--allow-host", "*"]).unwrap_err();
    assert!(error.contains("error[PERMISSION_DENIED]"), "{error}");
    assert_eq!(
        seen.lock().unwrap().len(),
        1,
        "no request reached the server"
    );
}

#[test]
fn the_manifest_beside_a_component_names_it_and_describes_its_functions() {
    let root = tempfile::tempdir().unwrap();
    let manifest = json!({
        "name": "pages",
        "description": "Reads files and fetches pages.",
        "tags": ["io"],
        "timeout": 5000,
        "functions": {
            "fetch": {
                "description": "Fetches a web page and returns its status and body.",
                "parameters": { "url": "The page's address, http or https." },
                "examples": [{ "description": "The example page", "input": { "url": "https://example.com/" } }],
            },
        },
    });
    let dir = component_dir(root.path(), Some(&manifest));
    let home = root.path().join("home");
    let out = evo(&home, &["skill", "install", &dir.display().to_string()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = evo(&home, &["skill", "info", "pages", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let value: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(value["component"]["name"], "pages");
    let skills = value["skills"].as_array().unwrap();
    let names: Vec<&str> = skills.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["pages__read-file", "pages__fetch"]);
    assert_eq!(
        skills[1]["description"],
        "Fetches a web page and returns its status and body."
    );
    let out = evo(&home, &["skill", "info", "pages__fetch", "--json"]);
    let value: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(value["manifest"]["tags"], json!(["io"]));
    assert_eq!(value["manifest"]["timeout"], json!(5000));
    assert_eq!(
        value["manifest"]["examples"][0]["input"]["url"],
        "https://example.com/"
    );
    assert_eq!(
        value["manifest"]["input"]["properties"]["url"]["description"],
        "The page's address, http or https."
    );
    assert_eq!(value["limits"]["timeoutMs"], json!(5000));
    // A function the component does not export is refused, with the ones it does.
    let mut wrong = manifest.clone();
    wrong["functions"] = json!({ "fetch-all": { "description": "x" } });
    std::fs::write(dir.join("skill.json"), wrong.to_string()).unwrap();
    let out = evo(&home, &["skill", "info", &dir.display().to_string()]);
    assert!(!out.status.success());
    let error = stderr(&out);
    assert!(
        error.contains("functions.fetch-all") && error.contains("name one of read-file, fetch"),
        "{error}"
    );
    let mut wrong = manifest.clone();
    wrong["functions"]["fetch"]["parameters"] = json!({ "address": "x" });
    std::fs::write(dir.join("skill.json"), wrong.to_string()).unwrap();
    let out = evo(&home, &["skill", "info", &dir.display().to_string()]);
    let error = stderr(&out);
    assert!(
        error.contains("functions.fetch.parameters.address")
            && error.contains("describe its parameters: `url`"),
        "{error}"
    );
    // Uninstalled, its functions go with it.
    let out = evo(&home, &["skill", "uninstall", "pages"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = evo(&home, &["skill", "list"]);
    assert!(!stdout(&out).contains("pages__"), "{}", stdout(&out));
}

#[test]
fn a_component_importing_what_the_host_lacks_is_refused_at_install_with_the_import_named() {
    let wit = r#"
        package test:needy;
        interface api { ping: func() -> u32; }
        world needy { import api; export pong: func() -> u32; }
    "#;
    let core = r#"(module
        (import "test:needy/api" "ping" (func $ping (result i32)))
        (func (export "pong") (result i32) call $ping))"#;
    let root = tempfile::tempdir().unwrap();
    let file = root.path().join("needy.wasm");
    std::fs::write(&file, evo_tests::component_from_wat(core, wit, "needy")).unwrap();
    let home = root.path().join("home");
    let out = evo(&home, &["skill", "install", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let error = stderr(&out);
    assert!(
        error.contains("error[")
            && error.contains("test:needy/api")
            && error.contains("it imports something this host does not provide"),
        "{error}"
    );
    let out = evo(&home, &["skill", "list"]);
    assert!(!stdout(&out).contains("needy"), "{}", stdout(&out));
}

/// `evo skill grant`, `revoke` and `grants` on an installed component with no manifest:
/// what is granted by name is written to its own entry of evo.toml, the next run has it,
/// a revocation takes it away, and every change is a row of the security log.
#[test]
fn granting_by_name_reaches_an_installed_component_and_revoking_takes_it_away() {
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::write(data.join("notes.txt"), "the plan").unwrap();
    let dir = component_dir(root.path(), None);
    let home = root.path().join("home");
    let installed = evo(&home, &["skill", "install", &dir.display().to_string()]);
    assert!(installed.status.success(), "{}", stderr(&installed));
    let input = json!({ "path": "/data/notes.txt" });
    let bind = format!("{}::/data:ro", data.display());
    assert!(
        run(&home, "io__read-file", &input, &[]).is_err(),
        "nothing granted yet"
    );

    let out = evo(&home, &["--json", "skill", "grant", "io", "--dir", &bind]);
    assert!(out.status.success(), "{}", stderr(&out));
    let shown: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        (shown["asking"].as_str(), shown["keptUnder"].as_str()),
        (Some("by-name"), Some("io"))
    );
    assert_eq!(shown["granted"]["dirs"][0]["guest"], "/data", "{shown}");
    let config = std::fs::read_to_string(home.join("evo.toml")).unwrap();
    assert!(config.contains("[grants.skill.io]\ndirs = ["), "{config}");
    assert_eq!(
        run(&home, "io__read-file", &input, &[]).unwrap(),
        json!("the plan")
    );

    // Bad input is coded and changes nothing.
    for (args, code) in [
        (
            vec!["skill", "revoke", "io", "--dir", "/elsewhere"],
            "NOT_GRANTED",
        ),
        (
            vec!["skill", "grant", "io", "--allow-exec"],
            "GRANT_INVALID",
        ),
        (
            vec!["skill", "grant", "nosuch", "--allow-llm"],
            "SKILL_NOT_FOUND",
        ),
        (
            vec!["skill", "grant", "io", "--dir", "/no/such/dir::/x"],
            "GRANT_INVALID",
        ),
    ] {
        let out = evo(&home, &args);
        assert!(
            !out.status.success() && stderr(&out).contains(&format!("error[{code}]")),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    assert_eq!(
        std::fs::read_to_string(home.join("evo.toml")).unwrap(),
        config
    );

    let out = evo(&home, &["skill", "revoke", "io", "--dir", "/data"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(run(&home, "io__read-file", &input, &[]).is_err(), "revoked");
    let out = evo(&home, &["skill", "grants", "io"]);
    assert!(
        stdout(&out).contains("entry:      none ([grants.skill.io]); nothing reaches it"),
        "{}",
        stdout(&out)
    );
    let out = evo(
        &home,
        &["--json", "tool", "history", "--tool", "skill_grant"],
    );
    let history: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let rows = history.as_array().unwrap();
    assert!(
        rows.iter()
            .any(|r| r["status"] == "success" && r["caller"] == "cli"),
        "{history}"
    );
    assert!(
        rows.iter().any(|r| r["status"] == "error"
            && r["error"].as_str().unwrap_or("").contains("GRANT_INVALID")),
        "a refusal is logged too: {history}"
    );
}

/// A plain component whose `count` returns how many configuration values it reads
/// through `get-all` of `interface` (`wasi:config/store@VERSION` or `…/runtime@…`).
fn config_reader(interface: &str) -> Vec<u8> {
    let (package, name) = interface.split_once('/').unwrap();
    let (name, version) = name.split_once('@').unwrap();
    let error = if name == "runtime" {
        "config-error"
    } else {
        "error"
    };
    let wit = format!(
        r#"
        package test:config;
        world reader {{
            import {interface};
            export count: func() -> u32;
        }}
        package {package}@{version} {{
            interface {name} {{
                variant {error} {{ upstream(string), io(string) }}
                get: func(key: string) -> result<option<string>, {error}>;
                get-all: func() -> result<list<tuple<string, string>>, {error}>;
            }}
        }}
        "#
    );
    // The result lands at 16: its case (0 ok) in the first byte, the list's address
    // and length at 20 and 24. The host copies the list in with `cabi_realloc`.
    let core = format!(
        r#"(module
        (import "{interface}" "get-all" (func $get_all (param i32)))
        (memory (export "memory") 1)
        (global $next (mut i32) (i32.const 1024))
        (func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32)
            (local $at i32)
            (local.set $at (i32.and
                (i32.add (global.get $next) (i32.sub (local.get 2) (i32.const 1)))
                (i32.sub (i32.const 0) (local.get 2))))
            (global.set $next (i32.add (local.get $at) (local.get 3)))
            (local.get $at))
        (func (export "count") (result i32)
            (call $get_all (i32.const 16))
            (if (result i32) (i32.load8_u (i32.const 16))
                (then (i32.const 9999))
                (else (i32.load (i32.const 24))))))"#
    );
    evo_tests::component_from_wat(&core, &wit, "reader")
}

#[test]
fn a_component_reads_its_values_through_every_published_wasi_config_and_is_told_the_versions_evo_has()
 {
    // "Link every published wasi:config version ... and when an import is missing name
    // the versions Evo has."
    let root = tempfile::tempdir().unwrap();
    let home = root.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    for (i, interface) in [
        "wasi:config/store@0.2.0-rc.1",
        "wasi:config/store@0.2.0-draft",
        "wasi:config/store@0.2.0-draft-2024-09-27",
        "wasi:config/runtime@0.2.0-draft",
    ]
    .into_iter()
    .enumerate()
    {
        let file = root.path().join(format!("reader{i}.wasm"));
        std::fs::write(&file, config_reader(interface)).unwrap();
        let skill = file.to_str().unwrap();
        let out = evo(&home, &["skill", "info", skill, "--json"]);
        assert!(out.status.success(), "{interface}: {}", stderr(&out));
        let info: Value = serde_json::from_str(&stdout(&out)).unwrap();
        // A component's values are named for the component, as its grants are.
        let name = info["component"].as_str().unwrap().to_owned();
        std::fs::write(
            home.join("evo.toml"),
            format!("[skill_config.\"{name}\"]\nregion = \"eu\"\nunits = \"metric\"\n"),
        )
        .unwrap();
        assert_eq!(
            run(&home, skill, &json!({}), &[]),
            Ok(json!(2)),
            "{interface}: {info}"
        );
    }

    let file = root.path().join("future.wasm");
    std::fs::write(&file, config_reader("wasi:config/store@0.3.0-draft")).unwrap();
    let out = evo(&home, &["skill", "install", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let error = stderr(&out);
    assert!(
        error.contains("wasi:config/store@0.3.0-draft")
            && error.contains("of that package Evo provides wasi:config/store@0.2.0-rc.1, wasi:config/store@0.2.0-draft, wasi:config/store@0.2.0-draft-2024-09-27, wasi:config/runtime@0.2.0-draft"),
        "{error}"
    );
}
