//! Reading `evo.toml`: serde for the shape, the TOML parser's spans for the line of
//! every key. Each table is read into the settings its subsystem defines and checked
//! by it (`Section`); what is read here is what belongs to no one subsystem: the skill
//! directories, `[env]`, the grants and `[skill_config]`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::spans::{Spans, spans};
use super::{
    AgentSettings, Config, EngineSettings, KernelSettings, LlmSettings, NativeSettings, Preprocess,
    ServeSettings, ToolsSettings,
};
use crate::capabilities::{self, Policy};
use crate::error::{Error, Result};
use crate::oci::{RegistrySettings, TrustSettings};
use crate::settings::Section;
use crate::storage::StorageSettings;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    skill_dirs: Option<Vec<PathBuf>>,
    llm: Option<LlmSettings>,
    /// Values the operator gives every skill (`SkillContext::env`, `{{env.NAME}}`).
    env: Option<BTreeMap<String, String>>,
    preprocess: Option<Preprocess>,
    /// The default's keys, and `skill.NAME` tables of their own.
    grants: Option<GrantFile>,
    skill_config: Option<BTreeMap<String, BTreeMap<String, toml::Value>>>,
    engine: Option<EngineSettings>,
    native: Option<NativeSettings>,
    kernel: Option<KernelSettings>,
    agent: Option<AgentSettings>,
    serve: Option<ServeSettings>,
    tools: Option<ToolsSettings>,
    storage: Option<StorageSettings>,
    registries: Option<RegistrySettings>,
    trust: Option<TrustSettings>,
}

/// A `[grants]` table (the default or a skill's): each key belongs to one kind of
/// capability, which reads its value.
type GrantFile = toml::Table;

/// Takes the table `read` from the file into `field`, once its subsystem has checked
/// it; every key of it the file has is noted as coming from the file.
fn take<S: Section>(
    field: &mut S,
    read: Option<S>,
    base: &Path,
    spans: &Spans<'_>,
    noted: &mut Vec<String>,
) -> Result<()> {
    let Some(mut read) = read else {
        return Ok(());
    };
    read.check(base)
        .map_err(|invalid| spans.invalid(&invalid.key, invalid.message))?;
    *field = read;
    noted.extend(spans.keys_under(S::TABLE));
    Ok(())
}

/// Applies the file at `path` holding `text` to `config`.
pub(super) fn apply(config: &mut Config, path: &Path, text: &str) -> Result<()> {
    let spans = spans(path, text)?;
    let file: File = toml::from_str(text).map_err(|e| {
        let offset = e.span().map(|s| s.start);
        let key = offset.and_then(|o| spans.key_at(o)).map(str::to_owned);
        Error::Config {
            path: path.to_owned(),
            line: offset.map(|o| spans.line_at(o)),
            key,
            message: e.message().trim().to_owned(),
        }
    })?;
    let base = path.parent().unwrap_or(Path::new("."));

    if let Some(dirs) = file.skill_dirs {
        config.skill_dirs = dirs.into_iter().map(|d| base.join(d)).collect();
        note(config, &spans, &["skill_dirs"]);
    }
    if let Some(env) = file.env {
        if let Some(reserved) = env
            .keys()
            .find(|k| crate::skill::kernel::HOST_ENV_KEYS.contains(&k.as_str()))
        {
            return Err(spans.invalid(
                &format!("env.{reserved}"),
                format!(
                    "{reserved:?} is a value the host sets ({}); name yours otherwise",
                    crate::skill::kernel::HOST_ENV_KEYS.join(", ")
                ),
            ));
        }
        let keys: Vec<String> = env.keys().map(|k| format!("env.{k}")).collect();
        config.env = env;
        note(config, &spans, &keys);
    }
    if let Some(mut grants) = file.grants {
        let skills = match grants.remove("skill") {
            None => toml::Table::new(),
            Some(toml::Value::Table(skills)) => skills,
            Some(other) => {
                return Err(spans.invalid(
                    "grants.skill",
                    format!(
                        "expected [grants.skill.NAME] tables, {}",
                        capabilities::found(&other)
                    ),
                ));
            }
        };
        let noted = grant(&mut config.grants, "grants", &grants, base, &spans)?;
        note(config, &spans, &noted);
        for (name, entry) in skills {
            let key = format!("grants.skill.{name}");
            if !crate::skill::manifest::is_valid_name(&name) {
                return Err(spans.invalid(
                    &key,
                    format!(
                        "{name:?} is not a skill name (lower-case letters, digits, `_` and `-`)"
                    ),
                ));
            }
            let toml::Value::Table(entry) = entry else {
                return Err(spans.invalid(
                    &key,
                    format!(
                        "expected a table of grants, {}",
                        capabilities::found(&entry)
                    ),
                ));
            };
            let mut policy = Policy::default();
            let noted = grant(&mut policy, &key, &entry, base, &spans)?;
            config.grants.skills.insert(name, policy);
            note(config, &spans, &noted);
        }
    }
    for (name, values) in file.skill_config.unwrap_or_default() {
        let key = format!("skill_config.{name}");
        if !crate::skill::manifest::is_valid_name(&name) {
            return Err(spans.invalid(
                &key,
                format!("{name:?} is not a skill name (lower-case letters, digits, `_` and `-`)"),
            ));
        }
        let mut kept = BTreeMap::new();
        for (k, value) in values {
            let text = match value {
                toml::Value::String(s) => s,
                toml::Value::Integer(n) => n.to_string(),
                toml::Value::Float(x) => x.to_string(),
                toml::Value::Boolean(b) => b.to_string(),
                other => {
                    return Err(spans.invalid(
                        &format!("{key}.{k}"),
                        format!(
                            "a {} is not a configuration value; use a string, number or boolean (skills read them as strings)",
                            other.type_str()
                        ),
                    ));
                }
            };
            kept.insert(k, text);
        }
        config.grants.config.insert(name, kept);
        note(config, &spans, &[key]);
    }
    let mut noted = Vec::new();
    take(&mut config.llm, file.llm, base, &spans, &mut noted)?;
    take(
        &mut config.preprocess,
        file.preprocess,
        base,
        &spans,
        &mut noted,
    )?;
    take(&mut config.engine, file.engine, base, &spans, &mut noted)?;
    take(&mut config.native, file.native, base, &spans, &mut noted)?;
    take(&mut config.kernel, file.kernel, base, &spans, &mut noted)?;
    take(&mut config.agent, file.agent, base, &spans, &mut noted)?;
    take(&mut config.serve, file.serve, base, &spans, &mut noted)?;
    take(&mut config.tools, file.tools, base, &spans, &mut noted)?;
    take(&mut config.storage, file.storage, base, &spans, &mut noted)?;
    take(
        &mut config.registries,
        file.registries,
        base,
        &spans,
        &mut noted,
    )?;
    take(&mut config.trust, file.trust, base, &spans, &mut noted)?;
    note(config, &spans, &noted);
    Ok(())
}

/// Records that `keys` now come from the file.
fn note<K: AsRef<str>>(config: &mut Config, spans: &Spans<'_>, keys: &[K]) {
    for key in keys {
        config.set_source(key.as_ref(), spans.source(key.as_ref()));
    }
}

/// Applies one `[grants]` table (the default or a skill's) to `policy`; returns the keys
/// it set.
fn grant(
    policy: &mut Policy,
    prefix: &str,
    entry: &GrantFile,
    base: &Path,
    spans: &Spans<'_>,
) -> Result<Vec<String>> {
    let mut noted = Vec::new();
    for (name, value) in entry {
        let key = format!("{prefix}.{name}");
        let capability = capabilities::by_key(name).ok_or_else(|| {
            let known: Vec<&str> = capabilities::ALL.iter().map(|c| c.key()).collect();
            spans.invalid(
                &key,
                format!(
                    "unknown field `{name}`; a grant is one of {}{}",
                    known.join(", "),
                    if prefix == "grants" {
                        ", or a [grants.skill.NAME] table"
                    } else {
                        ""
                    }
                ),
            )
        })?;
        capability
            .configure(policy, value, base)
            .map_err(|message| spans.invalid(&key, message))?;
        noted.push(key);
    }
    Ok(noted)
}
