//! Skills in OCI registries: publishing a component or a skill directory as an OCI
//! artifact, pulling one back with every byte checked against its digest, and
//! cosign-compatible signatures beside it ([`sign`]). What is pulled is installed by the
//! skill manager like any other source; the lock file ([`lock`]) pins what was.

pub mod artifact;
pub mod client;
pub mod lock;
pub mod reference;
pub mod settings;
pub mod sign;

pub use artifact::Kind;
pub use client::Client;
pub use reference::Reference;
pub use settings::{CredentialSettings, Registries, RegistrySettings, TrustSettings};
pub use crate::skill::package::{RegistrySource, Signer};
pub use sign::{SigningKey, TrustedKey};

use crate::error::{Error, Result};

/// A new key pair to sign published skills with: the private key (ECDSA P-256, PKCS#8
/// PEM) and its public key (SubjectPublicKeyInfo PEM, what `[trust] keys` lists).
pub fn generate_signing_key() -> Result<(String, String)> {
    SigningKey::generate()
}

/// The largest layers pulled, in bytes.
#[derive(Debug, Clone, Copy)]
pub struct Caps {
    /// A component.
    pub component: u64,
    /// A skill directory's ZIP.
    pub archive: u64,
}

/// An artifact pulled and checked, not yet installed.
#[derive(Debug)]
pub struct Pulled {
    /// What it holds.
    pub kind: Kind,
    /// The manifest's digest.
    pub digest: String,
    /// The layer: a component's bytes, or a skill directory's ZIP.
    pub bytes: Vec<u8>,
    /// Who signed it, among the trusted keys.
    pub signer: Option<Signer>,
    /// What the user should know (unsigned, signed by an unknown key).
    pub warnings: Vec<String>,
}

/// A registry session: the client (cheap to clone, sharing its tokens) and whom to
/// trust.
#[derive(Debug, Clone)]
pub struct Registry {
    client: std::sync::Arc<Client>,
    keys: Vec<TrustedKey>,
    require_signature: bool,
}

impl Registry {
    /// A session with `registries`, trusting `trust`'s keys (read now: a key that does
    /// not read is an error before anything is fetched).
    pub fn new(registries: Registries, trust: &TrustSettings) -> Result<Self> {
        Ok(Self {
            client: std::sync::Arc::new(Client::new(registries)),
            keys: TrustedKey::read_all(&trust.keys)?,
            require_signature: trust.require_signature,
        })
    }

    /// The digest `r`'s tag (or digest) names now.
    pub fn resolve(&self, r: &Reference) -> Result<String> {
        self.client.manifest(r).map(|(digest, _)| digest)
    }

    /// Pulls the artifact `r` names: the manifest (checked against its digest and for
    /// its media types), its signatures (checked against the trusted keys, refused
    /// when a signature is required and none verifies), then its one layer, at most
    /// `caps` bytes (a component's, a skill directory ZIP's), checked against its digest
    /// as it streams in.
    pub fn pull(&self, r: &Reference, caps: Caps, progress: Option<client::Progress<'_>>) -> Result<Pulled> {
        let (digest, manifest) = self.client.manifest(r)?;
        let (kind, layer) = artifact::classify(&r.to_string(), &manifest)?;
        let (signer, warnings) = self.check_signature(r, &digest)?;
        let cap = match kind {
            Kind::Component => caps.component,
            Kind::Skill => caps.archive,
        };
        let bytes = self.client.blob(r, &layer, cap, progress)?;
        if kind == Kind::Component && !bytes.starts_with(b"\0asm") {
            return Err(Error::Registry {
                code: "ARTIFACT_INVALID",
                message: format!("{r}: its application/wasm layer is not WebAssembly"),
                transient: false,
            });
        }
        Ok(Pulled {
            kind,
            digest,
            bytes,
            signer,
            warnings,
        })
    }

    /// Who of the trusted keys signed `digest` in `r`'s repository; an error when a
    /// signature is required and none of them did.
    fn check_signature(&self, r: &Reference, digest: &str) -> Result<(Option<Signer>, Vec<String>)> {
        let signatures = match self.client.manifest(&r.tagged(&sign::tag(digest))) {
            Ok((_, manifest)) => sign::signatures(&manifest),
            Err(Error::Registry { code: "ARTIFACT_NOT_FOUND", .. }) => Vec::new(),
            Err(e) => return Err(e),
        };
        for (layer, signature) in &signatures {
            let payload = self.client.blob(r, layer, sign::MAX_PAYLOAD_BYTES, None)?;
            if let Some(signer) = sign::verify(&self.keys, digest, &payload, signature) {
                return Ok((Some(signer), Vec::new()));
            }
        }
        let pinned = format!("{}@{digest}", r.name());
        let what = if signatures.is_empty() {
            format!("{pinned} is not signed")
        } else if self.keys.is_empty() {
            format!("{pinned} is signed, but [trust] keys lists no key to verify it with")
        } else {
            format!(
                "{pinned} is signed, but by none of the trusted keys ({})",
                self.keys.iter().map(|k| k.name.as_str()).collect::<Vec<_>>().join(", ")
            )
        };
        if self.require_signature {
            let code = if signatures.is_empty() { "SIGNATURE_REQUIRED" } else { "SIGNATURE_UNTRUSTED" };
            return Err(Error::Registry {
                code,
                message: format!("{what}, and [trust] require_signature is on: nothing was installed"),
                transient: false,
            });
        }
        Ok((None, vec![what]))
    }

    /// Publishes `bytes` as a `kind` artifact (a skill's is described by `about`) at
    /// `r`'s tag, signed with `key` if given; returns the manifest's digest.
    pub fn publish(
        &self,
        r: &Reference,
        kind: Kind,
        bytes: &[u8],
        about: &serde_json::Value,
        key: Option<&SigningKey>,
    ) -> Result<String> {
        let created = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        let (manifest, config, layer) = match kind {
            Kind::Component => artifact::component(bytes, &created),
            Kind::Skill => artifact::skill(bytes, about),
        };
        let config_descriptor = manifest.config.clone().unwrap_or_else(|| layer.clone());
        self.client.push_blob(r, &layer, bytes)?;
        self.client.push_blob(r, &config_descriptor, &config)?;
        let target = r.tag.as_deref().unwrap_or(reference::DEFAULT_TAG);
        let digest = self.client.push_manifest(r, target, &manifest)?;
        if let Some(key) = key {
            self.sign(r, &digest, key)?;
        }
        Ok(digest)
    }

    /// Adds `key`'s signature of `digest` to `r`'s repository (beside any others).
    pub fn sign(&self, r: &Reference, digest: &str, key: &SigningKey) -> Result<()> {
        let payload = sign::payload(&r.name(), digest);
        let signature = key.sign(&payload)?;
        let tagged = r.tagged(&sign::tag(digest));
        let existing = match self.client.manifest(&tagged) {
            Ok((_, manifest)) => Some(manifest),
            Err(Error::Registry { code: "ARTIFACT_NOT_FOUND", .. }) => None,
            Err(e) => return Err(e),
        };
        let (manifest, config) = sign::manifest(existing, &payload, &signature);
        let payload_layer = artifact::Descriptor::of(sign::PAYLOAD, &payload);
        self.client.push_blob(r, &payload_layer, &payload)?;
        if let Some(config_descriptor) = &manifest.config {
            self.client.push_blob(r, config_descriptor, &config)?;
        }
        self.client.push_manifest(r, &sign::tag(digest), &manifest)?;
        Ok(())
    }
}
