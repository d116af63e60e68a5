//! The files `evo new` writes, per language. `{{name}}` is the skill's name, `{{crate}}`
//! its Rust crate name and `{{sdk}}` the path of the `evo-guest` SDK.

use super::Language;

/// The WIT contract, vendored into JavaScript and Python projects.
pub(super) const SKILL_WIT: &str = include_str!("../../wit/since_v0.2.0/skill.wit");
/// The JavaScript helper: a byte-identical copy of `guest-sdk/js/evo-skill.js` (which
/// the tests build the example skills with; a test keeps the two equal), vendored so
/// that the crate builds from its package alone.
pub(super) const EVO_SKILL_JS: &str = include_str!("../../templates/evo-skill.js");
/// The Python helper, a copy of `guest-sdk/python/evo_skill.py` in the same way.
pub(super) const EVO_SKILL_PY: &str = include_str!("../../templates/evo_skill.py");

/// `(path, contents)` of every file of a new project in `language`.
pub(super) fn files(language: Language) -> Vec<(&'static str, &'static str)> {
    let mut files = vec![
        ("tests/greets-ada.json", TEST_CASE),
        ("tests/refuses-an-empty-name.json", TEST_ERROR),
    ];
    match language {
        Language::Rust => files.extend([
            ("Cargo.toml", RUST_CARGO),
            ("src/lib.rs", RUST_LIB),
            (".gitignore", "/target\n/skill.wasm\n/*.zip\n"),
            ("README.md", RUST_README),
        ]),
        Language::JavaScript => files.extend([
            ("skill.js", JS_SKILL),
            ("evo-skill.js", EVO_SKILL_JS),
            ("wit/skill.wit", SKILL_WIT),
            ("package.json", JS_PACKAGE),
            (".gitignore", "/node_modules\n/skill.wasm\n/*.zip\n"),
            ("README.md", JS_README),
        ]),
        Language::Python => files.extend([
            ("skill.py", PY_SKILL),
            ("evo_skill.py", EVO_SKILL_PY),
            ("wit/skill.wit", SKILL_WIT),
            ("requirements.txt", "componentize-py==0.25.1\n"),
            (".gitignore", "/.venv\n__pycache__/\n/skill.wasm\n/*.zip\n"),
            ("README.md", PY_README),
        ]),
    }
    files
}

const TEST_CASE: &str = r#"{
  "description": "Greets Ada by name",
  "input": { "name": "Ada" },
  "output": { "greeting": "Hello, Ada!" }
}
"#;

const TEST_ERROR: &str = r#"{
  "description": "An empty name is the caller's mistake",
  "input": { "name": "  " },
  "error": "INVALID_INPUT"
}
"#;

const RUST_CARGO: &str = r#"[package]
name = "{{crate}}"
version = "0.1.0"
edition = "2024"
publish = false

[lib]
crate-type = ["cdylib"]

[dependencies]
# Until evo-guest is on crates.io, it comes from a checkout of Evo.
evo-guest = { path = "{{sdk}}" }
serde = { version = "1", features = ["derive"] }
schemars = "1"

[profile.release]
opt-level = "s"
lto = true
codegen-units = 1
strip = "debuginfo"

# A project of its own, even when created inside another Cargo workspace.
[workspace]
"#;

const RUST_LIB: &str = r#"//! `{{name}}`: greets someone by name.
//!
//! `evo skill build` compiles it to `skill.wasm`, `evo skill test` runs the cases in
//! `tests/`, and `evo skill run . --input '{"name":"Ada"}'` calls it.

use evo_guest::{Error, JsonSchema, Manifest, Skill};
use serde::{Deserialize, Serialize};

/// What the skill takes (its input schema is generated from this type).
#[derive(Deserialize, JsonSchema)]
struct Input {
    /// Who to greet.
    name: String,
}

/// What it returns.
#[derive(Serialize, JsonSchema)]
struct Output {
    /// The greeting.
    greeting: String,
}

struct Greet;

impl Skill for Greet {
    type Input = Input;
    type Output = Output;

    fn manifest() -> Manifest {
        Manifest::new("{{name}}", "Greets someone by name.")
    }

    fn execute(input: Input) -> Result<Output, Error> {
        let name = input.name.trim();
        if name.is_empty() {
            return Err(Error::invalid_input("the name is empty: say who to greet"));
        }
        Ok(Output {
            greeting: format!("Hello, {name}!"),
        })
    }
}

evo_guest::export_skill!(Greet);
"#;

const JS_SKILL: &str = r#"// `{{name}}`: greets someone by name.
//
// `evo skill build` componentizes it to skill.wasm, `evo skill test` runs the cases in
// tests/, and `evo skill run . --input '{"name":"Ada"}'` calls it.
import { defineSkill, SkillError } from './evo-skill.js';

export const skill = defineSkill({
  manifest: {
    name: '{{name}}',
    description: 'Greets someone by name.',
    input: {
      type: 'object',
      properties: { name: { type: 'string', description: 'Who to greet.' } },
      required: ['name'],
    },
    output: {
      type: 'object',
      properties: { greeting: { type: 'string' } },
      required: ['greeting'],
    },
  },
  execute({ name }) {
    if (name.trim() === '') throw SkillError.invalidInput('the name is empty: say who to greet');
    // What a skill prints goes to the host's log: `evo -vv skill run` shows it.
    console.log(`greeting ${name.trim()}`);
    return { greeting: `Hello, ${name.trim()}!` };
  },
});
"#;

const JS_PACKAGE: &str = r#"{
  "name": "{{name}}",
  "private": true,
  "type": "module",
  "scripts": {
    "build": "evo skill build",
    "test": "evo skill test"
  },
  "devDependencies": {
    "@bytecodealliance/componentize-js": "0.23.0",
    "@bytecodealliance/preview2-shim": "0.25.0"
  }
}
"#;

const PY_SKILL: &str = r#""""`{{name}}`: greets someone by name.

`evo skill build` componentizes it to skill.wasm, `evo skill test` runs the cases in
tests/, and `evo skill run . --input '{"name":"Ada"}'` calls it."""

from evo_skill import SkillError, define_skill


def execute(input, run):
    name = input["name"].strip()
    if not name:
        raise SkillError.invalid_input("the name is empty: say who to greet")
    return {"greeting": f"Hello, {name}!"}


Skill = define_skill(
    {
        "name": "{{name}}",
        "description": "Greets someone by name.",
        "input": {
            "type": "object",
            "properties": {"name": {"type": "string", "description": "Who to greet."}},
            "required": ["name"],
        },
        "output": {
            "type": "object",
            "properties": {"greeting": {"type": "string"}},
            "required": ["greeting"],
        },
    },
    execute,
)
"#;

const RUST_README: &str = r#"# {{name}}

An Evo skill in Rust.

```sh
rustup target add wasm32-wasip2   # once
evo skill build                   # compiles to skill.wasm
evo skill test                    # runs the cases in tests/
evo skill run . --input '{"name":"Ada"}'
evo skill pack                    # writes {{name}}.zip, for `evo skill install`
```
"#;

const JS_README: &str = r#"# {{name}}

An Evo skill in JavaScript, built with ComponentizeJS.

```sh
npm install                       # once: the pinned ComponentizeJS
evo skill build                   # componentizes skill.js to skill.wasm
evo skill test                    # runs the cases in tests/
evo skill run . --input '{"name":"Ada"}'
evo skill pack                    # writes {{name}}.zip, for `evo skill install`
```
"#;

const PY_README: &str = r#"# {{name}}

An Evo skill in Python, built with componentize-py.

```sh
python3 -m venv .venv && .venv/bin/pip install -r requirements.txt   # once
evo skill build                   # componentizes skill.py to skill.wasm
evo skill test                    # runs the cases in tests/
evo skill run . --input '{"name":"Ada"}'
evo skill pack                    # writes {{name}}.zip, for `evo skill install`
```
"#;
