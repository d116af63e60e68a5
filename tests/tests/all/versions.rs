//! Components that are not Evo skills of a supported version are refused before they
//! are instantiated, with a message naming what was found and what is supported.

use evo_host::grants::Policy;
use evo_tests::{SKILL_WIT, component_from_wat, engine};

const CORE: &str = r#"(module
    (memory (export "memory") 1)
    (func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32) (i32.const 1024))
    (func (export "evo:skill/skill@VERSION#manifest") (result i32) unreachable)
    (func (export "evo:skill/skill@VERSION#execute") (param i32 i32) (result i32) unreachable))"#;

#[tokio::test]
async fn another_api_version_is_refused_naming_both_versions() {
    let wit = SKILL_WIT.replace("evo:skill@0.2.0", "evo:skill@0.3.0");
    let bytes = component_from_wat(&CORE.replace("VERSION", "0.3.0"), &wit, "plugin");
    let err = engine()
        .load_bytes("future.wasm", bytes, &Policy::default())
        .await
        .unwrap_err();
    assert_eq!(err.code(), "INCOMPATIBLE_API_VERSION");
    assert_eq!(
        err.to_string(),
        "future.wasm was built for evo:skill@0.3.0, but this host supports evo:skill 0.1.0 and 0.2.0; \
         rebuild the skill with a matching evo-guest, or use an evo release that supports 0.3.0"
    );
}

#[tokio::test]
async fn a_component_of_another_world_is_not_a_skill() {
    let wit = "package other:tool; world tool { export run: func() -> string; }";
    let core = r#"(module
        (memory (export "memory") 1)
        (func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32) (i32.const 1024))
        (func (export "run") (result i32) unreachable))"#;
    let bytes = component_from_wat(core, wit, "tool");
    let err = engine()
        .load_bytes("tool.wasm", bytes, &Policy::default())
        .await
        .unwrap_err();
    assert_eq!(err.code(), "NOT_A_SKILL");
    assert!(
        err.to_string()
            .contains("it must export `evo:skill/skill@0.2.0`"),
        "{err}"
    );
}

#[tokio::test]
async fn a_core_module_is_not_a_component() {
    let bytes = wat::parse_str("(module)").unwrap();
    let err = engine()
        .load_bytes("core.wasm", bytes, &Policy::default())
        .await
        .unwrap_err();
    assert_eq!(err.code(), "INVALID_COMPONENT");
    assert!(err.to_string().contains("it is a core module"), "{err}");
}

#[tokio::test]
async fn garbage_is_not_a_component() {
    let err = engine()
        .load_bytes(
            "junk.wasm",
            b"\0asm\x0d\0\x01\0junk".to_vec(),
            &Policy::default(),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), "INVALID_COMPONENT", "{err}");
}

/// Released versions of the contract and the SHA-256 of their WIT. A released version is
/// frozen: an edit fails here; a change goes to a new `since_v<version>` directory.
const RELEASED: [(&str, &str); 2] = [
    (
        "0.1.0",
        "51f9b21d2d5cba1c3386ea706dbb574573aff42f1d504fd09de77c69298bb4af",
    ),
    (
        "0.2.0",
        "1ae2e72e28539d7b684baa7afad59ce6d03568acb63b35165d430a7c3d394acf",
    ),
];

#[test]
fn the_contract_is_one_frozen_file_per_version_that_host_and_sdk_vendor() {
    use sha2::{Digest, Sha256};

    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let read =
        |path: &str| std::fs::read(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"));
    // The host keeps every released version, each unchanged.
    for (version, digest) in RELEASED {
        let path = format!("host/wit/since_v{version}/skill.wit");
        assert_eq!(
            hex::encode(Sha256::digest(read(&path))),
            digest,
            "{path} changed, but evo:skill@{version} is released and frozen: put the change in a new version"
        );
    }
    // wit/skill.wit is the newest, which the SDK builds against.
    let (version, _) = RELEASED[RELEASED.len() - 1];
    let canonical = read(&format!("host/wit/since_v{version}/skill.wit"));
    for copy in [
        "wit/skill.wit".to_owned(),
        format!("guest-sdk/wit/since_v{version}/skill.wit"),
    ] {
        assert!(
            read(&copy) == canonical,
            "{copy} differs from host/wit/since_v{version}/skill.wit"
        );
    }
    assert_eq!(evo_host::engine::wasm::API_VERSION, version);
    let sdk = String::from_utf8(read("guest-sdk/src/lib.rs")).unwrap();
    assert!(
        sdk.contains(r#"pub const API_VERSION: &str = env!("EVO_SKILL_API_VERSION");"#),
        "the SDK's version comes from its vendored WIT"
    );
    assert!(
        SKILL_WIT.contains(&format!("package evo:skill@{version};")),
        "the tests build guests against the released contract"
    );
}
