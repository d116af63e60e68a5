//! Building C and C++ skills: the bindings come from the project's `wit/` (wit-bindgen's
//! C generator, run in-process, so no `wit-bindgen` binary is needed), clang compiles them
//! with the project's sources for `wasm32-wasi` against wasi-libc, and the core module is
//! made a component with the WASI preview1 adapter of the wasmtime Evo runs on.
//!
//! Everything generated goes to `DIR/build/`: `plugin.h` and `plugin.c` (the types and
//! the host's functions), `manifest.c` (from `manifest.json`, when the project has one)
//! and the core module.

use std::path::{Path, PathBuf};
use std::process::Command;

use wit_bindgen_core::Files;

use super::{Language, authoring, run_tool, which};
use crate::error::{Error, Result};

/// The target clang builds for: WASI preview 1, which the adapter turns into 0.2.
const TARGET: &str = "wasm32-wasi";
/// The world a skill is built as.
const WORLD: &str = "plugin";
/// Where the generated files and the core module go, inside the project.
pub(super) const BUILD_DIR: &str = "build";
/// The oldest clang looked for on `PATH` by version (`clang-14`, Debian 12's).
const OLDEST_CLANG: u32 = 14;
/// The newest.
const NEWEST_CLANG: u32 = 30;

/// What to install when clang or its WebAssembly parts are missing.
const INSTALL: &str = "install clang, lld and wasi-libc (Debian or Ubuntu: `apt install clang lld wasi-libc libclang-rt-dev-wasm32`, and `libc++-dev-wasm32` for C++), or set WASI_SDK_PATH to a wasi-sdk";

/// Builds the C or C++ project in `dir` into the component `staged`.
pub(super) fn build(language: Language, dir: &Path, staged: &Path) -> Result<()> {
    let clang = Clang::find(language)?;
    let out = dir.join(BUILD_DIR);
    std::fs::create_dir_all(&out).map_err(Error::io_at(&out))?;
    let (resolve, world) = contract(dir)?;
    let mut generated = bindings(&resolve, world, &out)?;
    let manifest = dir.join("manifest.json");
    if manifest.is_file() {
        generated.push(manifest_source(&manifest, &out)?);
    }
    let sources = sources(dir, language)?;
    let core = out.join("skill.core.wasm");
    let _ = std::fs::remove_file(&core);
    match language {
        Language::Cpp => {
            // C files (the bindings, the manifest, the project's own) are compiled as C,
            // then linked with the C++ sources by clang++ (which links libc++).
            let (c, cpp): (Vec<_>, Vec<_>) = sources
                .into_iter()
                .partition(|s| s.extension().is_some_and(|e| e == "c"));
            let mut objects = Vec::new();
            for source in generated.iter().chain(&c) {
                let object = out.join(format!("{}.o", file_name(source)));
                let mut command = clang.command(&clang.c, "CFLAGS");
                command.arg("-c").arg(source).arg("-o").arg(&object);
                run_tool(dir, command, &clang.c.display().to_string())?;
                objects.push(object);
            }
            let mut command = clang.command(&clang.cpp, "CXXFLAGS");
            command
                .args(["-std=c++17", "-fno-exceptions"])
                .args(&cpp)
                .args(&objects);
            link(dir, &clang.cpp, command, &core)?;
        }
        _ => {
            let mut command = clang.command(&clang.c, "CFLAGS");
            command.args(&sources).args(&generated);
            link(dir, &clang.c, command, &core)?;
        }
    }
    componentize(&core, &resolve, world, staged)
}

/// Runs the linking `command` into `core`.
fn link(dir: &Path, driver: &Path, mut command: Command, core: &Path) -> Result<()> {
    // A reactor: the host calls its exports, it has no `main`.
    command.arg("-mexec-model=reactor").arg("-o").arg(core);
    run_tool(dir, command, &driver.display().to_string())?;
    if core.is_file() {
        Ok(())
    } else {
        Err(authoring(
            "BUILD_FAILED",
            format!(
                "{} finished without writing {}; see its messages above",
                driver.display(),
                core.display()
            ),
        ))
    }
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
}

/// The clang drivers a build uses, and the sysroot when it is not clang's own.
struct Clang {
    c: PathBuf,
    cpp: PathBuf,
    sysroot: Option<PathBuf>,
}

impl Clang {
    /// `EVO_CLANG`, else the wasi-sdk at `WASI_SDK_PATH`, else `clang` or `clang-N` on
    /// `PATH`; checked to have wasi-libc (and libc++ for C++).
    fn find(language: Language) -> Result<Self> {
        let explicit = std::env::var_os("EVO_CLANG").filter(|v| !v.is_empty());
        let sdk = std::env::var_os("WASI_SDK_PATH")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from);
        let (c, sysroot) = if let Some(clang) = explicit {
            (PathBuf::from(clang), None)
        } else if let Some(sdk) = sdk {
            let sysroot = sdk.join("share/wasi-sysroot");
            (sdk.join("bin/clang"), Some(sysroot))
        } else {
            let found = std::iter::once("clang".to_owned())
                .chain(
                    (OLDEST_CLANG..=NEWEST_CLANG)
                        .rev()
                        .map(|v| format!("clang-{v}")),
                )
                .find_map(|name| which(&name));
            (
                found.ok_or_else(|| {
                    authoring(
                        "TOOLCHAIN_MISSING",
                        format!(
                            "a C or C++ skill is built by clang, which is not on PATH: {INSTALL}"
                        ),
                    )
                })?,
                None,
            )
        };
        if !c.is_file() {
            return Err(authoring(
                "TOOLCHAIN_MISSING",
                format!("there is no clang at {}: {INSTALL}", c.display()),
            ));
        }
        // `clang-14` → `clang++-14`, `clang` → `clang++`, in the same directory.
        let name = file_name(&c);
        let cpp = c.with_file_name(name.replacen("clang", "clang++", 1));
        let clang = Self { c, cpp, sysroot };
        clang.require("-print-file-name=libc.a", "wasi-libc")?;
        clang.require(
            "-print-libgcc-file-name",
            "compiler runtime (libclang_rt.builtins)",
        )?;
        if language == Language::Cpp {
            if !clang.cpp.is_file() {
                return Err(authoring(
                    "TOOLCHAIN_MISSING",
                    format!(
                        "a C++ skill is built by {}, which is not there: {INSTALL}",
                        clang.cpp.display()
                    ),
                ));
            }
            clang.require("-print-file-name=libc++.a", "libc++")?;
        }
        Ok(clang)
    }

    /// `driver` with the target, the sysroot, the flags every skill is built with and
    /// the user's own (`flags_var`: `CFLAGS` or `CXXFLAGS`, split at spaces).
    fn command(&self, driver: &Path, flags_var: &str) -> Command {
        let mut command = Command::new(driver);
        command.arg(format!("--target={TARGET}"));
        if let Some(sysroot) = &self.sysroot {
            command.arg(format!("--sysroot={}", sysroot.display()));
        }
        command.args(["-O2", "-Wall"]);
        command.args(["-I", ".", "-I", BUILD_DIR]);
        if let Ok(flags) = std::env::var(flags_var) {
            command.args(flags.split_whitespace());
        }
        command
    }

    /// Fails with `TOOLCHAIN_MISSING` naming `what` unless the file clang prints when
    /// asked with `query` (`-print-file-name=libc.a`) exists for the target.
    fn require(&self, query: &str, what: &str) -> Result<()> {
        let mut command = self.command(&self.c, "CFLAGS");
        let found = command.arg(query).output().map_err(|e| {
            authoring(
                "TOOLCHAIN_MISSING",
                format!("could not start {}: {e}; {INSTALL}", self.c.display()),
            )
        })?;
        let path = PathBuf::from(String::from_utf8_lossy(&found.stdout).trim());
        if found.status.success() && path.is_absolute() && path.is_file() {
            Ok(())
        } else {
            Err(authoring(
                "TOOLCHAIN_MISSING",
                format!(
                    "{} has no {what} for {TARGET} (`{query}` names no file): {INSTALL}",
                    self.c.display()
                ),
            ))
        }
    }
}

/// The project's WIT contract and the world a skill is built as.
fn contract(dir: &Path) -> Result<(wit_parser::Resolve, wit_parser::WorldId)> {
    let wit = dir.join("wit");
    let mut resolve = wit_parser::Resolve::default();
    let world = resolve
        .push_path(&wit)
        .and_then(|(package, _)| resolve.select_world(&[package], Some(WORLD)));
    let world = world.map_err(|e| {
        authoring(
            "BUILD_FAILED",
            format!(
                "{} does not hold the skill contract (a `world {WORLD}`): {e:#}; `evo new` writes it as wit/skill.wit",
                wit.display()
            ),
        )
    })?;
    Ok((resolve, world))
}

/// Writes `plugin.h`, `plugin.c` and `component_type.c` into `out`; returns the C files.
fn bindings(
    resolve: &wit_parser::Resolve,
    world: wit_parser::WorldId,
    out: &Path,
) -> Result<Vec<PathBuf>> {
    let opts = wit_bindgen_c::Opts {
        // The component type goes in by `componentize`, not by a linked object.
        no_object_file: true,
        ..Default::default()
    };
    let mut files = Files::default();
    let mut resolve = resolve.clone();
    opts.build()
        .generate(&mut resolve, world, &mut files)
        .map_err(|e| {
            authoring(
                "BUILD_FAILED",
                format!("could not generate the C bindings: {e:#}"),
            )
        })?;
    let mut sources = Vec::new();
    for (name, bytes) in files.iter() {
        let path = out.join(name);
        write_if_changed(&path, bytes)?;
        if name.ends_with(".c") {
            sources.push(path);
        }
    }
    // The bindings link a symbol of the component-type object wit-bindgen would write;
    // `componentize` embeds the type instead, so the symbol is an empty function.
    let link = out.join("component_type.c");
    write_if_changed(
        &link,
        format!("// Generated by `evo skill build`. DO NOT EDIT.\n// The component type is embedded when the component is made.\nvoid __component_type_object_force_link_{WORLD}(void) {{}}\n").as_bytes(),
    )?;
    sources.push(link);
    Ok(sources)
}

/// Writes `bytes` to `path` unless it already holds them, so that an editor or `make`
/// watching the build directory sees no change when there is none.
fn write_if_changed(path: &Path, bytes: &[u8]) -> Result<()> {
    if std::fs::read(path).is_ok_and(|old| old == bytes) {
        return Ok(());
    }
    std::fs::write(path, bytes).map_err(Error::io_at(path))
}

/// `out/manifest.c`: the manifest function, returning `manifest.json` as it is.
fn manifest_source(manifest: &Path, out: &Path) -> Result<PathBuf> {
    let text = std::fs::read_to_string(manifest).map_err(Error::io_at(manifest))?;
    if let Err(e) = serde_json::from_str::<serde_json::Value>(&text) {
        return Err(authoring(
            "BUILD_FAILED",
            format!(
                "{} is not JSON: {e}; fix it and build again",
                manifest.display()
            ),
        ));
    }
    let source = format!(
        "// Generated by `evo skill build` from manifest.json. DO NOT EDIT.\n#include \"plugin.h\"\n\nstatic const char MANIFEST[] =\n{};\n\nvoid exports_evo_skill_skill_manifest(exports_evo_skill_skill_json_t *ret) {{\n    plugin_string_dup_n(ret, MANIFEST, sizeof MANIFEST - 1);\n}}\n",
        c_string(text.trim())
    );
    let path = out.join("manifest.c");
    write_if_changed(&path, source.as_bytes())?;
    Ok(path)
}

/// `text` as C string literals, a line each: printable ASCII as is, every other byte
/// as a three-digit octal escape (which, unlike `\x`, never takes the next character).
fn c_string(text: &str) -> String {
    let mut literal = String::new();
    for line in text.split_inclusive('\n') {
        literal.push_str("    \"");
        for byte in line.bytes() {
            match byte {
                b'"' => literal.push_str("\\\""),
                b'\\' => literal.push_str("\\\\"),
                b'?' => literal.push_str("\\?"),
                0x20..=0x7e => literal.push(char::from(byte)),
                _ => literal.push_str(&format!("\\{byte:03o}")),
            }
        }
        literal.push_str("\"\n");
    }
    if literal.is_empty() {
        literal.push_str("    \"\"\n");
    }
    literal.pop();
    literal
}

/// The project's own sources: every `.c` file in `dir` (and `.cpp`, `.cc`, `.cxx` for
/// C++), in name order. Subdirectories are not searched.
fn sources(dir: &Path, language: Language) -> Result<Vec<PathBuf>> {
    let extensions: &[&str] = match language {
        Language::Cpp => &["c", "cpp", "cc", "cxx"],
        _ => &["c"],
    };
    let mut sources: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(Error::io_at(dir))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .filter(|p| {
            p.extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| extensions.contains(&e))
        })
        .map(|p| PathBuf::from(file_name(&p)))
        .collect();
    sources.sort();
    Ok(sources)
}

/// The core module at `core` with the contract embedded, made a component with the
/// WASI preview1 adapter, written to `staged`.
fn componentize(
    core: &Path,
    resolve: &wit_parser::Resolve,
    world: wit_parser::WorldId,
    staged: &Path,
) -> Result<()> {
    let mut module = std::fs::read(core).map_err(Error::io_at(core))?;
    let component = wit_component::embed_component_metadata(
        &mut module,
        resolve,
        world,
        wit_component::StringEncoding::UTF8,
    )
    .and_then(|()| {
        wit_component::ComponentEncoder::default()
            .module(&module)?
            .adapter(
                wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_ADAPTER_NAME,
                wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER,
            )?
            .validate(true)
            .encode()
    })
    .map_err(|e| {
        authoring(
            "BUILD_FAILED",
            format!(
                "{} does not make a component of the skill contract: {e:#}; does the code define `exports_evo_skill_skill_execute` (and the manifest, or manifest.json)?",
                core.display()
            ),
        )
    })?;
    std::fs::write(staged, component).map_err(Error::io_at(staged))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manifest_becomes_c_literals_that_mean_the_same_bytes() {
        assert_eq!(
            c_string("{\"a\": \"b\\\\\"}"),
            "    \"{\\\"a\\\": \\\"b\\\\\\\\\\\"}\""
        );
        // Bytes past ASCII and a question mark (no trigraph) as octal and `\?`; a digit
        // after an escape stays a digit.
        assert_eq!(c_string("é1??="), "    \"\\303\\2511\\?\\?=\"");
        assert_eq!(c_string("a\nb"), "    \"a\\012\"\n    \"b\"");
        assert_eq!(c_string(""), "    \"\"");
    }
}
