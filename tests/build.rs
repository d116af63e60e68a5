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
