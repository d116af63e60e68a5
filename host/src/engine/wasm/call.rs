//! One call of a Wasm skill: a fresh store and instance, run under the call's limits,
//! with every way a guest can misbehave turned into a specific [`Error`].

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;

use super::bindings::evo::skill::types;
use super::guest::run_guest;
use super::limits::{Limits, MAX_ERROR_BYTES, RETURNED_ENTRY_BYTES, cut};
use super::{LoadSource, WasmEngine};
use crate::capabilities::{Grant, Policy};
use crate::error::{Error, FailureKind, Result};
use crate::skill::kernel::SkillContext;
use crate::skill::lanes::Streak;
use crate::skill::manifest::SkillMeta;

use crate::skill::exchange::{MemoryWriteOutcome, granted_writes};
pub use crate::skill::kernel::executor::{MemoryWrite, StepTrace};

/// What a successful call returns.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SkillOutcome {
    /// The output JSON.
    pub output: Value,
    /// Memory the skill suggests keeping.
    pub memory_writes: Vec<MemoryWrite>,
    /// Suggestions refused because the skill may not write to memory.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub memory: Vec<MemoryWriteOutcome>,
    /// Steps the skill reported.
    pub intermediate_steps: Vec<StepTrace>,
    /// Wall-clock time of the call.
    #[serde(serialize_with = "as_millis")]
    pub duration: Duration,
    /// What the guest wrote to stdout (capped).
    pub stdout: String,
    /// What the guest wrote to stderr (capped).
    pub stderr: String,
}

fn as_millis<S: serde::Serializer>(
    duration: &Duration,
    serializer: S,
) -> std::result::Result<S::Ok, S::Error> {
    serializer.serialize_f64(duration.as_secs_f64() * 1000.0)
}

/// A loaded Wasm skill, ready to call. Cheap to clone; calls may run concurrently.
#[derive(Clone)]
pub struct WasmSkill {
    inner: Arc<SkillInner>,
}

struct SkillInner {
    engine: WasmEngine,
    meta: Arc<SkillMeta>,
    info: super::ComponentInfo,
    digest: String,
    limits: Limits,
    grant: Arc<Grant>,
    calls: Arc<[String]>,
    name: Arc<str>,
    /// The compiled component, linked: at load, or on the first call.
    prepared: tokio::sync::OnceCell<super::compile::Prepared>,
    /// The file it is loaded from on its first call, when not at load.
    file: Option<std::path::PathBuf>,
    /// Whether its last calls ran long (they start in the long lane).
    streak: Streak,
    /// Its next instance, made ahead (see [`super::parked`]).
    parked: Arc<super::parked::Spot<super::contract::SkillInstance>>,
    /// Described from the engine's record of its file, whose manifest's schemas
    /// compiled when the record was made.
    remembered: bool,
}

impl std::fmt::Debug for WasmSkill {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WasmSkill")
            .field("name", &self.inner.meta.name)
            .field("digest", &self.inner.digest)
            .field("limits", &self.inner.limits)
            .finish_non_exhaustive()
    }
}

/// Where a skill's compiled code is.
pub(super) enum Origin {
    /// Compiled (or loaded from the cache) at load.
    Ready(super::compile::Prepared),
    /// In this file, read at load: loaded on the first call.
    File(std::path::PathBuf),
    /// In this file, unchanged since it was loaded before and described from the
    /// engine's record of it: loaded on the first call.
    Record(std::path::PathBuf),
}

impl WasmSkill {
    pub(super) fn new(
        engine: WasmEngine,
        meta: SkillMeta,
        info: super::ComponentInfo,
        digest: String,
        limits: Limits,
        policy: &Policy,
        origin: Origin,
    ) -> Self {
        let grant = grant_for(&meta, policy, true);
        let remembered = matches!(origin, Origin::Record(_));
        let (prepared, file) = match origin {
            Origin::Ready(prepared) => (tokio::sync::OnceCell::new_with(Some(prepared)), None),
            Origin::File(path) | Origin::Record(path) => (tokio::sync::OnceCell::new(), Some(path)),
        };
        let inner = SkillInner {
            name: meta.name.as_str().into(),
            calls: meta.calls.clone().into(),
            grant: Arc::new(grant),
            engine,
            meta: Arc::new(meta),
            info,
            digest,
            limits,
            prepared,
            file,
            streak: Streak::default(),
            parked: Arc::default(),
            remembered,
        };
        Self {
            inner: Arc::new(inner),
        }
    }

    /// Whether it was described from the engine's record of its file rather than from
    /// its bytes: its schemas compiled when that record was made.
    pub(super) fn remembered(&self) -> bool {
        self.inner.remembered
    }

    /// The skill served under `name` instead of the name its manifest gives (installed
    /// `--as`), granted what `policy` gives that name. Only for a skill just loaded:
    /// one already shared is an error.
    pub(crate) fn installed_as(self, name: &str, policy: &Policy) -> Result<Self> {
        let mut inner = Arc::try_unwrap(self.inner).map_err(|_| {
            Error::Engine(format!(
                "{name}: a skill in use cannot be renamed; load it again"
            ))
        })?;
        Arc::make_mut(&mut inner.meta).name = name.to_owned();
        inner.name = name.into();
        inner.grant = Arc::new(grant_for(&inner.meta, policy, true));
        Ok(Self {
            inner: Arc::new(inner),
        })
    }

    /// The manifest, as the component describes itself (or as installed, renamed).
    pub fn meta(&self) -> &SkillMeta {
        &self.inner.meta
    }

    /// The manifest, shared (registering the skill does not copy it).
    pub(crate) fn shared_meta(&self) -> Arc<SkillMeta> {
        Arc::clone(&self.inner.meta)
    }

    /// The limits each call runs under.
    pub fn limits(&self) -> &Limits {
        &self.inner.limits
    }

    /// The capabilities granted (and refused).
    pub fn grant(&self) -> &Grant {
        &self.inner.grant
    }

    /// SHA-256 of the component bytes.
    pub fn digest(&self) -> &str {
        &self.inner.digest
    }

    /// The API version and SDK stamp read from the component.
    pub fn info(&self) -> &super::ComponentInfo {
        &self.inner.info
    }

    /// Whether the component was compiled or loaded from the cache, or is still to be
    /// loaded on its first call.
    pub fn load_source(&self) -> LoadSource {
        self.inner
            .prepared
            .get()
            .map_or(LoadSource::Deferred, |(_, source)| *source)
    }

    /// Loads the compiled component now if it was deferred to the first call (a server
    /// can warm a skill it expects to be called), and says where it came from.
    pub async fn prepare(&self) -> Result<LoadSource> {
        Ok(self.pre().await?.1)
    }

    async fn pre(&self) -> Result<&super::compile::Prepared> {
        let skill = &self.inner;
        skill
            .prepared
            .get_or_try_init(|| async {
                let Some(path) = &skill.file else {
                    return Err(Error::Engine(format!(
                        "{}: the skill has no compiled code and no file to load it from",
                        skill.name
                    )));
                };
                let fuel = skill.limits.fuel.is_some();
                let code = super::compile::Code::File(path.clone());
                skill
                    .engine
                    .prepare(&skill.name, &skill.digest, code, fuel)
                    .await
            })
            .await
    }

    /// Runs the skill on `input` (JSON text) in a fresh instance: one made for the
    /// call, or made ahead after the previous call and never run before.
    pub async fn call(&self, input: &str, ctx: &SkillContext) -> Result<SkillOutcome> {
        let skill = &self.inner;
        serde_json::from_str::<serde::de::IgnoredAny>(input).map_err(|e| Error::InvalidInput {
            skill: skill.meta.name.clone(),
            reason: format!("not valid JSON: {e}"),
        })?;
        let started = Instant::now();
        let (pre, _) = self.pre().await?;
        let input = input.to_owned();
        let (result, guest) = run_guest(
            &skill.engine,
            pre,
            &skill.name,
            &skill.limits,
            &skill.grant,
            &skill.calls,
            ctx,
            &skill.streak,
            Some(&skill.parked),
            move |plugin, store| Box::pin(async move { plugin.execute(store, input).await }),
        )
        .await?;
        let output = match result.map_err(|e| guest.classify(e))? {
            Ok(output) => output,
            Err(error) => {
                if let Some(exceeded) = guest.stdio_exceeded() {
                    return Err(exceeded);
                }
                let (kind, message) = failure(error);
                return Err(Error::Skill {
                    skill: skill.meta.name.clone(),
                    kind,
                    message: guest.scrub.text("error", message),
                });
            }
        };
        // Memory writes and steps leave the guest too: one cap on everything it returns,
        // or a guest could smuggle unbounded data out beside a small output.
        guest.check_output(returned_bytes(&output))?;
        let output = guest.scrub_output(output);
        let value = serde_json::from_str(&output.output).map_err(|e| Error::InvalidOutput {
            skill: skill.meta.name.clone(),
            reason: e.to_string(),
        })?;
        let suggested = output
            .memory_writes
            .into_iter()
            .map(|w| MemoryWrite {
                text: w.text,
                category: w.category,
            })
            .collect();
        let allowed = skill.grant.check_suggested_writes(&skill.meta.name);
        let (memory_writes, memory) = granted_writes(&skill.meta.name, allowed, suggested);
        Ok(SkillOutcome {
            output: value,
            memory_writes,
            memory,
            intermediate_steps: output.intermediate_steps.into_iter().map(step).collect(),
            duration: started.elapsed(),
            stdout: guest.stdout_text(),
            stderr: guest.stderr_text(),
        })
    }
}

/// What `meta`'s skill gets of `policy`: what it asks for within the policy that applies
/// to it when it `asks` (it has a manifest to ask with), else what is named for it, and
/// its `wasi:config` values. What is refused is logged.
pub(super) fn grant_for(meta: &SkillMeta, policy: &Policy, asks: bool) -> Grant {
    let name = &meta.name;
    let mut grant = match (asks, policy.named_for(name)) {
        (true, _) => Grant::new(&meta.capabilities, policy.for_skill(name)),
        (false, Some(named)) => Grant::named(&named),
        (false, None) => {
            let mut grant = Grant::default();
            if policy.allows_anything() {
                grant.refused.push(format!(
                    "the [grants] every skill shares do not reach {name}: a component without a manifest asks for nothing, so it gets only what is granted to it by name ([grants.skill.{name}] in evo.toml, `evo skill grant {name}`, or the flags of `evo skill run` on it)"
                ));
            }
            grant
        }
    };
    grant.config = policy.config.get(&meta.name).cloned().unwrap_or_default();
    for refused in &grant.refused {
        tracing::info!(skill = %meta.name, "not granted: {refused}");
    }
    grant
}

fn failure(error: types::SkillError) -> (FailureKind, String) {
    let (kind, message) = match error {
        types::SkillError::InvalidInput(m) => (FailureKind::InvalidInput, m),
        types::SkillError::NotFound(m) => (FailureKind::NotFound, m),
        types::SkillError::Denied(m) => (FailureKind::Denied, m),
        types::SkillError::Timeout(m) => (FailureKind::Timeout, m),
        types::SkillError::Failed(m) => (FailureKind::Failed, m),
    };
    (kind, cut(message, MAX_ERROR_BYTES))
}

/// Bytes of text a call returns: its output, memory writes and steps.
fn returned_bytes(output: &types::SkillOutput) -> usize {
    let writes: usize = output
        .memory_writes
        .iter()
        .map(|w| RETURNED_ENTRY_BYTES + w.text.len() + w.category.as_ref().map_or(0, String::len))
        .sum();
    let steps: usize = output
        .intermediate_steps
        .iter()
        .map(|s| {
            RETURNED_ENTRY_BYTES
                + s.step_id.len()
                + s.step_name.len()
                + s.input.len()
                + s.output.len()
                + s.error.as_ref().map_or(0, String::len)
        })
        .sum();
    output.output.len() + writes + steps
}

fn step(trace: types::StepTrace) -> StepTrace {
    let json = |text: String| serde_json::from_str(&text).unwrap_or(Value::String(text));
    StepTrace {
        step_id: trace.step_id,
        step_name: trace.step_name,
        input: json(trace.input),
        output: json(trace.output),
        duration: trace.duration_ms,
        error: trace.error,
    }
}
