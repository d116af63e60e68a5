//! Long-term memory: a skill asks for `read` or `read-write` access and gets the lesser
//! of that and what the operator allows.

use std::path::Path;

use super::{Capability, Grant, GrantFlag, MemoryAccess, Policy, RequestedCapabilities};

/// Memory: `[grants] memory`, `--allow-memory`.
pub(super) struct Memory;

const LEVELS: &str = "use none, read or read-write";

/// Parses a level, or says what the value is not.
fn level(value: &str) -> Result<MemoryAccess, String> {
    MemoryAccess::parse(value).ok_or_else(|| format!("{value:?} is not a memory access"))
}

impl Capability for Memory {
    fn key(&self) -> &'static str {
        "memory"
    }

    fn flag(&self) -> &'static GrantFlag {
        &GrantFlag {
            long: "allow-memory",
            value_name: Some("none|read|read-write"),
            repeats: false,
            help: "The most memory access skills that ask for it get.",
            hint: LEVELS,
            key: "grants.memory",
        }
    }

    fn configure(&self, policy: &mut Policy, value: &toml::Value, _: &Path) -> Result<(), String> {
        let word = value
            .as_str()
            .ok_or_else(|| format!("expected none, read or read-write, {}", super::found(value)))?;
        policy.memory = level(word).map_err(|message| format!("{message}; {LEVELS}"))?;
        Ok(())
    }

    fn widen(&self, policy: &mut Policy, value: &str) -> Result<(), String> {
        policy.memory = policy.memory.max(level(value)?);
        Ok(())
    }

    fn show(&self, policy: &Policy) -> serde_json::Value {
        policy.memory.as_str().into()
    }

    fn stand_in(&self, named: &Policy, asked: &mut RequestedCapabilities, _: &mut Vec<String>) {
        asked.memory = named.memory;
    }

    fn add(&self, policy: &mut Policy, more: &Policy) {
        policy.memory = policy.memory.max(more.memory);
    }

    fn revoke(&self, policy: &mut Policy, _: &str) -> Result<bool, String> {
        Ok(std::mem::take(&mut policy.memory) != MemoryAccess::None)
    }

    fn grant(&self, requested: &RequestedCapabilities, policy: &Policy, grant: &mut Grant) {
        grant.memory = requested.memory.min(policy.memory);
        if grant.memory < requested.memory {
            grant.refused.push(format!(
                "memory: requested {} access, the host policy allows {}",
                requested.memory.as_str(),
                policy.memory.as_str()
            ));
        }
    }
}
