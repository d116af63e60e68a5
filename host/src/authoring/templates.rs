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
/// The C and C++ helper, a copy of `guest-sdk/c/evo_skill.h` in the same way.
pub(super) const EVO_SKILL_H: &str = include_str!("../../templates/evo_skill.h");

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
        Language::C | Language::Cpp => {
            let (source, readme) = match language {
                Language::C => (("skill.c", C_SKILL), C_README),
                _ => (("skill.cpp", CPP_SKILL), CPP_README),
            };
            files.extend([
                source,
                ("evo_skill.h", EVO_SKILL_H),
                ("manifest.json", C_MANIFEST),
                ("wit/skill.wit", SKILL_WIT),
                (".gitignore", "/build\n/skill.wasm\n/*.zip\n"),
                ("README.md", readme),
            ]);
        }
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

const C_SKILL: &str = r#"// `{{name}}`: greets someone by name.
//
// `evo skill build` compiles it with manifest.json to skill.wasm, `evo skill test` runs
// the cases in tests/, and `evo skill run . --input '{"name":"Ada"}'` calls it.
#include <ctype.h>

#include "evo_skill.h"

bool exports_evo_skill_skill_execute(evo_json_t *input, evo_output_t *ret, evo_error_t *err) {
    // The input has passed manifest.json's input schema: `name` is a string.
    char *name = evo_json_string(input, "name");
    if (!name) {
        return evo_fail(err, EVO_INVALID_INPUT, "the name is missing: say who to greet");
    }
    char *start = name;
    while (isspace((unsigned char)*start)) {
        start++;
    }
    size_t len = strlen(start);
    while (len > 0 && isspace((unsigned char)start[len - 1])) {
        start[--len] = '\0';
    }
    if (len == 0) {
        free(name);
        return evo_fail(err, EVO_INVALID_INPUT, "the name is empty: say who to greet");
    }
    // What a skill logs goes to the host's log: `evo -v skill run` shows it.
    evo_log(EVO_LOG_INFO, "greeting someone");
    size_t size = len + sizeof "Hello, !";
    char *greeting = malloc(size);
    snprintf(greeting, size, "Hello, %s!", start);
    free(name);
    char *quoted = evo_json_quote(greeting);
    free(greeting);
    size = strlen(quoted) + sizeof "{\"greeting\":}";
    char *output = malloc(size);
    snprintf(output, size, "{\"greeting\":%s}", quoted);
    free(quoted);
    bool ok = evo_ok(ret, output);
    free(output);
    return ok;
}
"#;

const CPP_SKILL: &str = r#"// `{{name}}`: greets someone by name.
//
// `evo skill build` compiles it with manifest.json to skill.wasm, `evo skill test` runs
// the cases in tests/, and `evo skill run . --input '{"name":"Ada"}'` calls it.
// Built with -fno-exceptions: report a failure with `evo_fail`, never `throw`.
#include <string>

#include "evo_skill.h"

// The string field `key` of the input, or "" when it has none.
static std::string field(evo_json_t *input, const char *key) {
    char *raw = evo_json_string(input, key);
    std::string value = raw ? raw : "";
    free(raw);
    return value;
}

extern "C" bool exports_evo_skill_skill_execute(evo_json_t *input, evo_output_t *ret,
                                                evo_error_t *err) {
    // The input has passed manifest.json's input schema: `name` is a string.
    std::string name = field(input, "name");
    const char *space = " \t\r\n";
    size_t first = name.find_first_not_of(space);
    if (first == std::string::npos) {
        return evo_fail(err, EVO_INVALID_INPUT, "the name is empty: say who to greet");
    }
    name = name.substr(first, name.find_last_not_of(space) - first + 1);
    // What a skill logs goes to the host's log: `evo -v skill run` shows it.
    evo_log(EVO_LOG_INFO, "greeting someone");
    char *greeting = evo_json_quote(("Hello, " + name + "!").c_str());
    std::string output = std::string("{\"greeting\":") + greeting + "}";
    free(greeting);
    return evo_ok(ret, output.c_str());
}
"#;

const C_MANIFEST: &str = r#"{
  "name": "{{name}}",
  "description": "Greets someone by name.",
  "input": {
    "type": "object",
    "properties": { "name": { "type": "string", "description": "Who to greet." } },
    "required": ["name"]
  },
  "output": {
    "type": "object",
    "properties": { "greeting": { "type": "string" } },
    "required": ["greeting"]
  }
}
"#;

const C_README: &str = r#"# {{name}}

An Evo skill in C, built with clang and wasi-libc.

```sh
sudo apt install clang lld wasi-libc libclang-rt-dev-wasm32   # once (or set WASI_SDK_PATH)
evo skill build                   # compiles skill.c with manifest.json to skill.wasm
evo skill test                    # runs the cases in tests/
evo skill run . --input '{"name":"Ada"}'
evo skill pack                    # writes {{name}}.zip, for `evo skill install`
```

The build compiles every `.c` file in this directory with the bindings it generates
from `wit/skill.wit` into `build/` (`plugin.h` declares the host's functions), and
takes the manifest from `manifest.json`. `CFLAGS` adds flags.
"#;

const CPP_README: &str = r#"# {{name}}

An Evo skill in C++, built with clang++, wasi-libc and libc++.

```sh
sudo apt install clang lld wasi-libc libclang-rt-dev-wasm32 libc++-dev-wasm32   # once (or set WASI_SDK_PATH)
evo skill build                   # compiles skill.cpp with manifest.json to skill.wasm
evo skill test                    # runs the cases in tests/
evo skill run . --input '{"name":"Ada"}'
evo skill pack                    # writes {{name}}.zip, for `evo skill install`
```

The build compiles every `.cpp`, `.cc`, `.cxx` and `.c` file in this directory with the
bindings it generates from `wit/skill.wit` into `build/` (`plugin.h` declares the host's
functions), as C++17 without exceptions, and takes the manifest from `manifest.json`.
`CXXFLAGS` and `CFLAGS` add flags.
"#;
