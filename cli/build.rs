//! Packs the binary's relative relocations (`-z pack-relative-relocs`, DT_RELR): a
//! position-independent `evo` keeps its address randomisation while its relocation
//! table shrinks from ~1.5 MB to a few kilobytes.
//!
//! Only where the result is sure to load: a native build (the machine that links is the
//! machine that runs, as with `cargo install`) against glibc 2.36 or newer, whose loader
//! reads DT_RELR and refuses an object that needs it without saying so. Elsewhere the
//! binary is linked as before, only larger.

use std::process::Command;

/// The first glibc whose dynamic loader applies DT_RELR relocations.
const RELR_GLIBC: (u32, u32) = (2, 36);

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let native = std::env::var("HOST").ok() == std::env::var("TARGET").ok();
    let linux_gnu = std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux")
        && std::env::var("CARGO_CFG_TARGET_ENV").as_deref() == Ok("gnu");
    if native && linux_gnu && glibc().is_some_and(|version| version >= RELR_GLIBC) {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

/// The running glibc's version, from `getconf GNU_LIBC_VERSION` ("glibc 2.36").
fn glibc() -> Option<(u32, u32)> {
    let output = Command::new("getconf")
        .arg("GNU_LIBC_VERSION")
        .output()
        .ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    let (major, minor) = text.trim().strip_prefix("glibc ")?.split_once('.')?;
    let minor = minor.split('.').next()?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}
