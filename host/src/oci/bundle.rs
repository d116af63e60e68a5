//! Signatures as Sigstore bundles attached through the OCI 1.1 referrers API: what
//! `cosign sign --key` writes since cosign 3.0 (and 2.6 with `--new-bundle-format`),
//! so that cosign verifies Evo's and Evo verifies cosign's:
//!
//! - the signed statement is an in-toto statement (`https://in-toto.io/Statement/v1`)
//!   whose subject is the artifact's manifest digest and whose predicate type is
//!   cosign's signature, `https://sigstore.dev/cosign/sign/v1`;
//! - it is signed in a DSSE envelope (payload type `application/vnd.in-toto+json`,
//!   ECDSA P-256 over SHA-256 of the envelope's pre-authentication encoding, ASN.1 DER);
//! - the envelope and the key's hint make a bundle
//!   (`application/vnd.dev.sigstore.bundle.v0.3+json`, the protobuf JSON form);
//! - the bundle is the one layer of an image manifest whose `artifactType` is the
//!   bundle's media type, whose config is the empty descriptor, and whose `subject` is
//!   the artifact's manifest: a registry with the referrers API lists it among the
//!   artifact's referrers; for one without, the referrers index is kept by hand under
//!   the tag `sha256-<hex>` (the distribution spec's fallback).
//!
//! Evo writes no transparency-log entry, so `cosign verify --key KEY
//! --insecure-ignore-tlog=true` is the command that verifies Evo's bundles. Keyless
//! bundles (a Fulcio certificate instead of a key) and bundles of other predicates
//! (attestations) are read and set aside with the reason.

use base64::Engine as _;
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::artifact::{self, Descriptor, Manifest};
use super::sign::{SigningKey, TrustedKey, Verdict, digest_shown, shown};
use crate::error::Result;

/// The bundle media type Evo writes and reads (cosign reads v0.3 and later only).
pub const MEDIA_TYPE: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";
/// What every Sigstore bundle media type starts with.
const MEDIA_TYPE_BASE: &str = "application/vnd.dev.sigstore.bundle";
/// The empty config of an artifact manifest, and its one blob: `{}`.
pub const EMPTY: &str = "application/vnd.oci.empty.v1+json";
/// The empty blob.
pub const EMPTY_BLOB: &[u8] = b"{}";
/// cosign's predicate type for a signature (not an attestation).
pub const PREDICATE: &str = "https://sigstore.dev/cosign/sign/v1";
/// The in-toto statement type cosign writes.
const STATEMENT: &str = "https://in-toto.io/Statement/v1";
/// The earlier statement type, still read.
const STATEMENT_V01: &str = "https://in-toto.io/Statement/v0.1";
/// The DSSE payload type of an in-toto statement.
const PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";
/// Largest bundle read: a key-based one is under 2 KB, a keyless one with its
/// certificate and log entry under 10 KB.
pub const MAX_BUNDLE_BYTES: u64 = 256 << 10;
/// Signatures checked in one envelope.
const MAX_ENVELOPE_SIGNATURES: usize = 8;

/// The tag under which a registry without the referrers API keeps `digest`'s referrers.
pub fn fallback_tag(digest: &str) -> String {
    digest.replacen(':', "-", 1)
}

/// Whether a referrer (an index entry's `artifactType`) is a Sigstore bundle.
pub fn is_bundle(artifact_type: Option<&str>) -> bool {
    artifact_type.is_some_and(|t| t.starts_with(MEDIA_TYPE_BASE))
}

/// DSSE's pre-authentication encoding: what the envelope's signature covers.
fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut bytes = format!(
        "DSSEv1 {} {payload_type} {} ",
        payload_type.len(),
        payload.len()
    )
    .into_bytes();
    bytes.extend_from_slice(payload);
    bytes
}

/// The statement signing `digest` (`sha256:…`), as cosign makes it.
fn statement(digest: &str) -> Vec<u8> {
    let (algorithm, hex) = digest.split_once(':').unwrap_or(("sha256", digest));
    let statement = json!({
        "_type": STATEMENT,
        "subject": [{ "digest": { algorithm: hex } }],
        "predicateType": PREDICATE,
        "predicate": {},
    });
    serde_json::to_vec(&statement).unwrap_or_default()
}

/// The bundle of `key`'s signature of `digest`.
pub fn write(key: &SigningKey, digest: &str) -> Result<Vec<u8>> {
    let b64 = base64::engine::general_purpose::STANDARD;
    let payload = statement(digest);
    let signature = key.sign_raw(&pae(PAYLOAD_TYPE, &payload))?;
    // The key's hint, as Sigstore's clients make it: base64 of SHA-256 of its DER.
    let hint = b64.encode(Sha256::digest(key.public_key_der()));
    let bundle = json!({
        "mediaType": MEDIA_TYPE,
        "verificationMaterial": { "publicKey": { "hint": hint } },
        "dsseEnvelope": {
            "payload": b64.encode(&payload),
            "payloadType": PAYLOAD_TYPE,
            "signatures": [{ "sig": b64.encode(signature) }],
        },
    });
    Ok(serde_json::to_vec(&bundle).unwrap_or_default())
}

/// The artifact manifest attaching `bundle` to `subject`, made at `created` (RFC 3339).
pub fn manifest(subject: Descriptor, bundle: &[u8], created: &str) -> Manifest {
    let mut manifest = Manifest::image(
        Descriptor::of(EMPTY, EMPTY_BLOB),
        vec![Descriptor::of(MEDIA_TYPE, bundle)],
    );
    manifest.artifact_type = Some(MEDIA_TYPE.to_owned());
    manifest.subject = Some(subject);
    for (key, value) in [
        ("dev.sigstore.bundle.content", "dsse-envelope"),
        ("dev.sigstore.bundle.predicateType", PREDICATE),
        ("org.opencontainers.image.created", created),
    ] {
        manifest
            .annotations
            .insert(key.to_owned(), value.to_owned());
    }
    manifest
}

/// `index` (the referrers kept under the fallback tag, if any) with `referrer`, the
/// pushed `manifest`, added (replacing an entry of the same digest).
pub fn add_referrer(index: Option<Manifest>, manifest: &Manifest) -> Manifest {
    let bytes = manifest.to_bytes();
    let mut entry = Descriptor::of(artifact::MANIFEST, &bytes);
    entry.artifact_type.clone_from(&manifest.artifact_type);
    entry.annotations.clone_from(&manifest.annotations);
    let mut manifests: Vec<Descriptor> = index
        .map(|i| i.manifests)
        .unwrap_or_default()
        .into_iter()
        .filter(|m| m.digest != entry.digest)
        .collect();
    manifests.push(entry);
    Manifest::index(manifests)
}

/// A bundle, as far as Evo reads it. Field names are protobuf JSON's (camelCase,
/// which Sigstore's clients write; the proto names are accepted too).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Bundle {
    media_type: String,
    #[serde(alias = "verification_material")]
    verification_material: Option<Material>,
    #[serde(alias = "dsse_envelope")]
    dsse_envelope: Option<Envelope>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Material {
    #[serde(alias = "public_key")]
    public_key: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Envelope {
    payload: String,
    #[serde(alias = "payload_type")]
    payload_type: String,
    #[serde(default)]
    signatures: Vec<EnvelopeSignature>,
}

#[derive(Deserialize)]
struct EnvelopeSignature {
    sig: String,
}

/// Whether one of `keys` signed the bundle `bytes`, and whether what it signed is
/// `digest`: the envelope's signature is checked first, and only then what the
/// statement says.
pub fn verify(keys: &[TrustedKey], digest: &str, bytes: &[u8]) -> Verdict {
    let bundle: Bundle = match serde_json::from_slice(bytes) {
        Ok(bundle) => bundle,
        Err(e) => {
            return Verdict::Unreadable(format!(
                "a Sigstore bundle that does not read ({})",
                shown(&e.to_string())
            ));
        }
    };
    if bundle.media_type != MEDIA_TYPE {
        return Verdict::Unreadable(format!(
            "a Sigstore bundle of type {}; Evo reads {MEDIA_TYPE}, as cosign does",
            shown(&bundle.media_type)
        ));
    }
    if bundle
        .verification_material
        .and_then(|m| m.public_key)
        .is_none()
    {
        return Verdict::Unreadable(
            "a keyless Sigstore signature (a certificate instead of a key), which Evo does not verify: [trust] keys are public keys".into(),
        );
    }
    let Some(envelope) = bundle.dsse_envelope else {
        return Verdict::Unreadable("a Sigstore bundle of a message signature, where cosign signs an artifact with a DSSE envelope".into());
    };
    if envelope.payload_type != PAYLOAD_TYPE {
        return Verdict::Unreadable(format!(
            "a DSSE envelope of {}, not of an in-toto statement",
            shown(&envelope.payload_type)
        ));
    }
    let b64 = base64::engine::general_purpose::STANDARD;
    let Ok(payload) = b64.decode(envelope.payload.trim()) else {
        return Verdict::Unreadable("a DSSE envelope whose payload is not base64".into());
    };
    let signed_bytes = pae(PAYLOAD_TYPE, &payload);
    let key = envelope
        .signatures
        .iter()
        .take(MAX_ENVELOPE_SIGNATURES)
        .find_map(|s| keys.iter().find(|k| k.verifies(&signed_bytes, &s.sig)));
    let Some(key) = key else {
        return Verdict::Untrusted;
    };
    let statement: Value = match serde_json::from_slice(&payload) {
        Ok(statement) => statement,
        Err(e) => {
            return Verdict::Unreadable(format!(
                "a statement signed by {} that does not read ({})",
                key.name,
                shown(&e.to_string())
            ));
        }
    };
    let kind = statement["_type"].as_str().unwrap_or("");
    if kind != STATEMENT && kind != STATEMENT_V01 {
        return Verdict::Unreadable(format!(
            "a statement signed by {} of type {}, not in-toto's",
            key.name,
            shown(kind)
        ));
    }
    let predicate = statement["predicateType"].as_str().unwrap_or("");
    if predicate != PREDICATE {
        return Verdict::Unreadable(format!(
            "an attestation by {} (predicate {}), not a signature ({PREDICATE})",
            key.name,
            shown(predicate)
        ));
    }
    let subjects: Vec<String> = statement["subject"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["digest"]["sha256"].as_str())
        .map(|hex| format!("sha256:{hex}"))
        .collect();
    if subjects.iter().any(|s| s == digest) {
        return Verdict::Signed(key.signer());
    }
    Verdict::ForAnother {
        signer: key.signer(),
        signed: subjects
            .first()
            .map_or_else(|| "no sha256 digest".into(), |s| digest_shown(s)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys() -> (SigningKey, TrustedKey, TrustedKey, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let (private, public) = SigningKey::generate().unwrap();
        let (_, other) = SigningKey::generate().unwrap();
        for (name, text) in [
            ("alice.key", &private),
            ("alice.pub", &public),
            ("mallory.pub", &other),
        ] {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        let key = SigningKey::read(&dir.path().join("alice.key")).unwrap();
        let alice = TrustedKey::read(&dir.path().join("alice.pub")).unwrap();
        let mallory = TrustedKey::read(&dir.path().join("mallory.pub")).unwrap();
        (key, alice, mallory, dir)
    }

    #[test]
    fn the_envelope_signs_the_pre_authentication_encoding() {
        // DSSE's own example: "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body.
        assert_eq!(
            pae("http://example.com/HelloWorld", b"hello world"),
            b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
        );
    }

    #[test]
    fn a_bundle_verifies_with_its_key_for_its_artifact_only() {
        let (key, alice, mallory, _dir) = keys();
        let digest = format!("sha256:{}", "b".repeat(64));
        let bundle = write(&key, &digest).unwrap();
        let Verdict::Signed(signer) = verify(&[mallory.clone(), alice.clone()], &digest, &bundle)
        else {
            panic!("alice's bundle does not verify");
        };
        assert_eq!(signer.key, "alice");
        assert_eq!(
            verify(std::slice::from_ref(&mallory), &digest, &bundle),
            Verdict::Untrusted
        );
        let elsewhere = format!("sha256:{}", "c".repeat(64));
        assert_eq!(
            verify(std::slice::from_ref(&alice), &elsewhere, &bundle),
            Verdict::ForAnother {
                signer,
                signed: digest.clone()
            }
        );

        // The statement is cosign's, and a changed one no longer verifies.
        let mut json: Value = serde_json::from_slice(&bundle).unwrap();
        let b64 = base64::engine::general_purpose::STANDARD;
        let payload = b64
            .decode(json["dsseEnvelope"]["payload"].as_str().unwrap())
            .unwrap();
        let statement: Value = serde_json::from_slice(&payload).unwrap();
        assert_eq!(statement["predicateType"], PREDICATE);
        assert_eq!(statement["subject"][0]["digest"]["sha256"], "b".repeat(64));
        let forged = String::from_utf8(payload)
            .unwrap()
            .replace(&"b".repeat(64), &"c".repeat(64));
        json["dsseEnvelope"]["payload"] = b64.encode(forged).into();
        let forged = serde_json::to_vec(&json).unwrap();
        assert_eq!(
            verify(std::slice::from_ref(&alice), &elsewhere, &forged),
            Verdict::Untrusted
        );
    }

    #[test]
    fn keyless_bundles_and_attestations_are_set_aside_saying_why() {
        let (key, alice, _, _dir) = keys();
        let digest = format!("sha256:{}", "b".repeat(64));
        let mut json: Value = serde_json::from_slice(&write(&key, &digest).unwrap()).unwrap();
        let keyless = {
            let mut j = json.clone();
            j["verificationMaterial"] = json!({ "certificate": { "rawBytes": "MIIB" } });
            serde_json::to_vec(&j).unwrap()
        };
        let Verdict::Unreadable(why) = verify(std::slice::from_ref(&alice), &digest, &keyless)
        else {
            panic!("a keyless bundle was read");
        };
        assert!(why.contains("keyless"), "{why}");

        // What a registry sends is shown short and printable.
        let hostile = {
            let mut j = json.clone();
            j["mediaType"] = format!("\u{1b}[2J{}", "x".repeat(10_000)).into();
            serde_json::to_vec(&j).unwrap()
        };
        let Verdict::Unreadable(why) = verify(std::slice::from_ref(&alice), &digest, &hostile)
        else {
            panic!("a bundle of another type was read");
        };
        assert!(why.len() < 300 && !why.contains('\u{1b}'), "{why}");

        // An attestation signed by alice is not her signature.
        let b64 = base64::engine::general_purpose::STANDARD;
        let statement = json!({
            "_type": STATEMENT,
            "subject": [{ "digest": { "sha256": "b".repeat(64) } }],
            "predicateType": "https://slsa.dev/provenance/v1",
            "predicate": {},
        })
        .to_string();
        let signature = key
            .sign_raw(&pae(PAYLOAD_TYPE, statement.as_bytes()))
            .unwrap();
        json["dsseEnvelope"]["payload"] = b64.encode(&statement).into();
        json["dsseEnvelope"]["signatures"][0]["sig"] = b64.encode(signature).into();
        let Verdict::Unreadable(why) =
            verify(&[alice], &digest, &serde_json::to_vec(&json).unwrap())
        else {
            panic!("an attestation counted as a signature");
        };
        assert!(why.contains("an attestation by alice"), "{why}");
    }

    #[test]
    fn the_referrer_manifest_and_its_fallback_index_are_cosigns_layout() {
        let subject = Descriptor::of(artifact::MANIFEST, b"{}");
        let m = manifest(subject.clone(), b"bundle", "2026-12-01T00:00:00Z");
        let json: Value = serde_json::from_slice(&m.to_bytes()).unwrap();
        assert_eq!(json["artifactType"], MEDIA_TYPE);
        assert_eq!(json["config"]["mediaType"], EMPTY);
        assert_eq!(
            json["config"]["digest"],
            "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
        );
        assert_eq!(json["layers"][0]["mediaType"], MEDIA_TYPE);
        assert_eq!(json["subject"]["digest"], subject.digest.as_str());
        assert_eq!(
            json["annotations"]["dev.sigstore.bundle.content"],
            "dsse-envelope"
        );

        let index = add_referrer(None, &m);
        let again = add_referrer(Some(index.clone()), &m);
        assert_eq!(
            again.manifests, index.manifests,
            "the same referrer is listed once"
        );
        assert_eq!(
            index.manifests[0].artifact_type.as_deref(),
            Some(MEDIA_TYPE)
        );
        assert_eq!(index.media_type.as_deref(), Some(artifact::INDEX));
        assert_eq!(
            fallback_tag(&subject.digest),
            subject.digest.replace(':', "-")
        );
    }
}
