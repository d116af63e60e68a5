//! Evo: a WebAssembly-first plugin host for LLM agents.
//!
//! The host is the agent's operating system: the LLM is the CPU, skills are its
//! instruction set. Skills are WebAssembly components built against Evo's WIT contract
//! (`evo:skill`) and run under wasmtime with time, memory and output limits and
//! deny-by-default capabilities; Node script skills run in a confined subprocess.
//!
//! # Embedding Evo
//!
//! Everything goes through one [`Host`]: build it once, share it (it is cheap to clone),
//! and call skills by name. The data directory holds installed skills, the compile
//! cache, memory and statistics; `evo.toml` in it (see [`config`]) sets limits, grants
//! and the model, and [`HostBuilder`] overrides what an application decides itself.
//!
//! ```
//! use evo_host::Host;
//! use serde_json::json;
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let data = tempfile::tempdir().unwrap();
//! let host = Host::builder().data_dir(data.path()).build().await.unwrap();
//!
//! // Built-in tools, installed skills and skill directories are all skills.
//! let out = host.call("calculate", json!({ "expression": "2 ^ 10" })).await.unwrap();
//! assert_eq!(out, json!({ "result": 1024 }));
//!
//! // Bad input is refused before the skill runs, with a report a model can act on.
//! let err = host.call("calculate", json!({ "expression": 7 })).await.unwrap_err();
//! assert_eq!(err.code(), "SKILL_VALIDATION_FAILED");
//!
//! // Memory is searched by keywords and by embeddings together (the default embedder
//! // matches wording; `minilm` or a model server adds meaning: docs/memory.md).
//! host.memory().store("The user prefers dark mode", None).unwrap();
//! let hits = host.memory().search("which theme does the user like", 1).unwrap();
//! assert_eq!(hits[0].text, "The user prefers dark mode");
//! # });
//! ```
//!
//! - A `.wasm` component or a skill directory: [`Host::resolve`] loads and registers it,
//!   then call it by the name it returns. [`Host::install`] installs one for good.
//! - Your own Rust functions: implement [`TypedTool`] (input and output types whose
//!   schemas are generated) or [`Tool`] (a schema known only at run time) and add it
//!   with [`HostBuilder::tool`].
//! - The agent: [`HostBuilder::llm`] (or `EVO_LLM`), then [`Host::agent`].
//! - What a skill may touch: [`Policy`], set by `[grants]` in `evo.toml`.
//!
//! `host/examples/` holds runnable programs for each (`cargo run -p evo-host --example
//! embed_wasm`). Every error is an [`Error`] with a stable [`Error::code`].
//!
//! # What to name
//!
//! The names re-exported at the crate root are the API an embedder uses: [`Host`],
//! [`HostBuilder`], [`Config`], [`Error`], [`Tool`], [`TypedTool`], [`SkillContext`], [`RunEvent`],
//! [`Policy`], [`Embedder`], [`LlmProvider`], [`InstallOptions`] and what they return.
//! The examples and the `evo` binary name nothing else, besides three modules:
//! [`config`] (every setting of `evo.toml`), [`serve`] (MCP and the HTTP API) and
//! [`authoring`] (`evo new`, `evo skill build`, `test`, `pack`). `host/public-api.txt`
//! lists everything public, and a change to it is made on purpose.
//!
//! # Features
//!
//! All on by default; `default-features = false` leaves a Wasm-only host (wasmtime,
//! the kernel, the file tools, memory on SQLite). A part a build left out answers
//! [`Error::FeatureNotBuilt`].
//!
//! - `minilm`: the offline MiniLM embedder (`evo memory reindex --embedder minilm`).
//! - `postgres`: several nodes on one PostgreSQL database (`[storage] url`).
//! - `serve`: MCP over stdio and HTTP, the HTTP API (the `serve` module).
//! - `native`: the native sandbox: script skills (`scripts/execute.js`, run by Node), an
//!   instruction skill's helper scripts (`run_skill_script`), and the launcher that
//!   confines them (`confine_and_exec`). Without it a script skill answers
//!   [`Error::FeatureNotBuilt`] when loaded, unless its install turned it into a Wasm
//!   component.
//! - `dev-tools`: the tools that run programs: `bash`, `terminal`, `git`, `lsp` (in the
//!   native sandbox: it implies `native`).
//!
//! # Inside
//!
//! The host is the composition root over the kernel (manifests, the registry,
//! [`SkillContext`] with its validation gates, templates, pipelines and llm skills),
//! the engines that run skills (Wasm components, Node scripts, skill directories), the
//! in-process tools, memory, the skill manager, the agent and the language-model
//! providers. Those modules are private; Evo's own tests reach them through the
//! `internals` feature, which promises nothing to anyone else.
#![deny(missing_docs)]

/// A method that is public with the `internals` feature (hidden from the docs) and
/// private to the crate without it.
macro_rules! internal_pub {
    ($(#[$attr:meta])* fn $name:ident(&$this:ident) -> $ret:ty $body:block) => {
        $(#[$attr])*
        #[cfg(feature = "internals")]
        #[doc(hidden)]
        pub fn $name(&$this) -> $ret $body
        $(#[$attr])*
        #[cfg(not(feature = "internals"))]
        pub(crate) fn $name(&$this) -> $ret $body
    };
}

// The modules an embedder may name: the settings, and two groups of their own.
pub mod authoring;
pub mod config;
#[cfg(feature = "serve")]
pub mod serve;

/// Declares modules that are private to the crate, or — with the `internals` feature,
/// which Evo's own tests and benchmarks enable — public but hidden from the docs and
/// outside any promise of stability.
macro_rules! internal_modules {
    ($($name:ident),* $(,)?) => {$(
        #[cfg(feature = "internals")]
        #[doc(hidden)]
        pub mod $name;
        #[cfg(not(feature = "internals"))]
        mod $name;
    )*};
}

internal_modules!(
    agent,
    capabilities,
    db,
    engine,
    error,
    host,
    http,
    llm,
    memory,
    oci,
    packages,
    paths,
    remote,
    retrieval,
    secrets,
    skill,
    storage,
    tools,
);

// What an embedder names, at the root: the host and its configuration, errors, your own
// tools and what they are given, run events, what a skill may touch, memory, models,
// installs, secrets and remotes. The modules above are where each is defined (and what
// Evo's own tests reach into); these names are the ones to use, and the `evo` binary
// uses nothing else (besides the `config`, `serve` and `authoring` modules).
pub use agent::intent::SKILL_NAME as ROUTER_SKILL;
pub use agent::intent::Strategy;
pub use agent::prompt::PromptCompiler;
pub use agent::tool_loop::Permissions;
pub use agent::{Agent, AgentOptions, RunOutcome};
pub use capabilities::{
    Access, DirGrant, DirPolicy, Grant, GrantFlag, HostPattern, MemoryAccess, Policy,
    RequestedCapabilities, SecretGrant,
};
pub use config::Config;
pub use engine::loader::StaticExecutor;
#[cfg(feature = "native")]
pub use engine::native::IsolationLevel;
#[cfg(feature = "native")]
pub use engine::native::confine::{
    Layers as SandboxLayers, Spec as LaunchSpec, confine_and_exec, wait_for_job,
};
#[cfg(feature = "native")]
pub use engine::native::egress::SOCKET as EGRESS_SOCKET;
pub use engine::wasm::{
    Allocator, ComponentInfo, Limits as WasmLimits, LoadSource, PlainComponent, PlainExecutor,
    SEPARATOR as COMPONENT_SEPARATOR, Unusable, WasmEngine, WasmExecutor, WasmFile, WasmSkill,
    component_name,
};
pub use error::{
    Answer, BlockReason, Direction, Error, FailureKind, Problem, Result, ScriptRun, TemplateError,
    ValidationReport, Violation, answer_for, error_codes_table,
};
pub use host::{
    Asking, Change, DownloadProgress, GrantValue, Host, HostBuilder, LISTING_TTL, LoadError,
    Operator, Preview, Published, RegistryInstall, RegistryInstalled, RegistrySearch, SkillGrants,
    Updated,
};
pub use llm::config::probe as probe_llm;
/// The local model: a GGUF file run in this process with candle (`EVO_LLM=local`, `evo
/// model install`).
pub use llm::local;
pub use llm::scripted::ScriptedProvider;
pub use llm::{ChatOptions, ContentBlock, LlmEvent, LlmProvider, Message, ModelTraits, Role};
pub use memory::local::{
    HASH as HASH_EMBEDDER, by_name as embedder_by_name, recorded_name as recorded_embedder,
};
pub use memory::{
    CaptureOutcome, Category as MemoryCategory, EntryHistory, ForgetOutcome, MemoryConfig,
    MemoryEntry, MemoryManager, MemoryStatus, SearchOptions, Source as MemorySource, StoreDecision,
};
pub use oci::reference::SCHEME as REGISTRY_SCHEME;
pub use oci::{
    CredentialSettings, Kind as ArtifactKind, Listed, RegistrySettings, TrustSettings,
    generate_signing_key,
};
pub use packages::{
    DateCount, InstallOptions, InstallRecord, ListQuery, ListedSkill, Listing, Outcome,
    SkillManager, Statistics,
};
pub use paths::{data_dir, skills_dir, wasm_cache_dir};
pub use skill::package::{RegistrySource, Signer};

pub use remote::{
    Remote, RemoteSpec, add as add_remote, check as check_remote, load as load_remotes,
    remove as remove_remote,
};
pub use retrieval::embed::{Embedder, HashEmbedder};
/// The schemars a [`TypedTool`]'s types derive `JsonSchema` from: depend on the same
/// major version, or derive with `#[schemars(crate = "evo_host::schemars")]`.
pub use schemars;
pub use secrets::{SecretInfo, SecretStore, Secrets, check_name as check_secret_name};
pub use skill::confirm::{Always, Confirmation, Confirmer, Risk};
pub use skill::context::{
    ContextError, LlmRequest, MemoryFilter, MemoryHit, Scratch, StoreOutcome,
};
pub use skill::events::{EventKind, EventSink, RunEvent};
pub use skill::executor::{
    ExecutorKind, MemoryWrite, MemoryWriteOutcome, SkillOutput, StepTrace, WriteStatus,
};
pub use skill::history::{
    Filter as CallFilter, Record as CallRecord, SLOW_CALL_MS, Status as CallStatus, ToolStats,
    suggestions as call_suggestions,
};
pub use skill::kernel::{RunOptions, SkillContext};
pub use skill::meta::SkillMeta;
pub use skill::metrics::{Metrics, Scraped};
pub use skill::package::disclosure::SkillFiles;
pub use skill::permission::{Locale, Permission, Profile};
pub use skill::registry::RegisteredSkill;
pub use skill::stats::SkillStats;
#[cfg(feature = "postgres")]
pub use storage::Pg;
pub use storage::{PASSWORD_VAR as STORAGE_PASSWORD_VAR, Storage, StorageSettings};
pub use tools::descriptor::{ToolDescriptor, ToolRequest, ToolResult};
pub use tools::{BoxFuture, Tool, TypedTool};

/// Locks `mutex`, also when a thread panicked holding it: Evo's shared tables are each
/// changed by one insert or assignment, so a poisoned one is still whole.
pub(crate) fn lock<T: ?Sized>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Milliseconds since the Unix epoch, now (0 if the clock is before 1970).
pub(crate) fn unix_millis() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
