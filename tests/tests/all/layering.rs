//! The dependency rule, checked on the source: every module of `host/src`
//! imports only modules of lower layers, so each layer can be read and tested without
//! the ones above it.
//!
//! | layer | modules |
//! | --- | --- |
//! | 0 | `error` (and the crate root's `Error`, `Result`, `unix_millis`, `lock`), `settings` (what a table of `evo.toml` is to its subsystem) |
//! | 1 | `paths`, `capabilities`, `db`, `storage` (the connection to PostgreSQL), `http`, `retrieval` (embedders, vectors, ranking) |
//! | 2 | `skill` (the kernel) |
//! | 3 | `llm`, `memory`, `engine`, `oci` (registries: the install record's types are the kernel's) |
//! | 4 | `tools` (`bash` and `git` run in the engine's native sandbox), `authoring` (skill projects, scripts as components) |
//! | 5 | `packages` (the manager uses the engine's loader), `remote` |
//! | 6 | `agent` |
//! | 7 | `config` (settings of every layer, read from `evo.toml`) |
//! | 8 | `host` (the composition root) |
//! | 9 | `serve` |
//! | 10 | `api` (the public namespaces: re-exports only) |
//!
//! Unit tests (`#[cfg(test)]` to the end of a file, `tests.rs`) may reach anywhere. The
//! CLI (the `evo-cli` crate, `cli/`) is the binary, above everything, and imports `evo_host::`.

use std::path::{Path, PathBuf};

const LAYERS: [(&str, u8); 27] = [
    ("error", 0),
    ("settings", 0),
    ("Error", 0),
    ("Result", 0),
    ("unix_millis", 0),
    ("lock", 0),
    ("paths", 1),
    ("capabilities", 1),
    ("db", 1),
    ("storage", 1),
    ("secrets", 1),
    ("http", 1),
    ("retrieval", 1),
    ("skill", 2),
    ("llm", 3),
    ("memory", 3),
    ("engine", 3),
    ("oci", 3),
    ("tools", 4),
    ("packages", 5),
    ("remote", 5),
    ("authoring", 4),
    ("agent", 6),
    ("config", 7),
    ("host", 8),
    ("serve", 9),
    ("api", 10),
];

fn layer(module: &str) -> Option<u8> {
    LAYERS.iter().find(|(m, _)| *m == module).map(|(_, l)| *l)
}

/// The `crate::X` modules `source` names outside its unit tests, with their lines.
fn imports(source: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (number, line) in source.lines().enumerate() {
        if line.trim_start().starts_with("#[cfg(test)]") {
            break;
        }
        if line.trim_start().starts_with("//") {
            continue;
        }
        let mut rest = line;
        while let Some(at) = rest.find("crate::") {
            rest = &rest[at + "crate::".len()..];
            let names: Vec<&str> = if let Some(group) = rest.strip_prefix('{') {
                let end = group.find('}').unwrap_or(group.len());
                group[..end]
                    .split(',')
                    .map(|n| n.trim().split("::").next().unwrap_or_default())
                    .collect()
            } else {
                vec![
                    rest.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                        .next()
                        .unwrap_or_default(),
                ]
            };
            found.extend(
                names
                    .into_iter()
                    .filter(|n| !n.is_empty())
                    .map(|n| (number + 1, n.to_owned())),
            );
        }
    }
    found
}

/// Every import of `source` (in `module`) that points to a module not below it.
fn violations(module: &str, file: &str, source: &str) -> Vec<String> {
    let Some(own) = layer(module) else {
        return vec![format!(
            "{file}: module `{module}` has no layer; add it to LAYERS"
        )];
    };
    imports(source)
        .into_iter()
        .filter(|(_, target)| target != module)
        .filter_map(|(line, target)| match layer(&target) {
            Some(theirs) if theirs < own => None,
            Some(theirs) => Some(format!(
                "{file}:{line}: `{module}` (layer {own}) imports `crate::{target}` (layer {theirs})"
            )),
            None => Some(format!("{file}:{line}: `crate::{target}` has no layer")),
        })
        .collect()
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_module_imports_only_the_layers_below_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../host/src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    files.sort();
    let mut problems = Vec::new();
    let mut checked = 0;
    for path in &files {
        let relative = path.strip_prefix(&src).unwrap();
        let first = relative
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let module = first.trim_end_matches(".rs");
        if ["cli", "main", "lib"].contains(&module) || path.file_name().unwrap() == "tests.rs" {
            continue;
        }
        let source = std::fs::read_to_string(path).unwrap();
        problems.extend(violations(module, &relative.display().to_string(), &source));
        checked += 1;
    }
    assert!(
        checked > 50,
        "only {checked} files found under {}",
        src.display()
    );
    assert!(
        problems.is_empty(),
        "layering violations:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_check_catches_an_import_against_the_rule() {
    let kernel_importing_the_agent = "use crate::error::Result;\nuse crate::{agent::Agent, db::Db};\nfn f() { crate::engine::wasm::x(); }\n#[cfg(test)]\nuse crate::host::Host;\n";
    assert_eq!(
        violations("skill", "skill/kernel.rs", kernel_importing_the_agent),
        [
            "skill/kernel.rs:2: `skill` (layer 2) imports `crate::agent` (layer 6)",
            "skill/kernel.rs:3: `skill` (layer 2) imports `crate::engine` (layer 3)",
        ]
    );
    assert_eq!(
        violations("memory", "memory/x.rs", "use crate::engine::Loader;"),
        ["memory/x.rs:1: `memory` (layer 3) imports `crate::engine` (layer 3)"],
        "modules of one layer do not import each other"
    );
    assert!(violations("host", "host.rs", "use crate::agent::Agent;").is_empty());
}

/// The names `host/src/lib.rs` re-exports at the crate root (`pub use a::{B, C as D};`,
/// over several lines or one).
fn root_names() -> Vec<String> {
    let lib =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../host/src/lib.rs"))
            .unwrap();
    let mut names = Vec::new();
    let mut rest = lib.as_str();
    while let Some(at) = rest.find("\npub use ") {
        rest = &rest[at + "\npub use ".len()..];
        let end = rest.find(';').unwrap();
        let path = &rest[..end];
        let listed = match path.split_once('{') {
            Some((_, group)) => group.trim_end_matches('}').split(',').collect(),
            None => vec![path.rsplit("::").next().unwrap()],
        };
        names.extend(
            listed
                .into_iter()
                .map(|n| n.rsplit(" as ").next().unwrap().trim().to_owned())
                .filter(|n| !n.is_empty()),
        );
    }
    names
}

/// The modules `host/src/lib.rs` declares public (`pub mod NAME;`): the namespaces.
fn public_modules() -> Vec<String> {
    let lib =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../host/src/lib.rs"))
            .unwrap();
    lib.lines()
        .filter_map(|l| l.trim().strip_prefix("pub mod "))
        .map(|l| l.trim_end_matches(';').trim().to_owned())
        .collect()
}

/// Every `evo_host::NAME` the Rust files under `dir` name that is neither re-exported at
/// the crate root nor one of its public modules.
fn names_outside_the_root(dir: &Path) -> (usize, Vec<String>) {
    let names = root_names();
    let modules = public_modules();
    let mut files = Vec::new();
    sources(dir, &mut files);
    let mut problems = Vec::new();
    for path in &files {
        let source = std::fs::read_to_string(path).unwrap();
        let mut rest = source.as_str();
        while let Some(at) = rest.find("evo_host::") {
            rest = &rest[at + "evo_host::".len()..];
            let named: Vec<&str> = match rest.strip_prefix('{') {
                Some(group) => group[..group.find('}').unwrap()]
                    .split(',')
                    .map(|n| {
                        n.trim()
                            .split("::")
                            .next()
                            .unwrap()
                            .split(" as ")
                            .next()
                            .unwrap()
                    })
                    .collect(),
                None => vec![
                    rest.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                        .next()
                        .unwrap(),
                ],
            };
            for name in named.into_iter().filter(|n| !n.is_empty()) {
                if !modules.iter().any(|m| m == name) && !names.iter().any(|n| n == name) {
                    problems.push(format!("{}: evo_host::{name}", path.display()));
                }
            }
        }
        // The host's internals, which its own tests reach through.
        for internal in [".kernel()", ".loader()", ".registry()", ".calls()"] {
            if source.contains(internal) {
                problems.push(format!("{}: Host{internal}", path.display()));
            }
        }
    }
    (files.len(), problems)
}

#[test]
fn the_examples_name_only_what_the_crate_root_offers() {
    let names = root_names();
    assert!(
        ["Host", "Config", "Error", "Tool", "SkillContext"]
            .iter()
            .all(|n| names.iter().any(|m| m == n)),
        "{names:?}"
    );
    let modules = public_modules();
    assert!(
        ["config", "skills", "grants", "wasm"]
            .iter()
            .all(|n| modules.iter().any(|m| m == n)),
        "{modules:?}"
    );
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../host/examples");
    let (files, problems) = names_outside_the_root(&examples);
    assert!(files >= 3, "{files}");
    assert!(
        problems.is_empty(),
        "examples show embedders what to use: re-export these at the crate root or in a public module, or name what is there:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_cli_uses_only_what_an_embedder_can() {
    let cli = Path::new(env!("CARGO_MANIFEST_DIR")).join("../cli/src");
    let (files, problems) = names_outside_the_root(&cli);
    assert!(files > 10, "{files}");
    assert!(
        problems.is_empty(),
        "the `evo` binary is built on evo-host's public API: re-export these at the crate root or in a public module (or give Host a method):\n{}",
        problems.join("\n")
    );
}

/// Files under `host/src` (outside unit tests) whose source contains `needle`.
fn files_containing(needle: &str) -> Vec<String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../host/src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    files
        .iter()
        .filter(|path| {
            let source = std::fs::read_to_string(path).unwrap();
            let code = source.split("#[cfg(test)]").next().unwrap_or_default();
            code.contains(needle)
        })
        .map(|path| path.strip_prefix(&src).unwrap().display().to_string())
        .collect()
}

#[test]
fn one_rule_has_one_home() {
    // The two-lane admission rule, which the Wasm engine's slots and `evo serve`'s
    // permits both follow.
    assert_eq!(files_containing("const LONG_STREAK"), ["skill/lanes.rs"]);
    // How a native run failed is a `NativeFailure`, never its message compared.
    assert_eq!(
        files_containing("\"Execution timeout\""),
        ["engine/native/run.rs"]
    );
    assert_eq!(
        files_containing("starts_with(\"Output size exceeded"),
        Vec::<String>::new()
    );
}

#[test]
fn built_in_tools_read_typed_input_and_write_no_schema_by_hand() {
    // Every built-in tool is a `TypedTool`: its schemas are generated from its input and
    // output types, and its input arrives deserialized. A schema written as JSON, or an
    // input read field by field with a fallback, is how the two drifted apart before.
    assert_eq!(
        files_containing("impl<T: TypedTool> Tool for T"),
        ["tools/typed.rs"]
    );
    for needle in [
        "impl Tool for",
        "input[\"",
        "input.get(\"",
        "\"input\": { \"type\"",
    ] {
        let found: Vec<String> = files_containing(needle)
            .into_iter()
            .filter(|file| file.starts_with("tools/") || file == "packages/scripts.rs")
            .collect();
        assert!(found.is_empty(), "{needle} in {found:?}");
    }
}

/// The first path segment of every item in a `use` group's text (`a::b, c::{d, e}` →
/// `a`, `c`), nested groups skipped.
fn group_heads(group: &str) -> Vec<String> {
    let mut heads = Vec::new();
    let mut depth = 0;
    let mut start = true;
    for piece in group.split_inclusive([',', '{', '}']) {
        if depth == 0 && start {
            let head: String = piece
                .trim_start()
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !head.is_empty() {
                heads.push(head);
            }
        }
        match piece.chars().last() {
            Some('{') => depth += 1,
            Some('}') => depth -= 1,
            _ => {}
        }
        start = piece.ends_with(',');
    }
    heads
}

/// The sibling modules `source` names through `super::` or `crate::<room>::`, directly
/// or through a name `mod.rs` re-exports, before its unit tests.
fn siblings_named(
    source: &str,
    room: &str,
    modules: &[String],
    reexports: &std::collections::BTreeMap<String, String>,
) -> std::collections::BTreeSet<String> {
    let code = source.split("#[cfg(test)]").next().unwrap_or_default();
    let code: String = code
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let prefix = format!("crate::{}::", room.replace('/', "::"));
    let mut named = std::collections::BTreeSet::new();
    for marker in ["super::", prefix.as_str()] {
        for (at, _) in code.match_indices(marker) {
            let rest = &code[at + marker.len()..];
            let heads = match rest.strip_prefix('{') {
                Some(group) => group_heads(&group[..group.find("};").unwrap_or(group.len())]),
                None => group_heads(rest.split([';', '\n', '(']).next().unwrap_or_default()),
            };
            for head in heads {
                if modules.contains(&head) {
                    named.insert(head);
                } else if let Some(module) = reexports.get(&head) {
                    named.insert(module.clone());
                }
            }
        }
    }
    named
}

/// An import circle among the modules of `room` (a directory of `host/src`), if any: a
/// module that is a directory counts as all of its files.
fn circle_in(src: &Path, room: &str) -> Option<Vec<String>> {
    use std::collections::BTreeMap;
    let dir = src.join(room);
    let mut files: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if path.is_dir() && path.join("mod.rs").exists() {
            let mut inside = Vec::new();
            sources(&path, &mut inside);
            inside.retain(|p| p.file_name().is_none_or(|n| n != "tests.rs"));
            files.insert(name, inside);
        } else if path.extension().is_some_and(|e| e == "rs")
            && !["mod", "tests"].contains(&name.as_str())
        {
            files.insert(name, vec![path]);
        }
    }
    let modules: Vec<String> = files.keys().cloned().collect();
    // `pub use call::WasmSkill;` in mod.rs: naming `super::WasmSkill` names `call`.
    let root = std::fs::read_to_string(dir.join("mod.rs")).unwrap();
    let mut reexports = BTreeMap::new();
    for statement in root.split(';') {
        let Some(at) = statement.find("use ") else {
            continue;
        };
        let path = statement[at + 4..].trim();
        let Some((module, items)) = path.split_once("::") else {
            continue;
        };
        if !modules.iter().any(|m| m == module) {
            continue;
        }
        let items = items.trim().trim_start_matches('{').trim_end_matches('}');
        for item in items.split(',') {
            let name = item.rsplit([' ', ':']).next().unwrap_or_default().trim();
            if !name.is_empty() {
                reexports.insert(name.to_owned(), module.to_owned());
            }
        }
    }
    let graph: BTreeMap<String, std::collections::BTreeSet<String>> = files
        .iter()
        .map(|(name, paths)| {
            let mut named = std::collections::BTreeSet::new();
            for path in paths {
                let source = std::fs::read_to_string(path).unwrap();
                // Below a directory module, `super::` is that module, not the room.
                let in_room = path.parent() == Some(dir.as_path())
                    || path.file_name().is_some_and(|n| n == "mod.rs")
                        && path.parent().and_then(Path::parent) == Some(dir.as_path());
                let source = if in_room {
                    source
                } else {
                    source.replace("super::", "")
                };
                named.extend(siblings_named(&source, room, &modules, &reexports));
            }
            named.remove(name);
            (name.clone(), named)
        })
        .collect();
    // Depth-first search for a back edge.
    fn visit(
        node: &str,
        graph: &BTreeMap<String, std::collections::BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut std::collections::BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut circle = path[at..].to_vec();
            circle.push(node.to_owned());
            return Some(circle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_owned());
        for next in &graph[node] {
            if let Some(circle) = visit(next, graph, path, done) {
                return Some(circle);
            }
        }
        path.pop();
        done.insert(node.to_owned());
        None
    }
    let mut done = std::collections::BTreeSet::new();
    graph
        .keys()
        .find_map(|node| visit(node, &graph, &mut Vec::new(), &mut done))
}

/// Every directory of `host/src` with a `mod.rs`, relative to it.
fn rooms(dir: &Path, under: &str, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() && path.join("mod.rs").exists() {
            let name = path.file_name().unwrap().to_string_lossy();
            let room = if under.is_empty() {
                name.into_owned()
            } else {
                format!("{under}/{name}")
            };
            rooms(&path, &room, out);
            out.push(room);
        }
    }
}

#[test]
fn the_files_of_a_room_do_not_import_each_other_in_a_circle() {
    // For example: loading builds a skill, a skill's call compiles on first use: `load`
    // → `call` → `compile`, never back. The call store holds the rows that statistics
    // and the history flush to: `stats`/`history` → `store`, never back. The kernel
    // holds the executors, and an executor is handed the kernel's frame
    // (`SkillContext`): both live in `skill/kernel`, which the composite executors and
    // the engines import, never the other way.
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../host/src");
    let mut all = Vec::new();
    rooms(&src, "", &mut all);
    all.sort();
    assert!(all.len() > 20, "only {} rooms found", all.len());
    let circles: Vec<String> = all
        .iter()
        .filter_map(|room| {
            circle_in(&src, room).map(|c| format!("host/src/{room}: {}", c.join(" → ")))
        })
        .collect();
    assert!(
        circles.is_empty(),
        "import circles:\n{}",
        circles.join("\n")
    );
}

#[test]
fn the_circle_check_finds_a_circle() {
    let modules = ["call".to_owned(), "load".to_owned(), "state".to_owned()];
    let reexports = [("WasmSkill".to_owned(), "call".to_owned())].into();
    let load = "use super::{\n    Limits, WasmSkill,\n    compile::{Code, Prepared},\n};\n";
    assert_eq!(
        siblings_named(load, "engine/wasm", &modules, &reexports),
        ["call".to_owned()].into()
    );
    let state = "fn f() { super::call::cut(x) }\n#[cfg(test)]\nuse super::load;\n";
    assert_eq!(
        siblings_named(state, "engine/wasm", &modules, &reexports),
        ["call".to_owned()].into()
    );
    assert_eq!(group_heads("a::b, c::{d, e}, f"), ["a", "c", "f"]);
    // A circle through a directory module's inner file is a circle.
    let src = tempfile::tempdir().unwrap();
    let room = src.path().join("room");
    std::fs::create_dir_all(room.join("deep")).unwrap();
    std::fs::write(room.join("mod.rs"), "mod deep;\nmod flat;\n").unwrap();
    std::fs::write(room.join("flat.rs"), "use super::deep::Thing;\n").unwrap();
    std::fs::write(room.join("deep/mod.rs"), "mod inner;\n").unwrap();
    std::fs::write(
        room.join("deep/inner.rs"),
        "use crate::room::flat::Other;\n",
    )
    .unwrap();
    assert_eq!(
        circle_in(src.path(), "room"),
        Some(vec![
            "deep".to_owned(),
            "flat".to_owned(),
            "deep".to_owned()
        ])
    );
    std::fs::write(room.join("deep/inner.rs"), "use super::flat::Other;\n").unwrap();
    assert_eq!(
        circle_in(src.path(), "room"),
        None,
        "super:: below deep is deep"
    );
}

#[test]
fn the_root_names_a_dozen_things_and_every_type_the_api_mentions_can_be_named() {
    // wasmtime's `component` module keeps about twenty names at its root and the rest in
    // namespaces; Evo's root holds what every embedder names, the rest its modules.
    let names = root_names();
    assert!(
        names.len() <= 15,
        "{} names at the root: {names:?}",
        names.len()
    );
    // host/public-api.txt (rustdoc's view, kept by scripts/public-api) ends with the
    // types public items mention that an embedder cannot name, when there are any.
    let api = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../host/public-api.txt"),
    )
    .unwrap();
    assert!(
        !api.contains("# Named by the items above but not public"),
        "public items mention types an embedder cannot name (the end of host/public-api.txt): re-export them in a namespace, or stop mentioning them"
    );
    assert!(
        api.lines().filter(|l| l.starts_with("mod ")).count() >= 15,
        "the namespaces are listed"
    );
}
