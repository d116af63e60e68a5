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
mod tests {
    use super::*;

    fn known(digest: &str) -> Known {
        Known {
            digest: digest.into(),
            api_version: "0.1.0".into(),
            sdk: None,
            manifest: Manifest::new("{}".into()),
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
    fn a_file_opened_by_its_listing_has_the_fingerprint_of_its_path() {
        let dir = tempfile::tempdir().unwrap();
        for len in [0, 10, 4096, 4097, 9000] {
            let path = dir.path().join(format!("{len}.wasm"));
            let bytes: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            std::fs::write(&path, bytes).unwrap();
            let file = std::fs::File::open(&path).unwrap();
            let stat = rustix::fs::statx(
                &file,
                c"",
                rustix::fs::AtFlags::EMPTY_PATH,
                rustix::fs::StatxFlags::BASIC_STATS,
            )
            .unwrap();
            let open = OpenComponent::new(file, stat).expect("the basic statistics");
            assert_eq!(
                Fingerprint::of_open(&open).unwrap(),
                Fingerprint::of(&path).unwrap(),
                "{len} bytes"
            );
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
            std::fs::File::options()
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

    /// A settled record file in a fresh folder holding one component, recorded as `a`.
    fn one_recorded() -> (tempfile::TempDir, KnownFiles, PathBuf, Fingerprint) {
        let dir = tempfile::tempdir().unwrap();
        let files = settled(dir.path().to_owned());
        let path = dir.path().join("skill.wasm");
        std::fs::write(&path, b"x").unwrap();
        let now = Fingerprint::of(&path).unwrap();
        files.put(&path, now.clone(), known("a"));
        (dir, files, path, now)
    }

    #[test]
    fn a_record_made_by_another_evo_is_ignored() {
        // An upgrade may describe a component differently (a schema derived from its
        // WIT types that changed): what an older Evo learnt is read again.
        let (dir, files, path, now) = one_recorded();
        let mut record: serde_json::Value =
            serde_json::from_slice(&std::fs::read(files.file()).unwrap()).unwrap();
        assert_eq!(record["made_by"], MADE_BY);
        assert_eq!(
            settled(dir.path().to_owned()).get(&path, &now),
            Some(known("a"))
        );
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
            std::fs::write(files.file(), record.to_string()).unwrap();
            // A new process reads the file.
            let next = settled(dir.path().to_owned());
            assert_eq!(next.get(&path, &now), None, "{record}");
        }
    }

    #[test]
    fn a_damaged_record_is_ignored() {
        let (dir, files, path, now) = one_recorded();
        assert_eq!(files.get(&path, &now), Some(known("a")));
        std::fs::write(files.file(), b"{ not json").unwrap();
        let next = settled(dir.path().to_owned());
        assert_eq!(next.get(&path, &now), None);
        // And the next record written replaces it.
        next.put(&path, now.clone(), known("b"));
        assert_eq!(
            settled(dir.path().to_owned()).get(&path, &now),
            Some(known("b"))
        );
    }

    /// Files `n` components in `dir`, each with its fingerprint.
    fn components(dir: &Path, n: usize) -> Vec<(PathBuf, Fingerprint)> {
        (0..n)
            .map(|i| {
                let path = dir.join(format!("c{i}.wasm"));
                std::fs::write(&path, format!("component {i}")).unwrap();
                let now = Fingerprint::of(&path).unwrap();
                (path, now)
            })
            .collect()
    }

    #[test]
    fn a_batch_writes_the_record_once_when_it_closes() {
        let dir = tempfile::tempdir().unwrap();
        let files = settled(dir.path().join("known"));
        let all = components(dir.path(), 3);
        files.open_batch();
        files.open_batch();
        for (i, (path, now)) in all.iter().enumerate() {
            files.put(path, now.clone(), known(&i.to_string()));
            // Seen at once by this engine, not yet written.
            assert_eq!(files.get(path, now), Some(known(&i.to_string())));
        }
        files.close_batch();
        assert!(
            !files.file().exists(),
            "an inner batch closing writes nothing"
        );
        files.close_batch();
        // One file holds them all, and a new process reads them from it.
        let names: Vec<_> = std::fs::read_dir(dir.path().join("known"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, [FILE]);
        let next = settled(dir.path().join("known"));
        for (i, (path, now)) in all.iter().enumerate() {
            assert_eq!(next.get(path, now), Some(known(&i.to_string())));
        }
    }

    #[test]
    fn what_another_process_learnt_is_kept_and_seen() {
        let dir = tempfile::tempdir().unwrap();
        let all = components(dir.path(), 3);
        let (server, installer) = (
            settled(dir.path().join("known")),
            settled(dir.path().join("known")),
        );
        server.put(&all[0].0, all[0].1.clone(), known("0"));
        // The server has read the record; an install in another process adds to it.
        assert_eq!(server.get(&all[1].0, &all[1].1), None);
        installer.put(&all[1].0, all[1].1.clone(), known("1"));
        assert_eq!(installer.get(&all[0].0, &all[0].1), Some(known("0")));
        // The server sees the installer's record, and its next write keeps it.
        assert_eq!(server.get(&all[1].0, &all[1].1), Some(known("1")));
        server.put(&all[2].0, all[2].1.clone(), known("2"));
        let next = settled(dir.path().join("known"));
        for (i, (path, now)) in all.iter().enumerate() {
            assert_eq!(next.get(path, now), Some(known(&i.to_string())));
        }
        // A component removed since is forgotten at the next write.
        std::fs::remove_file(&all[0].0).unwrap();
        next.put(&all[1].0, all[1].1.clone(), known("1b"));
        let text = std::fs::read_to_string(next.file()).unwrap();
        assert!(!text.contains("c0.wasm"), "{text}");
        assert!(text.contains("c2.wasm"), "{text}");
    }

    #[test]
    fn records_are_read_as_parts_of_the_file_and_hold_manifests_as_json() {
        let dir = tempfile::tempdir().unwrap();
        let all = components(dir.path(), 2);
        let files = settled(dir.path().join("known"));
        let mut described = known("0");
        described.manifest = Manifest::new(r#"{"name":"c0","note":"a \"quoted\" word"}"#.into());
        files.put(&all[0].0, all[0].1.clone(), described.clone());
        files.put(&all[1].0, all[1].1.clone(), known("1"));
        let text = std::fs::read_to_string(files.file()).unwrap();
        assert!(
            text.contains(r#""manifest":{"name":"c0","note":"a \"quoted\" word"}"#),
            "the manifest is JSON in the record, not a string of it: {text}"
        );
        let (records, _) = files.read_file();
        let texts: Vec<_> = records.values().map(|r| Arc::clone(&r.text)).collect();
        assert_eq!(texts.len(), 2);
        assert!(
            Arc::ptr_eq(&texts[0], &texts[1]),
            "both records share the text read"
        );
        let next = settled(dir.path().join("known"));
        assert_eq!(next.get(&all[0].0, &all[0].1), Some(described));
        assert_eq!(next.get(&all[1].0, &all[1].1), Some(known("1")));
    }

    #[test]
    fn the_records_of_earlier_releases_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let known_dir = dir.path().join("known");
        std::fs::create_dir_all(&known_dir).unwrap();
        let old = known_dir.join("0123456789abcdef0123456789abcdef.json");
        std::fs::write(&old, "{}").unwrap();
        let all = components(dir.path(), 1);
        settled(known_dir).put(&all[0].0, all[0].1.clone(), known("0"));
        assert!(!old.exists());
    }
}
