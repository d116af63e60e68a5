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
//! - What a skill may touch: [`grants::Policy`], set by `[grants]` in `evo.toml`.
//!
//! `host/examples/` holds runnable programs for each (`cargo run -p evo-host --example
//! embed_wasm`). Every error is an [`Error`] with a stable [`Error::code`].
//!
//! # What to name
//!
//! The crate root holds what every embedder names: [`Host`], [`HostBuilder`],
//! [`Config`], [`Error`], [`Result`], your own tools ([`Tool`], [`TypedTool`]) and what
//! they are given ([`SkillContext`], [`RunOptions`]), and run events ([`RunEvent`],
//! [`EventSink`]). The rest is in modules named for what an embedder does with it:
//!
//! - [`config`]: every setting of `evo.toml`, and where Evo keeps its data;
//! - [`skills`]: what a skill declares, its runs and their record;
//! - [`wasm`]: components, the engine that compiles them, and their limits;
//! - [`grants`]: what a skill may touch;
//! - [`tools`]: in-process tools, their descriptors and confirmations;
//! - [`memory`]: the memory kernel and its embedders;
//! - [`storage`]: SQLite in the data directory, or PostgreSQL shared by several nodes;
//! - [`agent`] and [`llm`]: the agent and the model providers (with [`llm::local`]);
//! - [`packages`]: installing, listing and finding skills;
//! - [`registry`]: OCI registries and signatures; [`remotes`]: other nodes;
//! - [`secrets`]; [`manage`]: a running host changed by its operator;
//! - [`errors`]: what an error carries and how each code is answered;
//! - `sandbox` (with the `native` feature), [`serve`] (MCP and the HTTP API) and
//!   [`authoring`] (`evo new`, `evo skill build`, `test`, `pack`).
//!
//! Every type a public item mentions can be named through them, and
//! `host/public-api.txt` lists everything public: a change to it is made on purpose.
//!
//! # Features
//!
//! All on by default; `default-features = false` leaves a Wasm-only host (wasmtime,
//! the kernel, the file tools, memory on SQLite). A part a build left out answers
//! [`Error::FeatureNotBuilt`].
//!
//! - `minilm`: the offline MiniLM embedder (`evo memory reindex --embedder minilm`).
//! - `local-llm`: the local model, a GGUF file run with candle (`EVO_LLM=local`).
//! - `postgres`: several nodes on one PostgreSQL database (`[storage] url`).
//! - `serve`: MCP over stdio and HTTP, the HTTP API (the `serve` module), `/metrics`
//!   (it implies `metrics`).
//! - `metrics`: figures for monitoring in the OpenMetrics format (`Host::metrics`).
//! - `remotes`: other Evo nodes' skills, called as `NAME/skill` over a WebSocket.
//!   Without it the remotes file is still read and written, and a configured remote is
//!   a load error answering [`Error::FeatureNotBuilt`].
//! - `native`: the native sandbox: script skills (`scripts/execute.js`, run by Node), an
//!   instruction skill's helper scripts (`run_skill_script`), and the launcher that
//!   confines them (`confine_and_exec`). Without it a script skill answers
//!   [`Error::FeatureNotBuilt`] when loaded, unless its install turned it into a Wasm
//!   component.
//! - `dev-tools`: the tools that run programs: `bash`, `terminal`, `git`, `lsp` (in the
//!   native sandbox: it implies `native`).
//! - `c-skills`: `evo skill build` of C and C++ projects (the bindings and the component;
//!   clang and wasi-libc compile).
//!
//! `./scripts/build-cost` counts the crates of each set (BENCHMARKS.md quotes its
//! record).
//!
//! # Inside
//!
//! The host is the composition root over the kernel (manifests, the registry,
//! [`SkillContext`] with its validation gates, templates, pipelines and llm skills),
//! the engines that run skills (Wasm components, Node scripts, skill directories), the
//! in-process tools, memory, the skill manager, the agent and the language-model
//! providers. Those modules are private. Evo's own tests and benchmarks reach six of
//! them (`skill`, `engine`, `retrieval`, `db`, `oci`, `paths`: fixtures built from the
//! kernel's and the engine's parts, and files checked as stored) through the
//! `internals` feature, which promises nothing to anyone else; the rest only through
//! the namespaces above.
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

/// An item that is public with the `internals` feature (hidden from the docs) and
/// private to the crate without it: what Evo's own tests reach that embedders do not.
macro_rules! internal {
    ($(#[$attr:meta])* pub $($item:tt)*) => {
        $(#[$attr])*
        #[cfg(feature = "internals")]
        #[doc(hidden)]
        pub $($item)*
        $(#[$attr])*
        #[cfg(not(feature = "internals"))]
        #[allow(dead_code, unused_imports, reason = "Evo's own tests reach it")]
        pub(crate) $($item)*
    };
}

// The modules an embedder may name: the settings, and groups named for what an
// embedder does with them. The namespaces in `api/` re-export what the private modules
// below define.
pub mod agent;
pub mod authoring;
pub mod config;
#[path = "api/errors.rs"]
pub mod errors;
#[path = "api/grants.rs"]
pub mod grants;
pub mod llm;
#[path = "api/manage.rs"]
pub mod manage;
pub mod memory;
pub mod packages;
#[path = "api/registry.rs"]
pub mod registry;
#[path = "api/remotes.rs"]
pub mod remotes;
#[cfg(feature = "native")]
#[path = "api/sandbox.rs"]
pub mod sandbox;
pub mod secrets;
#[cfg(feature = "serve")]
pub mod serve;
#[path = "api/skills.rs"]
pub mod skills;
pub mod storage;
pub mod tools;
#[path = "api/wasm.rs"]
pub mod wasm;

// The modules Evo's own tests and benchmarks reach through the `internals` feature:
// public but hidden from the docs and outside any promise of stability; private to
// the crate without it. Each is declared twice rather than through a macro because
// rustfmt does not format a module declared inside a macro.
mod capabilities;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod db;
#[cfg(not(feature = "internals"))]
pub(crate) mod db;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod engine;
#[cfg(not(feature = "internals"))]
pub(crate) mod engine;
mod error;
mod host;
mod http;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod oci;
#[cfg(not(feature = "internals"))]
pub(crate) mod oci;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod paths;
#[cfg(not(feature = "internals"))]
pub(crate) mod paths;
mod remote;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod retrieval;
#[cfg(not(feature = "internals"))]
pub(crate) mod retrieval;
mod settings;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod skill;
#[cfg(not(feature = "internals"))]
pub(crate) mod skill;

// What an embedder names at the root: the host and its configuration, errors, your own
// tools and what they are given, and run events. The rest is in the namespaces above.
pub use config::Config;
pub use error::{Error, Result};
pub use host::{Host, HostBuilder};
/// The schemars a [`TypedTool`]'s types derive `JsonSchema` from: depend on the same
/// major version, or derive with `#[schemars(crate = "evo_host::schemars")]`.
pub use schemars;
pub use skill::kernel::{RunOptions, SkillContext};
pub use skill::observe::events::{EventSink, RunEvent};
pub use tools::{Tool, TypedTool};

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
