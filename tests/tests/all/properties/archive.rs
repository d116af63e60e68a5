//! Skill archives: whatever an archive holds, it installs cleanly or is refused with a
//! code, and writes nothing outside the data directory.

use super::*;
use evo_host::packages::{InstallOptions, SkillManager};

/// One entry of a generated archive.
#[derive(Debug, Clone)]
enum Entry {
    File(String, Vec<u8>),
    Dir(String),
    Symlink(String, String),
}

fn entry_name() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(
            &[
                "s/SKILL.md",
                "s/skill.json",
                "s/scripts/execute.js",
                "s/skill.wasm",
                "s/references/a.md",
                "SKILL.md",
                "a/b/s/SKILL.md",
                "../evil.txt",
                "s/../../evil.txt",
                "/tmp/evil.txt",
                "s\\..\\..\\evil.txt",
                "C:\\evil.txt",
                "s/./SKILL.md",
                "s//SKILL.md",
                "s/.evo/auto.wasm",
                "s/.installed",
                "s/\u{0}x",
                "s/con",
                "",
            ][..]
        )
        .prop_map(str::to_owned),
        "[a-z./\\\\]{1,24}",
        any::<String>(),
    ]
}

fn entry_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        Just(b"---\nname: s\ndescription: A skill.\n---\nDo it.\n".to_vec()),
        Just(br#"{"name":"s","description":"A skill.","mode":"composite","pipeline":[]}"#.to_vec()),
        Just(b"console.log('{}')".to_vec()),
        Just(b"\0asm\x0d\0\x01\0".to_vec()),
        text_of(&[
            "---\n",
            "name: s\n",
            "description: d\n",
            "tags: [a]\n",
            "---\n"
        ])
        .prop_map(String::into_bytes),
        prop::collection::vec(any::<u8>(), 0..256),
    ]
}

/// Half of the archives start as a valid skill, so that both what is refused and what
/// is installed get exercised.
fn archive_entries() -> impl Strategy<Value = Vec<Entry>> {
    let entry = prop_oneof![
        6 => (entry_name(), entry_bytes()).prop_map(|(n, b)| Entry::File(n, b)),
        3 => ("s/(references|scripts|assets)/[a-z]{1,6}\\.(md|js|txt)", entry_bytes())
            .prop_map(|(n, b)| Entry::File(n, b)),
        1 => entry_name().prop_map(Entry::Dir),
        1 => (entry_name(), prop::sample::select(&["../../../etc/passwd", "/etc/shadow", "SKILL.md", "."][..]))
            .prop_map(|(n, t)| Entry::Symlink(n, t.to_owned())),
    ];
    (any::<bool>(), prop::collection::vec(entry, 0..6)).prop_map(|(valid, mut entries)| {
        if valid {
            let md = b"---\nname: s\ndescription: A skill.\n---\nDo it.\n".to_vec();
            entries.insert(0, Entry::File("s/SKILL.md".into(), md));
        }
        entries
    })
}

/// The archive's bytes, damaged as `damage` says: cut short or a byte flipped.
fn zip_of(entries: &[Entry], damage: Option<(usize, u8)>, cut: bool) -> Vec<u8> {
    use std::io::Write as _;
    let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default();
    for entry in entries {
        // The writer refuses some names (duplicates, say); what it writes is the input.
        let _ = match entry {
            Entry::File(name, bytes) => writer
                .start_file(name.as_str(), options)
                .and_then(|()| writer.write_all(bytes).map_err(Into::into)),
            Entry::Dir(name) => writer.add_directory(name.as_str(), options),
            Entry::Symlink(name, target) => {
                writer.add_symlink(name.as_str(), target.as_str(), options)
            }
        };
    }
    let mut bytes = writer
        .finish()
        .map(std::io::Cursor::into_inner)
        .unwrap_or_default();
    if let Some((at, xor)) = damage
        && !bytes.is_empty()
    {
        let at = at % bytes.len();
        if cut {
            bytes.truncate(at);
        } else {
            bytes[at] ^= xor.max(1);
        }
    }
    bytes
}

/// Every path under `dir`, relative, sorted.
fn tree(dir: &Path) -> Vec<String> {
    let mut paths = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).into_iter().flatten().flatten() {
            let path = entry.path();
            paths.push(path.strip_prefix(dir).unwrap().display().to_string());
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(path);
            }
        }
    }
    paths.sort();
    paths
}

/// Installs `zip` into a fresh data directory inside a fresh parent, and checks the
/// properties: no panic, a coded error or an installed skill that lists, nothing written
/// beside the data directory, no staging left behind.
fn install_checks(rt: &tokio::runtime::Runtime, zip: &[u8]) -> Result<(), TestCaseError> {
    let parent = tempfile::tempdir().unwrap();
    let data = parent.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let manager = SkillManager::new(&data);
    let installed = rt.block_on(manager.install_skill(
        zip,
        InstallOptions {
            native: true,
            ..InstallOptions::default()
        },
    ));
    let beside: Vec<_> = std::fs::read_dir(parent.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    prop_assert_eq!(beside, ["data"], "written beside the data directory");
    let skills = tree(&data.join("skills"));
    prop_assert!(
        skills
            .iter()
            .all(|p| !p.contains("staging") && !p.starts_with('.')),
        "left behind: {:?}",
        skills
    );
    match installed {
        Ok(outcome) => {
            let listing = manager
                .list_skills(&evo_host::packages::ListQuery::default())
                .unwrap();
            prop_assert_eq!(listing.skills.len(), 1);
            prop_assert_eq!(&listing.skills[0].name, &outcome.name);
            // Nothing in the installed skill points outside it.
            for path in &skills {
                let full = data.join("skills").join(path);
                let meta = std::fs::symlink_metadata(&full).unwrap();
                prop_assert!(!meta.file_type().is_symlink(), "a symlink: {}", path);
            }
        }
        Err(e) => {
            prop_assert!(e.code().chars().all(|c| c.is_ascii_uppercase() || c == '_'));
            prop_assert!(!e.to_string().is_empty());
            prop_assert!(skills.is_empty(), "a failed install left {:?}", skills);
        }
    }
    Ok(())
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn any_archive_installs_cleanly_or_fails_with_a_code() {
    use std::cell::Cell;
    let rt = runtime();
    let (installed, refused) = (Cell::new(0), Cell::new(0));
    let archives = (
        archive_entries(),
        prop::option::weighted(0.15, (any::<usize>(), any::<u8>())),
        any::<bool>(),
    );
    proptest::test_runner::TestRunner::new(seeded(1_000))
        .run(&archives, |(entries, damage, cut)| {
            let zip = zip_of(&entries, damage, cut);
            install_checks(&rt, &zip)?;
            let data = tempfile::tempdir().unwrap();
            let outcome = rt.block_on(SkillManager::new(data.path()).install_skill(
                &zip,
                InstallOptions {
                    native: true,
                    ..InstallOptions::default()
                },
            ));
            let count = if outcome.is_ok() {
                &installed
            } else {
                &refused
            };
            count.set(count.get() + 1);
            Ok(())
        })
        .unwrap();
    // The generator reaches both outcomes, or the property says little.
    assert!(
        installed.get() >= 50 && refused.get() >= 50,
        "{} installed, {} refused",
        installed.get(),
        refused.get()
    );
}

#[test]
fn the_archive_corpus_installs_cleanly_or_fails_with_a_code() {
    let rt = runtime();
    for (path, bytes) in corpus("zip") {
        install_checks(&rt, &bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
}
