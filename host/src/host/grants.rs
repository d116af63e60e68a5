//! What each skill is granted, and what was given to one by name that did not reach it.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::Host;
use crate::capabilities::{Grant, Policy, RequestedCapabilities};
use crate::engine::wasm::{PlainExecutor, SEPARATOR, WasmExecutor, component_name};
use crate::error::{Error, Result};
use crate::skill::kernel::table::RegisteredSkill;
use crate::skill::observe::store::{Record, Status};

/// How a skill takes grants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Asking {
    /// It asks in its manifest and gets what it asks for within the policy.
    Asks,
    /// A plain component whose manifest names no capabilities: it gets what is granted
    /// to it by name, under its component's name.
    ByName,
}

/// One value granted or revoked: a `[grants]` key and a value as its flag takes it
/// (`dirs` `/srv/docs::/data:ro`, `hosts` `https://api.example.com`, `secrets`
/// `API_KEY`, `memory` `read`, `llm` with no value). To revoke a directory its guest
/// path is enough.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrantValue {
    /// `dirs`, `hosts`, `secrets`, `memory` or `llm`.
    pub kind: String,
    /// The value; empty for `llm` (and for `memory` when revoking).
    #[serde(default)]
    pub value: String,
}

/// Whether a change adds to what a skill is granted or takes away from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// Add the values to the skill's entry.
    Grant,
    /// Take the values out of the skill's entry.
    Revoke,
}

/// Who changes what a host offers, for the security log, and within which bounds.
#[derive(Debug, Clone)]
pub struct Operator {
    /// Who it is, as the call history's caller: `cli`, `http`, `mcp:CLIENT`.
    pub who: String,
    /// Host directories a directory it grants must be below; `None`: any (the
    /// operator at the node's shell).
    pub dirs: Option<Vec<PathBuf>>,
}

impl Operator {
    /// The operator at this node's shell: any directory may be granted.
    pub fn local(who: impl Into<String>) -> Self {
        Self {
            who: who.into(),
            dirs: None,
        }
    }
}

/// What a skill is granted, and how: what management shows of it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SkillGrants {
    /// The skill.
    pub skill: String,
    /// The name its grants are kept under in evo.toml (`[grants.skill.NAME]`): the
    /// skill's, or its component's for a function of a plain component.
    pub kept_under: String,
    /// Whether it asks (and gets what it asks for within its policy) or takes what is
    /// named for it.
    pub asking: Asking,
    /// What its manifest asks for.
    pub asked: RequestedCapabilities,
    /// Its own entry, as evo.toml writes it (`null` without one: the policy every skill
    /// shares applies).
    pub entry: Option<Value>,
    /// What it holds now, with what was asked for and not granted.
    pub granted: Grant,
}

impl Host {
    /// What skill `name` (or an alias) is granted, how, and its own entry.
    pub fn skill_grants(&self, name: &str) -> Result<SkillGrants> {
        let not_found = || Error::SkillNotFound {
            name: name.to_owned(),
        };
        let skill = self.skill_or_component(name).ok_or_else(not_found)?;
        let (asking, kept_under) = self.asking(name).ok_or_else(not_found)?;
        let policy = self.grants();
        Ok(SkillGrants {
            skill: if kept_under == name {
                kept_under.clone()
            } else {
                skill.meta.name.clone()
            },
            entry: policy.skills.get(&kept_under).map(Policy::shown),
            kept_under,
            asking,
            asked: skill.meta.capabilities.clone(),
            granted: self.granted(&skill),
        })
    }

    /// Grants `values` to skill `name` ([`Change::Grant`]) or takes them away
    /// ([`Change::Revoke`]) in its own entry, `[grants.skill.NAME]` of evo.toml (the one
    /// read at start, else the data directory's), and reloads it: its next call has
    /// them. A skill that asks and had no entry of its own starts from the policy
    /// every skill shares, so a grant takes nothing away. Every value is checked before
    /// anything is written; a refusal changes nothing. The change is a row of the
    /// security log (`skill_grant` or `skill_revoke`, by `by.who`).
    pub async fn change_grants(
        &self,
        name: &str,
        change: Change,
        values: &[GrantValue],
        by: &Operator,
    ) -> Result<SkillGrants> {
        let _one_at_a_time = self.inner.managing.lock().await;
        let result = self.change_grants_now(name, change, values, by).await;
        let tool = match change {
            Change::Grant => "skill_grant",
            Change::Revoke => "skill_revoke",
        };
        let arguments = json!({ "skill": name, "values": values });
        self.audit(tool, &by.who, arguments, result.as_ref().map(drop));
        result
    }

    /// Checks that `change` of `values` could be made to skill `name` by `by`, without
    /// making it: what a front end asks before it asks its user to confirm.
    pub fn check_grants(
        &self,
        name: &str,
        change: Change,
        values: &[GrantValue],
        by: &Operator,
    ) -> Result<()> {
        self.planned(name, change, values, by).map(drop)
    }

    /// Skill `name`'s own entry after `change`, every value checked; nothing written.
    fn planned(
        &self,
        name: &str,
        change: Change,
        values: &[GrantValue],
        by: &Operator,
    ) -> Result<Planned> {
        let (asking, kept_under) = self.asking(name).ok_or_else(|| Error::SkillNotFound {
            name: name.to_owned(),
        })?;
        if values.is_empty() {
            return Err(Error::Grant {
                code: "GRANT_INVALID",
                message: "nothing to change: name at least one value".into(),
            });
        }
        let policy = self.grants();
        let mut entry = policy
            .skills
            .get(&kept_under)
            .cloned()
            .unwrap_or_else(|| match asking {
                Asking::Asks => shared_part(&policy),
                Asking::ByName => Policy::default(),
            });
        for value in values {
            let capability = crate::capabilities::by_key(&value.kind)
                .filter(|c| c.key() != "exec")
                .ok_or_else(|| Error::Grant {
                    code: "GRANT_INVALID",
                    message: format!(
                        "{:?} is not a kind of grant: use dirs, hosts, secrets, memory or llm",
                        value.kind
                    ),
                })?;
            let invalid = |why: String| Error::Grant {
                code: "GRANT_INVALID",
                message: format!("{} {:?}: {why}", value.kind, value.value),
            };
            match change {
                Change::Grant => {
                    let before = entry.dirs.len();
                    capability
                        .widen(&mut entry, &value.value)
                        .map_err(invalid)?;
                    for dir in &entry.dirs[before..] {
                        within(&dir.host, by)?;
                    }
                }
                Change::Revoke => {
                    if !capability
                        .revoke(&mut entry, &value.value)
                        .map_err(invalid)?
                    {
                        return Err(Error::Grant {
                            code: "NOT_GRANTED",
                            message: format!(
                                "{kept_under} holds no {} {:?} of its own to revoke",
                                value.kind, value.value
                            ),
                        });
                    }
                }
            }
        }
        Ok(Planned {
            asking,
            kept_under,
            entry,
            policy,
        })
    }

    async fn change_grants_now(
        &self,
        name: &str,
        change: Change,
        values: &[GrantValue],
        by: &Operator,
    ) -> Result<SkillGrants> {
        let Planned {
            asking,
            kept_under,
            entry,
            policy,
        } = self.planned(name, change, values, by)?;
        // A component that asks for nothing and is named for nothing needs no entry; a
        // skill that asks keeps an empty one, or the shared policy would apply again.
        let keep = asking == Asking::Asks || entry.allows_anything();
        let entry = keep.then_some(entry);
        // This node's file first: a change it cannot keep is made nowhere. Then the
        // other nodes; if they cannot hear it, the file is put back.
        let file = self.config_path();
        crate::config::set_skill_grants(&file, &kept_under, entry.as_ref())?;
        #[cfg(feature = "postgres")]
        if let Some(shared) = &self.inner.shared_catalogue
            && let Err(e) =
                shared.set_grants(&kept_under, entry.as_ref().map(Policy::shown).as_ref())
        {
            let before = policy.skills.get(&kept_under);
            if let Err(undo) = crate::config::set_skill_grants(&file, &kept_under, before) {
                tracing::warn!(
                    "{}: [grants.skill.{kept_under}] could not be put back: {undo}",
                    file.display()
                );
            }
            return Err(e);
        }
        self.apply_entry(&kept_under, entry, &policy).await;
        tracing::info!(target: "evo::security", skill = %kept_under, by = %by.who, ?change, "grants changed");
        self.skill_grants(name)
    }

    /// The install record of the installed skill `name` (its digest, what it asked for,
    /// where it came from); `None` for one not installed.
    pub fn installed_record(&self, name: &str) -> Option<crate::packages::InstallRecord> {
        crate::packages::InstallRecord::read(
            &crate::paths::skills_dir(&self.inner.data_dir).join(name),
        )
    }

    /// Makes `entry` skill `kept_under`'s own (none: removes it) in the policy now
    /// (`policy` with it), and loads the skills it applies to again.
    pub(super) async fn apply_entry(
        &self,
        kept_under: &str,
        entry: Option<Policy>,
        policy: &Policy,
    ) {
        let mut now = policy.clone();
        match entry {
            Some(entry) => now.skills.insert(kept_under.to_owned(), entry),
            None => now.skills.remove(kept_under),
        };
        self.inner.loader.set_policy(now);
        if let Some(skill) = self.skill_or_component(kept_under) {
            self.reload_skill(&skill.meta.name).await;
        }
    }

    /// The configuration file a change is written to: the one read at start, else
    /// `evo.toml` in the data directory.
    pub fn config_path(&self) -> PathBuf {
        self.config()
            .file
            .clone()
            .unwrap_or_else(|| self.inner.data_dir.join(crate::config::CONFIG_FILE))
    }

    /// Loads skill `name` again with the policy now, from its directory, and tells
    /// whoever follows the catalogue.
    async fn reload_skill(&self, name: &str) {
        if let Some(dir) = self.dir_of(name) {
            self.reload_dir(&dir).await;
        }
        self.changed();
    }

    /// Writes a change to what the host offers (or its refusal) to the security log:
    /// the `evo::security` target and a row of the call history under `tool`, by `who`.
    pub(crate) fn audit(
        &self,
        tool: &str,
        who: &str,
        arguments: Value,
        result: Result<(), &Error>,
    ) {
        let (status, error, hint) = match result {
            Ok(()) => (Status::Success, None, None),
            Err(e) => {
                tracing::warn!(target: "evo::security", %tool, by = %who, "refused: [{}] {e}", e.code());
                (
                    Status::Error,
                    Some(format!("[{}] {e}", e.code())),
                    e.hint().map(str::to_owned),
                )
            }
        };
        self.inner.kernel.record(Record {
            id: 0,
            at_ms: crate::unix_millis() as i64,
            caller: who.to_owned(),
            task_id: String::new(),
            tool: tool.to_owned(),
            arguments: crate::skill::observe::history::redact(&arguments),
            status,
            duration_ms: 0.0,
            error,
            hint,
            node: String::new(),
        });
        if let Err(e) = self.flush_history() {
            tracing::warn!("the change could not be written to the call history: {e}");
        }
    }

    /// Skill `name`, or a function of the plain component `name`.
    fn skill_or_component(&self, name: &str) -> Option<std::sync::Arc<RegisteredSkill>> {
        self.skill(name).or_else(|| {
            self.skills().into_iter().find(|skill| {
                skill
                    .executor
                    .as_any()
                    .and_then(|a| a.downcast_ref::<PlainExecutor>())
                    .is_some_and(|p| p.component().meta().name == name)
            })
        })
    }

    /// What skill `name` (or an alias) holds: the grant its executor was built with,
    /// or, for a skill that grants at each call (an instruction, a composite), what its
    /// manifest asks for within the policy. `None` for an unknown skill.
    pub fn grant_of(&self, name: &str) -> Option<Grant> {
        self.skill_or_component(name)
            .map(|skill| self.granted(&skill))
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
        let skill = self.skill_or_component(name)?;
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
        target
            .split_once(SEPARATOR)
            .map_or(target, |(component, _)| component)
            .to_owned()
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
            Asking::ByName
                if given.allows_anything() && !self.grants().given.contains_key(&kept_under) =>
            {
                format!(
                    "it was given to another name; grants for {name} are kept under {kept_under}"
                )
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

/// A change to one skill's entry, checked and not yet made.
struct Planned {
    asking: Asking,
    kept_under: String,
    entry: Policy,
    /// The policy it was planned on.
    policy: std::sync::Arc<Policy>,
}

/// The policy every skill shares, without the entries of named skills.
fn shared_part(policy: &Policy) -> Policy {
    Policy {
        skills: Default::default(),
        given: Default::default(),
        config: Default::default(),
        ..policy.clone()
    }
}

/// Refuses `dir` unless it is below a directory `by` may grant from.
pub(super) fn within(dir: &Path, by: &Operator) -> Result<()> {
    let Some(roots) = &by.dirs else {
        return Ok(());
    };
    if roots.iter().any(|root| dir.starts_with(root)) {
        return Ok(());
    }
    let allowed = if roots.is_empty() {
        "none is: [serve] grant_dirs names no directory".to_owned()
    } else {
        format!(
            "the directories that may be are below {}",
            roots
                .iter()
                .map(|r| r.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    Err(Error::Grant {
        code: "GRANT_OUTSIDE",
        message: format!("{} may not be granted this way: {allowed}", dir.display()),
    })
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
