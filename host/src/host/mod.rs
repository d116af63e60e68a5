//! [`Host`]: the one composition root. Every front end (the `evo` CLI, the MCP and HTTP
//! servers, tests, benchmarks, applications embedding Evo) builds a `Host` and goes
//! through it; nothing wires the registry, the kernel and the engines by hand.
//!
//! A host owns one data directory: installed skills, the compile cache, memory,
//! statistics. It is cheap to clone and safe to share between tasks.
//!
//! ```
//! use evo_host::Host;
//! use serde_json::json;
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let data = tempfile::tempdir().unwrap();
//! let host = Host::builder().data_dir(data.path()).build().await.unwrap();
//! let out = host.call("calculate", json!({ "expression": "sqrt(144) + 10" })).await.unwrap();
//! assert_eq!(out, json!({ "result": 22 }));
//! # });
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use serde::Serialize;
use serde_json::Value;

use crate::agent::{Agent, AgentOptions};
use crate::capabilities::Policy;
#[cfg(feature = "native")]
use crate::config::Isolation;
use crate::config::{Config, Source};
use crate::db::Db;
use crate::engine::loader::Loader;
#[cfg(feature = "native")]
use crate::engine::native::{DEFAULT_OUTPUT_CAP, NativeConfig, NativeSandbox};
use crate::engine::wasm::{CompileNotice, EngineConfig, LimitPolicy, WasmEngine};
use crate::error::{Error, Result};
use crate::llm::{LlmProvider, ProviderLlm};
use crate::memory::{MemoryConfig, MemoryManager};
use crate::packages::SkillManager;
use crate::packages::index::SkillIndex;
use crate::retrieval::embed::Embedder;
use crate::skill::kernel::executor::SkillOutput;
use crate::skill::kernel::table::{RegisteredSkill, SkillTable};
use crate::skill::kernel::{Kernel, KernelConfig, RunOptions, SkillContext};
use crate::skill::observe::events::EventSink;
use crate::tools::Tool;

mod builder;
mod catalogue;
mod follow;
mod grants;
mod install;
mod oci;
mod publish;
mod search;
#[cfg(feature = "postgres")]
mod shared;
mod tools;

pub use builder::HostBuilder;
pub use follow::Updated;
pub use grants::{Asking, Change, GrantValue, Operator, SkillGrants};
pub use oci::{DownloadProgress, Preview, RegistryInstall, RegistryInstalled};
pub use publish::Published;
pub use search::{LISTING_TTL, RegistrySearch};

use catalogue::Loaded;

/// A skill directory (or a remote's skills) that could not be loaded; the host starts
/// without it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LoadError {
    /// The skill's directory, or the remotes file for a remote's skills.
    pub path: PathBuf,
    /// The remote whose skills these are, when they are a remote's: only that remote is
    /// left out, not the others of its file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remote: Option<String>,
    /// The error's stable code.
    pub code: &'static str,
    /// What went wrong.
    pub error: String,
}

#[derive(Debug)]
struct Inner {
    kernel: Arc<Kernel>,
    memory: Arc<MemoryManager>,
    loader: Loader,
    llm: Option<Arc<dyn LlmProvider>>,
    llm_error: Option<String>,
    events: Option<EventSink>,
    load_errors: Vec<LoadError>,
    /// Remotes whose skills could not be listed at start-up, with why.
    unreachable_remotes: Vec<(String, String)>,
    /// Every skill directory loaded, with what it looked like and the skill it held.
    catalogue: Mutex<BTreeMap<PathBuf, Loaded>>,
    /// Where shared state is kept.
    storage: crate::storage::Storage,
    /// Statistics and the call history, in `storage`.
    calls: Arc<dyn crate::skill::observe::store::CallStore>,
    /// The catalogue the nodes share, when `storage` is shared.
    #[cfg(feature = "postgres")]
    shared_catalogue: Option<crate::packages::shared::SharedCatalogue>,
    /// Held through a statistics flush, so that a second flush (say, at shutdown)
    /// returns only once the counts the first one took are written.
    flushing: Mutex<()>,
    /// Held through a change to what the host offers (a grant, a revocation), so that
    /// two at once do not write evo.toml over each other.
    managing: tokio::sync::Mutex<()>,
    /// Bumped whenever the skills change.
    changes: tokio::sync::watch::Sender<u64>,
    /// The profile of runs that name none (`[tools] profile`), resolved at build.
    default_profile: crate::skill::permission::Profile,
    /// Whether the memory's embedder follows the store's (it was not given in code):
    /// see [`MemoryManager::follow_reindex`].
    follows_reindex: bool,
    data_dir: PathBuf,
    config: Config,
}

/// An Evo host: skills, the kernel that calls them, memory, and the model. See the
/// [crate docs](crate).
#[derive(Debug, Clone)]
pub struct Host {
    inner: Arc<Inner>,
}

impl Host {
    /// A builder with every default.
    pub fn builder() -> HostBuilder {
        HostBuilder::default()
    }

    /// Calls skill `name` (or an alias) with `input` and returns its output.
    pub async fn call(&self, name: &str, input: Value) -> Result<Value> {
        self.call_full(name, input).await.map(|out| out.output)
    }

    /// Calls skill `name` with `input` and returns everything it produced (memory
    /// writes, intermediate steps).
    pub async fn call_full(&self, name: &str, input: Value) -> Result<SkillOutput> {
        self.context(self.inner.events.clone())
            .call_full(name, input)
            .await
    }

    /// The root context of a new run whose events go to `events`: for callers that
    /// make several calls in one run (sharing scratch and the input-attempt count).
    pub fn context(&self, events: Option<EventSink>) -> SkillContext {
        let profile = Some(self.inner.default_profile.clone());
        self.inner.kernel.context(RunOptions {
            events,
            profile,
            ..RunOptions::default()
        })
    }

    /// The registered name for `skill`: a `.wasm` file or a skill directory is loaded and
    /// registered first; anything else is looked up by name (or alias).
    pub async fn resolve(&self, skill: &str) -> Result<String> {
        let path = Path::new(skill);
        // `FILE.wasm#FUNCTION` names one function of a plain component.
        let (file, function) = match skill.rsplit_once('#') {
            Some((file, function)) if !path.exists() && Path::new(file).exists() => {
                (Path::new(file), Some(function))
            }
            _ => (path, None),
        };
        let skills = if file.is_dir() {
            self.inner.loader.load_package(file).await?.skills
        } else if file.is_file() {
            self.inner
                .loader
                .load_any_wasm_file(file)
                .await?
                .registered()?
        } else if let Some(found) = self.registry().get(skill) {
            return Ok(found.meta.name.clone());
        } else if let Some((remote, message)) = skill.split_once('/').and_then(|(remote, _)| {
            self.inner
                .unreachable_remotes
                .iter()
                .find(|(name, _)| name == remote)
        }) {
            // A build without remotes lists none: asking for one's skill is asking for
            // the feature, not for a node that may come back.
            if cfg!(not(feature = "remotes")) {
                return Err(Error::FeatureNotBuilt {
                    feature: "remotes",
                    what: format!("{skill}, a skill of remote {remote},"),
                });
            }
            return Err(Error::Remote {
                remote: remote.clone(),
                code: "REMOTE_UNAVAILABLE",
                message: format!("{skill} is not listed: {message}"),
                transient: true,
            });
        } else {
            return Err(Error::SkillNotFound {
                name: skill.to_owned(),
            });
        };
        // Registered before one is picked: a caller told to choose can look them up.
        let names = wit_names(&skills);
        for skill in skills {
            self.registry().register(skill);
        }
        pick(&names, file, function)
    }

    /// Every skill, by name.
    pub fn skills(&self) -> Vec<Arc<RegisteredSkill>> {
        self.registry().list()
    }

    /// Skill `name` (or an alias), with its manifest and schemas.
    pub fn skill(&self, name: &str) -> Option<Arc<RegisteredSkill>> {
        self.registry().get(name)
    }

    /// An agent over this host's skills, memory and model, with the configuration's
    /// `[agent]` settings and `options_fn` applied on top.
    pub fn agent(&self, options_fn: impl FnOnce(&mut AgentOptions)) -> Result<Agent> {
        let Some(provider) = self.inner.llm.clone() else {
            return Err(match &self.inner.llm_error {
                Some(error) => Error::Llm {
                    message: format!("the configured model cannot be used: {error}"),
                    transient: false,
                },
                None => Error::LlmNotConfigured,
            });
        };
        let a = &self.inner.config.agent;
        let mut options = AgentOptions {
            max_llm_rounds: a.max_llm_rounds,
            shortlist: a.shortlist,
            intent_recognition: a.intent_recognition,
            decisive_margin: a.decisive_routing.then_some(a.decisive_margin as f32),
            ..AgentOptions::default()
        };
        options_fn(&mut options);
        if options.profile.is_none() {
            options.profile = Some(self.inner.default_profile.clone());
        }
        let index = self.skill_index()?;
        Agent::on(self.inner.kernel.clone(), provider)?
            .with_memory(self.inner.memory.clone())
            .with_options(options)
            .with_skill_index(index)
    }

    /// The skill manager of the data directory: installs are checked with this host's
    /// loader and kept in the skill index.
    pub fn manager(&self) -> Result<SkillManager> {
        let index = self.skill_index()?;
        Ok(SkillManager::new(&self.inner.data_dir)
            .with_index(index)
            .with_loader(self.inner.loader.clone())
            .with_reserved(self.builtin_names()))
    }

    /// The names of the built-in tools: no skill may be installed under one.
    pub(crate) fn builtin_names(&self) -> Vec<String> {
        self.skills()
            .iter()
            .filter(|s| s.kind() == crate::skill::kernel::executor::ExecutorKind::Builtin)
            .map(|s| s.meta.name.clone())
            .collect()
    }

    /// The skill index of the data directory, ranking with memory's embedder.
    fn skill_index(&self) -> Result<SkillIndex> {
        Ok(SkillIndex::new(
            Db::open(&self.inner.data_dir)?,
            self.inner.memory.embedder(),
        ))
    }

    /// Where shared state is kept: SQLite in the data directory, or PostgreSQL.
    pub fn storage(&self) -> &crate::storage::Storage {
        &self.inner.storage
    }

    /// Every skill's stored call figures, by name (all processes, or all nodes; what
    /// `evo skill stats` shows).
    pub fn skill_stats(
        &self,
    ) -> Result<BTreeMap<String, crate::skill::observe::stats::SkillStats>> {
        self.inner.calls.stats()
    }

    internal_pub! {
        /// The stored call statistics and history (all processes, or all nodes).
        fn calls(&self) -> &Arc<dyn crate::skill::observe::store::CallStore> {
            &self.inner.calls
        }
    }

    /// Long-term memory.
    pub fn memory(&self) -> &Arc<MemoryManager> {
        &self.inner.memory
    }

    /// Adds the calls made so far to the statistics in the data directory.
    pub fn flush_stats(&self) -> Result<()> {
        let _flushing = self
            .inner
            .flushing
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let stats = self.inner.kernel.stats().flush(self.inner.calls.as_ref());
        self.flush_history()?;
        stats
    }

    /// The figures for monitoring: calls by skill, status and error code, their
    /// durations, the sandbox's refusals (what `evo serve` gives Prometheus at
    /// `/metrics`). With the `metrics` feature.
    #[cfg(feature = "metrics")]
    pub fn metrics(&self) -> &Arc<crate::skill::observe::metrics::Metrics> {
        self.inner.kernel.metrics()
    }

    /// The Wasm engine (its allocator, compile cache and pool), unless Wasm is off.
    pub fn wasm_engine(&self) -> Option<&WasmEngine> {
        self.inner.loader.wasm_engine()
    }

    /// The protections the native sandbox applies on this machine (probed once by
    /// confining a no-op program); empty without a launcher, or in a build without the
    /// `native` feature (which runs no scripts).
    pub async fn sandbox_protections(&self) -> Vec<String> {
        #[cfg(feature = "native")]
        return self.inner.loader.native().isolation().await;
        #[cfg(not(feature = "native"))]
        Vec::new()
    }

    /// The secrets skills may be granted (`evo secret set`), as the kernel holds them.
    pub fn secrets(&self) -> Arc<crate::secrets::Secrets> {
        self.inner.kernel.secrets()
    }

    /// Forgets the call statistics not yet written: a test run's calls are not usage.
    pub fn discard_unflushed_stats(&self) {
        self.inner.kernel.stats().discard_unflushed();
    }

    internal_pub! {
        /// The kernel (registry, configuration, statistics).
        fn kernel(&self) -> &Arc<Kernel> {
            &self.inner.kernel
        }
    }

    internal_pub! {
        /// The skill registry.
        fn registry(&self) -> &Arc<SkillTable> {
            self.inner.kernel.registry()
        }
    }

    /// The loader (Wasm engine, native sandbox).
    #[cfg(feature = "internals")]
    #[doc(hidden)]
    pub fn loader(&self) -> &Loader {
        &self.inner.loader
    }

    /// The effective configuration.
    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// The grant policy now: the configuration's, with the grants and revocations
    /// made on this host since ([`Host::change_grants`], and those another node made).
    pub fn grants(&self) -> Arc<Policy> {
        self.inner.loader.policy()
    }

    /// The data directory.
    pub fn data_dir(&self) -> &Path {
        &self.inner.data_dir
    }

    /// The language model, if one is configured and usable.
    pub fn llm(&self) -> Option<&Arc<dyn LlmProvider>> {
        self.inner.llm.as_ref()
    }

    /// Why the configured model cannot be used, if one is configured and it cannot.
    pub fn llm_error(&self) -> Option<&str> {
        self.inner.llm_error.as_deref()
    }

    /// Skill directories that could not be loaded.
    pub fn load_errors(&self) -> &[LoadError] {
        &self.inner.load_errors
    }

    /// The skills that `skill` calls (its `calls` and its pipeline's steps) and that are
    /// not loaded: its calls to them fail until they are installed.
    pub fn missing_callees(&self, skill: &str) -> Vec<String> {
        self.registry().missing_callees(skill)
    }

    /// Every loaded skill's calls of skills that are not loaded, as warnings (`NAME calls
    /// CALLEE, which is not loaded: …`): a composite whose callee may arrive later loads,
    /// and is told of now rather than at its first run.
    pub fn callee_warnings(&self) -> Vec<String> {
        let mut warnings = self.registry().callee_warnings();
        for name in self.config().preprocess.named() {
            if !self.registry().has(name) {
                warnings.push(format!(
                    "[preprocess] names {name}, which is not loaded: what it preprocesses fails (PREPROCESSOR_FAILED) until a skill named {name} is installed"
                ));
            }
        }
        warnings
    }
}

/// The skill of `file` that `function` names, among `skills` (each skill's name and, for
/// a plain component's function, its WIT name): a skill name, or a WIT name (`greet`,
/// `kinds/echo-u8`); with none, its only skill.
fn pick(
    skills: &[(String, Option<String>)],
    file: &Path,
    function: Option<&str>,
) -> Result<String> {
    let names = || {
        skills
            .iter()
            .map(|(name, _)| name.clone())
            .collect::<Vec<_>>()
    };
    let Some(function) = function else {
        return match skills {
            [(only, _)] => Ok(only.clone()),
            _ => Err(Error::ChooseFunction {
                file: file.display().to_string(),
                skills: names(),
            }),
        };
    };
    skills
        .iter()
        .find(|(name, wit)| name == function || wit.as_deref() == Some(function))
        .map(|(name, _)| name.clone())
        .ok_or_else(|| Error::SkillNotFound {
            name: format!(
                "{function} in {} (it holds {})",
                file.display(),
                names().join(", ")
            ),
        })
}

/// Each skill's name and, for a plain component's function, its WIT name.
fn wit_names(skills: &[RegisteredSkill]) -> Vec<(String, Option<String>)> {
    skills
        .iter()
        .map(|skill| {
            let wit = skill
                .executor
                .as_any()
                .and_then(|any| any.downcast_ref::<crate::engine::wasm::PlainExecutor>())
                .map(|plain| plain.function().to_owned());
            (skill.meta.name.clone(), wit)
        })
        .collect()
}
