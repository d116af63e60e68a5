//! Property tests of everything that reads untrusted text: skill archives,
//! SKILL.md, skill.json, templates and their expressions, JSON Schemas and the values
//! checked against them, `calculate`'s expressions, `evo.toml` and MCP frames. A few thousand
//! generated cases each, from a fixed seed (a failure names its case and reproduces),
//! plus every file in `tests/fuzz-corpus/<target>/`, the seeds the fuzz targets in
//! `fuzz/` start from and every input they found that broke something.
//!
//! The properties: no panic; an error is an error value that says what is wrong (for the
//! library's `Error`, with a stable code); an archive writes nothing outside its staging
//! directory and leaves nothing half-installed.

mod archive;
mod config;
mod expression;
mod manifest;
mod mcp;
mod schema;
mod template;

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use proptest::test_runner::{Config as Cases, RngSeed};
use serde_json::{Value, json};

/// `cases` cases from a fixed seed: the same inputs on every run and machine.
fn seeded(cases: u32) -> Cases {
    Cases {
        cases,
        rng_seed: RngSeed::Fixed(0x00e7_0019),
        failure_persistence: None,
        ..Cases::default()
    }
}

/// The seeds and regressions of fuzz target `target`.
fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz-corpus")
        .join(target);
    let mut files: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| {
            let path = entry.unwrap().path();
            let bytes = std::fs::read(&path).unwrap();
            (path, bytes)
        })
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{} has no seeds", dir.display());
    files
}

/// Text that looks like what the parser reads: its own syntax in pieces, mixed with
/// anything at all.
fn text_of(pieces: &'static [&'static str]) -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            3 => prop::sample::select(pieces).prop_map(str::to_owned),
            1 => any::<String>(),
            1 => "[ -~\n]{0,12}",
        ],
        0..24,
    )
    .prop_map(|parts| parts.concat())
}

/// Any JSON value, nested a few levels.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|n| json!(n)),
        "[a-z{}|. '\\-]{0,12}".prop_map(Value::String),
        prop::sample::select(&KEYWORDS[..]).prop_map(|k| Value::String(k.to_owned())),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec(
                (
                    prop::sample::select(&KEYWORDS[..]).prop_map(str::to_owned),
                    inner
                ),
                0..6
            )
            .prop_map(|pairs| Value::Object(pairs.into_iter().collect())),
        ]
    })
}

/// Words JSON Schemas, manifests and templates are made of.
const KEYWORDS: [&str; 40] = [
    "type",
    "object",
    "string",
    "number",
    "integer",
    "array",
    "boolean",
    "null",
    "properties",
    "required",
    "items",
    "enum",
    "const",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "pattern",
    "format",
    "$ref",
    "#/definitions/a",
    "definitions",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "additionalProperties",
    "default",
    "name",
    "description",
    "mode",
    "input",
    "output",
    "pipeline",
    "step",
    "skill",
    "{{input.x}}",
];
