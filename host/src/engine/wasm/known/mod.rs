//! What the engine remembers about each component file it has loaded, so that loading
//! it again reads neither the component nor its compiled code until the first call.
//!
//! Beside the compile cache, one record per file: the file's fingerprint (device,
//! inode, size, modification and change times, and a CRC-32 of its first and of its
//! last 4 KiB)
//! and what was learnt from its bytes (SHA-256, API version, SDK stamp, manifest). When
//! the fingerprint still matches, the record stands for the bytes, as git's index stands
//! for a work tree: the change time moves on every write and cannot be set back by the
//! file's owner, and the sampled bytes catch a rewrite of either end. A file that
//! changed in any of these is read and hashed again. As in git ("racy clean" entries),
//! a file changed within [`SETTLE`] of its fingerprint is not remembered: timestamps
//! are as coarse as a clock tick, and a second write in the same tick would keep them.
//!
//! The records of every file are kept together, in one catalogue record read once per
//! engine: a host loading a thousand skills reads one file, not a thousand. It is
//! written atomically (temp file + rename), merged with what another process wrote
//! meanwhile; a file that cannot be read, or that another Evo wrote, is ignored. Two
//! processes writing at once may lose each other's newest records, which costs only a
//! reread of those components. Like the compile cache, it can only make a load faster,
//! never fail one.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

mod fingerprint;

pub(super) use fingerprint::Fingerprint;
pub(crate) use fingerprint::OpenComponent;

/// How long after its last change a file is remembered.
const SETTLE: std::time::Duration = std::time::Duration::from_secs(2);

/// What was learnt from a component file's bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct Known {
    /// SHA-256 of the bytes: the compile cache's key.
    pub(super) digest: String,
    pub(super) api_version: String,
    pub(super) sdk: Option<String>,
    /// The manifest JSON, as validated when the file was first loaded (none for a plain
    /// component).
    #[serde(default)]
    pub(super) manifest: Option<Manifest>,
    /// For a plain component, what its bytes said (and the sidecar it was read with).
    #[serde(default)]
    pub(super) plain: Option<KnownPlain>,
}

/// A manifest's JSON, held in the record as JSON rather than as a string of it: reading
/// a record neither unescapes nor copies it, and it is parsed once, into the skill's
/// manifest.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(transparent)]
pub(super) struct Manifest(Box<serde_json::value::RawValue>);

impl Manifest {
    /// `json`, if it is JSON.
    pub(super) fn new(json: String) -> Option<Self> {
        serde_json::value::RawValue::from_string(json)
            .ok()
            .map(Self)
    }

    pub(super) fn get(&self) -> &str {
        self.0.get()
    }
}

impl PartialEq for Manifest {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
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
const MADE_BY: &str = concat!(env!("CARGO_PKG_VERSION"), "+described.4");

#[derive(Serialize, Deserialize)]
struct Record {
    fingerprint: Fingerprint,
    known: Known,
}

/// A record as the file holds it: decoded only when its file is loaded, by the thread
/// that loads it, so that reading the catalogue record is one pass over its bytes. Its
/// text is shared with the file's as read (a copy of a record costs a count, not its
/// bytes).
#[derive(Clone)]
struct Raw {
    text: Arc<str>,
    at: std::ops::Range<usize>,
}

impl Raw {
    /// A record of its own.
    fn own(text: String) -> Self {
        let at = 0..text.len();
        Self {
            text: text.into(),
            at,
        }
    }

    /// `raw`, a part of `text`, shared with it.
    fn within(text: &Arc<str>, raw: &serde_json::value::RawValue) -> Self {
        let part = raw.get();
        let start = (part.as_ptr() as usize).wrapping_sub(text.as_ptr() as usize);
        match text.get(start..start.saturating_add(part.len())) {
            Some(found) if std::ptr::eq(found, part) => Self {
                text: Arc::clone(text),
                at: start..start + part.len(),
            },
            _ => Self::own(part.to_owned()),
        }
    }

    fn get(&self) -> &str {
        &self.text[self.at.clone()]
    }
}

impl Serialize for Raw {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let raw: &serde_json::value::RawValue =
            serde_json::from_str(self.get()).map_err(serde::ser::Error::custom)?;
        raw.serialize(serializer)
    }
}

/// The catalogue record as a file holds it: every component file's record, by path.
#[derive(Default, Serialize, Deserialize)]
struct Catalogue<R> {
    #[serde(default)]
    made_by: String,
    #[serde(default = "HashMap::new")]
    records: HashMap<PathBuf, R>,
}

/// The file's identity as last read: when it changes, another process wrote it.
type Stat = Option<(u64, u64, i128)>;

fn stat_of(path: &Path) -> Stat {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).ok()?;
    Some((
        meta.ino(),
        meta.len(),
        i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
    ))
}

/// What one engine holds of the catalogue record.
#[derive(Default)]
struct State {
    /// The records as last read from the file, with this engine's own added.
    records: HashMap<PathBuf, Raw>,
    /// Whether the file has been read, and what it was then.
    read: Option<Stat>,
    /// The records this engine added since it last wrote the file.
    unsaved: HashMap<PathBuf, Raw>,
    /// Batches open ([`KnownFiles::open_batch`]): the file is written when the last closes.
    batches: usize,
}

/// The catalogue record: what was learnt of every component file, in one file
/// (`catalogue.json` in `dir`), read once when the first component is loaded rather
/// than a file per component, and read again only when another process wrote it.
/// A load of many files ([`KnownFiles::open_batch`]) writes it once, at the end.
#[derive(Debug)]
pub(super) struct KnownFiles {
    dir: PathBuf,
    settle: std::time::Duration,
    state: Mutex<State>,
}

impl std::fmt::Debug for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("State")
            .field("records", &self.records.len())
            .field("unsaved", &self.unsaved.len())
            .field("batches", &self.batches)
            .finish()
    }
}

/// The file of the catalogue record in its directory.
const FILE: &str = "catalogue.json";

impl KnownFiles {
    pub(super) fn new(dir: PathBuf) -> Self {
        Self {
            dir,
            settle: SETTLE,
            state: Mutex::default(),
        }
    }

    fn file(&self) -> PathBuf {
        self.dir.join(FILE)
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The records in the file now, with its identity: none when it is missing, cannot
    /// be read, or was written by another Evo.
    fn read_file(&self) -> (HashMap<PathBuf, Raw>, Stat) {
        let file = self.file();
        let stat = stat_of(&file);
        let text: Option<Arc<str>> = std::fs::read_to_string(&file).ok().map(Into::into);
        let records = text
            .as_ref()
            .and_then(|text| {
                serde_json::from_str::<Catalogue<&serde_json::value::RawValue>>(text)
                    .ok()
                    .filter(|c| c.made_by == MADE_BY)
                    .map(|c| {
                        c.records
                            .into_iter()
                            .map(|(path, raw)| (path, Raw::within(text, raw)))
                            .collect()
                    })
            })
            .unwrap_or_default();
        (records, stat)
    }

    /// Reads the file into `state` when it has not been read, or (`again`) when
    /// another process wrote it since; this engine's unsaved records stay.
    fn refresh(&self, state: &mut State, again: bool) {
        let stale = match &state.read {
            None => true,
            Some(stat) => again && *stat != stat_of(&self.file()),
        };
        if stale {
            let (mut records, stat) = self.read_file();
            records.extend(state.unsaved.iter().map(|(p, r)| (p.clone(), r.clone())));
            state.records = records;
            state.read = Some(stat);
        }
    }

    /// What is known about the file at `path` if it has not changed since: `None` when
    /// nothing is, or it changed.
    pub(super) fn get(&self, path: &Path, now: &Fingerprint) -> Option<Known> {
        // Decoded outside the lock: the loads of a directory's skills run side by side.
        let decode = |raw: Option<Raw>| {
            serde_json::from_str::<Record>(raw?.get())
                .ok()
                .filter(|r| r.fingerprint == *now)
                .map(|r| r.known)
        };
        let raw = {
            let mut state = self.state();
            self.refresh(&mut state, false);
            state.records.get(path).cloned()
        };
        if let Some(known) = decode(raw) {
            return Some(known);
        }
        // Another process (an install beside a running server) may have learnt it.
        let raw = {
            let mut state = self.state();
            self.refresh(&mut state, true);
            state.records.get(path).cloned()
        };
        decode(raw)
    }

    /// Remembers `known` for the file at `path` with fingerprint `fingerprint` (taken
    /// before its bytes were read, so that a write in between makes the record stale
    /// rather than wrong). Written at once, or when the batch open closes.
    pub(super) fn put(&self, path: &Path, fingerprint: Fingerprint, known: Known) {
        if fingerprint.unsettled(self.settle) {
            return;
        }
        let Ok(raw) = serde_json::to_string(&Record { fingerprint, known }).map(Raw::own) else {
            return;
        };
        let mut state = self.state();
        state.records.insert(path.to_owned(), raw.clone());
        state.unsaved.insert(path.to_owned(), raw);
        if state.batches == 0 {
            self.save(&mut state);
        }
    }

    /// Holds the writes of [`KnownFiles::put`] until [`KnownFiles::close_batch`]: a
    /// load of a thousand files writes the record once.
    pub(super) fn open_batch(&self) {
        self.state().batches += 1;
    }

    /// Closes a batch [`KnownFiles::open_batch`] opened; the last writes the record.
    pub(super) fn close_batch(&self) {
        let mut state = self.state();
        state.batches = state.batches.saturating_sub(1);
        if state.batches == 0 {
            self.save(&mut state);
        }
    }

    /// Writes this engine's unsaved records into the file, merged with what it holds
    /// now (another process may have added to it), without the records of files that
    /// are gone.
    fn save(&self, state: &mut State) {
        if state.unsaved.is_empty() {
            return;
        }
        let (mut records, _) = self.read_file();
        records.retain(|path, _| path.exists());
        records.extend(state.unsaved.drain());
        let catalogue = Catalogue {
            made_by: MADE_BY.to_owned(),
            records,
        };
        let written = (|| -> std::io::Result<()> {
            std::fs::create_dir_all(&self.dir)?;
            let mut tmp = tempfile::NamedTempFile::new_in(&self.dir)?;
            // Flushed here, not on drop: a failed write must not be renamed into place.
            let mut out = std::io::BufWriter::new(&mut tmp);
            serde_json::to_writer(&mut out, &catalogue).map_err(std::io::Error::other)?;
            std::io::Write::flush(&mut out)?;
            drop(out);
            tmp.persist(self.file()).map_err(|e| e.error)?;
            // The records of earlier releases, one file each, are superseded.
            for entry in std::fs::read_dir(&self.dir)?.flatten() {
                let name = entry.file_name();
                if name != FILE && name.to_string_lossy().ends_with(".json") {
                    let _ = std::fs::remove_file(entry.path());
                }
            }
            Ok(())
        })();
        if let Err(e) = written {
            tracing::warn!(dir = %self.dir.display(), error = %e, "could not remember the loaded components");
        }
        state.read = Some(stat_of(&self.file()));
        state.records = catalogue.records;
    }
}

#[cfg(test)]
mod tests;
