//! The schema gate's reports and defaults, and schemas compiled on first use.

use serde_json::json;

use super::*;

#[test]
fn a_deferred_schema_checks_as_the_compiled_one_once_used() {
    let source = json!({
        "type": "object",
        "properties": { "limit": { "type": "integer", "minimum": 1, "default": 5 } },
        "required": ["limit"],
    });
    let compiled = Schema::compile(&source).unwrap();
    let deferred = Schema::deferred(source);
    assert!(
        deferred.compiled.get().is_none(),
        "nothing compiled before use"
    );
    assert!(deferred.has_defaults() && compiled.has_defaults());
    for value in [
        json!({}),
        json!({ "limit": 0 }),
        json!({ "limit": 3 }),
        json!(7),
    ] {
        assert_eq!(
            deferred.is_valid(&value),
            compiled.is_valid(&value),
            "{value}"
        );
        assert_eq!(deferred.check(&value), compiled.check(&value), "{value}");
    }
    assert!(deferred.compiled.get().is_some());
}

#[test]
fn a_deferred_schema_that_does_not_compile_refuses_every_value_saying_why() {
    let deferred = Schema::deferred(json!({ "type": 12 }));
    assert!(!deferred.is_valid(&json!({})));
    let violations = deferred.check(&json!({ "a": 1 }));
    assert_eq!(violations.len(), 1);
    assert_eq!(violations[0].expected, "a skill whose schema compiles");
    assert!(
        violations[0]
            .suggestion
            .starts_with("The skill's own schema is not a valid JSON Schema ("),
        "{}",
        violations[0].suggestion
    );
}

#[test]
fn only_a_default_keyword_means_defaults() {
    assert!(
        !Schema::compile(&json!({ "enum": ["default"] }))
            .unwrap()
            .has_defaults()
    );
    assert!(
        Schema::compile(&json!({ "items": [{ "default": 1 }] }))
            .unwrap()
            .has_defaults()
    );
}

fn intent_schema() -> Schema {
    Schema::compile(&json!({
        "type": "object",
        "properties": {
            "intents": { "type": "array", "items": { "type": "object", "properties": {
                "confidence": { "type": "number", "minimum": 0, "maximum": 1 } } } },
            "routing": { "type": "object", "properties": {
                "strategy": { "type": "string", "enum": ["direct_answer", "single_skill", "multi_skill", "pipeline", "clarify"] } },
                "required": ["strategy"] }
        },
        "required": ["intents", "routing"]
    }))
    .unwrap()
}

#[test]
fn an_intent_report_names_each_violation_with_a_fix() {
    // A router answer with strategy "answer_directly" and confidence "high".
    let violations = intent_schema().check(&json!({
        "intents": [{ "confidence": "high" }],
        "routing": { "strategy": "answer_directly" }
    }));
    let by_path: Vec<(&str, &str)> = violations
        .iter()
        .map(|v| (v.path.as_str(), v.rule.as_str()))
        .collect();
    assert!(
        by_path.contains(&("routing.strategy", "enum")),
        "{by_path:?}"
    );
    assert!(
        by_path.contains(&("intents[0].confidence", "type")),
        "{by_path:?}"
    );
    let strategy = violations.iter().find(|v| v.rule == "enum").unwrap();
    assert_eq!(strategy.actual, json!("answer_directly"));
    assert_eq!(
        strategy.expected,
        "one of: direct_answer, single_skill, multi_skill, pipeline, clarify"
    );
    assert_eq!(
        strategy.suggestion,
        "Change 'answer_directly' to 'direct_answer'."
    );
    let confidence = violations.iter().find(|v| v.rule == "type").unwrap();
    assert_eq!(confidence.expected, "number (0-1)");
    assert_eq!(
        confidence.suggestion,
        "intents[0].confidence must be a number (0-1). For example 0."
    );

    let report = ValidationReport::new("intent_recognize", Direction::Output, 1, 3, violations);
    let text = report.to_llm_text();
    assert!(
        text.starts_with("intent_recognize output does not match its schema (attempt 1 of 3):")
    );
    assert!(text.contains("\n  • [routing.strategy] enum: expected one of: direct_answer"));
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["skillName"], "intent_recognize");
    assert_eq!(json["maxAttempts"], 3);
    assert_eq!(json["direction"], "output");
}

#[test]
fn missing_fields_name_the_field_and_its_description() {
    // memory_search called with wrong types, and without its query.
    let schema = Schema::compile(&json!({
        "type": "object",
        "properties": {
            "query": { "type": "string", "description": "the search query" },
            "limit": { "type": "number", "default": 5, "minimum": 1, "maximum": 50 }
        },
        "required": ["query"]
    }))
    .unwrap();
    let violations = schema.check(&json!({ "limit": "five" }));
    assert_eq!(violations.len(), 2, "{violations:?}");
    let required = violations.iter().find(|v| v.rule == "required").unwrap();
    assert_eq!(required.path, "query");
    assert_eq!(required.suggestion, "Provide `query` (the search query).");
    assert_eq!(required.actual, Value::Null);
    let limit = violations.iter().find(|v| v.path == "limit").unwrap();
    assert_eq!(
        (limit.rule.as_str(), limit.expected.as_str()),
        ("type", "number (1-50)")
    );

    let violations = schema.check(&json!({ "query": 123, "limit": "7" }));
    let limit = violations.iter().find(|v| v.path == "limit").unwrap();
    assert_eq!(
        limit.suggestion,
        "limit must be a number (1-50). Write 7 without quotes."
    );
    let query = violations.iter().find(|v| v.path == "query").unwrap();
    assert_eq!(
        query.suggestion,
        "query must be a string. For example \"123\"."
    );
}

#[test]
fn ranges_lengths_and_root_values() {
    let schema = Schema::compile(&json!({
        "type": "object",
        "properties": { "n": { "type": "integer", "maximum": 3 }, "s": { "type": "string", "minLength": 2 } }
    }))
    .unwrap();
    let violations = schema.check(&json!({ "n": 4, "s": "x" }));
    let rules: Vec<&str> = violations.iter().map(|v| v.rule.as_str()).collect();
    assert!(
        rules.contains(&"maximum") && rules.contains(&"minLength"),
        "{rules:?}"
    );
    let root = schema.check(&json!([1]));
    assert_eq!(
        (root[0].path.as_str(), root[0].rule.as_str()),
        ("(root)", "type")
    );
    assert!(schema.check(&json!({ "n": 2 })).is_empty());
    assert!(
        Schema::compile(&json!({}))
            .unwrap()
            .check(&json!(42))
            .is_empty()
    );
    assert!(Schema::compile(&json!({ "type": 7 })).is_err());
}

#[test]
fn defaults_fill_missing_fields_only() {
    let schema = Schema::compile(&json!({
        "type": "object",
        "properties": {
            "limit": { "type": "number", "default": 10 },
            "opts": { "type": "object", "properties": { "deep": { "default": true } } },
            "items": { "type": "array", "items": { "type": "object", "properties": { "w": { "default": 1 } } } }
        }
    }))
    .unwrap();
    let mut value = json!({ "limit": 3, "opts": {}, "items": [{}, { "w": 2 }] });
    schema.apply_defaults(&mut value);
    assert_eq!(
        value,
        json!({ "limit": 3, "opts": { "deep": true }, "items": [{ "w": 1 }, { "w": 2 }] })
    );
    let mut empty = json!({});
    schema.apply_defaults(&mut empty);
    assert_eq!(empty, json!({ "limit": 10 }));
}

#[test]
fn a_wide_integer_sent_as_a_number_is_told_to_come_as_a_string() {
    // "A u64 above 2^53 given as a JSON number is refused with a message that calls it
    // out of range; say to send it as a string."
    let schema = Schema::compile(&json!({
        "type": "object",
        "properties": { "v": {
            "description": "an integer from 0 to 18446744073709551615, or its decimal string",
            "anyOf": [
                { "type": "integer", "minimum": 0, "maximum": 9_007_199_254_740_991_u64 },
                { "type": "string", "pattern": "^[0-9]{1,20}$" }
            ]
        } }
    }))
    .unwrap();
    let violations = schema.check(&json!({ "v": 18_446_744_073_709_551_615_u64 }));
    assert_eq!(
        violations[0].suggestion,
        "v must be an integer from 0 to 18446744073709551615, or its decimal string. 18446744073709551615 is past 9007199254740991, the largest integer a JSON number carries exactly: send it as a decimal string, \"18446744073709551615\" (a client may already have rounded it)."
    );
    // Within what a number carries exactly, the description alone.
    let violations = schema.check(&json!({ "v": -1 }));
    assert_eq!(
        violations[0].suggestion,
        "v must be an integer from 0 to 18446744073709551615, or its decimal string."
    );
}
