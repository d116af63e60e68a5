//! Reading a skill ZIP safely: every entry is checked before a byte is written.

use std::io::{Cursor, Read};
use std::path::{Component, Path, PathBuf};

use crate::error::{Error, Result};

/// Most entries in one skill archive: a skill is a handful of files, not a node_modules.
pub const MAX_ENTRIES: usize = 1_000;
/// Largest single file, uncompressed.
pub const MAX_ENTRY_BYTES: u64 = 20 << 20;
/// Largest archive, uncompressed.
pub const MAX_TOTAL_BYTES: u64 = 50 << 20;
/// Highest compression ratio of an entry; text compresses ~10×, a zip bomb 1000×.
pub const MAX_RATIO: u64 = 100;

fn invalid(problem: impl Into<String>) -> Error {
    Error::InvalidSkillStructure(problem.into())
}

/// Extracts `zip` under `into` and returns the skill's directory: the deepest directory
/// holding a SKILL.md (archives may nest the skill in another folder).
pub(super) fn extract(zip: &[u8], into: &Path) -> Result<PathBuf> {
    let mut archive = zip::ZipArchive::new(Cursor::new(zip))
        .map_err(|e| invalid(format!("Invalid ZIP structure: not a ZIP archive ({e})")))?;
    if archive.len() > MAX_ENTRIES {
        return Err(invalid(format!(
            "Invalid ZIP structure: {} entries; at most {MAX_ENTRIES}",
            archive.len()
        )));
    }
    let mut total = 0_u64;
    let mut skill_mds = Vec::new();
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i).map_err(|e| {
            invalid(format!(
                "Invalid ZIP structure: entry {i} is unreadable ({e})"
            ))
        })?;
        let raw_name = entry
            .name()
            .map_err(|e| {
                invalid(format!(
                    "Invalid ZIP structure: entry {i} has an unreadable name ({e})"
                ))
            })?
            .into_owned();
        if entry.is_symlink() {
            return Err(invalid(format!(
                "Invalid ZIP structure: {raw_name} is a symbolic link"
            )));
        }
        let relative = safe_path(&raw_name)?;
        let target = into.join(&relative);
        if entry.is_dir() {
            std::fs::create_dir_all(&target).map_err(|source| Error::Io {
                path: target,
                source,
            })?;
            continue;
        }
        let size = entry.size();
        if size > MAX_ENTRY_BYTES {
            return Err(invalid(format!(
                "Invalid ZIP structure: {raw_name} is {size} bytes; at most {MAX_ENTRY_BYTES}"
            )));
        }
        if size > 1024 && size / entry.compressed_size().max(1) > MAX_RATIO {
            return Err(invalid(format!(
                "Invalid ZIP structure: {raw_name} expands more than {MAX_RATIO}× (a zip bomb?)"
            )));
        }
        total += size;
        if total > MAX_TOTAL_BYTES {
            return Err(invalid(format!(
                "Invalid ZIP structure: more than {MAX_TOTAL_BYTES} bytes uncompressed"
            )));
        }
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|source| Error::Io {
                path: parent.to_owned(),
                source,
            })?;
        }
        // Read at most the declared size plus one byte: a lying header cannot make us
        // write more than the caps allow.
        let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        (&mut entry)
            .take(size + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| {
                invalid(format!(
                    "Invalid ZIP structure: {raw_name} is unreadable ({e})"
                ))
            })?;
        if bytes.len() as u64 > size {
            return Err(invalid(format!(
                "Invalid ZIP structure: {raw_name} is larger than its header says"
            )));
        }
        std::fs::write(&target, &bytes).map_err(|source| Error::Io {
            path: target.clone(),
            source,
        })?;
        if relative.file_name().is_some_and(|n| n == "SKILL.md") {
            skill_mds.push(relative);
        }
    }
    // The deepest SKILL.md decides; a SKILL.md at the top of the archive has no directory.
    let deepest = skill_mds
        .iter()
        .max_by_key(|p| p.components().count())
        .ok_or_else(|| invalid("Invalid skill structure: SKILL.md is missing"))?;
    match deepest.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(dir) => Ok(into.join(dir)),
        None => Err(invalid("Invalid ZIP structure: missing root directory")),
    }
}

/// An entry's name as a relative path with no `..`, no root and no drive.
fn safe_path(name: &str) -> Result<PathBuf> {
    let path = Path::new(name);
    let mut clean = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Normal(part) => clean.push(part),
            Component::CurDir => {}
            _ => {
                return Err(invalid(format!(
                    "Invalid ZIP structure: {name} points outside the archive (absolute or `..`)"
                )));
            }
        }
    }
    if clean.as_os_str().is_empty() || name.contains('\\') {
        return Err(invalid(format!(
            "Invalid ZIP structure: {name:?} is not a usable path"
        )));
    }
    Ok(clean)
}
