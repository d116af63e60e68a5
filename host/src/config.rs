//! `evo.toml`: the host's configuration, layered defaults → file → environment → flags,
//! with where every value came from.
//!
//! The file is `evo.toml` in the data directory, or the one `--config` / `EVO_CONFIG`
//! names. Every key is optional; a key the host does not know, a value of the wrong
//! type and a value out of range are refused with [`Error::Config`]
//! (`CONFIG_INVALID`), naming the file, the line and the key. Nothing falls back to a
//! default silently.
//!
//! ```toml
//! skill_dirs = ["./my-skills"]        # loaded besides the installed skills
//!
//! [llm]
//! model = "ollama:llama3.2"           # provider:model, as EVO_LLM (keys stay in the environment)
//! base_url = "http://gpu-box:11434/v1"
//!
//! [grants]                            # every skill: requested ∩ this
//! dirs = ["./docs::/data:ro"]         # HOST::GUEST[:ro], HOST relative to this file
//! llm = false
//! memory = "none"                     # none | read | read-write
//! hosts = ["https://api.github.com"]  # outbound HTTP origins (*.domain, *, :*)
//! secrets = ["GITHUB_TOKEN"]          # `evo secret set` names, for the hosts skills name
//!
//! [skill_config.weather]             # values a skill reads through wasi:config
//! api_base = "https://api.example.com"
//!
//! [grants.skill.notes]                # replaces [grants] for one skill
//! memory = "read-write"
//!
//! [engine]
//! pool_slots = 16                     # Wasm calls at once
//! max_memory_mib = 256                # the most any skill may ask for
//! max_timeout_ms = 300000
//! max_output_bytes = 16777216
//! max_fuel = 1000000000               # optional
//! max_instances = 128                 # core instances (and tables) per component
//! compile_cache = true
//! max_component_mb = 64               # larger components are refused
//! compile_deadline_ms = 120000        # a longer compile fails the load
//! symlinks = false                    # skills make no symbolic links at all
//!
//! [native]
//! concurrency = 4
//! isolation = "best-effort"           # or "required": refuse to run unconfined
//! timeout_ms = 60000
//! max_old_space_mb = 512
//! max_tasks = 256
//! max_cpu_percent = 100
//! node = "node"
//!
//! [kernel]
//! max_depth = 10
//! max_input_attempts = 3              # a model's tries to fix a skill's arguments
//! max_output_attempts = 3             # an llm skill's tries to produce valid output
//! fallback = "throw"                  # throw | return_raw | return_partial
//! retry_backoff_ms = 200
//!
//! [agent]
//! max_llm_rounds = 10
//! shortlist = 12
//! intent_recognition = true
//!
//! [tools]
//! locale = "auto"                     # en | zh | auto (zh when LANG=zh*): refusals' language
//! confirm = "deny"                    # deny | allow: dangerous calls when nobody can be asked
//! profile = "full"                    # explore | edit | full | admin | one below
//! history_cap = 100000                # calls kept in the history
//! bash_allow = ["git", "cargo", "ls"] # replaces the default allowlist
//! bash_max_timeout_ms = 600000
//! allowed_hosts = ["github.com"]      # hosts a bash command may name in a URL
//! toolchains = ["~/.cargo", "~/.rustup"]  # read-only to bash, for `cargo test` and the like
//! lsp_idle_secs = 300                 # an unused language server is shut down
//!
//! [tools.profiles.reviewer]           # a profile of your own
//! level = "read_only"                 # read_only | read_write | execute | admin
//! tools = ["read", "grep", "git"]     # optional: only these
//!
//! [storage]                           # several `evo serve` nodes sharing one database
//! url = "postgres://evo@db:5432/evo"  # password: EVO_STORAGE_PASSWORD or `evo secret`
//!
//! [registries]                        # `evo skill publish` / `install oci://…`
//! insecure = ["127.0.0.1:5000"]       # reached over plain HTTP; every other over HTTPS
//!
//! [registries.credentials."ghcr.io"]  # else Docker's config.json, else anonymous
//! username = "alice"
//! secret = "GHCR_TOKEN"               # the `evo secret` holding the password or token
//!
//! [trust]
//! keys = ["keys/alice.pub"]           # cosign-style P-256 public keys, relative to this file
//! require_signature = true            # refuse what no trusted key signed
//! ```
//!
//! The environment overrides the file: `EVO_LLM`, `EVO_LLM_BASE_URL`, `EVO_STORAGE_URL`, `EVO_SKILL_DIRS`
//! (a `PATH`-style list), `EVO_NATIVE_ISOLATION` (`best-effort` or `required`; the older
//! `EVO_NATIVE_REQUIRE_ISOLATION=1` still means `required`). Front ends put their flags
//! on top with [`Config::set_source`].

mod edit;
mod entries;
pub(crate) use edit::set_skill_grants;
mod file;
mod spans;

use std::collections::BTreeMap;

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::capabilities::Policy;
use crate::error::{Error, Result};
pub use crate::llm::config::LlmSettings;
/// Where Evo keeps its data, its installed skills and its compiled components.
pub use crate::paths::{data_dir, skills_dir, wasm_cache_dir};
// The types of settings whose meaning lives with the code that acts on them, named here
// with the settings that hold them.
pub use crate::skill::kernel::HOW_TO_CONFIGURE_LLM;
pub use crate::skill::kernel::confirm::ConfirmPolicy;
pub use crate::skill::kernel::{Fallback, Preprocess};
use crate::skill::permission::{Locale, Profile};

/// Name of the configuration file in the data directory.
pub const CONFIG_FILE: &str = "evo.toml";
/// Names another configuration file (the `--config` flag sets it too).
pub const EVO_CONFIG: &str = "EVO_CONFIG";

/// Wasm calls that may run at once by default: the pool is sized to it (a pool sized to
/// need starts ~10× faster than wasmtime's defaults), and a CLI invocation
/// runs a handful of calls.
pub const DEFAULT_POOL_SLOTS: u32 = 16;
/// The largest pool `evo.toml` may ask for: each slot reserves address space for a
/// memory of the policy's maximum size.
pub const MAX_POOL_SLOTS: u32 = 1_024;

/// Where a value came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "from")]
pub enum Source {
    /// The built-in default.
    Default,
    /// A configuration file, at a line.
    File {
        /// The file.
        path: PathBuf,
        /// Line, from 1.
        line: usize,
    },
    /// An environment variable.
    Env {
        /// Its name.
        var: String,
    },
    /// A command-line flag (or an embedder's builder call).
    Flag {
        /// The flag, e.g. `--skills-dir`.
        flag: String,
    },
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Default => f.write_str("default"),
            Self::File { path, line } => write!(f, "{}:{line}", path.display()),
            Self::Env { var } => write!(f, "env {var}"),
            Self::Flag { flag } => write!(f, "flag {flag}"),
        }
    }
}

/// Sizing and limits of the Wasm engine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EngineSettings {
    /// Calls that may run at once (the pool's size); more wait for a slot.
    pub pool_slots: u32,
    /// Use the pooling allocator.
    pub pooling: bool,
    /// Keep compiled components in the data directory across runs.
    pub compile_cache: bool,
    /// The most memory any skill may ask for, MiB.
    pub max_memory_mib: u64,
    /// The largest output any skill may ask for, bytes.
    pub max_output_bytes: u64,
    /// The longest deadline any skill may ask for, ms.
    pub max_timeout_ms: u64,
    /// The most fuel per call, if the operator caps it.
    pub max_fuel: Option<u64>,
    /// The most core instances (and tables) one component may create.
    pub max_instances: u32,
    /// Largest component compiled at all, MiB.
    pub max_component_mb: u64,
    /// Longest wait for a component to compile, ms.
    pub compile_deadline_ms: u64,
    /// Whether a skill may make symbolic links in a read-write grant (only ones that
    /// point down, into the directory that holds them); `false` refuses every link.
    pub symlinks: bool,
}

/// Whether native skills may run without file-system isolation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Isolation {
    /// Confine them when the kernel can (Landlock), else run them with process limits
    /// only, and say so.
    #[default]
    BestEffort,
    /// Refuse to run them unconfined.
    Required,
}

/// How native script skills run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NativeSettings {
    /// Scripts that may run at once.
    pub concurrency: usize,
    /// See [`Isolation`].
    pub isolation: Isolation,
    /// Wall-clock limit per script, ms.
    pub timeout_ms: u64,
    /// Memory limit, MiB: of the script's whole process tree where a cgroup caps it,
    /// else of V8's heap.
    pub max_old_space_mb: u32,
    /// Tasks (processes and threads) one script may have at once, where a cgroup caps
    /// them.
    pub max_tasks: u64,
    /// CPU one script's process tree may use, in percent of one core (100: one core;
    /// 0: no cap), where a cgroup's `cpu` controller caps it.
    pub max_cpu_percent: u64,
    /// The Node binary.
    pub node: PathBuf,
}

/// How the kernel runs calls.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KernelSettings {
    /// Call depth limit.
    pub max_depth: u32,
    /// Tries a model gets to fix a skill's arguments in one run.
    pub max_input_attempts: u32,
    /// Tries an llm skill gets to produce valid output.
    pub max_output_attempts: u32,
    /// What an llm skill returns when its output is still invalid.
    pub fallback: Fallback,
    /// First wait before a retry, ms (doubled each time).
    pub retry_backoff_ms: u64,
}

/// How the agent runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AgentSettings {
    /// Model requests one tool loop may make.
    pub max_llm_rounds: u32,
    /// Skills offered to the router.
    pub shortlist: usize,
    /// Route each message first.
    pub intent_recognition: bool,
}

/// What `evo serve` offers its clients.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServeSettings {
    /// The skills served as tools, by name; a trailing `*` matches a prefix. Empty:
    /// every skill that is not internal.
    pub tools: Vec<String>,
    /// Calls run at once across all sessions; more wait their turn.
    pub max_calls: usize,
    /// Calls that may wait for a slot at once, in each lane (quick calls, and skills
    /// whose calls run long); more are refused as busy (HTTP 503 with `Retry-After`, an
    /// MCP error) rather than queued without end.
    pub max_queue: usize,
    /// The largest message a client may send, KiB.
    pub max_message_kb: usize,
    /// Whether MCP clients get the management tools (install, uninstall, grant,
    /// revoke, search), each change confirmed by the user (`evo serve --manage`).
    pub manage: bool,
    /// Host directories below which a grant made over the wire (the HTTP API, the
    /// console, the MCP management tools) may bind a directory; none by default, so
    /// such grants bind no directory until the operator names one.
    pub grant_dirs: Vec<PathBuf>,
}

impl ServeSettings {
    /// Whether skill `name` is served, by [`ServeSettings::tools`].
    pub fn serves(&self, name: &str) -> bool {
        self.tools.is_empty()
            || self
                .tools
                .iter()
                .any(|pattern| match pattern.strip_suffix('*') {
                    Some(prefix) => name.starts_with(prefix),
                    None => pattern == name,
                })
    }
}

/// The built-in tools' settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolsSettings {
    /// The language of refusals: `zh` when `LC_ALL`, `LC_MESSAGES` or `LANG` starts
    /// with `zh`, else `en`, unless `evo.toml` says (`en`, `zh`, or `auto` for the same
    /// choice).
    pub locale: Locale,
    /// What a dangerous call does when nobody can be asked.
    pub confirm: ConfirmPolicy,
    /// The profile runs get unless a front end picks one.
    pub profile: String,
    /// Calls kept in the history.
    pub history_cap: u64,
    /// The commands `bash` may run (every command of a pipeline or chain is checked).
    pub bash_allow: Vec<String>,
    /// The longest `timeout` a `bash` call may ask for, ms.
    pub bash_max_timeout_ms: u64,
    /// Hosts a `bash` command line may name in a URL.
    pub allowed_hosts: Vec<String>,
    /// Directories `bash` may use read-only besides the system's programs: toolchains
    /// installed in a home directory (`~/.cargo`, `~/.rustup`). None by default: they
    /// can hold credentials (`~/.cargo/credentials.toml`), so the operator chooses.
    pub toolchains: Vec<PathBuf>,
    /// Seconds a language server may sit unused before `lsp` shuts it down.
    pub lsp_idle_secs: u64,
    /// Profiles defined in `evo.toml`, besides the built-in ones.
    pub profiles: BTreeMap<String, Profile>,
}

impl ToolsSettings {
    /// The profile named `name`: one from `evo.toml`, else a built-in one
    /// (`Profile::builtin`).
    pub fn profile_named(&self, name: &str) -> Option<Profile> {
        self.profiles
            .get(name)
            .cloned()
            .or_else(|| Profile::builtin(name))
    }
}

/// Calls `evo serve` lets wait for a slot at once unless `serve.max_queue` says
/// otherwise: four rounds of the default `max_calls`.
pub const DEFAULT_MAX_SERVE_QUEUE: usize = 128;
/// Calls `evo serve` runs at once unless `serve.max_calls` says otherwise.
pub const DEFAULT_MAX_SERVE_CALLS: usize = 32;
/// The largest client message `evo serve` takes unless `serve.max_message_kb` says
/// otherwise: 4 MiB.
pub const DEFAULT_MAX_MESSAGE_KB: usize = 4 << 10;

/// The effective configuration of a host.
#[derive(Debug, Clone, Serialize)]
pub struct Config {
    /// Skill directories loaded besides the installed skills (later ones win on a name
    /// clash).
    pub skill_dirs: Vec<PathBuf>,
    /// The language model.
    pub llm: LlmSettings,
    /// Values the operator gives every skill (`[env]`): what `SkillContext::env` and
    /// `{{env.NAME}}` in templates read, beside the host's own.
    pub env: BTreeMap<String, String>,
    /// The skills that transform an agent's message or a skill's input first
    /// (`[preprocess]`).
    pub preprocess: Preprocess,
    /// The standing grant policy: a default for every skill, and per-skill entries.
    #[serde(skip)]
    pub grants: Policy,
    /// The Wasm engine.
    pub engine: EngineSettings,
    /// Native script skills.
    pub native: NativeSettings,
    /// The kernel.
    pub kernel: KernelSettings,
    /// The agent.
    pub agent: AgentSettings,
    /// `evo serve`.
    pub serve: ServeSettings,
    /// The built-in tools.
    pub tools: ToolsSettings,
    /// Where shared state is kept.
    pub storage: crate::storage::StorageSettings,
    /// How to reach OCI registries.
    pub registries: crate::oci::RegistrySettings,
    /// Whose signatures an install from a registry accepts.
    pub trust: crate::oci::TrustSettings,
    /// The file read, if any.
    #[serde(skip)]
    pub file: Option<PathBuf>,
    /// Where each value came from (see [`Config::source`]).
    #[serde(skip)]
    pub provenance: Provenance,
}

/// Where the values of a [`Config`] came from, by dotted key; keys not in it are
/// defaults.
#[derive(Debug, Clone, Default)]
pub struct Provenance(BTreeMap<String, Source>);

impl Default for Config {
    /// Every default, from the constants of the parts it configures:
    ///
    /// - no extra skill directories, no model, nothing granted;
    /// - [`DEFAULT_POOL_SLOTS`] pool slots, the engine's limit policy, compile cache on;
    /// - native scripts as many at once as there are cores, best-effort isolation;
    /// - the kernel's and the agent's defaults.
    fn default() -> Self {
        use crate::engine::native_limits as native;
        use crate::engine::wasm::LimitPolicy;
        use crate::skill::kernel;
        let limits = LimitPolicy::default();
        Self {
            skill_dirs: Vec::new(),
            llm: LlmSettings::default(),
            env: BTreeMap::new(),
            preprocess: Preprocess::default(),
            grants: Policy::default(),
            engine: EngineSettings {
                pool_slots: DEFAULT_POOL_SLOTS,
                pooling: true,
                compile_cache: true,
                max_memory_mib: limits.max_memory_mib,
                max_output_bytes: limits.max_output_bytes,
                max_timeout_ms: limits.max_timeout_ms,
                max_fuel: limits.max_fuel,
                max_instances: limits.max_instances,
                max_component_mb: crate::engine::wasm::DEFAULT_MAX_COMPONENT_BYTES >> 20,
                compile_deadline_ms: u64::try_from(
                    crate::engine::wasm::DEFAULT_COMPILE_DEADLINE.as_millis(),
                )
                .unwrap_or(u64::MAX),
                symlinks: true,
            },
            native: NativeSettings {
                concurrency: std::thread::available_parallelism().map_or(1, usize::from),
                isolation: Isolation::BestEffort,
                timeout_ms: millis(native::DEFAULT_TIMEOUT),
                max_old_space_mb: native::DEFAULT_MAX_OLD_SPACE_MB,
                max_tasks: native::DEFAULT_MAX_TASKS,
                max_cpu_percent: native::DEFAULT_MAX_CPU_PERCENT,
                node: PathBuf::from("node"),
            },
            kernel: KernelSettings {
                max_depth: kernel::DEFAULT_MAX_DEPTH,
                max_input_attempts: kernel::DEFAULT_MAX_INPUT_ATTEMPTS,
                max_output_attempts: kernel::DEFAULT_MAX_OUTPUT_ATTEMPTS,
                fallback: Fallback::Throw,
                retry_backoff_ms: millis(kernel::DEFAULT_RETRY_BACKOFF),
            },
            agent: AgentSettings {
                max_llm_rounds: crate::agent::tool_loop::DEFAULT_MAX_LLM_ROUNDS,
                shortlist: crate::agent::DEFAULT_SHORTLIST,
                intent_recognition: true,
            },
            serve: ServeSettings {
                tools: Vec::new(),
                max_calls: DEFAULT_MAX_SERVE_CALLS,
                max_queue: DEFAULT_MAX_SERVE_QUEUE,
                max_message_kb: DEFAULT_MAX_MESSAGE_KB,
                manage: false,
                grant_dirs: Vec::new(),
            },
            tools: ToolsSettings {
                locale: Locale::En,
                confirm: ConfirmPolicy::Deny,
                profile: "full".into(),
                history_cap: crate::skill::observe::history::DEFAULT_HISTORY_CAP,
                bash_allow: crate::tools::ProgramTools::DEFAULT_ALLOW
                    .iter()
                    .map(|c| (*c).to_owned())
                    .collect(),
                bash_max_timeout_ms: millis(crate::tools::ProgramTools::MAX_TIMEOUT),
                allowed_hosts: Vec::new(),
                toolchains: Vec::new(),
                lsp_idle_secs: crate::tools::ProgramTools::LSP_IDLE.as_secs(),
                profiles: BTreeMap::new(),
            },
            storage: crate::storage::StorageSettings::default(),
            registries: crate::oci::RegistrySettings::default(),
            trust: crate::oci::TrustSettings::default(),
            file: None,
            provenance: Provenance::default(),
        }
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

impl Config {
    /// The configuration of `data_dir`: defaults, then `file` (else `EVO_CONFIG`, else
    /// `evo.toml` in `data_dir` if it exists), then the environment.
    ///
    /// A file named explicitly must exist; the one in the data directory may not.
    pub fn load(data_dir: &Path, file: Option<&Path>) -> Result<Self> {
        Self::load_with_env(data_dir, file, |name| {
            std::env::var(name).ok().filter(|v| !v.trim().is_empty())
        })
    }

    /// [`Config::load`] reading the environment through `env` (tests, embedders that
    /// keep their own environment).
    pub fn load_with_env(
        data_dir: &Path,
        file: Option<&Path>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self> {
        let mut config = Self::default();
        let (path, required) = match (file, env(EVO_CONFIG)) {
            (Some(path), _) => (path.to_owned(), true),
            (None, Some(path)) => (PathBuf::from(path), true),
            (None, None) => (data_dir.join(CONFIG_FILE), false),
        };
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                file::apply(&mut config, &path, &text)?;
                config.file = Some(path);
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !required => {}
            Err(e) => {
                return Err(Error::Config {
                    path,
                    line: None,
                    key: None,
                    message: format!("cannot read the configuration file: {e}"),
                });
            }
        }
        config.apply_env(&env)?;
        Ok(config)
    }

    /// The configuration of `text`, as if read from `path` (no environment).
    pub fn from_toml(path: &Path, text: &str) -> Result<Self> {
        let mut config = Self::default();
        file::apply(&mut config, path, text)?;
        config.file = Some(path.to_owned());
        Ok(config)
    }

    fn apply_env(&mut self, env: &impl Fn(&str) -> Option<String>) -> Result<()> {
        let from = |var: &str| Source::Env { var: var.into() };
        if let Some(model) = env("EVO_LLM") {
            self.llm.model = Some(model);
            self.set_source("llm.model", from("EVO_LLM"));
        }
        if let Some(url) = env("EVO_LLM_BASE_URL") {
            self.llm.base_url = Some(url);
            self.set_source("llm.base_url", from("EVO_LLM_BASE_URL"));
        }
        if let Some(url) = env(crate::storage::URL_VAR) {
            crate::storage::check_url(&url).map_err(|message| Error::Config {
                path: PathBuf::from(crate::storage::URL_VAR),
                line: None,
                key: Some("storage.url".into()),
                message,
            })?;
            self.storage.url = Some(url);
            self.set_source("storage.url", from(crate::storage::URL_VAR));
        }
        if let Some(dirs) = env("EVO_SKILL_DIRS") {
            self.skill_dirs = std::env::split_paths(&dirs).collect();
            self.set_source("skill_dirs", from("EVO_SKILL_DIRS"));
        }
        if self.source("tools.locale") == Source::Default
            && let Some((var, Locale::Zh)) = Locale::from_vars(env)
        {
            self.tools.locale = Locale::Zh;
            self.set_source("tools.locale", from(var));
        }
        if env("EVO_NATIVE_REQUIRE_ISOLATION").as_deref() == Some("1") {
            self.native.isolation = Isolation::Required;
            self.set_source("native.isolation", from("EVO_NATIVE_REQUIRE_ISOLATION"));
        }
        if let Some(level) = env("EVO_NATIVE_ISOLATION") {
            self.native.isolation = match level.as_str() {
                "best-effort" => Isolation::BestEffort,
                "required" => Isolation::Required,
                other => {
                    return Err(Error::Config {
                        path: PathBuf::from("EVO_NATIVE_ISOLATION"),
                        line: None,
                        key: Some("native.isolation".into()),
                        message: format!(
                            "{other:?} is not an isolation level; use best-effort or required"
                        ),
                    });
                }
            };
            self.set_source("native.isolation", from("EVO_NATIVE_ISOLATION"));
        }
        Ok(())
    }

    /// Records that `key` (dotted, as in `evo config show`) now comes from `source`.
    /// Front ends call it after changing a field for a flag.
    pub fn set_source(&mut self, key: &str, source: Source) {
        self.provenance.0.insert(key.to_owned(), source);
    }

    /// Where `key` came from.
    pub fn source(&self, key: &str) -> Source {
        self.provenance
            .0
            .get(key)
            .cloned()
            .unwrap_or(Source::Default)
    }
}

#[cfg(test)]
mod tests;
