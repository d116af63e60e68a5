//! Building a Rust skill: cargo for `wasm32-wasip2`, the second time with the manifest
//! as text (`EVO_SKILL_MANIFEST`), which `evo_guest::export_skill!` embeds.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use super::authoring;
use crate::error::{Error, Result};

const RUST_TARGET: &str = "wasm32-wasip2";
/// What `evo_guest::export_skill!` embeds as the manifest, when set at build time.
pub const MANIFEST_VAR: &str = "EVO_SKILL_MANIFEST";

/// `cargo build --release --target wasm32-wasip2` (with `EVO_SKILL_MANIFEST` set to
/// `manifest` when given), then copies the one `.wasm` it made.
pub(super) fn build(dir: &Path, staged: &Path, manifest: Option<&str>) -> Result<()> {
    if let Ok(out) = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
        && out.status.success()
        && !String::from_utf8_lossy(&out.stdout)
            .lines()
            .any(|l| l.trim() == RUST_TARGET)
    {
        return Err(authoring(
            "TOOLCHAIN_MISSING",
            format!(
                "the Rust target {RUST_TARGET} is not installed: run `rustup target add {RUST_TARGET}`"
            ),
        ));
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    match manifest {
        Some(json) => command.env(MANIFEST_VAR, json),
        None => command.env_remove(MANIFEST_VAR),
    };
    let output = command
        .current_dir(dir)
        .args(["build", "--release", "--target", RUST_TARGET])
        .args(["--message-format", "json-render-diagnostics"])
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| {
            authoring(
                "TOOLCHAIN_MISSING",
                format!("could not start cargo: {e}; install Rust from https://rustup.rs"),
            )
        })?;
    if !output.status.success() {
        return Err(authoring(
            "BUILD_FAILED",
            format!(
                "cargo could not build {} ({}); its messages are above",
                dir.display(),
                output.status
            ),
        ));
    }
    // The artifact's path, from cargo's own report (it honours CARGO_TARGET_DIR).
    let wasm = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|m| m["reason"] == "compiler-artifact")
        .flat_map(|m| {
            m["filenames"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|f| f.as_str().map(PathBuf::from))
                .collect::<Vec<_>>()
        })
        .find(|f| f.extension().is_some_and(|e| e == "wasm"))
        .ok_or_else(|| {
            authoring(
                "BUILD_FAILED",
                "cargo built no .wasm: is the crate a `cdylib` (`[lib] crate-type = [\"cdylib\"]`)?"
                    .into(),
            )
        })?;
    std::fs::copy(&wasm, staged).map_err(Error::io_at(&wasm))?;
    Ok(())
}
