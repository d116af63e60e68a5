//! Skills from OCI registries, through `evo` as users run it, against the CNCF
//! distribution registry `scripts/registry.sh` starts on loopback (one open, one behind
//! basic auth) and `skopeo`, a third-party OCI client.

use std::path::{Path, PathBuf};

use evo_tests::cli::{command, evo, stderr, stdout};
use evo_tests::skills;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!("{name} is not set: the registry tests need the registries ./scripts/test starts (or `source scripts/registry.sh` first)")
    })
}

/// The open registry (anonymous pushes and pulls).
fn open() -> String {
    env("EVO_TEST_REGISTRY")
}

/// The registry behind basic auth.
fn guarded() -> String {
    env("EVO_TEST_REGISTRY_AUTH")
}

/// A data directory whose evo.toml is `config`.
fn home_with(config: &str) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("evo.toml"), config).unwrap();
    home
}

/// A data directory whose evo.toml reaches both test registries over plain HTTP, with
/// `extra` after that.
fn home(extra: &str) -> tempfile::TempDir {
    home_with(&format!(
        "[registries]\ninsecure = [\"{}\", \"{}\"]\n{extra}",
        open(),
        guarded()
    ))
}

/// `evo secret set NAME` in `home`, with `value` typed in.
fn set_secret(home: &Path, name: &str, value: &str) {
    let mut set = command(home, &["secret", "set", name])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::io::Write::write_all(set.stdin.as_mut().unwrap(), value.as_bytes()).unwrap();
    assert!(set.wait().unwrap().success());
}

/// `evo ARGS`, which must succeed; its stdout.
fn ok(home: &Path, args: &[&str]) -> String {
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
fn ok_json(home: &Path, args: &[&str]) -> Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    serde_json::from_str(&ok(home, &all)).unwrap()
}

/// `evo ARGS`, which must fail with `code`; its stderr.
fn refused(home: &Path, args: &[&str], code: &str) -> String {
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

/// A new key pair under `dir`: (private, public).
fn keys(home: &Path, dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    let base = dir.join(name);
    ok(home, &["skill", "keygen", base.to_str().unwrap()]);
    (base.with_extension("key"), base.with_extension("pub"))
}

fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// Nothing installed and nothing half-written in `home`: no skill, no staging
/// directory, no lock file.
fn assert_nothing_installed(home: &Path) {
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
fn layout(dir: &Path, tag: &str, config: (&str, &[u8]), layers: &[(&str, &[u8])]) -> String {
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
fn skopeo(from: &str, to: &str) {
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
    let published = ok_json(
        author.path(),
        &[
            "skill",
            "publish",
            skills::TEXT_STATS,
            &reference,
            "--sign",
            private.to_str().unwrap(),
        ],
    );
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
    let err = refused(
        user.path(),
        &["skill", "install", &format!("oci://{reference}")],
        "DIGEST_MISMATCH",
    );
    assert!(
        err.contains("tampered with or damaged; nothing was installed"),
        "{err}"
    );
    assert_nothing_installed(user.path());
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
    let err = refused(
        user.path(),
        &["skill", "install", &format!("oci://{reference}")],
        "DIGEST_MISMATCH",
    );
    assert!(err.contains("the manifest the registry calls"), "{err}");
    assert_nothing_installed(user.path());

    // A layer larger than [engine] max_component_mb: refused before it downloads.
    let mut big = b"\0asm\x0d\0\x01\0".to_vec();
    big.resize(3 << 20, 0);
    push_component_with_skopeo(&big, &format!("{}/evo/big", open()), "1.0");
    let small = home("[engine]\nmax_component_mb = 1\n");
    let err = refused(
        small.path(),
        &["skill", "install", &format!("oci://{}/evo/big:1.0", open())],
        "ARTIFACT_TOO_LARGE",
    );
    assert!(err.contains("3145728 bytes; at most 1048576"), "{err}");
    assert_nothing_installed(small.path());

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
    let err = refused(
        user.path(),
        &[
            "skill",
            "install",
            &format!("oci://{}/evo/image:1.0", open()),
        ],
        "ARTIFACT_INVALID",
    );
    assert!(
        err.contains("application/vnd.oci.image.config.v1+json") && err.contains("container image"),
        "{err}"
    );
    assert_nothing_installed(user.path());

    // A registry that is down.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let down = home_with(&format!("[registries]\ninsecure = [\"{closed}\"]\n"));
    let err = refused(
        down.path(),
        &["skill", "install", &format!("oci://{closed}/evo/x:1.0")],
        "REGISTRY_UNREACHABLE",
    );
    assert!(
        err.contains("could not be reached over plain HTTP"),
        "{err}"
    );
    // HTTPS unless listed as insecure.
    let err = refused(
        user.path(),
        &["skill", "install", &format!("oci://{closed}/evo/x:1.0")],
        "REGISTRY_UNREACHABLE",
    );
    assert!(err.contains("[registries] insecure"), "{err}");

    // A registry that wants credentials nobody gave.
    let err = refused(
        user.path(),
        &[
            "skill",
            "install",
            &format!("oci://{}/evo/x:1.0", guarded()),
        ],
        "REGISTRY_AUTH",
    );
    assert!(
        err.contains("asks for credentials and none are set"),
        "{err}"
    );
    assert_nothing_installed(user.path());
}

#[test]
fn credentials_come_from_evo_secret_or_dockers_config() {
    let password = env("EVO_TEST_REGISTRY_PASSWORD");
    let author = home(&format!(
        "[registries.credentials.\"{}\"]\nusername = \"evo\"\nsecret = \"REGISTRY_PASSWORD\"\n",
        guarded()
    ));
    // Before the secret is set: the missing secret is named.
    let reference = format!("{}/private/file-head:1.0", guarded());
    refused(
        author.path(),
        &["skill", "publish", skills::FILE_HEAD, &reference],
        "SECRET_NOT_FOUND",
    );
    set_secret(author.path(), "REGISTRY_PASSWORD", &password);
    ok(
        author.path(),
        &["skill", "publish", skills::FILE_HEAD, &reference],
    );

    // Docker's config.json, as `docker login` writes it.
    let user = home("");
    let docker = tempfile::tempdir().unwrap();
    let auth = base64::Engine::encode(
        &base64::engine::general_purpose::STANDARD,
        format!("evo:{password}"),
    );
    std::fs::write(
        docker.path().join("config.json"),
        json!({ "auths": { guarded(): { "auth": auth } } }).to_string(),
    )
    .unwrap();
    let out = command(
        user.path(),
        &["--json", "skill", "install", &format!("oci://{reference}")],
    )
    .env("DOCKER_CONFIG", docker.path())
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let installed: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(installed["name"], "file-head");

    // A wrong password is refused as such.
    std::fs::write(
        docker.path().join("config.json"),
        json!({ "auths": { guarded(): { "username": "evo", "password": "wrong-password" } } })
            .to_string(),
    )
    .unwrap();
    let other = home("");
    let out = command(
        other.path(),
        &["skill", "install", &format!("oci://{reference}")],
    )
    .env("DOCKER_CONFIG", docker.path())
    .output()
    .unwrap();
    assert!(
        stderr(&out).contains("error[REGISTRY_AUTH]")
            && stderr(&out).contains("refused the credentials"),
        "{}",
        stderr(&out)
    );
    assert_nothing_installed(other.path());
}

#[test]
fn require_signature_refuses_unsigned_and_unknown_key_artifacts() {
    let author = home("");
    let keydir = tempfile::tempdir().unwrap();
    let (alice, alice_pub) = keys(author.path(), keydir.path(), "alice");
    let (mallory, _) = keys(author.path(), keydir.path(), "mallory");
    let repo = |name: &str| format!("{}/signed/{name}:1.0", open());
    ok(
        author.path(),
        &[
            "skill",
            "publish",
            skills::TEXT_STATS,
            &repo("by-alice"),
            "--sign",
            alice.to_str().unwrap(),
        ],
    );
    ok(
        author.path(),
        &["skill", "publish", skills::TEXT_STATS, &repo("unsigned")],
    );
    ok(
        author.path(),
        &[
            "skill",
            "publish",
            skills::TEXT_STATS,
            &repo("by-mallory"),
            "--sign",
            mallory.to_str().unwrap(),
        ],
    );

    let trust = format!(
        "[trust]\nkeys = [\"{}\"]\nrequire_signature = true\n",
        alice_pub.display()
    );
    let user = home(&trust);
    let err = refused(
        user.path(),
        &["skill", "install", &format!("oci://{}", repo("unsigned"))],
        "SIGNATURE_REQUIRED",
    );
    assert!(
        err.contains("is not signed, and [trust] require_signature is on: nothing was installed"),
        "{err}"
    );
    assert_nothing_installed(user.path());
    let err = refused(
        user.path(),
        &["skill", "install", &format!("oci://{}", repo("by-mallory"))],
        "SIGNATURE_UNTRUSTED",
    );
    assert!(
        err.contains("is signed, but by none of the trusted keys (alice)"),
        "{err}"
    );
    assert_nothing_installed(user.path());
    let blocked = ok_json(user.path(), &["tool", "history", "--status", "blocked"]);
    assert_eq!(blocked.as_array().unwrap().len(), 2, "{blocked}");

    let installed = ok_json(
        user.path(),
        &["skill", "install", &format!("oci://{}", repo("by-alice"))],
    );
    assert_eq!(installed["source"]["signer"]["key"], "alice");

    // Without require_signature, an unsigned artifact installs with a warning saying so.
    let relaxed = home("");
    let installed = ok_json(
        relaxed.path(),
        &["skill", "install", &format!("oci://{}", repo("unsigned"))],
    );
    assert!(
        installed["warnings"][0]
            .as_str()
            .unwrap()
            .contains("is not signed"),
        "{installed}"
    );
    assert!(installed["source"].get("signer").is_none());
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
fn each_node_pulls_a_registry_skill_by_digest_and_checks_it_against_its_own_trust() {
    use evo_tests::cli::HttpServer;
    use evo_tests::shared::eventually;

    let author = home("");
    let keydir = tempfile::tempdir().unwrap();
    let (alice, alice_pub) = keys(author.path(), keydir.path(), "alice");
    let signed = format!("{}/nodes/text-stats:1.0", open());
    let digest = ok_json(
        author.path(),
        &[
            "skill",
            "publish",
            skills::TEXT_STATS,
            &signed,
            "--sign",
            alice.to_str().unwrap(),
        ],
    )["digest"]
        .as_str()
        .unwrap()
        .to_owned();
    let unsigned = format!("{}/nodes/file-head:1.0", open());
    ok(
        author.path(),
        &["skill", "publish", skills::FILE_HEAD, &unsigned],
    );

    // Two nodes on one database; the second requires signatures, the first does not.
    let url = crate::storage::postgres_url();
    let trust = format!("[trust]\nkeys = [\"{}\"]\n", alice_pub.display());
    let one = home(&format!("{trust}[storage]\nurl = \"{url}\"\n"));
    let two = home(&format!(
        "{trust}require_signature = true\n[storage]\nurl = \"{url}\"\n"
    ));
    let server = HttpServer::start(two.path(), &[]);

    // Installed through node one: node two pulls the same manifest digest itself.
    ok(
        one.path(),
        &["skill", "install", &format!("oci://{signed}")],
    );
    let answer = eventually("node two calls it", || {
        let (status, answer) = crate::serve::http(
            "POST",
            &format!("{}/v1/skills/text-stats/call", server.base),
            &[],
            Some(r#"{"text":"one two"}"#),
        );
        (status == 200).then_some(answer)
    });
    assert_eq!(answer["output"]["words"], 2, "{answer}");
    let record: Value = serde_json::from_str(
        &std::fs::read_to_string(two.path().join("skills/text-stats/.vectorized")).unwrap(),
    )
    .unwrap();
    assert_eq!(record["source"]["digest"], digest.as_str(), "{record}");
    assert_eq!(record["source"]["signer"]["key"], "alice", "{record}");

    // An unsigned one node one accepts, node two refuses when it pulls it.
    ok(
        one.path(),
        &["skill", "install", &format!("oci://{unsigned}")],
    );
    let refusal = eventually("node two refuses it", || {
        let blocked = ok_json(one.path(), &["tool", "history", "--status", "blocked"]);
        blocked
            .as_array()
            .unwrap()
            .iter()
            .find(|row| {
                row["error"]
                    .as_str()
                    .is_some_and(|e| e.contains("[SIGNATURE_REQUIRED]"))
            })
            .cloned()
    });
    assert!(
        refusal["arguments"]
            .as_str()
            .unwrap()
            .contains("nodes/file-head"),
        "{refusal}"
    );
    let (status, _) = crate::serve::http(
        "POST",
        &format!("{}/v1/skills/file-head/call", server.base),
        &[],
        Some("{}"),
    );
    assert_eq!(status, 404);
    assert!(!two.path().join("skills/file-head").exists());
}

/// The registry's token service, answering as Docker Hub's does: basic auth checked
/// (user `evo`, `password`), then a JWT signed with the key the token registry trusts
/// (ES256, its certificate in `x5c`) granting what the scope asks. Serves on
/// EVO_TEST_TOKEN_PORT until the test ends; sends each scope granted.
fn serve_tokens(password: String) -> std::sync::mpsc::Receiver<String> {
    use base64::Engine as _;
    use std::io::{BufRead as _, Write as _};
    let b64 = base64::engine::general_purpose::STANDARD;
    let url = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let pem_body = |path: String| {
        let text = std::fs::read_to_string(path).unwrap();
        let body: String = text.lines().filter(|l| !l.starts_with("-----")).collect();
        b64.decode(body).unwrap()
    };
    let key = ring::signature::EcdsaKeyPair::from_pkcs8(
        &ring::signature::ECDSA_P256_SHA256_FIXED_SIGNING,
        &pem_body(env("EVO_TEST_TOKEN_KEY")),
        &ring::rand::SystemRandom::new(),
    )
    .unwrap();
    let cert = b64.encode(pem_body(env("EVO_TEST_TOKEN_CERT")));
    let listener =
        std::net::TcpListener::bind(format!("127.0.0.1:{}", env("EVO_TEST_TOKEN_PORT"))).unwrap();
    let (granted, scopes) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = std::io::BufReader::new(&stream);
            let mut head = Vec::new();
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                head.push(line.trim_end().to_owned());
            }
            let target = head
                .first()
                .and_then(|l| l.split(' ').nth(1))
                .unwrap_or("")
                .to_owned();
            let decode = |text: &str| {
                text.replace("%3A", ":")
                    .replace("%2F", "/")
                    .replace("%2C", ",")
            };
            let scope = target
                .split(['?', '&'])
                .find_map(|p| p.strip_prefix("scope="))
                .map(decode)
                .unwrap_or_default();
            let expected = format!("Basic {}", b64.encode(format!("evo:{password}")));
            let authorised = head.iter().any(|h| {
                h.split_once(':').is_some_and(|(name, value)| {
                    name.eq_ignore_ascii_case("authorization") && value.trim() == expected
                })
            });
            let (status, body) = if authorised && scope.starts_with("repository:") {
                let mut parts = scope.splitn(3, ':').skip(1);
                let (name, actions) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_secs();
                let header = json!({ "alg": "ES256", "typ": "JWT", "x5c": [cert] });
                let claims = json!({
                    "iss": "evo-test-issuer", "sub": "evo", "aud": "evo-test-registry",
                    "exp": now + 300, "nbf": now - 10, "iat": now, "jti": format!("{now}-{name}"),
                    "access": [{ "type": "repository", "name": name, "actions": actions.split(',').collect::<Vec<_>>() }],
                });
                let signing_input = format!(
                    "{}.{}",
                    url.encode(header.to_string()),
                    url.encode(claims.to_string())
                );
                let signature = key
                    .sign(&ring::rand::SystemRandom::new(), signing_input.as_bytes())
                    .unwrap();
                let token = format!("{signing_input}.{}", url.encode(signature.as_ref()));
                let _ = granted.send(scope.clone());
                (
                    "200 OK",
                    json!({ "token": token, "expires_in": 300 }).to_string(),
                )
            } else {
                (
                    "401 Unauthorized",
                    r#"{"details":"incorrect username or password"}"#.to_owned(),
                )
            };
            let _ = write!(
                &stream,
                "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    scopes
}

#[test]
fn the_registry_token_flow_gets_a_token_for_the_scope_with_the_credentials() {
    let registry = env("EVO_TEST_REGISTRY_TOKEN");
    let password = env("EVO_TEST_REGISTRY_PASSWORD");
    let scopes = serve_tokens(password.clone());
    let config = format!(
        "[registries]\ninsecure = [\"{registry}\"]\n[registries.credentials.\"{registry}\"]\nusername = \"evo\"\nsecret = \"TOKEN_REGISTRY_PASSWORD\"\n"
    );
    let author = home_with(&config);
    set_secret(author.path(), "TOKEN_REGISTRY_PASSWORD", &password);

    let reference = format!("{registry}/tokens/text-stats:1.0");
    ok(
        author.path(),
        &["skill", "publish", skills::TEXT_STATS, &reference],
    );
    assert_eq!(
        scopes.recv().unwrap(),
        "repository:tokens/text-stats:pull,push"
    );
    let installed = ok_json(
        author.path(),
        &["skill", "install", &format!("oci://{reference}")],
    );
    assert_eq!(installed["name"], "text-stats");
    assert_eq!(
        scopes.try_iter().last().as_deref(),
        Some("repository:tokens/text-stats:pull")
    );

    // Without credentials the token service refuses, and so does Evo, saying why.
    let stranger = home_with(&format!("[registries]\ninsecure = [\"{registry}\"]\n"));
    let err = refused(
        stranger.path(),
        &["skill", "install", &format!("oci://{reference}")],
        "REGISTRY_AUTH",
    );
    assert!(
        err.contains("asks for credentials and none are set"),
        "{err}"
    );
    assert_nothing_installed(stranger.path());
}

/// `openssl ARGS`, which must succeed; its stdout.
fn openssl(args: &[&str]) -> String {
    let out = std::process::Command::new("openssl")
        .args(args)
        .output()
        .expect("openssl runs");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// GET of `path` on the open registry, accepting an OCI manifest.
fn registry_get(path: &str) -> Vec<u8> {
    ureq::get(format!("http://{}/v2/{path}", open()))
        .header("Accept", "application/vnd.oci.image.manifest.v1+json")
        .call()
        .unwrap()
        .into_body()
        .read_to_vec()
        .unwrap()
}

#[test]
fn signatures_are_cosigns_format_and_openssl_checks_them_both_ways() {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD;
    let work = tempfile::tempdir().unwrap();
    let file = |name: &str| work.path().join(name);
    let author = home("");

    // What Evo signs, OpenSSL verifies (as cosign's examples check cosign's signatures).
    let (alice, alice_pub) = keys(author.path(), work.path(), "alice");
    let reference = format!("{}/cosign/text-stats:1.0", open());
    let digest = ok_json(
        author.path(),
        &[
            "skill",
            "publish",
            skills::TEXT_STATS,
            &reference,
            "--sign",
            alice.to_str().unwrap(),
        ],
    )["digest"]
        .as_str()
        .unwrap()
        .to_owned();
    let tag = format!("sha256-{}.sig", &digest[7..]);
    let manifest: Value =
        serde_json::from_slice(&registry_get(&format!("cosign/text-stats/manifests/{tag}")))
            .unwrap();
    let layer = &manifest["layers"][0];
    assert_eq!(
        layer["mediaType"],
        "application/vnd.dev.cosign.simplesigning.v1+json"
    );
    let payload = registry_get(&format!(
        "cosign/text-stats/blobs/{}",
        layer["digest"].as_str().unwrap()
    ));
    let simple: Value = serde_json::from_slice(&payload).unwrap();
    assert_eq!(
        simple["critical"]["type"],
        "cosign container image signature"
    );
    assert_eq!(
        simple["critical"]["image"]["docker-manifest-digest"],
        digest.as_str()
    );
    assert_eq!(
        simple["critical"]["identity"]["docker-reference"],
        format!("{}/cosign/text-stats", open())
    );
    let signature = layer["annotations"]["dev.cosignproject.cosign/signature"]
        .as_str()
        .unwrap();
    std::fs::write(file("payload.json"), &payload).unwrap();
    std::fs::write(file("payload.sig"), b64.decode(signature).unwrap()).unwrap();
    let verified = openssl(&[
        "dgst",
        "-sha256",
        "-verify",
        alice_pub.to_str().unwrap(),
        "-signature",
        file("payload.sig").to_str().unwrap(),
        file("payload.json").to_str().unwrap(),
    ]);
    assert!(verified.contains("Verified OK"), "{verified}");

    // What OpenSSL signs in cosign's layout (`cosign attach signature` of an
    // `openssl dgst -sign`), Evo verifies.
    let unsigned = format!("{}/cosign/file-head:1.0", open());
    let digest = ok_json(
        author.path(),
        &["skill", "publish", skills::FILE_HEAD, &unsigned],
    )["digest"]
        .as_str()
        .unwrap()
        .to_owned();
    let key = file("openssl.key");
    let public = file("openssl.pub");
    openssl(&[
        "genpkey",
        "-algorithm",
        "EC",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-out",
        key.to_str().unwrap(),
    ]);
    openssl(&[
        "pkey",
        "-in",
        key.to_str().unwrap(),
        "-pubout",
        "-out",
        public.to_str().unwrap(),
    ]);
    let payload = json!({
        "critical": {
            "identity": { "docker-reference": format!("{}/cosign/file-head", open()) },
            "image": { "docker-manifest-digest": digest },
            "type": "cosign container image signature",
        },
        "optional": null,
    })
    .to_string();
    std::fs::write(file("theirs.json"), &payload).unwrap();
    openssl(&[
        "dgst",
        "-sha256",
        "-sign",
        key.to_str().unwrap(),
        "-out",
        file("theirs.sig").to_str().unwrap(),
        file("theirs.json").to_str().unwrap(),
    ]);
    let signature = b64.encode(std::fs::read(file("theirs.sig")).unwrap());
    let layout_dir = file("sig-layout");
    let tag = format!("sha256-{}.sig", &digest[7..]);
    layout(
        &layout_dir,
        &tag,
        (
            "application/vnd.oci.image.config.v1+json",
            br#"{"architecture":"","os":"","rootfs":{"type":"layers","diff_ids":[]},"config":{}}"#,
        ),
        &[(
            "application/vnd.dev.cosign.simplesigning.v1+json",
            payload.as_bytes(),
        )],
    );
    // The signature goes in the layer's annotation, as cosign writes it.
    let index: Value =
        serde_json::from_slice(&std::fs::read(layout_dir.join("index.json")).unwrap()).unwrap();
    let old = index["manifests"][0]["digest"].as_str().unwrap().to_owned();
    let mut manifest: Value = serde_json::from_slice(
        &std::fs::read(layout_dir.join("blobs/sha256").join(&old[7..])).unwrap(),
    )
    .unwrap();
    manifest["layers"][0]["annotations"] =
        json!({ "dev.cosignproject.cosign/signature": signature });
    let bytes = serde_json::to_vec(&manifest).unwrap();
    let new = sha256(&bytes);
    std::fs::write(layout_dir.join("blobs/sha256").join(&new[7..]), &bytes).unwrap();
    let mut index = index;
    index["manifests"][0]["digest"] = json!(new);
    index["manifests"][0]["size"] = json!(bytes.len());
    std::fs::write(layout_dir.join("index.json"), index.to_string()).unwrap();
    skopeo(
        &format!("oci:{}:{tag}", layout_dir.display()),
        &format!("docker://{}/cosign/file-head:{tag}", open()),
    );
    let user = home(&format!(
        "[trust]\nkeys = [\"{}\"]\nrequire_signature = true\n",
        public.display()
    ));
    let installed = ok_json(
        user.path(),
        &["skill", "install", &format!("oci://{unsigned}")],
    );
    assert_eq!(
        installed["source"]["signer"]["key"], "openssl",
        "{installed}"
    );
}
