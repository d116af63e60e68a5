//! Tests of the record of what was learnt from component files.

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
        let open = OpenComponent::new(file, &stat).expect("the basic statistics");
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
