//! A skill archive: installed cleanly (and listed) or refused with a code; nothing
//! written outside the data directory, nothing left behind by a refusal.
#![no_main]

use evo_host::packages::{InstallOptions, ListQuery, SkillManager};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|zip: &[u8]| {
    let parent = tempfile::tempdir().unwrap();
    let data = parent.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let manager = SkillManager::new(&data);
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
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
    assert_eq!(beside, ["data"], "written beside the data directory");
    let listed = manager.list_skills(&ListQuery::default()).unwrap();
    match installed {
        Ok(outcome) => assert_eq!(listed.skills[0].name, outcome.name),
        Err(e) => {
            assert!(!e.code().is_empty() && !e.to_string().is_empty());
            assert!(listed.skills.is_empty(), "a refused install left a skill");
        }
    }
});
