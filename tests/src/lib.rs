//! Shared fixtures for Evo's integration tests and benchmarks: the real skills built
//! from `skills-wasm/`, and hand-written misbehaving guests.

use std::path::{Path, PathBuf};

use evo_host::capabilities::Policy;
use evo_host::engine::wasm::{EngineConfig, WasmEngine, WasmSkill};

/// Paths of the skills in `skills-wasm/`, built for `wasm32-wasip2` by `build.rs`.
pub mod skills {
    include!(concat!(env!("OUT_DIR"), "/skills.rs"));
}

/// The WIT contract the host implements.
pub const SKILL_WIT: &str = include_str!("../../wit/skill.wit");

/// An engine with a small pool, no cache, and the default limits.
pub fn engine() -> WasmEngine {
    WasmEngine::new(EngineConfig {
        max_concurrent_calls: 8,
        ..EngineConfig::default()
    })
    .expect("the engine builds")
}

/// Loads a skill from `skills-wasm/` with the given policy.
pub async fn load(engine: &WasmEngine, path: &str, policy: &Policy) -> WasmSkill {
    engine
        .load_file(Path::new(path), policy)
        .await
        .unwrap_or_else(|e| panic!("{path} loads: {e}"))
}

/// The `evo` binary next to the test executable (built by `cargo build --workspace`,
/// which `./scripts/test` runs before the tests).
pub fn evo_bin() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps");
    let bin = dir.join("evo");
    assert!(
        bin.exists(),
        "{} is missing: build it with `cargo build -p evo-host` (./scripts/test does)",
        bin.display()
    );
    bin
}

/// Wraps a core module written in WAT into an `evo:skill` component.
///
/// The module implements the canonical ABI by hand: it must export `memory`,
/// `cabi_realloc`, and the functions `evo:skill/skill@<version>#manifest` and
/// `#execute`. `wit` is the WIT text of the world to encode against, so tests can
/// build components for other versions or worlds too.
pub fn component_from_wat(core_wat: &str, wit: &str, world: &str) -> Vec<u8> {
    let mut module = wat::parse_str(core_wat).expect("the test's WAT parses");
    let mut resolve = wit_parser::Resolve::default();
    let package = resolve
        .push_str("skill.wit", wit)
        .expect("the test's WIT parses");
    let world = resolve
        .select_world(&[package], Some(world))
        .expect("the world exists");
    wit_component::embed_component_metadata(
        &mut module,
        &resolve,
        world,
        wit_component::StringEncoding::UTF8,
    )
    .expect("metadata embeds");
    wit_component::ComponentEncoder::default()
        .module(&module)
        .expect("the module is accepted")
        .validate(true)
        .encode()
        .expect("the component encodes")
}

/// A misbehaving `evo:skill@0.1.0` skill whose `execute` body is `body` (WAT
/// instructions leaving an `i32` return-area pointer), with `manifest` as its manifest.
///
/// Memory layout: the return area is at 0, the manifest text at 64, and `cabi_realloc`
/// bumps upwards from 64 KiB.
pub fn wat_skill(manifest: &str, body: &str) -> Vec<u8> {
    let escaped: String = manifest.bytes().map(|b| format!("\\{b:02x}")).collect();
    let len = manifest.len();
    let core = format!(
        r#"(module
            (memory (export "memory") 2)
            (global $heap (mut i32) (i32.const 65536))
            (func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32)
                (local $ptr i32)
                (local.set $ptr (global.get $heap))
                (global.set $heap (i32.add (global.get $heap) (local.get 3)))
                (local.get $ptr))
            (data (i32.const 64) "{escaped}")
            (func (export "evo:skill/skill@0.1.0#manifest") (result i32)
                (i32.store (i32.const 0) (i32.const 64))
                (i32.store (i32.const 4) (i32.const {len}))
                (i32.const 0))
            (func (export "evo:skill/skill@0.1.0#execute") (param i32 i32) (result i32)
                {body}))"#
    );
    component_from_wat(&core, SKILL_WIT, "plugin")
}
