//! Capabilities: what a skill may do beyond computing.
//!
//! Deny by default. A skill *requests* capabilities in its manifest, the operator
//! configures a [`Policy`], and the skill gets the [`Grant`] = requested ∩ policy. Each
//! kind of capability lives in its own file, behind one trait (`Capability`): its
//! intersection, its `[grants]` key, its flag, how `evo config show` prints it and what
//! MCP clients are told of it, how a sandbox is set up for it (`Sandbox`), and the
//! check of each request a skill makes of it (`Grant::check_llm`, `Grant::admit_origin`,
//! …), which the Wasm engine and the native sandbox call rather than decide.
//! Configuration files, the command line, `config show`, grants, MCP annotations and
//! sandboxes loop over `ALL`.

mod dir;
mod exec;
mod hosts;
mod llm;
mod memory;
mod secrets;

use std::collections::BTreeMap;
use std::path::Path;

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
///
/// A skill that can ask (an Evo component, a script, a plain component whose manifest
/// has `capabilities`) gets what it asks for within [`Policy::for_skill`]. A plain
/// component with nothing to ask with gets nothing from the policy every skill shares:
/// only what is named for it (its `skills` entry and its `given` one) reaches it, in
/// full ([`Grant::named`]).
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
    /// What this process was given for one skill by name and nowhere else (the flags
    /// of `evo skill run TARGET` are given to TARGET). Added to the skill's `skills`
    /// entry for a component that asks for nothing; what other skills' requests are
    /// matched against does not change.
    pub given: BTreeMap<String, Policy>,
}

impl Policy {
    /// The policy that applies to skill `name`: its own entry, else this one.
    pub fn for_skill(&self, name: &str) -> &Policy {
        self.skills.get(name).unwrap_or(self)
    }

    /// What is named for skill `name`: its `skills` entry with what was `given` to it
    /// added; `None` when neither names it.
    pub fn named_for(&self, name: &str) -> Option<Policy> {
        let (entry, given) = (self.skills.get(name), self.given.get(name));
        let mut named = entry.or(given)?.clone();
        if let (Some(_), Some(given)) = (entry, given) {
            for capability in ALL {
                capability.add(&mut named, given);
            }
        }
        named.skills.clear();
        named.given.clear();
        Some(named)
    }

    /// This policy's own values as `[grants]` keys and values (JSON), as evo.toml and
    /// `evo config show` write them.
    pub fn shown(&self) -> serde_json::Value {
        ALL.iter()
            .map(|c| (c.key().to_owned(), c.show(self)))
            .collect::<serde_json::Map<_, _>>()
            .into()
    }

    /// The policy [`Policy::shown`] wrote; the error names the key that does not read.
    pub fn from_shown(shown: &serde_json::Value) -> Result<Policy, String> {
        let mut policy = Policy::default();
        for (key, value) in shown.as_object().into_iter().flatten() {
            let capability = by_key(key).ok_or_else(|| format!("{key}: not a kind of grant"))?;
            let value: toml::Value =
                serde_json::from_value(value.clone()).map_err(|e| format!("{key}: {e}"))?;
            capability
                .configure(&mut policy, &value, Path::new("/"))
                .map_err(|e| format!("{key}: {e}"))?;
        }
        Ok(policy)
    }

    /// Whether this policy allows anything at all (its own values, not `skills`).
    pub fn allows_anything(&self) -> bool {
        let nothing = Policy::default();
        ALL.iter().any(|c| c.show(self) != c.show(&nothing))
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
        for capability in ALL {
            capability.grant(requested, policy, &mut grant);
        }
        grant
    }

    /// What a component with nothing to ask with gets from `named`, the grants named
    /// for it: all of them, each as if asked for. A secret goes with every host
    /// `named` lists (it says which hosts the skill may send it to); without one it is
    /// refused, with the reason.
    pub fn named(named: &Policy) -> Self {
        let mut asked = RequestedCapabilities::default();
        let mut refused = Vec::new();
        for capability in ALL {
            capability.stand_in(named, &mut asked, &mut refused);
        }
        let mut grant = Grant::new(&asked, named);
        grant.refused.extend(refused);
        grant
    }

    /// What of `given` (as [`Grant::named`] would grant it) this grant does not hold,
    /// one line per value (`directory /srv/docs::/data`, `outbound host
    /// https://api.example.com`): what an operator typed that did not reach the skill.
    pub fn lacks(&self, given: &Policy) -> Vec<String> {
        let wanted = Grant::named(given);
        let mut lacks = Vec::new();
        for dir in &wanted.dirs {
            let held = self
                .dirs
                .iter()
                .any(|d| d.guest == dir.guest && d.host == dir.host && d.access >= dir.access);
            if !held {
                lacks.push(format!("directory {}::{}", dir.host.display(), dir.guest));
            }
        }
        if wanted.llm && !self.llm {
            lacks.push("the language model".to_owned());
        }
        if wanted.memory > self.memory {
            lacks.push(format!("{} access to memory", wanted.memory.as_str()));
        }
        for host in wanted.hosts.iter().filter(|h| !self.hosts.contains(h)) {
            lacks.push(format!("outbound host {host}"));
        }
        let names = |grant: &Grant| -> Vec<String> {
            grant.secrets.iter().map(|s| s.name.clone()).collect()
        };
        let (wanted_secrets, held) = (names(&wanted), names(self));
        for secret in given.secrets.iter().filter(|s| !held.contains(s)) {
            if wanted_secrets.contains(secret) || given.hosts.is_empty() {
                lacks.push(format!("secret {secret}"));
            }
        }
        lacks
    }

    /// Whether what was granted reaches beyond the machine (the language model, an
    /// outbound host): what MCP calls an open world.
    pub fn is_open_world(&self) -> bool {
        ALL.iter().any(|capability| capability.open_world(self))
    }
}

/// A command-line flag that widens the policy for one kind of capability: the `evo`
/// binary's `--dir`, `--allow-llm`, `--allow-memory`, `--allow-exec`, `--allow-host`
/// and `--allow-secret`, for a front end to offer as they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GrantFlag {
    /// The long flag, without its dashes (`allow-host`).
    pub long: &'static str,
    /// What its value looks like (`ORIGIN`); `None` for a switch.
    pub value_name: Option<&'static str>,
    /// Whether it may be given more than once, each value adding to the last.
    pub repeats: bool,
    /// What it does, for help text.
    pub help: &'static str,
    /// What to do when a value is refused.
    pub hint: &'static str,
    /// The configuration key it widens (`grants.hosts`), for where a value came from.
    pub key: &'static str,
}

impl Policy {
    /// The flags that widen a policy, one per kind of capability.
    pub fn flags() -> impl Iterator<Item = &'static GrantFlag> {
        ALL.iter().map(|capability| capability.flag())
    }

    /// Widens this policy by one use of `flag` (one of [`Policy::flags`]): `value` is
    /// its value, `None` for a switch. The error says what is wrong with the value.
    pub fn widen(&mut self, flag: &GrantFlag, value: Option<&str>) -> Result<(), String> {
        let capability = ALL
            .iter()
            .find(|capability| capability.flag().long == flag.long)
            .ok_or_else(|| format!("--{} is not a grant flag", flag.long))?;
        capability.widen(self, value.unwrap_or_default())
    }
}

/// One kind of capability, end to end: what a skill asks for and gets (requested ∩
/// policy), the `[grants]` key and the flag an operator allows it with, what `evo config
/// show` prints of it, and what it tells MCP clients. The kinds are [`ALL`]; everything
/// that handles grants loops over them.
pub(crate) trait Capability: Sync {
    /// Its key in a `[grants]` table.
    fn key(&self) -> &'static str;

    /// The flag that widens it.
    fn flag(&self) -> &'static GrantFlag;

    /// Sets `policy` from its `[grants]` value (a relative path is relative to `base`,
    /// the configuration file's directory). The error is the message for the key.
    fn configure(
        &self,
        policy: &mut Policy,
        value: &toml::Value,
        base: &Path,
    ) -> Result<(), String>;

    /// Widens `policy` by one value of its flag (`""` for a switch). The error is what
    /// is wrong with the value.
    fn widen(&self, policy: &mut Policy, value: &str) -> Result<(), String>;

    /// The policy's value, as `evo config show` prints it.
    fn show(&self, policy: &Policy) -> serde_json::Value;

    /// Grants what `requested` asks for within `policy`; what it cannot grant goes to
    /// `grant.refused` with the way to allow it.
    fn grant(&self, requested: &RequestedCapabilities, policy: &Policy, grant: &mut Grant);

    /// Asks, in `asked`, for all that `named` allows of it: the request a component
    /// with nothing to ask with stands for (see [`Grant::named`]); what cannot be asked
    /// for goes to `refused` with the reason.
    fn stand_in(
        &self,
        named: &Policy,
        asked: &mut RequestedCapabilities,
        refused: &mut Vec<String>,
    );

    /// Adds to `policy` what `more` allows of it.
    fn add(&self, policy: &mut Policy, more: &Policy);

    /// Takes out of `policy` what `value` names of it (a value of its flag; for a
    /// directory its guest path is enough; `""` for a switch). Whether anything was
    /// taken; the error is what is wrong with the value.
    fn revoke(&self, policy: &mut Policy, value: &str) -> Result<bool, String>;

    /// Whether what `grant` holds of it reaches beyond the machine.
    fn open_world(&self, _grant: &Grant) -> bool {
        false
    }

    /// Sets `sandbox` up, before the skill starts, to hold it to what `grant` gives of
    /// this kind (a directory is opened in it). The kinds checked request by request,
    /// when the skill asks (the model, memory, an outbound request, a secret, a
    /// script), do nothing here: their checks are methods of [`Grant`] and [`Policy`]
    /// in their own files, which the sandboxes call. The error says what could not be
    /// set up.
    fn confine(&self, _grant: &Grant, _sandbox: &mut dyn Sandbox) -> Result<(), String> {
        Ok(())
    }
}

/// What a sandbox does to hold a skill to its grant before it starts: the Wasm
/// engine's WASI context implements it. A kind of capability that needs a new way of
/// confining adds it here, and each sandbox says how it does it.
pub(crate) trait Sandbox {
    /// Makes `dir`'s host directory reachable at its guest path, with its access and
    /// nothing outside it.
    fn preopen(&mut self, dir: &DirGrant) -> Result<(), String>;
}

/// Sets `sandbox` up for `grant`, kind by kind.
pub(crate) fn confine(grant: &Grant, sandbox: &mut dyn Sandbox) -> Result<(), String> {
    ALL.iter()
        .try_for_each(|capability| capability.confine(grant, sandbox))
}

/// What a skill is told when it asks for `what` without the grant: a denied request
/// (the guest gets it back as an error), with what it takes to be granted.
pub(crate) fn not_granted(skill: &str, what: &str) -> String {
    format!(
        "{skill} was not granted {what}; the skill must request it in its manifest and the operator must allow it"
    )
}

/// The reason a request stands for a grant named for a component that cannot ask.
const NAMED: &str = "granted to it by name";

/// Every kind of capability, in the order refusals are listed.
pub(crate) const ALL: [&dyn Capability; 6] = [
    &dir::Dirs,
    &llm::Llm,
    &memory::Memory,
    &exec::Exec,
    &hosts::Hosts,
    &secrets::Secrets,
];

/// The capability `[grants]` calls `key`.
pub(crate) fn by_key(key: &str) -> Option<&'static dyn Capability> {
    ALL.into_iter().find(|capability| capability.key() == key)
}

/// What a `[grants]` value is, for an error: "an integer", "a string".
pub(crate) fn found(value: &toml::Value) -> String {
    let kind = value.type_str();
    let article = if kind.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    };
    format!("found {article} {kind}")
}

/// A `[grants]` value that must be `true` or `false`.
fn switch(value: &toml::Value) -> Result<bool, String> {
    value
        .as_bool()
        .ok_or_else(|| format!("expected true or false, {}", found(value)))
}

/// A `[grants]` value that must be a list of strings.
fn strings(value: &toml::Value) -> Result<Vec<&str>, String> {
    value
        .as_array()
        .and_then(|items| items.iter().map(toml::Value::as_str).collect())
        .ok_or_else(|| format!("expected a list of strings, e.g. [\"…\"], {}", found(value)))
}

#[cfg(test)]
mod tests;
