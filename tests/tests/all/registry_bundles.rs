//! Signatures as Sigstore bundles attached through the OCI 1.1 referrers API (what
//! cosign 3 writes and reads first), through `evo` as users run it: Evo's bundles
//! checked by Sigstore's own JavaScript verifier (`scripts/sigstore-js/verify.js`), a
//! bundle made without Evo (OpenSSL, in cosign 2.6's layout) installed as signed, the
//! referrers API and its fallback tag both read and written, and a signature copied
//! from another artifact refused for what it is.
//!
//! Debian's distribution registry (2.8) has no referrers API, and no registry that has
//! one can be installed here; [`Front`] adds it in front of the open registry.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::{Arc, Mutex};

use evo_tests::skills;
use serde_json::{Value, json};

use crate::registry::{home_with, install_refused, keys, ok_json, open, publish_signed, sha256};
use crate::registry_trust::openssl;

const BUNDLE: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";
const INDEX: &str = "application/vnd.oci.image.index.v1+json";
const MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";

/// Referrers remembered by the front: by repository and subject digest, the index
/// entries of the manifests that name it.
type Remembered = Arc<Mutex<HashMap<(String, String), Vec<Value>>>>;

/// A front for the open registry that adds the OCI 1.1 referrers API. Every request goes
/// through to the registry unchanged; a manifest pushed with a `subject` is remembered
/// and answered with `OCI-Subject` (as a registry with the API answers), and
/// `GET /v2/NAME/referrers/DIGEST` lists what was remembered for DIGEST (`?artifactType=`
/// filters). Its limits, beside a real registry's: it knows only what was pushed through
/// it, in memory, forgets nothing deleted, and reads only `Content-Length` bodies (what
/// Evo and ureq send), one request per connection.
struct Front {
    address: String,
}

impl Front {
    fn start(upstream: String) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let remembered = Remembered::default();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (upstream, remembered) = (upstream.clone(), remembered.clone());
                std::thread::spawn(move || serve(stream, &upstream, &remembered));
            }
        });
        Self { address }
    }
}

/// Headers as `(lower-case name, value)`.
type Headers = Vec<(String, String)>;

/// One request: `(method, path, headers, body)`.
fn read_request(stream: &TcpStream) -> Option<(String, String, Headers, Vec<u8>)> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let (method, path) = (parts.next()?.to_owned(), parts.next()?.to_owned());
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).ok()?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':')?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
    }
    let length = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .map_or(0, |(_, v)| v.parse().unwrap_or(0));
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some((method, path, headers, body))
}

fn respond(
    mut stream: TcpStream,
    status: u16,
    headers: &[(String, String)],
    body: &[u8],
    head: bool,
) {
    let mut out = format!("HTTP/1.1 {status} X\r\nConnection: close\r\n");
    for (name, value) in headers {
        if !matches!(
            name.as_str(),
            "connection" | "transfer-encoding" | "content-length"
        ) {
            out.push_str(&format!("{name}: {value}\r\n"));
        }
    }
    let length = if head {
        headers
            .iter()
            .find(|(n, _)| n == "content-length")
            .map_or("0".into(), |(_, v)| v.clone())
    } else {
        body.len().to_string()
    };
    out.push_str(&format!("Content-Length: {length}\r\n\r\n"));
    let _ = stream.write_all(out.as_bytes());
    if !head {
        let _ = stream.write_all(body);
    }
}

fn serve(stream: TcpStream, upstream: &str, remembered: &Remembered) {
    let Some((method, path, headers, body)) = read_request(&stream) else {
        return;
    };
    let (route, query) = path.split_once('?').unwrap_or((&path, ""));
    if method == "GET"
        && let Some((name, digest)) = route
            .strip_prefix("/v2/")
            .and_then(|r| r.split_once("/referrers/"))
    {
        let wanted = query
            .strip_prefix("artifactType=")
            .map(|t| t.replace("%2B", "+").replace("%2F", "/"));
        let all = remembered
            .lock()
            .unwrap()
            .get(&(name.to_owned(), digest.to_owned()))
            .cloned()
            .unwrap_or_default();
        let listed: Vec<Value> = all
            .into_iter()
            .filter(|m| wanted.as_deref().is_none_or(|t| m["artifactType"] == t))
            .collect();
        let mut answer = vec![("content-type".to_owned(), INDEX.to_owned())];
        if wanted.is_some() {
            answer.push(("oci-filters-applied".into(), "artifactType".into()));
        }
        let index = json!({ "schemaVersion": 2, "mediaType": INDEX, "manifests": listed });
        return respond(stream, 200, &answer, index.to_string().as_bytes(), false);
    }
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .build()
        .into();
    let request = || {
        let mut request = http::Request::builder()
            .method(method.as_str())
            .uri(format!("http://{upstream}{path}"));
        for (name, value) in &headers {
            if !matches!(name.as_str(), "host" | "connection" | "content-length") {
                request = request.header(name, value);
            }
        }
        request.body(body.clone()).unwrap()
    };
    // A body cut short would go out under the registry's own digest header, and the
    // client would take it for a registry serving other bytes than it names: read it
    // whole, asking again (reads only) on a failure, or say the front failed.
    let attempts = if matches!(method.as_str(), "GET" | "HEAD") {
        3
    } else {
        1
    };
    let mut read = None;
    for _ in 0..attempts {
        let Ok(mut response) = agent.run(request()) else {
            continue;
        };
        let bytes = if method == "HEAD" {
            Ok(Vec::new())
        } else {
            response
                .body_mut()
                .with_config()
                .limit(1 << 30)
                .read_to_vec()
        };
        if let Ok(bytes) = bytes {
            read = Some((response, bytes));
            break;
        }
    }
    let Some((response, bytes)) = read else {
        return respond(
            stream,
            502,
            &[],
            b"the registry behind the front did not answer, or its answer could not be read whole",
            false,
        );
    };
    let status = response.status().as_u16();
    let mut answer: Vec<(String, String)> = response
        .headers()
        .iter()
        .map(|(n, v)| (n.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
        .collect();
    if method == "PUT"
        && status == 201
        && let Some((name, _)) = route
            .strip_prefix("/v2/")
            .and_then(|r| r.split_once("/manifests/"))
        && let Ok(manifest) = serde_json::from_slice::<Value>(&body)
        && let Some(subject) = manifest["subject"]["digest"].as_str()
    {
        let artifact_type = manifest
            .get("artifactType")
            .unwrap_or(&manifest["config"]["mediaType"])
            .clone();
        let mut entry = json!({
            "mediaType": manifest.get("mediaType").cloned().unwrap_or(MANIFEST.into()),
            "digest": sha256(&body),
            "size": body.len(),
            "artifactType": artifact_type,
        });
        if let Some(annotations) = manifest.get("annotations") {
            entry["annotations"] = annotations.clone();
        }
        remembered
            .lock()
            .unwrap()
            .entry((name.to_owned(), subject.to_owned()))
            .or_default()
            .push(entry);
        answer.push(("oci-subject".into(), subject.to_owned()));
    }
    respond(stream, status, &answer, &bytes, method == "HEAD");
}

/// A data directory reaching the open registry and `front` over plain HTTP, trusting
/// `key` when given (with `require_signature` as given).
fn home_at(front: &str, trust: Option<(&str, bool)>) -> tempfile::TempDir {
    let trust = trust.map_or_else(String::new, |(key, require)| {
        format!("[trust]\nkeys = [\"{key}\"]\nrequire_signature = {require}\n")
    });
    home_with(&format!(
        "[registries]\ninsecure = [\"{}\", \"{front}\"]\n{trust}",
        open()
    ))
}

/// GET of `path` (after `/v2/`) on `registry`: the status and body.
fn get(registry: &str, path: &str) -> (u16, Vec<u8>) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let mut response = agent
        .get(format!("http://{registry}/v2/{path}"))
        .header("Accept", format!("{MANIFEST}, {INDEX}"))
        .call()
        .unwrap();
    let status = response.status().as_u16();
    (status, response.body_mut().read_to_vec().unwrap())
}

fn get_json(registry: &str, path: &str) -> Value {
    let (status, body) = get(registry, path);
    assert_eq!(
        status,
        200,
        "GET {path}: {}",
        String::from_utf8_lossy(&body)
    );
    serde_json::from_slice(&body).unwrap()
}

/// Pushes `bytes` as a blob of `repository`.
fn push_blob(registry: &str, repository: &str, bytes: &[u8]) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .max_redirects(0)
        .build()
        .into();
    let started = agent
        .post(format!("http://{registry}/v2/{repository}/blobs/uploads/"))
        .send_empty()
        .unwrap();
    let location = started
        .headers()
        .get("location")
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    let location = if location.starts_with('/') {
        format!("http://{registry}{location}")
    } else {
        location
    };
    let join = if location.contains('?') { '&' } else { '?' };
    agent
        .put(format!(
            "{location}{join}digest={}",
            sha256(bytes).replace(':', "%3A")
        ))
        .header("Content-Type", "application/octet-stream")
        .send(bytes)
        .unwrap();
}

/// Pushes `manifest` to `repository` under `target` (a tag, or its digest).
fn push_manifest(registry: &str, repository: &str, target: &str, manifest: &Value) {
    let bytes = serde_json::to_vec(manifest).unwrap();
    let media_type = manifest["mediaType"].as_str().unwrap_or(MANIFEST);
    ureq::put(format!(
        "http://{registry}/v2/{repository}/manifests/{target}"
    ))
    .header("Content-Type", media_type)
    .send(&bytes[..])
    .unwrap();
}

/// The descriptor of the manifest `digest` names in `repository`.
fn subject(registry: &str, repository: &str, digest: &str) -> Value {
    let (status, bytes) = get(registry, &format!("{repository}/manifests/{digest}"));
    assert_eq!(status, 200);
    json!({ "mediaType": MANIFEST, "digest": digest, "size": bytes.len() })
}

/// Attaches `bundle` to `digest` in `repository` as cosign does, through the front's
/// referrers API.
fn attach(front: &str, repository: &str, digest: &str, bundle: &[u8]) {
    push_blob(front, repository, bundle);
    push_blob(front, repository, b"{}");
    let manifest = json!({
        "schemaVersion": 2,
        "mediaType": MANIFEST,
        "artifactType": BUNDLE,
        "config": { "mediaType": "application/vnd.oci.empty.v1+json", "digest": sha256(b"{}"), "size": 2 },
        "layers": [{ "mediaType": BUNDLE, "digest": sha256(bundle), "size": bundle.len() }],
        "subject": subject(front, repository, digest),
        "annotations": { "dev.sigstore.bundle.content": "dsse-envelope", "dev.sigstore.bundle.predicateType": "https://sigstore.dev/cosign/sign/v1" },
    });
    let bytes = serde_json::to_vec(&manifest).unwrap();
    push_manifest(front, repository, &sha256(&bytes), &manifest);
}

/// The one Sigstore bundle attached to `digest` in `repository`, found through the
/// referrers API (`front`) or the fallback tag.
fn bundle_of(registry: &str, repository: &str, digest: &str, through_api: bool) -> Vec<u8> {
    let index = if through_api {
        get_json(registry, &format!("{repository}/referrers/{digest}"))
    } else {
        get_json(
            registry,
            &format!("{repository}/manifests/{}", digest.replace(':', "-")),
        )
    };
    let entries: Vec<&Value> = index["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["artifactType"] == BUNDLE)
        .collect();
    assert_eq!(entries.len(), 1, "{index}");
    assert_eq!(
        entries[0]["annotations"]["dev.sigstore.bundle.predicateType"],
        "https://sigstore.dev/cosign/sign/v1"
    );
    let manifest = get_json(
        registry,
        &format!(
            "{repository}/manifests/{}",
            entries[0]["digest"].as_str().unwrap()
        ),
    );
    assert_eq!(manifest["subject"]["digest"], digest, "{manifest}");
    assert_eq!(
        manifest["config"]["mediaType"],
        "application/vnd.oci.empty.v1+json"
    );
    let layer = &manifest["layers"][0];
    assert_eq!(layer["mediaType"], BUNDLE);
    let (status, bytes) = get(
        registry,
        &format!("{repository}/blobs/{}", layer["digest"].as_str().unwrap()),
    );
    assert_eq!(status, 200);
    bytes
}

/// Sigstore's JavaScript verifier on `bundle`, with `key`, for `digest`: its output, or
/// its error.
fn sigstore_verify(bundle: &[u8], key: &Path, digest: &str) -> Result<Value, String> {
    let script = std::env::var("EVO_SIGSTORE_VERIFY").expect(
        "EVO_SIGSTORE_VERIFY is not set: ./scripts/test installs Sigstore's verifier (scripts/sigstore-js.sh)",
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bundle.json");
    std::fs::write(&path, bundle).unwrap();
    let out = std::process::Command::new("node")
        .arg(script)
        .arg(&path)
        .arg(key)
        .arg(digest)
        .output()
        .unwrap();
    if out.status.success() {
        Ok(serde_json::from_slice(&out.stdout).unwrap())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// Deletes the `.sig` tag's signatures of `digest`, leaving only the bundles.
fn delete_tag_signatures(registry: &str, repository: &str, digest: &str) {
    let tag = format!("{}.sig", digest.replace(':', "-"));
    let (status, bytes) = get(registry, &format!("{repository}/manifests/{tag}"));
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&bytes));
    ureq::delete(format!(
        "http://{registry}/v2/{repository}/manifests/{}",
        sha256(&bytes)
    ))
    .call()
    .unwrap();
    assert_eq!(
        get(registry, &format!("{repository}/manifests/{tag}")).0,
        404
    );
}

#[test]
fn sigstore_bundles_are_written_and_read_through_the_referrers_api_and_its_fallback_tag() {
    let front = Front::start(open());
    let front = front.address.as_str();
    let author = home_at(front, None);
    let work = tempfile::tempdir().unwrap();
    let (alice, alice_pub) = keys(author.path(), work.path(), "alice");
    let (_, mallory_pub) = keys(author.path(), work.path(), "mallory");
    let digest_of = |published: Value| published["digest"].as_str().unwrap().to_owned();

    // Through a registry with the referrers API: the bundle is its referrer, and no
    // fallback tag is written.
    let through_api = digest_of(publish_signed(
        author.path(),
        skills::FILE_HEAD,
        &format!("{front}/bundles/file-head:1.0"),
        &alice,
    ));
    let bundle = bundle_of(front, "bundles/file-head", &through_api, true);
    assert_eq!(
        get(
            &open(),
            &format!(
                "bundles/file-head/manifests/{}",
                through_api.replace(':', "-")
            )
        )
        .0,
        404
    );
    // Sigstore's own verifier takes it with alice's key, for this artifact only.
    let verified = sigstore_verify(&bundle, &alice_pub, &through_api).unwrap();
    assert_eq!(
        verified["predicateType"],
        "https://sigstore.dev/cosign/sign/v1"
    );
    let refused = sigstore_verify(&bundle, &mallory_pub, &through_api).unwrap_err();
    assert!(
        refused.contains("signature verification failed"),
        "{refused}"
    );
    let other = format!("sha256:{}", "0".repeat(64));
    let refused = sigstore_verify(&bundle, &alice_pub, &other).unwrap_err();
    assert!(refused.contains("do not include"), "{refused}");

    // Through Debian's registry, without the API: the referrers index under the
    // fallback tag `sha256-<hex>`.
    let by_tag = digest_of(publish_signed(
        author.path(),
        skills::TEXT_STATS,
        &format!("{}/bundles/text-stats:1.0", open()),
        &alice,
    ));
    let bundle = bundle_of(&open(), "bundles/text-stats", &by_tag, false);
    sigstore_verify(&bundle, &alice_pub, &by_tag).unwrap();

    // With the `.sig` tags gone, the bundles alone make them signed.
    delete_tag_signatures(&open(), "bundles/file-head", &through_api);
    delete_tag_signatures(&open(), "bundles/text-stats", &by_tag);
    let trusting = |key: &Path| home_at(front, Some((key.to_str().unwrap(), true)));
    let user = trusting(&alice_pub);
    for reference in [
        format!("{front}/bundles/file-head:1.0"),
        format!("{}/bundles/text-stats:1.0", open()),
    ] {
        let installed = ok_json(
            user.path(),
            &["skill", "install", &format!("oci://{reference}")],
        );
        assert_eq!(
            installed["source"]["signer"]["key"], "alice",
            "{reference}: {installed}"
        );
    }
    install_refused(
        trusting(&mallory_pub).path(),
        &format!("oci://{front}/bundles/file-head:1.0"),
        "SIGNATURE_UNTRUSTED",
        "is signed, but by none of the trusted keys (mallory)",
    );
}

#[test]
fn a_bundle_made_without_evo_verifies_and_one_copied_from_another_artifact_is_refused_as_such() {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD;
    let front = Front::start(open());
    let front = front.address.as_str();
    let author = home_at(front, None);
    let work = tempfile::tempdir().unwrap();
    let file = |name: &str| work.path().join(name).to_str().unwrap().to_owned();

    // A bundle as cosign 2.6 writes it (`cosign sign --new-bundle-format --key`: its
    // statement has no predicate), signed by OpenSSL, attached by hand.
    let theirs = ok_json(
        author.path(),
        &[
            "skill",
            "publish",
            skills::NOTES,
            &format!("{front}/made-elsewhere/notes:1.0"),
        ],
    );
    let digest = theirs["digest"].as_str().unwrap();
    openssl(&[
        "genpkey",
        "-algorithm",
        "EC",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-out",
        &file("openssl.key"),
    ]);
    openssl(&[
        "pkey",
        "-in",
        &file("openssl.key"),
        "-pubout",
        "-out",
        &file("openssl.pub"),
    ]);
    openssl(&[
        "pkey",
        "-pubin",
        "-in",
        &file("openssl.pub"),
        "-outform",
        "DER",
        "-out",
        &file("openssl.der"),
    ]);
    // Sigstore's clients hint at the key with base64 of SHA-256 of its DER.
    let hint = b64.encode(<sha2::Sha256 as sha2::Digest>::digest(
        std::fs::read(file("openssl.der")).unwrap(),
    ));
    let statement = json!({
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{ "digest": { "sha256": &digest[7..] } }],
        "predicateType": "https://sigstore.dev/cosign/sign/v1",
    })
    .to_string();
    let payload_type = "application/vnd.in-toto+json";
    let pae = format!(
        "DSSEv1 {} {payload_type} {} {statement}",
        payload_type.len(),
        statement.len()
    );
    std::fs::write(file("pae"), &pae).unwrap();
    openssl(&[
        "dgst",
        "-sha256",
        "-sign",
        &file("openssl.key"),
        "-out",
        &file("pae.sig"),
        &file("pae"),
    ]);
    let bundle = json!({
        "mediaType": BUNDLE,
        "verificationMaterial": { "publicKey": { "hint": hint } },
        "dsseEnvelope": {
            "payload": b64.encode(&statement),
            "payloadType": payload_type,
            "signatures": [{ "sig": b64.encode(std::fs::read(file("pae.sig")).unwrap()) }],
        },
    });
    attach(
        front,
        "made-elsewhere/notes",
        digest,
        &serde_json::to_vec(&bundle).unwrap(),
    );
    let trusting = |key: &str, require: bool| home_at(front, Some((key, require)));
    let user = trusting(&file("openssl.pub"), true);
    let installed = ok_json(
        user.path(),
        &[
            "skill",
            "install",
            &format!("oci://{front}/made-elsewhere/notes:1.0"),
        ],
    );
    assert_eq!(
        installed["source"]["signer"]["key"], "openssl",
        "{installed}"
    );

    // Alice's genuine bundle for one artifact, attached to another (a signature
    // replayed from elsewhere): refused as made for another artifact, not as an
    // unknown key.
    let (alice, alice_pub) = keys(author.path(), work.path(), "alice");
    let signed = publish_signed(
        author.path(),
        skills::FILE_HEAD,
        &format!("{front}/replay/signed:1.0"),
        &alice,
    );
    let signed = signed["digest"].as_str().unwrap();
    let genuine = bundle_of(front, "replay/signed", signed, true);
    let target = ok_json(
        author.path(),
        &[
            "skill",
            "publish",
            skills::TEXT_STATS,
            &format!("{front}/replay/target:1.0"),
        ],
    );
    let target = target["digest"].as_str().unwrap();
    attach(front, "replay/target", target, &genuine);
    let alice_pub = alice_pub.to_str().unwrap();
    let says = format!(
        "carries a signature by alice (a trusted key) made for another artifact ({signed})"
    );
    install_refused(
        trusting(alice_pub, true).path(),
        &format!("oci://{front}/replay/target:1.0"),
        "SIGNATURE_MISMATCH",
        &says,
    );
    let out = evo_tests::cli::evo(
        trusting(alice_pub, true).path(),
        &[
            "skill",
            "install",
            &format!("oci://{front}/replay/target:1.0"),
        ],
    );
    let err = evo_tests::cli::stderr(&out);
    assert!(!err.contains("add the publisher's public key"), "{err}");
    assert!(
        err.contains("ask the publisher which digest they signed"),
        "{err}"
    );

    // The same with cosign's `.sig` tag: alice's signature manifest copied to the tag of
    // another artifact.
    let tag_of = |digest: &str| format!("{}.sig", digest.replace(':', "-"));
    let (status, copied) = get(
        front,
        &format!("replay/signed/manifests/{}", tag_of(signed)),
    );
    assert_eq!(status, 200);
    let copied: Value = serde_json::from_slice(&copied).unwrap();
    for layer in copied["layers"]
        .as_array()
        .unwrap()
        .iter()
        .chain([&copied["config"]])
    {
        let (_, blob) = get(
            front,
            &format!("replay/signed/blobs/{}", layer["digest"].as_str().unwrap()),
        );
        push_blob(front, "replay/tagged", &blob);
    }
    let tagged = ok_json(
        author.path(),
        &[
            "skill",
            "publish",
            skills::PLAIN_IO,
            &format!("{front}/replay/tagged:1.0"),
        ],
    );
    let tagged = tagged["digest"].as_str().unwrap();
    push_manifest(front, "replay/tagged", &tag_of(tagged), &copied);
    install_refused(
        trusting(alice_pub, true).path(),
        &format!("oci://{front}/replay/tagged:1.0"),
        "SIGNATURE_MISMATCH",
        &says,
    );
    // Without require_signature it installs, unsigned, with the warning saying why.
    let relaxed = trusting(alice_pub, false);
    let installed = ok_json(
        relaxed.path(),
        &[
            "skill",
            "install",
            &format!("oci://{front}/replay/tagged:1.0"),
        ],
    );
    assert!(installed["source"].get("signer").is_none(), "{installed}");
    assert!(
        installed["warnings"][0].as_str().unwrap().contains(&says),
        "{installed}"
    );
}
