//! Shorter function names in a component's `name` sections, as a trap shows them.
//!
//! rustc names each function of a Wasm module by its mangled symbol, hash and crate
//! disambiguators included (`_ZN10serde_json2de12Deserializer5error17h8d3d0d5b3f25055eE`).
//! A trap's guest backtrace shows those names demangled and without the hash
//! (`serde_json::de::Deserializer::error`), so `evo skill build` writes them that way
//! in the first place: the section shrinks by about a third and a trap reads the same.
//! Names that are not Rust symbols (a C++ or C guest's) are kept as they are.

use std::borrow::Cow;

use wasm_encoder::reencode::{RoundtripReencoder, utils};
use wasm_encoder::{NameMap, NameSection};
use wasmtime::wasmparser::{BinaryReader, BinaryReaderError, Name, NameSectionReader};

use crate::error::{Error, Result};

/// The first bytes of a component (magic, version 0x0d, layer 1).
const COMPONENT_HEADER: [u8; 8] = *b"\0asm\x0d\0\x01\0";
/// A core module nested in a component.
const CORE_MODULE_SECTION: u8 = 1;
const CUSTOM_SECTION: u8 = 0;

/// `component` with the function names of each core module at its top level demangled
/// and without their hashes. Anything else, nested components included, is copied
/// byte for byte; a component without names comes back unchanged.
pub fn with_short_names(skill: &str, component: &[u8]) -> Result<Vec<u8>> {
    let invalid = |e: String| Error::Engine(format!("{skill} is not a valid component: {e}"));
    if !component.starts_with(&COMPONENT_HEADER) {
        return Err(Error::Engine(format!(
            "{skill} is not a WebAssembly component (its header is not a component's)"
        )));
    }
    let mut out = Vec::with_capacity(component.len());
    out.extend_from_slice(&COMPONENT_HEADER);
    for section in sections(component, COMPONENT_HEADER.len()) {
        let (id, body) = section.map_err(|e| invalid(e.to_string()))?;
        if id == CORE_MODULE_SECTION {
            let module = module_with_short_names(body).map_err(invalid)?;
            push_section(&mut out, id, &module);
        } else {
            push_section(&mut out, id, body);
        }
    }
    Ok(out)
}

/// The core module `module` with its `name` section's function names shortened.
fn module_with_short_names(module: &[u8]) -> std::result::Result<Vec<u8>, String> {
    const HEADER: usize = 8;
    let header = module
        .get(..HEADER)
        .ok_or("a nested core module is shorter than its header")?;
    let mut out = Vec::with_capacity(module.len());
    out.extend_from_slice(header);
    for section in sections(module, HEADER) {
        let (id, body) = section.map_err(|e| e.to_string())?;
        let mut reader = BinaryReader::new(body, 0);
        if id == CUSTOM_SECTION && reader.read_string().map_err(|e| e.to_string())? == "name" {
            let at = reader.current_position();
            out.push(CUSTOM_SECTION);
            wasm_encoder::Encode::encode(&short_names(&body[at..], at)?, &mut out);
        } else {
            push_section(&mut out, id, body);
        }
    }
    Ok(out)
}

/// The name section `data` (after its own name) with its function names shortened and
/// every other subsection kept.
fn short_names(data: &[u8], offset: usize) -> std::result::Result<NameSection, String> {
    let mut names = NameSection::new();
    for subsection in NameSectionReader::new(BinaryReader::new(data, offset)) {
        match subsection.map_err(|e| e.to_string())? {
            Name::Function(map) => {
                let mut short = NameMap::new();
                for naming in map {
                    let naming = naming.map_err(|e| e.to_string())?;
                    short.append(naming.index, &readable(naming.name));
                }
                names.functions(&short);
            }
            other => {
                utils::parse_custom_name_subsection(&mut RoundtripReencoder, &mut names, other)
                    .map_err(|e| e.to_string())?
            }
        }
    }
    Ok(names)
}

/// A Rust symbol demangled without its hash; any other name as it is.
fn readable(name: &str) -> Cow<'_, str> {
    match rustc_demangle::try_demangle(name) {
        Ok(symbol) => Cow::Owned(format!("{symbol:#}")),
        Err(_) => Cow::Borrowed(name),
    }
}

/// The sections of a binary whose header ends at `start`: each one's id and body.
fn sections(
    bytes: &[u8],
    start: usize,
) -> impl Iterator<Item = std::result::Result<(u8, &[u8]), BinaryReaderError>> {
    let mut reader = BinaryReader::new(bytes.get(start..).unwrap_or_default(), start);
    let mut failed = false;
    std::iter::from_fn(move || {
        if failed || reader.eof() {
            return None;
        }
        let section = (|| {
            let id = reader.read_u8()?;
            let size = reader.read_var_u32()? as usize;
            Ok((id, reader.read_bytes(size)?))
        })();
        failed = section.is_err();
        Some(section)
    })
}

/// Appends a section: its id, its size as a LEB128, its body.
fn push_section(out: &mut Vec<u8>, id: u8, body: &[u8]) {
    out.push(id);
    super::inspect::leb128(out, body.len());
    out.extend_from_slice(body);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust_symbols_lose_their_hashes_and_other_names_stay() {
        assert_eq!(
            readable("_ZN10serde_json2de12Deserializer5error17h8d3d0d5b3f25055eE"),
            "serde_json::de::Deserializer::error"
        );
        assert_eq!(
            readable("_RNvNtCs8jb7XIKFSSy_5alloc3fmt6format"),
            "alloc::fmt::format"
        );
        assert_eq!(readable("__wasm_call_ctors"), "__wasm_call_ctors");
        assert_eq!(readable("_ZN2js8GCMarker4markEv"), "_ZN2js8GCMarker4markEv");
    }
}
