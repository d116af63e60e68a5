//! The lock file: each skill installed from a registry, by name, with the reference it
//! was installed from and the manifest digest it was — `evo skill install --locked`
//! installs exactly those digests, and a tag that moved since is reported, never
//! followed without `evo skill update`.
//!
//! ```toml
//! version = 1
//!
//! [[skill]]
//! name = "echo"
//! reference = "ghcr.io/acme/echo:1.0"
//! digest = "sha256:…"
//! signer = "alice"              # the trusted key that signed it, if one did
//! ```

use std::path::Path;

use serde::Deserialize;

use crate::error::{Error, Result};

/// The lock file's name (beside `evo.toml`, or in the data directory).
pub const LOCK_FILE: &str = "evo.lock";
const VERSION: u32 = 1;

/// One locked skill.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Locked {
    /// The skill (a plain component's package name).
    pub name: String,
    /// The reference it was installed from, tag included.
    pub reference: String,
    /// The manifest digest installed.
    pub digest: String,
    /// The trusted key that signed it.
    #[serde(default)]
    pub signer: Option<String>,
}

/// The lock file.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lock {
    version: u32,
    #[serde(default, rename = "skill")]
    skills: Vec<Locked>,
}

impl Default for Lock {
    fn default() -> Self {
        Self {
            version: VERSION,
            skills: Vec::new(),
        }
    }
}

impl Lock {
    /// Reads the lock file at `path` (empty when there is none).
    pub fn read(path: &Path) -> Result<Self> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(source) => {
                return Err(Error::Io {
                    path: path.to_owned(),
                    source,
                });
            }
        };
        let lock: Self = toml::from_str(&text).map_err(|e| Error::Config {
            path: path.to_owned(),
            line: e.span().map(|s| text[..s.start].matches('\n').count() + 1),
            key: None,
            message: format!(
                "{} (the lock file `evo skill install oci://…` writes; fix it, or remove it and install again)",
                e.message().trim()
            ),
        })?;
        if lock.version != VERSION {
            return Err(Error::Config {
                path: path.to_owned(),
                line: Some(1),
                key: Some("version".into()),
                message: format!(
                    "lock file version {} is not {VERSION}, the one this evo reads",
                    lock.version
                ),
            });
        }
        Ok(lock)
    }

    /// Writes the lock file to `path` atomically (temp file, then rename).
    pub fn write(&self, path: &Path) -> Result<()> {
        crate::paths::write_atomic(path, self.to_toml().as_bytes())
    }

    /// The file's text. TOML's basic strings escape as JSON's do, so each value is
    /// written as its JSON string.
    fn to_toml(&self) -> String {
        let quote = |text: &str| serde_json::to_string(text).unwrap_or_default();
        let mut text = format!(
            "# Skills installed from registries, pinned by digest (written by evo).\n# `evo skill install --locked` installs exactly these; `evo skill update NAME` follows a tag.\nversion = {VERSION}\n"
        );
        for skill in &self.skills {
            text.push_str(&format!(
                "\n[[skill]]\nname = {}\nreference = {}\ndigest = {}\n",
                quote(&skill.name),
                quote(&skill.reference),
                quote(&skill.digest)
            ));
            if let Some(signer) = &skill.signer {
                text.push_str(&format!("signer = {}\n", quote(signer)));
            }
        }
        text
    }

    /// Every locked skill.
    pub fn skills(&self) -> &[Locked] {
        &self.skills
    }

    /// The entry installed from `repository` (`registry/repository`, any tag).
    pub fn installed_from(&self, repository: &str) -> Option<&Locked> {
        self.skills
            .iter()
            .find(|s| super::Reference::parse(&s.reference).is_ok_and(|r| r.name() == repository))
    }

    /// Records `entry`, replacing the one of the same name.
    pub fn put(&mut self, entry: Locked) {
        self.skills.retain(|s| s.name != entry.name);
        self.skills.push(entry);
        self.skills.sort_by(|a, b| a.name.cmp(&b.name));
    }

    /// Forgets skill `name`; whether it was there.
    pub fn remove(&mut self, name: &str) -> bool {
        let before = self.skills.len();
        self.skills.retain(|s| s.name != name);
        self.skills.len() != before
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lock_file_reads_back_what_was_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOCK_FILE);
        assert_eq!(Lock::read(&path).unwrap(), Lock::default());
        let mut lock = Lock::default();
        let digest = format!("sha256:{}", "a".repeat(64));
        lock.put(Locked {
            name: "echo".into(),
            reference: "127.0.0.1:5000/evo/echo:1.0".into(),
            digest: digest.clone(),
            signer: Some("alice".into()),
        });
        lock.put(Locked {
            name: "adder".into(),
            reference: "127.0.0.1:5000/evo/adder:2".into(),
            digest,
            signer: None,
        });
        lock.write(&path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.starts_with("# Skills installed from registries"),
            "{text}"
        );
        let read = Lock::read(&path).unwrap();
        assert_eq!(read, lock);
        assert_eq!(read.skills()[0].name, "adder", "sorted by name");
        assert_eq!(
            read.installed_from("127.0.0.1:5000/evo/echo").unwrap().name,
            "echo"
        );

        std::fs::write(&path, "version = 1\n[[skill]]\nname = 3\n").unwrap();
        let err = Lock::read(&path).unwrap_err();
        assert_eq!(err.code(), "CONFIG_INVALID");
        assert!(err.to_string().contains("line 3"), "{err}");
    }
}
