//! A SKILL.md: read and validated, or a problem that says what is wrong.
#![no_main]

use evo_host::skill::manifest::frontmatter::SkillDoc;
use evo_host::skill::manifest::SkillMeta;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    match SkillDoc::parse(text) {
        Ok(doc) => {
            if let Err(problems) = SkillMeta::from_raw(doc.raw) {
                assert!(!problems.is_empty());
            }
        }
        Err(problem) => assert!(!problem.message.is_empty()),
    }
});
