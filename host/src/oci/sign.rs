//! Signatures as cosign makes them with a key (`cosign sign --key`), so that cosign
//! verifies Evo's and Evo verifies cosign's:
//!
//! - the signed payload is a "simple signing" JSON document naming the repository and
//!   the artifact's manifest digest;
//! - the signature is ECDSA P-256 over SHA-256 of the payload, ASN.1 DER, base64;
//! - both go to the same repository as an image manifest tagged `sha256-<hex>.sig`,
//!   one layer per signature (`application/vnd.dev.cosign.simplesigning.v1+json`, the
//!   payload), the signature in the layer's `dev.cosignproject.cosign/signature`
//!   annotation.
//!
//! Keys are PEM: a PKCS#8 private key to sign (`evo skill keygen`, or `openssl genpkey
//! -algorithm EC -pkeyopt ec_paramgen_curve:P-256`; `cosign import-key-pair` takes the
//! same file), and the SubjectPublicKeyInfo public key (`cosign.pub`) to verify.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, KeyPair, UnparsedPublicKey};
use serde_json::{Value, json};

use super::artifact::{self, Descriptor, Manifest};
use crate::error::{Error, Result};
use crate::skill::manifest::package::Signer;

/// A signature layer's media type.
pub const PAYLOAD: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// The annotation holding a layer's signature.
pub const ANNOTATION: &str = "dev.cosignproject.cosign/signature";
/// What a payload's `critical.type` says.
const PAYLOAD_TYPE: &str = "cosign container image signature";
/// Largest payload read: real ones are a few hundred bytes.
pub const MAX_PAYLOAD_BYTES: u64 = 64 << 10;
/// Most signatures read from one signature manifest.
pub const MAX_SIGNATURES: usize = 32;

/// DER of a P-256 SubjectPublicKeyInfo up to the 65-byte uncompressed point.
const P256_SPKI_PREFIX: [u8; 26] = [
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a,
    0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];

fn key_invalid(path: &Path, why: impl std::fmt::Display) -> Error {
    Error::Registry {
        code: "KEY_INVALID",
        message: format!("{}: {why}", path.display()),
        transient: false,
    }
}

/// The tag of `digest`'s signatures.
pub fn tag(digest: &str) -> String {
    digest.replacen(':', "-", 1) + ".sig"
}

/// The DER inside the PEM block `label` of `text`.
fn pem(text: &str, label: &str) -> Option<Vec<u8>> {
    let begin = format!("-----BEGIN {label}-----");
    let end = format!("-----END {label}-----");
    let start = text.find(&begin)? + begin.len();
    let stop = start + text[start..].find(&end)?;
    let body: String = text[start..stop].split_whitespace().collect();
    base64::engine::general_purpose::STANDARD.decode(body).ok()
}

/// The label of the first PEM block in `text`.
fn pem_label(text: &str) -> Option<&str> {
    let start = text.find("-----BEGIN ")? + "-----BEGIN ".len();
    let len = text[start..].find("-----")?;
    Some(&text[start..start + len])
}

/// A key to sign with.
pub struct SigningKey {
    pair: EcdsaKeyPair,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SigningKey(..)")
    }
}

impl SigningKey {
    /// Reads the PKCS#8 PEM private key at `path`.
    pub fn read(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| key_invalid(path, e))?;
        let der = match pem_label(&text) {
            Some("PRIVATE KEY") => pem(&text, "PRIVATE KEY"),
            Some(label @ ("ENCRYPTED SIGSTORE PRIVATE KEY" | "ENCRYPTED COSIGN PRIVATE KEY")) => {
                return Err(key_invalid(
                    path,
                    format!(
                        "a cosign key ({label}) is encrypted with a password Evo does not read; sign with a PKCS#8 key (`evo skill keygen`), which `cosign import-key-pair` also takes"
                    ),
                ));
            }
            Some("EC PRIVATE KEY") => {
                return Err(key_invalid(
                    path,
                    "an EC PRIVATE KEY (SEC1); convert it to PKCS#8: `openssl pkcs8 -topk8 -nocrypt -in KEY -out KEY.pk8`",
                ));
            }
            _ => None,
        }
        .ok_or_else(|| key_invalid(path, "not a PEM private key (-----BEGIN PRIVATE KEY-----)"))?;
        let pair = EcdsaKeyPair::from_pkcs8(
            &signature::ECDSA_P256_SHA256_ASN1_SIGNING,
            &der,
            &SystemRandom::new(),
        )
        .map_err(|e| key_invalid(path, format!("not an ECDSA P-256 private key ({e})")))?;
        Ok(Self { pair })
    }

    /// A new key pair: the private key (PKCS#8 PEM) and the public key (SPKI PEM).
    pub fn generate() -> Result<(String, String)> {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&signature::ECDSA_P256_SHA256_ASN1_SIGNING, &rng)
            .map_err(|_| Error::Engine("the system's random source failed".into()))?;
        let pair = EcdsaKeyPair::from_pkcs8(
            &signature::ECDSA_P256_SHA256_ASN1_SIGNING,
            pkcs8.as_ref(),
            &rng,
        )
        .map_err(|e| Error::Engine(format!("a generated key was refused: {e}")))?;
        let spki = Self { pair }.public_key_der();
        Ok((
            to_pem("PRIVATE KEY", pkcs8.as_ref()),
            to_pem("PUBLIC KEY", &spki),
        ))
    }

    /// The DER of its public key (SubjectPublicKeyInfo), as `[trust] keys` holds it.
    pub fn public_key_der(&self) -> Vec<u8> {
        let mut spki = P256_SPKI_PREFIX.to_vec();
        spki.extend_from_slice(self.pair.public_key().as_ref());
        spki
    }

    /// The base64 signature of `payload`.
    pub fn sign(&self, payload: &[u8]) -> Result<String> {
        Ok(base64::engine::general_purpose::STANDARD.encode(self.sign_raw(payload)?))
    }

    /// The signature of `payload` (ASN.1 DER).
    pub fn sign_raw(&self, payload: &[u8]) -> Result<Vec<u8>> {
        let signature = self
            .pair
            .sign(&SystemRandom::new(), payload)
            .map_err(|_| Error::Engine("signing failed".into()))?;
        Ok(signature.as_ref().to_vec())
    }
}

fn to_pem(label: &str, der: &[u8]) -> String {
    let body = base64::engine::general_purpose::STANDARD.encode(der);
    let lines: Vec<&str> = body
        .as_bytes()
        .chunks(64)
        .map(|c| std::str::from_utf8(c).unwrap_or(""))
        .collect();
    format!(
        "-----BEGIN {label}-----\n{}\n-----END {label}-----\n",
        lines.join("\n")
    )
}

/// A public key whose signatures are trusted.
#[derive(Debug, Clone)]
pub struct TrustedKey {
    /// Its file's name without the extension (`alice` of `keys/alice.pub`).
    pub name: String,
    /// `sha256:` of its DER, to tell keys apart.
    pub fingerprint: String,
    point: Vec<u8>,
}

impl TrustedKey {
    /// Reads the PEM public key at `path`.
    pub fn read(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| key_invalid(path, e))?;
        let der = pem(&text, "PUBLIC KEY").ok_or_else(|| {
            key_invalid(path, "not a PEM public key (-----BEGIN PUBLIC KEY-----)")
        })?;
        let point = der
            .strip_prefix(&P256_SPKI_PREFIX[..])
            .filter(|point| point.len() == 65)
            .ok_or_else(|| {
                key_invalid(
                    path,
                    "not an ECDSA P-256 public key (the kind cosign makes)",
                )
            })?;
        let name = path.file_stem().map_or_else(
            || path.display().to_string(),
            |s| s.to_string_lossy().into_owned(),
        );
        Ok(Self {
            name,
            fingerprint: artifact::digest_of(&der),
            point: point.to_vec(),
        })
    }

    /// Reads every key of `paths`.
    pub fn read_all(paths: &[PathBuf]) -> Result<Vec<Self>> {
        paths.iter().map(|p| Self::read(p)).collect()
    }

    /// Whether `signature` (base64 of ASN.1 DER) is this key's of `payload`.
    pub(super) fn verifies(&self, payload: &[u8], signature: &str) -> bool {
        let Ok(signature) = base64::engine::general_purpose::STANDARD.decode(signature.trim())
        else {
            return false;
        };
        UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_ASN1, &self.point)
            .verify(payload, &signature)
            .is_ok()
    }

    /// The signer this key names.
    pub(super) fn signer(&self) -> Signer {
        Signer {
            key: self.name.clone(),
            fingerprint: self.fingerprint.clone(),
        }
    }
}

/// `text` from a registry as a message may show it: at most 100 characters, quoted,
/// control characters escaped (what a registry sends is not trusted to be short or
/// printable).
pub(super) fn shown(text: &str) -> String {
    let head: String = text.chars().take(100).collect();
    let more = if head.len() < text.len() { "…" } else { "" };
    format!("{head:?}{more}")
}

/// `digest` if it is one (`sha256:` and 64 hex digits), else said to be none.
pub(super) fn digest_shown(digest: &str) -> String {
    if super::reference::is_digest(digest) {
        digest.to_owned()
    } else {
        format!("{}, not a digest", shown(digest))
    }
}

/// What one signature says of an artifact, checked against the trusted keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// A trusted key signed this artifact.
    Signed(Signer),
    /// A trusted key signed, but another artifact (`signed`, its digest): a signature
    /// copied from elsewhere, or a tag moved onto other bytes.
    ForAnother {
        /// Who signed it.
        signer: Signer,
        /// The digest it signs.
        signed: String,
    },
    /// None of the trusted keys made it.
    Untrusted,
    /// Not a signature Evo verifies (why: a keyless one, an attestation, …).
    Unreadable(String),
}

/// The payload signing `digest` in `repository` (`registry/repository`).
pub fn payload(repository: &str, digest: &str) -> Vec<u8> {
    let payload = json!({
        "critical": {
            "identity": { "docker-reference": repository },
            "image": { "docker-manifest-digest": digest },
            "type": PAYLOAD_TYPE,
        },
        "optional": null,
    });
    serde_json::to_vec(&payload).unwrap_or_default()
}

/// The digest `payload` signs, when it is a cosign signature payload.
fn signed_digest(payload: &[u8]) -> Option<String> {
    let value = serde_json::from_slice::<Value>(payload).ok()?;
    if value.pointer("/critical/type").and_then(Value::as_str) != Some(PAYLOAD_TYPE) {
        return None;
    }
    value
        .pointer("/critical/image/docker-manifest-digest")
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// The signature manifest with `payload` signed by `signature` added to `existing`'s
/// signatures (another signer's stay), and its config blob.
pub fn manifest(
    existing: Option<Manifest>,
    payload: &[u8],
    signature: &str,
) -> (Manifest, Vec<u8>) {
    let mut layer = Descriptor::of(PAYLOAD, payload);
    layer
        .annotations
        .insert(ANNOTATION.to_owned(), signature.to_owned());
    let mut layers: Vec<Descriptor> = existing
        .map(|m| m.layers)
        .unwrap_or_default()
        .into_iter()
        .filter(|l| {
            l.media_type == PAYLOAD && l.annotations.get(ANNOTATION) != Some(&signature.to_owned())
        })
        .collect();
    layers.push(layer);
    let zero = "0001-01-01T00:00:00Z";
    let config = json!({
        "architecture": "",
        "created": zero,
        "history": [{ "created": zero }],
        "os": "",
        "rootfs": { "type": "layers", "diff_ids": layers.iter().map(|l| l.digest.clone()).collect::<Vec<_>>() },
        "config": {},
    });
    let config = serde_json::to_vec(&config).unwrap_or_default();
    let manifest = Manifest::image(
        Descriptor::of("application/vnd.oci.image.config.v1+json", &config),
        layers,
    );
    (manifest, config)
}

/// The signature layers of a signature manifest: each layer's descriptor and the
/// signature it carries (at most [`MAX_SIGNATURES`]).
pub fn signatures(manifest: &Manifest) -> Vec<(Descriptor, String)> {
    manifest
        .layers
        .iter()
        .filter(|l| l.media_type == PAYLOAD)
        .filter_map(|l| Some((l.clone(), l.annotations.get(ANNOTATION)?.clone())))
        .take(MAX_SIGNATURES)
        .collect()
}

/// Whether one of `keys` made `signature` over `payload`, and whether that payload
/// signs `digest`.
pub fn verify(keys: &[TrustedKey], digest: &str, payload: &[u8], signature: &str) -> Verdict {
    let Some(key) = keys.iter().find(|k| k.verifies(payload, signature)) else {
        return Verdict::Untrusted;
    };
    match signed_digest(payload) {
        Some(signed) if signed == digest => Verdict::Signed(key.signer()),
        Some(signed) => Verdict::ForAnother {
            signer: key.signer(),
            signed: digest_shown(&signed),
        },
        None => Verdict::Unreadable(format!(
            "a payload signed by {} that is not a cosign signature payload",
            key.name
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_verifies_with_its_key_only() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            path
        };
        let (private, public) = SigningKey::generate().unwrap();
        let (_, other) = SigningKey::generate().unwrap();
        let key = SigningKey::read(&write("alice.key", &private)).unwrap();
        let alice = TrustedKey::read(&write("alice.pub", &public)).unwrap();
        let mallory = TrustedKey::read(&write("mallory.pub", &other)).unwrap();
        let digest = format!("sha256:{}", "b".repeat(64));
        let body = payload("127.0.0.1:5000/evo/echo", &digest);
        let signature = key.sign(&body).unwrap();

        let Verdict::Signed(signer) = verify(
            &[mallory.clone(), alice.clone()],
            &digest,
            &body,
            &signature,
        ) else {
            panic!("alice's signature does not verify");
        };
        assert_eq!(signer.key, "alice");
        assert_eq!(
            verify(&[mallory], &digest, &body, &signature),
            Verdict::Untrusted,
            "another key"
        );
        let elsewhere = format!("sha256:{}", "c".repeat(64));
        assert_eq!(
            verify(std::slice::from_ref(&alice), &elsewhere, &body, &signature),
            Verdict::ForAnother {
                signer,
                signed: digest.clone()
            },
            "another artifact"
        );
        let mut forged = body.clone();
        forged[5] ^= 1;
        assert_eq!(
            verify(&[alice], &digest, &forged, &signature),
            Verdict::Untrusted,
            "another payload"
        );
        assert_eq!(tag(&digest), format!("sha256-{}.sig", "b".repeat(64)));
    }

    #[test]
    fn keys_of_other_kinds_are_refused_saying_what_to_use() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cosign.key");
        std::fs::write(&path, "-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED SIGSTORE PRIVATE KEY-----\n").unwrap();
        let err = SigningKey::read(&path).unwrap_err();
        assert_eq!(err.code(), "KEY_INVALID");
        assert!(err.to_string().contains("evo skill keygen"), "{err}");
        std::fs::write(&path, "not a key").unwrap();
        assert!(
            TrustedKey::read(&path)
                .unwrap_err()
                .to_string()
                .contains("not a PEM public key")
        );
    }
}
