//! References to artifacts in a registry: `registry/repository[:tag][@sha256:…]`, with
//! or without the `oci://` scheme, read as Docker and the OCI tools read them.

use std::fmt;

use crate::error::{Error, Result};

/// The scheme `evo skill install` recognises a registry reference by.
pub const SCHEME: &str = "oci://";
/// The tag a reference without one means.
pub const DEFAULT_TAG: &str = "latest";
/// Docker Hub, as references name it, and the host its API is served from.
const DOCKER_HUB: &str = "docker.io";
const DOCKER_HUB_API: &str = "registry-1.docker.io";

/// An artifact in a registry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    /// The registry's host and port (`ghcr.io`, `127.0.0.1:5000`).
    pub registry: String,
    /// The repository (`evo/echo`).
    pub repository: String,
    /// The tag, when the reference names one.
    pub tag: Option<String>,
    /// The manifest's digest (`sha256:…`), when the reference pins one.
    pub digest: Option<String>,
}

fn invalid(text: &str, why: &str) -> Error {
    Error::Registry {
        code: "INVALID_REFERENCE",
        message: format!(
            "{text:?} is not a registry reference: {why} (write REGISTRY/REPOSITORY[:TAG][@sha256:DIGEST], e.g. ghcr.io/acme/echo:1.0)"
        ),
        transient: false,
    }
}

impl Reference {
    /// Reads `text`, with or without [`SCHEME`]. A reference without a registry host
    /// (no `.` or `:` in its first part, and not `localhost`) is on Docker Hub.
    pub fn parse(text: &str) -> Result<Self> {
        let rest = text.strip_prefix(SCHEME).unwrap_or(text);
        if rest.is_empty() {
            return Err(invalid(text, "it is empty"));
        }
        let (rest, digest) = match rest.split_once('@') {
            Some((rest, digest)) => {
                if !is_digest(digest) {
                    return Err(invalid(
                        text,
                        "the digest must be sha256: and 64 lower-case hex digits",
                    ));
                }
                (rest, Some(digest.to_owned()))
            }
            None => (rest, None),
        };
        // A tag follows the last `:` after the last `/` (a port's `:` comes before one).
        let (name, tag) = match rest.rfind(':') {
            Some(i) if !rest[i..].contains('/') => (&rest[..i], Some(rest[i + 1..].to_owned())),
            _ => (rest, None),
        };
        if let Some(tag) = &tag
            && !is_tag(tag)
        {
            return Err(invalid(
                text,
                "a tag is letters, digits, `_`, `.` and `-` (at most 128, not starting with `.` or `-`)",
            ));
        }
        let (registry, repository) = match name.split_once('/') {
            Some((first, path))
                if first.contains('.') || first.contains(':') || first == "localhost" =>
            {
                (first.to_owned(), path.to_owned())
            }
            _ => (DOCKER_HUB.to_owned(), name.to_owned()),
        };
        let repository = if registry == DOCKER_HUB && !repository.contains('/') {
            format!("library/{repository}")
        } else {
            repository
        };
        if !is_repository(&repository) {
            return Err(invalid(
                text,
                "a repository is lower-case letters and digits, separated by `/`, `.`, `_`, `__` or `-`",
            ));
        }
        Ok(Self {
            registry,
            repository,
            tag,
            digest,
        })
    }

    /// The host the registry's API is served from.
    pub fn api_host(&self) -> &str {
        if self.registry == DOCKER_HUB {
            DOCKER_HUB_API
        } else {
            &self.registry
        }
    }

    /// What to ask the registry for: the digest when pinned, else the tag (or `latest`).
    pub fn target(&self) -> &str {
        self.digest
            .as_deref()
            .or(self.tag.as_deref())
            .unwrap_or(DEFAULT_TAG)
    }

    /// The same repository at `digest`, without a tag.
    pub fn at(&self, digest: &str) -> Self {
        Self {
            digest: Some(digest.to_owned()),
            tag: None,
            ..self.clone()
        }
    }

    /// The same repository with `tag` and no digest.
    pub fn tagged(&self, tag: &str) -> Self {
        Self {
            tag: Some(tag.to_owned()),
            digest: None,
            ..self.clone()
        }
    }

    /// `registry/repository`, without tag or digest.
    pub fn name(&self) -> String {
        format!("{}/{}", self.registry, self.repository)
    }

    /// The reference's last path part (`echo` of `acme/echo`): what a plain component
    /// from it is named after.
    pub fn basename(&self) -> &str {
        self.repository
            .rsplit('/')
            .next()
            .unwrap_or(&self.repository)
    }
}

impl fmt::Display for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.registry, self.repository)?;
        if let Some(tag) = &self.tag {
            write!(f, ":{tag}")?;
        }
        if let Some(digest) = &self.digest {
            write!(f, "@{digest}")?;
        }
        Ok(())
    }
}

/// Whether `text` is `sha256:` and 64 lower-case hex digits.
pub fn is_digest(text: &str) -> bool {
    text.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}

fn is_tag(tag: &str) -> bool {
    !tag.is_empty()
        && tag.len() <= 128
        && !tag.starts_with(['.', '-'])
        && tag
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

fn is_repository(repository: &str) -> bool {
    repository.len() <= 255
        && repository.split('/').all(|part| {
            !part.is_empty()
                && part.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
                && part.ends_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
                && part.bytes().all(|b| {
                    b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'-')
                })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_read_as_docker_reads_them() {
        let r = Reference::parse("oci://127.0.0.1:5000/evo/echo:1.0").unwrap();
        assert_eq!(
            (
                r.registry.as_str(),
                r.repository.as_str(),
                r.tag.as_deref(),
                r.digest.as_deref()
            ),
            ("127.0.0.1:5000", "evo/echo", Some("1.0"), None)
        );
        assert_eq!(r.to_string(), "127.0.0.1:5000/evo/echo:1.0");
        assert_eq!(r.basename(), "echo");

        let pinned = format!("ghcr.io/acme/echo@sha256:{}", "a".repeat(64));
        let r = Reference::parse(&pinned).unwrap();
        assert_eq!(
            (r.tag.as_deref(), r.target()),
            (None, r.digest.as_deref().unwrap())
        );
        assert_eq!(r.to_string(), pinned);

        let r = Reference::parse("localhost:5000/echo").unwrap();
        assert_eq!(
            (r.registry.as_str(), r.target()),
            ("localhost:5000", "latest")
        );

        let r = Reference::parse("alpine").unwrap();
        assert_eq!(
            (r.registry.as_str(), r.repository.as_str()),
            ("docker.io", "library/alpine")
        );
        assert_eq!(r.api_host(), "registry-1.docker.io");
    }

    #[test]
    fn bad_references_say_what_a_reference_is() {
        for bad in [
            "",
            "oci://",
            "ghcr.io/Acme/echo",
            "ghcr.io/acme/echo:",
            "ghcr.io/acme/echo:-x",
            "ghcr.io/acme/echo@sha256:abc",
            "ghcr.io//echo",
        ] {
            let err = Reference::parse(bad).unwrap_err();
            assert_eq!(err.code(), "INVALID_REFERENCE", "{bad}");
            assert!(err.to_string().contains("REGISTRY/REPOSITORY"), "{err}");
        }
    }
}
