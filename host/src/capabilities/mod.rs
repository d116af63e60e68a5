//! Capabilities: what a skill may do beyond computing.
//!
//! Deny by default. A skill *requests* capabilities in its manifest, the operator
//! configures a [`Policy`], and the skill gets the [`Grant`] = requested ∩ policy. Each
//! kind of capability lives in its own file with its own `allows` tests.

mod dir;

use std::collections::BTreeMap;

use serde::Serialize;

pub use dir::{DirGrant, DirPolicy, DirRequest};

pub use evo_manifest::{
    Access, Capabilities as RequestedCapabilities, HostPattern, HostRequest, MemoryAccess,
    SecretRequest,
};

/// What the operator allows. The default allows nothing:
///
/// - no directories,
/// - no language model,
/// - no memory,
/// - no helper scripts,
/// - no outbound hosts,
/// - no secrets,
/// - no per-skill entries.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    /// Directories the operator binds to guest paths, each with the most access allowed.
    pub dirs: Vec<DirPolicy>,
    /// Whether skills that ask for the language model get it.
    pub llm: bool,
    /// The most memory access any skill gets.
    pub memory: MemoryAccess,
    /// Whether an instruction skill's helper scripts (`scripts/*.py`, `*.sh`, `*.js`)
    /// may be run, in the native sandbox, on request (`run_skill_script`).
    pub exec: bool,
    /// Outbound HTTP origins skills may reach (each skill only those it asks for).
    pub hosts: Vec<HostPattern>,
    /// Secrets (by name) skills that ask for them may have put into their requests.
    pub secrets: Vec<String>,
    /// Configuration values (not secret) by skill name, then key: what each skill reads
    /// through `wasi:config` (`[skill_config.NAME]` in evo.toml). Only the top-level
    /// policy's map is read.
    pub config: BTreeMap<String, BTreeMap<String, String>>,
    /// Policies for named skills, each replacing this one for its skill (their own
    /// `skills` are not consulted).
    pub skills: BTreeMap<String, Policy>,
}

impl Policy {
    /// The policy that applies to skill `name`: its own entry, else this one.
    pub fn for_skill(&self, name: &str) -> &Policy {
        self.skills.get(name).unwrap_or(self)
    }
}

/// What a skill actually gets: requested ∩ policy.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Grant {
    /// Directories to preopen.
    pub dirs: Vec<DirGrant>,
    /// The language model.
    pub llm: bool,
    /// Long-term memory.
    pub memory: MemoryAccess,
    /// Outbound HTTP origins: the ones the skill asked for that the policy covers.
    pub hosts: Vec<HostPattern>,
    /// Secrets the host puts into the skill's requests, each for its host.
    pub secrets: Vec<SecretGrant>,
    /// Configuration values the skill reads through `wasi:config`.
    pub config: BTreeMap<String, String>,
    /// Requests that were not granted, with the reason, for the operator to review.
    pub refused: Vec<String>,
}

/// A secret granted to a skill, for requests to `host`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SecretGrant {
    /// The secret's name.
    pub name: String,
    /// The origins its value may be sent to.
    pub host: HostPattern,
}

impl Grant {
    /// Intersects a skill's request with the operator's policy.
    pub fn new(requested: &RequestedCapabilities, policy: &Policy) -> Self {
        let mut grant = Grant::default();
        for request in &requested.dirs {
            match dir::grant(request, &policy.dirs) {
                Ok(granted) => grant.dirs.push(granted),
                Err(reason) => grant.refused.push(reason),
            }
        }
        grant.llm = requested.llm && policy.llm;
        if requested.llm && !policy.llm {
            grant
                .refused
                .push("llm: the host policy does not allow the language model".to_owned());
        }
        grant.memory = requested.memory.min(policy.memory);
        if grant.memory < requested.memory {
            grant.refused.push(format!(
                "memory: requested {} access, the host policy allows {}",
                requested.memory.as_str(),
                policy.memory.as_str()
            ));
        }
        for request in &requested.hosts {
            // The intersection: the request where the policy covers it, else the parts
            // of the policy inside the request (`:*` asked, one port allowed).
            let granted: Vec<HostPattern> = if policy
                .hosts
                .iter()
                .any(|allowed| allowed.covers(&request.host))
            {
                vec![request.host.clone()]
            } else {
                policy
                    .hosts
                    .iter()
                    .filter(|allowed| request.host.covers(allowed))
                    .cloned()
                    .collect()
            };
            if !granted.is_empty() {
                for host in granted {
                    if !grant.hosts.contains(&host) {
                        grant.hosts.push(host);
                    }
                }
            } else {
                grant.refused.push(format!(
                    "outbound host {}: the host policy does not allow it; grant it with --allow-host {} or in [grants] hosts",
                    request.host, request.host
                ));
            }
        }
        for request in &requested.secrets {
            if policy.secrets.contains(&request.name) {
                grant.secrets.push(SecretGrant {
                    name: request.name.clone(),
                    host: request.host.clone(),
                });
            } else {
                grant.refused.push(format!(
                    "secret {} for {}: the host policy does not allow it; grant it with --allow-secret {} or in [grants] secrets",
                    request.name, request.host, request.name
                ));
            }
        }
        grant
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_is_granted_by_default() {
        let requested = RequestedCapabilities {
            dirs: vec![DirRequest::new("/data", Access::Read, "files").unwrap()],
            llm: true,
            memory: MemoryAccess::ReadWrite,
            hosts: vec![HostRequest {
                host: HostPattern::parse("api.example.com").unwrap(),
                reason: "the API".into(),
            }],
            secrets: vec![SecretRequest {
                name: "API_KEY".into(),
                host: HostPattern::parse("api.example.com").unwrap(),
                reason: "the API's key".into(),
            }],
        };
        let grant = Grant::new(&requested, &Policy::default());
        assert!(grant.dirs.is_empty());
        assert!(!grant.llm);
        assert_eq!(grant.memory, MemoryAccess::None);
        assert!(grant.hosts.is_empty());
        assert!(grant.secrets.is_empty());
        assert_eq!(grant.refused.len(), 5);
        assert_eq!(
            grant.refused[3],
            "outbound host https://api.example.com: the host policy does not allow it; grant it with --allow-host https://api.example.com or in [grants] hosts"
        );
        assert_eq!(
            grant.refused[4],
            "secret API_KEY for https://api.example.com: the host policy does not allow it; grant it with --allow-secret API_KEY or in [grants] secrets"
        );
        let policy = Policy {
            secrets: vec!["API_KEY".into()],
            ..Policy::default()
        };
        assert_eq!(
            Grant::new(&requested, &policy).secrets,
            [SecretGrant {
                name: "API_KEY".into(),
                host: HostPattern::parse("api.example.com").unwrap()
            }]
        );
    }

    #[test]
    fn hosts_are_the_requests_the_policy_covers() {
        let request = |h: &str| HostRequest {
            host: HostPattern::parse(h).unwrap(),
            reason: String::new(),
        };
        let requested = RequestedCapabilities {
            hosts: vec![
                request("api.github.com"),
                request("http://127.0.0.1:9000"),
                request("https://evil.example"),
                request("http://localhost:*"),
            ],
            ..Default::default()
        };
        let policy = Policy {
            hosts: [
                "https://*.github.com",
                "http://127.0.0.1:9000",
                "https://other.example",
                "http://localhost:8080",
            ]
            .map(|h| HostPattern::parse(h).unwrap())
            .to_vec(),
            ..Policy::default()
        };
        let grant = Grant::new(&requested, &policy);
        let granted: Vec<String> = grant.hosts.iter().map(ToString::to_string).collect();
        assert_eq!(
            granted,
            [
                "https://api.github.com",
                "http://127.0.0.1:9000",
                "http://localhost:8080"
            ],
            "any port asked for, one allowed: that one"
        );
        assert_eq!(grant.refused.len(), 1, "{:?}", grant.refused);
    }

    #[test]
    fn memory_is_the_lesser_of_request_and_policy() {
        let table = [
            (
                MemoryAccess::None,
                MemoryAccess::ReadWrite,
                MemoryAccess::None,
            ),
            (
                MemoryAccess::Read,
                MemoryAccess::ReadWrite,
                MemoryAccess::Read,
            ),
            (
                MemoryAccess::ReadWrite,
                MemoryAccess::Read,
                MemoryAccess::Read,
            ),
            (
                MemoryAccess::ReadWrite,
                MemoryAccess::ReadWrite,
                MemoryAccess::ReadWrite,
            ),
        ];
        for (requested, allowed, expected) in table {
            let grant = Grant::new(
                &RequestedCapabilities {
                    memory: requested,
                    ..Default::default()
                },
                &Policy {
                    memory: allowed,
                    ..Default::default()
                },
            );
            assert_eq!(grant.memory, expected, "{requested:?} ∩ {allowed:?}");
        }
    }

    #[test]
    fn a_skill_entry_replaces_the_default_for_that_skill_only() {
        let policy = Policy {
            llm: false,
            skills: [(
                "notes".to_owned(),
                Policy {
                    llm: true,
                    memory: MemoryAccess::ReadWrite,
                    ..Policy::default()
                },
            )]
            .into(),
            ..Policy::default()
        };
        assert!(policy.for_skill("notes").llm);
        assert_eq!(policy.for_skill("notes").memory, MemoryAccess::ReadWrite);
        assert!(!policy.for_skill("calculate").llm);
        assert_eq!(policy.for_skill("calculate").memory, MemoryAccess::None);
    }
}
