//! JSON Schemas and the reports of the values checked against them.

use super::*;
use evo_host::skill::validate::Schema;

fn schema_checks(schema: &Value, value: &Value) {
    match Schema::compile(schema) {
        Ok(compiled) => {
            let valid = compiled.is_valid(value);
            let report = compiled.check(value);
            assert_eq!(valid, report.is_empty(), "{schema} {value}: {report:?}");
            let mut defaulted = value.clone();
            compiled.apply_defaults(&mut defaulted);
        }
        Err(reason) => assert!(!reason.is_empty()),
    }
}

proptest! {
    #![proptest_config(seeded(3_000))]

    #[test]
    fn any_schema_compiles_and_reports_or_says_what_is_wrong(
        schema in json_value(),
        value in json_value(),
    ) {
        schema_checks(&schema, &value);
        // The same value against a schema that certainly compiles.
        schema_checks(&json!({ "type": "object", "properties": { "a": schema } }), &json!({ "a": value }));
    }
}

#[test]
fn the_schema_corpus_compiles_and_reports_or_says_what_is_wrong() {
    for (path, bytes) in corpus("schema") {
        let pair: Value =
            serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        schema_checks(&pair["schema"], &pair["value"]);
    }
}
