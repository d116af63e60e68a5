//! A `calculate` expression: a finite number, or an error that says where it is wrong.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|source: &str| {
    match evo_expr::evaluate(source) {
        Ok(value) => assert!(value.is_finite(), "{source:?} = {value}"),
        Err(e) => assert!(!e.to_string().is_empty()),
    }
});
