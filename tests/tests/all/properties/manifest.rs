//! SKILL.md and skill.json.

use super::*;
use evo_host::skill::manifest::SkillMeta;
use evo_host::skill::manifest::frontmatter::SkillDoc;

const FRONTMATTER: &[&str] = &[
    "---\n",
    "---\r\n",
    "\u{feff}",
    "name: ",
    "description: ",
    "tags: ",
    "[a, b]",
    "- x\n",
    "license: MIT\n",
    "metadata:\n  k: v\n",
    "allowed-tools: Bash\n",
    "|\n  ",
    ">-\n  ",
    "\"quoted\"",
    "'q'",
    ": ",
    "\n",
    "  ",
    "&anchor ",
    "*anchor",
    "!!binary ",
    "{",
    "}",
    "skill-name",
    "x",
    "~",
    "null",
    "0x1F",
    "1e9999",
];

/// A SKILL.md as the loader reads it: parsed, then its metadata validated.
fn skill_md_checks(text: &str) {
    match SkillDoc::parse(text) {
        Ok(doc) => {
            if let Err(problems) = SkillMeta::from_raw(doc.raw) {
                assert!(!problems.is_empty(), "an error says what is wrong");
            }
        }
        Err(problem) => assert!(!problem.message.is_empty()),
    }
}

/// A skill.json as the loader reads it.
fn skill_json_checks(text: &str) {
    if let Err(problems) = SkillMeta::from_json(text) {
        assert!(!problems.is_empty(), "an error says what is wrong");
    }
}

/// A SKILL.md shaped like one: frontmatter lines of known keys with odd values.
fn skill_md() -> impl Strategy<Value = String> {
    let key = prop::sample::select(
        &[
            "name",
            "description",
            "tags",
            "license",
            "metadata",
            "allowed-tools",
            "version",
            "category",
            "timeout",
            "examples",
            "input",
            "x-other",
        ][..],
    );
    let value = prop_oneof![
        Just("s".to_owned()),
        Just("A skill that does things.".to_owned()),
        text_of(FRONTMATTER),
    ];
    (prop::collection::vec((key, value), 0..6), any::<String>()).prop_map(|(lines, body)| {
        let lines: Vec<String> = lines.iter().map(|(k, v)| format!("{k}: {v}")).collect();
        format!("---\n{}\n---\n{body}", lines.join("\n"))
    })
}

proptest! {
    #![proptest_config(seeded(4_000))]

    #[test]
    fn any_skill_md_parses_or_says_what_is_wrong(
        text in prop_oneof![text_of(FRONTMATTER), skill_md()],
    ) {
        skill_md_checks(&text);
    }

    #[test]
    fn any_skill_json_parses_or_says_what_is_wrong(value in json_value()) {
        skill_json_checks(&value.to_string());
        let manifest = json!({ "name": "s", "description": "d", "mode": "composite", "pipeline": value });
        skill_json_checks(&manifest.to_string());
    }
}

#[test]
fn the_skill_md_and_skill_json_corpora_parse_or_say_what_is_wrong() {
    for (_, bytes) in corpus("skill_md") {
        skill_md_checks(&String::from_utf8_lossy(&bytes));
    }
    for (_, bytes) in corpus("skill_json") {
        skill_json_checks(&String::from_utf8_lossy(&bytes));
    }
}
