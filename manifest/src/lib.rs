//! The skill manifest as it crosses Evo's contract: what a component's `manifest` export
//! returns, and what a `skill.json` holds for a code skill. One set of serde types, used
//! by the guest SDK (which writes it) and the host (which validates it), so the two
//! cannot disagree on a field name or a capability.
//!
//! ```
//! use evo_manifest::{Access, Capabilities, DirRequest, SkillManifest};
//! use serde_json::json;
//!
//! let manifest = SkillManifest {
//!     capabilities: Capabilities {
//!         dirs: vec![DirRequest::new("/data", Access::Read, "the files to read").unwrap()],
//!         ..Capabilities::default()
//!     },
//!     ..SkillManifest::new("file-head", "Reads the first lines of a text file.")
//! };
//! let json = serde_json::to_value(&manifest).unwrap();
//! assert_eq!(json["capabilities"], json!({
//!     "dirs": [{ "path": "/data", "access": "read", "reason": "the files to read" }]
//! }));
//! assert_eq!(serde_json::from_value::<SkillManifest>(json).unwrap(), manifest);
//! ```
#![deny(missing_docs)]

use serde::{Deserialize, Serialize};
use serde_json::Value;

mod net;

pub use net::{HostPattern, HostRequest, Scheme, SecretRequest, check_secret_name, is_internal};

/// A skill's manifest. Only the name and description are required; the host fills in
/// the rest (category `general`, version `1.0.0`, a 30 s timeout, no retries, the host's
/// limits, no capabilities).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SkillManifest {
    /// Unique name, `^[a-z][a-z0-9_-]{0,63}$`.
    pub name: String,
    /// What the skill does; a model reads it to decide when to use the skill.
    pub description: String,
    /// Grouping for listings and prompts (`memory`, `text`, `math`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// `code` for a component; `skill.json` may also say `llm` or `composite`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// JSON Schema of the input.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub input: Value,
    /// JSON Schema of the output.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub output: Value,
    /// SemVer version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Free-form tags (`readonly`, `destructive`, …).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// A few things a user might say when they want this skill, in their words ("how
    /// long would this take to read?"): the skill index ranks a message by the closest of
    /// these and the description, so a skill is found for words its description does
    /// not use.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requests: Vec<String>,
    /// Who wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    /// Wall-clock time one call may take, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u64>,
    /// Retries of a call that failed with a transient error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<u32>,
    /// Skills this one may call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<String>,
    /// Resource limits asked for; the host clamps each to its policy.
    #[serde(default, skip_serializing_if = "Limits::is_empty")]
    pub limits: Limits,
    /// What the skill may do beyond computing, if the operator grants it.
    #[serde(default)]
    pub capabilities: Capabilities,
}

impl SkillManifest {
    /// A manifest with only a name and a description.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            category: None,
            mode: None,
            input: Value::Null,
            output: Value::Null,
            version: None,
            tags: Vec::new(),
            requests: Vec::new(),
            author: None,
            timeout: None,
            retry: None,
            calls: Vec::new(),
            limits: Limits::default(),
            capabilities: Capabilities::default(),
        }
    }
}

/// Resource limits a skill asks for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Limits {
    /// Linear memory across all of the skill's memories, in MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mib: Option<u64>,
    /// Fuel (roughly, Wasm instructions) per call, for deterministic metering.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fuel: Option<u64>,
    /// Largest output, in bytes of JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_bytes: Option<u64>,
}

impl Limits {
    /// Whether nothing is asked for.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// What a skill asks for beyond computing. Everything is denied unless asked for here
/// and granted by the operator.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Capabilities {
    /// Directories, by the path the skill sees.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dirs: Vec<DirRequest>,
    /// The language model.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub llm: bool,
    /// Long-term memory.
    #[serde(skip_serializing_if = "MemoryAccess::is_none")]
    pub memory: MemoryAccess,
    /// Outbound HTTP hosts.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<HostRequest>,
    /// Secrets the host puts into requests to one host each; the skill never sees them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub secrets: Vec<SecretRequest>,
}

impl Capabilities {
    /// Whether nothing is asked for.
    pub fn is_empty(&self) -> bool {
        self.dirs.is_empty()
            && !self.llm
            && self.memory == MemoryAccess::None
            && self.hosts.is_empty()
            && self.secrets.is_empty()
    }

    /// The requests of `other` that these do not cover, described for an operator.
    pub fn not_covering(&self, other: &Capabilities) -> Vec<String> {
        let mut extra: Vec<String> = other
            .dirs
            .iter()
            .filter(|d| {
                !self
                    .dirs
                    .iter()
                    .any(|mine| mine.path == d.path && mine.access >= d.access)
            })
            .map(|d| format!("directory {} ({:?})", d.path, d.access))
            .collect();
        if other.llm && !self.llm {
            extra.push("the language model".into());
        }
        if other.memory > self.memory {
            extra.push(format!("memory ({})", other.memory.as_str()));
        }
        for request in &other.hosts {
            if !self
                .hosts
                .iter()
                .any(|mine| mine.host.covers(&request.host))
            {
                extra.push(format!("outbound host {}", request.host));
            }
        }
        for request in &other.secrets {
            if !self
                .secrets
                .iter()
                .any(|mine| mine.name == request.name && mine.host.covers(&request.host))
            {
                extra.push(format!("secret {} for {}", request.name, request.host));
            }
        }
        extra
    }
}

/// A directory a skill asks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DirRequest {
    /// Absolute, normalised path the skill opens, e.g. `/data`.
    pub path: String,
    /// Read-only or read-write.
    pub access: Access,
    /// Why the skill needs it, shown to the operator at install.
    pub reason: String,
}

impl DirRequest {
    /// A request for `path`, which must be absolute with no `.` or `..` segments.
    pub fn new(path: &str, access: Access, reason: impl Into<String>) -> Result<Self, String> {
        Ok(Self {
            path: normalize_guest_path(path)?,
            access,
            reason: reason.into(),
        })
    }
}

/// `path` with repeated slashes removed, refused unless absolute, free of `.` and `..`,
/// and other than `/`.
pub fn normalize_guest_path(path: &str) -> Result<String, String> {
    let Some(rest) = path.strip_prefix('/') else {
        return Err(format!("{path:?} is not an absolute path"));
    };
    let mut out = String::new();
    for segment in rest.split('/').filter(|s| !s.is_empty()) {
        if segment == "." || segment == ".." {
            return Err(format!("{path:?} contains `.` or `..`"));
        }
        out.push('/');
        out.push_str(segment);
    }
    if out.is_empty() {
        return Err("the guest root `/` cannot be granted".to_owned());
    }
    Ok(out)
}

/// Access to a directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Access {
    /// List and read files.
    Read,
    /// Also create, write, rename and delete files.
    ReadWrite,
}

/// Access to long-term memory.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MemoryAccess {
    /// None (the default).
    #[default]
    None,
    /// Search.
    Read,
    /// Search, store and forget.
    ReadWrite,
}

impl MemoryAccess {
    /// `none`, `read` or `read-write`, as written in manifests.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Read => "read",
            Self::ReadWrite => "read-write",
        }
    }

    /// Parses `none`, `read` or `read-write`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "none" => Some(Self::None),
            "read" => Some(Self::Read),
            "read-write" => Some(Self::ReadWrite),
            _ => None,
        }
    }

    /// Whether this is [`MemoryAccess::None`].
    pub fn is_none(&self) -> bool {
        *self == Self::None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guest_paths_are_absolute_and_normalised() {
        assert_eq!(normalize_guest_path("/data//in/").unwrap(), "/data/in");
        for bad in ["data", "/data/../etc", "/./x", "/", "//"] {
            assert!(normalize_guest_path(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_wider_request_is_not_covered() {
        let host = |h: &str| HostRequest {
            host: HostPattern::parse(h).unwrap(),
            reason: String::new(),
        };
        let approved = Capabilities {
            dirs: vec![DirRequest::new("/data", Access::Read, "in").unwrap()],
            hosts: vec![host("https://*.github.com")],
            ..Capabilities::default()
        };
        let asked = Capabilities {
            dirs: vec![DirRequest::new("/data", Access::ReadWrite, "in").unwrap()],
            llm: true,
            memory: MemoryAccess::Read,
            hosts: vec![host("api.github.com"), host("http://127.0.0.1:8080")],
            secrets: vec![SecretRequest {
                name: "GITHUB_TOKEN".into(),
                host: HostPattern::parse("api.github.com").unwrap(),
                reason: String::new(),
            }],
        };
        assert_eq!(
            approved.not_covering(&asked),
            [
                "directory /data (ReadWrite)",
                "the language model",
                "memory (read)",
                "outbound host http://127.0.0.1:8080",
                "secret GITHUB_TOKEN for https://api.github.com"
            ]
        );
        assert_eq!(
            asked.not_covering(&approved),
            ["outbound host https://*.github.com"],
            "a name does not cover the wildcard above it"
        );
    }

    #[test]
    fn an_empty_manifest_serialises_to_its_two_fields_and_capabilities() {
        let json = serde_json::to_value(SkillManifest::new("x", "y")).unwrap();
        assert_eq!(
            json,
            serde_json::json!({ "name": "x", "description": "y", "capabilities": {} })
        );
    }
}
