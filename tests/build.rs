//! Builds every crate in `skills-wasm/` for `wasm32-wasip2` into `OUT_DIR` and writes
//! `skills.rs`: one path constant per skill and a `foreach_skill!` macro, which the
//! tests use to fail the build when a skill has no test.

use std::env;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

const TARGET: &str = "wasm32-wasip2";

fn main() {
    let manifest_dir =
        PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let workspace = manifest_dir
        .parent()
        .expect("tests/ lives in the workspace root");
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    for watched in [
        "skills-wasm",
        "guest-sdk",
        "wit",
        "Cargo.lock",
        "scripts/componentize-js",
        "scripts/componentize-py.sh",
        // The evaluator skills-wasm/calculate is built with (crate evo-expr).
        "expr",
    ] {
        println!(
            "cargo:rerun-if-changed={}",
            workspace.join(watched).display()
        );
    }

    let skills = skill_crates(&workspace.join("skills-wasm"));
    let target_dir = out_dir.join("skills-target");
    // `cargo clippy` runs this script too (under its own fingerprint, so it would build
    // every guest a second time, minutes on CI); the lints need the constants' names, not
    // the files they name.
    let lint_only = env::var_os("RUSTC_WORKSPACE_WRAPPER").is_some_and(|wrapper| {
        Path::new(&wrapper)
            .file_stem()
            .is_some_and(|stem| stem.to_string_lossy().starts_with("clippy-driver"))
    });
    if !lint_only {
        build_skill_crates(workspace, &skills, &target_dir);
    }

    let mut code = String::new();
    let mut names = Vec::new();
    let guests = [JS, PYTHON].map(|guests| {
        let built = if lint_only {
            guests.outputs(workspace, &out_dir)
        } else {
            guests.build(workspace, &out_dir)
        };
        (guests, built)
    });
    for (guests, built) in guests {
        for (name, wasm) in built {
            writeln!(
                code,
                "/// `skills-wasm/{}/{name}`, componentized with {}.",
                guests.lang, guests.tool_name
            )
            .unwrap();
            let prefix = if guests.lang == "js" { "js" } else { "py" };
            let constant = format!("{prefix}_{}", name.replace('-', "_"));
            writeln!(
                code,
                "pub const {}: &str = {:?};",
                constant.to_uppercase(),
                wasm.display().to_string()
            )
            .unwrap();
            names.push(constant);
        }
    }
    for (package, _) in &skills {
        let file = package.replace('-', "_");
        let wasm = target_dir
            .join(TARGET)
            .join("release")
            .join(format!("{file}.wasm"));
        assert!(
            lint_only || wasm.exists(),
            "{} was not produced",
            wasm.display()
        );
        writeln!(code, "/// `skills-wasm/{package}`, built for {TARGET}.").unwrap();
        writeln!(
            code,
            "pub const {}: &str = {:?};",
            file.to_uppercase(),
            wasm.display().to_string()
        )
        .unwrap();
        names.push(file);
    }
    writeln!(
        code,
        "/// Calls `$mac!(name)` once per skill in `skills-wasm/`."
    )
    .unwrap();
    writeln!(
        code,
        "#[macro_export]\nmacro_rules! foreach_skill {{\n    ($mac:ident) => {{"
    )
    .unwrap();
    for name in &names {
        writeln!(code, "        $mac!({name});").unwrap();
    }
    writeln!(code, "    }};\n}}").unwrap();
    fs::write(out_dir.join("skills.rs"), code).expect("could not write skills.rs");
}

/// Builds the crates in `skills-wasm/` for [`TARGET`] into `target_dir`.
fn build_skill_crates(workspace: &Path, skills: &[(String, PathBuf)], target_dir: &Path) {
    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .current_dir(workspace)
        .args(["build", "--release", "--target", TARGET, "--target-dir"])
        .arg(target_dir)
        // Flags meant for the host build must not leak into the guest build.
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_BUILD_TARGET")
        .env_remove("CARGO_TARGET_DIR")
        .env("CARGO_PROFILE_RELEASE_DEBUG", "false")
        // Keep the name section so guest traps name the function that trapped.
        .env("CARGO_PROFILE_RELEASE_STRIP", "debuginfo")
        // Built for size, as `evo new`'s template is: optimised for size and linked
        // with LTO (calculate: 406 KB → 279 KB; codegen-units = 1 and panic = "abort"
        // changed nothing measurable, see BENCHMARKS.md).
        .env("CARGO_PROFILE_RELEASE_OPT_LEVEL", "s")
        .env("CARGO_PROFILE_RELEASE_LTO", "true");
    for (package, _) in skills {
        command.args(["-p", package]);
    }
    let status = command
        .status()
        .expect("could not run cargo to build the Wasm skills");
    assert!(
        status.success(),
        "building skills-wasm/* for {TARGET} failed; if the target is missing, run `rustup target add {TARGET}`"
    );
}

/// A language whose skills live in `skills-wasm/LANG/NAME/` and are componentized by
/// a pinned toolchain the test script installs.
struct Guests {
    /// The directory under `skills-wasm/` and `OUT_DIR`.
    lang: &'static str,
    /// The skill's source file in its directory.
    source: &'static str,
    /// The toolchain's name, for messages.
    tool_name: &'static str,
    /// The environment variable naming the toolchain's command.
    tool_env: &'static str,
    /// Where the install script puts it when the variable is not set.
    default_tool: &'static str,
    /// The script that installs it.
    script: &'static str,
    /// Files whose content decides the output besides the skill's own source.
    inputs: &'static [&'static str],
}

const JS: Guests = Guests {
    lang: "js",
    source: "skill.js",
    tool_name: "ComponentizeJS",
    tool_env: "EVO_COMPONENTIZE_JS",
    default_tool: "target/componentize-js/node_modules/@bytecodealliance/componentize-js/src/cli.js",
    script: "scripts/componentize-js.sh",
    inputs: &[
        "guest-sdk/js/evo-skill.js",
        "wit/skill.wit",
        "scripts/componentize-js/package-lock.json",
    ],
};

const PYTHON: Guests = Guests {
    lang: "python",
    source: "skill.py",
    tool_name: "componentize-py",
    tool_env: "EVO_COMPONENTIZE_PY",
    default_tool: "target/componentize-py/bin/componentize-py",
    script: "scripts/componentize-py.sh",
    inputs: &[
        "guest-sdk/python/evo_skill.py",
        "wit/skill.wit",
        "scripts/componentize-py.sh",
    ],
};

impl Guests {
    /// The command that builds `skills-wasm/LANG/NAME` into `wasm`, run from the
    /// workspace with relative paths (both toolchains resolve a skill's imports from
    /// there).
    fn command(&self, workspace: &Path, tool: &str, name: &str, wasm: &Path) -> Command {
        let dir = format!("skills-wasm/{}/{name}", self.lang);
        // A plain component brings its own WIT (`wit/` beside its source, one world);
        // an Evo skill is built against Evo's.
        let (wit, world) = match plain_world(&workspace.join(&dir)) {
            Some(world) => (format!("{dir}/wit"), world),
            None => ("wit".to_owned(), "plugin".to_owned()),
        };
        let mut command;
        if self.lang == "js" {
            command = Command::new("node");
            command
                .arg(tool)
                .arg(format!("{dir}/{}", self.source))
                .args(["--wit", &wit, "--world-name", &world])
                .args(["--disable", "fetch-event", "--out"]);
        } else {
            command = Command::new(tool);
            command
                .args(["-d", &wit, "-w", &world, "componentize", "-p", &dir])
                .args(["-p", "guest-sdk/python", "skill", "-o"]);
        }
        command.arg(wasm);
        command
    }

    /// The names of the skills in `skills-wasm/LANG/`, sorted.
    fn names(&self, workspace: &Path) -> Vec<String> {
        let dir = workspace.join("skills-wasm").join(self.lang);
        let mut skills: Vec<String> = fs::read_dir(&dir)
            .map(|entries| {
                entries
                    .filter_map(|entry| {
                        let path = entry.ok()?.path();
                        let name = path.file_name()?.to_str()?.to_owned();
                        path.join(self.source).is_file().then_some(name)
                    })
                    .collect()
            })
            .unwrap_or_default();
        skills.sort();
        skills
    }

    /// What [`Guests::build`] returns, without building anything.
    fn outputs(&self, workspace: &Path, out_dir: &Path) -> Vec<(String, PathBuf)> {
        let out = out_dir.join(self.lang);
        self.names(workspace)
            .into_iter()
            .map(|name| {
                let wasm = out.join(format!("{name}.wasm"));
                (name, wasm)
            })
            .collect()
    }

    /// Componentizes every `skills-wasm/LANG/NAME/SOURCE` against `wit/` into
    /// `OUT_DIR/LANG/NAME.wasm`; returns `(NAME, component)`. A component is rebuilt
    /// only when its source, the helper, the WIT or the toolchain changed (each build
    /// takes seconds).
    fn build(&self, workspace: &Path, out_dir: &Path) -> Vec<(String, PathBuf)> {
        println!("cargo:rerun-if-env-changed={}", self.tool_env);
        let dir = workspace.join("skills-wasm").join(self.lang);
        let skills = self.outputs(workspace, out_dir);
        if skills.is_empty() {
            return Vec::new();
        }
        let installed = workspace.join(self.default_tool);
        let tool = env::var(self.tool_env)
            .ok()
            .or_else(|| installed.is_file().then(|| installed.display().to_string()));
        let tool = tool.unwrap_or_else(|| {
            panic!(
                "the {lang} skills in skills-wasm/{lang} need the pinned {name}: run \
                 `source {script}` (it installs it and sets {var}), or use ./scripts/test",
                lang = self.lang,
                name = self.tool_name,
                script = self.script,
                var = self.tool_env,
            )
        });
        let mut shared = Vec::new();
        for input in self.inputs {
            shared
                .extend(fs::read(workspace.join(input)).unwrap_or_else(|e| panic!("{input}: {e}")));
        }
        shared.extend_from_slice(tool.as_bytes());
        let out = out_dir.join(self.lang);
        fs::create_dir_all(&out).expect("could not create the output directory");
        let mut running = Vec::new();
        let mut built = Vec::new();
        for (name, wasm) in skills {
            let source = dir.join(&name).join(self.source);
            let stamp = out.join(format!("{name}.stamp"));
            let mut inputs = fs::read(&source).expect("could not read the skill's source");
            inputs.extend_from_slice(&shared);
            if let Ok(wit) = fs::read(dir.join(&name).join("wit/world.wit")) {
                inputs.extend(wit);
            }
            let digest = format!("{:016x}", fnv1a(&inputs));
            if wasm.exists() && fs::read_to_string(&stamp).is_ok_and(|s| s == digest) {
                built.push((name, wasm));
                continue;
            }
            let child = self
                .command(workspace, &tool, &name, &wasm)
                .current_dir(workspace)
                .spawn()
                .unwrap_or_else(|e| panic!("could not run {} ({tool}): {e}", self.tool_name));
            running.push((source, child, stamp, digest));
            built.push((name, wasm));
        }
        for (source, mut child, stamp, digest) in running {
            let status = child.wait().expect("the toolchain did not finish");
            assert!(
                status.success(),
                "{} could not build {}: see its message above",
                self.tool_name,
                source.display()
            );
            fs::write(stamp, digest).expect("could not write the stamp");
        }
        built
    }
}

/// The world of a plain component's own WIT (`DIR/wit/world.wit`, its `world NAME {`
/// line), if it has one.
fn plain_world(dir: &Path) -> Option<String> {
    let text = fs::read_to_string(dir.join("wit/world.wit")).ok()?;
    text.lines().find_map(|line| {
        let name = line.trim().strip_prefix("world ")?;
        Some(name.trim_end_matches('{').trim().to_owned())
    })
}

/// A 64-bit FNV-1a hash: enough to tell whether a component's inputs changed.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// `(package name, directory)` of every crate in `skills-wasm/`, sorted.
fn skill_crates(dir: &Path) -> Vec<(String, PathBuf)> {
    let mut skills: Vec<(String, PathBuf)> = fs::read_dir(dir)
        .expect("skills-wasm/ is missing")
        .filter_map(|entry| {
            let path = entry.ok()?.path();
            let manifest = fs::read_to_string(path.join("Cargo.toml")).ok()?;
            let name = manifest
                .lines()
                .find_map(|line| line.trim().strip_prefix("name = \"")?.strip_suffix('"'))?
                .to_owned();
            Some((name, path))
        })
        .collect();
    skills.sort();
    skills
}
