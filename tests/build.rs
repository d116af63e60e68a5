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
        // Included by path into skills-wasm/calculate.
        "host/src/engine/builtin/expr.rs",
    ] {
        println!(
            "cargo:rerun-if-changed={}",
            workspace.join(watched).display()
        );
    }

    let skills = skill_crates(&workspace.join("skills-wasm"));
    let target_dir = out_dir.join("skills-target");
    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .current_dir(workspace)
        .args(["build", "--release", "--target", TARGET, "--target-dir"])
        .arg(&target_dir)
        // Flags meant for the host build must not leak into the guest build.
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_BUILD_TARGET")
        .env_remove("CARGO_TARGET_DIR")
        .env("CARGO_PROFILE_RELEASE_DEBUG", "false")
        // Keep the name section so guest traps name the function that trapped.
        .env("CARGO_PROFILE_RELEASE_STRIP", "debuginfo");
    for (package, _) in &skills {
        command.args(["-p", package]);
    }
    let status = command
        .status()
        .expect("could not run cargo to build the Wasm skills");
    assert!(
        status.success(),
        "building skills-wasm/* for {TARGET} failed; if the target is missing, run `rustup target add {TARGET}`"
    );

    let mut code = String::new();
    let mut names = Vec::new();
    for (name, wasm) in build_js(workspace, &out_dir) {
        writeln!(
            code,
            "/// `skills-wasm/js/{name}`, componentized with ComponentizeJS."
        )
        .unwrap();
        let constant = format!("js_{}", name.replace('-', "_"));
        writeln!(
            code,
            "pub const {}: &str = {:?};",
            constant.to_uppercase(),
            wasm.display().to_string()
        )
        .unwrap();
        names.push(constant);
    }
    for (package, _) in &skills {
        let file = package.replace('-', "_");
        let wasm = target_dir
            .join(TARGET)
            .join("release")
            .join(format!("{file}.wasm"));
        assert!(wasm.exists(), "{} was not produced", wasm.display());
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

/// Componentizes every `skills-wasm/js/NAME/skill.js` against `wit/` into
/// `OUT_DIR/js/NAME.wasm`, with the ComponentizeJS command in `EVO_COMPONENTIZE_JS`;
/// returns `(NAME, component)`. A component is rebuilt only when its sources, the
/// helper, the WIT or the tool changed (each build takes seconds).
fn build_js(workspace: &Path, out_dir: &Path) -> Vec<(String, PathBuf)> {
    println!("cargo:rerun-if-env-changed=EVO_COMPONENTIZE_JS");
    let dir = workspace.join("skills-wasm/js");
    let mut skills: Vec<(String, PathBuf)> = fs::read_dir(&dir)
        .map(|entries| {
            entries
                .filter_map(|entry| {
                    let path = entry.ok()?.path();
                    let name = path.file_name()?.to_str()?.to_owned();
                    path.join("skill.js").is_file().then_some((name, path))
                })
                .collect()
        })
        .unwrap_or_default();
    skills.sort();
    if skills.is_empty() {
        return Vec::new();
    }
    // Where scripts/componentize-js.sh installs it, when the variable is not set.
    let installed = workspace
        .join("target/componentize-js/node_modules/@bytecodealliance/componentize-js/src/cli.js");
    let tool = env::var("EVO_COMPONENTIZE_JS")
        .ok()
        .or_else(|| installed.is_file().then(|| installed.display().to_string()));
    let tool = tool.unwrap_or_else(|| {
        panic!(
            "the JavaScript skills in skills-wasm/js need the pinned ComponentizeJS: \
             run `source scripts/componentize-js.sh` (it installs it with npm and sets \
             EVO_COMPONENTIZE_JS), or use ./scripts/test"
        )
    });
    let shared = [
        fs::read(workspace.join("guest-sdk/js/evo-skill.js")).expect("guest-sdk/js/evo-skill.js"),
        fs::read(workspace.join("wit/skill.wit")).expect("wit/skill.wit"),
        fs::read(workspace.join("scripts/componentize-js/package-lock.json"))
            .expect("scripts/componentize-js/package-lock.json"),
        tool.clone().into_bytes(),
    ]
    .concat();
    let out = out_dir.join("js");
    fs::create_dir_all(&out).expect("could not create OUT_DIR/js");
    let mut running = Vec::new();
    let mut built = Vec::new();
    for (name, path) in skills {
        let source = path.join("skill.js");
        let wasm = out.join(format!("{name}.wasm"));
        let stamp = out.join(format!("{name}.stamp"));
        let mut inputs = fs::read(&source).expect("could not read skill.js");
        inputs.extend_from_slice(&shared);
        let digest = format!("{:016x}", fnv1a(&inputs));
        if wasm.exists() && fs::read_to_string(&stamp).is_ok_and(|s| s == digest) {
            built.push((name, wasm));
            continue;
        }
        // Run from the workspace with relative paths: ComponentizeJS resolves a skill's
        // imports (`../../../guest-sdk/js/evo-skill.js`) inside the directory it runs in.
        let child = Command::new("node")
            .current_dir(workspace)
            .arg(&tool)
            .arg(format!("skills-wasm/js/{name}/skill.js"))
            .args(["--wit", "wit"])
            .args([
                "--world-name",
                "plugin",
                "--disable",
                "fetch-event",
                "--out",
            ])
            .arg(&wasm)
            .spawn()
            .unwrap_or_else(|e| panic!("could not run node {tool}: {e}"));
        running.push((source, child, stamp, digest));
        built.push((name, wasm));
    }
    for (source, mut child, stamp, digest) in running {
        let status = child.wait().expect("ComponentizeJS did not finish");
        assert!(
            status.success(),
            "ComponentizeJS could not build {}: see its message above",
            source.display()
        );
        fs::write(stamp, digest).expect("could not write the stamp");
    }
    built
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
