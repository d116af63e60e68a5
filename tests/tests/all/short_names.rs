//! `evo skill build` writes a Rust component's function names demangled and without
//! their hashes: the component is smaller and a trap through `evo` names the same
//! guest functions as before.

use evo_host::engine::wasm::with_short_names;
use evo_tests::cli::{command, stderr};
use evo_tests::skills;
use wasmtime::wasmparser::{Name, NameSectionReader, Parser, Payload};

/// The function names in the `name` sections of `component`'s core modules.
pub(crate) fn function_names(component: &[u8]) -> Vec<String> {
    let mut names = Vec::new();
    for payload in Parser::new(0).parse_all(component) {
        let Ok(Payload::CustomSection(section)) = payload else {
            continue;
        };
        if section.name() != "name" {
            continue;
        }
        let reader = wasmtime::wasmparser::BinaryReader::new(section.data(), section.data_offset());
        for subsection in NameSectionReader::new(reader) {
            if let Ok(Name::Function(map)) = subsection {
                names.extend(map.into_iter().map(|n| n.unwrap().name.to_owned()));
            }
        }
    }
    names
}

/// Whether `name` is a Rust symbol as rustc writes it (legacy or v0 mangling).
pub(crate) fn mangled(name: &str) -> bool {
    name.starts_with("_ZN") || name.starts_with("_R")
}

/// The frames of the guest backtrace in a trap message, without their code offsets.
fn frames(message: &str) -> Vec<String> {
    message
        .split_once("guest backtrace:\n")
        .map(|(_, frames)| frames)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| Some(l.split_once(" - ")?.1.to_owned()))
        .collect()
}

#[test]
fn shortened_names_keep_a_trap_readable_and_the_component_smaller() {
    let original = std::fs::read(skills::FIXTURE_PROBE).unwrap();
    let names = function_names(&original);
    assert!(
        names.iter().filter(|n| mangled(n)).count() > 100,
        "the fixture is built with its names: {names:?}"
    );

    let short = with_short_names("fixture-probe", &original).unwrap();
    let short_names = function_names(&short);
    assert_eq!(short_names.len(), names.len());
    assert!(
        !short_names.iter().any(|n| mangled(n)),
        "{:?}",
        short_names
            .iter()
            .filter(|n| mangled(n))
            .collect::<Vec<_>>()
    );
    assert!(
        short_names
            .iter()
            .any(|n| n.starts_with("<fixture_probe::") || n.starts_with("fixture_probe::")),
        "{short_names:?}"
    );
    assert!(
        short.len() * 100 < original.len() * 97,
        "{} bytes, was {}",
        short.len(),
        original.len()
    );

    // A panic through `evo skill run`, in the component as built and as shortened.
    let work = tempfile::tempdir().unwrap();
    let shortened = work.path().join("fixture-probe.wasm");
    std::fs::write(&shortened, &short).unwrap();
    let home = work.path().join("home");
    let trap = |path: &str| {
        let out = command(
            &home,
            &[
                "skill",
                "run",
                path,
                "--input",
                r#"{"panic":"the gizmo broke"}"#,
            ],
        )
        .output()
        .unwrap();
        assert!(!out.status.success());
        let message = stderr(&out);
        assert!(message.contains("error[SKILL_TRAPPED]"), "{message}");
        assert!(message.contains("the gizmo broke"), "{message}");
        message
    };
    let before = trap(skills::FIXTURE_PROBE);
    let after = trap(shortened.to_str().unwrap());
    let (before, after) = (frames(&before), frames(&after));
    assert!(!before.is_empty(), "no guest backtrace");
    assert_eq!(before, after);
    assert!(
        after.iter().any(|f| f.contains("fixture_probe::")),
        "the backtrace names the skill's own code: {after:?}"
    );
    assert!(
        after
            .iter()
            .all(|f| !f.contains("!core::") && !f.contains("!std::")),
        "the Rust runtime's frames are left out: {after:?}"
    );
}

#[test]
fn a_component_that_is_not_one_is_refused_with_its_name() {
    let err = with_short_names("broken", b"\0asm\x01\0\0\0").unwrap_err();
    assert!(
        err.to_string()
            .contains("broken is not a WebAssembly component"),
        "{err}"
    );
    let mut truncated = std::fs::read(skills::CALCULATE).unwrap();
    truncated.truncate(truncated.len() / 2);
    let err = with_short_names("cut", &truncated).unwrap_err();
    assert!(
        err.to_string()
            .contains("cut is not a valid component: unexpected end-of-file"),
        "{err}"
    );
}
