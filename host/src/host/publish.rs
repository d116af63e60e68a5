//! Publishing a skill to an OCI registry: checked as an install is first, so what is
//! published installs, then pushed (and signed, if a key is given).

use std::path::Path;

use serde::Serialize;
use serde_json::json;

use super::Host;
use super::oci::blocking;
use crate::error::{Error, Result};
use crate::oci::{Kind, Reference, SigningKey};
use crate::packages::{InstallOptions, SkillManager};

/// What publishing did.
#[derive(Debug, Clone, Serialize)]
pub struct Published {
    /// The skill (or the component's package name).
    pub name: String,
    /// `component` or `skill`.
    pub kind: Kind,
    /// The reference pushed to.
    pub reference: String,
    /// The manifest's digest: `REGISTRY/REPOSITORY@DIGEST` names exactly this.
    pub digest: String,
    /// Whether a signature was pushed beside it.
    pub signed: bool,
}

impl Host {
    /// Publishes the skill at `path` (a `.wasm` component, a skill directory, or a
    /// skill ZIP) to `reference` (`REGISTRY/REPOSITORY:TAG`), signed with the private
    /// key at `key` if given. It is first installed into a scratch data directory with
    /// every check an install makes, so what is published installs.
    pub async fn publish(
        &self,
        path: &Path,
        reference: &str,
        key: Option<&Path>,
    ) -> Result<Published> {
        let r = Reference::parse(reference)?;
        if r.digest.is_some() {
            return Err(Error::Registry {
                code: "INVALID_REFERENCE",
                message: format!(
                    "{reference}: publish to a tag (REGISTRY/REPOSITORY:TAG); the digest is what publishing makes"
                ),
                transient: false,
            });
        }
        let key = key.map(SigningKey::read).transpose()?;
        let (kind, bytes) = artifact_of(path)?;
        let scratch = tempfile::tempdir().map_err(Error::io_at(&std::env::temp_dir()))?;
        // Checked as an Evo installs it, built-in names included: what is published
        // installs.
        let checker = SkillManager::new(scratch.path())
            .with_loader(self.inner.loader.clone())
            .with_reserved(self.builtin_names());
        let checked = match kind {
            Kind::Component => {
                let file_name = format!("{}.wasm", r.basename());
                checker
                    .install_component(&bytes, &file_name, InstallOptions::default())
                    .await
            }
            Kind::Skill => {
                checker
                    .install_archive(&bytes, InstallOptions::default())
                    .await
            }
        };
        let outcome = checked.map_err(|e| match e {
            Error::NameTaken { name } => Error::Registry {
                code: "SKILL_NAME_TAKEN",
                message: format!(
                    "{name} was not published: a built-in tool of Evo is called {name}, so no Evo could install it"
                ),
                transient: false,
            },
            other => other,
        })?;
        let record = outcome.skill.unwrap_or_default();
        let about = json!({
            "name": record.name,
            "version": record.version,
            "description": record.description,
            "kind": record.kind,
            "capabilities": record.capabilities,
            "tags": record.tags,
        });
        let session = self.registry_session()?;
        let target = r.clone();
        let signed = key.is_some();
        let digest =
            blocking(move || session.publish(&target, kind, &bytes, &about, key.as_ref())).await?;
        tracing::info!(target: "evo::security", reference = %r, %digest, signed, "published {}", outcome.name);
        Ok(Published {
            name: outcome.name,
            kind,
            reference: r.to_string(),
            digest,
            signed,
        })
    }
}

/// What to publish from `path`: a `.wasm` file, or a directory with only a built
/// `skill.wasm` to describe it (an SDK project), is a component; any other directory
/// (zipped) or a `.zip` is a skill directory.
fn artifact_of(path: &Path) -> Result<(Kind, Vec<u8>)> {
    use crate::skill::manifest::package::{SKILL_JSON, SKILL_MD, SKILL_WASM};
    if path.is_dir() {
        let wasm = path.join(SKILL_WASM);
        if wasm.is_file() && !path.join(SKILL_MD).is_file() && !path.join(SKILL_JSON).is_file() {
            let bytes = std::fs::read(&wasm).map_err(Error::io_at(&wasm))?;
            return Ok((Kind::Component, bytes));
        }
        return Ok((Kind::Skill, crate::packages::zip_for_publishing(path)?));
    }
    let bytes = std::fs::read(path).map_err(Error::io_at(path))?;
    if bytes.starts_with(b"\0asm") {
        Ok((Kind::Component, bytes))
    } else if bytes.starts_with(b"PK") {
        Ok((Kind::Skill, bytes))
    } else {
        Err(Error::InvalidSkillStructure(format!(
            "{}: not a .wasm component, a skill directory or a skill ZIP",
            path.display()
        )))
    }
}
