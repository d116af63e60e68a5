//! Evo: a WebAssembly-first plugin host for LLM agents.
//!
//! The host is the agent's operating system: the LLM is the CPU, skills are its
//! instruction set. Skills are WebAssembly components built against Evo's WIT contract
//! (`wit/skill.wit`) and run under wasmtime with time, memory and output limits and
//! deny-by-default capabilities.
//!
//! - [`skill`] is the kernel: manifests, the registry, and [`skill::kernel::SkillContext`]
//!   with its validation gates, templates, pipelines and llm skills.
//! - [`engine`] runs skills: built-in tools, Wasm components, skill directories.
//! - [`db`] is the host's SQLite database (statistics).
//! - [`capabilities`] decides what a skill may touch.
//! - [`error`] lists every error with its stable code.
#![deny(missing_docs)]

pub mod agent;
pub mod capabilities;
pub mod config;
pub mod db;
pub mod engine;
pub mod error;
pub mod host;
pub mod llm;
pub mod memory;
pub mod packages;
pub mod paths;
pub mod skill;
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
