//! Secrets: a skill names a secret and the origin it is for; if the operator allows the
//! secret, the host puts its value into the skill's requests to that origin (the skill
//! never reads it).

use std::path::Path;

use super::{
    Capability, Grant, GrantFlag, Policy, RequestedCapabilities, SecretGrant, SecretRequest,
};
use evo_manifest::check_secret_name as check_name;

impl Grant {
    /// Whether secret `name` may go into a request from `skill` to the origin
    /// `scheme://host:port`; the error is why not.
    pub fn check_secret(
        &self,
        skill: &str,
        name: &str,
        (scheme, host, port): (&str, &str, u16),
    ) -> Result<(), String> {
        let named = || self.secrets.iter().filter(|g| g.name == name);
        if named().any(|g| g.host.matches_origin(scheme, host, port)) {
            return Ok(());
        }
        let Some(first) = named().next() else {
            return Err(format!(
                "secret {name} is not granted to {skill}; it must ask for it in its manifest (capabilities.secrets) and the operator must allow it (--allow-secret {name} or [grants] secrets)"
            ));
        };
        Err(format!(
            "secret {name} is granted to {skill} for {} only, not for this host",
            first.host
        ))
    }
}

/// Secrets: `[grants] secrets`, `--allow-secret`.
pub(super) struct Secrets;

impl Capability for Secrets {
    fn key(&self) -> &'static str {
        "secrets"
    }

    fn flag(&self) -> &'static GrantFlag {
        &GrantFlag {
            long: "allow-secret",
            value_name: Some("NAME"),
            repeats: true,
            help: "Let skills that ask for this secret (`evo secret set NAME`) have the host put it into their requests to the host they name for it. Repeat for more.",
            hint: "`evo secret list` shows the secrets set",
            key: "grants.secrets",
        }
    }

    fn configure(&self, policy: &mut Policy, value: &toml::Value, _: &Path) -> Result<(), String> {
        let names = super::strings(value)?;
        for name in &names {
            check_name(name)?;
        }
        policy.secrets = names.into_iter().map(str::to_owned).collect();
        Ok(())
    }

    fn widen(&self, policy: &mut Policy, value: &str) -> Result<(), String> {
        check_name(value)?;
        policy.secrets.push(value.to_owned());
        Ok(())
    }

    fn show(&self, policy: &Policy) -> serde_json::Value {
        policy.secrets.clone().into()
    }

    fn stand_in(
        &self,
        named: &Policy,
        asked: &mut RequestedCapabilities,
        refused: &mut Vec<String>,
    ) {
        for name in &named.secrets {
            if named.hosts.is_empty() {
                refused.push(format!(
                    "secret {name}: a component that asks for nothing gets a secret only for the hosts granted to it by name, and none is; grant the host it is for too"
                ));
            }
            asked
                .secrets
                .extend(named.hosts.iter().map(|host| SecretRequest {
                    name: name.clone(),
                    host: host.clone(),
                    reason: super::NAMED.to_owned(),
                }));
        }
    }

    fn add(&self, policy: &mut Policy, more: &Policy) {
        for name in &more.secrets {
            if !policy.secrets.contains(name) {
                policy.secrets.push(name.clone());
            }
        }
    }

    fn revoke(&self, policy: &mut Policy, value: &str) -> Result<bool, String> {
        let before = policy.secrets.len();
        policy.secrets.retain(|s| s != value);
        Ok(policy.secrets.len() < before)
    }

    fn grant(&self, requested: &RequestedCapabilities, policy: &Policy, grant: &mut Grant) {
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
    }
}
