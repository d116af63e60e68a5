//! Reading `evo.toml`: serde for the shape, the TOML parser's spans for the line of
//! every key, and range checks that name the key.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{Config, Isolation, MAX_POOL_SLOTS, Source};
use crate::capabilities::{DirPolicy, MemoryAccess, Policy};
use crate::error::{Error, Result};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    skill_dirs: Option<Vec<PathBuf>>,
    llm: Option<LlmFile>,
    grants: Option<GrantsFile>,
    engine: Option<EngineFile>,
    native: Option<NativeFile>,
    kernel: Option<KernelFile>,
    agent: Option<AgentFile>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct LlmFile {
    model: Option<String>,
    base_url: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct GrantFile {
    dirs: Option<Vec<String>>,
    llm: Option<bool>,
    memory: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct GrantsFile {
    #[serde(flatten)]
    default: GrantFile,
    #[serde(default)]
    skill: BTreeMap<String, GrantFile>,
}

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
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct NativeFile {
    concurrency: Option<usize>,
    isolation: Option<Isolation>,
    timeout_ms: Option<u64>,
    max_old_space_mb: Option<u32>,
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
struct AgentFile {
    max_llm_rounds: Option<u32>,
    shortlist: Option<usize>,
    intent_recognition: Option<bool>,
}

/// Where each dotted key sits in the text.
struct Spans<'a> {
    path: &'a Path,
    text: &'a str,
    keys: BTreeMap<String, Range<usize>>,
}

impl Spans<'_> {
    fn line_at(&self, offset: usize) -> usize {
        line_of(self.text, offset)
    }

    fn line(&self, key: &str) -> usize {
        self.keys
            .get(key)
            .map_or(1, |span| self.line_at(span.start))
    }

    fn source(&self, key: &str) -> Source {
        Source::File {
            path: self.path.to_owned(),
            line: self.line(key),
        }
    }

    fn invalid(&self, key: &str, message: impl Into<String>) -> Error {
        Error::Config {
            path: self.path.to_owned(),
            line: Some(self.line(key)),
            key: Some(key.to_owned()),
            message: message.into(),
        }
    }

    /// The innermost key whose entry holds `offset`.
    fn key_at(&self, offset: usize) -> Option<&str> {
        self.keys
            .iter()
            .filter(|(_, span)| span.contains(&offset))
            .max_by_key(|(key, _)| key.matches('.').count())
            .map(|(key, _)| key.as_str())
    }
}

fn spans<'a>(path: &'a Path, text: &'a str) -> Result<Spans<'a>> {
    let table = toml::de::DeTable::parse(text).map_err(|e| {
        let line = e.span().map(|s| line_of(text, s.start));
        Error::Config {
            path: path.to_owned(),
            line,
            key: None,
            message: e.message().trim().to_owned(),
        }
    })?;
    let mut keys = BTreeMap::new();
    walk("", table.get_ref(), &mut keys);
    Ok(Spans { path, text, keys })
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())]
        .bytes()
        .filter(|b| *b == b'\n')
        .count()
        + 1
}

fn walk(prefix: &str, table: &toml::de::DeTable<'_>, keys: &mut BTreeMap<String, Range<usize>>) {
    for (key, value) in table {
        let name = if prefix.is_empty() {
            key.get_ref().to_string()
        } else {
            format!("{prefix}.{}", key.get_ref())
        };
        // From the key to the end of its value: an error inside the value names it.
        let span = key.span().start..value.span().end.max(key.span().end);
        keys.insert(name.clone(), span);
        if let toml::de::DeValue::Table(inner) = value.get_ref() {
            walk(&name, inner, keys);
        }
    }
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
    }
    if let Some(grants) = file.grants {
        let noted = grant(&mut config.grants, "grants", &grants.default, base, &spans)?;
        note(config, &spans, &noted);
        for (name, entry) in &grants.skill {
            let key = format!("grants.skill.{name}");
            if !crate::skill::meta::is_valid_name(name) {
                return Err(spans.invalid(
                    &key,
                    format!(
                        "{name:?} is not a skill name (lower-case letters, digits, `_` and `-`)"
                    ),
                ));
            }
            let mut policy = Policy::default();
            let noted = grant(&mut policy, &key, entry, base, &spans)?;
            config.grants.skills.insert(name.clone(), policy);
            note(config, &spans, &noted);
        }
    }
    if let Some(engine) = file.engine {
        let e = &mut config.engine;
        let mut noted = Vec::new();
        if let Some(v) = engine.pool_slots {
            in_range(
                &spans,
                "engine.pool_slots",
                v.into(),
                1,
                MAX_POOL_SLOTS.into(),
            )?;
            e.pool_slots = v;
            noted.push("engine.pool_slots");
        }
        if let Some(v) = engine.pooling {
            e.pooling = v;
            noted.push("engine.pooling");
        }
        if let Some(v) = engine.compile_cache {
            e.compile_cache = v;
            noted.push("engine.compile_cache");
        }
        if let Some(v) = engine.max_memory_mib {
            in_range(&spans, "engine.max_memory_mib", v, 1, 1 << 20)?;
            e.max_memory_mib = v;
            noted.push("engine.max_memory_mib");
        }
        if let Some(v) = engine.max_output_bytes {
            in_range(&spans, "engine.max_output_bytes", v, 1, u64::MAX)?;
            e.max_output_bytes = v;
            noted.push("engine.max_output_bytes");
        }
        if let Some(v) = engine.max_timeout_ms {
            in_range(&spans, "engine.max_timeout_ms", v, 1, u64::MAX)?;
            e.max_timeout_ms = v;
            noted.push("engine.max_timeout_ms");
        }
        if let Some(v) = engine.max_fuel {
            in_range(&spans, "engine.max_fuel", v, 1, u64::MAX)?;
            e.max_fuel = Some(v);
            noted.push("engine.max_fuel");
        }
        note(config, &spans, &noted);
    }
    if let Some(native) = file.native {
        let n = &mut config.native;
        let mut noted = Vec::new();
        if let Some(v) = native.concurrency {
            in_range(&spans, "native.concurrency", v as u64, 1, 1_024)?;
            n.concurrency = v;
            noted.push("native.concurrency");
        }
        if let Some(v) = native.isolation {
            n.isolation = v;
            noted.push("native.isolation");
        }
        if let Some(v) = native.timeout_ms {
            in_range(&spans, "native.timeout_ms", v, 1, u64::MAX)?;
            n.timeout_ms = v;
            noted.push("native.timeout_ms");
        }
        if let Some(v) = native.max_old_space_mb {
            in_range(&spans, "native.max_old_space_mb", v.into(), 16, 1 << 20)?;
            n.max_old_space_mb = v;
            noted.push("native.max_old_space_mb");
        }
        if let Some(v) = native.node {
            n.node = v;
            noted.push("native.node");
        }
        note(config, &spans, &noted);
    }
    if let Some(kernel) = file.kernel {
        let k = &mut config.kernel;
        let mut noted = Vec::new();
        if let Some(v) = kernel.max_depth {
            in_range(&spans, "kernel.max_depth", v.into(), 1, 1_000)?;
            k.max_depth = v;
            noted.push("kernel.max_depth");
        }
        if let Some(v) = kernel.max_input_attempts {
            in_range(&spans, "kernel.max_input_attempts", v.into(), 1, 100)?;
            k.max_input_attempts = v;
            noted.push("kernel.max_input_attempts");
        }
        if let Some(v) = kernel.max_output_attempts {
            in_range(&spans, "kernel.max_output_attempts", v.into(), 1, 100)?;
            k.max_output_attempts = v;
            noted.push("kernel.max_output_attempts");
        }
        if let Some(v) = kernel.fallback {
            if !["throw", "return_raw", "return_partial"].contains(&v.as_str()) {
                return Err(spans.invalid(
                    "kernel.fallback",
                    format!("{v:?} is not a fallback; use throw, return_raw or return_partial"),
                ));
            }
            k.fallback = v;
            noted.push("kernel.fallback");
        }
        if let Some(v) = kernel.retry_backoff_ms {
            in_range(&spans, "kernel.retry_backoff_ms", v, 0, 60_000)?;
            k.retry_backoff_ms = v;
            noted.push("kernel.retry_backoff_ms");
        }
        note(config, &spans, &noted);
    }
    if let Some(agent) = file.agent {
        let a = &mut config.agent;
        let mut noted = Vec::new();
        if let Some(v) = agent.max_llm_rounds {
            in_range(&spans, "agent.max_llm_rounds", v.into(), 1, 1_000)?;
            a.max_llm_rounds = v;
            noted.push("agent.max_llm_rounds");
        }
        if let Some(v) = agent.shortlist {
            in_range(&spans, "agent.shortlist", v as u64, 1, 10_000)?;
            a.shortlist = v;
            noted.push("agent.shortlist");
        }
        if let Some(v) = agent.intent_recognition {
            a.intent_recognition = v;
            noted.push("agent.intent_recognition");
        }
        note(config, &spans, &noted);
    }
    Ok(())
}

/// Records that `keys` now come from the file.
fn note<K: AsRef<str>>(config: &mut Config, spans: &Spans<'_>, keys: &[K]) {
    for key in keys {
        config.set_source(key.as_ref(), spans.source(key.as_ref()));
    }
}

fn in_range(spans: &Spans<'_>, key: &str, value: u64, min: u64, max: u64) -> Result<()> {
    if (min..=max).contains(&value) {
        return Ok(());
    }
    Err(spans.invalid(
        key,
        if max == u64::MAX {
            format!("{value} is too small; the least is {min}")
        } else {
            format!("{value} is out of range; use {min} to {max}")
        },
    ))
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
    if let Some(dirs) = &entry.dirs {
        let key = format!("{prefix}.dirs");
        policy.dirs = dirs
            .iter()
            .map(|spec| {
                // A relative host directory is relative to the file, not to wherever
                // `evo` happens to run.
                let anchored = if Path::new(spec).is_absolute() {
                    spec.clone()
                } else {
                    base.join(spec).to_string_lossy().into_owned()
                };
                DirPolicy::parse(&anchored).map_err(|message| {
                    spans.invalid(
                        &key,
                        format!("{spec:?}: {message}; use HOST::GUEST or HOST::GUEST:ro with an existing host directory"),
                    )
                })
            })
            .collect::<Result<_>>()?;
        noted.push(key);
    }
    if let Some(llm) = entry.llm {
        policy.llm = llm;
        noted.push(format!("{prefix}.llm"));
    }
    if let Some(memory) = &entry.memory {
        let key = format!("{prefix}.memory");
        policy.memory = MemoryAccess::parse(memory).ok_or_else(|| {
            spans.invalid(
                &key,
                format!("{memory:?} is not a memory access; use none, read or read-write"),
            )
        })?;
        noted.push(key);
    }
    Ok(noted)
}
