//! Skills from OCI registries, through `evo` as users run it, against the CNCF
//! distribution registry `scripts/registry.sh` starts on loopback (one open, one behind
//! basic auth, one behind the token flow) and `skopeo`, a third-party OCI client:
//! publishing, installing, pinning, and every refusal leaving nothing behind. Whom an
//! install trusts is `registry_trust`'s; the helpers here serve both.

use std::path::{Path, PathBuf};

use evo_tests::cli::{command, evo, stderr, stdout};
use evo_tests::skills;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

pub(crate) fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!("{name} is not set: the registry tests need the registries ./scripts/test starts (or `source scripts/registry.sh` first)")
    })
}

/// The open registry (anonymous pushes and pulls).
pub(crate) fn open() -> String {
    env("EVO_TEST_REGISTRY")
}

/// The registry behind basic auth.
pub(crate) fn guarded() -> String {
    env("EVO_TEST_REGISTRY_AUTH")
}

/// A data directory whose evo.toml is `config`.
pub(crate) fn home_with(config: &str) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("evo.toml"), config).unwrap();
    home
}

/// A data directory whose evo.toml reaches both test registries over plain HTTP, with
/// `extra` after that.
pub(crate) fn home(extra: &str) -> tempfile::TempDir {
    home_with(&format!(
        "[registries]\ninsecure = [\"{}\", \"{}\"]\n{extra}",
        open(),
        guarded()
    ))
}

/// `evo secret set NAME` in `home`, with `value` typed in.
pub(crate) fn set_secret(home: &Path, name: &str, value: &str) {
    let mut set = command(home, &["secret", "set", name])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::io::Write::write_all(set.stdin.as_mut().unwrap(), value.as_bytes()).unwrap();
    assert!(set.wait().unwrap().success());
}

/// `evo ARGS`, which must succeed; its stdout.
pub(crate) fn ok(home: &Path, args: &[&str]) -> String {
    let out = evo(home, args);
    assert!(
        out.status.success(),
        "evo {args:?} failed:\n{}\n{}",
        stdout(&out),
        stderr(&out)
    );
    stdout(&out)
}

/// `evo --json ARGS`, which must succeed; its JSON.
pub(crate) fn ok_json(home: &Path, args: &[&str]) -> Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    serde_json::from_str(&ok(home, &all)).unwrap()
}

/// `evo ARGS`, which must fail with `code`; its stderr.
pub(crate) fn refused(home: &Path, args: &[&str], code: &str) -> String {
    let out = evo(home, args);
    let err = stderr(&out);
    assert!(
        !out.status.success(),
        "evo {args:?} succeeded:\n{}",
        stdout(&out)
    );
    assert!(
        err.contains(&format!("error[{code}]")),
        "evo {args:?}: expected {code}:\n{err}"
    );
    err
}

/// `evo skill install REFERENCE` in `home`, which must fail with `code` saying `says`,
/// and leave nothing installed or half-written.
pub(crate) fn install_refused(home: &Path, reference: &str, code: &str, says: &str) {
    let err = refused(home, &["skill", "install", reference], code);
    assert!(err.contains(says), "{err}");
    assert_nothing_installed(home);
}

/// `evo skill publish COMPONENT REFERENCE --sign KEY` in `home`: what it printed.
pub(crate) fn publish_signed(home: &Path, component: &str, reference: &str, key: &Path) -> Value {
    let key = key.to_str().unwrap();
    ok_json(
        home,
        &["skill", "publish", component, reference, "--sign", key],
    )
}

/// A new key pair under `dir`: (private, public).
pub(crate) fn keys(home: &Path, dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    let base = dir.join(name);
    ok(home, &["skill", "keygen", base.to_str().unwrap()]);
    (base.with_extension("key"), base.with_extension("pub"))
}

pub(crate) fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// Nothing installed and nothing half-written in `home`: no skill, no staging
/// directory, no lock file.
pub(crate) fn assert_nothing_installed(home: &Path) {
    let skills = home.join("skills");
    let left: Vec<String> = std::fs::read_dir(&skills)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n != ".shared")
                .collect()
        })
        .unwrap_or_default();
    assert!(left.is_empty(), "left in {}: {left:?}", skills.display());
    assert!(!home.join("evo.lock").exists(), "a lock entry for nothing");
}

/// An OCI image layout in `dir` holding one manifest tagged `tag`: `config` (media
/// type, bytes) and `layers`; returns the manifest's digest.
pub(crate) fn layout(
    dir: &Path,
    tag: &str,
    config: (&str, &[u8]),
    layers: &[(&str, &[u8])],
) -> String {
    let blobs = dir.join("blobs/sha256");
    std::fs::create_dir_all(&blobs).unwrap();
    let blob = |media_type: &str, bytes: &[u8]| {
        let digest = sha256(bytes);
        std::fs::write(blobs.join(&digest[7..]), bytes).unwrap();
        json!({ "mediaType": media_type, "digest": digest, "size": bytes.len() })
    };
    let manifest = json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": blob(config.0, config.1),
        "layers": layers.iter().map(|(m, b)| blob(m, b)).collect::<Vec<_>>(),
    });
    let bytes = serde_json::to_vec(&manifest).unwrap();
    let mut entry = blob("application/vnd.oci.image.manifest.v1+json", &bytes);
    entry["annotations"] = json!({ "org.opencontainers.image.ref.name": tag });
    std::fs::write(
        dir.join("index.json"),
        json!({ "schemaVersion": 2, "manifests": [entry] }).to_string(),
    )
    .unwrap();
    std::fs::write(dir.join("oci-layout"), r#"{"imageLayoutVersion":"1.0.0"}"#).unwrap();
    sha256(&bytes)
}

/// `skopeo copy` from `from` to `to` (`oci:DIR:TAG`, `docker://REF`), over plain HTTP.
pub(crate) fn skopeo(from: &str, to: &str) {
    let out = std::process::Command::new("skopeo")
        .args([
            "copy",
            "--src-tls-verify=false",
            "--dest-tls-verify=false",
            from,
            to,
        ])
        .output()
        .expect("skopeo runs (./scripts/test installs it)");
    assert!(
        out.status.success(),
        "skopeo copy {from} {to}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The Wasm OCI artifact layout of `component`, tagged `tag`, pushed with skopeo to
/// `reference` (without the tag).
fn push_component_with_skopeo(component: &[u8], reference: &str, tag: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let config =
        json!({ "architecture": "wasm", "os": "wasip2", "layerDigests": [sha256(component)] })
            .to_string();
    let digest = layout(
        dir.path(),
        tag,
        ("application/vnd.wasm.config.v0+json", config.as_bytes()),
        &[("application/wasm", component)],
    );
    skopeo(
        &format!("oci:{}:{tag}", dir.path().display()),
        &format!("docker://{reference}:{tag}"),
    );
    digest
}

/// Where the open registry keeps blob `digest`.
fn stored_blob(digest: &str) -> PathBuf {
    let hex = &digest[7..];
    PathBuf::from(env("EVO_TEST_REGISTRY_STORAGE"))
        .join("docker/registry/v2/blobs/sha256")
        .join(&hex[..2])
        .join(hex)
        .join("data")
}

#[test]
fn a_published_skill_installs_by_tag_and_by_digest_signed_pinned_and_runs() {
    let author = home("");
    let keydir = tempfile::tempdir().unwrap();
    let (private, public) = keys(author.path(), keydir.path(), "alice");
    let reference = format!("{}/evo/text-stats:1.0", open());
    let published = publish_signed(author.path(), skills::TEXT_STATS, &reference, &private);
    assert_eq!(published["name"], "text-stats");
    assert_eq!(published["kind"], "component");
    assert_eq!(published["signed"], true);
    let digest = published["digest"].as_str().unwrap().to_owned();

    let user = home(&format!(
        "[trust]\nkeys = [\"{}\"]\nrequire_signature = true\n",
        public.display()
    ));
    let text = ok(
        user.path(),
        &["skill", "install", &format!("oci://{reference}")],
    );
    assert!(
        text.contains("text-stats: Skill installed successfully"),
        "{text}"
    );
    assert!(text.contains(&format!("manifest:   {digest}")), "{text}");
    assert!(text.contains("signed by:  alice (sha256:"), "{text}");
    let out = ok_json(
        user.path(),
        &[
            "skill",
            "run",
            "text-stats",
            "--input",
            r#"{"text":"a b a"}"#,
        ],
    );
    assert_eq!(out["output"]["words"], 3, "{out}");

    // The record keeps where it came from; info, list and the security log show it.
    let info = ok_json(user.path(), &["skill", "info", "text-stats"]);
    assert_eq!(info["installed"]["source"]["reference"], reference.as_str());
    assert_eq!(info["installed"]["source"]["digest"], digest.as_str());
    assert_eq!(info["installed"]["source"]["signer"]["key"], "alice");
    let list = ok_json(user.path(), &["skill", "list"]);
    let listed = list["skills"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "text-stats")
        .unwrap();
    assert_eq!(listed["source"]["digest"], digest.as_str());
    let history = ok_json(user.path(), &["tool", "history", "--tool", "skill_install"]);
    let row = &history.as_array().unwrap()[0];
    assert_eq!(row["status"], "success", "{history}");
    assert!(
        row["arguments"].as_str().unwrap().contains(&digest),
        "{row}"
    );

    // Pinned in the lock file, beside evo.toml.
    let lock = std::fs::read_to_string(user.path().join("evo.lock")).unwrap();
    assert!(
        lock.contains(&format!(
            "reference = \"{reference}\"\ndigest = \"{digest}\"\nsigner = \"alice\""
        )),
        "{lock}"
    );

    // By digest, after an uninstall (which forgets the lock entry).
    ok(user.path(), &["skill", "uninstall", "text-stats"]);
    assert!(
        !std::fs::read_to_string(user.path().join("evo.lock"))
            .unwrap()
            .contains("text-stats")
    );
    let pinned = format!("oci://{}/evo/text-stats@{digest}", open());
    let installed = ok_json(user.path(), &["skill", "install", &pinned]);
    assert_eq!(installed["source"]["digest"], digest.as_str());
    assert_eq!(installed["name"], "text-stats");
}

#[test]
fn other_oci_tools_pull_what_evo_publishes_and_evo_installs_what_they_push() {
    let component = std::fs::read(skills::PLAIN_KINDS).unwrap();
    // Pushed by skopeo from an OCI layout: installed and run by Evo.
    let repository = format!("{}/third/plain-kinds", open());
    let digest = push_component_with_skopeo(&component, &repository, "2.0");
    let user = home("");
    let installed = ok_json(
        user.path(),
        &["skill", "install", &format!("oci://{repository}:2.0")],
    );
    assert_eq!(installed["name"], "plain-kinds");
    assert_eq!(installed["source"]["digest"], digest.as_str());
    assert!(
        installed["warnings"][0]
            .as_str()
            .unwrap()
            .contains("is not signed"),
        "{installed}"
    );
    let out = ok_json(
        user.path(),
        &[
            "skill",
            "run",
            "plain-kinds__greet",
            "--input",
            r#"{"name":"oci"}"#,
        ],
    );
    assert_eq!(out["output"], "hello, oci");

    // Published by Evo: skopeo pulls it into an OCI layout in the CNCF Wasm layout.
    let reference = format!("{}/evo/kinds-out:1.0", open());
    ok(
        user.path(),
        &["skill", "publish", skills::PLAIN_KINDS, &reference],
    );
    let pulled = tempfile::tempdir().unwrap();
    skopeo(
        &format!("docker://{reference}"),
        &format!("oci:{}:1.0", pulled.path().display()),
    );
    let index: Value =
        serde_json::from_slice(&std::fs::read(pulled.path().join("index.json")).unwrap()).unwrap();
    let manifest_digest = index["manifests"][0]["digest"].as_str().unwrap();
    let blob = |digest: &str| {
        std::fs::read(pulled.path().join("blobs/sha256").join(&digest[7..])).unwrap()
    };
    let manifest: Value = serde_json::from_slice(&blob(manifest_digest)).unwrap();
    assert_eq!(
        manifest["config"]["mediaType"],
        "application/vnd.wasm.config.v0+json"
    );
    assert_eq!(manifest["layers"].as_array().unwrap().len(), 1);
    assert_eq!(manifest["layers"][0]["mediaType"], "application/wasm");
    assert_eq!(
        blob(manifest["layers"][0]["digest"].as_str().unwrap()),
        component
    );
    let config: Value =
        serde_json::from_slice(&blob(manifest["config"]["digest"].as_str().unwrap())).unwrap();
    assert_eq!(
        (config["architecture"].as_str(), config["os"].as_str()),
        (Some("wasm"), Some("wasip2"))
    );
}

#[test]
fn a_skill_directory_is_evos_own_artifact_and_goes_through_the_zip_checks() {
    let author = home("");
    let source = tempfile::tempdir().unwrap();
    let dir = source.path().join("release-notes");
    std::fs::create_dir_all(dir.join("scripts")).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        "---\nname: release-notes\ndescription: Writes release notes from a changelog.\n---\nRead CHANGELOG.md, then run scripts/collect.py.\n",
    )
    .unwrap();
    std::fs::write(dir.join("scripts/collect.py"), "print('notes')\n").unwrap();
    let reference = format!("{}/evo/release-notes:1.0", open());
    let published = ok_json(
        author.path(),
        &["skill", "publish", dir.to_str().unwrap(), &reference],
    );
    assert_eq!(published["kind"], "skill");

    let user = home("");
    let installed = ok_json(
        user.path(),
        &["skill", "install", &format!("oci://{reference}")],
    );
    assert_eq!(installed["name"], "release-notes");
    assert_eq!(
        std::fs::read_to_string(user.path().join("skills/release-notes/scripts/collect.py"))
            .unwrap(),
        "print('notes')\n"
    );

    // A skill artifact pushed by hand whose ZIP climbs out of its directory is refused
    // as a ZIP install refuses it, and nothing is written.
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default();
    zip.start_file("evil/SKILL.md", options).unwrap();
    std::io::Write::write_all(&mut zip, b"---\nname: evil\ndescription: x\n---\n").unwrap();
    zip.start_file("evil/../../escaped.txt", options).unwrap();
    std::io::Write::write_all(&mut zip, b"out").unwrap();
    let zip = zip.finish().unwrap().into_inner();
    let layout_dir = tempfile::tempdir().unwrap();
    layout(
        layout_dir.path(),
        "1.0",
        ("application/vnd.evo.skill.config.v1+json", b"{}"),
        &[("application/vnd.evo.skill.layer.v1+zip", &zip)],
    );
    skopeo(
        &format!("oci:{}:1.0", layout_dir.path().display()),
        &format!("docker://{}/evo/evil:1.0", open()),
    );
    let victim = home("");
    let err = refused(
        victim.path(),
        &[
            "skill",
            "install",
            &format!("oci://{}/evo/evil:1.0", open()),
        ],
        "INVALID_SKILL_STRUCTURE",
    );
    assert!(err.contains(".."), "{err}");
    assert_nothing_installed(victim.path());
    assert!(!victim.path().join("escaped.txt").exists());
}

#[test]
fn tampered_lying_oversized_foreign_unreachable_and_unauthorised_artifacts_are_refused_cleanly() {
    let author = home("");
    // A blob changed in the registry's storage after it was pushed (blobs are shared by
    // every repository of a registry: no other test pushes this component).
    let reference = format!("{}/evo/tampered:1.0", open());
    ok(
        author.path(),
        &["skill", "publish", skills::EXFIL, &reference],
    );
    let layer = stored_blob(&sha256(&std::fs::read(skills::EXFIL).unwrap()));
    let mut bytes = std::fs::read(&layer).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&layer, &bytes).unwrap();
    let user = home("");
    install_refused(
        user.path(),
        &format!("oci://{reference}"),
        "DIGEST_MISMATCH",
        "tampered with or damaged; nothing was installed",
    );
    let blocked = ok_json(user.path(), &["tool", "history", "--status", "blocked"]);
    assert!(
        blocked[0]["error"]
            .as_str()
            .unwrap()
            .contains("[DIGEST_MISMATCH]"),
        "{blocked}"
    );

    // A manifest whose bytes are not the digest the registry serves it under.
    let reference = format!("{}/evo/lying:1.0", open());
    let published = ok_json(
        author.path(),
        &["skill", "publish", skills::NOTES, &reference],
    );
    let manifest = stored_blob(published["digest"].as_str().unwrap());
    let text = std::fs::read_to_string(&manifest).unwrap();
    // The same manifest, one space longer: valid, but not the bytes digested.
    std::fs::write(&manifest, text.replacen('{', "{ ", 1)).unwrap();
    let lying = format!("oci://{reference}");
    install_refused(
        user.path(),
        &lying,
        "DIGEST_MISMATCH",
        "the manifest the registry calls",
    );

    // A layer larger than [engine] max_component_mb: refused before it downloads.
    let mut big = b"\0asm\x0d\0\x01\0".to_vec();
    big.resize(3 << 20, 0);
    push_component_with_skopeo(&big, &format!("{}/evo/big", open()), "1.0");
    let small = home("[engine]\nmax_component_mb = 1\n");
    let big = format!("oci://{}/evo/big:1.0", open());
    install_refused(
        small.path(),
        &big,
        "ARTIFACT_TOO_LARGE",
        "3145728 bytes; at most 1048576",
    );

    // A container image, not a skill.
    let image = tempfile::tempdir().unwrap();
    layout(
        image.path(),
        "1.0",
        (
            "application/vnd.oci.image.config.v1+json",
            br#"{"architecture":"amd64","os":"linux"}"#,
        ),
        &[(
            "application/vnd.oci.image.layer.v1.tar+gzip",
            b"not really a tarball",
        )],
    );
    skopeo(
        &format!("oci:{}:1.0", image.path().display()),
        &format!("docker://{}/evo/image:1.0", open()),
    );
    let image = format!("oci://{}/evo/image:1.0", open());
    let config = "its config is application/vnd.oci.image.config.v1+json; a component's is";
    install_refused(user.path(), &image, "ARTIFACT_INVALID", config);

    // A registry that is down.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let down = home_with(&format!("[registries]\ninsecure = [\"{closed}\"]\n"));
    let nowhere = format!("oci://{closed}/evo/x:1.0");
    let plain = "could not be reached over plain HTTP";
    install_refused(down.path(), &nowhere, "REGISTRY_UNREACHABLE", plain);
    // HTTPS unless listed as insecure.
    let https =
        "over HTTPS (a registry served over plain HTTP must be listed in [registries] insecure)";
    install_refused(user.path(), &nowhere, "REGISTRY_UNREACHABLE", https);

    // A registry that wants credentials nobody gave.
    let guarded = format!("oci://{}/evo/x:1.0", guarded());
    let none = "asks for credentials and none are set";
    install_refused(user.path(), &guarded, "REGISTRY_AUTH", none);
}

#[test]
fn a_moved_tag_is_reported_and_followed_only_when_asked() {
    let author = home("");
    let reference = format!("{}/evo/moving:1.0", open());
    let first = ok_json(
        author.path(),
        &["skill", "publish", skills::PLAIN_KINDS, &reference],
    );
    let first = first["digest"].as_str().unwrap().to_owned();
    let user = home("");
    let installed = ok_json(
        user.path(),
        &["skill", "install", &format!("oci://{reference}")],
    );
    assert_eq!(installed["name"], "moving");

    // The tag moves to another component.
    let second = ok_json(
        author.path(),
        &["skill", "publish", skills::PLAIN_IO, &reference],
    );
    let second = second["digest"].as_str().unwrap().to_owned();
    assert_ne!(first, second);

    // Installing it again does not follow it silently.
    let err = refused(
        user.path(),
        &[
            "skill",
            "install",
            "--overwrite",
            &format!("oci://{reference}"),
        ],
        "TAG_MOVED",
    );
    assert!(
        err.contains(&format!("names {second} now, but the lock file"))
            && err.contains(&format!("pins {first}")),
        "{err}"
    );
    let info = ok_json(user.path(), &["skill", "info", "moving"]);
    assert_eq!(info["installed"]["source"]["digest"], first.as_str());

    // --locked installs the pinned digest and reports the move.
    let locked = ok_json(
        user.path(),
        &[
            "skill",
            "install",
            "--locked",
            "--overwrite",
            &format!("oci://{reference}"),
        ],
    );
    assert_eq!(locked["source"]["digest"], first.as_str());
    assert_eq!(locked["tagMovedTo"], second.as_str());

    // Another machine with the same lock file gets exactly the pinned digest.
    let other = home("");
    std::fs::copy(user.path().join("evo.lock"), other.path().join("evo.lock")).unwrap();
    let all = ok_json(other.path(), &["skill", "install", "--locked"]);
    assert_eq!(all[0]["source"]["digest"], first.as_str());
    let again = ok(other.path(), &["skill", "install", "--locked"]);
    assert!(
        again.contains("is installed at its pinned digest"),
        "{again}"
    );

    // `evo skill update` follows the tag, and pins where it went.
    let updated = ok_json(user.path(), &["skill", "update", "moving"]);
    assert_eq!(
        (updated[0]["from"].as_str(), updated[0]["to"].as_str()),
        (Some(first.as_str()), Some(second.as_str()))
    );
    let lock = std::fs::read_to_string(user.path().join("evo.lock")).unwrap();
    assert!(lock.contains(&second) && !lock.contains(&first), "{lock}");
    let text = ok(user.path(), &["skill", "update"]);
    assert!(text.contains("moving: up to date"), "{text}");
    let out = ok_json(user.path(), &["skill", "list"]);
    assert!(
        out["skills"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["name"].as_str().unwrap().starts_with("moving__")),
        "{out}"
    );

    // A local file installed over it replaces it: the lock file forgets the tag.
    let local = user.path().join("moving.wasm");
    std::fs::copy(skills::PLAIN_KINDS, &local).unwrap();
    ok(
        user.path(),
        &["skill", "install", "--overwrite", local.to_str().unwrap()],
    );
    let lock = std::fs::read_to_string(user.path().join("evo.lock")).unwrap();
    assert!(!lock.contains("moving"), "{lock}");
    let info = ok_json(user.path(), &["skill", "info", "moving"]);
    assert!(info["installed"].get("source").is_none(), "{info}");
}

#[test]
fn a_skill_no_evo_could_install_is_not_published() {
    // "Publishing a name the host already has: `calculate.wasm` publishes and signs, but
    // no Evo can install it (`SKILL_NAME_TAKEN` against the built-in) ... Check at
    // publish."
    let author = home("");
    for (component, repository, name) in [
        (skills::CALCULATE, "evo/my-calculator", "calculate"),
        (skills::PLAIN_KINDS, "evo/bash", "bash"),
    ] {
        let reference = format!("{}/{repository}:1.0", open());
        let err = refused(
            author.path(),
            &["skill", "publish", component, &reference],
            "SKILL_NAME_TAKEN",
        );
        assert!(
            err.contains(&format!(
                "{name} was not published: a built-in tool of Evo is called {name}, so no Evo could install it"
            )) && err.contains("hint: rename the skill"),
            "{err}"
        );
        // Nothing was pushed.
        install_refused(
            author.path(),
            &format!("oci://{reference}"),
            "ARTIFACT_NOT_FOUND",
            "",
        );
    }
}

#[test]
fn bad_references_and_keys_are_refused_with_what_to_write() {
    let user = home("");
    let err = refused(
        user.path(),
        &["skill", "install", "oci://ghcr.io/Acme/Echo"],
        "INVALID_REFERENCE",
    );
    assert!(
        err.contains("REGISTRY/REPOSITORY[:TAG][@sha256:DIGEST]"),
        "{err}"
    );
    let key = user.path().join("cosign.key");
    std::fs::write(&key, "-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED SIGSTORE PRIVATE KEY-----\n").unwrap();
    let err = refused(
        user.path(),
        &[
            "skill",
            "publish",
            skills::CALCULATE,
            &format!("{}/evo/x:1", open()),
            "--sign",
            key.to_str().unwrap(),
        ],
        "KEY_INVALID",
    );
    assert!(err.contains("evo skill keygen"), "{err}");
    let err = refused(
        user.path(),
        &[
            "skill",
            "install",
            "--locked",
            "oci://127.0.0.1:1/evo/none:1",
        ],
        "NOT_LOCKED",
    );
    assert!(err.contains("is not in the lock file"), "{err}");
}

#[test]
fn a_skill_installed_as_another_name_keeps_it_through_the_lock_file_and_its_updates() {
    // "let an install rename (`--as NAME`)"
    let author = home("");
    let reference = format!("{}/evo/renamed-stats:1.0", open());
    ok(
        author.path(),
        &["skill", "publish", skills::TEXT_STATS, &reference],
    );
    let user = home("");
    let text = ok(
        user.path(),
        &[
            "skill",
            "install",
            &format!("oci://{reference}"),
            "--as",
            "stats",
        ],
    );
    assert!(
        text.contains("stats: Skill installed successfully"),
        "{text}"
    );
    let words = |expected: u64| {
        let out = ok_json(
            user.path(),
            &["skill", "run", "stats", "--input", r#"{"text":"a b a"}"#],
        );
        assert_eq!(out["output"]["words"], expected, "{out}");
    };
    words(3);
    let lock = std::fs::read_to_string(user.path().join("evo.lock")).unwrap();
    assert!(lock.contains("name = \"stats\""), "{lock}");

    // Installed again from the lock file, it keeps the name the lock file has.
    std::fs::remove_dir_all(user.path().join("skills/stats")).unwrap();
    ok(user.path(), &["skill", "install", "--locked"]);
    words(3);

    // Following its tag installs the new version under the same name.
    ok(
        author.path(),
        &["skill", "publish", skills::JS_TEXT_STATS, &reference],
    );
    let updated = ok_json(user.path(), &["skill", "update", "stats"]);
    assert_eq!(updated[0]["name"], "stats", "{updated}");
    words(3);
    let list = ok_json(user.path(), &["skill", "list"]);
    let names: Vec<&str> = list["skills"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["kind"] != "builtin")
        .filter_map(|s| s["name"].as_str())
        .collect();
    assert_eq!(names, ["stats"], "{list}");
    let info = ok_json(user.path(), &["skill", "info", "stats"]);
    assert_eq!(info["installed"]["publishedAs"], "js-text-stats", "{info}");
}
