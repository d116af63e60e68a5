//! Reads what a component says about itself before anything is compiled: which
//! `evo:skill` version it targets (from its import and export names, which every
//! toolchain writes), the SDK's stamp if the Rust SDK built it, and the manifest that
//! `evo skill build` embeds ([`MANIFEST_SECTION`]), so that a host can describe the
//! skill without instantiating it.

use wasmtime::wasmparser::{ComponentExternalKind, Parser, Payload};

use crate::error::{Error, Result};

/// The WIT package version this host implements, and the SDK builds against.
pub const API_VERSION: &str = env!("EVO_SKILL_API_VERSION");
/// Every version a component may be built against, oldest first: the frozen 0.1.0
/// (answered through the current one) and [`API_VERSION`].
pub const SUPPORTED_VERSIONS: [&str; 2] = ["0.1.0", API_VERSION];
/// The package every skill interface belongs to.
const PACKAGE: &str = "evo:skill/";
/// Custom section written by `evo-guest`.
const SDK_SECTION: &str = "evo:sdk";
/// Custom section, at the component's top level, holding the skill's manifest (the JSON
/// its `manifest` export returns), written by `evo skill build` ([`with_manifest`]).
pub const MANIFEST_SECTION: &str = "evo:manifest";
/// Custom section holding a WIT package's doc comments (a version byte, then JSON), as
/// `wit-component` writes it.
const DOCS_SECTION: &str = "package-docs";

/// What a component declares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ComponentInfo {
    /// The `evo:skill` version of its `skill` export.
    pub api_version: String,
    /// The SDK stamp (`evo-guest 0.1.0; evo:skill@0.1.0`), when present.
    pub sdk: Option<String>,
    /// The embedded manifest (`MANIFEST_SECTION`), when present: not yet validated.
    pub manifest: Option<String>,
}

/// What the top level of a component declares, read without compiling it.
pub(super) struct Scan {
    /// Names of the instances (interfaces) it exports.
    pub(super) exports: Vec<String>,
    /// Names of what it imports.
    pub(super) imports: Vec<String>,
    sdk: Option<String>,
    manifest: Option<String>,
    /// The `package-docs` section: the WIT doc comments of its package, when kept.
    pub(super) docs: Option<Vec<u8>>,
}

impl Scan {
    /// Whether it is an Evo skill (exports `evo:skill/skill`) rather than a plain
    /// component.
    pub(super) fn is_evo_skill(&self) -> bool {
        self.exports
            .iter()
            .any(|e| e.starts_with("evo:skill/skill"))
    }
}

/// Checks that `bytes` is a component exporting a supported `evo:skill/skill`.
pub fn inspect(skill: &str, bytes: &[u8]) -> Result<ComponentInfo> {
    checked(skill, scan(skill, bytes)?)
}

/// Refuses `bytes` unless they start as a component does (not a core module, not
/// another kind of file); `skill` names them in the error.
pub(crate) fn check_component_header(skill: &str, bytes: &[u8]) -> Result<()> {
    if Parser::is_component(bytes) {
        return Ok(());
    }
    let reason = if Parser::is_core_wasm(bytes) {
        "it is a core module".to_owned()
    } else {
        "the file does not start with the WebAssembly magic number".to_owned()
    };
    Err(Error::InvalidComponent {
        skill: skill.to_owned(),
        reason,
    })
}

/// Reads the top level of the component in `bytes`.
pub(super) fn scan(skill: &str, bytes: &[u8]) -> Result<Scan> {
    check_component_header(skill, bytes)?;

    let mut exports = Vec::new();
    let mut imports = Vec::new();
    let mut sdk = None;
    let mut manifest = None;
    let mut docs = None;
    let mut depth = 0usize;
    for payload in Parser::new(0).parse_all(bytes) {
        let payload = payload.map_err(|e| Error::InvalidComponent {
            skill: skill.to_owned(),
            reason: e.to_string(),
        })?;
        match payload {
            Payload::ModuleSection { .. } | Payload::ComponentSection { .. } => depth += 1,
            Payload::End(_) => depth = depth.saturating_sub(1),
            Payload::ComponentExportSection(reader) if depth == 0 => {
                for export in reader {
                    let export = export.map_err(|e| invalid(skill, &e))?;
                    if export.kind == ComponentExternalKind::Instance {
                        exports.push(export.name.name.to_owned());
                    }
                }
            }
            Payload::ComponentImportSection(reader) if depth == 0 => {
                for import in reader {
                    let import = import.map_err(|e| invalid(skill, &e))?;
                    imports.push(import.name.name.to_owned());
                }
            }
            Payload::CustomSection(section) if section.name() == SDK_SECTION => {
                sdk = Some(String::from_utf8_lossy(section.data()).into_owned());
            }
            Payload::CustomSection(section) if section.name() == DOCS_SECTION && depth == 0 => {
                docs = Some(section.data().to_vec());
            }
            Payload::CustomSection(section) if section.name() == MANIFEST_SECTION && depth == 0 => {
                if manifest.is_some() {
                    return Err(invalid(
                        skill,
                        &format!("it has more than one `{MANIFEST_SECTION}` section"),
                    ));
                }
                let text = std::str::from_utf8(section.data()).map_err(|_| {
                    invalid(
                        skill,
                        &format!("its `{MANIFEST_SECTION}` section is not UTF-8"),
                    )
                })?;
                manifest = Some(text.to_owned());
            }
            _ => {}
        }
    }
    Ok(Scan {
        exports,
        imports,
        sdk,
        manifest,
        docs,
    })
}

/// What `scan` found, if it is an Evo skill of a supported version.
fn checked(skill: &str, scan: Scan) -> Result<ComponentInfo> {
    let Scan {
        exports,
        imports,
        sdk,
        manifest,
        ..
    } = scan;
    let skill_exports: Vec<&String> = exports.iter().filter(|e| e.starts_with(PACKAGE)).collect();
    let Some(export) = skill_exports
        .iter()
        .find(|e| e.starts_with("evo:skill/skill"))
    else {
        let found = if exports.is_empty() {
            "nothing".to_owned()
        } else {
            exports.join(", ")
        };
        return Err(Error::NotASkill {
            skill: skill.to_owned(),
            reason: format!("it must export `evo:skill/skill@{API_VERSION}` but exports {found}"),
        });
    };
    let api_version = version_of(export).unwrap_or_default().to_owned();
    let context_versions = imports
        .iter()
        .filter(|i| i.starts_with(PACKAGE))
        .filter_map(|i| version_of(i));
    for version in std::iter::once(api_version.as_str()).chain(context_versions) {
        if !is_supported(version) {
            return Err(Error::IncompatibleApi {
                skill: skill.to_owned(),
                found: if version.is_empty() {
                    "(unversioned)".to_owned()
                } else {
                    version.to_owned()
                },
                supported: supported_versions(),
            });
        }
    }
    Ok(ComponentInfo {
        api_version,
        sdk,
        manifest,
    })
}

/// `component` with `manifest` as its [`MANIFEST_SECTION`], replacing any it had. The
/// section is a custom section at the top level, after everything else: it changes
/// nothing the component does.
pub fn with_manifest(skill: &str, component: &[u8], manifest: &str) -> Result<Vec<u8>> {
    let mut out = without_manifest(skill, component, manifest.len() + 32)?;
    let name = MANIFEST_SECTION.as_bytes();
    let mut body = Vec::with_capacity(manifest.len() + name.len() + 5);
    leb128(&mut body, name.len());
    body.extend_from_slice(name);
    body.extend_from_slice(manifest.as_bytes());
    out.push(0);
    leb128(&mut out, body.len());
    out.extend_from_slice(&body);
    Ok(out)
}

/// `component` without its top-level [`MANIFEST_SECTION`], if it has one, with room for
/// `more` bytes after it: the component as its compiled code sees it.
pub(super) fn without_manifest(skill: &str, component: &[u8], more: usize) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(component.len() + more);
    let mut kept = 0;
    let mut depth = 0usize;
    for payload in Parser::new(0).parse_all(component) {
        match payload.map_err(|e| invalid(skill, &e))? {
            Payload::ModuleSection { .. } | Payload::ComponentSection { .. } => depth += 1,
            Payload::End(_) => depth = depth.saturating_sub(1),
            Payload::CustomSection(section) if section.name() == MANIFEST_SECTION && depth == 0 => {
                // The section's id (0) and size come before its name and data.
                let body = section.range();
                let start = section_start(component, body.clone()).ok_or_else(|| {
                    invalid(
                        skill,
                        &format!("its `{MANIFEST_SECTION}` section is malformed"),
                    )
                })?;
                out.extend_from_slice(&component[kept..start]);
                kept = body.end;
            }
            _ => {}
        }
    }
    out.extend_from_slice(&component[kept..]);
    Ok(out)
}

/// Appends `value` as an unsigned LEB128.
pub(super) fn leb128(out: &mut Vec<u8>, mut value: usize) {
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

/// Where the custom section whose name and data are `body` starts: its id byte, then
/// its size as a LEB128 of 1 to 5 bytes (padded ones too).
fn section_start(bytes: &[u8], body: std::ops::Range<usize>) -> Option<usize> {
    (1..=5).find_map(|width| {
        let size_at = body.start.checked_sub(width)?;
        let id_at = size_at.checked_sub(1)?;
        let (size, used) = read_leb128(&bytes[size_at..body.start])?;
        (bytes[id_at] == 0 && used == width && size == body.len()).then_some(id_at)
    })
}

fn read_leb128(bytes: &[u8]) -> Option<(usize, usize)> {
    let mut value = 0usize;
    for (i, byte) in bytes.iter().enumerate().take(5) {
        value |= usize::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

fn invalid(skill: &str, error: &dyn std::fmt::Display) -> Error {
    Error::InvalidComponent {
        skill: skill.to_owned(),
        reason: error.to_string(),
    }
}

fn version_of(name: &str) -> Option<&str> {
    name.split_once('@').map(|(_, v)| v)
}

/// Semver for 0.x, against each supported version: the same minor version, and a
/// patch no newer than ours (a newer patch may use additions this host does not have).
fn is_supported(version: &str) -> bool {
    let parse = |v: &str| -> Option<(u64, u64, u64)> {
        let mut parts = v.split('.').map(|p| p.parse::<u64>().ok());
        Some((parts.next()??, parts.next()??, parts.next()??))
    };
    SUPPORTED_VERSIONS
        .iter()
        .any(|ours| match (parse(version), parse(ours)) {
            (Some((0, minor, patch)), Some((0, our_minor, our_patch))) => {
                minor == our_minor && patch <= our_patch
            }
            (Some((major, _, patch)), Some((our_major, _, our_patch))) => {
                major == our_major && patch <= our_patch
            }
            _ => false,
        })
}

/// The supported versions, as a sentence names them (`0.1.0 and 0.2.0`).
fn supported_versions() -> String {
    match SUPPORTED_VERSIONS.split_last() {
        Some((last, [])) => (*last).to_owned(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_rules() {
        assert!(is_supported("0.1.0"));
        assert!(!is_supported("0.1.1"));
        assert!(is_supported("0.2.0"));
        assert!(!is_supported("0.2.1"));
        assert!(!is_supported("0.3.0"));
        assert!(!is_supported("1.0.0"));
        assert_eq!(supported_versions(), "0.1.0 and 0.2.0");
        assert!(!is_supported(""));
        assert!(!is_supported("0.1"));
    }

    #[test]
    fn non_components_are_refused_with_the_reason() {
        let err = inspect("x", b"\0asm\x01\0\0\0").unwrap_err();
        assert_eq!(err.code(), "INVALID_COMPONENT");
        assert!(err.to_string().contains("it is a core module"), "{err}");
        let err = inspect("x", b"hello").unwrap_err();
        assert!(err.to_string().contains("magic number"), "{err}");
    }

    /// The manifest sections at the top level of `bytes`.
    fn manifests(bytes: &[u8]) -> Vec<String> {
        let mut depth = 0usize;
        let mut found = Vec::new();
        for payload in Parser::new(0).parse_all(bytes) {
            match payload.unwrap() {
                Payload::ModuleSection { .. } | Payload::ComponentSection { .. } => depth += 1,
                Payload::End(_) => depth = depth.saturating_sub(1),
                Payload::CustomSection(s) if s.name() == MANIFEST_SECTION && depth == 0 => {
                    found.push(String::from_utf8(s.data().to_vec()).unwrap());
                }
                _ => {}
            }
        }
        found
    }

    #[test]
    fn a_manifest_is_embedded_once_and_replaced_when_embedded_again() {
        let empty = b"\0asm\x0d\0\x01\0";
        let once = with_manifest("x", empty, r#"{"name":"a"}"#).unwrap();
        assert_eq!(manifests(&once), [r#"{"name":"a"}"#]);
        let long = "b".repeat(300);
        let twice = with_manifest("x", &once, &long).unwrap();
        assert_eq!(manifests(&twice), [long]);
        let back = with_manifest("x", &twice, r#"{"name":"a"}"#).unwrap();
        assert_eq!(back, once);
    }
}
