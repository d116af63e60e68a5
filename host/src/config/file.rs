//! Reading `evo.toml`: serde for the shape, the TOML parser's spans for the line of
//! every key, and range checks that name the key.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::spans::{Spans, in_range, spans};
use super::{Config, Isolation, MAX_POOL_SLOTS};
use crate::capabilities::{self, Policy};
use crate::error::{Error, Result};
use crate::skill::kernel::Fallback;
use crate::skill::kernel::confirm::ConfirmPolicy;
use crate::skill::permission::{Locale, Permission, Profile};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    skill_dirs: Option<Vec<PathBuf>>,
    llm: Option<LlmFile>,
    /// Values the operator gives every skill (`SkillContext::env`, `{{env.NAME}}`).
    env: Option<BTreeMap<String, String>>,
    preprocess: Option<PreprocessFile>,
    /// The default's keys, and `skill.NAME` tables of their own.
    grants: Option<GrantFile>,
    skill_config: Option<BTreeMap<String, BTreeMap<String, toml::Value>>>,
    engine: Option<EngineFile>,
    native: Option<NativeFile>,
    kernel: Option<KernelFile>,
    agent: Option<AgentFile>,
    serve: Option<ServeFile>,
    tools: Option<ToolsFile>,
    storage: Option<StorageFile>,
    registries: Option<RegistriesFile>,
    trust: Option<TrustFile>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RegistriesFile {
    insecure: Option<Vec<String>>,
    #[serde(default)]
    credentials: BTreeMap<String, CredentialFile>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct CredentialFile {
    username: String,
    secret: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct TrustFile {
    keys: Option<Vec<PathBuf>>,
    require_signature: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct StorageFile {
    url: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolsFile {
    locale: Option<String>,
    confirm: Option<ConfirmPolicy>,
    profile: Option<String>,
    history_cap: Option<u64>,
    bash_allow: Option<Vec<String>>,
    bash_max_timeout_ms: Option<u64>,
    allowed_hosts: Option<Vec<String>>,
    toolchains: Option<Vec<String>>,
    lsp_idle_secs: Option<u64>,
    #[serde(default)]
    profiles: BTreeMap<String, ProfileFile>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileFile {
    level: String,
    tools: Option<Vec<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct LlmFile {
    model: Option<String>,
    base_url: Option<String>,
    models: Option<Vec<String>>,
}

/// A `[grants]` table (the default or a skill's): each key belongs to one kind of
/// capability, which reads its value.
type GrantFile = toml::Table;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct EngineFile {
    pool_slots: Option<u32>,
    pooling: Option<bool>,
    compile_cache: Option<bool>,
    max_memory_mib: Option<u64>,
    max_output_bytes: Option<u64>,
    max_timeout_ms: Option<u64>,
    max_fuel: Option<u64>,
    max_instances: Option<u32>,
    max_component_mb: Option<u64>,
    compile_deadline_ms: Option<u64>,
    symlinks: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct NativeFile {
    concurrency: Option<usize>,
    isolation: Option<Isolation>,
    timeout_ms: Option<u64>,
    max_old_space_mb: Option<u32>,
    max_tasks: Option<u64>,
    max_cpu_percent: Option<u64>,
    node: Option<PathBuf>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct KernelFile {
    max_depth: Option<u32>,
    max_input_attempts: Option<u32>,
    max_output_attempts: Option<u32>,
    fallback: Option<String>,
    retry_backoff_ms: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct PreprocessFile {
    message: Option<Vec<String>>,
    input: Option<BTreeMap<String, Vec<String>>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentFile {
    max_llm_rounds: Option<u32>,
    shortlist: Option<usize>,
    intent_recognition: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ServeFile {
    tools: Option<Vec<String>>,
    max_calls: Option<usize>,
    max_queue: Option<usize>,
    max_message_kb: Option<usize>,
    manage: Option<bool>,
    grant_dirs: Option<Vec<String>>,
}

/// Sets a field from the file when the key is there (checking the range, if given) and
/// notes the key.
macro_rules! take {
    ($noted:ident, $value:expr => $field:expr, $key:literal) => {
        if let Some(value) = $value {
            $field = value;
            $noted.push($key);
        }
    };
    ($noted:ident, $spans:ident, $value:expr => $field:expr, $key:literal, $min:expr, $max:expr) => {
        if let Some(value) = $value {
            in_range(&$spans, $key, value as u64, $min, $max)?;
            $field = value;
            $noted.push($key);
        }
    };
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
    if let Some(llm) = file.llm {
        if let Some(model) = llm.model {
            if !model
                .split_once(':')
                .is_some_and(|(p, m)| !p.is_empty() && !m.is_empty())
            {
                return Err(spans.invalid(
                    "llm.model",
                    format!("{model:?} is not provider:model, e.g. \"ollama:llama3.2\""),
                ));
            }
            config.llm.model = Some(model);
            note(config, &spans, &["llm.model"]);
        }
        if let Some(url) = llm.base_url {
            config.llm.base_url = Some(url);
            note(config, &spans, &["llm.base_url"]);
        }
        if let Some(models) = llm.models {
            if let Some(empty) = models.iter().find(|m| m.trim().is_empty()) {
                return Err(spans.invalid(
                    "llm.models",
                    format!("{empty:?} is not a model name, e.g. \"gpt-4o-mini\""),
                ));
            }
            config.llm.models = models;
            note(config, &spans, &["llm.models"]);
        }
    }
    if let Some(preprocess) = file.preprocess {
        let named = preprocess
            .message
            .iter()
            .flatten()
            .map(|name| ("preprocess.message".to_owned(), name))
            .chain(
                preprocess
                    .input
                    .iter()
                    .flatten()
                    .flat_map(|(target, names)| {
                        names
                            .iter()
                            .map(move |name| (format!("preprocess.input.{target}"), name))
                    }),
            );
        for (key, name) in named {
            if !crate::skill::manifest::is_valid_name(name) {
                return Err(spans.invalid(
                    &key,
                    format!("{name:?} is not a skill name; list the skills that preprocess, e.g. [\"redact-pii\"]"),
                ));
            }
        }
        if let Some(message) = preprocess.message {
            config.preprocess.message = message;
            note(config, &spans, &["preprocess.message"]);
        }
        if let Some(input) = preprocess.input {
            let keys: Vec<String> = input
                .keys()
                .map(|k| format!("preprocess.input.{k}"))
                .collect();
            config.preprocess.input = input;
            note(config, &spans, &keys);
        }
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
    let mut noted: Vec<&str> = Vec::new();
    if let Some(f) = file.engine {
        let e = &mut config.engine;
        take!(noted, spans, f.pool_slots => e.pool_slots, "engine.pool_slots", 1, MAX_POOL_SLOTS.into());
        take!(noted, f.pooling => e.pooling, "engine.pooling");
        take!(noted, f.compile_cache => e.compile_cache, "engine.compile_cache");
        take!(noted, f.symlinks => e.symlinks, "engine.symlinks");
        take!(noted, spans, f.max_memory_mib => e.max_memory_mib, "engine.max_memory_mib", 1, 1 << 20);
        take!(noted, spans, f.max_output_bytes => e.max_output_bytes, "engine.max_output_bytes", 1, u64::MAX);
        take!(noted, spans, f.max_timeout_ms => e.max_timeout_ms, "engine.max_timeout_ms", 1, u64::MAX);
        take!(noted, spans, f.max_instances => e.max_instances, "engine.max_instances", 1, 10_000);
        take!(noted, spans, f.max_component_mb => e.max_component_mb, "engine.max_component_mb", 1, 4_096);
        take!(noted, spans, f.compile_deadline_ms => e.compile_deadline_ms, "engine.compile_deadline_ms", 1, u64::MAX);
        if let Some(fuel) = f.max_fuel {
            in_range(&spans, "engine.max_fuel", fuel, 1, u64::MAX)?;
            e.max_fuel = Some(fuel);
            noted.push("engine.max_fuel");
        }
    }
    if let Some(f) = file.native {
        let n = &mut config.native;
        take!(noted, spans, f.concurrency => n.concurrency, "native.concurrency", 1, 1_024);
        take!(noted, f.isolation => n.isolation, "native.isolation");
        take!(noted, spans, f.timeout_ms => n.timeout_ms, "native.timeout_ms", 1, u64::MAX);
        take!(noted, spans, f.max_old_space_mb => n.max_old_space_mb, "native.max_old_space_mb", 16, 1 << 20);
        take!(noted, spans, f.max_tasks => n.max_tasks, "native.max_tasks", 16, 1 << 22);
        take!(noted, spans, f.max_cpu_percent => n.max_cpu_percent, "native.max_cpu_percent", 0, 102_400);
        take!(noted, f.node => n.node, "native.node");
    }
    if let Some(f) = file.kernel {
        let k = &mut config.kernel;
        take!(noted, spans, f.max_depth => k.max_depth, "kernel.max_depth", 1, 1_000);
        take!(noted, spans, f.max_input_attempts => k.max_input_attempts, "kernel.max_input_attempts", 1, 100);
        take!(noted, spans, f.max_output_attempts => k.max_output_attempts, "kernel.max_output_attempts", 1, 100);
        if let Some(fallback) = f.fallback {
            k.fallback = match fallback.as_str() {
                "throw" => Fallback::Throw,
                "return_raw" => Fallback::ReturnRaw,
                "return_partial" => Fallback::ReturnPartial,
                _ => {
                    return Err(spans.invalid(
                        "kernel.fallback",
                        format!(
                            "{fallback:?} is not a fallback; use throw, return_raw or return_partial"
                        ),
                    ));
                }
            };
            noted.push("kernel.fallback");
        }
        take!(noted, spans, f.retry_backoff_ms => k.retry_backoff_ms, "kernel.retry_backoff_ms", 0, 60_000);
    }
    if let Some(f) = file.agent {
        let a = &mut config.agent;
        take!(noted, spans, f.max_llm_rounds => a.max_llm_rounds, "agent.max_llm_rounds", 1, 1_000);
        take!(noted, spans, f.shortlist => a.shortlist, "agent.shortlist", 1, 10_000);
        take!(noted, f.intent_recognition => a.intent_recognition, "agent.intent_recognition");
    }
    if let Some(f) = file.serve {
        let s = &mut config.serve;
        take!(noted, f.tools => s.tools, "serve.tools");
        take!(noted, spans, f.max_calls => s.max_calls, "serve.max_calls", 1, 4_096);
        take!(noted, spans, f.max_queue => s.max_queue, "serve.max_queue", 0, 1 << 20);
        take!(noted, spans, f.max_message_kb => s.max_message_kb, "serve.max_message_kb", 1, 1 << 20);
        take!(noted, f.manage => s.manage, "serve.manage");
        if let Some(dirs) = f.grant_dirs {
            let base = path.parent().unwrap_or(Path::new("."));
            s.grant_dirs = dirs
                .iter()
                .map(|dir| {
                    grant_root(base, dir).map_err(|why| spans.invalid("serve.grant_dirs", why))
                })
                .collect::<Result<_>>()?;
            noted.push("serve.grant_dirs");
        }
    }
    if let Some(f) = file.registries {
        if let Some(hosts) = f.insecure {
            for host in &hosts {
                crate::oci::settings::check_registry_host(host)
                    .map_err(|why| spans.invalid("registries.insecure", why))?;
            }
            config.registries.insecure = hosts;
            noted.push("registries.insecure");
        }
        for (host, entry) in f.credentials {
            let key = format!("registries.credentials.{host}");
            crate::oci::settings::check_registry_host(&host)
                .map_err(|why| spans.invalid(&key, why))?;
            crate::secrets::check_name(&entry.secret).map_err(|e| {
                spans.invalid(
                    &key,
                    format!("secret: {e} (the `evo secret` holding the password or token)"),
                )
            })?;
            config.registries.credentials.insert(
                host,
                crate::oci::CredentialSettings {
                    username: entry.username,
                    secret: entry.secret,
                },
            );
            note(config, &spans, &[key]);
        }
    }
    if let Some(f) = file.trust {
        if let Some(keys) = f.keys {
            config.trust.keys = keys.into_iter().map(|k| base.join(k)).collect();
            noted.push("trust.keys");
        }
        take!(noted, f.require_signature => config.trust.require_signature, "trust.require_signature");
    }
    if let Some(url) = file.storage.and_then(|s| s.url) {
        crate::storage::check_url(&url).map_err(|message| spans.invalid("storage.url", message))?;
        config.storage.url = Some(url);
        noted.push("storage.url");
    }
    let mut noted_profiles = Vec::new();
    if let Some(f) = file.tools {
        let t = &mut config.tools;
        if let Some(locale) = f.locale {
            t.locale = Locale::parse(&locale).ok_or_else(|| {
                spans.invalid(
                    "tools.locale",
                    format!("{locale:?} is not a locale; use en, zh or auto"),
                )
            })?;
            noted.push("tools.locale");
        }
        take!(noted, f.confirm => t.confirm, "tools.confirm");
        take!(noted, spans, f.history_cap => t.history_cap, "tools.history_cap", 1, 100_000_000);
        take!(noted, f.bash_allow => t.bash_allow, "tools.bash_allow");
        take!(noted, spans, f.bash_max_timeout_ms => t.bash_max_timeout_ms, "tools.bash_max_timeout_ms", 1, 86_400_000);
        take!(noted, f.allowed_hosts => t.allowed_hosts, "tools.allowed_hosts");
        if let Some(dirs) = f.toolchains {
            t.toolchains = dirs
                .iter()
                .map(|dir| toolchain_dir(dir).map_err(|why| spans.invalid("tools.toolchains", why)))
                .collect::<Result<_>>()?;
            noted.push("tools.toolchains");
        }
        take!(noted, spans, f.lsp_idle_secs => t.lsp_idle_secs, "tools.lsp_idle_secs", 1, 86_400);
        for (name, p) in f.profiles {
            let key = format!("tools.profiles.{name}");
            let level = Permission::parse(&p.level).ok_or_else(|| {
                spans.invalid(
                    &format!("{key}.level"),
                    format!("{:?} is not a permission level; use read_only, read_write, execute or admin", p.level),
                )
            })?;
            t.profiles.insert(
                name.clone(),
                Profile {
                    name,
                    level,
                    tools: p.tools,
                },
            );
            noted_profiles.push(key);
        }
        if let Some(profile) = f.profile {
            if t.profile_named(&profile).is_none() {
                return Err(spans.invalid(
                    "tools.profile",
                    format!("{profile:?} is not a profile; use explore, edit, full, admin or one under [tools.profiles]"),
                ));
            }
            t.profile = profile;
            noted.push("tools.profile");
        }
    }
    note(config, &spans, &noted);
    note(config, &spans, &noted_profiles);
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

/// A `[serve] grant_dirs` entry: a directory that exists (relative to the file's),
/// canonical, so that what is below it is decided on real paths.
fn grant_root(base: &Path, entry: &str) -> std::result::Result<PathBuf, String> {
    let path = base.join(entry);
    let canonical = path
        .canonicalize()
        .map_err(|e| format!("{}: {e}; name a directory that exists", path.display()))?;
    if !canonical.is_dir() {
        return Err(format!("{} is not a directory", path.display()));
    }
    Ok(canonical)
}

/// A `[tools] toolchains` entry: `~/…` is the home directory; the result must be an
/// absolute directory that exists, and not a system root (binding `/` or a whole home
/// read-only would show the sandbox everything the entry was meant to keep out).
fn toolchain_dir(entry: &str) -> std::result::Result<PathBuf, String> {
    let path = match entry.strip_prefix("~/") {
        Some(rest) => match std::env::var_os("HOME").filter(|h| !h.is_empty()) {
            Some(home) => PathBuf::from(home).join(rest),
            None => return Err(format!("{entry:?} starts with ~/ and HOME is not set")),
        },
        None => PathBuf::from(entry),
    };
    if !path.is_absolute() {
        return Err(format!(
            "{entry:?} is not an absolute path; name the toolchain's directory, e.g. \"~/.cargo\""
        ));
    }
    if !path.is_dir() {
        return Err(format!("{} is not a directory", path.display()));
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    if path.parent().is_none() || home.as_deref() == Some(path.as_path()) {
        return Err(format!(
            "{} is too wide: name the toolchain's own directories (e.g. \"~/.cargo\", \"~/.rustup\"), not the whole tree",
            path.display()
        ));
    }
    Ok(path)
}
