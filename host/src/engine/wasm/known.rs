//! What the engine remembers about each component file it has loaded, so that loading
//! it again reads neither the component nor its compiled code until the first call.
//!
//! Beside the compile cache, one small record per file: the file's fingerprint (device,
//! inode, size, modification and change times, and a hash of its first and last 4 KiB)
//! and what was learnt from its bytes (SHA-256, API version, SDK stamp, manifest). When
//! the fingerprint still matches, the record stands for the bytes, as git's index stands
//! for a work tree: the change time moves on every write and cannot be set back by the
//! file's owner, and the sampled bytes catch a rewrite of either end. A file that
//! changed in any of these is read and hashed again. As in git ("racy clean" entries),
//! a file changed within [`SETTLE`] of its fingerprint is not remembered: timestamps
//! are as coarse as a clock tick, and a second write in the same tick would keep them.
//!
//! A record is written atomically (temp file + rename); one that cannot be read is
//! ignored. Like the compile cache, it can only make a load faster, never fail one.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Bytes sampled at each end of the file.
const SAMPLE: u64 = 4096;
/// How long after its last change a file is remembered.
const SETTLE: std::time::Duration = std::time::Duration::from_secs(2);

/// A file's identity and the state of its bytes, as cheap to read as a `stat`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Fingerprint {
    dev: u64,
    ino: u64,
    len: u64,
    mtime_ns: i128,
    ctime_ns: i128,
    sample: String,
}

impl Fingerprint {
    /// The fingerprint of the file at `path` as it is now.
    pub(super) fn of(path: &Path) -> std::io::Result<Self> {
        use std::os::unix::fs::MetadataExt;
        let mut file = File::open(path)?;
        let meta = file.metadata()?;
        let nanos = |secs: i64, nsec: i64| i128::from(secs) * 1_000_000_000 + i128::from(nsec);
        let mut hasher = Sha256::new();
        let mut buf = vec![0; SAMPLE as usize];
        let head = read_up_to(&mut file, &mut buf)?;
        hasher.update(&buf[..head]);
        if meta.len() > SAMPLE {
            file.seek(SeekFrom::Start(
                meta.len().saturating_sub(SAMPLE).max(SAMPLE),
            ))?;
            let tail = read_up_to(&mut file, &mut buf)?;
            hasher.update(&buf[..tail]);
        }
        Ok(Self {
            dev: meta.dev(),
            ino: meta.ino(),
            len: meta.len(),
            mtime_ns: nanos(meta.mtime(), meta.mtime_nsec()),
            ctime_ns: nanos(meta.ctime(), meta.ctime_nsec()),
            sample: hex::encode(&hasher.finalize()[..16]),
        })
    }

    /// Whether the file changed so recently that a write in the same clock tick could
    /// still leave this fingerprint unchanged.
    fn unsettled(&self, settle: std::time::Duration) -> bool {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i128);
        let changed = self.ctime_ns.max(self.mtime_ns);
        now - changed < settle.as_nanos() as i128
    }
}

fn read_up_to(file: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..])? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}

/// What was learnt from a component file's bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct Known {
    /// SHA-256 of the bytes: the compile cache's key.
    pub(super) digest: String,
    pub(super) api_version: String,
    pub(super) sdk: Option<String>,
    /// The manifest JSON, as validated when the file was first loaded.
    pub(super) manifest: String,
    /// For a plain component, what its bytes said (and the sidecar it was read with).
    #[serde(default)]
    pub(super) plain: Option<KnownPlain>,
}

/// What a plain component's bytes said, read with the sidecar whose key is `sidecar`
/// (the component's name, and so its skills' names, come from it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct KnownPlain {
    pub(super) sidecar: String,
    pub(super) learnt: super::plain::Learnt,
}

/// A key for a plain component's sidecar manifest as read: equal keys, equal sidecars.
pub(super) fn sidecar_key(sidecar: Option<&crate::skill::manifest::RawMeta>) -> String {
    // `RawMeta` is read, never written: its debug form stands for its content (object
    // keys in order), and a format that changed with a release only costs a reload.
    let text = format!("{sidecar:?}");
    hex::encode(&Sha256::digest(text.as_bytes())[..16])
}

/// The Evo that makes records, and the way it describes a component: a record made by
/// another release, or before that way changed (the number goes up with every change to
/// what is learnt from a component, such as the schemas derived from its WIT types), is
/// not used, and the file is read again.
const MADE_BY: &str = concat!(env!("CARGO_PKG_VERSION"), "+described.3");

#[derive(Serialize, Deserialize)]
struct Record {
    #[serde(default)]
    made_by: String,
    path: PathBuf,
    fingerprint: Fingerprint,
    known: Known,
}

/// The records, one file each, in `dir`.
#[derive(Debug, Clone)]
pub(super) struct KnownFiles {
    dir: PathBuf,
    settle: std::time::Duration,
}

impl KnownFiles {
    pub(super) fn new(dir: PathBuf) -> Self {
        Self {
            dir,
            settle: SETTLE,
        }
    }

    fn record_path(&self, path: &Path) -> PathBuf {
        let key = Sha256::digest(path.as_os_str().as_encoded_bytes());
        self.dir.join(format!("{}.json", hex::encode(&key[..16])))
    }

    /// What is known about the file at `path` if it has not changed since: `None` when
    /// nothing is, or it changed.
    pub(super) fn get(&self, path: &Path, now: &Fingerprint) -> Option<Known> {
        let text = std::fs::read(self.record_path(path)).ok()?;
        let record: Record = serde_json::from_slice(&text).ok()?;
        (record.made_by == MADE_BY && record.path == path && record.fingerprint == *now)
            .then_some(record.known)
    }

    /// Remembers `known` for the file at `path` with fingerprint `fingerprint` (taken
    /// before its bytes were read, so that a write in between makes the record stale
    /// rather than wrong).
    pub(super) fn put(&self, path: &Path, fingerprint: Fingerprint, known: Known) {
        if fingerprint.unsettled(self.settle) {
            return;
        }
        let record = Record {
            made_by: MADE_BY.to_owned(),
            path: path.to_owned(),
            fingerprint,
            known,
        };
        let written = (|| -> std::io::Result<()> {
            std::fs::create_dir_all(&self.dir)?;
            let mut tmp = tempfile::NamedTempFile::new_in(&self.dir)?;
            tmp.write_all(&serde_json::to_vec(&record).map_err(std::io::Error::other)?)?;
            tmp.persist(self.record_path(path)).map_err(|e| e.error)?;
            Ok(())
        })();
        if let Err(e) = written {
            tracing::warn!(dir = %self.dir.display(), error = %e, "could not remember a loaded component");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known(digest: &str) -> Known {
        Known {
            digest: digest.into(),
            api_version: "0.1.0".into(),
            sdk: None,
            manifest: "{}".into(),
            plain: None,
        }
    }

    /// Records files however recently they changed (the tests' files are all new).
    fn settled(dir: PathBuf) -> KnownFiles {
        KnownFiles {
            settle: std::time::Duration::ZERO,
            ..KnownFiles::new(dir)
        }
    }

    #[test]
    fn a_file_changed_just_now_is_not_remembered() {
        let dir = tempfile::tempdir().unwrap();
        let files = KnownFiles::new(dir.path().to_owned());
        let path = dir.path().join("skill.wasm");
        std::fs::write(&path, b"x").unwrap();
        let now = Fingerprint::of(&path).unwrap();
        files.put(&path, now.clone(), known("a"));
        assert_eq!(files.get(&path, &now), None);
    }

    #[test]
    fn a_record_stands_for_the_file_until_it_changes() {
        let dir = tempfile::tempdir().unwrap();
        let files = settled(dir.path().join("known"));
        let path = dir.path().join("skill.wasm");
        std::fs::write(&path, vec![7u8; 10_000]).unwrap();
        let before = Fingerprint::of(&path).unwrap();
        assert_eq!(files.get(&path, &before), None);
        files.put(&path, before.clone(), known("a"));
        assert_eq!(files.get(&path, &before), Some(known("a")));

        // Same size, the modification time set back, the last byte changed: even within
        // one clock tick (same change time), the sampled end tells.
        let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
        for at in [9_999, 0] {
            let mut bytes = std::fs::read(&path).unwrap();
            bytes[at] = 8;
            std::fs::write(&path, &bytes).unwrap();
            File::options()
                .write(true)
                .open(&path)
                .unwrap()
                .set_modified(mtime)
                .unwrap();
            let after = Fingerprint::of(&path).unwrap();
            assert_ne!(after, before);
            assert_eq!(files.get(&path, &after), None);
        }

        // Another path never answers for this one.
        let other = dir.path().join("other.wasm");
        std::fs::copy(&path, &other).unwrap();
        assert_eq!(files.get(&other, &Fingerprint::of(&other).unwrap()), None);
    }

    #[test]
    fn a_record_made_by_another_evo_is_ignored() {
        // An upgrade may describe a component differently (a schema derived from its
        // WIT types that changed): what an older Evo learnt is read again.
        let dir = tempfile::tempdir().unwrap();
        let files = settled(dir.path().to_owned());
        let path = dir.path().join("skill.wasm");
        std::fs::write(&path, b"x").unwrap();
        let now = Fingerprint::of(&path).unwrap();
        files.put(&path, now.clone(), known("a"));
        let mut record: serde_json::Value =
            serde_json::from_slice(&std::fs::read(files.record_path(&path)).unwrap()).unwrap();
        assert_eq!(record["made_by"], MADE_BY);
        assert_eq!(files.get(&path, &now), Some(known("a")));
        for older in [
            serde_json::json!("0.0.9+described.2"),
            serde_json::Value::Null,
        ] {
            match older {
                serde_json::Value::Null => record.as_object_mut().unwrap().remove("made_by"),
                older => record
                    .as_object_mut()
                    .unwrap()
                    .insert("made_by".into(), older),
            };
            std::fs::write(files.record_path(&path), record.to_string()).unwrap();
            assert_eq!(files.get(&path, &now), None, "{record}");
        }
    }

    #[test]
    fn a_damaged_record_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let files = settled(dir.path().to_owned());
        let path = dir.path().join("skill.wasm");
        std::fs::write(&path, b"x").unwrap();
        let now = Fingerprint::of(&path).unwrap();
        files.put(&path, now.clone(), known("a"));
        assert_eq!(files.get(&path, &now), Some(known("a")));
        std::fs::write(files.record_path(&path), b"{ not json").unwrap();
        assert_eq!(files.get(&path, &now), None);
    }
}
