//! A model file checked before it is loaded: `evo model install` records the file's
//! SHA-256 with its size and modification time beside it (`.FILE.verified`); a load
//! that finds the size and time unchanged trusts the record, and one that finds them
//! changed hashes the file again (a third of a second for 100 MB), so bytes written
//! into an installed model are caught before they produce noise.

use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{MODEL_FILE, MODEL_SHA256, install_command};
use crate::error::{Error, Result};

/// What a verified file was.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Record {
    sha256: String,
    bytes: u64,
    /// Nanoseconds since the epoch.
    modified: u128,
}

/// SHA-256 of the file at `path`, in hex.
pub(crate) fn sha256_of(path: &Path) -> Result<String> {
    let mut file = std::fs::File::open(path).map_err(Error::io_at(path))?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher).map_err(Error::io_at(path))?;
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

/// Where the record of the model file `path` is kept.
fn record_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    path.with_file_name(format!(".{name}.verified"))
}

/// The size and modification time of `path` now.
fn stamp(path: &Path) -> Result<(u64, u128)> {
    let meta = std::fs::metadata(path).map_err(Error::io_at(path))?;
    let modified = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    Ok((meta.len(), modified))
}

/// Records that `path` (just installed, or just checked) has the SHA-256 `sha256`. The
/// record is written through a temporary file and a rename.
pub(crate) fn record(path: &Path, sha256: &str) -> Result<()> {
    let (bytes, modified) = stamp(path)?;
    let record = Record {
        sha256: sha256.to_owned(),
        bytes,
        modified,
    };
    let target = record_path(path);
    let dir = target.parent().unwrap_or(Path::new("."));
    let staging = tempfile::NamedTempFile::new_in(dir).map_err(Error::io_at(dir))?;
    let text = serde_json::to_vec(&record).unwrap_or_default();
    std::fs::write(staging.path(), text).map_err(Error::io_at(staging.path()))?;
    staging
        .persist(&target)
        .map_err(|e| Error::io_at(&target)(e.error))?;
    Ok(())
}

fn read_record(path: &Path) -> Option<Record> {
    let text = std::fs::read(record_path(path)).ok()?;
    serde_json::from_slice(&text).ok()
}

/// Whether `path` exists with the size and time its record holds (a file Evo wrote
/// and nothing changed since).
pub(crate) fn unchanged(path: &Path) -> bool {
    read_record(path).is_some_and(|r| stamp(path).is_ok_and(|s| s == (r.bytes, r.modified)))
}

/// Checks the model file at `path` before it is loaded: against its install record
/// when it has one (hashed again only if its size or time changed), against the pinned
/// [`MODEL_SHA256`] when it is the default model without one. A file Evo did not
/// install (`EVO_LLM=local:PATH`) has neither and is loaded as it is.
pub fn verify(path: &Path) -> Result<()> {
    let expected = match read_record(path) {
        Some(record) => {
            if stamp(path)? == (record.bytes, record.modified) {
                return Ok(());
            }
            record.sha256
        }
        None if path.file_name().is_some_and(|n| n == MODEL_FILE) => MODEL_SHA256.to_owned(),
        None => return Ok(()),
    };
    let digest = sha256_of(path)?;
    if digest != expected {
        return Err(Error::LocalModel {
            path: path.to_owned(),
            reason: format!(
                "it changed since it was installed (its SHA-256 is {digest}, not the {expected} it was installed with): it is damaged or was replaced; install it again (`{}`, or `evo model install --file FILE.gguf`)",
                install_command()
            ),
        });
    }
    // The same bytes with a new time (a copy, a `touch`): not hashed again next time.
    record(path, &digest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_changed_after_its_record_is_refused_and_an_untouched_one_is_not_hashed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.gguf");
        std::fs::write(&path, b"weights").unwrap();
        verify(&path).unwrap();
        record(&path, &sha256_of(&path).unwrap()).unwrap();
        verify(&path).unwrap();

        // The same bytes, a new time: accepted, and recorded again.
        let later = std::time::SystemTime::now() + std::time::Duration::from_secs(5);
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(later)
            .unwrap();
        verify(&path).unwrap();
        assert_eq!(
            read_record(&path).unwrap().modified,
            stamp(&path).unwrap().1
        );

        // Other bytes of the same size.
        std::fs::write(&path, b"garbage").unwrap();
        let err = verify(&path).unwrap_err();
        assert_eq!(err.code(), "LOCAL_MODEL_UNUSABLE");
        assert!(
            err.to_string().contains("changed since it was installed"),
            "{err}"
        );
    }
}
