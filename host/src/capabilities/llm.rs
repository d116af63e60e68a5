//! The language model: a skill that asks for it (`"llm": true`) may prompt the host's
//! model through `evo:skill/context.llm`, if the operator allows it.

use std::path::Path;

use super::{Capability, Grant, GrantFlag, Policy, RequestedCapabilities};

impl Grant {
    /// Whether `skill` may prompt the model; the error is what it is told.
    pub fn check_llm(&self, skill: &str) -> Result<(), String> {
        if self.llm {
            Ok(())
        } else {
            Err(super::not_granted(skill, "the language model"))
        }
    }
}

/// The language model: `[grants] llm`, `--allow-llm`.
pub(super) struct Llm;

impl Capability for Llm {
    fn key(&self) -> &'static str {
        "llm"
    }

    fn flag(&self) -> &'static GrantFlag {
        &GrantFlag {
            long: "allow-llm",
            value_name: None,
            repeats: false,
            help: "Let skills that ask for the language model use it.",
            hint: "",
            key: "grants.llm",
        }
    }

    fn configure(&self, policy: &mut Policy, value: &toml::Value, _: &Path) -> Result<(), String> {
        policy.llm = super::switch(value)?;
        Ok(())
    }

    fn widen(&self, policy: &mut Policy, _: &str) -> Result<(), String> {
        policy.llm = true;
        Ok(())
    }

    fn show(&self, policy: &Policy) -> serde_json::Value {
        policy.llm.into()
    }

    fn stand_in(&self, named: &Policy, asked: &mut RequestedCapabilities, _: &mut Vec<String>) {
        asked.llm = named.llm;
    }

    fn add(&self, policy: &mut Policy, more: &Policy) {
        policy.llm |= more.llm;
    }

    fn revoke(&self, policy: &mut Policy, _: &str) -> Result<bool, String> {
        Ok(std::mem::take(&mut policy.llm))
    }

    fn grant(&self, requested: &RequestedCapabilities, policy: &Policy, grant: &mut Grant) {
        grant.llm = requested.llm && policy.llm;
        if requested.llm && !policy.llm {
            grant
                .refused
                .push("llm: the host policy does not allow the language model".to_owned());
        }
    }

    fn open_world(&self, grant: &Grant) -> bool {
        grant.llm
    }
}
