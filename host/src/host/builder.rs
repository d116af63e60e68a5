//! Building a [`Host`]: the data directory, configuration, embedder, model and tools it
//! starts with, and loading its skills (directories, installed skills, remotes).

use super::*;

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

    /// A program that confines itself and then runs a native skill's Node: the small
    /// `evo-launcher` installed beside `evo` (or `evo` itself, which has the same hidden
    /// commands; see [`crate::sandbox::launcher_main`]); without one native skills run with process
    /// limits only, and `isolation = "required"` refuses to run them. A build without the
    /// `native` feature runs no scripts and has no use for one.
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
        let registry = Arc::new(SkillTable::new());
        let project = self.project_dir.unwrap_or_else(|| PathBuf::from("."));
        let cwd = std::path::absolute(&project).unwrap_or_else(|_| project.clone());
        crate::tools::register_builtins(&registry, project.clone())?;
        #[cfg(feature = "dev-tools")]
        crate::tools::register_programs(
            &registry,
            project,
            loader.native(),
            crate::tools::ProgramTools {
                allow: config.tools.bash_allow.clone(),
                allowed_hosts: config.tools.allowed_hosts.clone(),
                max_timeout: std::time::Duration::from_millis(config.tools.bash_max_timeout_ms),
                lsp_idle: std::time::Duration::from_secs(config.tools.lsp_idle_secs),
                toolchains: config.tools.toolchains.clone(),
            },
        )?;
        #[cfg(feature = "native")]
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
        let secret = crate::secrets::SecretStore::new(&data_dir)
            .snapshot()?
            .value(crate::storage::PASSWORD_VAR)
            .map(str::to_owned);
        let storage = crate::storage::Storage::open(&config.storage, &data_dir, secret)?;
        // An embedder given in code is the embedder's choice; one read from the store
        // follows the store when another process reindexes it.
        let follows_reindex = self.embedder.is_none();
        let embedder = match self.embedder {
            Some(embedder) => embedder,
            None => crate::memory::configured_embedder_in(&storage, &data_dir)?,
        };
        let memory = Arc::new(MemoryManager::open_in(
            &storage,
            &data_dir,
            embedder,
            MemoryConfig::default(),
        )?);
        // A broken model configuration must not stop what needs no model; it is
        // reported by `llm_error` (and `evo doctor`).
        let (llm, llm_error) = match self.llm {
            Some(provider) => (Some(provider), None),
            None => match crate::llm::config::provider_in(&config.llm, Some(&data_dir)) {
                Ok(provider) => (provider, None),
                Err(e) => {
                    tracing::debug!("no language model: {e}");
                    (None, Some(e.to_string()))
                }
            },
        };
        let secrets = Arc::new(crate::secrets::SecretStore::new(&data_dir));
        let mut kernel = Kernel::new(registry.clone())
            .with_config(kernel_config(&config, &cwd))
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
            calls: crate::skill::observe::store::store_for(&storage),
            #[cfg(feature = "postgres")]
            shared_catalogue: storage.shared().map(|pg| {
                crate::packages::shared::SharedCatalogue::new(
                    pg.clone(),
                    &crate::paths::skills_dir(&data_dir),
                )
            }),
            storage,
            flushing: Mutex::new(()),
            managing: tokio::sync::Mutex::new(()),
            changes: tokio::sync::watch::Sender::new(0),
            default_profile,
            follows_reindex,
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
        #[cfg(feature = "postgres")]
        let shared_installs = host.shared_catalogue.is_some() && self.installed.unwrap_or(true);
        #[cfg(not(feature = "postgres"))]
        let shared_installs = false;
        let host = Host {
            inner: Arc::new(host),
        };
        if shared_installs {
            // The skills other nodes installed, before the first call.
            host.refresh().await?;
        }
        flush_when_due(&host);
        Ok(host)
    }
}

/// Writes the call history and statistics in the background whenever another
/// [`FLUSH_EVERY`](crate::skill::observe::history::FLUSH_EVERY) calls are buffered, so that an
/// embedder that never calls [`Host::flush_stats`] does not keep every call in memory.
fn flush_when_due(host: &Host) {
    let weak = Arc::downgrade(&host.inner);
    host.kernel().history().when_due(move || {
        let Some(inner) = weak.upgrade() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let host = Host { inner };
        runtime.spawn_blocking(move || {
            if let Err(e) = host.flush_stats() {
                tracing::warn!(error = %e, "could not write the call history; it stays buffered");
            }
        });
    });
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
        symlinks: e.symlinks,
        parked_instances: e.parked_instances,
        limits: LimitPolicy {
            max_memory_mib: e.max_memory_mib,
            max_output_bytes: e.max_output_bytes,
            max_timeout_ms: e.max_timeout_ms,
            max_fuel: e.max_fuel,
            max_instances: e.max_instances,
        },
    })?;
    let loader = Loader::new().with_wasm(engine, config.grants.clone());
    Ok(with_native(loader, &config.native, launcher))
}

/// `loader` running script skills in the sandbox `[native]` describes, confined by
/// `launcher`.
#[cfg(feature = "native")]
fn with_native(
    loader: Loader,
    n: &crate::config::NativeSettings,
    launcher: Option<PathBuf>,
) -> Loader {
    let native = NativeConfig {
        node: n.node.clone(),
        timeout: std::time::Duration::from_millis(n.timeout_ms),
        output_cap: DEFAULT_OUTPUT_CAP,
        max_old_space_mb: n.max_old_space_mb,
        max_tasks: n.max_tasks,
        max_cpu_percent: n.max_cpu_percent,
        max_concurrency: n.concurrency,
        launcher,
        require_isolation: n.isolation == Isolation::Required,
    };
    loader.with_native(NativeSandbox::new(std::env::temp_dir(), native))
}

/// A build without the `native` feature runs no scripts: `loader` as it is.
#[cfg(not(feature = "native"))]
fn with_native(loader: Loader, _: &crate::config::NativeSettings, _: Option<PathBuf>) -> Loader {
    loader
}

fn kernel_config(config: &Config, cwd: &Path) -> KernelConfig {
    let k = &config.kernel;
    KernelConfig {
        max_depth: k.max_depth,
        max_input_attempts: k.max_input_attempts,
        max_output_attempts: k.max_output_attempts,
        fallback: k.fallback,
        retry_backoff: std::time::Duration::from_millis(k.retry_backoff_ms),
        locale: config.tools.locale,
        confirm: config.tools.confirm,
        env: config
            .env
            .iter()
            .map(|(key, value)| (key.clone(), Value::String(value.clone())))
            .chain([("cwd".to_owned(), Value::String(cwd.display().to_string()))])
            .collect(),
        models: config.llm.models.clone(),
        preprocess: config.preprocess.clone(),
    }
}

impl Inner {
    /// Lists every remote's skills (at once, each within `remote::client::LIST_TIMEOUT`)
    /// and registers them as `NAME/skill`; a remote that cannot be listed is a load
    /// error, and the host starts without its skills.
    #[cfg(feature = "remotes")]
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
                        remote: Some(remote.name().to_owned()),
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
                        remote: Some(remote.name().to_owned()),
                        code: e.code(),
                        error: format!("{name}: {e}"),
                    }),
                }
            }
        }
        Ok(())
    }

    /// A build without the `remotes` feature: every configured remote is a load error
    /// (`FEATURE_NOT_BUILT`), and the host starts without its skills.
    #[cfg(not(feature = "remotes"))]
    async fn load_remotes(&mut self, _secrets: &Arc<crate::secrets::SecretStore>) -> Result<()> {
        let file = crate::remote::file(&self.data_dir);
        for spec in crate::remote::load(&self.data_dir)? {
            let e = Error::FeatureNotBuilt {
                feature: "remotes",
                what: format!("remote {}", spec.name),
            };
            self.unreachable_remotes
                .push((spec.name.clone(), e.to_string()));
            self.load_errors.push(LoadError {
                path: file.clone(),
                remote: Some(spec.name),
                code: e.code(),
                error: e.to_string(),
            });
        }
        Ok(())
    }

    async fn load_dir(&mut self, dir: &Path) -> Result<()> {
        // What is learnt of the components written once, at the end.
        let _batch = self.loader.wasm_engine().map(WasmEngine::batch);
        let loaded = crate::engine::for_each_dir(&self.loader, dir, |loader, dir| async move {
            Loaded::load(&loader, &dir).await
        });
        for (path, (loaded, result)) in loaded.await? {
            self.catalogue
                .get_mut()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(path.clone(), loaded);
            match result {
                Ok(package) => {
                    for skill in package.skills {
                        self.kernel.registry().register(skill);
                    }
                }
                Err(e) => {
                    tracing::debug!("skipped {}: [{}] {e}", path.display(), e.code());
                    self.load_errors.push(LoadError {
                        path,
                        remote: None,
                        code: e.code(),
                        error: e.to_string(),
                    });
                }
            }
        }
        Ok(())
    }
}
