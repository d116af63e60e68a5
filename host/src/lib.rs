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
//! - Your own Rust functions: implement [`tools::Tool`] and add it with
//!   [`HostBuilder::tool`].
//! - The agent: [`HostBuilder::llm`] (or `EVO_LLM`), then [`Host::agent`].
//! - What a skill may touch: [`capabilities::Policy`], set by `[grants]` in `evo.toml`.
//!
//! `host/examples/` holds runnable programs for each (`cargo run -p evo-host --example
//! embed_wasm`). Every error is an [`Error`] with a stable [`Error::code`].
//!
//! # Modules
//!
//! - [`host`] and [`config`]: the composition root and its configuration.
//! - [`skill`]: the kernel — manifests, the registry, [`skill::kernel::SkillContext`]
//!   with its validation gates, templates, pipelines and llm skills.
//! - [`engine`]: what runs skills — Wasm components, Node scripts, skill directories.
//! - [`tools`]: in-process tools.
//! - [`memory`], [`packages`], [`agent`], [`llm`]: memory, the skill manager, the
//!   agent, language-model providers.
//! - [`capabilities`] decides what a skill may touch; [`error`] lists every error code.
#![deny(missing_docs)]

pub mod agent;
pub mod authoring;
pub mod capabilities;
pub mod config;
pub mod db;
pub mod engine;
pub mod error;
pub mod host;
pub mod http;
pub mod llm;
pub mod memory;
pub mod packages;
pub mod paths;
pub mod remote;
pub mod secrets;
#[cfg(feature = "serve")]
pub mod serve;
pub mod skill;
pub mod storage;
pub mod tools;

pub use config::Config;
pub use error::{Error, Result};
pub use host::{Host, HostBuilder};

/// Milliseconds since the Unix epoch, now (0 if the clock is before 1970).
pub(crate) fn unix_millis() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
