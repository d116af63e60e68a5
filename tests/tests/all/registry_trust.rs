//! Whom an install from a registry trusts, through `evo` as users run it: signatures
//! (cosign's format, checked with OpenSSL both ways), `require_signature`, credentials
//! (an `evo secret`, Docker's config.json, the token flow), and several nodes each
//! checking against their own trust. The registries are `scripts/registry.sh`'s.

use evo_tests::cli::{command, evo, stderr, stdout};
use evo_tests::skills;
use serde_json::{Value, json};

use crate::registry::{
    assert_nothing_installed, env, guarded, home, home_with, install_refused, keys, layout, ok,
    ok_json, open, publish_signed, refused, set_secret, sha256, skopeo,
};

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
    publish_signed(author.path(), skills::TEXT_STATS, &repo("by-alice"), &alice);
    ok(
        author.path(),
        &["skill", "publish", skills::TEXT_STATS, &repo("unsigned")],
    );
    publish_signed(
        author.path(),
        skills::TEXT_STATS,
        &repo("by-mallory"),
        &mallory,
    );

    let trust = format!(
        "[trust]\nkeys = [\"{}\"]\nrequire_signature = true\n",
        alice_pub.display()
    );
    let user = home(&trust);
    install_refused(
        user.path(),
        &format!("oci://{}", repo("unsigned")),
        "SIGNATURE_REQUIRED",
        "is not signed, and [trust] require_signature is on: nothing was installed",
    );
    install_refused(
        user.path(),
        &format!("oci://{}", repo("by-mallory")),
        "SIGNATURE_UNTRUSTED",
        "is signed, but by none of the trusted keys (alice)",
    );
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
fn each_node_pulls_a_registry_skill_by_digest_and_checks_it_against_its_own_trust() {
    use evo_tests::cli::HttpServer;
    use evo_tests::shared::eventually;

    let author = home("");
    let keydir = tempfile::tempdir().unwrap();
    let (alice, alice_pub) = keys(author.path(), keydir.path(), "alice");
    let signed = format!("{}/nodes/text-stats:1.0", open());
    let digest = publish_signed(author.path(), skills::TEXT_STATS, &signed, &alice)["digest"]
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
        let (status, answer) = crate::serve_http::http(
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
    let (status, _) = crate::serve_http::http(
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
    install_refused(
        stranger.path(),
        &format!("oci://{reference}"),
        "REGISTRY_AUTH",
        "asks for credentials and none are set",
    );
}

/// `openssl ARGS`, which must succeed; its stdout.
pub(crate) fn openssl(args: &[&str]) -> String {
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
    let digest = publish_signed(author.path(), skills::TEXT_STATS, &reference, &alice)["digest"]
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

#[test]
fn update_takes_each_skill_on_its_own_and_locked_leaves_a_pinned_skill_as_it_is() {
    // "`evo skill update` stops at the first refusal: another skill's valid signed
    // update is neither applied nor reported until named. Update each independently;
    // report all."
    let author = home("");
    let keydir = tempfile::tempdir().unwrap();
    let (alice, alice_pub) = keys(author.path(), keydir.path(), "alice");
    let repo = |name: &str| format!("{}/updates/{name}:1.0", open());
    let first_a = publish_signed(author.path(), skills::PLAIN_KINDS, &repo("upd-a"), &alice);
    publish_signed(author.path(), skills::PLAIN_KINDS, &repo("upd-b"), &alice);
    let trust = format!(
        "[trust]\nkeys = [\"{}\"]\nrequire_signature = true\n",
        alice_pub.display()
    );
    let user = home(&trust);
    for name in ["upd-a", "upd-b"] {
        ok(
            user.path(),
            &["skill", "install", &format!("oci://{}", repo(name))],
        );
    }
    // upd-a's tag moves to an unsigned artifact, upd-b's to one alice signed.
    let moved_a = ok_json(
        author.path(),
        &["skill", "publish", skills::PLAIN_IO, &repo("upd-a")],
    );
    let moved_b = publish_signed(author.path(), skills::PLAIN_IO, &repo("upd-b"), &alice);

    let out = evo(user.path(), &["--json", "skill", "update"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    let report: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let entry = |name: &str| {
        report
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == name)
            .unwrap_or_else(|| panic!("{name} is reported: {report}"))
            .clone()
    };
    let refused = entry("upd-a");
    assert_eq!(refused["code"], "SIGNATURE_REQUIRED", "{report}");
    assert_eq!(refused["success"], false, "{report}");
    let followed = entry("upd-b");
    assert_eq!(followed["to"], moved_b["digest"], "{report}");
    let info = ok_json(user.path(), &["skill", "info", "upd-a"]);
    assert_eq!(info["installed"]["source"]["digest"], first_a["digest"]);

    // In words: each refusal with its code, each update, and how many were refused.
    let out = evo(user.path(), &["skill", "update"]);
    assert_eq!(out.status.code(), Some(2));
    let (text, errors) = (stdout(&out), stderr(&out));
    assert!(text.contains("upd-b: up to date"), "{text}");
    assert!(
        errors.contains("error[SIGNATURE_REQUIRED]: upd-a: ")
            && errors.contains("1 of 2 skills were not updated"),
        "{errors}"
    );

    // "`--locked REF` on a skill already at its pinned digest errors instead of doing
    // nothing": it does nothing, and says where the tag went.
    let locked = ok_json(
        user.path(),
        &[
            "skill",
            "install",
            "--locked",
            &format!("oci://{}", repo("upd-a")),
        ],
    );
    assert_eq!(locked["source"]["digest"], first_a["digest"], "{locked}");
    assert_eq!(locked["tagMovedTo"], moved_a["digest"], "{locked}");
    // "`--locked --json` lacks `tagMovedTo`": installing everything the lock pins on
    // another machine reports it too.
    let other = home(&trust);
    std::fs::copy(user.path().join("evo.lock"), other.path().join("evo.lock")).unwrap();
    let all = ok_json(other.path(), &["skill", "install", "--locked"]);
    let pinned_a = all
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "upd-a")
        .unwrap_or_else(|| panic!("{all}"));
    assert_eq!(pinned_a["tagMovedTo"], moved_a["digest"], "{all}");
}
