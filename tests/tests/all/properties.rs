//! Property tests of everything that reads untrusted text (issue 19): skill archives,
//! SKILL.md, skill.json, templates and their expressions, JSON Schemas and the values
//! checked against them, `calculate`'s expressions, `evo.toml` and MCP frames. A few thousand
//! generated cases each, from a fixed seed (a failure names its case and reproduces),
//! plus every file in `tests/fuzz-corpus/<target>/`, the seeds the fuzz targets in
//! `fuzz/` start from and every input they found that broke something.
//!
//! The properties: no panic; an error is an error value that says what is wrong (for the
//! library's `Error`, with a stable code); an archive writes nothing outside its staging
//! directory and leaves nothing half-installed.

use std::path::{Path, PathBuf};

use evo_host::Config;
use evo_host::packages::{InstallOptions, SkillManager};
use evo_host::skill::frontmatter::SkillDoc;
use evo_host::skill::meta::SkillMeta;
use evo_host::skill::template::{Template, ValueTemplate};
use evo_host::skill::validate::Schema;
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

// ---- skill archives ------------------------------------------------------------------

/// One entry of a generated archive.
#[derive(Debug, Clone)]
enum Entry {
    File(String, Vec<u8>),
    Dir(String),
    Symlink(String, String),
}

fn entry_name() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(
            &[
                "s/SKILL.md",
                "s/skill.json",
                "s/scripts/execute.js",
                "s/skill.wasm",
                "s/references/a.md",
                "SKILL.md",
                "a/b/s/SKILL.md",
                "../evil.txt",
                "s/../../evil.txt",
                "/tmp/evil.txt",
                "s\\..\\..\\evil.txt",
                "C:\\evil.txt",
                "s/./SKILL.md",
                "s//SKILL.md",
                "s/.evo/auto.wasm",
                "s/.installed",
                "s/\u{0}x",
                "s/con",
                "",
            ][..]
        )
        .prop_map(str::to_owned),
        "[a-z./\\\\]{1,24}",
        any::<String>(),
    ]
}

fn entry_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        Just(b"---\nname: s\ndescription: A skill.\n---\nDo it.\n".to_vec()),
        Just(br#"{"name":"s","description":"A skill.","mode":"composite","pipeline":[]}"#.to_vec()),
        Just(b"console.log('{}')".to_vec()),
        Just(b"\0asm\x0d\0\x01\0".to_vec()),
        text_of(&[
            "---\n",
            "name: s\n",
            "description: d\n",
            "tags: [a]\n",
            "---\n"
        ])
        .prop_map(String::into_bytes),
        prop::collection::vec(any::<u8>(), 0..256),
    ]
}

/// Half of the archives start as a valid skill, so that both what is refused and what
/// is installed get exercised.
fn archive_entries() -> impl Strategy<Value = Vec<Entry>> {
    let entry = prop_oneof![
        6 => (entry_name(), entry_bytes()).prop_map(|(n, b)| Entry::File(n, b)),
        3 => ("s/(references|scripts|assets)/[a-z]{1,6}\\.(md|js|txt)", entry_bytes())
            .prop_map(|(n, b)| Entry::File(n, b)),
        1 => entry_name().prop_map(Entry::Dir),
        1 => (entry_name(), prop::sample::select(&["../../../etc/passwd", "/etc/shadow", "SKILL.md", "."][..]))
            .prop_map(|(n, t)| Entry::Symlink(n, t.to_owned())),
    ];
    (any::<bool>(), prop::collection::vec(entry, 0..6)).prop_map(|(valid, mut entries)| {
        if valid {
            let md = b"---\nname: s\ndescription: A skill.\n---\nDo it.\n".to_vec();
            entries.insert(0, Entry::File("s/SKILL.md".into(), md));
        }
        entries
    })
}

/// The archive's bytes, damaged as `damage` says: cut short or a byte flipped.
fn zip_of(entries: &[Entry], damage: Option<(usize, u8)>, cut: bool) -> Vec<u8> {
    use std::io::Write as _;
    let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default();
    for entry in entries {
        // The writer refuses some names (duplicates, say); what it writes is the input.
        let _ = match entry {
            Entry::File(name, bytes) => writer
                .start_file(name.as_str(), options)
                .and_then(|()| writer.write_all(bytes).map_err(Into::into)),
            Entry::Dir(name) => writer.add_directory(name.as_str(), options),
            Entry::Symlink(name, target) => {
                writer.add_symlink(name.as_str(), target.as_str(), options)
            }
        };
    }
    let mut bytes = writer
        .finish()
        .map(std::io::Cursor::into_inner)
        .unwrap_or_default();
    if let Some((at, xor)) = damage
        && !bytes.is_empty()
    {
        let at = at % bytes.len();
        if cut {
            bytes.truncate(at);
        } else {
            bytes[at] ^= xor.max(1);
        }
    }
    bytes
}

/// Every path under `dir`, relative, sorted.
fn tree(dir: &Path) -> Vec<String> {
    let mut paths = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).into_iter().flatten().flatten() {
            let path = entry.path();
            paths.push(path.strip_prefix(dir).unwrap().display().to_string());
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(path);
            }
        }
    }
    paths.sort();
    paths
}

/// Installs `zip` into a fresh data directory inside a fresh parent, and checks the
/// properties: no panic, a coded error or an installed skill that lists, nothing written
/// beside the data directory, no staging left behind.
fn install_checks(rt: &tokio::runtime::Runtime, zip: &[u8]) -> Result<(), TestCaseError> {
    let parent = tempfile::tempdir().unwrap();
    let data = parent.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let manager = SkillManager::new(&data);
    let installed = rt.block_on(manager.install_skill(
        zip,
        InstallOptions {
            native: true,
            ..InstallOptions::default()
        },
    ));
    let beside: Vec<_> = std::fs::read_dir(parent.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    prop_assert_eq!(beside, ["data"], "written beside the data directory");
    let skills = tree(&data.join("skills"));
    prop_assert!(
        skills
            .iter()
            .all(|p| !p.contains("staging") && !p.starts_with('.')),
        "left behind: {:?}",
        skills
    );
    match installed {
        Ok(outcome) => {
            let listing = manager
                .list_skills(&evo_host::packages::ListQuery::default())
                .unwrap();
            prop_assert_eq!(listing.skills.len(), 1);
            prop_assert_eq!(&listing.skills[0].name, &outcome.name);
            // Nothing in the installed skill points outside it.
            for path in &skills {
                let full = data.join("skills").join(path);
                let meta = std::fs::symlink_metadata(&full).unwrap();
                prop_assert!(!meta.file_type().is_symlink(), "a symlink: {}", path);
            }
        }
        Err(e) => {
            prop_assert!(e.code().chars().all(|c| c.is_ascii_uppercase() || c == '_'));
            prop_assert!(!e.to_string().is_empty());
            prop_assert!(skills.is_empty(), "a failed install left {:?}", skills);
        }
    }
    Ok(())
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn any_archive_installs_cleanly_or_fails_with_a_code() {
    use std::cell::Cell;
    let rt = runtime();
    let (installed, refused) = (Cell::new(0), Cell::new(0));
    let archives = (
        archive_entries(),
        prop::option::weighted(0.15, (any::<usize>(), any::<u8>())),
        any::<bool>(),
    );
    proptest::test_runner::TestRunner::new(seeded(1_000))
        .run(&archives, |(entries, damage, cut)| {
            let zip = zip_of(&entries, damage, cut);
            install_checks(&rt, &zip)?;
            let data = tempfile::tempdir().unwrap();
            let outcome = rt.block_on(SkillManager::new(data.path()).install_skill(
                &zip,
                InstallOptions {
                    native: true,
                    ..InstallOptions::default()
                },
            ));
            let count = if outcome.is_ok() {
                &installed
            } else {
                &refused
            };
            count.set(count.get() + 1);
            Ok(())
        })
        .unwrap();
    // The generator reaches both outcomes, or the property says little.
    assert!(
        installed.get() >= 50 && refused.get() >= 50,
        "{} installed, {} refused",
        installed.get(),
        refused.get()
    );
}

#[test]
fn the_archive_corpus_installs_cleanly_or_fails_with_a_code() {
    let rt = runtime();
    for (path, bytes) in corpus("zip") {
        install_checks(&rt, &bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
}

// ---- SKILL.md and skill.json -----------------------------------------------------------

const FRONTMATTER: &[&str] = &[
    "---\n",
    "---\r\n",
    "\u{feff}",
    "name: ",
    "description: ",
    "tags: ",
    "[a, b]",
    "- x\n",
    "license: MIT\n",
    "metadata:\n  k: v\n",
    "allowed-tools: Bash\n",
    "|\n  ",
    ">-\n  ",
    "\"quoted\"",
    "'q'",
    ": ",
    "\n",
    "  ",
    "&anchor ",
    "*anchor",
    "!!binary ",
    "{",
    "}",
    "skill-name",
    "x",
    "~",
    "null",
    "0x1F",
    "1e9999",
];

/// A SKILL.md as the loader reads it: parsed, then its metadata validated.
fn skill_md_checks(text: &str) {
    match SkillDoc::parse(text) {
        Ok(doc) => {
            if let Err(problems) = SkillMeta::from_raw(doc.raw) {
                assert!(!problems.is_empty(), "an error says what is wrong");
            }
        }
        Err(problem) => assert!(!problem.message.is_empty()),
    }
}

/// A skill.json as the loader reads it.
fn skill_json_checks(text: &str) {
    if let Err(problems) = SkillMeta::from_json(text) {
        assert!(!problems.is_empty(), "an error says what is wrong");
    }
}

/// A SKILL.md shaped like one: frontmatter lines of known keys with odd values.
fn skill_md() -> impl Strategy<Value = String> {
    let key = prop::sample::select(
        &[
            "name",
            "description",
            "tags",
            "license",
            "metadata",
            "allowed-tools",
            "version",
            "category",
            "timeout",
            "examples",
            "input",
            "x-other",
        ][..],
    );
    let value = prop_oneof![
        Just("s".to_owned()),
        Just("A skill that does things.".to_owned()),
        text_of(FRONTMATTER),
    ];
    (prop::collection::vec((key, value), 0..6), any::<String>()).prop_map(|(lines, body)| {
        let lines: Vec<String> = lines.iter().map(|(k, v)| format!("{k}: {v}")).collect();
        format!("---\n{}\n---\n{body}", lines.join("\n"))
    })
}

proptest! {
    #![proptest_config(seeded(4_000))]

    #[test]
    fn any_skill_md_parses_or_says_what_is_wrong(
        text in prop_oneof![text_of(FRONTMATTER), skill_md()],
    ) {
        skill_md_checks(&text);
    }

    #[test]
    fn any_skill_json_parses_or_says_what_is_wrong(value in json_value()) {
        skill_json_checks(&value.to_string());
        let manifest = json!({ "name": "s", "description": "d", "mode": "composite", "pipeline": value });
        skill_json_checks(&manifest.to_string());
    }
}

#[test]
fn the_skill_md_and_skill_json_corpora_parse_or_say_what_is_wrong() {
    for (_, bytes) in corpus("skill_md") {
        skill_md_checks(&String::from_utf8_lossy(&bytes));
    }
    for (_, bytes) in corpus("skill_json") {
        skill_json_checks(&String::from_utf8_lossy(&bytes));
    }
}

// ---- templates and their expressions ---------------------------------------------------

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

// ---- JSON Schemas and their reports ----------------------------------------------------

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

// ---- calculate's expressions -------------------------------------------------------------

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

// ---- evo.toml --------------------------------------------------------------------------

const TOML: &[&str] = &[
    "[llm]\n",
    "[grants]\n",
    "[engine]\n",
    "[native]\n",
    "[agent]\n",
    "[memory]\n",
    "[remotes.b]\n",
    "[[x]]\n",
    "model = ",
    "\"ollama:llama3.2\"",
    "hosts = ",
    "dirs = ",
    "[\"https://api.example.com\"]",
    "skill_dirs = ",
    "compile_deadline_ms = ",
    "0",
    "-1",
    "18446744073709551616",
    "isolation = ",
    "\"required\"",
    "memory = \"read\"",
    "true",
    "\n",
    "=",
    "\"",
    "'",
    "#",
    "{ a = 1 }",
    "1979-05-27T07:32:00Z",
];

fn config_checks(text: &str) {
    if let Err(e) = Config::from_toml(Path::new("evo.toml"), text) {
        assert_eq!(e.code(), "CONFIG_INVALID", "{text:?}: {e}");
        assert!(e.to_string().contains("evo.toml"), "{e}");
    }
}

/// An evo.toml shaped like one: known sections and keys with values of any type.
fn evo_toml() -> impl Strategy<Value = String> {
    let section = prop::sample::select(
        &[
            "", "[llm]", "[grants]", "[engine]", "[native]", "[agent]", "[memory]", "[limits]",
        ][..],
    );
    let key = prop::sample::select(
        &[
            "model",
            "base_url",
            "hosts",
            "dirs",
            "memory",
            "llm",
            "exec",
            "skill_dirs",
            "compile_deadline_ms",
            "max_concurrent_calls",
            "isolation",
            "timeout_ms",
            "max_concurrency",
            "shortlist",
            "auto_recall",
            "embedder",
            "x",
        ][..],
    );
    let value = prop_oneof![
        Just("\"ollama:llama3.2\"".to_owned()),
        Just("[\"https://api.example.com\", \"*\"]".to_owned()),
        Just("\"read\"".to_owned()),
        any::<i64>().prop_map(|n| n.to_string()),
        any::<bool>().prop_map(|b| b.to_string()),
        "\"[ -~]{0,16}\"",
        text_of(TOML),
    ];
    prop::collection::vec((section, prop::collection::vec((key, value), 0..4)), 0..4).prop_map(
        |sections| {
            sections
                .iter()
                .map(|(header, pairs)| {
                    let lines: Vec<String> =
                        pairs.iter().map(|(k, v)| format!("{k} = {v}")).collect();
                    format!("{header}\n{}\n", lines.join("\n"))
                })
                .collect()
        },
    )
}

proptest! {
    #![proptest_config(seeded(4_000))]

    #[test]
    fn any_evo_toml_loads_or_says_where_it_is_wrong(
        text in prop_oneof![text_of(TOML), evo_toml()],
    ) {
        config_checks(&text);
    }
}

#[test]
fn the_evo_toml_corpus_loads_or_says_where_it_is_wrong() {
    for (_, bytes) in corpus("evo_toml") {
        config_checks(&String::from_utf8_lossy(&bytes));
    }
}

// ---- MCP JSON-RPC frames ------------------------------------------------------------------

/// One line a client could send: JSON-RPC with any method, id and params, or anything.
fn frame() -> impl Strategy<Value = String> {
    let method = prop::sample::select(
        &[
            "initialize",
            "ping",
            "tools/list",
            "tools/call",
            "resources/list",
            "resources/read",
            "resources/templates/list",
            "resources/subscribe",
            "prompts/list",
            "prompts/get",
            "logging/setLevel",
            "completion/complete",
            "notifications/cancelled",
            "notifications/initialized",
            "x/unknown",
            "",
        ][..],
    );
    let id = prop_oneof![
        Just(Value::Null),
        (1_000_i64..2_000).prop_map(|n| json!(n)),
        Just(json!("s")),
        Just(json!({ "an": "object" })),
        Just(json!(1e300)),
        Just(json!(u64::MAX)),
    ];
    let message = (method, prop::option::of(id), json_value(), any::<bool>()).prop_map(
        |(method, id, params, version)| {
            let mut message = json!({ "method": method, "params": params });
            if version {
                message["jsonrpc"] = json!("2.0");
            }
            if let Some(id) = id {
                message["id"] = id;
            }
            message.to_string()
        },
    );
    prop_oneof![
        4 => message,
        1 => any::<String>(),
        1 => json_value().prop_map(|v| v.to_string()),
    ]
    // One frame per line: a newline inside would make two.
    .prop_map(|line| line.replace(['\n', '\r'], " "))
}

#[test]
fn a_serve_session_survives_any_frames_and_keeps_answering() {
    use proptest::strategy::ValueTree as _;
    let root = tempfile::tempdir().unwrap();
    let (home, cwd) = (root.path().join("home"), root.path().join("cwd"));
    std::fs::create_dir_all(&cwd).unwrap();
    let mut raw = crate::serve::Raw::start_in(&home, &cwd, &[]);
    let mut runner = proptest::test_runner::TestRunner::new(seeded(1));
    let frames = prop::collection::vec(frame(), 50);
    for round in 0..8_u64 {
        let sent = frames.new_tree(&mut runner).unwrap().current();
        for line in &sent {
            raw.send_line(line);
        }
        // After any fifty frames the session still answers, and answers right.
        let id = 100 + round;
        raw.call(
            id,
            "calculate",
            json!({ "expression": format!("{round} + 1") }),
        );
        let answer = raw.expect_id(id);
        assert_eq!(
            answer["result"]["structuredContent"]["result"],
            round + 1,
            "after {sent:#?}: {answer}"
        );
    }
}
