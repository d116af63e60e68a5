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
use crate::config::{Config, Isolation, Source};
use crate::db::Db;
use crate::engine::loader::Loader;
use crate::engine::native::{DEFAULT_OUTPUT_CAP, NativeConfig, NativeSandbox};
use crate::engine::wasm::{CompileNotice, EngineConfig, LimitPolicy, WasmEngine, WasmExecutor};
use crate::error::{Error, Result};
use crate::llm::{LlmProvider, ProviderLlm};
use crate::memory::embed::Embedder;
use crate::memory::{MemoryConfig, MemoryManager};
use crate::packages::index::SkillIndex;
use crate::packages::{InstallOptions, Outcome, SkillManager};
use crate::skill::events::EventSink;
use crate::skill::executor::SkillOutput;
use crate::skill::kernel::{Fallback, Kernel, KernelConfig, RunOptions, SkillContext};
use crate::skill::registry::{RegisteredSkill, SkillRegistry};
use crate::tools::Tool;

mod catalogue;
mod tools;

use catalogue::{Loaded, stamp};

/// A skill directory that could not be loaded; the host starts without it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LoadError {
    /// The skill's directory.
    pub path: PathBuf,
    /// The error's stable code.
    pub code: &'static str,
    /// What went wrong.
    pub error: String,
}

/// Builds a [`Host`]. Everything is optional:
///
/// - the data directory is `EVO_HOME`, else the platform data directory;
/// - the configuration is read from `evo.toml` there (and the environment);
/// - the embedder is the one the environment configures, else the built-in offline one;
/// - the model is the one the configuration names, else none (skills asking for it get a
///   clear error);
/// - native skills run without a confining launcher unless one is given;
/// - the built-in file and shell tools work in the current directory.
#[derive(Debug, Default)]
pub struct HostBuilder {
    data_dir: Option<PathBuf>,
    project_dir: Option<PathBuf>,
    config: Option<Config>,
    config_file: Option<PathBuf>,
    embedder: Option<Arc<dyn Embedder>>,
    llm: Option<Arc<dyn LlmProvider>>,
    tools: Vec<Arc<dyn Tool>>,
    events: Option<EventSink>,
    launcher: Option<PathBuf>,
    installed: Option<bool>,
    on_compile: CompileNotice,
}

impl HostBuilder {
    /// The data directory (installed skills, compile cache, memory, statistics).
    pub fn data_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.data_dir = Some(dir.into());
        self
    }

    /// Uses `config` as it is instead of reading `evo.toml` and the environment.
    pub fn config(mut self, config: Config) -> Self {
        self.config = Some(config);
        self
    }

    /// Reads the configuration from `file` instead of `evo.toml` in the data directory.
    pub fn config_file(mut self, file: impl Into<PathBuf>) -> Self {
        self.config_file = Some(file.into());
        self
    }

    /// The embedder for memory and the skill index.
    pub fn embedder(mut self, embedder: Arc<dyn Embedder>) -> Self {
        self.embedder = Some(embedder);
        self
    }

    /// The language model, for the agent and for skills granted `llm`; overrides the
    /// configuration's.
    pub fn llm(mut self, provider: Arc<dyn LlmProvider>) -> Self {
        self.llm = Some(provider);
        self
    }

    /// Adds an in-process tool, callable like any skill.
    pub fn tool(mut self, tool: impl Tool) -> Self {
        self.tools.push(Arc::new(tool));
        self
    }

    /// Where the events of [`Host::call`] go (skill calls, results, what skills emit).
    pub fn events(mut self, sink: EventSink) -> Self {
        self.events = Some(sink);
        self
    }

    /// A program that confines itself and then runs a native skill's Node (the `evo`
    /// binary's hidden `__native-exec`); without one native skills run with process
    /// limits only, and `isolation = "required"` refuses to run them.
    pub fn native_launcher(mut self, program: impl Into<PathBuf>) -> Self {
        self.launcher = Some(program.into());
        self
    }

    /// Told when a Wasm component starts compiling (a compile-cache miss), with its
    /// label and size: a large one takes seconds, and a person waiting should know why.
    pub fn on_compile(mut self, notice: impl Fn(&str, usize) + Send + Sync + 'static) -> Self {
        self.on_compile = CompileNotice::new(notice);
        self
    }

    /// The project the built-in tools (`read`, `write`, `edit`, `glob`, `grep`,
    /// `search`, `bash`, `git`) work in and may not leave (default: the current
    /// directory).
    pub fn project_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.project_dir = Some(dir.into());
        self
    }

    /// Whether to load the skills installed in the data directory (default: yes).
    pub fn installed_skills(mut self, load: bool) -> Self {
        self.installed = Some(load);
        self
    }

    /// Opens the data directory, loads every skill, and wires the kernel.
    pub async fn build(self) -> Result<Host> {
        let data_dir = crate::paths::data_dir(self.data_dir.as_deref());
        let config = match self.config {
            Some(config) => config,
            None => Config::load(&data_dir, self.config_file.as_deref())?,
        };
        // A profile set in code (not read from evo.toml, which checks it) that names
        // nothing must fail here, not widen to the default at the first call.
        let default_profile = config
            .tools
            .profile_named(&config.tools.profile)
            .ok_or_else(|| Error::Config {
                path: config.file.clone().unwrap_or_else(|| data_dir.join(crate::config::CONFIG_FILE)),
                line: None,
                key: Some("tools.profile".into()),
                message: format!(
                    "no profile named {:?}; use explore, edit, full, admin or one under [tools.profiles]",
                    config.tools.profile
                ),
            })?;
        let loader = loader(&config, &data_dir, self.launcher, self.on_compile)?;
        let registry = Arc::new(SkillRegistry::new());
        let project = self.project_dir.unwrap_or_else(|| PathBuf::from("."));
        crate::tools::register_builtins(&registry, project.clone())?;
        let t = &config.tools;
        crate::tools::register_programs(
            &registry,
            project,
            loader.native(),
            crate::tools::ProgramTools {
                allow: t.bash_allow.clone(),
                allowed_hosts: t.allowed_hosts.clone(),
                max_timeout: std::time::Duration::from_millis(t.bash_max_timeout_ms),
                lsp_idle: std::time::Duration::from_secs(t.lsp_idle_secs),
            },
        )?;
        crate::tools::register(
            &registry,
            Arc::new(crate::packages::scripts::RunSkillScript::new(
                config.grants.clone(),
                loader.native().clone(),
            )),
        )?;
        for tool in self.tools {
            crate::tools::register(&registry, tool)?;
        }
        let embedder = match self.embedder {
            Some(embedder) => embedder,
            None => crate::memory::configured_embedder(&data_dir)?,
        };
        let memory = Arc::new(MemoryManager::open_with(
            &data_dir,
            embedder,
            MemoryConfig::default(),
        )?);
        // A broken model configuration must not stop what needs no model; it is
        // reported by `llm_error` (and `evo doctor`).
        let (llm, llm_error) = match self.llm {
            Some(provider) => (Some(provider), None),
            None => match crate::llm::config::provider(&config.llm) {
                Ok(provider) => (provider, None),
                Err(e) => {
                    tracing::debug!("no language model: {e}");
                    (None, Some(e.to_string()))
                }
            },
        };
        let secrets = Arc::new(crate::secrets::SecretStore::new(&data_dir));
        let mut kernel = Kernel::new(registry.clone())
            .with_config(kernel_config(&config))
            .with_memory(memory.clone())
            .with_secrets(secrets.clone());
        if let Some(provider) = &llm {
            kernel = kernel.with_llm(Arc::new(ProviderLlm(provider.clone())));
        }
        let mut host = Inner {
            kernel: Arc::new(kernel),
            memory,
            loader,
            llm,
            llm_error,
            events: self.events,
            load_errors: Vec::new(),
            unreachable_remotes: Vec::new(),
            catalogue: Mutex::new(BTreeMap::new()),
            flushing: Mutex::new(()),
            changes: tokio::sync::watch::Sender::new(0),
            default_profile,
            data_dir,
            config,
        };
        if self.installed.unwrap_or(true) {
            let installed = crate::paths::skills_dir(&host.data_dir);
            if installed.is_dir() {
                host.load_dir(&installed).await?;
            }
        }
        for dir in host.config.skill_dirs.clone() {
            if !dir.is_dir() {
                let (path, line) = match host.config.source("skill_dirs") {
                    Source::File { path, line } => (path, Some(line)),
                    _ => (dir.clone(), None),
                };
                return Err(Error::Config {
                    path,
                    line,
                    key: Some("skill_dirs".into()),
                    message: format!("{}: not a directory", dir.display()),
                });
            }
            host.load_dir(&dir).await?;
        }
        if self.installed.unwrap_or(true) {
            host.load_remotes(&secrets).await?;
        }
        Ok(Host {
            inner: Arc::new(host),
        })
    }
}

/// The Wasm engine and native sandbox `config` describes.
fn loader(
    config: &Config,
    data_dir: &Path,
    launcher: Option<PathBuf>,
    on_compile: CompileNotice,
) -> Result<Loader> {
    let e = &config.engine;
    let engine = WasmEngine::new(EngineConfig {
        max_component_bytes: e.max_component_mb << 20,
        compile_deadline: std::time::Duration::from_millis(e.compile_deadline_ms),
        on_compile,
        cache_dir: e
            .compile_cache
            .then(|| crate::paths::wasm_cache_dir(data_dir)),
        max_concurrent_calls: e.pool_slots,
        pooling: e.pooling,
        limits: LimitPolicy {
            max_memory_mib: e.max_memory_mib,
            max_output_bytes: e.max_output_bytes,
            max_timeout_ms: e.max_timeout_ms,
            max_fuel: e.max_fuel,
        },
    })?;
    let n = &config.native;
    let native = NativeConfig {
        node: n.node.clone(),
        timeout: std::time::Duration::from_millis(n.timeout_ms),
        output_cap: DEFAULT_OUTPUT_CAP,
        max_old_space_mb: n.max_old_space_mb,
        max_tasks: n.max_tasks,
        max_concurrency: n.concurrency,
        launcher,
        require_isolation: n.isolation == Isolation::Required,
    };
    Ok(Loader::new()
        .with_wasm(engine, config.grants.clone())
        .with_native(NativeSandbox::new(std::env::temp_dir(), native)))
}

fn kernel_config(config: &Config) -> KernelConfig {
    let k = &config.kernel;
    KernelConfig {
        max_depth: k.max_depth,
        max_input_attempts: k.max_input_attempts,
        max_output_attempts: k.max_output_attempts,
        fallback: match k.fallback.as_str() {
            "return_raw" => Fallback::ReturnRaw,
            "return_partial" => Fallback::ReturnPartial,
            _ => Fallback::Throw,
        },
        retry_backoff: std::time::Duration::from_millis(k.retry_backoff_ms),
        locale: config.tools.locale,
        confirm: config.tools.confirm,
    }
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
    /// Held through a statistics flush, so that a second flush (say, at shutdown)
    /// returns only once the counts the first one took are written.
    flushing: Mutex<()>,
    /// Bumped whenever the skills change.
    changes: tokio::sync::watch::Sender<u64>,
    /// The profile of runs that name none (`[tools] profile`), resolved at build.
    default_profile: crate::skill::permission::Profile,
    data_dir: PathBuf,
    config: Config,
}

impl Inner {
    /// Lists every remote's skills (at once, each within [`crate::remote::LIST_TIMEOUT`])
    /// and registers them as `NAME/skill`; a remote that cannot be listed is a load
    /// error, and the host starts without its skills.
    async fn load_remotes(&mut self, secrets: &Arc<crate::secrets::SecretStore>) -> Result<()> {
        let remotes: Vec<Arc<crate::remote::Remote>> = crate::remote::load(&self.data_dir)?
            .into_iter()
            .map(|spec| {
                Arc::new(crate::remote::Remote::new(
                    &self.data_dir,
                    spec,
                    secrets.clone(),
                ))
            })
            .collect();
        let listed = futures_util::future::join_all(remotes.iter().map(|r| r.skills())).await;
        let file = crate::remote::file(&self.data_dir);
        for (remote, listed) in remotes.iter().zip(listed) {
            let skills = match listed {
                Ok(skills) => skills,
                Err(e) => {
                    tracing::debug!("remote {}: its skills are not listed: {e}", remote.name());
                    let message = match &e {
                        Error::Remote { message, .. } => message.clone(),
                        other => other.to_string(),
                    };
                    self.unreachable_remotes
                        .push((remote.name().to_owned(), message));
                    self.load_errors.push(LoadError {
                        path: file.clone(),
                        code: e.code(),
                        error: e.to_string(),
                    });
                    continue;
                }
            };
            for (meta, executor) in skills {
                let name = meta.name.clone();
                match RegisteredSkill::new(meta, executor) {
                    Ok(skill) => {
                        self.kernel.registry().register(skill);
                    }
                    Err(e) => self.load_errors.push(LoadError {
                        path: file.clone(),
                        code: e.code(),
                        error: format!("{name}: {e}"),
                    }),
                }
            }
        }
        Ok(())
    }

    async fn load_dir(&mut self, dir: &Path) -> Result<()> {
        for (path, result) in self.loader.load_all(dir).await? {
            let stamp = stamp(&path);
            let skill = result.as_ref().ok().map(|s| s.meta.name.clone());
            self.catalogue
                .get_mut()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(path.clone(), Loaded { stamp, skill });
            match result {
                Ok(skill) => {
                    self.kernel.registry().register(skill);
                }
                Err(e) => {
                    tracing::debug!("skipped {}: [{}] {e}", path.display(), e.code());
                    self.load_errors.push(LoadError {
                        path,
                        code: e.code(),
                        error: e.to_string(),
                    });
                }
            }
        }
        Ok(())
    }
}

/// An Evo host: skills, the kernel that calls them, memory, and the model. See the
/// [module docs](self).
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
        let registered = if path.is_dir() {
            self.inner.loader.load_dir(path).await?
        } else if path.is_file() {
            let wasm = self.inner.loader.load_wasm_file(path).await?;
            RegisteredSkill::new(wasm.meta().clone(), Arc::new(WasmExecutor::new(wasm)))?
        } else if let Some(found) = self.registry().get(skill) {
            return Ok(found.meta.name.clone());
        } else if let Some((remote, message)) = skill.split_once('/').and_then(|(remote, _)| {
            self.inner
                .unreachable_remotes
                .iter()
                .find(|(name, _)| name == remote)
        }) {
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
        let name = registered.meta.name.clone();
        self.registry().register(registered);
        Ok(name)
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
            return Err(Error::Llm {
                message: match &self.inner.llm_error {
                    Some(error) => format!("the configured model cannot be used: {error}"),
                    None => format!(
                        "no language model is configured; {}",
                        crate::config::HOW_TO_CONFIGURE_LLM
                    ),
                },
                transient: false,
            });
        };
        let a = &self.inner.config.agent;
        let mut options = AgentOptions {
            max_llm_rounds: a.max_llm_rounds,
            shortlist: a.shortlist,
            intent_recognition: a.intent_recognition,
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
        let builtins = self
            .skills()
            .iter()
            .filter(|s| s.kind() == crate::skill::executor::ExecutorKind::Builtin)
            .map(|s| s.meta.name.clone())
            .collect();
        Ok(SkillManager::new(&self.inner.data_dir)
            .with_index(index)
            .with_loader(self.inner.loader.clone())
            .with_reserved(builtins))
    }

    /// The skill index of the data directory, ranking with memory's embedder.
    fn skill_index(&self) -> Result<SkillIndex> {
        Ok(SkillIndex::new(
            Db::open(&self.inner.data_dir)?,
            self.inner.memory.embedder(),
        ))
    }

    /// Installs a skill from a ZIP archive, a directory or a bare `.wasm` component and
    /// makes it callable at once.
    pub async fn install(&self, source: &Path, options: InstallOptions<'_>) -> Result<Outcome> {
        let manager = self.manager()?;
        let outcome = if source.is_dir() {
            manager.install_dir(source, options).await?
        } else {
            let bytes = std::fs::read(source).map_err(Error::io_at(source))?;
            if bytes.starts_with(b"\0asm") {
                manager.install_component(&bytes, options).await?
            } else {
                manager.install_skill(&bytes, options).await?
            }
        };
        let dir = crate::paths::skills_dir(&self.inner.data_dir).join(&outcome.name);
        let skill = match self.inner.loader.load_dir(&dir).await {
            Ok(skill) => {
                self.registry().register(skill);
                Some(outcome.name.clone())
            }
            Err(e) => {
                tracing::warn!("installed {} but could not load it: {e}", outcome.name);
                None
            }
        };
        let stamp = stamp(&dir);
        self.inner
            .catalogue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(dir, Loaded { stamp, skill });
        self.changed();
        Ok(outcome)
    }

    /// Uninstalls skill `name`; it is no longer callable.
    pub fn uninstall(&self, name: &str) -> Result<Outcome> {
        let mut outcome = self.manager()?.uninstall_skill(name)?;
        for profile in self.profiles_listing(name) {
            let warning = format!(
                "profile {profile:?} lists {name}; its agents can no longer call it (remove it from [tools.profiles.{profile}] tools)"
            );
            tracing::warn!("{warning}");
            outcome.warnings.push(warning);
        }
        self.registry().unregister(name);
        let dir = crate::paths::skills_dir(&self.inner.data_dir).join(name);
        self.inner
            .catalogue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&dir);
        self.changed();
        Ok(outcome)
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
        let mut db = Db::open(&self.inner.data_dir)?;
        let stats = self.inner.kernel.stats().flush(&mut db);
        self.flush_history(&mut db)?;
        stats
    }

    /// The kernel (registry, configuration, statistics).
    pub fn kernel(&self) -> &Arc<Kernel> {
        &self.inner.kernel
    }

    /// The skill registry.
    pub fn registry(&self) -> &Arc<SkillRegistry> {
        self.inner.kernel.registry()
    }

    /// The loader (Wasm engine, native sandbox).
    pub fn loader(&self) -> &Loader {
        &self.inner.loader
    }

    /// The effective configuration.
    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// The standing grant policy.
    pub fn grants(&self) -> &Policy {
        &self.inner.config.grants
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
}
