//! Long-term memory: a skill asks for `read` or `read-write` access and gets the lesser
//! of that and what the operator allows.

use std::path::Path;

use super::{Capability, Grant, GrantFlag, MemoryAccess, Policy, RequestedCapabilities};

impl Grant {
    /// Whether `skill` may have `needed` access to memory (searching it, or storing in
    /// it); the error is what it is told.
    pub fn check_memory(&self, skill: &str, needed: MemoryAccess) -> Result<(), String> {
        if self.memory >= needed {
            return Ok(());
        }
        Err(super::not_granted(
            skill,
            match needed {
                MemoryAccess::ReadWrite => "write access to memory",
                _ => "read access to memory",
            },
        ))
    }

    /// Whether the memory writes `skill` suggests in its result may be kept: they are
    /// writes by another name, so they need write access (without it a skill could fill
    /// memory, and so the model's context, with what it likes). The error is the reason
    /// each suggestion is refused with.
    pub fn check_suggested_writes(&self, skill: &str) -> Result<(), String> {
        if self.memory == MemoryAccess::ReadWrite {
            return Ok(());
        }
        Err(format!(
            "{skill} may not write to memory: it needs `\"memory\": \"read-write\"` among its capabilities and that grant from the operator (`[grants] memory = \"read-write\"`, `[grants.skill.{skill}]`, or `--allow-memory read-write`)"
        ))
    }
}

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
