//! Every WIT type kind, read from a component built from WIT text.

use wasmtime::component::types::ComponentItem;
use wasmtime::{Config, Engine};

use serde_json::json;
use wasmtime::component::{Type, Val};

use super::*;

/// One function whose parameters are every kind of WIT type.
const EVERY_KIND: &str = r#"
    package test:kinds;

    interface all {
        record point { x: s32, y: s32, label: option<string> }
        variant shape { circle(f64), square(u32), empty }
        enum color { red, green, blue }
        flags perms { read, write, exec }
        every: func(
            flag: bool, tiny: u8, short: u16, word: u32, big: u64,
            stiny: s8, sshort: s16, sword: s32, sbig: s64,
            single: f32, double: f64, letter: char, text: string,
            bytes: list<u8>, words: list<string>, at: point, pair: tuple<u8, string>,
            sh: shape, col: color, perm: perms, maybe: option<u32>,
            maybe-maybe: option<option<u32>>, outcome: result<string, u32>,
        ) -> result<point, string>;
    }

    world kinds { export all; }
"#;

/// The parameters and result of `every`, read from a component built from the WIT
/// above (its core module a stub that is never run).
fn every_kind() -> (Vec<(String, Type)>, Type) {
    let bytes = crate::engine::wasm::plain::test_component(EVERY_KIND, "kinds", false);
    let mut config = Config::new();
    config.wasm_component_model(true);
    let engine = Engine::new(&config).unwrap();
    let component = wasmtime::component::Component::new(&engine, &bytes).unwrap();
    let ty = component.component_type();
    let ComponentItem::ComponentInstance(all) =
        ty.get_export(&engine, "test:kinds/all").unwrap().ty
    else {
        panic!("the interface is exported");
    };
    let ComponentItem::ComponentFunc(every) = all.get_export(&engine, "every").unwrap().ty else {
        panic!("the function is exported");
    };
    let params = every
        .params()
        .map(|(name, ty)| (name.to_owned(), ty))
        .collect();
    let result = every.results().next().unwrap();
    (params, result)
}

fn param(params: &[(String, Type)], name: &str) -> Type {
    params.iter().find(|(n, _)| n == name).unwrap().1.clone()
}

#[test]
fn every_kind_round_trips_and_fits_its_schema() {
    let (params, result) = every_kind();
    let cases = [
        ("flag", json!(true)),
        ("tiny", json!(255)),
        ("short", json!(65535)),
        ("word", json!(4_294_967_295_u32)),
        ("big", json!(9_007_199_254_740_991_u64)),
        ("big", json!("18446744073709551615")),
        ("stiny", json!(-128)),
        ("sshort", json!(-32768)),
        ("sword", json!(-2_147_483_648_i32)),
        ("sbig", json!("-9223372036854775808")),
        ("single", json!(1.5)),
        ("single", json!("NaN")),
        ("double", json!("-Infinity")),
        ("double", json!(0.1)),
        ("letter", json!("é")),
        ("text", json!("hello")),
        ("bytes", json!("AAEC/w==")),
        ("bytes", json!("")),
        ("words", json!(["a", "b"])),
        ("at", json!({ "x": 1, "y": -2, "label": "origin" })),
        ("at", json!({ "x": 1, "y": -2, "label": null })),
        ("pair", json!([7, "seven"])),
        ("sh", json!({ "tag": "circle", "val": 2.5 })),
        ("sh", json!({ "tag": "empty" })),
        ("col", json!("green")),
        ("perm", json!(["read", "exec"])),
        ("maybe", json!(null)),
        ("maybe", json!(3)),
        ("maybe-maybe", json!({ "some": null })),
        ("maybe-maybe", json!({ "some": 4 })),
        ("outcome", json!({ "tag": "ok", "val": "fine" })),
        ("outcome", json!({ "tag": "err", "val": 500 })),
    ];
    for (name, value) in cases {
        let ty = param(&params, name);
        let val = to_val(&ty, &value, "(root)").unwrap_or_else(|e| panic!("{name}: {e:?}"));
        assert_eq!(to_json(&ty, &val), value, "{name} round trip");
        // Draft 7, as the kernel reads a schema without `$schema`.
        let validator = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft7)
            .build(&schema(&ty))
            .unwrap();
        assert!(
            validator.is_valid(&value),
            "{name}: {value} fits {}",
            schema(&ty)
        );
        assert_eq!(unsupported(&ty), None, "{name}");
    }
    let ok = json!({ "tag": "ok", "val": { "x": 0, "y": 0, "label": null } });
    assert_eq!(
        to_json(&result, &to_val(&result, &ok, "(root)").unwrap()),
        ok
    );
}

#[test]
fn a_record_field_of_option_type_may_be_left_out() {
    let (params, _) = every_kind();
    let at = param(&params, "at");
    let val = to_val(&at, &json!({ "x": 1, "y": 2 }), "(root)").unwrap();
    assert_eq!(to_json(&at, &val), json!({ "x": 1, "y": 2, "label": null }));
}

#[test]
fn a_value_that_does_not_fit_says_where_and_what_was_expected() {
    let (params, _) = every_kind();
    for (name, value, path, expected) in [
        ("tiny", json!(256), "(root)", "an integer from 0 to 255"),
        (
            "big",
            json!(-1),
            "(root)",
            "an integer from 0 to 18446744073709551615, or its decimal string",
        ),
        (
            "big",
            json!("18446744073709551616"),
            "(root)",
            "an integer from 0 to 18446744073709551615, or its decimal string",
        ),
        ("letter", json!("ab"), "(root)", "a string of one character"),
        (
            "bytes",
            json!("not base64!"),
            "(root)",
            "a base64 string (standard alphabet, padded)",
        ),
        (
            "at",
            json!({ "x": 1 }),
            "y",
            "a value (the field is required)",
        ),
        (
            "at",
            json!({ "x": 1, "y": 2, "z": 3 }),
            "z",
            "no such field; the record has x, y, label",
        ),
        (
            "at",
            json!({ "x": "1", "y": 2 }),
            "x",
            "an integer from -2147483648 to 2147483647",
        ),
        ("words", json!(["a", 2]), "[1]", "a string"),
        (
            "sh",
            json!({ "tag": "triangle" }),
            "(root)",
            "{\"tag\": one of circle, square, empty, \"val\": …}",
        ),
        (
            "sh",
            json!({ "tag": "empty", "val": 1 }),
            "val",
            "nothing: this case has no payload",
        ),
        ("col", json!("purple"), "(root)", "one of red, green, blue"),
        (
            "perm",
            json!(["read", "fly"]),
            "(root)",
            "an array of flags from read, write, exec",
        ),
        ("pair", json!([1]), "(root)", "an array of 2 items"),
        // "A float that overflows f32 becomes Infinity silently; refuse it."
        (
            "single",
            json!(1e39),
            "(root)",
            "a number from -3.4028235e38 to 3.4028235e38 (a 32-bit float), or \"NaN\", \"Infinity\" or \"-Infinity\"",
        ),
        (
            "single",
            json!(-1e39),
            "(root)",
            "a number from -3.4028235e38 to 3.4028235e38 (a 32-bit float), or \"NaN\", \"Infinity\" or \"-Infinity\"",
        ),
    ] {
        let ty = param(&params, name);
        let error = to_val(&ty, &value, "(root)").unwrap_err();
        assert_eq!(
            (error.path.as_str(), error.expected.as_str()),
            (path, expected),
            "{name}: {value}"
        );
    }
}

#[test]
fn wide_integers_beyond_what_javascript_holds_are_strings() {
    assert_eq!(
        to_json(&Type::U64, &Val::U64(1 << 53)),
        json!("9007199254740992")
    );
    assert_eq!(
        to_json(&Type::U64, &Val::U64((1 << 53) - 1)),
        json!(9_007_199_254_740_991_u64)
    );
    assert_eq!(
        to_json(&Type::S64, &Val::S64(i64::MIN)),
        json!("-9223372036854775808")
    );
    assert_eq!(
        to_val(&Type::S64, &json!("+5"), "(root)").map(|_| ()),
        Err(Mismatch {
            path: "(root)".into(),
            expected:
                "an integer from -9223372036854775808 to 9223372036854775807, or its decimal string"
                    .into(),
        })
    );
}

#[test]
fn a_float_at_the_edge_of_f32_fits_and_its_schema_says_so() {
    let (params, _) = every_kind();
    let single = param(&params, "single");
    let edge = f64::from(f32::MAX);
    assert_eq!(
        to_val(&single, &json!(edge), "(root)").unwrap(),
        Val::Float32(f32::MAX)
    );
    assert_eq!(
        to_val(&single, &json!("Infinity"), "(root)").unwrap(),
        Val::Float32(f32::INFINITY)
    );
    let schema = schema(&single);
    let validator = jsonschema::draft7::new(&schema).unwrap();
    assert!(validator.is_valid(&json!(edge)) && validator.is_valid(&json!("-Infinity")));
    assert!(!validator.is_valid(&json!(1e39)));
    let double = jsonschema::draft7::new(&super::schema(&param(&params, "double"))).unwrap();
    assert!(double.is_valid(&json!(1e39)));
}
