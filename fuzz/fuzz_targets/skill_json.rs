//! A skill.json: read and validated, or problems that say what is wrong.
#![no_main]

use evo_host::skill::manifest::SkillMeta;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    if let Err(problems) = SkillMeta::from_json(text) {
        assert!(!problems.is_empty());
    }
});
