//! The artifacts Evo publishes and installs, as OCI image manifests:
//!
//! - **A component** (an Evo skill or a plain component) in the CNCF TAG Runtime layout
//!   other Wasm tools use (wkg, Spin, Wassette): config
//!   `application/vnd.wasm.config.v0+json`, one `application/wasm` layer holding the
//!   component's bytes.
//! - **A skill directory** (SKILL.md, skill.json, scripts, resources) in Evo's own
//!   layout: config `application/vnd.evo.skill.config.v1+json` (the skill's name,
//!   version, description, kind and the capabilities it asks for), one
//!   `application/vnd.evo.skill.layer.v1+zip` layer holding the directory as the ZIP
//!   archive `evo skill install` takes — and installed through the same checks.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

/// An OCI image manifest.
pub const MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
/// A Docker image manifest (schema 2), which registries may answer with.
pub const DOCKER_MANIFEST: &str = "application/vnd.docker.distribution.manifest.v2+json";
/// An OCI image index, which may point at a component's manifest.
pub const INDEX: &str = "application/vnd.oci.image.index.v1+json";
/// A Wasm component artifact's config.
pub const WASM_CONFIG: &str = "application/vnd.wasm.config.v0+json";
/// A Wasm component artifact's layer.
pub const WASM_LAYER: &str = "application/wasm";
/// An Evo skill directory artifact's config.
pub const SKILL_CONFIG: &str = "application/vnd.evo.skill.config.v1+json";
/// An Evo skill directory artifact's layer: the directory as a ZIP archive.
pub const SKILL_LAYER: &str = "application/vnd.evo.skill.layer.v1+zip";

/// A blob a manifest points at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    /// What the blob is.
    pub media_type: String,
    /// `sha256:…` of its bytes.
    pub digest: String,
    /// Its length in bytes.
    pub size: u64,
    /// Free-form notes (cosign keeps its signature here).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub annotations: std::collections::BTreeMap<String, String>,
    /// In an index: the platform of the manifest it points at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<Value>,
    /// In an index of referrers: what the manifest it points at holds (a Sigstore
    /// bundle's media type, say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_type: Option<String>,
}

impl Descriptor {
    /// The descriptor of `bytes` as a `media_type` blob.
    pub fn of(media_type: &str, bytes: &[u8]) -> Self {
        Self {
            media_type: media_type.to_owned(),
            digest: digest_of(bytes),
            size: bytes.len() as u64,
            annotations: Default::default(),
            platform: None,
            artifact_type: None,
        }
    }
}

/// An image manifest, or an index (`manifests` instead of `config` and `layers`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    /// Always 2.
    pub schema_version: u32,
    /// What the document is (optional in OCI; the response's Content-Type otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    /// The config blob.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<Descriptor>,
    /// The layers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub layers: Vec<Descriptor>,
    /// An index's manifests.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub manifests: Vec<Descriptor>,
    /// Free-form notes.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub annotations: std::collections::BTreeMap<String, String>,
    /// What an artifact manifest holds, where its config does not say (OCI 1.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_type: Option<String>,
    /// The manifest this one is about (a signature's artifact): what makes it one of
    /// that manifest's referrers (OCI 1.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<Descriptor>,
}

impl Manifest {
    /// An image manifest of `config` and `layers`.
    pub fn image(config: Descriptor, layers: Vec<Descriptor>) -> Self {
        Self {
            schema_version: 2,
            media_type: Some(MANIFEST.to_owned()),
            config: Some(config),
            layers,
            manifests: Vec::new(),
            annotations: Default::default(),
            artifact_type: None,
            subject: None,
        }
    }

    /// An image index of `manifests`.
    pub fn index(manifests: Vec<Descriptor>) -> Self {
        Self {
            schema_version: 2,
            media_type: Some(INDEX.to_owned()),
            config: None,
            layers: Vec::new(),
            manifests,
            annotations: Default::default(),
            artifact_type: None,
            subject: None,
        }
    }

    /// The manifest as the bytes pushed (and digested).
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }
}

/// `sha256:` and the hex SHA-256 of `bytes`.
pub fn digest_of(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// What an artifact holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A Wasm component (an Evo skill or a plain component).
    Component,
    /// An Evo skill directory, as a ZIP archive.
    Skill,
}

/// The manifest and config of a component artifact holding `component`.
pub fn component(component: &[u8], created: &str) -> (Manifest, Vec<u8>, Descriptor) {
    let layer = Descriptor::of(WASM_LAYER, component);
    let config = serde_json::json!({
        "created": created,
        "architecture": "wasm",
        "os": "wasip2",
        "layerDigests": [layer.digest],
    });
    let config = serde_json::to_vec(&config).unwrap_or_default();
    let manifest = Manifest::image(Descriptor::of(WASM_CONFIG, &config), vec![layer.clone()]);
    (manifest, config, layer)
}

/// The manifest and config of a skill directory artifact holding `zip`, described by
/// `about` (name, version, description, kind, capabilities).
pub fn skill(zip: &[u8], about: &Value) -> (Manifest, Vec<u8>, Descriptor) {
    let layer = Descriptor::of(SKILL_LAYER, zip);
    let config = serde_json::to_vec(about).unwrap_or_default();
    let manifest = Manifest::image(Descriptor::of(SKILL_CONFIG, &config), vec![layer.clone()]);
    (manifest, config, layer)
}

fn refused(reference: &str, why: String) -> Error {
    Error::Registry {
        code: "ARTIFACT_INVALID",
        message: format!("{reference} is not a skill Evo can install: {why}"),
        transient: false,
    }
}

/// What an image manifest holds, after its media types were checked: one layer, of
/// the type its config says. `reference` names it in errors.
pub fn classify(reference: &str, manifest: &Manifest) -> Result<(Kind, Descriptor)> {
    if let Some(media_type) = &manifest.media_type
        && media_type != MANIFEST
        && media_type != DOCKER_MANIFEST
    {
        return Err(refused(
            reference,
            format!("its manifest is {media_type}, not an image manifest ({MANIFEST})"),
        ));
    }
    let Some(config) = &manifest.config else {
        return Err(refused(reference, "its manifest has no config".into()));
    };
    let (kind, expected) = match config.media_type.as_str() {
        WASM_CONFIG => (Kind::Component, WASM_LAYER),
        SKILL_CONFIG => (Kind::Skill, SKILL_LAYER),
        other => {
            return Err(refused(
                reference,
                format!(
                    "its config is {other}; a component's is {WASM_CONFIG}, an Evo skill's {SKILL_CONFIG} (is it a container image?)"
                ),
            ));
        }
    };
    match manifest.layers.as_slice() {
        [layer] if layer.media_type == expected => Ok((kind, layer.clone())),
        [layer] => Err(refused(
            reference,
            format!(
                "its layer is {}, where its config ({}) calls for {expected}",
                layer.media_type, config.media_type
            ),
        )),
        layers => Err(refused(
            reference,
            format!("it has {} layers; a skill has exactly one", layers.len()),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_component_artifact_is_the_cncf_wasm_layout() {
        let (manifest, config, layer) = component(b"\0asm\x0d\0\x01\0", "2026-11-27T00:00:00Z");
        let json: Value = serde_json::from_slice(&manifest.to_bytes()).unwrap();
        assert_eq!(json["mediaType"], MANIFEST);
        assert_eq!(
            json["config"]["mediaType"],
            "application/vnd.wasm.config.v0+json"
        );
        assert_eq!(json["layers"][0]["mediaType"], "application/wasm");
        assert_eq!(json["config"]["digest"], digest_of(&config));
        let config: Value = serde_json::from_slice(&config).unwrap();
        assert_eq!(config["layerDigests"][0], layer.digest.as_str());
        assert_eq!(classify("r", &manifest).unwrap(), (Kind::Component, layer));
    }

    #[test]
    fn other_media_types_are_refused_naming_them() {
        let (mut manifest, _, _) = component(b"\0asm", "");
        manifest.layers[0].media_type = "application/vnd.oci.image.layer.v1.tar+gzip".into();
        let err = classify("r:1", &manifest).unwrap_err();
        assert_eq!(err.code(), "ARTIFACT_INVALID");
        assert!(
            err.to_string()
                .contains("its layer is application/vnd.oci.image.layer.v1.tar+gzip"),
            "{err}"
        );

        let (mut manifest, _, _) = component(b"\0asm", "");
        manifest.config.as_mut().unwrap().media_type =
            "application/vnd.oci.image.config.v1+json".into();
        let err = classify("r:1", &manifest).unwrap_err();
        assert!(err.to_string().contains("container image"), "{err}");
    }
}
