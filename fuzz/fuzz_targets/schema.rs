//! A JSON Schema and a value (`{"schema": …, "value": …}`): compiled and checked, the
//! report agreeing with `is_valid`, or a reason the schema is refused.
#![no_main]

use evo_host::skill::validate::Schema;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|bytes: &[u8]| {
    let Ok(pair) = serde_json::from_slice::<Value>(bytes) else {
        return;
    };
    match Schema::compile(&pair["schema"]) {
        Ok(schema) => {
            let value = &pair["value"];
            assert_eq!(schema.is_valid(value), schema.check(value).is_empty());
            let mut defaulted = value.clone();
            schema.apply_defaults(&mut defaulted);
        }
        Err(reason) => assert!(!reason.is_empty()),
    }
});
