//! `calculate`'s expressions.

use super::*;

const EXPRESSION: &[&str] = &[
    "1",
    "0",
    "2.5",
    "1e308",
    "1e-308",
    "9999999999999999999999",
    "+",
    "-",
    "*",
    "/",
    "%",
    "^",
    "(",
    ")",
    " ",
    "sqrt(",
    "abs(",
    "sin(",
    "log(",
    "pi",
    "e",
    ",",
    "max(",
    "min(",
    "round(",
    ".",
    "..",
    "√",
    "×",
];

proptest! {
    #![proptest_config(seeded(4_000))]

    #[test]
    fn any_expression_evaluates_to_a_finite_number_or_says_where_it_is_wrong(
        source in text_of(EXPRESSION),
    ) {
        match evo_expr::evaluate(&source) {
            Ok(value) => prop_assert!(value.is_finite(), "{source:?} = {value}"),
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }

    #[test]
    fn integer_arithmetic_agrees_with_rust(a in -10_000_i64..10_000, b in -10_000_i64..10_000) {
        prop_assert_eq!(evo_expr::evaluate(&format!("{a} + {b}")).unwrap(), (a + b) as f64);
        prop_assert_eq!(evo_expr::evaluate(&format!("{a} * ({b})")).unwrap(), (a * b) as f64);
        prop_assert_eq!(evo_expr::evaluate(&format!("{a} - -{b}")).unwrap(), (a + b) as f64);
    }
}

#[test]
fn the_expression_corpus_evaluates_or_says_where_it_is_wrong() {
    for (path, bytes) in corpus("expression") {
        let source = String::from_utf8_lossy(&bytes);
        if let Ok(value) = evo_expr::evaluate(&source) {
            assert!(value.is_finite(), "{}: {value}", path.display());
        }
    }
}
