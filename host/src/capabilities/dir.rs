//! Directory capabilities: a guest path, bound by the operator to a host directory.
//!
//! The skill names the path it expects (`/data`); the operator binds a host directory to
//! it (`--dir ./docs::/data` or `--dir ./docs::/data:ro`). The host path is resolved
//! (symlinks, `..`) before it is opened, and everything below it is reached through a
//! capability handle (cap-std), so neither `..` nor a symlink inside it leads out.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{Access, Capability, Grant, GrantFlag, Policy, RequestedCapabilities, Sandbox};

pub use evo_manifest::DirRequest;
use evo_manifest::normalize_guest_path;

/// A host directory the operator offers at a guest path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirPolicy {
    /// The host directory, canonicalised.
    pub host: PathBuf,
    /// The guest path it is offered at.
    pub guest: String,
    /// The most access allowed.
    pub access: Access,
}

impl DirPolicy {
    /// Binds `host` (which must exist and be a directory) to `guest`.
    pub fn new(host: impl AsRef<Path>, guest: &str, access: Access) -> Result<Self, String> {
        let host = host.as_ref();
        let canonical = host
            .canonicalize()
            .map_err(|e| format!("{}: {e}", host.display()))?;
        if !canonical.is_dir() {
            return Err(format!("{} is not a directory", host.display()));
        }
        Ok(Self {
            host: canonical,
            guest: normalize_guest_path(guest)?,
            access,
        })
    }

    /// Parses the CLI form `HOST::GUEST[:ro|:rw]` (read-write unless `:ro`), or just
    /// `HOST`, offered at the same path in the guest.
    pub fn parse(spec: &str) -> Result<Self, String> {
        let (rest, access) = match spec.rsplit_once(':') {
            Some((rest, "ro")) if !rest.ends_with(':') => (rest, Access::Read),
            Some((rest, "rw")) if !rest.ends_with(':') => (rest, Access::ReadWrite),
            _ => (spec, Access::ReadWrite),
        };
        let (host, guest) = match rest.split_once("::") {
            Some((host, guest)) => (host, guest.to_owned()),
            None => {
                let canonical = Path::new(rest)
                    .canonicalize()
                    .map_err(|e| format!("{rest}: {e}"))?;
                (rest, canonical.to_string_lossy().into_owned())
            }
        };
        Self::new(host, &guest, access)
    }

    /// Whether this policy entry allows `request`, and with which access.
    pub fn allows(&self, request: &DirRequest) -> Option<Access> {
        (self.guest == request.path).then(|| self.access.min(request.access))
    }
}

/// A directory granted to a skill.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DirGrant {
    /// The host directory (canonical).
    pub host: PathBuf,
    /// The guest path.
    pub guest: String,
    /// The access granted: the lesser of requested and allowed.
    pub access: Access,
}

fn grant(request: &DirRequest, policy: &[DirPolicy]) -> Result<DirGrant, String> {
    policy
        .iter()
        .find_map(|p| {
            p.allows(request).map(|access| DirGrant {
                host: p.host.clone(),
                guest: p.guest.clone(),
                access,
            })
        })
        .ok_or_else(|| {
            format!(
                "directory {}: no host directory is bound to it (bind one with --dir HOST::{})",
                request.path, request.path
            )
        })
}

/// Directories: `[grants] dirs`, `--dir`.
pub(super) struct Dirs;

const HOW: &str = "use HOST::GUEST or HOST::GUEST:ro with an existing host directory";

impl Capability for Dirs {
    fn confine(&self, grant: &Grant, sandbox: &mut dyn Sandbox) -> Result<(), String> {
        grant.dirs.iter().try_for_each(|dir| sandbox.preopen(dir))
    }

    fn key(&self) -> &'static str {
        "dirs"
    }

    fn flag(&self) -> &'static GrantFlag {
        &GrantFlag {
            long: "dir",
            value_name: Some("HOST::GUEST[:ro]"),
            repeats: true,
            help: "Offer a host directory to the skill: `HOST::GUEST` (read-write), `HOST::GUEST:ro` (read-only), or `HOST` (same path in the guest). The skill gets it only if its manifest asks for GUEST; repeat for more directories.",
            hint: HOW,
            key: "grants.dirs",
        }
    }

    fn configure(
        &self,
        policy: &mut Policy,
        value: &toml::Value,
        base: &Path,
    ) -> Result<(), String> {
        policy.dirs = super::strings(value)?
            .into_iter()
            .map(|spec| {
                // A relative host directory is relative to the file, not to wherever
                // `evo` happens to run.
                let anchored = if Path::new(spec).is_absolute() {
                    spec.to_owned()
                } else {
                    base.join(spec).to_string_lossy().into_owned()
                };
                DirPolicy::parse(&anchored).map_err(|message| format!("{spec:?}: {message}; {HOW}"))
            })
            .collect::<Result<_, _>>()?;
        Ok(())
    }

    fn widen(&self, policy: &mut Policy, value: &str) -> Result<(), String> {
        policy.dirs.push(DirPolicy::parse(value)?);
        Ok(())
    }

    fn show(&self, policy: &Policy) -> serde_json::Value {
        policy
            .dirs
            .iter()
            .map(|d| {
                let ro = if d.access == Access::Read { ":ro" } else { "" };
                format!("{}::{}{ro}", d.host.display(), d.guest)
            })
            .collect()
    }

    fn stand_in(&self, named: &Policy, asked: &mut RequestedCapabilities, _: &mut Vec<String>) {
        for dir in &named.dirs {
            // A policy's guest path is a valid request's.
            if let Ok(request) = DirRequest::new(&dir.guest, dir.access, super::NAMED) {
                asked.dirs.push(request);
            }
        }
    }

    fn add(&self, policy: &mut Policy, more: &Policy) {
        policy.dirs.extend(more.dirs.iter().cloned());
    }

    fn revoke(&self, policy: &mut Policy, value: &str) -> Result<bool, String> {
        let guest = value.split_once("::").map_or(value, |(_, guest)| guest);
        let guest = guest.strip_suffix(":ro").unwrap_or(guest);
        let guest = normalize_guest_path(guest)?;
        let before = policy.dirs.len();
        policy.dirs.retain(|d| d.guest != guest);
        Ok(policy.dirs.len() < before)
    }

    fn grant(&self, requested: &RequestedCapabilities, policy: &Policy, grant: &mut Grant) {
        for request in &requested.dirs {
            match self::grant(request, &policy.dirs) {
                Ok(granted) => grant.dirs.push(granted),
                Err(reason) => grant.refused.push(reason),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(path: &str, access: Access) -> DirRequest {
        DirRequest::new(path, access, "test").unwrap()
    }

    #[test]
    fn allows_is_the_lesser_access_on_the_same_path() {
        let dir = tempfile::tempdir().unwrap();
        let table = [
            (Access::Read, "/data", Access::Read, Some(Access::Read)),
            (Access::Read, "/data", Access::ReadWrite, Some(Access::Read)),
            (Access::ReadWrite, "/data", Access::Read, Some(Access::Read)),
            (
                Access::ReadWrite,
                "/data",
                Access::ReadWrite,
                Some(Access::ReadWrite),
            ),
            (Access::ReadWrite, "/data/sub", Access::Read, None),
            (Access::ReadWrite, "/other", Access::Read, None),
        ];
        for (allowed, path, requested, expected) in table {
            let policy = DirPolicy::new(dir.path(), "/data", allowed).unwrap();
            assert_eq!(
                policy.allows(&request(path, requested)),
                expected,
                "{allowed:?} {path} {requested:?}"
            );
        }
    }

    #[test]
    fn guest_paths_must_be_absolute_and_plain() {
        assert_eq!(request("/data/", Access::Read).path, "/data");
        for bad in ["data", "/data/../etc", "/./data", "/", ""] {
            assert!(DirRequest::new(bad, Access::Read, "").is_err(), "{bad}");
        }
    }

    #[test]
    fn cli_specs_parse() {
        let dir = tempfile::tempdir().unwrap();
        let host = dir.path().display();
        let ro = DirPolicy::parse(&format!("{host}::/data:ro")).unwrap();
        assert_eq!((ro.guest.as_str(), ro.access), ("/data", Access::Read));
        let rw = DirPolicy::parse(&format!("{host}::/data")).unwrap();
        assert_eq!(rw.access, Access::ReadWrite);
        let same = DirPolicy::parse(&host.to_string()).unwrap();
        assert_eq!(
            same.guest,
            dir.path().canonicalize().unwrap().to_string_lossy()
        );
        assert!(
            DirPolicy::parse("/no/such/dir::/data")
                .unwrap_err()
                .contains("/no/such/dir")
        );
    }

    #[test]
    fn a_symlinked_host_dir_is_resolved_before_it_is_bound() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        std::fs::create_dir(&real).unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let policy = DirPolicy::new(&link, "/data", Access::Read).unwrap();
        assert_eq!(policy.host, real.canonicalize().unwrap());
    }
}
