//! What a skill package looks like on disk, for everything that reads one: the loader
//! (which picks the executor from the files), the skill manager (which installs them) and
//! three-level loading ([`disclosure`]).
//!
//! ```text
//! <name>/
//!   SKILL.md            instructions with YAML frontmatter (name, description, …)
//!   skill.json          the typed contract (schemas, mode, pipeline, limits, capabilities)
//!   skill.wasm          a Wasm component
//!   prompt.md           an llm skill's prompt
//!   scripts/execute.js  a Node script
//!   .vectorized         the install record, written by the skill manager
//! ```

pub mod disclosure;

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::capabilities::RequestedCapabilities;
use crate::error::{Error, Result};
use crate::skill::manifest::SkillMeta;

/// The instructions file of a skill.
pub const SKILL_MD: &str = "SKILL.md";
/// The typed contract of a skill.
pub const SKILL_JSON: &str = "skill.json";
/// The component of a Wasm skill.
pub const SKILL_WASM: &str = "skill.wasm";
/// The prompt of an llm skill.
pub const PROMPT_MD: &str = "prompt.md";
/// The script of a native skill.
pub const EXECUTE_JS: &str = "scripts/execute.js";

/// The install record in each installed skill: what was installed, when, with which
/// capabilities, and its digest. Its presence marks the skill as indexed.
pub const MARKER: &str = ".vectorized";

/// What was installed, as recorded in `MARKER`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct InstallRecord {
    /// The skill, as installed.
    pub name: String,
    /// The name the skill gives itself, when it was installed under another
    /// (`evo skill install --as NAME`); empty otherwise. The loader serves the skill
    /// under [`Self::name`].
    #[serde(skip_serializing_if = "String::is_empty")]
    pub published_as: String,
    /// Its description.
    pub description: String,
    /// Its version.
    pub version: String,
    /// Its tags.
    pub tags: Vec<String>,
    /// What a user might say when they want it (see
    /// [`SkillMeta::requests`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub requests: Vec<String>,
    /// How it runs: `wasm`, `native`, `llm`, `composite` or `static`.
    pub kind: String,
    /// What it asked for when it was installed: the most it will be given.
    pub capabilities: RequestedCapabilities,
    /// SHA-256 over its files (paths and contents, not ZIP timestamps).
    pub digest: String,
    /// When it was installed, ms since the Unix epoch.
    pub installed_at: u64,
    /// When it (or its description) last changed, ms since the Unix epoch.
    pub updated_at: u64,
    /// For a native script skill: `wasm` when it runs as the component built from its
    /// script at install (`AUTO_WASM`), `native` when it runs as a script.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub runs_as: String,
    /// Why it runs as it does, in words for `evo skill info`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub runs_as_reason: String,
    /// The registry it was installed from: reference, manifest digest, signer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<RegistrySource>,
}

/// Where an installed skill came from, when it came from an OCI registry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RegistrySource {
    /// The reference installed from, as given (tag included).
    pub reference: String,
    /// The manifest digest installed.
    pub digest: String,
    /// The trusted key that signed it, if one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signer: Option<Signer>,
}

/// Who signed an artifact installed from a registry: one of the keys `[trust] keys`
/// lists.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Signer {
    /// The key's name (its file's name without the extension).
    pub key: String,
    /// `sha256:` of the key's DER.
    pub fingerprint: String,
}

/// Where the component built from a native skill's script at install is kept, inside
/// the installed skill's directory.
pub const AUTO_WASM: &str = ".evo/auto.wasm";

impl InstallRecord {
    /// How a native script skill runs and why, for `install` and `info` to print after
    /// `runs as:`; `None` for other skills.
    pub fn runs_as_text(&self) -> Option<String> {
        let how = match self.runs_as.as_str() {
            "wasm" => "a Wasm component built from its script",
            "native" => "its Node script",
            _ => return None,
        };
        Some(format!("{how}: {}", self.runs_as_reason))
    }

    /// The record of a skill about to be installed (dates and digest to be filled in).
    pub fn from_meta(meta: &SkillMeta, kind: &str) -> Self {
        Self {
            name: meta.name.clone(),
            description: meta.description.clone(),
            version: meta.version.clone(),
            tags: meta.tags.clone(),
            requests: meta.requests.clone(),
            kind: kind.to_owned(),
            capabilities: meta.capabilities.clone(),
            ..Self::default()
        }
    }

    /// The record of the skill installed in `dir`, if it has one written by this
    /// version of the manager (older markers hold only dates and the digest).
    pub fn read(dir: &Path) -> Option<Self> {
        let text = std::fs::read_to_string(dir.join(MARKER)).ok()?;
        serde_json::from_str::<Self>(&text)
            .ok()
            .filter(|r| !r.kind.is_empty())
    }

    /// Writes the record into `dir`, atomically (temp file, then rename).
    pub fn write(&self, dir: &Path) -> Result<()> {
        let path = dir.join(MARKER);
        let staged = dir.join(".vectorized.tmp");
        let text = serde_json::to_string_pretty(self).map_err(|e| Error::Engine(e.to_string()))?;
        std::fs::write(&staged, text).map_err(Error::io_at(&staged))?;
        std::fs::rename(&staged, &path).map_err(Error::io_at(&path))
    }
}
