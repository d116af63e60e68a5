//! `plain-hostile`: a plain WIT component (plain `wit-bindgen`, no Evo SDK) that tries
//! to take more than a call is given. Through `evo`, all at once, each attempt ends in
//! the error of the limit it hit, and nothing of it is left running.

use evo_tests::cli::{command, stderr, stdout};
use evo_tests::skills::PLAIN_HOSTILE;

/// Every process whose command line mentions `needle`.
fn processes_mentioning(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(needle) {
            found.push(cmdline);
        }
    }
    found
}

#[test]
fn a_hostile_plain_component_meets_every_limit_through_evo_under_load() {
    let home = tempfile::tempdir().unwrap();
    // The operator's cap on a call's time, so that the spinning call ends quickly.
    std::fs::write(
        home.path().join("evo.toml"),
        "[engine]\nmax_timeout_ms = 1500\n",
    )
    .unwrap();
    let attempts = [
        ("spin", "{}", "error[SKILL_TIMEOUT]"),
        ("hoard", r#"{"mib":200}"#, "error[MEMORY_LIMIT_EXCEEDED]"),
        // A result past the output cap…
        (
            "flood",
            r#"{"bytes":3000000}"#,
            "error[OUTPUT_LIMIT_EXCEEDED]",
        ),
        // …and one whose WIT values would take the host far more memory than its bytes
        // (a `list<u8>` lifts to 32 bytes a byte) stop before the host holds them.
        ("heap", r#"{"n":30000000}"#, "error[OUTPUT_LIMIT_EXCEEDED]"),
        // An error value is cut to what a message may be.
        ("complain", r#"{"bytes":100000}"#, "error[SKILL_FAILED]"),
    ];
    let children: Vec<_> = attempts
        .iter()
        .map(|(function, input, _)| {
            let skill = format!("{PLAIN_HOSTILE}#{function}");
            command(home.path(), &["skill", "run", &skill, "--input", input])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for (child, (function, _, expected)) in children.into_iter().zip(attempts) {
        let out = child.wait_with_output().unwrap();
        assert!(!out.status.success(), "{function}: {}", stdout(&out));
        let error = stderr(&out);
        assert!(error.contains(expected), "{function}: {error}");
        if function == "complain" {
            assert!(error.len() < 20_000, "{function}: {} bytes", error.len());
        }
    }
    // Printing past the stdout cap stops the printing, not the call.
    let out = command(
        home.path(),
        &[
            "skill",
            "run",
            &format!("{PLAIN_HOSTILE}#shout"),
            "--input",
            r#"{"bytes":1000000}"#,
        ],
    )
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let printed: u64 = stdout(&out).trim().parse().unwrap();
    assert!(printed <= 64 << 10, "{printed} bytes printed");
    let home_text = home.path().to_string_lossy();
    assert_eq!(processes_mentioning(&home_text), Vec::<String>::new());
}
