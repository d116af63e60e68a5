//! Skills in OCI registries: publishing a component or a skill directory as an OCI
//! artifact, pulling one back with every byte checked against its digest, and
//! signatures beside it in both formats cosign reads (a Sigstore bundle among its
//! referrers, [`bundle`]; the `.sig` tag, [`sign`]). What is pulled is installed by the
//! skill manager like any other source; the lock file ([`lock`]) pins what was.

pub mod artifact;
pub mod bundle;
pub mod client;
pub mod lock;
pub mod reference;
pub mod settings;
pub mod sign;

pub use crate::skill::manifest::package::{RegistrySource, Signer};
pub use artifact::Kind;
pub use client::Client;
pub use reference::Reference;
pub use settings::{CredentialSettings, Registries, RegistrySettings, TrustSettings};
pub use sign::{SigningKey, TrustedKey, Verdict};

use artifact::Descriptor;

use crate::error::{Error, Result};

/// The annotation naming an artifact (the skill's name, when Evo publishes it).
const TITLE: &str = "org.opencontainers.image.title";
/// The annotation describing an artifact.
const DESCRIPTION: &str = "org.opencontainers.image.description";
/// The annotation with a skill's tags, comma-separated.
const KEYWORDS: &str = "dev.evo.keywords";
/// Most repositories of one registry a search reads.
pub const MAX_LISTED: usize = 500;

/// One repository of a registry as a search sees it: a reference to its newest tag
/// (`latest`, else the last in order) and what that artifact says of itself.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Listed {
    /// `oci://REGISTRY/REPOSITORY:TAG`.
    pub reference: String,
    /// Its title annotation (the skill's name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Its description annotation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its keywords (an Evo skill's tags).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keywords: Vec<String>,
}

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
    pub fn pull(
        &self,
        r: &Reference,
        caps: Caps,
        progress: Option<client::Progress<'_>>,
    ) -> Result<Pulled> {
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

    /// Who of the trusted keys signed `digest` in `r`'s repository, in either format
    /// cosign writes (a Sigstore bundle among its referrers, or the `.sig` tag); an
    /// error when a signature is required and none of them did.
    fn check_signature(
        &self,
        r: &Reference,
        digest: &str,
    ) -> Result<(Option<Signer>, Vec<String>)> {
        let mut verdicts = Vec::new();
        for found in self.bundles(r, digest)? {
            match found.map(|bytes| bundle::verify(&self.keys, digest, &bytes)) {
                Ok(Verdict::Signed(signer)) => return Ok((Some(signer), Vec::new())),
                Ok(verdict) => verdicts.push(verdict),
                Err(why) => verdicts.push(Verdict::Unreadable(why)),
            }
        }
        let signatures = self
            .client
            .stored(&r.tagged(&sign::tag(digest)))?
            .map(|manifest| sign::signatures(&manifest))
            .unwrap_or_default();
        for (layer, signature) in &signatures {
            let payload = self.client.blob(r, layer, sign::MAX_PAYLOAD_BYTES, None)?;
            match sign::verify(&self.keys, digest, &payload, signature) {
                Verdict::Signed(signer) => return Ok((Some(signer), Vec::new())),
                verdict => verdicts.push(verdict),
            }
        }
        let (code, what) = self.unverified(&format!("{}@{digest}", r.name()), &verdicts);
        if self.require_signature {
            return Err(Error::Registry {
                code,
                message: format!(
                    "{what}, and [trust] require_signature is on: nothing was installed"
                ),
                transient: false,
            });
        }
        Ok((None, vec![what]))
    }

    /// The Sigstore bundles attached to `digest`: listed by the referrers API, or
    /// under the fallback tag where the registry has none (at most
    /// [`sign::MAX_SIGNATURES`]). A referrer that cannot be read is an `Err` with why,
    /// beside the others; a registry that fails is an error.
    fn bundles(
        &self,
        r: &Reference,
        digest: &str,
    ) -> Result<Vec<std::result::Result<Vec<u8>, String>>> {
        let index = match self.client.referrers(r, digest)? {
            Some(index) => index,
            None => match self
                .client
                .stored(&r.tagged(&bundle::fallback_tag(digest)))?
            {
                Some(index) => index,
                None => return Ok(Vec::new()),
            },
        };
        let mut bundles = Vec::new();
        for entry in index
            .manifests
            .iter()
            .filter(|m| bundle::is_bundle(m.artifact_type.as_deref()))
            .take(sign::MAX_SIGNATURES)
        {
            if !reference::is_digest(&entry.digest) {
                bundles.push(Err(format!(
                    "a referrer whose digest {}",
                    sign::digest_shown(&entry.digest)
                )));
                continue;
            }
            let read = match self.client.stored(&r.at(&entry.digest)) {
                Ok(Some(manifest)) => match manifest.layers.as_slice() {
                    [layer] if bundle::is_bundle(Some(&layer.media_type)) => {
                        self.client.blob(r, layer, bundle::MAX_BUNDLE_BYTES, None)
                    }
                    _ => {
                        bundles.push(Err(format!(
                            "a referrer {} that is not one Sigstore bundle layer",
                            entry.digest
                        )));
                        continue;
                    }
                },
                Ok(None) => {
                    bundles.push(Err(format!(
                        "a referrer {} the registry does not have",
                        entry.digest
                    )));
                    continue;
                }
                Err(e) => Err(e),
            };
            match read {
                Ok(bytes) => bundles.push(Ok(bytes)),
                Err(e) if e.is_transient() => return Err(e),
                Err(e) => bundles.push(Err(e.to_string())),
            }
        }
        Ok(bundles)
    }

    /// Why `pinned` is not signed by a trusted key, from what its signatures said, and
    /// the code refusing it: a trusted key's signature of another artifact is named as
    /// such (adding keys would not help), before signatures Evo does not read and
    /// keys it does not trust.
    fn unverified(&self, pinned: &str, verdicts: &[Verdict]) -> (&'static str, String) {
        let elsewhere = verdicts.iter().find_map(|v| match v {
            Verdict::ForAnother { signer, signed } => Some((signer, signed)),
            _ => None,
        });
        if let Some((signer, signed)) = elsewhere {
            return (
                "SIGNATURE_MISMATCH",
                format!(
                    "{pinned} carries a signature by {} (a trusted key) made for another artifact ({signed}): it was copied from elsewhere or the tag was moved onto other bytes, and it does not sign this one",
                    signer.key
                ),
            );
        }
        if verdicts.is_empty() {
            return ("SIGNATURE_REQUIRED", format!("{pinned} is not signed"));
        }
        let mut unreadable: Vec<&str> = verdicts
            .iter()
            .filter_map(|v| match v {
                Verdict::Unreadable(why) => Some(why.as_str()),
                _ => None,
            })
            .collect();
        if unreadable.len() == verdicts.len() {
            unreadable.dedup();
            let more = unreadable.len().saturating_sub(3);
            unreadable.truncate(3);
            let more = if more > 0 {
                format!("; and {more} more")
            } else {
                String::new()
            };
            return (
                "SIGNATURE_UNTRUSTED",
                format!(
                    "{pinned} carries no signature Evo verifies: {}{more}",
                    unreadable.join("; ")
                ),
            );
        }
        if self.keys.is_empty() {
            return (
                "SIGNATURE_UNTRUSTED",
                format!("{pinned} is signed, but [trust] keys lists no key to verify it with"),
            );
        }
        (
            "SIGNATURE_UNTRUSTED",
            format!(
                "{pinned} is signed, but by none of the trusted keys ({})",
                self.keys
                    .iter()
                    .map(|k| k.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )
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
        let (mut manifest, config, layer) = match kind {
            Kind::Component => artifact::component(bytes, &created),
            Kind::Skill => artifact::skill(bytes, about),
        };
        // What a search of the registry reads (`evo skill search --registry`), in the
        // OCI annotations other tools read too.
        for (key, field) in [
            (TITLE, "name"),
            (DESCRIPTION, "description"),
            ("org.opencontainers.image.version", "version"),
        ] {
            if let Some(text) = about[field].as_str().filter(|t| !t.is_empty()) {
                manifest.annotations.insert(key.to_owned(), text.to_owned());
            }
        }
        if let Some(tags) = about["tags"].as_array().filter(|t| !t.is_empty()) {
            let tags: Vec<&str> = tags.iter().filter_map(serde_json::Value::as_str).collect();
            manifest
                .annotations
                .insert(KEYWORDS.to_owned(), tags.join(","));
        }
        let config_descriptor = manifest.config.clone().unwrap_or_else(|| layer.clone());
        self.client.push_blob(r, &layer, bytes)?;
        self.client.push_blob(r, &config_descriptor, &config)?;
        let target = r.tag.as_deref().unwrap_or(reference::DEFAULT_TAG);
        let digest = self.client.push_manifest(r, target, &manifest)?;
        if let Some(key) = key {
            self.sign(
                r,
                &Descriptor::of(artifact::MANIFEST, &manifest.to_bytes()),
                key,
            )?;
        }
        Ok(digest)
    }

    /// The repositories of `registry` with what their newest artifact says of itself
    /// (at most [`MAX_LISTED`]); `None` when the registry offers no listing.
    pub fn listing(&self, registry: &str) -> Result<Option<Vec<Listed>>> {
        let Some(repositories) = self.client.catalog(registry, MAX_LISTED)? else {
            return Ok(None);
        };
        let mut listed = Vec::new();
        for repository in repositories {
            let r = Reference {
                registry: registry.to_owned(),
                repository,
                tag: None,
                digest: None,
            };
            // Signatures (`sha256-….sig`) are not versions.
            let mut tags: Vec<String> = self
                .client
                .tags(&r)?
                .into_iter()
                .filter(|t| !t.starts_with("sha256-"))
                .collect();
            tags.sort();
            let Some(tag) = tags
                .iter()
                .find(|t| *t == "latest")
                .or(tags.last())
                .cloned()
            else {
                continue;
            };
            let at = Reference {
                tag: Some(tag),
                ..r
            };
            let annotations = match self.client.manifest(&at) {
                Ok((_, manifest)) => manifest.annotations,
                // Not an artifact Evo reads (an index of images, say): listed by name.
                Err(Error::Registry {
                    code: "ARTIFACT_INVALID",
                    ..
                }) => Default::default(),
                Err(e) => return Err(e),
            };
            let text = |key: &str| annotations.get(key).cloned().filter(|t| !t.is_empty());
            listed.push(Listed {
                reference: format!("{}{at}", reference::SCHEME),
                title: text(TITLE),
                description: text(DESCRIPTION),
                keywords: text(KEYWORDS)
                    .map(|k| {
                        k.split(',')
                            .map(|w| w.trim().to_owned())
                            .filter(|w| !w.is_empty())
                            .collect()
                    })
                    .unwrap_or_default(),
            });
        }
        Ok(Some(listed))
    }

    /// Adds `key`'s signature of the manifest `subject` to `r`'s repository (beside any
    /// others) in both formats cosign reads: a Sigstore bundle among its referrers,
    /// what cosign 3 writes and reads first, and the `.sig` tag, what cosign 2 and the
    /// policy controllers before the referrers API read.
    pub fn sign(&self, r: &Reference, subject: &Descriptor, key: &SigningKey) -> Result<()> {
        self.sign_tag(r, &subject.digest, key)?;
        self.attach_bundle(r, subject, key)
    }

    /// Adds the `.sig` tag's signature.
    fn sign_tag(&self, r: &Reference, digest: &str, key: &SigningKey) -> Result<()> {
        let payload = sign::payload(&r.name(), digest);
        let signature = key.sign(&payload)?;
        let existing = self.client.stored(&r.tagged(&sign::tag(digest)))?;
        let (manifest, config) = sign::manifest(existing, &payload, &signature);
        let payload_layer = Descriptor::of(sign::PAYLOAD, &payload);
        self.client.push_blob(r, &payload_layer, &payload)?;
        if let Some(config_descriptor) = &manifest.config {
            self.client.push_blob(r, config_descriptor, &config)?;
        }
        self.client
            .push_manifest(r, &sign::tag(digest), &manifest)?;
        Ok(())
    }

    /// Attaches a Sigstore bundle of `key`'s signature to `subject`: through the
    /// referrers API where the registry has it, else listed under the fallback tag.
    fn attach_bundle(&self, r: &Reference, subject: &Descriptor, key: &SigningKey) -> Result<()> {
        let bytes = bundle::write(key, &subject.digest)?;
        let created = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        let manifest = bundle::manifest(subject.clone(), &bytes, &created);
        self.client
            .push_blob(r, &Descriptor::of(bundle::MEDIA_TYPE, &bytes), &bytes)?;
        self.client.push_blob(
            r,
            &Descriptor::of(bundle::EMPTY, bundle::EMPTY_BLOB),
            bundle::EMPTY_BLOB,
        )?;
        let (_, listed) = self.client.push_referrer(r, &manifest)?;
        if !listed {
            let tag = bundle::fallback_tag(&subject.digest);
            let index = bundle::add_referrer(self.client.stored(&r.tagged(&tag))?, &manifest);
            self.client.push_manifest(r, &tag, &index)?;
        }
        Ok(())
    }
}
