//! An installed Agent Skill's helper scripts, run through `evo` with the exec grant:
//! Python, nested Python packages and shell, with arguments, in the native sandbox.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

const SECRET: &str = "sk-scripts-do-not-leak";

/// An instruction skill laid out like the public Agent Skills (a license, nested
/// `scripts/office/`, `core/`, `templates/`, fonts), with helpers of every kind.
fn office_kit(root: &Path) -> PathBuf {
    let dir = root.join("office-kit");
    let files: [(&str, &[u8]); 10] = [
        (
            "SKILL.md",
            b"---\nname: office-kit\ndescription: Fills and checks office documents. Use when the user asks to fill a form.\nlicense: Proprietary. LICENSE.txt has complete terms\n---\n\n# Office kit\n\nFill a form with `python scripts/fill_form.py NAME VALUE`; unpack with `scripts/office/unpack.py`; check with `scripts/check.sh`. Fonts are in `fonts/`, the engine notes in [core](core/engine.md).\n",
        ),
        ("LICENSE.txt", b"All rights reserved.\n"),
        (
            "scripts/fill_form.py",
            b"import json, os, sys\nhere = os.path.dirname(os.path.abspath(__file__))\nwith open(os.path.join(here, '..', 'templates', 'form.txt')) as f:\n    template = f.read().strip()\nwith open('filled.txt', 'w') as f:\n    f.write(template.replace('NAME', sys.argv[1]))\nprint(json.dumps({'args': sys.argv[1:], 'filled': open('filled.txt').read()}))\n",
        ),
        (
            "scripts/office/unpack.py",
            b"import sys\nfrom helpers import tag\nprint(tag(sys.argv[1]))\n",
        ),
        (
            "scripts/office/helpers.py",
            b"def tag(name):\n    return 'unpacked:' + name\n",
        ),
        (
            "scripts/check.sh",
            b"#!/bin/bash\necho \"checking $1\"\necho 'the form is incomplete' >&2\nexit 3\n",
        ),
        (
            "scripts/escape.py",
            b"import json, os, socket, sys\nr = {}\ntry:\n    open('/etc/shadow').read(); r['shadow'] = 'read'\nexcept OSError as e: r['shadow'] = type(e).__name__\ntry:\n    os.listdir(sys.argv[1]); r['home'] = 'listed'\nexcept OSError as e: r['home'] = type(e).__name__\nr['secret'] = any(sys.argv[2] in v for v in os.environ.values())\ns = socket.socket()\ntry:\n    s.connect(('127.0.0.1', int(sys.argv[3]))); r['tcp'] = 'connected'\nexcept OSError as e: r['tcp'] = type(e).__name__\nprint(json.dumps(r))\n",
        ),
        ("core/engine.md", b"# Engine\n"),
        ("templates/form.txt", b"Dear NAME,\n"),
        ("fonts/Inter.ttf", &[0, 1, 0, 0, 0, 0x10, 0x80, 0xff, 0xfe]),
    ];
    for (path, bytes) in files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
    dir
}

/// A data directory with `office-kit` installed (unmodified, as an instruction skill).
fn installed() -> (tempfile::TempDir, tempfile::TempDir) {
    let home = tempfile::tempdir().unwrap();
    let sources = tempfile::tempdir().unwrap();
    let dir = office_kit(sources.path());
    let out = evo_tests::cli::evo(home.path(), &["skill", "install", dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}", evo_tests::cli::stderr(&out));
    (home, sources)
}

/// `evo skill run run_skill_script [FLAGS] --json --input {skill, script, args}`.
fn run_script(home: &Path, flags: &[&str], script: &str, args: &[&str]) -> (Option<i32>, Value) {
    let input = json!({ "skill": "office-kit", "script": script, "args": args }).to_string();
    let mut argv = vec!["skill", "run", "run_skill_script"];
    argv.extend_from_slice(flags);
    argv.extend(["--json", "--input", &input]);
    let out = evo_tests::cli::command(home, &argv)
        .env("EVO_TEST_SECRET", SECRET)
        .output()
        .unwrap();
    let stdout = evo_tests::cli::stdout(&out);
    let value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {stdout} {}", evo_tests::cli::stderr(&out)));
    (out.status.code(), value)
}

#[test]
fn without_the_exec_grant_a_skills_scripts_do_not_run() {
    let (home, _sources) = installed();
    let (code, value) = run_script(home.path(), &[], "scripts/fill_form.py", &["Ada"]);
    assert_eq!(code, Some(2), "{value}");
    assert_eq!(value["code"], "CAPABILITY_DENIED", "{value}");
    assert_eq!(
        value["error"],
        "capability: running office-kit's scripts needs the exec grant: pass --allow-exec, or set `exec = true` under [grants.skill.office-kit] in evo.toml, if you trust the skill"
    );
}

#[test]
fn with_the_exec_grant_python_nested_python_and_shell_helpers_run_with_their_arguments() {
    let (home, _sources) = installed();
    let exec = ["--allow-exec"];

    let (code, value) = run_script(home.path(), &exec, "scripts/fill_form.py", &["Ada L", "x"]);
    assert_eq!(code, Some(0), "{value}");
    let output = &value["output"];
    assert_eq!(output["success"], true, "{value}");
    assert_eq!(output["exitCode"], 0);
    let printed: Value = serde_json::from_str(output["stdout"].as_str().unwrap()).unwrap();
    assert_eq!(
        printed,
        json!({ "args": ["Ada L", "x"], "filled": "Dear Ada L," }),
        "arguments arrive whole, the skill's files are readable, the workspace writable"
    );

    let (_, value) = run_script(
        home.path(),
        &exec,
        "scripts/office/unpack.py",
        &["report.docx"],
    );
    assert_eq!(
        value["output"]["stdout"], "unpacked:report.docx\n",
        "{value}"
    );

    // A script that fails is a result the model can read, not an error.
    let (code, value) = run_script(home.path(), &exec, "scripts/check.sh", &["form.pdf"]);
    assert_eq!(code, Some(0), "{value}");
    assert_eq!(
        value["output"],
        json!({
            "success": false,
            "exitCode": 3,
            "stdout": "checking form.pdf\n",
            "stderr": "the form is incomplete\n",
            "duration": value["output"]["duration"],
            "error": "the script exited with code 3",
        })
    );
}

#[test]
fn a_granted_script_is_as_confined_as_a_native_skill() {
    let (home, _sources) = installed();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    let user_home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
    let (_, value) = run_script(
        home.path(),
        &["--allow-exec"],
        "scripts/escape.py",
        &[&user_home, SECRET, &port],
    );
    let seen: Value = serde_json::from_str(value["output"]["stdout"].as_str().unwrap())
        .unwrap_or_else(|e| {
            panic!("{e}: {value}");
        });
    assert_ne!(seen["shadow"], "read", "{seen}");
    assert_ne!(seen["home"], "listed", "{seen}");
    assert_eq!(seen["secret"], false, "{seen}");
    assert_ne!(seen["tcp"], "connected", "{seen}");
    assert!(listener.accept().is_err(), "nothing reached the listener");
}

#[test]
fn only_the_skills_own_scripts_run_and_a_per_skill_grant_is_enough() {
    let (home, _sources) = installed();
    std::fs::write(
        home.path().join("evo.toml"),
        "[grants.skill.office-kit]\nexec = true\n",
    )
    .unwrap();
    for script in [
        "templates/form.txt",
        "../office-kit/scripts/check.sh",
        "/bin/sh",
    ] {
        let (code, value) = run_script(home.path(), &[], script, &[]);
        assert_eq!(code, Some(2), "{script}: {value}");
        assert_eq!(value["code"], "INVALID_INPUT", "{script}: {value}");
        assert!(
            value["error"].as_str().unwrap().contains(
                "is not one of office-kit's scripts; it has: scripts/check.sh, scripts/escape.py, scripts/fill_form.py, scripts/office/helpers.py, scripts/office/unpack.py"
            ),
            "{script}: {value}"
        );
    }
    let (code, value) = run_script(home.path(), &[], "scripts/office/unpack.py", &["a"]);
    assert_eq!(code, Some(0), "the per-skill grant: {value}");
    assert_eq!(value["output"]["stdout"], "unpacked:a\n");
}
