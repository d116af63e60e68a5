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

/// A template error says what is wrong and where: a message, and an offset inside the
/// source on a character boundary, both in what it prints.
fn says_what_and_where(source: &str, e: &evo_host::errors::TemplateError) {
    assert!(
        !e.message.trim().is_empty(),
        "{source:?}: an error without a message"
    );
    assert!(
        e.offset <= source.len() && source.is_char_boundary(e.offset),
        "{source:?}: offset {} is not a place in the source",
        e.offset
    );
    let printed = e.to_string();
    assert!(
        printed.contains(&format!("offset {}", e.offset)) && printed.contains(&e.message),
        "{source:?}: {printed}"
    );
}

fn template_checks(source: &str, scope: &Value) {
    match Template::parse(source) {
        Ok(template) => {
            if let Err(e) = template.render(scope) {
                says_what_and_where(source, &e);
            }
        }
        Err(e) => says_what_and_where(source, &e),
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
        // A value's templates are its strings; an error names one of them.
        let error = match ValueTemplate::compile(&value) {
            Ok(compiled) => compiled.render(&scope_of(input)).err(),
            Err(e) => Some(e),
        };
        if let Some(e) = error {
            prop_assert!(!e.message.trim().is_empty(), "{value}: an error without a message");
            prop_assert!(
                e.to_string().starts_with("template error at offset "),
                "{value}: {e}"
            );
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
