//! Reading a skill ZIP safely: every entry is checked before a byte is written.

use std::io::{Cursor, Read};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Most entries in one skill archive: a skill is a handful of files, not a node_modules.
pub const MAX_ENTRIES: usize = 1_000;
/// Largest single file, uncompressed: the largest component the engine accepts by
/// default (a Python skill's component is about 20 MB, a JavaScript one 12 MB).
pub const MAX_ENTRY_BYTES: u64 = 64 << 20;
/// Largest archive, uncompressed.
pub const MAX_TOTAL_BYTES: u64 = 100 << 20;
/// Highest compression ratio of an entry; text compresses ~10×, a zip bomb 1000×.
pub const MAX_RATIO: u64 = 100;

fn invalid(problem: impl Into<String>) -> Error {
    Error::InvalidSkillStructure(problem.into())
}

/// Files that make a directory a skill, in the order they identify it: an archive may
/// nest the skill in other folders, and the deepest directory holding the first of these
/// found is the skill.
const SKILL_FILES: [&str; 3] = ["SKILL.md", "skill.json", "skill.wasm"];

/// Called as extraction goes: bytes written so far, bytes in all.
pub type Progress<'a> = &'a mut (dyn FnMut(u64, u64) + Send);

/// Extracts `zip` under `into` and returns the skill's directory: the deepest directory
/// holding a SKILL.md, or failing that a skill.json or skill.wasm.
pub(super) fn extract(zip: &[u8], into: &Path, progress: Progress<'_>) -> Result<PathBuf> {
    let mut archive = zip::ZipArchive::new(Cursor::new(zip))
        .map_err(|e| invalid(format!("Invalid ZIP structure: not a ZIP archive ({e})")))?;
    if archive.len() > MAX_ENTRIES {
        return Err(invalid(format!(
            "Invalid ZIP structure: {} entries; at most {MAX_ENTRIES}",
            archive.len()
        )));
    }
    // Sizes from the central directory, for progress; each entry is checked again below.
    let declared: u64 = (0..archive.len())
        .filter_map(|i| archive.by_index_raw(i).ok().map(|e| e.size()))
        .fold(0, u64::saturating_add);
    let mut total = 0_u64;
    let mut found: Vec<(usize, PathBuf)> = Vec::new();
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
            std::fs::create_dir_all(&target).map_err(Error::io_at(&target))?;
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
            std::fs::create_dir_all(parent).map_err(Error::io_at(parent))?;
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
        std::fs::write(&target, &bytes).map_err(Error::io_at(&target))?;
        progress(total, declared.max(total));
        if let Some(rank) = SKILL_FILES
            .iter()
            .position(|f| relative.file_name().is_some_and(|n| n == *f))
        {
            found.push((rank, relative));
        }
    }
    // The deepest SKILL.md decides (else skill.json, else skill.wasm); one at the top of
    // the archive has no directory.
    let rank = found
        .iter()
        .map(|(rank, _)| *rank)
        .min()
        .ok_or_else(|| invalid("Invalid skill structure: SKILL.md is missing"))?;
    let deepest = found
        .iter()
        .filter(|(r, _)| *r == rank)
        .map(|(_, p)| p)
        .max_by_key(|p| p.components().count())
        .ok_or_else(|| invalid("Invalid skill structure: SKILL.md is missing"))?;
    match deepest.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(dir) => Ok(into.join(dir)),
        None => Err(invalid("Invalid ZIP structure: missing root directory")),
    }
}

/// An entry's name as a relative path with no `..`, no root and no drive.
fn safe_path(name: &str) -> Result<PathBuf> {
    match crate::skill::manifest::package::disclosure::clean_relative(name) {
        Some(clean) if !name.contains('\\') => Ok(clean),
        Some(_) => Err(invalid(format!(
            "Invalid ZIP structure: {name:?} is not a usable path"
        ))),
        None if Path::new(name)
            .components()
            .all(|c| matches!(c, std::path::Component::CurDir)) =>
        {
            Err(invalid(format!(
                "Invalid ZIP structure: {name:?} is not a usable path"
            )))
        }
        None => Err(invalid(format!(
            "Invalid ZIP structure: {name} points outside the archive (absolute or `..`)"
        ))),
    }
}

/// `dir` zipped in memory under its own name, so a directory installs through the same
/// checks as an archive. Symbolic links and special files (pipes, sockets, devices) are
/// refused, `.git` is left out, and the caps apply while walking, before anything large
/// is read.
pub(super) fn zip_dir(dir: &Path) -> Result<Vec<u8>> {
    zip_dir_except(dir, &[])
}

/// [`zip_dir`] leaving out the entries of `dir` named in `left_out` (the install record,
/// what an install built).
pub(super) fn zip_dir_except(dir: &Path, left_out: &[&str]) -> Result<Vec<u8>> {
    use std::io::Write as _;
    let dir = dir.canonicalize().map_err(Error::io_at(dir))?;
    let root = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| invalid("Invalid skill structure: install a skill's directory, not /"))?;
    let mut writer = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    let (mut entries, mut total) = (0_usize, 0_u64);
    let mut stack = vec![dir.clone()];
    while let Some(current) = stack.pop() {
        let mut children: Vec<_> = std::fs::read_dir(&current)
            .map_err(Error::io_at(&current))?
            .flatten()
            .collect();
        children.sort_by_key(std::fs::DirEntry::file_name);
        for child in children {
            if current == dir && left_out.iter().any(|name| child.file_name() == **name) {
                continue;
            }
            let path = child.path();
            let relative = path.strip_prefix(&dir).unwrap_or(&path);
            let kind = child.file_type().map_err(Error::io_at(&path))?;
            if kind.is_symlink() {
                return Err(invalid(format!(
                    "Invalid skill structure: {} is a symbolic link",
                    relative.display()
                )));
            }
            if kind.is_dir() {
                if child.file_name() != ".git" {
                    stack.push(path);
                }
                continue;
            }
            // A FIFO would block the read forever; a socket or a device is not a file a
            // skill can ship.
            if !kind.is_file() {
                return Err(invalid(format!(
                    "Invalid skill structure: {} is not a regular file (a pipe, socket or device); remove it and install again",
                    relative.display()
                )));
            }
            entries += 1;
            total += child.metadata().map_err(Error::io_at(&path))?.len();
            if entries > MAX_ENTRIES || total > MAX_TOTAL_BYTES {
                return Err(invalid(format!(
                    "Invalid skill structure: {} holds more than {MAX_ENTRIES} files or {MAX_TOTAL_BYTES} bytes",
                    dir.display()
                )));
            }
            let name = format!("{root}/{}", relative.to_string_lossy().replace('\\', "/"));
            let bytes = std::fs::read(&path).map_err(Error::io_at(&path))?;
            writer
                .start_file(name, options)
                .and_then(|()| writer.write_all(&bytes).map_err(Into::into))
                .map_err(|e| Error::Engine(format!("zipping {}: {e}", path.display())))?;
        }
    }
    writer
        .finish()
        .map(Cursor::into_inner)
        .map_err(|e| Error::Engine(format!("zipping {}: {e}", dir.display())))
}
