//! Templates and their expressions.

use super::*;
use evo_host::skill::template::{Template, ValueTemplate};

const TEMPLATE: &[&str] = &[
    "{{",
    "}}",
    "input.",
    "steps.",
    "text",
    "items",
    "[0]",
    "[-1]",
    ".length",
    " | ",
    "pluck:",
    "join:",
    "slice:1:2",
    "default:'x'",
    "json",
    "format_skills",
    "||",
    "&&",
    " > ",
    " == ",
    "!",
    "'未找到'",
    "\"s\"",
    "(",
    ")",
    "{{#each input.items}}",
    "{{/each}}",
    "{{#if input.x}}",
    "{{else}}",
    "{{/if}}",
    "{{this}}",
    "{{@index}}",
    "0",
    "1.5",
    "-",
    "\\",
    "\n",
];

fn template_checks(source: &str, scope: &Value) {
    match Template::parse(source) {
        Ok(template) => {
            if let Err(e) = template.render(scope) {
                assert!(!e.to_string().is_empty());
            }
        }
        Err(e) => assert!(!e.to_string().is_empty(), "{source:?}"),
    }
}

fn scope_of(input: Value) -> Value {
    json!({
        "input": input,
        "steps": { "search": { "results": [{ "snippet": "a" }, { "snippet": "b" }], "count": 2 } },
        "item": 3,
    })
}

proptest! {
    #![proptest_config(seeded(4_000))]

    #[test]
    fn any_template_parses_and_renders_or_says_what_is_wrong(
        source in text_of(TEMPLATE),
        input in json_value(),
    ) {
        template_checks(&source, &scope_of(input));
    }

    #[test]
    fn any_value_template_compiles_and_renders_or_says_what_is_wrong(
        value in json_value(),
        input in json_value(),
    ) {
        if let Ok(compiled) = ValueTemplate::compile(&value) {
            let _ = compiled.render(&scope_of(input));
        }
    }
}

#[test]
fn the_template_corpus_parses_and_renders_or_says_what_is_wrong() {
    for (_, bytes) in corpus("template") {
        let source = String::from_utf8_lossy(&bytes);
        template_checks(
            &source,
            &scope_of(json!({ "x": [1, "two", null], "items": [1, 2] })),
        );
    }
}
