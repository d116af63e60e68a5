//! What each skill is granted, and what was given to one by name that did not reach it.

use std::path::Path;

use super::Host;
use crate::capabilities::{Grant, Policy};
use crate::engine::wasm::{PlainExecutor, SEPARATOR, WasmExecutor, component_name};
use crate::skill::registry::RegisteredSkill;

/// How a skill takes grants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asking {
    /// It asks in its manifest and gets what it asks for within the policy.
    Asks,
    /// A plain component whose manifest names no capabilities: it gets what is granted
    /// to it by name, under its component's name.
    ByName,
}

impl Host {
    /// What skill `name` (or an alias) holds: the grant its executor was built with,
    /// or, for a skill that grants at each call (an instruction, a composite), what its
    /// manifest asks for within the policy. `None` for an unknown skill.
    pub fn grant_of(&self, name: &str) -> Option<Grant> {
        self.skill(name).map(|skill| self.granted(&skill))
    }

    /// What `skill` holds (see [`Host::grant_of`]).
    pub fn granted(&self, skill: &RegisteredSkill) -> Grant {
        held(skill).unwrap_or_else(|| {
            Grant::new(
                &skill.meta.capabilities,
                self.grants().for_skill(&skill.meta.name),
            )
        })
    }

    /// How skill `name` takes grants, and the name grants for it are kept under (a
    /// plain component's, for each of its functions).
    pub fn asking(&self, name: &str) -> Option<(Asking, String)> {
        let skill = self.skill(name)?;
        let plain = skill
            .executor
            .as_any()
            .and_then(|a| a.downcast_ref::<PlainExecutor>())
            .map(PlainExecutor::component);
        Some(match plain {
            Some(component) if !component.asks() => (Asking::ByName, component.meta().name.clone()),
            Some(component) => (Asking::Asks, component.meta().name.clone()),
            None => (Asking::Asks, skill.meta.name.clone()),
        })
    }

    /// The name grants given to a run of `target` are kept under: for a `.wasm` file
    /// (`FILE.wasm#FUNCTION` too) or a directory, the component name the file would get
    /// without a manifest naming it; for a function of a plain component
    /// (`COMPONENT__FUNCTION`), the component's; else `target` itself.
    pub fn given_name(target: &str) -> String {
        let path = Path::new(target);
        let file = match target.rsplit_once('#') {
            Some((file, _)) if !path.exists() && Path::new(file).exists() => Path::new(file),
            _ => path,
        };
        if file.exists() {
            let label = file.file_name().map_or_else(
                || file.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            );
            return component_name(&label);
        }
        target.split_once(SEPARATOR).map_or(target, |(component, _)| component).to_owned()
    }

    /// What of `given` (grants given to skill `name` by name, as [`Host::given_name`]
    /// keeps them) did not reach it, each with why: one sentence per value.
    pub fn unapplied(&self, name: &str, given: &Policy) -> Vec<String> {
        let (Some(grant), Some((asking, kept_under))) = (self.grant_of(name), self.asking(name))
        else {
            return Vec::new();
        };
        let why = match asking {
            Asking::Asks => format!(
                "{name} gets only what its manifest asks for (`evo skill info {name}` lists it)"
            ),
            Asking::ByName if given.allows_anything() && !self.grants().given.contains_key(&kept_under) => {
                format!("it was given to another name; grants for {name} are kept under {kept_under}")
            }
            Asking::ByName => format!("{name} could not take it"),
        };
        grant
            .lacks(given)
            .into_iter()
            .map(|value| format!("{value} was not granted to {name}: {why}"))
            .collect()
    }
}

/// The grant `skill`'s executor was built with, when it keeps one.
fn held(skill: &RegisteredSkill) -> Option<Grant> {
    let any = skill.executor.as_any()?;
    if let Some(wasm) = any.downcast_ref::<WasmExecutor>() {
        return Some(wasm.skill().grant().clone());
    }
    if let Some(plain) = any.downcast_ref::<PlainExecutor>() {
        return Some(plain.component().grant().clone());
    }
    if let Some(service) = any.downcast_ref::<crate::engine::service::ServiceExecutor>() {
        return Some(service.grant().clone());
    }
    #[cfg(feature = "native")]
    if let Some(native) = any.downcast_ref::<crate::engine::native::NativeExecutor>() {
        return Some(native.grant().clone());
    }
    None
}
