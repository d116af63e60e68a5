//! `evo.toml`: the host's configuration, layered defaults → file → environment → flags,
//! with where every value came from. Each table is defined by the subsystem it
//! configures (its settings type, its defaults and its checks, re-exported here); this
//! module composes them into [`Config`].
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
//! parked_instances = 8                # instances made ahead of their calls (0: off)
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
//! decisive_routing = true             # the index's clear first pick, without a router request
//! decisive_margin = 0.25              # how far ahead of the second it must be
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
mod serve;
mod spans;

use std::collections::BTreeMap;

use std::fmt;
use std::path::{Path, PathBuf};

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
use crate::skill::permission::Locale;
// Each table of `evo.toml`, defined (with its defaults and checks) by the subsystem it
// configures.
pub use crate::agent::AgentSettings;
pub use crate::engine::native_settings::{Isolation, NativeSettings};
pub use crate::engine::wasm::settings::{DEFAULT_POOL_SLOTS, EngineSettings, MAX_POOL_SLOTS};
pub use crate::skill::kernel::KernelSettings;
pub use crate::tools::ToolsSettings;
pub use serve::{
    DEFAULT_MAX_MESSAGE_KB, DEFAULT_MAX_SERVE_CALLS, DEFAULT_MAX_SERVE_QUEUE, ServeSettings,
};

/// Name of the configuration file in the data directory.
pub const CONFIG_FILE: &str = "evo.toml";
/// Names another configuration file (the `--config` flag sets it too).
pub const EVO_CONFIG: &str = "EVO_CONFIG";

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
    /// Every default, each from the subsystem it configures: no extra skill
    /// directories, no model, nothing granted, and each table's own defaults.
    fn default() -> Self {
        Self {
            skill_dirs: Vec::new(),
            llm: LlmSettings::default(),
            env: BTreeMap::new(),
            preprocess: Preprocess::default(),
            grants: Policy::default(),
            engine: EngineSettings::default(),
            native: NativeSettings::default(),
            kernel: KernelSettings::default(),
            agent: AgentSettings::default(),
            serve: ServeSettings::default(),
            tools: ToolsSettings::default(),
            storage: crate::storage::StorageSettings::default(),
            registries: crate::oci::RegistrySettings::default(),
            trust: crate::oci::TrustSettings::default(),
            file: None,
            provenance: Provenance::default(),
        }
    }
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
