//! Helper scripts: whether an instruction skill's `scripts/*.py`, `*.sh` and `*.js` may
//! be run, in the native sandbox, through the `run_skill_script` tool. Nothing in a
//! manifest asks for it; the tool checks the policy when it is called.

use std::path::Path;

use super::{Capability, Grant, GrantFlag, Policy, RequestedCapabilities};

impl Policy {
    /// Whether skill `name`'s helper scripts may be run under this policy; the error
    /// says how to allow it.
    pub fn check_exec(&self, name: &str) -> Result<(), String> {
        if self.for_skill(name).exec {
            return Ok(());
        }
        Err(format!(
            "running {name}'s scripts needs the exec grant: pass --allow-exec, or set `exec = true` under [grants.skill.{name}] in evo.toml, if you trust the skill"
        ))
    }
}

/// Helper scripts: `[grants] exec`, `--allow-exec`.
pub(super) struct Exec;

impl Capability for Exec {
    fn key(&self) -> &'static str {
        "exec"
    }

    fn flag(&self) -> &'static GrantFlag {
        &GrantFlag {
            long: "allow-exec",
            value_name: None,
            repeats: false,
            help: "Let instruction skills' helper scripts (scripts/*.py, *.sh, *.js) be run, in the native sandbox, through the `run_skill_script` tool.",
            hint: "",
            key: "grants.exec",
        }
    }

    fn configure(&self, policy: &mut Policy, value: &toml::Value, _: &Path) -> Result<(), String> {
        policy.exec = super::switch(value)?;
        Ok(())
    }

    fn widen(&self, policy: &mut Policy, _: &str) -> Result<(), String> {
        policy.exec = true;
        Ok(())
    }

    fn show(&self, policy: &Policy) -> serde_json::Value {
        policy.exec.into()
    }

    fn grant(&self, _: &RequestedCapabilities, _: &Policy, _: &mut Grant) {}

    fn revoke(&self, policy: &mut Policy, _: &str) -> Result<bool, String> {
        Ok(std::mem::take(&mut policy.exec))
    }

    fn stand_in(&self, _: &Policy, _: &mut RequestedCapabilities, _: &mut Vec<String>) {}

    fn add(&self, policy: &mut Policy, more: &Policy) {
        policy.exec |= more.exec;
    }
}
