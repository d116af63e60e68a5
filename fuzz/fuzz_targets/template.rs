//! A template: parsed and rendered against a scope, or an error that says what is wrong.
#![no_main]

use evo_host::skill::template::Template;
use libfuzzer_sys::fuzz_target;
use serde_json::json;

fuzz_target!(|source: &str| {
    let scope = json!({
        "input": { "x": [1, "two", null, { "a": [3] }], "items": [1, 2], "text": "t" },
        "steps": { "search": { "results": [{ "snippet": "a" }], "count": 1 } },
        "item": 3,
    });
    match Template::parse(source) {
        Ok(template) => {
            if let Err(e) = template.render(&scope) {
                assert!(!e.to_string().is_empty());
            }
        }
        Err(e) => assert!(!e.to_string().is_empty()),
    }
});
