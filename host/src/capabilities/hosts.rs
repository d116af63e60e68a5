//! Outbound HTTP: a skill names the origins it calls, the operator allows origins (or
//! patterns of them), and the skill reaches only the origins in both.

use std::path::Path;

use super::{
    Capability, Grant, GrantFlag, HostPattern, HostRequest, Policy, RequestedCapabilities,
};

impl Grant {
    /// The granted pattern the origin `scheme://host:port` is inside, or why a request
    /// from `skill` to it is refused.
    pub fn admit_origin(
        &self,
        skill: &str,
        (scheme, host, port): (&str, &str, u16),
    ) -> Result<&HostPattern, String> {
        let origin = format!("{scheme}://{host}:{port}");
        self.hosts
            .iter()
            .find(|p| p.matches_origin(scheme, host, port))
            .ok_or_else(|| {
                if self.hosts.is_empty() {
                    format!(
                        "{origin}: {skill} was granted no outbound hosts; the skill must ask for it in its manifest (capabilities.hosts) and the operator must allow it (--allow-host or [grants] hosts)"
                    )
                } else {
                    format!(
                        "{origin}: not among the hosts granted to {skill} ({})",
                        self.hosts
                            .iter()
                            .map(ToString::to_string)
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                }
            })
    }
}

/// Outbound hosts: `[grants] hosts`, `--allow-host`.
pub(super) struct Hosts;

impl Capability for Hosts {
    fn key(&self) -> &'static str {
        "hosts"
    }

    fn flag(&self) -> &'static GrantFlag {
        &GrantFlag {
            long: "allow-host",
            value_name: Some("ORIGIN"),
            repeats: true,
            help: "Let skills that ask for this outbound HTTP origin reach it: `[scheme://]host[:port]`, `*.example.com` for the names below a domain, `*` for any host, `:*` for any port; the machine and private networks only by address (`http://127.0.0.1:8080`). Repeat for more.",
            hint: "use scheme://host[:port], e.g. https://api.github.com or http://127.0.0.1:8080",
            key: "grants.hosts",
        }
    }

    fn configure(&self, policy: &mut Policy, value: &toml::Value, _: &Path) -> Result<(), String> {
        policy.hosts = super::strings(value)?
            .into_iter()
            .map(|spec| {
                HostPattern::parse(spec).map_err(|message| {
                    format!("{message}; e.g. \"https://api.github.com\", \"https://*.example.com\" or \"http://127.0.0.1:8080\"")
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(())
    }

    fn widen(&self, policy: &mut Policy, value: &str) -> Result<(), String> {
        policy.hosts.push(HostPattern::parse(value)?);
        Ok(())
    }

    fn show(&self, policy: &Policy) -> serde_json::Value {
        policy.hosts.iter().map(ToString::to_string).collect()
    }

    fn stand_in(&self, named: &Policy, asked: &mut RequestedCapabilities, _: &mut Vec<String>) {
        asked
            .hosts
            .extend(named.hosts.iter().map(|host| HostRequest {
                host: host.clone(),
                reason: super::NAMED.to_owned(),
            }));
    }

    fn add(&self, policy: &mut Policy, more: &Policy) {
        for host in &more.hosts {
            if !policy.hosts.contains(host) {
                policy.hosts.push(host.clone());
            }
        }
    }

    fn revoke(&self, policy: &mut Policy, value: &str) -> Result<bool, String> {
        let host = HostPattern::parse(value)?;
        let before = policy.hosts.len();
        policy.hosts.retain(|h| *h != host);
        Ok(policy.hosts.len() < before)
    }

    fn grant(&self, requested: &RequestedCapabilities, policy: &Policy, grant: &mut Grant) {
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
            if granted.is_empty() {
                grant.refused.push(format!(
                    "outbound host {}: the host policy does not allow it; grant it with --allow-host {} or in [grants] hosts",
                    request.host, request.host
                ));
            }
            for host in granted {
                if !grant.hosts.contains(&host) {
                    grant.hosts.push(host);
                }
            }
        }
    }

    fn open_world(&self, grant: &Grant) -> bool {
        !grant.hosts.is_empty()
    }
}
